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
use super::state::{Inner, ProbeState, Session};
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
    ) -> Result<(), ServiceError> {
        let Some(udp_port) = self.admit(&mut stream, peer, version, token) else {
            return Ok(());
        };
        let Some(session) = self.open_session(&mut stream, peer)? else {
            return Ok(());
        };
        let opened = Instant::now();
        self.inner
            .note(format!("{peer}: session {:016x} opened", session.id));
        let outcome = self.run_session(&mut stream, &session, udp_port);
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
            if !crate::service::same_token(want, token) {
                let msg = if token.is_empty() {
                    "this server requires a token (client --token)"
                } else {
                    "wrong token"
                };
                self.inner.log(format!("{peer}: refused: {msg}"));
                let _ = conn::write_msg(
                    stream,
                    &Message::error(ErrorCode::Unauthorized, msg.to_string()),
                );
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

    /// Takes a session slot (server-wide and per-host limits; a full table is refused with a
    /// reason, logged): the new session, or None if refused.
    fn open_session(
        &self,
        stream: &mut TcpStream,
        peer: SocketAddr,
    ) -> Result<Option<Arc<Session>>, ServiceError> {
        let b = &self.inner.bounds;
        let mut map = self
            .inner
            .sessions
            .lock()
            .map_err(|_| ServiceError::Poisoned("session table"))?;
        if map.len() >= b.max_sessions {
            drop(map);
            let msg = format!(
                "all {} session slots are in use: retry later",
                b.max_sessions
            );
            self.inner.log(format!("{peer}: refused: {msg}"));
            let _ = conn::write_msg(stream, &Message::error(ErrorCode::Busy, msg));
            return Ok(None);
        }
        let mine = map
            .values()
            .filter(|s| so::same_ip(s.peer_ip, peer.ip()))
            .count();
        if mine >= b.max_sessions_per_host {
            drop(map);
            let msg = format!(
                "{mine} sessions from this address already (limit {} per host): retry later",
                b.max_sessions_per_host
            );
            self.inner.log(format!("{peer}: refused: {msg}"));
            let _ = conn::write_msg(stream, &Message::error(ErrorCode::Busy, msg));
            return Ok(None);
        }
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
            abort: AtomicBool::new(false),
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
            // One deadline per message, not per read: a client dribbling bytes cannot keep
            // the session past its idle timeout or its lifetime. During an RPM test the
            // control connection is quiet until Finish: its deadline is the test's end.
            let idle = s
                .rpm_until
                .lock()
                .ok()
                .and_then(|u| *u)
                .map_or(b.idle_timeout, |u| {
                    u.saturating_duration_since(Instant::now()) + b.idle_timeout
                });
            let msg = match conn::read_msg_by(stream, Instant::now() + left.min(idle)) {
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
                    let start = Instant::now() + Duration::from_micros(start_in_us as u64);
                    if let Ok(mut st) = s.start.lock() {
                        *st = Some((start, duration));
                    }
                    s.start_cv.notify_all();
                    self.report_steps(
                        stream,
                        s,
                        start,
                        duration,
                        Duration::from_millis(step_ms as u64),
                    )?;
                }
                Message::RpmBegin { duration_ms } => self.rpm_begin(stream, s, duration_ms)?,
                Message::Finish => {
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
                    conn::write_msg(stream, &Message::Finished { streams })?;
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
    fn report_steps(
        &self,
        stream: &mut TcpStream,
        s: &Session,
        start: Instant,
        duration: Duration,
        step: Duration,
    ) -> Result<(), ServiceError> {
        stream.set_write_timeout(Some(Duration::from_secs(5)))?;
        let steps = (duration.as_secs_f64() / step.as_secs_f64())
            .round()
            .max(1.0) as u32;
        let mut last: HashMap<u8, u64> = HashMap::new();
        for k in 0..steps {
            let at = start + step * (k + 1);
            while let Some(left) = at.checked_duration_since(Instant::now()) {
                if s.abort.load(Ordering::SeqCst) || self.inner.shutdown.load(Ordering::SeqCst) {
                    return Err(ServiceError::Aborted);
                }
                std::thread::sleep(left.min(Duration::from_millis(50)));
            }
            let flows: Vec<FlowStep> = match s.flows.lock() {
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
            };
            conn::write_msg(stream, &Message::StepReport { step: k, flows })
                .map_err(ServiceError::VanishedInLoad)?;
        }
        Ok(())
    }
}

impl crate::service::ProtocolHandler for Service {
    fn handle(
        &self,
        mut stream: TcpStream,
        _prefix: &[u8],
    ) -> Result<(), crate::service::HandlerError> {
        let peer = stream.peer_addr()?;
        let b = &self.inner.bounds;
        stream.set_write_timeout(Some(b.handshake_timeout))?;
        let _ = stream.set_nodelay(true);
        // The whole first message within the handshake deadline, however it is dribbled.
        match conn::read_msg_by(&mut stream, Instant::now() + b.handshake_timeout) {
            Ok(Message::Hello { version, token }) => {
                Ok(self.control(stream, peer, version, &token)?)
            }
            Ok(Message::LoadHello {
                version,
                session,
                flow,
                direction,
                tos,
                cc,
            }) => Ok(self.load(stream, peer, version, session, flow, direction, tos, cc)?),
            Ok(Message::RpmLoadHello {
                version,
                session,
                conn,
                direction,
            }) => Ok(self.rpm_load(stream, peer, version, session, conn, direction)?),
            Ok(Message::RpmProbe {
                version,
                session,
                id,
            }) => {
                self.rpm_foreign(stream, peer, version, session, id);
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
                let m = format!("bad first message: {e}");
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
