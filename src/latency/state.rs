//! The state the session side (`server.rs`, `server_load.rs`) and the UDP reflector
//! (`reflector.rs`) share: the limits, the live sessions and their probe counters, the log sink
//! and the event ring. Both use this file; neither uses the other's internals.

use crate::wire::rb::Direction;
use portable_atomic::AtomicU64;
use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::net::{IpAddr, TcpStream};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// Limits of one server.
#[derive(Debug, Clone)]
pub struct Bounds {
    /// Concurrent sessions (control connections).
    pub max_sessions: usize,
    /// Load flows per session.
    pub max_flows: u8,
    /// Longest load phase a client may ask for; the session lives at most this plus slack.
    pub max_duration: Duration,
    /// Time a client has to send the magic and its first message (one deadline from the
    /// accept), and to complete any later control message once its first byte arrived.
    pub handshake_timeout: Duration,
    /// Time a session may stay silent between Hello, Start and Finish (covers the longest idle
    /// lead-in or tail a client may ask for, 60 s) before it is dropped.
    pub idle_timeout: Duration,
    /// Probes per second per session that the reflector answers (token bucket).
    pub probe_rate: u32,
    /// Token-bucket depth.
    pub probe_burst: u32,
    /// UDP port of the reflector (0 = ephemeral). Never the iperf3 port.
    pub udp_port: u16,
    /// Address the reflector binds; None = the wildcard of each family.
    pub udp_bind: Option<IpAddr>,
    /// Sessions one client address may hold at once.
    pub max_sessions_per_host: usize,
    /// Shared secret every Hello must carry (`--token`); None = open.
    pub token: Option<String>,
}

impl Default for Bounds {
    fn default() -> Self {
        Self {
            max_sessions: 16,
            max_flows: 32,
            max_duration: Duration::from_secs(600),
            handshake_timeout: Duration::from_secs(5),
            idle_timeout: Duration::from_secs(90),
            probe_rate: 1000,
            probe_burst: 200,
            udp_port: 0,
            udp_bind: None,
            max_sessions_per_host: 4,
            token: None,
        }
    }
}

/// One load flow as the server holds it.
pub(crate) struct FlowHandle {
    pub id: u8,
    pub direction: Direction,
    /// Bytes received (uploads) since the flow started.
    pub bytes: Arc<AtomicU64>,
    /// A clone of the socket, for TCP_INFO.
    pub sock: TcpStream,
}

/// What a LoadHello asked for, and from where.
pub(crate) struct LoadRequest {
    pub peer: SocketAddr,
    pub version: u16,
    pub session: u64,
    pub flow: u8,
    pub direction: Direction,
    pub tos: u8,
    pub cc: String,
}

/// Probe counts and the last kernel send stamp, per stream.
#[derive(Default, Clone, Copy)]
pub(crate) struct StreamState {
    pub received: u32,
    pub reflected: u32,
    pub prev_tx: Option<(u32, u64)>,
    /// The source port of the stream's first answered probe: the stream is bound to it, and
    /// probes from other ports of the session's address are not answered.
    pub port: Option<u16>,
}

/// The reflector's per-session state.
pub(crate) struct ProbeState {
    pub tokens: f64,
    pub last_refill: Instant,
    pub streams: HashMap<u8, StreamState>,
}

pub(crate) struct Session {
    pub id: u64,
    pub peer_ip: IpAddr,
    pub deadline: Instant,
    /// Set when the session ends, or when its pending seat is taken (the evictor holds it).
    pub abort: Arc<AtomicBool>,
    /// The session runs: its first probe was answered, or Start arrived. From then on its
    /// seats (session pool, and the connection pool's for the control and flow connections)
    /// are never taken.
    pub running: AtomicBool,
    pub seats: Mutex<Vec<crate::service::fair::Seat>>,
    /// (start instant, duration) once Start arrived.
    pub start: Mutex<Option<(Instant, Duration)>>,
    pub start_cv: Condvar,
    pub flows: Mutex<Vec<FlowHandle>>,
    pub probes: Mutex<ProbeState>,
    /// An RPM test (RpmBegin): its load connections run until then.
    pub rpm_until: Mutex<Option<Instant>>,
    /// Token bucket of the session's foreign RPM probes: (tokens, last refill).
    pub foreign_tokens: Mutex<(f64, Instant)>,
}

impl Session {
    /// The session runs now (see `running`); the first call marks its seats.
    pub fn mark_running(&self) {
        if self.running.swap(true, std::sync::atomic::Ordering::SeqCst) {
            return;
        }
        if let Ok(seats) = self.seats.lock() {
            for s in seats.iter() {
                s.running();
            }
        }
    }

    /// Keeps a seat for the session's life (a flow connection's); marked running if the
    /// session already runs.
    pub fn hold(&self, seat: crate::service::fair::Seat) {
        if self.running.load(std::sync::atomic::Ordering::SeqCst) {
            seat.running();
        }
        if let Ok(mut seats) = self.seats.lock() {
            seats.push(seat);
        }
    }
}

/// Foreign RPM probes a session may make per second (the draft's MPS is 100 probes a second,
/// half of them foreign; twice that leaves room for bursts), and the bucket's depth.
pub(crate) const FOREIGN_RATE: f64 = 200.0;
pub(crate) const FOREIGN_BURST: f64 = 100.0;

/// Most streams a session may probe with.
pub const MAX_STREAMS: usize = 16;

pub(crate) struct Inner {
    pub bounds: Bounds,
    pub sessions: Mutex<HashMap<u64, Arc<Session>>>,
    events: Mutex<VecDeque<String>>,
    /// Where log lines go (the server command's sink); none: kept in `events` only, so an
    /// in-process server (`run`, `lab run`) never writes into its command's report.
    log_to: Mutex<Option<Arc<dyn LogSink>>>,
    /// Takes the source of a datagram on the reflector's port that is not a probe (an iperf3
    /// UDP hello when the reflector shares the iperf3 port); true if it was taken.
    pub(crate) foreign: Mutex<Option<ForeignFn>>,
    /// At most 20 stderr lines a second: a flood of bad connections must not fill the log.
    logcap: crate::service::logcap::LogCap,
    pub shutdown: AtomicBool,
    /// Session seats shared fairly between hosts (`max_sessions`, `max_sessions_per_host`).
    pub pool: Arc<crate::service::fair::FairPool>,
    /// Wrong tokens slow their address down.
    pub backoff: crate::service::backoff::Backoff,
}

/// Receives a datagram that is not a probe (its source and bytes); true if it was taken.
pub type ForeignFn = Arc<dyn Fn(std::net::SocketAddr, &[u8]) -> bool + Send + Sync>;

/// Where the service's log lines go: the command that hosts the service renders them (the
/// server command's log, `latency-server`'s stderr). The service itself never prints. Any
/// `Fn(&str)` closure is a sink.
pub trait LogSink: Send + Sync {
    /// One log line, without a trailing newline.
    fn line(&self, line: &str);
}

impl<F: Fn(&str) + Send + Sync> LogSink for F {
    fn line(&self, line: &str) {
        self(line)
    }
}

impl Inner {
    pub fn new(bounds: Bounds) -> Self {
        Self {
            pool: crate::service::fair::FairPool::new(
                "routerbench sessions",
                bounds.max_sessions,
                bounds.max_sessions_per_host,
                bounds.handshake_timeout,
            ),
            backoff: crate::service::backoff::Backoff::default(),
            bounds,
            sessions: Mutex::new(HashMap::new()),
            events: Mutex::new(VecDeque::new()),
            log_to: Mutex::new(None),
            foreign: Mutex::new(None),
            logcap: crate::service::logcap::LogCap::new(20),
            shutdown: AtomicBool::new(false),
        }
    }

    /// Sends the log lines from now on to `sink`.
    pub fn set_log(&self, sink: Arc<dyn LogSink>) {
        if let Ok(mut h) = self.log_to.lock() {
            *h = Some(sink);
        }
    }

    /// Logs a server event to the sink (if any) and keeps the last 256 for inspection.
    pub fn log(&self, msg: String) {
        let sink = self.log_to.lock().ok().and_then(|h| h.clone());
        if let Some(sink) = sink {
            // At most 20 lines a second: a flood of bad connections must not fill the log.
            if let Some(n) = self.logcap.flush() {
                sink.line(&format!("{n} more lines not logged (at most 20 a second)"));
            }
            if self.logcap.admit() {
                sink.line(&msg);
            }
        }
        self.note(msg);
    }

    /// The last logged events (oldest first).
    pub fn events(&self) -> Vec<String> {
        self.events
            .lock()
            .map(|e| e.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// Keeps an event for inspection without logging it.
    pub fn note(&self, msg: String) {
        if let Ok(mut ev) = self.events.lock() {
            if ev.len() >= 256 {
                ev.pop_front();
            }
            ev.push_back(msg);
        }
    }
    pub fn session(&self, id: u64) -> Option<Arc<Session>> {
        self.sessions.lock().ok()?.get(&id).cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_lines_go_to_the_sink_capped_and_all_are_kept() {
        let inner = Inner::new(Bounds::default());
        inner.log("before any sink".into());
        let got = Arc::new(Mutex::new(Vec::<String>::new()));
        let g = got.clone();
        inner.set_log(Arc::new(move |l: &str| {
            g.lock().unwrap().push(l.to_string())
        }));
        let t = Instant::now();
        for i in 0..25 {
            inner.log(format!("line {i}"));
        }
        let within_one_window = t.elapsed() < Duration::from_millis(900);
        inner.note("noted only".into());
        let got = got.lock().unwrap().clone();
        assert_eq!(got[0], "line 0");
        if within_one_window {
            assert_eq!(
                got.len(),
                20,
                "at most 20 lines a second reach the sink: {got:?}"
            );
        }
        let ev = inner.events();
        assert_eq!(ev.len(), 27, "every line is kept for inspection");
        assert_eq!(ev[0], "before any sink");
        assert_eq!(ev[26], "noted only");
    }
}
