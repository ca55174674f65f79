//! The server side of the RPM extension (docs/rpm.md): RpmBegin on a session's control
//! connection, RPM load connections (data one way, self probes answered behind the data), and
//! foreign probes (one request, one reply, on a fresh connection). Every connection is bound
//! to a live session from the same address, counts against the session's flow limit, and ends
//! with the test (RpmBegin's duration, at most the server's `max_duration`).

use super::conn;
use super::error::ServiceError;
use super::rpm::stream::{self, NOTSENT_LOWAT};
use super::server::Service;
use super::state::{LoadRequest, Session};
use crate::net as so;
use crate::wire::rb::rpm::{self as rec, Record, StreamParser};
use crate::wire::rb::{self, Direction, ErrorCode, Message};
use std::io::Read;
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

use super::state::{FOREIGN_BURST, FOREIGN_RATE};

impl Service {
    /// RpmBegin: the session becomes an RPM test of at most `duration_ms`.
    pub(super) fn rpm_begin(
        &self,
        stream: &mut TcpStream,
        s: &Session,
        duration_ms: u32,
    ) -> Result<(), ServiceError> {
        let b = &self.inner.bounds;
        let duration = Duration::from_millis(duration_ms as u64);
        if duration > b.max_duration || duration.is_zero() {
            let m = format!(
                "RpmBegin asks {duration:?}, this server allows 1 ms to {:?}",
                b.max_duration
            );
            let _ = conn::write_msg(stream, &Message::error(ErrorCode::LimitExceeded, m.clone()));
            return Err(ServiceError::Rejected(m));
        }
        if let Ok(mut u) = s.rpm_until.lock() {
            *u = Some(Instant::now() + duration);
        }
        // The session runs from here: its seats can no longer be evicted (docs/throughput.md,
        // "Fair shares").
        s.mark_running();
        conn::write_msg(
            stream,
            &Message::RpmReady {
                max_connections: b.max_flows,
                max_duration_ms: b.max_duration.as_millis().min(u32::MAX as u128) as u32,
            },
        )?;
        Ok(())
    }

    /// An RPM load connection: checks and registers it (as a flow of the session), then
    /// receives (upload) or sends (download) until the test ends or the client closes.
    pub(crate) fn rpm_load(
        &self,
        mut stream: TcpStream,
        req: LoadRequest,
        seat: Option<crate::service::fair::Seat>,
    ) -> Result<(), ServiceError> {
        let (peer, session, conn_id, direction) = (req.peer, req.session, req.flow, req.direction);
        let until = self
            .inner
            .session(session)
            .and_then(|s| s.rpm_until.lock().ok().and_then(|u| *u));
        let Some(until) = until else {
            let m = format!("session {session:016x} has no RPM test (RpmBegin first)");
            let _ = conn::write_msg(
                &mut stream,
                &Message::error(ErrorCode::BadRequest, m.clone()),
            );
            self.inner.log(format!("{peer}: RPM load refused: {m}"));
            return Ok(());
        };
        let Some((s, bytes)) = self.accept_flow(&mut stream, &req)? else {
            return Ok(());
        };
        // The connection's seat runs with the test (never evicted) and is freed when the
        // connection ends, not with the session: RPM opens and closes load connections.
        if let Some(seat) = &seat {
            seat.running();
        }
        let stop = Arc::new(AtomicBool::new(false));
        let end = until.min(s.deadline);
        stream.set_read_timeout(Some(Duration::from_millis(250)))?;
        stream.set_write_timeout(Some(Duration::from_millis(250)))?;
        let watch = {
            let (stop, s2, inner) = (stop.clone(), s.clone(), self.inner.clone());
            move || {
                stop.load(Ordering::Relaxed)
                    || Instant::now() >= end
                    || s2.abort.load(Ordering::SeqCst)
                    || inner.shutdown.load(Ordering::SeqCst)
            }
        };
        match direction {
            Direction::Upload => upload(&mut stream, &bytes, &stop, &watch),
            Direction::Download => download(&mut stream, &bytes, &stop, &watch)?,
        }
        let _ = stream.shutdown(Shutdown::Both);
        // The connection's slot is free again for the session's next run.
        if let Ok(mut flows) = s.flows.lock() {
            flows.retain(|f| f.id != conn_id);
        }
        Ok(())
    }

    /// A foreign probe: a live session from this address and a token from its bucket, then
    /// RpmProbeReply and close.
    pub(crate) fn rpm_foreign(
        &self,
        mut stream: TcpStream,
        peer: SocketAddr,
        version: u16,
        session: u64,
        id: u32,
        seat: Option<crate::service::fair::Seat>,
    ) {
        let refuse = |stream: &mut TcpStream, code, m: String| {
            let _ = conn::write_msg(stream, &Message::error(code, m.clone()));
            self.inner.log(format!("{peer}: RPM probe refused: {m}"));
        };
        if version != rb::VERSION {
            return refuse(
                &mut stream,
                ErrorCode::UnsupportedVersion,
                format!("version {version}"),
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
        if !take_token(&s) {
            // Counted, not logged line by line: a flood must not fill the log.
            let _ = conn::write_msg(
                &mut stream,
                &Message::error(ErrorCode::LimitExceeded, "probe rate limit"),
            );
            return;
        }
        // A probe of a live session from its address did its job: no strike for its host.
        if let Some(seat) = seat {
            seat.succeed();
        }
        let _ = conn::write_msg(&mut stream, &Message::RpmProbeReply { id });
        let _ = stream.shutdown(Shutdown::Write);
        // Wait (briefly) for the client's close, so the reply is not cut by a reset.
        let _ = stream.set_read_timeout(Some(Duration::from_millis(500)));
        let mut b = [0u8; 64];
        let _ = stream.read(&mut b);
    }
}

fn take_token(s: &Session) -> bool {
    let Ok(mut t) = s.foreign_tokens.lock() else {
        return false;
    };
    let now = Instant::now();
    let refill = now.duration_since(t.1).as_secs_f64() * FOREIGN_RATE;
    t.0 = (t.0 + refill).min(FOREIGN_BURST);
    t.1 = now;
    if t.0 >= 1.0 {
        t.0 -= 1.0;
        true
    } else {
        false
    }
}

/// Upload: counts Data, answers each ProbeRequest at once (it has waited behind the data).
fn upload(
    stream: &mut TcpStream,
    bytes: &portable_atomic::AtomicU64,
    stop: &AtomicBool,
    done: &dyn Fn() -> bool,
) {
    let Ok(mut writer) = stream.try_clone() else {
        return;
    };
    let mut buf = vec![0u8; 64 * 1024];
    let mut parser = StreamParser::new();
    while !done() {
        match stream.read(&mut buf) {
            Ok(0) => return,
            Ok(n) => {
                let mut replies = Vec::new();
                let r = parser.feed(&buf[..n], |r| match r {
                    Record::Data(k) => {
                        bytes.fetch_add(k as u64, Ordering::Relaxed);
                    }
                    Record::ProbeRequest { id, .. } => replies.push(id),
                    Record::ProbeResponse { .. } => {}
                });
                if r.is_err() {
                    return;
                }
                for id in replies {
                    let rec = rec::probe_record(true, id, 0);
                    if stream::write_all_until(&mut writer, &rec, stop).is_err() {
                        return;
                    }
                }
            }
            Err(e) if crate::net::is_timeout(&e) => {}
            Err(_) => return,
        }
    }
}

/// Download: Data records, each ProbeRequest answered behind the data already queued. A reader
/// thread takes the requests; the sender's queue is kept short (TCP_NOTSENT_LOWAT).
fn download(
    stream: &mut TcpStream,
    bytes: &portable_atomic::AtomicU64,
    stop: &Arc<AtomicBool>,
    done: &dyn Fn() -> bool,
) -> Result<(), ServiceError> {
    so::sockopt::set_notsent_lowat(stream, NOTSENT_LOWAT)?;
    stream.set_write_timeout(Some(stream::WRITE_POLL))?;
    let (tx, rx) = mpsc::channel::<u32>();
    let mut reader = stream.try_clone()?;
    let st = stop.clone();
    let reader_thread = std::thread::Builder::new()
        .name("rb-rpm-sreq".into())
        .spawn(move || {
            let mut buf = vec![0u8; 4096];
            let mut parser = StreamParser::new();
            while !st.load(Ordering::Relaxed) {
                match reader.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => {
                        let ok = parser.feed(&buf[..n], |r| {
                            if let Record::ProbeRequest { id, .. } = r {
                                let _ = tx.send(id);
                            }
                        });
                        if ok.is_err() {
                            break;
                        }
                    }
                    Err(e) if crate::net::is_timeout(&e) => {}
                    Err(_) => break,
                }
            }
            st.store(true, Ordering::Relaxed);
        })?;
    let data = stream::data_record();
    while !done() {
        while let Ok(id) = rx.try_recv() {
            let rec = rec::probe_record(true, id, stream::unsent(stream));
            if stream::write_all_until(stream, &rec, stop).is_err() {
                break;
            }
        }
        if stream::write_all_until(stream, &data, stop).is_err() {
            break;
        }
        bytes.fetch_add(stream::DATA_RECORD as u64, Ordering::Relaxed);
    }
    stop.store(true, Ordering::Relaxed);
    let _ = reader_thread.join();
    Ok(())
}
