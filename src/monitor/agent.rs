//! The agent: `routerbench server --monitor` serves this machine's samples to clients over
//! routerbench's own protocol on the server's port (frames in `wire::rb_agent`). Each
//! subscription runs its own sampler for at most the server's duration limit; subscriptions
//! are bounded, a token is checked before anything is sampled, and every phase has a deadline.

use super::error::MonitorError;
use super::{Sampler, SamplerConfig};
use crate::results::monitor::MonitorSample;
use crate::wire::rb::{self, WireError};
use crate::wire::rb_agent::{self, AgentMessage, ChunkKind};
use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
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
    /// Hello, clock exchanges and Start must arrive within this time.
    pub handshake_timeout: Duration,
}

impl Default for AgentConfig {
    fn default() -> Self {
        Self {
            token: None,
            max_subscriptions: 4,
            max_duration: Duration::from_secs(3600),
            min_interval: Duration::from_millis(50),
            handshake_timeout: Duration::from_secs(10),
        }
    }
}

/// The agent, shared by the server's connection threads.
#[derive(Clone)]
pub struct Agent {
    cfg: Arc<AgentConfig>,
    active: Arc<AtomicUsize>,
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

/// Releases a subscription slot however the subscription ends.
struct Slot(Arc<AtomicUsize>);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Agent {
    pub fn new(cfg: AgentConfig) -> Self {
        Self {
            cfg: Arc::new(cfg),
            active: Arc::new(AtomicUsize::new(0)),
        }
    }

    /// Subscriptions running now.
    pub fn active(&self) -> usize {
        self.active.load(Ordering::Relaxed)
    }

    /// Serves one subscription on a stream positioned after the magic.
    pub fn handle(&self, mut stream: TcpStream) -> Result<(), MonitorError> {
        let c = &self.cfg;
        let deadline = Instant::now() + c.handshake_timeout;
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
            Err(e) => return Err(MonitorError::BadFirstMessage(e)),
        };
        if c.token
            .as_ref()
            .is_some_and(|want| !crate::service::same_token(want, &token))
        {
            return refuse(
                &mut stream,
                rb_agent::ERROR_UNAUTHORIZED,
                if token.is_empty() {
                    "this agent needs a token: pass --monitor-token".into()
                } else {
                    "wrong monitor token".into()
                },
            );
        }
        let before = self.active.fetch_add(1, Ordering::Relaxed);
        let _slot = Slot(self.active.clone());
        if before >= c.max_subscriptions {
            return refuse(
                &mut stream,
                2,
                format!(
                    "busy: {before} monitor subscriptions running (limit {})",
                    c.max_subscriptions
                ),
            );
        }
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
            match by(&mut stream)? {
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
                AgentMessage::Start => break,
                other => {
                    return refuse(
                        &mut stream,
                        4,
                        format!("expected TimeRequest (at most 64) or MonitorStart, got {other:?}"),
                    );
                }
            }
        }
        self.stream_samples(stream, interval, duration)
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
            agent.handle(stream)
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
    fn handle(&self, stream: TcpStream, prefix: &[u8]) -> Result<(), crate::service::HandlerError> {
        stream.set_read_timeout(Some(self.agent.cfg.handshake_timeout))?;
        let mut b = [0u8; 1];
        let n = stream.peek(&mut b)?;
        if n == 1 && AgentMessage::is_hello(b[0]) {
            Ok(self.agent.handle(stream)?)
        } else {
            self.inner.handle(stream, prefix)
        }
    }
}
