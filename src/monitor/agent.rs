//! The agent: `routerbench server --monitor` serves this machine's samples to clients over
//! routerbench's own protocol on the server's port (frames in `wire::rb_agent`). Each
//! subscription runs its own sampler for at most the server's duration limit; subscriptions
//! are bounded, a token is checked before anything is sampled, and every phase has a deadline.

use super::error::MonitorError;
use super::{Sampler, SamplerConfig};
use crate::results::monitor::MonitorSample;
use crate::service::backoff::{self, Backoff};
use crate::service::fair::{FairPool, Seat};
use crate::wire::rb::{self, WireError};
use crate::wire::rb_agent::{self, AgentMessage, ChunkKind};
use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// Agent limits.
#[derive(Debug, Clone)]
pub struct AgentConfig {
    /// Required in MonitorHello when set.
    pub token: Option<String>,
    /// Subscriptions served at once; more are refused with "busy".
    pub max_subscriptions: usize,
    /// Longest subscription.
    pub max_duration: Duration,
    /// Shortest sampling interval granted.
    pub min_interval: Duration,
    /// Hello, clock exchanges and Start must arrive within this time (from the accept).
    pub handshake_timeout: Duration,
    /// Subscriptions one client address may hold at once.
    pub max_per_host: usize,
}

impl Default for AgentConfig {
    fn default() -> Self {
        Self {
            token: None,
            max_subscriptions: 4,
            max_duration: Duration::from_secs(3600),
            min_interval: Duration::from_millis(50),
            handshake_timeout: Duration::from_secs(10),
            max_per_host: 3,
        }
    }
}

/// The agent, shared by the server's connection threads.
#[derive(Clone)]
pub struct Agent {
    cfg: Arc<AgentConfig>,
    /// Subscriptions, shared fairly between hosts (pending until MonitorStart).
    pool: Arc<FairPool>,
    /// Wrong tokens slow their address down.
    backoff: Arc<Backoff>,
}

/// Reads one frame of the agent protocol (the stream's timeout bounds the wait).
pub fn read_frame(r: &mut impl Read) -> io::Result<AgentMessage> {
    let mut header = [0u8; rb::FRAME_HEADER_LEN];
    r.read_exact(&mut header)?;
    let len = rb::frame_payload_len(&header).map_err(wire_err)?;
    let mut payload = vec![0u8; len];
    r.read_exact(&mut payload)?;
    AgentMessage::parse(header[0], &payload).map_err(wire_err)
}

fn wire_err(e: WireError) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, e.to_string())
}

fn send(w: &mut impl Write, m: &AgentMessage) -> io::Result<()> {
    w.write_all(&m.emit())
}

fn refuse(stream: &mut TcpStream, code: u8, message: String) -> Result<(), MonitorError> {
    let _ = send(
        stream,
        &AgentMessage::Error {
            code,
            message: message.clone(),
        },
    );
    Err(MonitorError::SubscriptionRefused(message))
}

/// A read error of the handshake in words (a timeout is the deadline, not EAGAIN).
fn handshake_error(e: io::Error, wait: Duration) -> MonitorError {
    if crate::net::is_timeout(&e) {
        MonitorError::HandshakeTimeout(wait)
    } else {
        MonitorError::BadFirstMessage(e)
    }
}

impl Agent {
    pub fn new(cfg: AgentConfig) -> Self {
        Self {
            pool: FairPool::new(
                "monitor subscriptions",
                cfg.max_subscriptions,
                cfg.max_per_host.min(cfg.max_subscriptions),
                cfg.handshake_timeout,
            ),
            cfg: Arc::new(cfg),
            backoff: Arc::new(Backoff::default()),
        }
    }

    /// Subscriptions held now (starting or streaming).
    pub fn active(&self) -> usize {
        self.pool.in_use().0
    }

    /// Serves one subscription on a stream positioned after the magic: Hello, the clock
    /// exchanges and Start all by `deadline` (the connection's handshake deadline). `seat` is
    /// the connection's seat in the server's pool; it runs once the samples flow.
    pub fn handle(
        &self,
        mut stream: TcpStream,
        deadline: Instant,
        seat: Option<Seat>,
    ) -> Result<(), MonitorError> {
        let c = &self.cfg;
        let peer = stream.peer_addr()?;
        stream.set_read_timeout(Some(c.handshake_timeout))?;
        stream.set_write_timeout(Some(c.handshake_timeout))?;
        let _ = stream.set_nodelay(true);
        // Whole frames before the deadline, however slowly their bytes are dribbled.
        let by = |stream: &mut TcpStream| {
            read_frame(&mut crate::net::deadline::DeadlineReader { stream, deadline })
        };
        let (interval_ms, duration_ms, token) = match by(&mut stream) {
            Ok(AgentMessage::Hello {
                version,
                interval_ms,
                duration_ms,
                token,
            }) if version == rb_agent::AGENT_VERSION => (interval_ms, duration_ms, token),
            Ok(AgentMessage::Hello { version, .. }) => {
                return refuse(
                    &mut stream,
                    1,
                    format!("agent protocol version {version} not supported (this agent speaks 1)"),
                );
            }
            Ok(other) => {
                return refuse(
                    &mut stream,
                    3,
                    format!("expected MonitorHello, got {other:?}"),
                );
            }
            Err(e) => return Err(handshake_error(e, c.handshake_timeout)),
        };
        if let Some(want) = &c.token {
            let refused = match self.backoff.check(peer.ip()) {
                // Refused without looking at the token: one guess per wait.
                Err(wait) => Some(backoff::wait_message("monitor token", wait)),
                Ok(()) if crate::service::same_token(want, &token) => {
                    self.backoff.succeeded(peer.ip());
                    None
                }
                Ok(()) if token.is_empty() => {
                    Some("this agent needs a token: pass --monitor-token".to_string())
                }
                Ok(()) => {
                    let wait = self.backoff.failed(peer.ip());
                    Some(format!(
                        "wrong monitor token (next try from this address in {:.1} s)",
                        wait.as_secs_f64()
                    ))
                }
            };
            if let Some(message) = refused {
                return refuse(&mut stream, rb_agent::ERROR_UNAUTHORIZED, message);
            }
        }
        let evict = crate::service::fair::shut_reader(&stream, None);
        let sub = match self.pool.acquire(peer.ip(), evict) {
            Ok(a) => a.seat,
            Err(why) => return refuse(&mut stream, 2, format!("busy: {why}")),
        };
        let interval = Duration::from_millis(u64::from(interval_ms)).max(c.min_interval);
        let duration = Duration::from_millis(u64::from(duration_ms))
            .min(c.max_duration)
            .max(interval);
        send(
            &mut stream,
            &AgentMessage::Welcome {
                version: rb_agent::AGENT_VERSION,
                interval_ms: interval.as_millis() as u32,
                max_duration_ms: c.max_duration.as_millis().min(u128::from(u32::MAX)) as u32,
            },
        )?;
        // Clock exchanges until Start, all within the handshake deadline.
        let mut exchanges = 0;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(MonitorError::NoStart);
            }
            let frame = by(&mut stream).map_err(|e| {
                if sub.is_evicted() || seat.as_ref().is_some_and(Seat::is_evicted) {
                    let _ = send(
                        &mut stream,
                        &AgentMessage::Error {
                            code: 2,
                            message: "busy: evicted before MonitorStart (the server was full \
                                      and a host holding fewer slots needed one)"
                                .into(),
                        },
                    );
                    MonitorError::SubscriptionRefused("evicted before MonitorStart".into())
                } else {
                    handshake_error(e, c.handshake_timeout)
                }
            })?;
            match frame {
                AgentMessage::TimeRequest { client_ns }
                    if exchanges < rb_agent::MAX_TIME_EXCHANGES =>
                {
                    let agent_rx_ns = crate::net::timestamp::realtime_ns();
                    exchanges += 1;
                    send(
                        &mut stream,
                        &AgentMessage::TimeReply {
                            client_ns,
                            agent_rx_ns,
                            agent_tx_ns: crate::net::timestamp::realtime_ns(),
                        },
                    )?;
                }
                AgentMessage::Start => {
                    sub.running();
                    if let Some(s) = &seat {
                        s.running();
                    }
                    break;
                }
                other => {
                    return refuse(
                        &mut stream,
                        4,
                        format!("expected TimeRequest (at most 64) or MonitorStart, got {other:?}"),
                    );
                }
            }
        }
        let r = self.stream_samples(stream, interval, duration);
        drop((sub, seat));
        r
    }

    fn stream_samples(
        &self,
        mut stream: TcpStream,
        interval: Duration,
        duration: Duration,
    ) -> Result<(), MonitorError> {
        let (tx, rx) = std::sync::mpsc::sync_channel::<MonitorSample>(64);
        let sampler = Sampler::start(SamplerConfig {
            interval,
            max_duration: duration,
            live: Some(tx),
            keep_samples: false,
            ..SamplerConfig::default()
        })?;
        let start_unix_ns = crate::net::timestamp::realtime_ns();
        send(&mut stream, &AgentMessage::Started { start_unix_ns })?;
        // A reader thread sees Stop (or the client going away) while samples are sent.
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let mut reader = stream.try_clone()?;
        reader.set_read_timeout(Some(Duration::from_millis(200)))?;
        let flag = stop.clone();
        let until = Instant::now() + duration + Duration::from_secs(5);
        let watcher = std::thread::Builder::new()
            .name("rb-agent-rx".into())
            .spawn(move || {
                while Instant::now() < until && !flag.load(Ordering::Relaxed) {
                    match read_frame(&mut reader) {
                        Ok(AgentMessage::Stop) => break,
                        Ok(_) => {}
                        Err(e)
                            if matches!(
                                e.kind(),
                                io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                            ) => {}
                        Err(_) => break,
                    }
                }
                flag.store(true, Ordering::Relaxed);
            })?;
        let end = Instant::now() + duration;
        let mut failed = None;
        while !stop.load(Ordering::Relaxed) && Instant::now() < end {
            match rx.recv_timeout(Duration::from_millis(50)) {
                Ok(s) => {
                    let doc = serde_json::to_vec(&s).map_err(MonitorError::Encode)?;
                    let sent = rb_agent::chunks(ChunkKind::Sample, &doc)
                        .iter()
                        .try_for_each(|m| send(&mut stream, m));
                    if let Err(e) = sent {
                        failed = Some(e);
                        break;
                    }
                }
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
            }
        }
        stop.store(true, Ordering::Relaxed);
        let mut result = sampler.stop();
        let _ = watcher.join();
        if let Some(e) = failed {
            return Err(MonitorError::SubscriberGone(e));
        }
        result.samples.clear();
        let doc = serde_json::to_vec(&result).map_err(MonitorError::Encode)?;
        for m in rb_agent::chunks(ChunkKind::Final, &doc) {
            send(&mut stream, &m)?;
        }
        let _ = stream.shutdown(std::net::Shutdown::Write);
        Ok(())
    }
}

/// An agent for one subscription on `127.0.0.1:0` of the calling thread's network namespace
/// (the lab's router namespace): the same protocol path as `server --monitor`, without the
/// iperf3 side. The listener waits at most `accept_timeout` for its one client.
pub fn spawn_local(
    agent: Agent,
    accept_timeout: Duration,
) -> io::Result<(
    std::net::SocketAddr,
    std::thread::JoinHandle<Result<(), MonitorError>>,
)> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    let addr = listener.local_addr()?;
    listener.set_nonblocking(true)?;
    let handle = std::thread::Builder::new()
        .name("rb-agent-local".into())
        .spawn(move || {
            let until = Instant::now() + accept_timeout;
            let mut stream = loop {
                match listener.accept() {
                    Ok((s, _)) => break s,
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock && Instant::now() < until => {
                        std::thread::sleep(Duration::from_millis(10));
                    }
                    Err(e) => return Err(MonitorError::NoSubscriber(e)),
                }
            };
            stream.set_nonblocking(false)?;
            stream.set_read_timeout(Some(agent.cfg.handshake_timeout))?;
            let mut magic = [0u8; 8];
            stream.read_exact(&mut magic)?;
            if magic != crate::wire::ROUTERBENCH_MAGIC {
                return Err(MonitorError::NotMagic);
            }
            agent.handle(stream, Instant::now() + agent.cfg.handshake_timeout, None)
        })?;
    Ok((addr, handle))
}

/// The routerbench-protocol handler of a server with `--monitor`: agent subscriptions go to the
/// agent, everything else to `inner` (the latency service). Decides on the first frame's type
/// byte, peeked so `inner` reads its frames untouched.
pub struct Dispatch {
    pub agent: Agent,
    pub inner: Arc<dyn crate::service::ProtocolHandler>,
}

impl crate::service::ProtocolHandler for Dispatch {
    fn handle(&self, conn: crate::service::Handoff) -> Result<(), crate::service::HandlerError> {
        let left = conn.deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(MonitorError::HandshakeTimeout(self.agent.cfg.handshake_timeout).into());
        }
        conn.stream.set_read_timeout(Some(left))?;
        let mut b = [0u8; 1];
        let n = conn
            .stream
            .peek(&mut b)
            .map_err(|e| handshake_error(e, self.agent.cfg.handshake_timeout))?;
        if n == 1 && AgentMessage::is_hello(b[0]) {
            Ok(self.agent.handle(conn.stream, conn.deadline, conn.seat)?)
        } else {
            self.inner.handle(conn)
        }
    }
}
