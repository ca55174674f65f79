//! Responsiveness under working conditions, as draft-ietf-ippm-responsiveness-09 defines it
//! (docs/rpm.md): `params` (§5.2), `ramp` (§5.4's stability rule and §5.4.1's confidence, pure),
//! `score` (§5.3.1's trimmed means and RPM, pure), `driver` (runs the algorithm over a
//! `transport`), `rb` (routerbench's own protocol, the TCP-only variant) and, with the cargo
//! feature `https`, `https` (HTTP/2 over TLS to any draft-conforming server), both behind the
//! trait `transport::Transport` (docs/rpm.md).

pub mod driver;
#[cfg(feature = "https")]
pub mod https;
pub mod params;
pub mod ramp;
pub mod rb;
pub mod score;
pub mod stream;
pub mod transport;

pub use params::Params;

use crate::results::rpm::RpmResult;
use crate::util::progress::Progress;
use crate::wire::rb::Direction;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};
use transport::{ProbeKind, ProbeLog, Transport};

/// Which directions, and how (draft §5.1.2: concurrent, or sequential for diagnosis).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Download, then upload: one score each.
    Sequential,
    /// Both at once: one score.
    Concurrent,
    Download,
    Upload,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Sequential => "sequential",
            Self::Concurrent => "concurrent",
            Self::Download => "download",
            Self::Upload => "upload",
        }
    }

    /// The runs, each a set of directions loaded together.
    pub fn runs(self) -> Vec<Vec<Direction>> {
        match self {
            Self::Sequential => vec![vec![Direction::Download], vec![Direction::Upload]],
            Self::Concurrent => vec![vec![Direction::Download, Direction::Upload]],
            Self::Download => vec![vec![Direction::Download]],
            Self::Upload => vec![vec![Direction::Upload]],
        }
    }
}

/// Idle probes before the load (the draft's verbose "idle latency").
const IDLE_PROBES: usize = 5;

/// Runs the test over `transport` (already connected): idle latency, then each run of `mode`.
pub fn run(
    transport: &dyn Transport,
    target: String,
    mode: Mode,
    params: &Params,
    progress: &dyn Progress,
    interrupt: Option<Arc<AtomicBool>>,
) -> RpmResult {
    let started_at = crate::util::time::now_rfc3339();
    let t0_unix_s = crate::net::realtime_ns() as f64 / 1e9;
    let t0 = Instant::now();
    let idle = idle_latency(transport);
    let mut runs = Vec::new();
    let mut notes = Vec::new();
    let mut interrupted = false;
    for dirs in mode.runs() {
        let r = driver::run(transport, &dirs, params, t0, progress, interrupt.as_ref());
        interrupted |= r.end == "interrupted";
        let failed = r.end.starts_with("error");
        runs.push(r);
        if interrupted || failed {
            break;
        }
    }
    if runs.iter().any(|r| r.end.starts_with("error")) {
        notes.push("a load connection failed: the result is partial (Low confidence)".into());
    }
    RpmResult {
        target,
        transport: transport.describe(),
        mode: mode.as_str().into(),
        started_at,
        t0_unix_s,
        params: params.to_result(),
        runs,
        idle_latency_ms: idle,
        notes,
        interrupted,
    }
}

/// A few foreign probes on the idle path: the trimmed mean of their round trips (ms).
fn idle_latency(transport: &dyn Transport) -> Option<f64> {
    let log = ProbeLog::default();
    for _ in 0..IDLE_PROBES {
        transport.foreign_probe(log.launch(ProbeKind::Foreign, 0, None));
        let until = Instant::now() + Duration::from_secs(2);
        while log.pending() > 0 && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(2));
        }
    }
    let v: Vec<f64> = log
        .entries()
        .iter()
        .filter_map(|e| e.timing)
        .map(|t| t.http.as_secs_f64() * 1e3)
        .collect();
    crate::stats::trimmed_mean(v, 95.0)
}
