//! Runs one test on flent's timeline: probes from T0 for TOTAL_LENGTH, the load flows from
//! T0 + DELAY for LENGTH (docs/protocols/latency.md §9, docs/latency.md). A test has one session per
//! server address it uses (`session`): one for most tests, one per address family for rrul46,
//! one per host for rtt_fair, one per phase for phases (whose loads follow each other). Each
//! session opens when its probe window begins and closes when it ends; the runner drives them
//! on one clock, collects the raw data and hands it to `summary`.

use super::error::LatencyError;
use super::plan::{Family, Plan, TestKind, Window};
use super::session::{self, Collected, Opts, Running};
use super::summary::{RawFlow, RawRun, RawSession};
use crate::net as so;
use crate::results::latency::LatencyResult;
use crate::util::progress::Progress;
use crate::wire::rb::{self, Direction};
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
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
    /// More hosts (rtt_fair: up to four in all, one session each).
    pub more_hosts: Vec<String>,
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
    /// How long a download flow keeps reading after the load window until the server closes
    /// (3 s; the Wi-Fi lab's station runs wait longer, so every byte that crossed the AP is
    /// read and counted in `bytes_all`).
    pub drain: Duration,
}

impl Default for TestConfig {
    fn default() -> Self {
        Self {
            kind: TestKind::Rrul,
            host: "127.0.0.1".into(),
            more_hosts: Vec::new(),
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
            drain: Duration::from_secs(3),
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

/// The address of `host` a session uses: its family if the plan fixes one (rrul46), else the
/// user's preference.
fn resolve(
    host: &str,
    port: u16,
    pref: IpPref,
    family: Family,
) -> Result<SocketAddr, LatencyError> {
    let addrs = (host, port)
        .to_socket_addrs()
        .map_err(|e| LatencyError::Resolve {
            host: host.to_string(),
            why: e.to_string(),
        })?;
    let want = match family {
        Family::V4 => IpPref::V4,
        Family::V6 => IpPref::V6,
        Family::Any => pref,
    };
    addrs
        .into_iter()
        .find(|a| match want {
            IpPref::Any => true,
            IpPref::V4 => a.is_ipv4(),
            IpPref::V6 => a.is_ipv6(),
        })
        .ok_or_else(|| LatencyError::Resolve {
            host: host.to_string(),
            why: match family {
                Family::Any => format!("no {want:?} address"),
                _ => format!(
                    "no {want:?} address: rrul46 needs both an IPv4 and an IPv6 address (a name \
                     with A and AAAA records, e.g. localhost)"
                ),
            },
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
    if !cfg.more_hosts.is_empty() && !matches!(cfg.kind, TestKind::RttFair | TestKind::Rrul46) {
        return bad("only rtt_fair (and rrul46, for its IPv6 host) take more than one host");
    }
    if cfg.kind == TestKind::Rrul46 && cfg.more_hosts.len() > 1 {
        return bad("rrul46 takes one host, or an IPv4 host and an IPv6 host");
    }
    if cfg.more_hosts.len() > 3 {
        return bad("rtt_fair takes at most four hosts (flent's rtt_fair runs four streams)");
    }
    Ok(())
}

/// Runs the test described by `cfg`: validate, resolve every session's address, open the
/// sessions as their windows begin, drive the timeline, collect, summarise.
pub fn run_test(cfg: &TestConfig, progress: &dyn Progress) -> Result<LatencyResult, LatencyError> {
    validate(cfg)?;
    let hosts: Vec<String> = std::iter::once(cfg.host.clone())
        .chain(cfg.more_hosts.iter().cloned())
        .collect();
    let plan = Plan::with_hosts(cfg.kind, cfg.streams, &hosts);
    let addrs = plan
        .sessions
        .iter()
        .map(|s| resolve(&hosts[s.host], cfg.port, cfg.ip, s.family))
        .collect::<Result<Vec<_>, _>>()?;
    let (windows, total) = plan.windows(cfg.delay, cfg.length);
    let started_at = crate::util::time::now_rfc3339();
    let opts = Opts {
        connect_timeout: cfg.connect_timeout,
        token: cfg.token.clone(),
        cc: cfg.cc.clone(),
        probe_interval: cfg.probe_interval,
        probe_size: cfg.probe_size,
        step: cfg.step,
        drain: cfg.drain,
    };
    let mut slots: Vec<Slot> = (0..plan.sessions.len())
        .map(|i| Slot {
            window: windows[i],
            state: State::Pending,
        })
        .collect();
    // The sessions that probe from T0 open first (a refusal is an error before anything ran).
    let t0_ns = so::realtime_ns();
    let t0 = Instant::now();
    for (i, slot) in slots.iter_mut().enumerate() {
        if slot.window.probe_start.is_zero() {
            slot.state =
                State::Running(Box::new(open(&opts, &plan, i, addrs[i], &slot.window, t0)?));
        }
    }
    let ended = drive(cfg, &plan, &opts, &addrs, &mut slots, t0, total, progress);
    let mut collected = Vec::new();
    let mut failure = ended.failure.clone();
    for (i, slot) in slots.into_iter().enumerate() {
        match slot.state {
            State::Running(r) => {
                r.stop.store(true, Ordering::SeqCst);
                match r.collect(ended.interrupted) {
                    Ok(c) => collected.push((i, c)),
                    Err(e) => {
                        failure.get_or_insert(e.to_string());
                    }
                }
            }
            State::Done(c) => collected.push((i, *c)),
            State::Pending => {}
        }
    }
    progress.finish();
    if let Some(f) = failure {
        if !ended.interrupted {
            return Err(LatencyError::Aborted(f));
        }
    }
    let raw = assemble(
        cfg, &plan, &hosts, &windows, started_at, t0_ns, total, &ended, collected,
    );
    let mut result = raw.summarise();
    if ended.interrupted {
        result.interrupted = true;
        result.notes.push(format!(
            "interrupted after {:.1} s: {:.1} s of the {:.1} s load were measured; this is a \
             partial result",
            ended.elapsed.as_secs_f64(),
            ended.measured_load.as_secs_f64(),
            cfg.length.as_secs_f64()
        ));
    }
    Ok(result)
}

/// Opens session `i` of `plan` now.
fn open(
    opts: &Opts,
    plan: &Plan,
    i: usize,
    addr: SocketAddr,
    w: &Window,
    t0: Instant,
) -> Result<Running, LatencyError> {
    let flows: Vec<_> = plan
        .flows
        .iter()
        .filter(|f| f.session == i)
        .cloned()
        .collect();
    let probes: Vec<_> = plan
        .probes
        .iter()
        .filter(|p| p.session == i)
        .cloned()
        .collect();
    session::open(opts, addr, &flows, &probes, w, t0)
}

/// A session's place in the test.
struct Slot {
    window: Window,
    state: State,
}

enum State {
    /// Its window has not begun.
    Pending,
    Running(Box<Running>),
    /// Its window ended and it was collected.
    Done(Box<Collected>),
}

/// How the timeline ended.
struct Ended {
    /// Why the test stopped early (a control or set-up error), if it did.
    failure: Option<String>,
    interrupted: bool,
    /// The first load measured, in whole steps (all of it unless interrupted).
    measured_load: Duration,
    /// The time from T0 to the end.
    elapsed: Duration,
}

/// How long after a session's probe window a session is closed: the probes' grace for late
/// replies, and the download flows' last reads.
const CLOSE_AFTER: Duration = Duration::from_millis(900);

/// Walks the timeline step by step: opens sessions as their windows begin, sends each Start
/// ahead of its load, closes sessions whose window ended, shows the live line, stops early on
/// an interruption or an error.
#[allow(clippy::too_many_arguments)]
fn drive(
    cfg: &TestConfig,
    plan: &Plan,
    opts: &Opts,
    addrs: &[SocketAddr],
    slots: &mut [Slot],
    t0: Instant,
    total: Duration,
    progress: &dyn Progress,
) -> Ended {
    let steps_total = (total.as_secs_f64() / cfg.step.as_secs_f64()).round() as u64;
    progress.phase(cfg.kind.flent_name(), steps_total);
    // Start: sent 100 ms ahead (minus half the handshake RTT), so both ends begin together.
    let lead = Duration::from_millis(100).min(cfg.delay);
    let (mut last_down, mut k) = (0u64, 0u64);
    let mut failure = None;
    let interrupted = || {
        cfg.interrupt
            .as_ref()
            .is_some_and(|f| f.load(Ordering::Relaxed))
    };
    let mut was_interrupted = false;
    'steps: while k < steps_total {
        if interrupted() {
            was_interrupted = true;
            break;
        }
        let now = Instant::now();
        for (i, slot) in slots.iter_mut().enumerate() {
            let w = slot.window;
            match &mut slot.state {
                State::Pending if now >= t0 + w.probe_start => {
                    match open(opts, plan, i, addrs[i], &w, t0) {
                        Ok(r) => slot.state = State::Running(Box::new(r)),
                        Err(e) => {
                            failure = Some(format!("cannot open the session to {}: {e}", addrs[i]));
                            break 'steps;
                        }
                    }
                }
                State::Running(r) if !r.start_sent && now + lead >= r.load_start => {
                    if let Err(e) = r.send_start(cfg.step) {
                        failure = Some(e);
                        break 'steps;
                    }
                }
                State::Running(_)
                    if now >= t0 + w.probe_end + CLOSE_AFTER && w.probe_end < total =>
                {
                    let State::Running(r) = std::mem::replace(&mut slot.state, State::Pending)
                    else {
                        continue;
                    };
                    match r.collect(false) {
                        Ok(c) => slot.state = State::Done(Box::new(c)),
                        Err(e) => {
                            failure = Some(e.to_string());
                            break 'steps;
                        }
                    }
                }
                _ => {}
            }
        }
        let tick = t0 + cfg.step * (k as u32 + 1);
        // The next thing to do: the next step, or a Start, an open or a close before it.
        let mut next = tick;
        for slot in slots.iter() {
            let w = slot.window;
            let due = match &slot.state {
                State::Pending => Some(t0 + w.probe_start),
                State::Running(r) if !r.start_sent => Some(r.load_start - lead),
                State::Running(_) if w.probe_end < total => Some(t0 + w.probe_end + CLOSE_AFTER),
                _ => None,
            };
            if let Some(d) = due {
                next = next.min(d);
            }
        }
        if let Some(wait) = next.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
        if Instant::now() < tick {
            continue;
        }
        k += 1;
        let (mut up, mut down, mut rtt) = (0u64, 0u64, 0u64);
        for slot in slots.iter() {
            if let State::Running(r) = &slot.state {
                let loading = r.start_sent
                    && Instant::now() >= r.load_start
                    && Instant::now() < r.load_start + r.load_len + cfg.step;
                if loading {
                    up += r.upload_live.load(Ordering::Relaxed);
                }
                down += r.download_live.load(Ordering::Relaxed);
                rtt = rtt.max(r.live.last_rtt_us.load(Ordering::Relaxed));
                if let Some(e) = r.error() {
                    failure = Some(e);
                    break 'steps;
                }
            }
        }
        let mbps = |b: u64| b as f64 * 8.0 / cfg.step.as_secs_f64() / 1e6;
        progress.step(
            k,
            &format!(
                "{:5.1} s  up {:8.1} Mbit/s  down {:8.1} Mbit/s  latency {:.2} ms",
                t0.elapsed().as_secs_f64(),
                mbps(up),
                mbps(down.saturating_sub(last_down)),
                rtt as f64 / 1e3
            ),
        );
        last_down = down;
    }
    if failure.is_some() || was_interrupted {
        for slot in slots.iter() {
            if let State::Running(r) = &slot.state {
                r.stop.store(true, Ordering::SeqCst);
            }
        }
    }
    let first = slots.first().map(|s| s.window).unwrap_or(Window {
        probe_start: Duration::ZERO,
        load_start: cfg.delay,
        load_len: cfg.length,
        probe_end: total,
    });
    Ended {
        failure,
        interrupted: was_interrupted,
        measured_load: measured(&first, t0.elapsed(), was_interrupted, cfg.step),
        elapsed: t0.elapsed(),
    }
}

/// The load of `w` measured by `elapsed` since T0, in whole steps (all of it if not cut short).
fn measured(w: &Window, elapsed: Duration, cut: bool, step: Duration) -> Duration {
    if !cut {
        return w.load_len;
    }
    let load = elapsed.saturating_sub(w.load_start).min(w.load_len);
    let whole = (load.as_secs_f64() / step.as_secs_f64()).floor();
    step.mul_f64(whole)
}

/// Puts the client's and the server's figures of each flow side by side per step (the
/// receiver's bytes, the sender's TCP RTT) and the reflector's counts per probe stream, for
/// every session that ran.
#[allow(clippy::too_many_arguments)]
fn assemble(
    cfg: &TestConfig,
    plan: &Plan,
    hosts: &[String],
    windows: &[Window],
    started_at: String,
    t0_ns: u64,
    total: Duration,
    ended: &Ended,
    collected: Vec<(usize, Collected)>,
) -> RawRun {
    let mut flows_out = Vec::new();
    let mut probes_out = Vec::new();
    let mut counts_out = Vec::new();
    let mut notes = Vec::new();
    let mut sessions = Vec::new();
    for (i, c) in collected {
        let w = windows[i];
        let load = measured(&w, ended.elapsed, ended.interrupted, cfg.step);
        let Collected {
            addr,
            streams,
            flows,
            control: data,
            notes: n,
        } = c;
        notes.extend(n);
        let counts = data.finished.clone().unwrap_or_else(|| {
            notes.push(format!(
                "server {addr} sent no probe counts: loss is not split by direction"
            ));
            Vec::new()
        });
        let steps = (load.as_secs_f64() / cfg.step.as_secs_f64())
            .round()
            .max(1.0) as usize;
        for (id, known, out) in flows {
            let server = data.steps.get(&id).cloned().unwrap_or_default();
            if known.plan.direction == Direction::Upload && server.is_empty() {
                notes.push(format!(
                    "server {addr} reported no received bytes for upload flow {}: its goodput \
                     reads 0 (the server's control connection ended before its first step \
                     report)",
                    known.plan.name
                ));
            }
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
            flows_out.push(RawFlow {
                steps: per_step,
                total_bytes: Some(out.total_bytes),
                ..known
            });
        }
        for (j, s) in streams.into_iter().enumerate() {
            counts_out.push(
                counts
                    .iter()
                    .find(|c| c.stream as usize == j)
                    .map(|c| (c.received, c.reflected)),
            );
            probes_out.push(s);
        }
        sessions.push(RawSession {
            index: i,
            addr: so::display_ip(addr.ip()),
            ip_version: if addr.is_ipv6() { 6 } else { 4 },
            load_start_s: w.load_start.as_secs_f64(),
            load_end_s: (w.load_start + load).as_secs_f64(),
            phase: plan.sessions[i].phase.map(|p| p.word().to_string()),
        });
    }
    // Series in the plan's order (flent's DATA_SETS order), whichever session carried them.
    let order = |name: &str| {
        plan.flows
            .iter()
            .position(|p| p.name == name)
            .unwrap_or(usize::MAX)
    };
    flows_out.sort_by_key(|f| order(&f.plan.name));
    let has_load = plan.has_load();
    let ip_version = sessions.first().map(|s| s.ip_version).unwrap_or(4);
    RawRun {
        test: cfg.kind.flent_name().into(),
        host: cfg.host.clone(),
        hosts: if hosts.len() > 1 || plan.sessions.len() > 1 {
            sessions.iter().map(|s| s.addr.clone()).collect()
        } else {
            Vec::new()
        },
        port: cfg.port,
        ip_version,
        started_at,
        t0_ns,
        // Without load (ping, voip) LENGTH is the whole probing time.
        length_s: if has_load {
            ended.measured_load.as_secs_f64()
        } else if ended.interrupted {
            ended.elapsed.min(total).as_secs_f64()
        } else {
            total.as_secs_f64()
        },
        delay_s: cfg.delay.as_secs_f64(),
        // Phases' timeline is not DELAY + LENGTH + DELAY: say how long it is.
        total_length_s: (cfg.kind == TestKind::Phases).then(|| {
            if ended.interrupted {
                ended.elapsed.min(total).as_secs_f64()
            } else {
                total.as_secs_f64()
            }
        }),
        step_s: cfg.step.as_secs_f64(),
        has_load,
        probe_interval_s: cfg.probe_interval.as_secs_f64(),
        probe_size: cfg.probe_size,
        congestion_control: cfg.cc.clone(),
        flows: flows_out,
        probes: probes_out,
        reflector_counts: counts_out,
        sessions,
        notes,
    }
}
