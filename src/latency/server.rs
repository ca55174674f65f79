//! The server side of routerbench's own protocol: a [`Service`] that holds sessions and their
//! limits, serves control and load connections handed over by the shared port, and runs the UDP
//! reflector (`reflector.rs`) on a port of its own.
//!
//! Every wait is bounded: handshakes by [`Bounds::handshake_timeout`], sessions by
//! `max_duration` plus slack, sockets by read/write timeouts. A misbehaving or vanished client is
//! logged, its slot freed, and the others keep going.

use super::conn::{self, ConnError};
use super::error::ServiceError;
use super::reflector::Reflector;

pub use super::state::{Bounds, ForeignFn, LogSink, MAX_STREAMS};
use super::state::{Inner, LoadRequest, ProbeState, Session};
use crate::net as so;
use crate::wire::rb::{self, Direction, ErrorCode, FlowStep, Message};
use std::collections::HashMap;
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// The routerbench-protocol service: sessions, limits and the UDP reflector.
#[derive(Clone)]
pub struct Service {
    pub(crate) inner: Arc<Inner>,
    reflector: Arc<Reflector>,
    /// Held only by `Service` clones: when the last one goes, the reflector threads stop.
    _stop_on_drop: Arc<StopOnDrop>,
}

struct StopOnDrop(Arc<Inner>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.shutdown.store(true, Ordering::SeqCst);
    }
}

impl Service {
    /// Starts the reflector threads and returns the service. Fails if no UDP port can be bound.
    pub fn new(bounds: Bounds) -> Result<Self, ServiceError> {
        let inner = Arc::new(Inner::new(bounds));
        let reflector = Arc::new(Reflector::start(inner.clone())?);
        let stop = Arc::new(StopOnDrop(inner.clone()));
        Ok(Self {
            inner,
            reflector,
            _stop_on_drop: stop,
        })
    }

    /// The reflector's UDP port for clients of the given family (None if not bound).
    pub fn udp_port(&self, v6: bool) -> Option<u16> {
        self.reflector.port(v6)
    }

    /// Sends log lines (one per session, and refusals) to `sink` (a closure `Fn(&str)` is one).
    pub fn set_log(&self, sink: Arc<dyn LogSink>) {
        self.inner.set_log(sink);
    }

    /// Hands datagrams that are not probes to `hook` (the iperf3 server's UDP hellos when
    /// the reflector listens on the iperf3 port).
    pub fn set_foreign(&self, hook: ForeignFn) {
        if let Ok(mut h) = self.inner.foreign.lock() {
            *h = Some(hook);
        }
    }

    /// Live sessions.
    pub fn session_count(&self) -> usize {
        self.inner.sessions.lock().map(|s| s.len()).unwrap_or(0)
    }

    /// The last logged events (oldest first).
    pub fn events(&self) -> Vec<String> {
        self.inner.events()
    }

    /// Stops the reflector threads (the shared server hosting the service stops too).
    pub fn shutdown(&self) {
        self.inner.shutdown.store(true, Ordering::SeqCst);
    }

    /// A control connection: admission (token, version, reflector, limits), the session, and
    /// its clean-up whatever the outcome.
    fn control(
        &self,
        mut stream: TcpStream,
        peer: SocketAddr,
        version: u16,
        token: &str,
        conn_seat: Option<crate::service::fair::Seat>,
    ) -> Result<(), ServiceError> {
        let Some(udp_port) = self.admit(&mut stream, peer, version, token) else {
            return Ok(());
        };
        let Some(session) = self.open_session(&mut stream, peer, conn_seat)? else {
            return Ok(());
        };
        let opened = Instant::now();
        self.inner
            .note(format!("{peer}: session {:016x} opened", session.id));
        let mut outcome = self.run_session(&mut stream, &session, udp_port);
        if outcome.is_err()
            && session
                .seats
                .lock()
                .is_ok_and(|s| s.iter().any(|x| x.is_evicted()))
        {
            let msg = "evicted before it started: the server was full and a host holding fewer \
                       sessions needed the slot; retry later";
            let _ = conn::write_msg(
                &mut stream,
                &Message::error(ErrorCode::Busy, msg.to_string()),
            );
            outcome = Err(ServiceError::Rejected(msg.into()));
        }
        session.abort.store(true, Ordering::SeqCst);
        session.start_cv.notify_all();
        if let Ok(mut map) = self.inner.sessions.lock() {
            map.remove(&session.id);
        }
        match &outcome {
            Ok(()) => self.inner.log(format!(
                "{peer}: session {:016x} finished after {:.1} s",
                session.id,
                opened.elapsed().as_secs_f64()
            )),
            Err(e) => self.inner.log(format!(
                "{peer}: session {:016x} ended after {:.1} s: {e}; slot freed",
                session.id,
                opened.elapsed().as_secs_f64()
            )),
        }
        let _ = stream.shutdown(Shutdown::Both);
        outcome
    }

    /// Refuses (with a reason, logged) a wrong token, another protocol version or a family
    /// without a reflector; otherwise the reflector's UDP port for this client.
    fn admit(
        &self,
        stream: &mut TcpStream,
        peer: SocketAddr,
        version: u16,
        token: &str,
    ) -> Option<u16> {
        if let Some(want) = &self.inner.bounds.token {
            let backoff = &self.inner.backoff;
            let refused = match backoff.check(peer.ip()) {
                // Refused without looking at the token: one guess per wait.
                Err(wait) => Some(crate::service::backoff::wait_message("token", wait)),
                Ok(()) if crate::service::same_token(want, token) => {
                    backoff.succeeded(peer.ip());
                    None
                }
                Ok(()) if token.is_empty() => {
                    Some("this server requires a token (client --token)".to_string())
                }
                Ok(()) => {
                    let wait = backoff.failed(peer.ip());
                    Some(format!(
                        "wrong token (next try from this address in {:.1} s)",
                        wait.as_secs_f64()
                    ))
                }
            };
            if let Some(msg) = refused {
                self.inner.log(format!("{peer}: refused: {msg}"));
                let _ = conn::write_msg(stream, &Message::error(ErrorCode::Unauthorized, msg));
                return None;
            }
        }
        if version != rb::VERSION {
            let msg = format!(
                "client speaks protocol version {version}, this server speaks {}",
                rb::VERSION
            );
            self.inner.log(format!("{peer}: refused: {msg}"));
            let _ = conn::write_msg(stream, &Message::error(ErrorCode::UnsupportedVersion, msg));
            return None;
        }
        let v6 = crate::net::addr::canonical_ip(peer.ip()).is_ipv6();
        let Some(udp_port) = self.udp_port(v6) else {
            let msg = format!("no UDP reflector for IPv{}", if v6 { 6 } else { 4 });
            let _ = conn::write_msg(stream, &Message::error(ErrorCode::BadRequest, msg.clone()));
            self.inner.log(format!("{peer}: refused: {msg}"));
            return None;
        };
        Some(udp_port)
    }

    /// Takes a session seat (server-wide and per-host limits, shared fairly: a newcomer from a
    /// lighter host may take the seat of a session that has not started; `service::fair`); a
    /// refusal is told and logged. The new session holds `conn_seat` too.
    fn open_session(
        &self,
        stream: &mut TcpStream,
        peer: SocketAddr,
        conn_seat: Option<crate::service::fair::Seat>,
    ) -> Result<Option<Arc<Session>>, ServiceError> {
        let b = &self.inner.bounds;
        let abort = Arc::new(AtomicBool::new(false));
        let evict = crate::service::fair::shut_reader(stream, Some(abort.clone()));
        let admission = match self.inner.pool.acquire(peer.ip(), evict) {
            Ok(a) => a,
            Err(why) => {
                let msg = format!("busy: {why}");
                self.inner.log(format!("{peer}: refused: {msg}"));
                let _ = conn::write_msg(stream, &Message::error(ErrorCode::Busy, msg));
                return Ok(None);
            }
        };
        if let Some(ip) = admission.evicted {
            self.inner.log(format!(
                "{peer}: session slots full: took the slot of a session of {} that had not \
                 started (that host holds the most)",
                crate::net::addr::display_ip(ip)
            ));
        }
        let mut map = self
            .inner
            .sessions
            .lock()
            .map_err(|_| ServiceError::Poisoned("session table"))?;
        let id = loop {
            let id = conn::random_u64();
            if id != 0 && !map.contains_key(&id) {
                break id;
            }
        };
        let s = Arc::new(Session {
            id,
            peer_ip: peer.ip(),
            // The load, up to 60 s of idle lead-in and tail each, and slack.
            deadline: Instant::now() + b.max_duration + Duration::from_secs(120) + b.idle_timeout,
            abort,
            running: AtomicBool::new(false),
            seats: Mutex::new(conn_seat.into_iter().chain([admission.seat]).collect()),
            start: Mutex::new(None),
            start_cv: Condvar::new(),
            flows: Mutex::new(Vec::new()),
            probes: Mutex::new(ProbeState {
                tokens: b.probe_burst as f64,
                last_refill: Instant::now(),
                streams: HashMap::new(),
            }),
            rpm_until: Mutex::new(None),
            foreign_tokens: Mutex::new((super::state::FOREIGN_BURST, Instant::now())),
        });
        map.insert(id, s.clone());
        Ok(Some(s))
    }

    fn run_session(
        &self,
        stream: &mut TcpStream,
        s: &Arc<Session>,
        udp_port: u16,
    ) -> Result<(), ServiceError> {
        let b = &self.inner.bounds;
        conn::write_msg(
            stream,
            &Message::Welcome {
                version: rb::VERSION,
                session: s.id,
                udp_port,
                max_duration_ms: b.max_duration.as_millis().min(u32::MAX as u128) as u32,
                max_flows: b.max_flows,
            },
        )?;
        loop {
            let left = s.deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(ServiceError::TimeLimit);
            }
            // Silent up to the idle timeout (and the session's lifetime); a message once begun
            // must be whole within the handshake timeout, however it is dribbled. During an
            // RPM test the control connection is quiet until Finish: its idle limit runs from
            // the test's end.
            let idle = s
                .rpm_until
                .lock()
                .ok()
                .and_then(|u| *u)
                .map_or(b.idle_timeout, |u| {
                    u.saturating_duration_since(Instant::now()) + b.idle_timeout
                });
            let idle_until = Instant::now() + left.min(idle);
            let msg = match conn::read_msg_idle(stream, idle_until, b.handshake_timeout) {
                Ok(m) => m,
                Err(ConnError::Closed) => return Err(ServiceError::Vanished),
                Err(ConnError::Timeout) => {
                    return Err(ServiceError::Silent(left.min(idle)));
                }
                Err(e) => {
                    let _ = conn::write_msg(
                        stream,
                        &Message::error(ErrorCode::BadRequest, e.to_string()),
                    );
                    return Err(ServiceError::BadMessage(e));
                }
            };
            match msg {
                Message::Start {
                    start_in_us,
                    duration_ms,
                    step_ms,
                } => {
                    let duration = Duration::from_millis(duration_ms as u64);
                    if duration > b.max_duration
                        || start_in_us > 10_000_000
                        || !(5..=10_000).contains(&step_ms)
                    {
                        let m = format!(
                            "Start asks {duration:?} (max {:?}), start in {start_in_us} us (max 10 s), step {step_ms} ms (5..=10000)",
                            b.max_duration
                        );
                        let _ = conn::write_msg(
                            stream,
                            &Message::error(ErrorCode::LimitExceeded, m.clone()),
                        );
                        return Err(ServiceError::Rejected(m));
                    }
                    if s.seats
                        .lock()
                        .is_ok_and(|v| v.iter().any(|x| x.is_evicted()))
                    {
                        // A flow's connection was taken while the session waited: it cannot
                        // run whole. (Busy is said by `control`.)
                        return Err(ServiceError::Aborted);
                    }
                    let start = Instant::now() + Duration::from_micros(start_in_us as u64);
                    s.mark_running();
                    if let Ok(mut st) = s.start.lock() {
                        *st = Some((start, duration));
                    }
                    s.start_cv.notify_all();
                    let ended_early = self.report_steps(
                        stream,
                        s,
                        start,
                        duration,
                        Duration::from_millis(step_ms as u64),
                    )?;
                    if ended_early {
                        // The client said Finish during the load (it was interrupted): the
                        // counts now, so its partial result is whole.
                        conn::write_msg(stream, &finished(s))?;
                        return Ok(());
                    }
                }
                Message::RpmBegin { duration_ms } => self.rpm_begin(stream, s, duration_ms)?,
                Message::Finish => {
                    conn::write_msg(stream, &finished(s))?;
                    return Ok(());
                }
                other => {
                    let m = format!("unexpected message {other:?} on a control connection");
                    let _ =
                        conn::write_msg(stream, &Message::error(ErrorCode::BadRequest, m.clone()));
                    return Err(ServiceError::Rejected(m));
                }
            }
        }
    }

    /// Sends one StepReport per step while the flows run: upload bytes and download TCP RTT.
    /// Returns true if the client sent Finish before the load ended (an interrupted client):
    /// the flows are stopped then.
    fn report_steps(
        &self,
        stream: &mut TcpStream,
        s: &Session,
        start: Instant,
        duration: Duration,
        step: Duration,
    ) -> Result<bool, ServiceError> {
        stream.set_write_timeout(Some(Duration::from_secs(5)))?;
        let steps = (duration.as_secs_f64() / step.as_secs_f64())
            .round()
            .max(1.0) as u32;
        let mut last: HashMap<u8, u64> = HashMap::new();
        // The bytes each upload flow received since the previous report.
        let step_of = |last: &mut HashMap<u8, u64>| -> Vec<FlowStep> {
            match s.flows.lock() {
                Ok(fl) => fl
                    .iter()
                    .map(|f| {
                        let total = f.bytes.load(Ordering::Relaxed);
                        let prev = last.insert(f.id, total).unwrap_or(0);
                        FlowStep {
                            flow: f.id,
                            bytes: if f.direction == Direction::Upload {
                                total.saturating_sub(prev)
                            } else {
                                0
                            },
                            tcp_rtt_us: so::tcp_rtt_us(&f.sock).unwrap_or(0),
                        }
                    })
                    .collect(),
                Err(_) => Vec::new(),
            }
        };
        for k in 0..steps {
            let at = start + step * (k + 1);
            let mut finish = false;
            while let Some(left) = at.checked_duration_since(Instant::now()) {
                if s.abort.load(Ordering::SeqCst) || self.inner.shutdown.load(Ordering::SeqCst) {
                    return Err(ServiceError::Aborted);
                }
                if self.client_spoke(stream, left.min(Duration::from_millis(50)))? {
                    finish = true;
                    break;
                }
            }
            // On a Finish before this server's load ended (an interrupted client, or a server
            // behind the client's clock: a starved router CPU took Start late), what arrived
            // since the last report still goes out, as the step in progress, so no received
            // byte is lost.
            let flows = step_of(&mut last);
            if finish {
                s.abort.store(true, Ordering::SeqCst);
            }
            conn::write_msg(stream, &Message::StepReport { step: k, flows })
                .map_err(ServiceError::VanishedInLoad)?;
            if finish {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// Waits up to `wait` for the client to speak during the load: true if it sent Finish;
    /// anything else is an error (a closed connection: the client vanished).
    fn client_spoke(&self, stream: &mut TcpStream, wait: Duration) -> Result<bool, ServiceError> {
        use std::os::fd::AsFd;
        let ms = wait.as_millis().min(i32::MAX as u128) as i32;
        let ready = so::poll_readable(&[stream.as_fd()], ms).map_err(ServiceError::from)?;
        if ready.first().is_none_or(|&r| r == 0) {
            return Ok(false);
        }
        match conn::read_msg_by(stream, Instant::now() + self.inner.bounds.handshake_timeout) {
            Ok(Message::Finish) => Ok(true),
            Ok(other) => Err(ServiceError::Rejected(format!(
                "unexpected message {other:?} during the load"
            ))),
            Err(ConnError::Closed) => Err(ServiceError::Vanished),
            Err(e) => Err(ServiceError::BadMessage(e)),
        }
    }
}

/// The server's probe counts of a session, per stream (its Finished message).
fn finished(s: &Session) -> Message {
    let streams = s
        .probes
        .lock()
        .map(|p| {
            let mut v: Vec<rb::StreamCount> = p
                .streams
                .iter()
                .map(|(&stream, st)| rb::StreamCount {
                    stream,
                    received: st.received,
                    reflected: st.reflected,
                })
                .collect();
            v.sort_by_key(|c| c.stream);
            v
        })
        .unwrap_or_default();
    Message::Finished { streams }
}

impl crate::service::ProtocolHandler for Service {
    fn handle(&self, conn: crate::service::Handoff) -> Result<(), crate::service::HandlerError> {
        let crate::service::Handoff {
            mut stream,
            deadline,
            seat,
            ..
        } = conn;
        let peer = stream.peer_addr()?;
        let b = &self.inner.bounds;
        stream.set_write_timeout(Some(b.handshake_timeout))?;
        let _ = stream.set_nodelay(true);
        // The whole first message by the connection's handshake deadline (the magic's too),
        // however it is dribbled.
        match conn::read_msg_by(&mut stream, deadline) {
            Ok(Message::Hello { version, token }) => {
                Ok(self.control(stream, peer, version, &token, seat)?)
            }
            Ok(Message::LoadHello {
                version,
                session,
                flow,
                direction,
                tos,
                cc,
            }) => {
                let req = LoadRequest {
                    peer,
                    version,
                    session,
                    flow,
                    direction,
                    tos,
                    cc,
                };
                Ok(self.load(stream, req, seat)?)
            }
            Ok(Message::RpmLoadHello {
                version,
                session,
                conn,
                direction,
            }) => {
                // An RPM load connection is a load flow of its session: no DSCP, no
                // congestion control of its own.
                let req = LoadRequest {
                    peer,
                    version,
                    session,
                    flow: conn,
                    direction,
                    tos: 0,
                    cc: String::new(),
                };
                Ok(self.rpm_load(stream, req, seat)?)
            }
            Ok(Message::RpmProbe {
                version,
                session,
                id,
            }) => {
                self.rpm_foreign(stream, peer, version, session, id, seat);
                Ok(())
            }
            Ok(other) => {
                let m = format!("expected Hello or LoadHello first, got {other:?}");
                let _ = conn::write_msg(
                    &mut stream,
                    &Message::error(ErrorCode::BadRequest, m.clone()),
                );
                self.inner.log(format!("{peer}: {m}"));
                Ok(())
            }
            Err(e) => {
                let m = if seat.as_ref().is_some_and(|s| s.is_evicted()) {
                    "evicted in its handshake: the server was full and a host holding fewer \
                     connections needed the slot"
                        .to_string()
                } else if matches!(e, ConnError::Timeout) {
                    format!(
                        "no whole first message within the handshake deadline ({:?} from the \
                         connection)",
                        b.handshake_timeout
                    )
                } else {
                    format!("bad first message: {e}")
                };
                if !matches!(e, ConnError::Closed) {
                    let _ = conn::write_msg(
                        &mut stream,
                        &Message::error(ErrorCode::BadRequest, m.clone()),
                    );
                }
                self.inner.log(format!("{peer}: {m}"));
                Ok(())
            }
        }
    }
}
