//! The server side of one routerbench-protocol load flow: LoadHello checks (session, address,
//! limits), then upload (count what arrives) or download (send) from Start for its duration.

use super::conn;
use super::server::{FlowHandle, Service, is_mapped};
use crate::net as so;
use crate::wire::rb::{self, Direction, ErrorCode, Message};
use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

impl Service {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn load(
        &self,
        mut stream: TcpStream,
        peer: SocketAddr,
        version: u16,
        session: u64,
        flow: u8,
        direction: Direction,
        tos: u8,
        cc: String,
    ) -> anyhow::Result<()> {
        let refuse = |stream: &mut TcpStream, code, msg: String| -> anyhow::Result<()> {
            let _ = conn::write_msg(stream, &Message::error(code, msg.clone()));
            self.inner.log(format!("{peer}: load flow refused: {msg}"));
            Ok(())
        };
        if version != rb::VERSION {
            return refuse(
                &mut stream,
                ErrorCode::UnsupportedVersion,
                format!("protocol version {version}"),
            );
        }
        let Some(s) = self.inner.session(session) else {
            return refuse(
                &mut stream,
                ErrorCode::UnknownSession,
                format!("no session {session:016x}"),
            );
        };
        if !so::same_ip(s.peer_ip, peer.ip()) {
            return refuse(
                &mut stream,
                ErrorCode::UnknownSession,
                format!("session {session:016x} belongs to another address"),
            );
        }
        let v6 = peer.is_ipv6() && !is_mapped(peer.ip());
        so::set_tos(&stream, tos, v6)?;
        if !cc.is_empty() {
            if let Err(e) = so::set_congestion(&stream, &cc) {
                return refuse(&mut stream, ErrorCode::BadRequest, e.to_string());
            }
        }
        let bytes = Arc::new(AtomicU64::new(0));
        {
            let mut flows = s.flows.lock().map_err(|_| anyhow::anyhow!("poisoned"))?;
            if flows.len() >= self.inner.bounds.max_flows as usize
                || flows.iter().any(|f| f.id == flow)
            {
                drop(flows);
                return refuse(
                    &mut stream,
                    ErrorCode::LimitExceeded,
                    format!("flow {flow} is a duplicate or over the limit"),
                );
            }
            flows.push(FlowHandle {
                id: flow,
                direction,
                bytes: bytes.clone(),
                sock: stream.try_clone()?,
            });
        }
        let accept = Message::LoadAccept {
            flow,
            tos: so::tos(&stream, v6)?,
            cc: so::congestion(&stream)?,
        };
        conn::write_msg(&mut stream, &accept)?;
        // Wait for Start (bounded by the session's deadline).
        let (start, duration) = {
            let mut st = s.start.lock().map_err(|_| anyhow::anyhow!("poisoned"))?;
            loop {
                if let Some(v) = *st {
                    break v;
                }
                if s.abort.load(Ordering::SeqCst) || Instant::now() >= s.deadline {
                    return Ok(());
                }
                st = s
                    .start_cv
                    .wait_timeout(st, Duration::from_millis(200))
                    .map_err(|_| anyhow::anyhow!("poisoned"))?
                    .0;
            }
        };
        if let Some(wait) = start.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
        let end = start + duration;
        let stop = || s.abort.load(Ordering::SeqCst) || self.inner.shutdown.load(Ordering::SeqCst);
        match direction {
            Direction::Upload => {
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
            }
            Direction::Download => {
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
            }
        }
        Ok(())
    }
}
