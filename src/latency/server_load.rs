//! The server side of one routerbench-protocol load flow: LoadHello checks (session, address,
//! limits), then upload (count what arrives) or download (send) from Start for its duration.

use super::conn;
use super::error::ServiceError;
use super::server::Service;
use super::state::{FlowHandle, LoadRequest, Session};
use crate::net as so;
use crate::wire::rb::{self, Direction, ErrorCode, Message};
use portable_atomic::AtomicU64;
use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

impl Service {
    /// A load connection: checks and registers the flow, waits for Start, then receives
    /// (upload) or sends (download) until the load ends.
    pub(crate) fn load(
        &self,
        mut stream: TcpStream,
        req: LoadRequest,
        conn_seat: Option<crate::service::fair::Seat>,
    ) -> Result<(), ServiceError> {
        let direction = req.direction;
        let Some((s, bytes)) = self.accept_flow(&mut stream, &req)? else {
            return Ok(());
        };
        // The flow's connection seat lives with its session (running once the session runs).
        if let Some(seat) = conn_seat {
            s.hold(seat);
        }
        let Some((start, duration)) = wait_for_start(&s)? else {
            return Ok(());
        };
        if let Some(wait) = start.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
        let end = start + duration;
        let stop = || s.abort.load(Ordering::SeqCst) || self.inner.shutdown.load(Ordering::SeqCst);
        match direction {
            Direction::Upload => receive(&mut stream, end, &bytes, stop),
            Direction::Download => send(&mut stream, end, &bytes, stop),
        }
    }

    /// Checks a LoadHello (version, session, address, congestion control, flow limit),
    /// registers the flow with its session and answers LoadAccept. None: refused (the client
    /// was told why, and it is logged).
    pub(super) fn accept_flow(
        &self,
        stream: &mut TcpStream,
        req: &LoadRequest,
    ) -> Result<Option<Accepted>, ServiceError> {
        let peer = req.peer;
        let refuse = |stream: &mut TcpStream, code, msg: String| {
            let _ = conn::write_msg(stream, &Message::error(code, msg.clone()));
            self.inner.log(format!("{peer}: load flow refused: {msg}"));
            Ok(None)
        };
        if req.version != rb::VERSION {
            let version = req.version;
            return refuse(
                stream,
                ErrorCode::UnsupportedVersion,
                format!("protocol version {version}"),
            );
        }
        let session = req.session;
        let Some(s) = self.inner.session(session) else {
            return refuse(
                stream,
                ErrorCode::UnknownSession,
                format!("no session {session:016x}"),
            );
        };
        if !so::same_ip(s.peer_ip, peer.ip()) {
            return refuse(
                stream,
                ErrorCode::UnknownSession,
                format!("session {session:016x} belongs to another address"),
            );
        }
        let v6 = crate::net::addr::canonical_ip(peer.ip()).is_ipv6();
        so::set_tos(stream, req.tos, v6)?;
        if !req.cc.is_empty() {
            if let Err(e) = so::set_congestion(stream, &req.cc) {
                return refuse(stream, ErrorCode::BadRequest, e.to_string());
            }
        }
        let bytes = Arc::new(AtomicU64::new(0));
        let flow = req.flow;
        {
            let mut flows = s
                .flows
                .lock()
                .map_err(|_| ServiceError::Poisoned("session state"))?;
            if flows.len() >= self.inner.bounds.max_flows as usize
                || flows.iter().any(|f| f.id == flow)
            {
                drop(flows);
                return refuse(
                    stream,
                    ErrorCode::LimitExceeded,
                    format!("flow {flow} is a duplicate or over the limit"),
                );
            }
            flows.push(FlowHandle {
                id: flow,
                direction: req.direction,
                bytes: bytes.clone(),
                sock: stream.try_clone()?,
            });
        }
        let accept = Message::LoadAccept {
            flow,
            tos: so::tos(stream, v6)?,
            cc: so::congestion(stream)?,
        };
        conn::write_msg(stream, &accept)?;
        Ok(Some((s, bytes)))
    }
}

/// An accepted flow: its session and the byte counter the session's step reports read.
pub(super) type Accepted = (Arc<Session>, Arc<AtomicU64>);

/// Waits for the session's Start (bounded by the session's deadline): (start, duration), or
/// None if the session ended first.
fn wait_for_start(s: &Session) -> Result<Option<(Instant, Duration)>, ServiceError> {
    let mut st = s
        .start
        .lock()
        .map_err(|_| ServiceError::Poisoned("session state"))?;
    loop {
        if let Some(v) = *st {
            return Ok(Some(v));
        }
        if s.abort.load(Ordering::SeqCst) || Instant::now() >= s.deadline {
            return Ok(None);
        }
        st = s
            .start_cv
            .wait_timeout(st, Duration::from_millis(200))
            .map_err(|_| ServiceError::Poisoned("session state"))?
            .0;
    }
}

/// Upload: counts what arrives until `end` (3 s of slack for the tail in flight) or `stop`.
fn receive(
    stream: &mut TcpStream,
    end: Instant,
    bytes: &AtomicU64,
    stop: impl Fn() -> bool,
) -> Result<(), ServiceError> {
    stream.set_read_timeout(Some(Duration::from_millis(250)))?;
    let mut buf = vec![0u8; 128 * 1024];
    let hard_end = end + Duration::from_secs(3);
    while !stop() && Instant::now() < hard_end {
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                bytes.fetch_add(n as u64, Ordering::Relaxed);
            }
            Err(e) if crate::net::is_timeout(&e) => {}
            Err(_) => break,
        }
    }
    Ok(())
}

/// Download: sends random bytes until `end` or `stop`, then closes the sending side.
fn send(
    stream: &mut TcpStream,
    end: Instant,
    bytes: &AtomicU64,
    stop: impl Fn() -> bool,
) -> Result<(), ServiceError> {
    stream.set_write_timeout(Some(Duration::from_millis(250)))?;
    let payload = conn::random_payload(conn::random_u64());
    while !stop() && Instant::now() < end {
        match stream.write(&payload) {
            Ok(n) => {
                bytes.fetch_add(n as u64, Ordering::Relaxed);
            }
            Err(e) if crate::net::is_timeout(&e) => {}
            Err(_) => break,
        }
    }
    let _ = stream.shutdown(Shutdown::Write);
    Ok(())
}
