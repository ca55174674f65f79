//! `routerbench stress`: a full workload for a set time — crypto on every core
//! (`crypto::load`), back-to-back RRUL segments over loopback or to a server through the router
//! (`net`), or both — while the machine under test is watched (`observe`: this machine's
//! sampler, or the router's agent) on one time axis, then the detectors (`detect`, pure, on
//! the recorded series) say whether it crashed, rebooted, overheated, throttled or drifted.
//! Progress goes through [`Progress`], events through [`StressEvents`]; nothing is printed.

pub mod detect;
#[cfg(test)]
mod detect_tests;
pub mod net;
pub mod observe;
pub mod series;
pub mod trend;

use crate::crypto::CryptoError;
use crate::crypto::load::{CryptoLoad, LoadConfig};
use crate::monitor::MonitorError;
use crate::results::monitor::MonitorResult;
use crate::results::stress::{
    CpuPoint, CpuWorkload, EventKind, NetWorkload, StressEvent, StressResult, Thresholds,
};
use crate::util::progress::Progress;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Shortest `--for`: below it nothing can be concluded at all.
pub const MIN_DURATION: Duration = Duration::from_secs(10);
/// Longest `--for` (a day).
pub const MAX_DURATION: Duration = Duration::from_secs(86_400);

/// What to run and watch.
#[derive(Debug, Clone)]
pub struct StressConfig {
    pub duration: Duration,
    /// Period of the crypto series and the progress line.
    pub tick: Duration,
    pub cpu: Option<LoadConfig>,
    pub net: Option<net::NetConfig>,
    /// The router's agent; without it this machine is the one watched.
    pub agent: Option<observe::AgentTarget>,
    /// This machine's sampling interval.
    pub monitor_interval: Duration,
    pub ambient_c: Option<f64>,
    pub thresholds: Thresholds,
    /// Set (by SIGINT/SIGTERM) to end the run early; what was measured is kept.
    pub interrupt: Option<Arc<AtomicBool>>,
}

impl Default for StressConfig {
    fn default() -> Self {
        Self {
            duration: Duration::from_secs(1800),
            tick: Duration::from_secs(1),
            cpu: Some(LoadConfig::default()),
            net: Some(net::NetConfig::default()),
            agent: None,
            monitor_interval: Duration::from_secs(1),
            ambient_c: None,
            thresholds: Thresholds::default(),
            interrupt: None,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum StressError {
    #[error("{0}")]
    Config(String),
    #[error("the crypto load cannot run: {0}")]
    Crypto(#[from] CryptoError),
    #[error("the router's agent: {0}")]
    Agent(#[from] MonitorError),
    #[error(
        "cannot reach the network load's server {addr}: {error} (start `routerbench server` \
         there, or use --net loopback)"
    )]
    Unreachable { addr: String, error: String },
    #[error("cannot start the run: {0}")]
    Io(#[from] std::io::Error),
}

/// Receives each event as it happens (the command line prints them).
pub trait StressEvents: Send + Sync {
    fn event(&self, e: &StressEvent);
}

/// Discards events.
pub struct NoEvents;

impl StressEvents for NoEvents {
    fn event(&self, _: &StressEvent) {}
}

/// The run: the stress section, and the machine's series on its axis.
pub struct StressOutcome {
    pub stress: StressResult,
    /// This machine.
    pub monitor: Option<MonitorResult>,
    /// The router's agent.
    pub router: Option<MonitorResult>,
}

fn validate(cfg: &StressConfig) -> Result<(), StressError> {
    if cfg.duration < MIN_DURATION {
        return Err(StressError::Config(format!(
            "--for {:.0}s is too short to conclude anything: at least {} s (a device heats for \
             minutes: --for 30m)",
            cfg.duration.as_secs_f64(),
            MIN_DURATION.as_secs()
        )));
    }
    if cfg.duration > MAX_DURATION {
        return Err(StressError::Config("--for must be at most 24 h".into()));
    }
    if cfg.cpu.is_none() && cfg.net.is_none() {
        return Err(StressError::Config(
            "no workload: give --cpu, --crypto ALG or --net loopback|HOST".into(),
        ));
    }
    if !(Duration::from_millis(100)..=Duration::from_secs(10)).contains(&cfg.tick)
        || !(Duration::from_millis(50)..=Duration::from_secs(60)).contains(&cfg.monitor_interval)
    {
        return Err(StressError::Config(
            "the tick must be 0.1–10 s and the monitor interval 0.05–60 s".into(),
        ));
    }
    if let Some(a) = cfg.ambient_c.filter(|a| !(-40.0..=80.0).contains(a)) {
        return Err(StressError::Config(format!(
            "--ambient {a} °C is not a room's temperature (−40…80)"
        )));
    }
    Ok(())
}

/// A server given by host must answer before the run starts.
fn preflight(cfg: &net::NetConfig) -> Result<(), StressError> {
    let net::Target::Host(host) = &cfg.target else {
        return Ok(());
    };
    let addr = format!("{host}:{}", cfg.port);
    let fail = |error: String| StressError::Unreachable {
        addr: addr.clone(),
        error,
    };
    let resolved = std::net::ToSocketAddrs::to_socket_addrs(&(host.as_str(), cfg.port))
        .map_err(|e| fail(e.to_string()))?
        .next()
        .ok_or_else(|| fail("no address".into()))?;
    std::net::TcpStream::connect_timeout(&resolved, Duration::from_secs(5))
        .map(drop)
        .map_err(|e| fail(e.to_string()))
}

/// Runs the workload for `cfg.duration` (or until interrupted), watching the machine, then
/// analyses what was recorded.
pub fn run(
    cfg: &StressConfig,
    progress: &dyn Progress,
    events: &dyn StressEvents,
) -> Result<StressOutcome, StressError> {
    validate(cfg)?;
    if let Some(n) = &cfg.net {
        preflight(n)?;
    }
    let (live_tx, live_rx) = std::sync::mpsc::sync_channel(64);
    let mut router = match &cfg.agent {
        Some(a) => Some(observe::Router::start(a, cfg.duration, live_tx.clone())?),
        None => None,
    };
    let local_live = router.is_none().then(|| live_tx.clone());
    let mut notes = Vec::new();
    let local = match observe::start_local(cfg.monitor_interval, cfg.duration, local_live) {
        Ok(s) => Some(s),
        Err(e) => {
            notes.push(format!("this machine's monitor did not start: {e}"));
            None
        }
    };
    let load = cfg.cpu.as_ref().map(CryptoLoad::start).transpose()?;
    let t0 = Instant::now();
    let t0_unix_s = crate::util::time::unix_now_f64();
    let deadline = t0 + cfg.duration;
    let stop = Arc::new(AtomicBool::new(false));
    let net_live = Arc::new(Mutex::new(String::new()));
    let (ev_tx, ev_rx) = std::sync::mpsc::channel::<StressEvent>();
    let net_thread = match &cfg.net {
        Some(n) => {
            let (n, stop, live, tx) = (n.clone(), stop.clone(), net_live.clone(), ev_tx.clone());
            Some(
                std::thread::Builder::new()
                    .name("rb-stress-net".into())
                    .spawn(move || net::run(&n, t0, t0_unix_s, deadline, &stop, &live, &tx))?,
            )
        }
        None => None,
    };
    drop(ev_tx);
    let mut rec = Recorder {
        t0,
        events,
        list: Vec::new(),
    };
    let cpu_series = tick_loop(
        cfg,
        progress,
        &mut rec,
        Loop {
            deadline,
            load: load.as_ref(),
            router: router.as_mut(),
            live: &live_rx,
            net_live: &net_live,
            net_events: &ev_rx,
        },
    );
    progress.finish();
    stop.store(true, Ordering::SeqCst);
    let measured_s = t0.elapsed().as_secs_f64().min(cfg.duration.as_secs_f64());
    let net_out = net_thread.map(|h| h.join().unwrap_or_default());
    while let Ok(e) = ev_rx.try_recv() {
        rec.push(e.kind, e.message, Some(e.t_s));
    }
    let cpu = load.map(|l| {
        let w = CpuWorkload {
            engine: l.info.name.clone(),
            engine_version: l.info.version.clone(),
            algorithm: cfg
                .cpu
                .as_ref()
                .map_or(crate::results::crypto::Algorithm::Aes128Cbc, |c| {
                    c.algorithm
                }),
            threads: l.threads,
            pinned: l.pinned,
            block_bytes: l.block_bytes,
        };
        if let Err(e) = l.stop() {
            rec.push(EventKind::CpuError, format!("crypto load: {e}"), None);
        }
        w
    });
    let router = router.map(|r| r.finish(t0_unix_s));
    let monitor = local.map(|s| {
        let mut m = s.stop();
        crate::monitor::remote::onto_test_axis(&mut m, t0_unix_s);
        m
    });
    rec.list.sort_by(|a, b| a.t_s.total_cmp(&b.t_s));
    let mut stress = StressResult {
        planned_s: cfg.duration.as_secs_f64(),
        measured_s,
        t0_unix_s,
        tick_s: cfg.tick.as_secs_f64(),
        ambient_c: cfg.ambient_c,
        cpu,
        net: cfg.net.as_ref().map(|n| NetWorkload {
            target: match &n.target {
                net::Target::Loopback => "loopback".into(),
                net::Target::Host(h) => h.clone(),
            },
            port: n.port,
            test: n.kind.flent_name().into(),
            segment_s: n.segment.as_secs_f64(),
            step_s: n.step.as_secs_f64(),
            segments: net_out.as_ref().map_or(0, |o| o.segments),
            segments_failed: net_out.as_ref().map_or(0, |o| o.failed),
        }),
        observed: if router.is_some() { "router" } else { "local" }.into(),
        cpu_series,
        net_series: net_out.map(|o| o.points).unwrap_or_default(),
        events: rec.list,
        thresholds: cfg.thresholds.clone(),
        analysis: Default::default(),
    };
    let dut = router.as_ref().or(monitor.as_ref());
    stress.analysis = detect::analyze(&stress, dut);
    stress.analysis.notes.extend(notes);
    Ok(StressOutcome {
        stress,
        monitor,
        router,
    })
}

/// Events with their time, kept and passed on.
struct Recorder<'a> {
    t0: Instant,
    events: &'a dyn StressEvents,
    list: Vec<StressEvent>,
}

impl Recorder<'_> {
    fn push(&mut self, kind: EventKind, message: String, t_s: Option<f64>) {
        let e = StressEvent {
            t_s: t_s.unwrap_or_else(|| self.t0.elapsed().as_secs_f64()),
            kind,
            message,
        };
        self.events.event(&e);
        self.list.push(e);
    }
}

/// What the tick loop reads.
struct Loop<'a> {
    deadline: Instant,
    load: Option<&'a CryptoLoad>,
    router: Option<&'a mut observe::Router>,
    live: &'a std::sync::mpsc::Receiver<crate::results::monitor::MonitorSample>,
    net_live: &'a Mutex<String>,
    net_events: &'a std::sync::mpsc::Receiver<StressEvent>,
}

/// One pass per tick until the deadline, an interruption or a failed crypto load: the crypto
/// point, the events, the agent's state, the progress line.
fn tick_loop(
    cfg: &StressConfig,
    progress: &dyn Progress,
    rec: &mut Recorder<'_>,
    mut l: Loop<'_>,
) -> Vec<CpuPoint> {
    let total = cfg.duration.as_secs();
    progress.phase("stress", total);
    let interrupted = || {
        cfg.interrupt
            .as_ref()
            .is_some_and(|f| f.load(Ordering::Relaxed))
    };
    let pkey = l.load.is_some_and(|c| c.block_bytes.is_none());
    let mut points = Vec::new();
    let (mut last_done, mut last_at) = (l.load.map_or(0, CryptoLoad::done), rec.t0);
    let mut temp: Option<f64> = None;
    let mut next = rec.t0;
    let max_ticks = (cfg.duration.as_secs_f64() / cfg.tick.as_secs_f64()).ceil() as u64 + 2;
    for _ in 0..max_ticks {
        next = (next + cfg.tick).min(l.deadline);
        while Instant::now() < next && !interrupted() {
            std::thread::sleep(
                Duration::from_millis(100).min(next.saturating_duration_since(Instant::now())),
            );
        }
        let now = Instant::now();
        let t_s = now.duration_since(rec.t0).as_secs_f64();
        let mut crypto_text = String::new();
        if let Some(c) = l.load {
            let done = c.done();
            let dt = now.duration_since(last_at).as_secs_f64().max(1e-6);
            let rate = done.saturating_sub(last_done) as f64 / dt;
            (last_done, last_at) = (done, now);
            points.push(CpuPoint {
                t_s,
                bytes_per_s: (!pkey).then_some(rate),
                ops_per_s: pkey.then_some(rate),
            });
            crypto_text = if pkey {
                format!(" · crypto {rate:.0} sign/s")
            } else {
                format!(" · crypto {:.0} MB/s", rate / 1e6)
            };
        }
        if let Some(s) = observe::latest(l.live) {
            temp = s.temperature_max_c;
        }
        while let Ok(e) = l.net_events.try_recv() {
            rec.push(e.kind, e.message, Some(e.t_s));
        }
        if let Some(r) = l.router.as_deref_mut() {
            match r.poll(l.deadline.saturating_duration_since(now)) {
                Some(observe::Change::Lost(why)) => rec.push(
                    EventKind::AgentLost,
                    format!("the router's agent stopped answering: {why}"),
                    None,
                ),
                Some(observe::Change::Back) => rec.push(
                    EventKind::AgentBack,
                    "the router's agent answers again (new subscription)".into(),
                    None,
                ),
                None => {}
            }
        }
        let left = l.deadline.saturating_duration_since(now).as_secs();
        let net_text = l
            .net_live
            .lock()
            .map(|m| {
                if m.is_empty() {
                    String::new()
                } else {
                    format!(" · net {m}")
                }
            })
            .unwrap_or_default();
        progress.step(
            t_s as u64,
            &format!(
                "{} elapsed, {} left · {}{crypto_text}{net_text}",
                mmss(t_s as u64),
                mmss(left),
                temp.map_or("no temperature sensor".into(), |c| format!("{c:.1} °C")),
            ),
        );
        if interrupted() {
            rec.push(
                EventKind::Interrupted,
                "interrupted (SIGINT/SIGTERM): the series hold what was measured until then".into(),
                None,
            );
            break;
        }
        if l.load.is_some_and(CryptoLoad::failed) {
            break;
        }
        if now >= l.deadline {
            break;
        }
    }
    points
}

/// `m:ss` (or `h:mm:ss`).
fn mmss(s: u64) -> String {
    if s >= 3600 {
        format!("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
    } else {
        format!("{}:{:02}", s / 60, s % 60)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_settings_say_what_to_do() {
        let short = StressConfig {
            duration: Duration::from_secs(5),
            ..Default::default()
        };
        let e = run(&short, &crate::util::progress::NoProgress, &NoEvents)
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("too short to conclude anything"), "{e}");
        let none = StressConfig {
            cpu: None,
            net: None,
            ..Default::default()
        };
        let e = validate(&none).unwrap_err().to_string();
        assert!(e.contains("--cpu"), "{e}");
        let hot = StressConfig {
            ambient_c: Some(300.0),
            ..Default::default()
        };
        assert!(validate(&hot).is_err());
        assert_eq!(mmss(125), "2:05");
        assert_eq!(mmss(3725), "1:02:05");
    }

    #[test]
    fn an_unreachable_server_is_an_error_before_the_run() {
        // A port nobody listens on (bound, then closed).
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let cfg = net::NetConfig {
            target: net::Target::Host("127.0.0.1".into()),
            port,
            ..Default::default()
        };
        let e = preflight(&cfg).unwrap_err().to_string();
        assert!(e.contains("start `routerbench server` there"), "{e}");
    }
}
