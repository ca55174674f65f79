//! Runs one test against a server, on flent's timeline: probes from T0 for TOTAL_LENGTH, all
//! load flows together from T0 + DELAY for LENGTH (docs/protocols/latency.md §9). Collects the raw data
//! and hands it to `summary`.

use super::conn;
use super::control::{self, ControlData, Welcome};
use super::error::LatencyError;
use super::flows::{self, FlowOutcome};
use super::plan::{Plan, TestKind};
use super::probe::{self, Live, ProbeConfig, StreamData};
use super::summary::{RawFlow, RawRun};
use crate::net as so;
use crate::results::latency::LatencyResult;
use crate::util::progress::Progress;
use crate::wire::rb::{self, Direction, Message};
use portable_atomic::AtomicU64;
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Address family preference.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum IpPref {
    #[default]
    Any,
    V4,
    V6,
}

/// Everything that defines one test run.
#[derive(Debug, Clone)]
pub struct TestConfig {
    pub kind: TestKind,
    pub host: String,
    pub port: u16,
    /// N flows for tcp_nup / tcp_ndown.
    pub streams: u8,
    /// Load length (flent LENGTH; for `ping`, the whole run).
    pub length: Duration,
    /// Idle lead-in and tail (flent DELAY).
    pub delay: Duration,
    /// Sampling step (flent STEP_SIZE).
    pub step: Duration,
    /// Probe interval (default = step, as flent; down to 5 ms).
    pub probe_interval: Duration,
    pub probe_size: usize,
    /// Congestion control for every flow socket on both ends (None = system default).
    pub cc: Option<String>,
    pub ip: IpPref,
    pub connect_timeout: Duration,
    /// Set (by SIGINT/SIGTERM) to end the test early: what was measured is kept and the
    /// result is marked `interrupted`.
    pub interrupt: Option<Arc<AtomicBool>>,
    /// Shared secret for a server started with `--token` (empty: none).
    pub token: String,
}

impl Default for TestConfig {
    fn default() -> Self {
        Self {
            kind: TestKind::Rrul,
            host: "127.0.0.1".into(),
            port: 5201,
            streams: 1,
            length: Duration::from_secs(60),
            delay: Duration::from_secs(5),
            step: Duration::from_millis(200),
            probe_interval: Duration::from_millis(200),
            probe_size: 64,
            cc: None,
            ip: IpPref::Any,
            connect_timeout: Duration::from_secs(5),
            interrupt: None,
            token: String::new(),
        }
    }
}

impl TestConfig {
    /// A short loopback RRUL for `routerbench run`: 2 s idle, 5 s load, 2 s idle.
    pub fn quick_loopback() -> Self {
        Self {
            length: Duration::from_secs(5),
            delay: Duration::from_secs(2),
            ..Self::default()
        }
    }
}

fn resolve(cfg: &TestConfig) -> Result<SocketAddr, LatencyError> {
    let addrs = (cfg.host.as_str(), cfg.port)
        .to_socket_addrs()
        .map_err(|e| LatencyError::Resolve {
            host: cfg.host.clone(),
            why: e.to_string(),
        })?;
    addrs
        .into_iter()
        .find(|a| match cfg.ip {
            IpPref::Any => true,
            IpPref::V4 => a.is_ipv4(),
            IpPref::V6 => a.is_ipv6(),
        })
        .ok_or_else(|| LatencyError::Resolve {
            host: cfg.host.clone(),
            why: format!("no {:?} address", cfg.ip),
        })
}

fn validate(cfg: &TestConfig) -> Result<(), LatencyError> {
    let bad = |m: &str| Err(LatencyError::Config(m.into()));
    if cfg.step < Duration::from_millis(5) || cfg.step > Duration::from_secs(10) {
        return bad("--step must be between 0.005 and 10 s");
    }
    if cfg.step.subsec_nanos() % 1_000_000 != 0 {
        // The server counts upload bytes on a whole-millisecond step (wire: step_ms).
        return bad("--step must be a whole number of milliseconds");
    }
    if cfg.probe_interval < Duration::from_millis(5) || cfg.probe_interval > Duration::from_secs(10)
    {
        return bad("probe interval must be between 5 ms and 10 s");
    }
    if cfg.length < cfg.step || cfg.length > Duration::from_secs(3600) {
        return bad("--length must be at least one step and at most 3600 s");
    }
    if cfg.delay > Duration::from_secs(60) {
        return bad("--delay must be at most 60 s");
    }
    if !(rb::PROBE_HEADER_LEN..=rb::PROBE_MAX_LEN).contains(&cfg.probe_size) {
        return bad("probe size must be between 56 and 1200 bytes");
    }
    if cfg.token.len() > rb::MAX_TOKEN_LEN {
        return bad("--token must be at most 128 bytes");
    }
    if cfg.streams == 0 || cfg.streams > 64 {
        return bad("the number of streams must be between 1 and 64");
    }
    Ok(())
}

/// Runs the test described by `cfg` against the server at `cfg.host:cfg.port`: set-up
/// (validate, resolve, handshake, check the grant), start the probes and flows, drive the
/// timeline, collect what the threads measured, summarise.
pub fn run_test(cfg: &TestConfig, progress: &dyn Progress) -> Result<LatencyResult, LatencyError> {
    validate(cfg)?;
    let plan = Plan::new(cfg.kind, cfg.streams);
    let addr = resolve(cfg)?;
    let started_at = crate::util::time::now_rfc3339();
    let (ctl, welcome, hs_rtt) = control::handshake(addr, cfg.connect_timeout, &cfg.token)?;
    check_grant(cfg, &plan, addr, &welcome)?;
    let mut run = start(cfg, &plan, addr, &welcome, ctl, hs_rtt)?;
    let ended = drive(cfg, &mut run, progress);
    let collected = collect(run, &ended, progress)?;
    let raw = assemble(cfg, addr, started_at, &ended, collected);
    let mut result = raw.summarise();
    if ended.interrupted {
        result.interrupted = true;
        result.notes.push(format!(
            "interrupted after {:.1} s: {:.1} s of the {:.1} s load were measured; this is a \
             partial result",
            ended.t0.elapsed().as_secs_f64(),
            ended.measured_load.as_secs_f64(),
            cfg.length.as_secs_f64()
        ));
    }
    Ok(result)
}

/// Refuses now what the server would refuse after the idle lead-in.
fn check_grant(
    cfg: &TestConfig,
    plan: &Plan,
    addr: SocketAddr,
    welcome: &Welcome,
) -> Result<(), LatencyError> {
    if plan.has_load() && cfg.length.as_millis() > welcome.max_duration_ms as u128 {
        return Err(LatencyError::Refused {
            addr,
            message: format!(
                "--length {} s exceeds this server's limit of {} s",
                cfg.length.as_secs_f64(),
                welcome.max_duration_ms as f64 / 1e3
            ),
        });
    }
    if plan.flows.len() > welcome.max_flows as usize {
        return Err(LatencyError::Refused {
            addr,
            message: format!(
                "{} flows exceed this server's limit of {}",
                plan.flows.len(),
                welcome.max_flows
            ),
        });
    }
    Ok(())
}

/// A test under way: the control connection and the threads that measure.
struct Running {
    ctl: TcpStream,
    hs_rtt: Duration,
    reader: JoinHandle<()>,
    control: Arc<Mutex<ControlData>>,
    upload_live: Arc<AtomicU64>,
    download_live: Arc<AtomicU64>,
    live: Arc<Live>,
    stop: Arc<AtomicBool>,
    probes: JoinHandle<Result<Vec<StreamData>, LatencyError>>,
    /// Per flow: its id, what is known of it before it runs (steps still empty), its thread.
    flows: Vec<(u8, RawFlow, JoinHandle<FlowOutcome>)>,
    has_load: bool,
    /// Idle lead-in (zero without load) and the whole probing time.
    delay: Duration,
    total: Duration,
    t0: Instant,
    t0_ns: u64,
    load_start: Instant,
}

/// Opens the flows, starts the control reader, the probes (T0) and the flow threads (they wait
/// for T0 + DELAY).
fn start(
    cfg: &TestConfig,
    plan: &Plan,
    addr: SocketAddr,
    welcome: &Welcome,
    ctl: TcpStream,
    hs_rtt: Duration,
) -> Result<Running, LatencyError> {
    let mut open = Vec::new();
    for (i, fp) in plan.flows.iter().enumerate() {
        open.push(flows::open(
            addr,
            welcome.session,
            i as u8,
            fp,
            cfg.cc.as_deref(),
            cfg.connect_timeout,
        )?);
    }
    let control = Arc::new(Mutex::new(ControlData::default()));
    let upload_live = Arc::new(AtomicU64::new(0));
    let reader = {
        let r = ctl.try_clone()?;
        let (c, u) = (control.clone(), upload_live.clone());
        std::thread::Builder::new()
            .name("rb-control".into())
            .spawn(move || control::control_reader(r, c, u))?
    };
    let has_load = plan.has_load();
    let (delay, total) = if has_load {
        (cfg.delay, cfg.length + 2 * cfg.delay)
    } else {
        (Duration::ZERO, cfg.length)
    };
    let live = Arc::new(Live::default());
    let stop = Arc::new(AtomicBool::new(false));
    let pcfg = ProbeConfig {
        reflector: SocketAddr::new(addr.ip(), welcome.udp_port),
        session: welcome.session,
        interval: cfg.probe_interval,
        size: cfg.probe_size,
        duration: total,
        grace: Duration::from_millis(800),
    };
    let t0_ns = so::realtime_ns();
    let t0 = Instant::now();
    let probes = probe::spawn(pcfg, plan.probes.clone(), live.clone(), stop.clone())?;
    let load_start = t0 + delay;
    let download_live = Arc::new(AtomicU64::new(0));
    let mut handles = Vec::new();
    for f in open {
        let (id, dir) = (f.id, f.plan.direction);
        let counter = if dir == Direction::Download {
            download_live.clone()
        } else {
            Arc::new(AtomicU64::new(0))
        };
        let (len, step, st) = (cfg.length, cfg.step, stop.clone());
        let known = RawFlow {
            plan: f.plan.clone(),
            tos_client: f.tos_client,
            tos_server: Some(f.tos_server),
            cc_client: f.cc_client.clone(),
            cc_server: Some(f.cc_server.clone()),
            steps: Vec::new(),
        };
        let h = std::thread::Builder::new()
            .name(format!("rb-flow{id}"))
            .spawn(move || flows::run(f, load_start, len, step, counter, st))?;
        handles.push((id, known, h));
    }
    Ok(Running {
        ctl,
        hs_rtt,
        reader,
        control,
        upload_live,
        download_live,
        live,
        stop,
        probes,
        flows: handles,
        has_load,
        delay,
        total,
        t0,
        t0_ns,
        load_start,
    })
}

/// How the timeline ended.
struct Ended {
    /// Why the test stopped early (a control error), if it did.
    failure: Option<String>,
    interrupted: bool,
    /// The load measured, in whole steps (all of it unless interrupted).
    measured_load: Duration,
    /// T0, for the time the interrupted test ran.
    t0: Instant,
}

/// Walks the timeline step by step: sends Start ahead of T0 + DELAY, shows the live line,
/// stops early on an interruption or a control error.
fn drive(cfg: &TestConfig, run: &mut Running, progress: &dyn Progress) -> Ended {
    let (t0, delay, load_start, has_load) = (run.t0, run.delay, run.load_start, run.has_load);
    // Start: sent 100 ms ahead, minus half the handshake RTT, so both ends begin together.
    let steps_total = (run.total.as_secs_f64() / cfg.step.as_secs_f64()).round() as u64;
    progress.phase(cfg.kind.flent_name(), steps_total);
    let lead = Duration::from_millis(100).min(delay);
    let mut start_sent = !has_load;
    let (mut last_down, mut k) = (0u64, 0u64);
    let mut failure = None;
    let interrupted = || {
        cfg.interrupt
            .as_ref()
            .is_some_and(|f| f.load(Ordering::Relaxed))
    };
    let mut was_interrupted = false;
    while k < steps_total {
        if interrupted() {
            was_interrupted = true;
            break;
        }
        let now = Instant::now();
        if !start_sent && now + lead >= load_start {
            let start_in = load_start
                .saturating_duration_since(now)
                .saturating_sub(run.hs_rtt / 2);
            let m = Message::Start {
                start_in_us: start_in.as_micros() as u32,
                duration_ms: cfg.length.as_millis() as u32,
                step_ms: cfg.step.as_millis() as u16,
            };
            if let Err(e) = conn::write_msg(&mut run.ctl, &m) {
                failure = Some(format!("cannot send Start: {e}"));
                break;
            }
            start_sent = true;
        }
        let tick = t0 + cfg.step * (k as u32 + 1);
        let next = if start_sent {
            tick
        } else {
            tick.min(load_start - lead)
        };
        if let Some(w) = next.checked_duration_since(Instant::now()) {
            std::thread::sleep(w);
        }
        if Instant::now() < tick {
            continue;
        }
        k += 1;
        let (up, down) = (
            run.upload_live.load(Ordering::Relaxed),
            run.download_live.load(Ordering::Relaxed),
        );
        let mbps = |b: u64| b as f64 * 8.0 / cfg.step.as_secs_f64() / 1e6;
        let rtt = run.live.last_rtt_us.load(Ordering::Relaxed) as f64 / 1e3;
        progress.step(
            k,
            &format!(
                "{:5.1} s  up {:8.1} Mbit/s  down {:8.1} Mbit/s  latency {rtt:.2} ms",
                t0.elapsed().as_secs_f64(),
                if has_load && t0.elapsed() < delay + cfg.length + cfg.step {
                    mbps(up)
                } else {
                    0.0
                },
                mbps(down - last_down.min(down))
            ),
        );
        last_down = down;
        let error = run.control.lock().ok().and_then(|d| d.error.clone());
        if let Some(e) = error {
            failure = Some(e);
            break;
        }
    }
    if failure.is_some() || was_interrupted {
        run.stop.store(true, Ordering::SeqCst);
    }
    // The load measured before an interruption, in whole steps.
    let measured_load = if was_interrupted {
        let load = t0.elapsed().saturating_sub(delay).min(cfg.length);
        let whole = (load.as_secs_f64() / cfg.step.as_secs_f64()).floor();
        cfg.step.mul_f64(whole)
    } else {
        cfg.length
    };
    Ended {
        failure,
        interrupted: was_interrupted,
        measured_load,
        t0,
    }
}

/// What the threads and the server measured, once they are done.
struct Collected {
    streams: Vec<StreamData>,
    flows: Vec<(u8, RawFlow, FlowOutcome)>,
    control: ControlData,
    t0_ns: u64,
    has_load: bool,
    notes: Vec<String>,
}

/// Joins the probe and flow threads, sends Finish and waits (5 s at most) for the server's
/// probe counts. A control error aborts the test unless it came after an interruption.
fn collect(
    run: Running,
    ended: &Ended,
    progress: &dyn Progress,
) -> Result<Collected, LatencyError> {
    let mut notes = Vec::new();
    let streams = run
        .probes
        .join()
        .map_err(|_| LatencyError::Panicked("probe"))??;
    let mut flows = Vec::new();
    for (id, known, h) in run.flows {
        let out = h.join().map_err(|_| LatencyError::Panicked("flow"))?;
        if let Some(e) = &out.error {
            notes.push(e.clone());
        }
        flows.push((id, known, out));
    }
    progress.finish();
    let mut ctl = run.ctl;
    let _ = conn::write_msg(&mut ctl, &Message::Finish);
    let give_up = Instant::now() + Duration::from_secs(5);
    while Instant::now() < give_up && !run.reader.is_finished() {
        std::thread::sleep(Duration::from_millis(20));
    }
    let data = std::mem::take(
        &mut *run
            .control
            .lock()
            .map_err(|_| LatencyError::Poisoned("control data"))?,
    );
    match ended.failure.clone().or(data.error.clone()) {
        // Ending early can make the server complain; the measurement still stands.
        Some(f) if ended.interrupted => notes.push(format!("server after the interruption: {f}")),
        Some(f) => return Err(LatencyError::Aborted(f)),
        None => {}
    }
    Ok(Collected {
        streams,
        flows,
        control: data,
        t0_ns: run.t0_ns,
        has_load: run.has_load,
        notes,
    })
}

/// Puts the client's and the server's figures of each flow side by side per step (the
/// receiver's bytes, the sender's TCP RTT) and the reflector's counts per probe stream.
fn assemble(
    cfg: &TestConfig,
    addr: SocketAddr,
    started_at: String,
    ended: &Ended,
    c: Collected,
) -> RawRun {
    let Collected {
        streams,
        flows,
        control: data,
        t0_ns,
        has_load,
        mut notes,
    } = c;
    let counts = data.finished.clone().unwrap_or_else(|| {
        notes.push("server sent no probe counts: loss is not split by direction".into());
        Vec::new()
    });
    let steps = (ended.measured_load.as_secs_f64() / cfg.step.as_secs_f64())
        .round()
        .max(1.0) as usize;
    let flows = flows
        .into_iter()
        .map(|(id, known, out)| {
            let server = data.steps.get(&id).cloned().unwrap_or_default();
            let per_step = (0..steps)
                .map(|k| {
                    let (sb, srtt) = server.get(k).copied().unwrap_or((0, 0));
                    match known.plan.direction {
                        Direction::Upload => (sb, out.rtt_per_step.get(k).copied().flatten()),
                        Direction::Download => {
                            (out.bytes_per_step.get(k).copied().unwrap_or(0), Some(srtt))
                        }
                    }
                })
                .collect();
            RawFlow {
                steps: per_step,
                ..known
            }
        })
        .collect();
    let reflector_counts = (0..streams.len())
        .map(|i| {
            counts
                .iter()
                .find(|c| c.stream as usize == i)
                .map(|c| (c.received, c.reflected))
        })
        .collect();
    RawRun {
        test: cfg.kind.flent_name().into(),
        host: cfg.host.clone(),
        port: cfg.port,
        ip_version: if addr.is_ipv6() { 6 } else { 4 },
        started_at,
        t0_ns,
        length_s: ended.measured_load.as_secs_f64(),
        delay_s: cfg.delay.as_secs_f64(),
        step_s: cfg.step.as_secs_f64(),
        has_load,
        probe_interval_s: cfg.probe_interval.as_secs_f64(),
        probe_size: cfg.probe_size,
        congestion_control: cfg.cc.clone(),
        flows,
        probes: streams,
        reflector_counts,
        notes,
    }
}
