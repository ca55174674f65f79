//! The network load: back-to-back RRUL segments against one server (a latency server started
//! in this process for `--net loopback`, else the host given) until the run's end. A failed
//! segment is an event and the next one starts after a short pause, so a reset connection or
//! a server that went away loses at most one segment of the series and is recorded.

use super::series;
use crate::latency::{TestConfig, TestKind};
use crate::results::stress::{EventKind, NetPoint, StressEvent};
use crate::util::progress::Progress;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Sender;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Where the load goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// A latency server in this process on 127.0.0.1 (the in-device test).
    Loopback,
    /// `routerbench server` (or `latency-server`) on this host.
    Host(String),
}

/// The network load's settings.
#[derive(Debug, Clone)]
pub struct NetConfig {
    pub target: Target,
    pub port: u16,
    pub kind: TestKind,
    /// Longest segment.
    pub segment: Duration,
    /// Step of the series.
    pub step: Duration,
    pub probe_interval: Duration,
    pub cc: Option<String>,
    pub token: String,
}

impl Default for NetConfig {
    fn default() -> Self {
        Self {
            target: Target::Loopback,
            port: crate::wire::iperf3::DEFAULT_PORT,
            kind: TestKind::Rrul,
            segment: Duration::from_secs(30),
            step: Duration::from_secs(1),
            probe_interval: Duration::from_millis(200),
            cc: None,
            token: String::new(),
        }
    }
}

/// What the load thread measured.
#[derive(Debug, Default)]
pub struct NetOutcome {
    pub points: Vec<NetPoint>,
    pub segments: u32,
    pub failed: u32,
}

/// Keeps the runner's latest live line ("up … down … latency …") for the progress display.
struct Capture(Arc<Mutex<String>>);

impl Progress for Capture {
    fn phase(&self, _: &str, _: u64) {}
    fn step(&self, _: u64, message: &str) {
        // The runner's line starts with its own segment time ("  5.1 s  up …"): drop it.
        let live = message.find("up ").map_or(message, |i| &message[i..]);
        if let Ok(mut m) = self.0.lock() {
            *m = live.split_whitespace().collect::<Vec<_>>().join(" ");
        }
    }
    fn finish(&self) {}
}

/// A pause after a failed segment (a server restarting, a router rebooting).
const RETRY_PAUSE: Duration = Duration::from_secs(2);
/// A segment shorter than this is not started.
const MIN_SEGMENT: Duration = Duration::from_secs(2);

/// Runs segments until `deadline` or `stop`; events go to `events` as they happen (`t_s` from
/// `t0`), the live line to `live`.
pub fn run(
    cfg: &NetConfig,
    t0: Instant,
    t0_unix_s: f64,
    deadline: Instant,
    stop: &Arc<AtomicBool>,
    live: &Arc<Mutex<String>>,
    events: &Sender<StressEvent>,
) -> NetOutcome {
    let mut out = NetOutcome::default();
    let say = |kind, message: String| {
        let _ = events.send(StressEvent {
            t_s: t0.elapsed().as_secs_f64(),
            kind,
            message,
        });
    };
    let (host, port, service) = match &cfg.target {
        Target::Host(h) => (h.clone(), cfg.port, None),
        Target::Loopback => {
            let bind = std::net::SocketAddr::from(([127, 0, 0, 1], 0));
            match crate::server::latency_only::spawn_in_process(bind, Default::default()) {
                Ok((addr, service)) => ("127.0.0.1".to_string(), addr.port(), Some(service)),
                Err(e) => {
                    say(
                        EventKind::NetError,
                        format!("cannot start the loopback server: {e}"),
                    );
                    out.failed += 1;
                    return out;
                }
            }
        }
    };
    let capture = Capture(live.clone());
    while !stop.load(Ordering::Relaxed) {
        let left = deadline.saturating_duration_since(Instant::now());
        if left < MIN_SEGMENT {
            break;
        }
        // Whole steps, as the runner measures them.
        let steps = (left.min(cfg.segment).as_secs_f64() / cfg.step.as_secs_f64()).floor();
        let tcfg = TestConfig {
            kind: cfg.kind,
            host: host.clone(),
            port,
            length: cfg.step.mul_f64(steps.max(1.0)),
            delay: Duration::ZERO,
            step: cfg.step,
            probe_interval: cfg.probe_interval,
            cc: cfg.cc.clone(),
            interrupt: Some(stop.clone()),
            token: cfg.token.clone(),
            ..TestConfig::default()
        };
        out.segments += 1;
        match crate::latency::run_test(&tcfg, &capture) {
            Ok(r) => {
                for f in series::flow_failures(&r) {
                    say(EventKind::NetError, f);
                }
                out.points.extend(series::net_points(&r, t0_unix_s));
            }
            Err(e) => {
                out.failed += 1;
                if let Ok(mut m) = live.lock() {
                    *m = "network test failed, retrying".into();
                }
                say(EventKind::NetError, e.to_string());
                let until = (Instant::now() + RETRY_PAUSE).min(deadline);
                while Instant::now() < until && !stop.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(100));
                }
            }
        }
    }
    if let Some(s) = service {
        s.shutdown();
    }
    out
}
