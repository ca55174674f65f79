//! Runs one test against a server, on flent's timeline: probes from T0 for TOTAL_LENGTH, all
//! load flows together from T0 + DELAY for LENGTH (spec/latency.md §9). Collects the raw data
//! and hands it to `summary`.

use super::conn::{self, ConnError};
use super::flows::{self, FlowOutcome};
use super::plan::{Plan, TestKind};
use super::probe::{self, Live, ProbeConfig};
use super::summary::{RawFlow, RawRun};
use crate::net::latency_sockopts as so;
use crate::results::latency::LatencyResult;
use crate::util::progress::Progress;
use crate::wire::ROUTERBENCH_MAGIC;
use crate::wire::rb::{self, Direction, Message};
use std::collections::HashMap;
use std::io::Write;
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
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

/// Why a test could not run.
#[derive(Debug, thiserror::Error)]
pub enum LatencyError {
    #[error("cannot resolve {host}: {why}")]
    Resolve { host: String, why: String },
    #[error(
        "cannot connect to {addr}: {error} (is `routerbench latency-server` running there, and the port open?)"
    )]
    Connect {
        addr: SocketAddr,
        error: std::io::Error,
    },
    #[error("server {addr} refused the test: {message}")]
    Refused { addr: SocketAddr, message: String },
    #[error("invalid settings: {0}")]
    Config(String),
    #[error(transparent)]
    Other(#[from] anyhow::Error),
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

/// What the server granted in its Welcome.
struct Welcome {
    session: u64,
    udp_port: u16,
    max_duration_ms: u32,
    max_flows: u8,
}

/// Opens the control connection: magic, Hello → Welcome. Returns (stream, grant, handshake RTT).
fn handshake(
    addr: SocketAddr,
    timeout: Duration,
    token: &str,
) -> Result<(TcpStream, Welcome, Duration), LatencyError> {
    let mut ctl = TcpStream::connect_timeout(&addr, timeout)
        .map_err(|error| LatencyError::Connect { addr, error })?;
    ctl.set_nodelay(true).map_err(anyhow::Error::from)?;
    ctl.set_read_timeout(Some(timeout))
        .map_err(anyhow::Error::from)?;
    ctl.set_write_timeout(Some(timeout))
        .map_err(anyhow::Error::from)?;
    let t = Instant::now();
    let mut hello = ROUTERBENCH_MAGIC.to_vec();
    hello.extend_from_slice(
        &Message::Hello {
            version: rb::VERSION,
            token: token.to_string(),
        }
        .emit(),
    );
    ctl.write_all(&hello).map_err(anyhow::Error::from)?;
    match conn::read_msg(&mut ctl) {
        Ok(Message::Welcome { session, udp_port, max_duration_ms, max_flows, .. }) => {
            Ok((ctl, Welcome { session, udp_port, max_duration_ms, max_flows }, t.elapsed()))
        }
        Ok(Message::Error { message, .. }) => Err(LatencyError::Refused { addr, message }),
        Ok(other) => Err(LatencyError::Refused { addr, message: format!("unexpected answer {other:?}") }),
        Err(ConnError::Closed) => Err(LatencyError::Refused {
            addr,
            message: "connection closed during the handshake (an iperf3-only server, or an older routerbench?)".into(),
        }),
        Err(ConnError::Timeout) => Err(LatencyError::Refused {
            addr,
            message: format!(
                "no answer to Hello within {timeout:?}: is this an iperf3-only server (iperf3 -s \
                 waits for its own cookie), or another service on that port?"
            ),
        }),
        Err(e) => Err(LatencyError::Refused { addr, message: format!("no valid Welcome: {e}") }),
    }
}

/// What the control reader collected.
#[derive(Default)]
struct ControlData {
    /// flow id → per step (bytes, server TCP RTT µs).
    steps: HashMap<u8, Vec<(u64, u32)>>,
    finished: Option<Vec<rb::StreamCount>>,
    error: Option<String>,
}

fn control_reader(mut ctl: TcpStream, data: Arc<Mutex<ControlData>>, upload_live: Arc<AtomicU64>) {
    let _ = ctl.set_read_timeout(Some(Duration::from_millis(500)));
    let give_up = Instant::now() + Duration::from_secs(4000);
    while Instant::now() < give_up {
        match conn::read_msg(&mut ctl) {
            Ok(Message::StepReport { step, flows }) => {
                let Ok(mut d) = data.lock() else { return };
                // The live line shows the latest whole step (reports arrive just after it ends).
                upload_live.store(flows.iter().map(|f| f.bytes).sum(), Ordering::Relaxed);
                for f in flows {
                    let v = d.steps.entry(f.flow).or_default();
                    let idx = step as usize;
                    if idx < 100_000 {
                        if v.len() <= idx {
                            v.resize(idx + 1, (0, 0));
                        }
                        v[idx] = (f.bytes, f.tcp_rtt_us);
                    }
                }
            }
            Ok(Message::Finished { streams }) => {
                if let Ok(mut d) = data.lock() {
                    d.finished = Some(streams);
                }
                return;
            }
            Ok(Message::Error { message, .. }) => {
                if let Ok(mut d) = data.lock() {
                    d.error = Some(format!("server reported: {message}"));
                }
                return;
            }
            Ok(other) => {
                if let Ok(mut d) = data.lock() {
                    d.error = Some(format!("unexpected control message {other:?}"));
                }
                return;
            }
            Err(ConnError::Timeout) => {}
            Err(e) => {
                if let Ok(mut d) = data.lock() {
                    d.error = Some(format!("control connection lost: {e}"));
                }
                return;
            }
        }
    }
}

/// Runs the test described by `cfg` against the server at `cfg.host:cfg.port`.
pub fn run_test(cfg: &TestConfig, progress: &dyn Progress) -> Result<LatencyResult, LatencyError> {
    validate(cfg)?;
    let plan = Plan::new(cfg.kind, cfg.streams);
    let addr = resolve(cfg)?;
    let started_at = crate::util::time::now_rfc3339();
    let (mut ctl, welcome, hs_rtt) = handshake(addr, cfg.connect_timeout, &cfg.token)?;
    let (session, udp_port) = (welcome.session, welcome.udp_port);
    // Refuse now what the server would refuse after the idle lead-in.
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
    let mut notes = Vec::new();
    let mut open = Vec::new();
    for (i, fp) in plan.flows.iter().enumerate() {
        open.push(flows::open(
            addr,
            session,
            i as u8,
            fp,
            cfg.cc.as_deref(),
            cfg.connect_timeout,
        )?);
    }
    let control = Arc::new(Mutex::new(ControlData::default()));
    let upload_live = Arc::new(AtomicU64::new(0));
    let reader = {
        let r = ctl.try_clone().map_err(anyhow::Error::from)?;
        let (c, u) = (control.clone(), upload_live.clone());
        std::thread::Builder::new()
            .name("rb-control".into())
            .spawn(move || control_reader(r, c, u))
            .map_err(anyhow::Error::from)?
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
        reflector: SocketAddr::new(addr.ip(), udp_port),
        session,
        interval: cfg.probe_interval,
        size: cfg.probe_size,
        duration: total,
        grace: Duration::from_millis(800),
    };
    let t0_ns = so::realtime_ns();
    let t0 = Instant::now();
    let probes = probe::spawn(pcfg, plan.probes.clone(), live.clone(), stop.clone())
        .map_err(anyhow::Error::from)?;
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
        let meta = (
            f.plan.clone(),
            f.tos_client,
            f.tos_server,
            f.cc_client.clone(),
            f.cc_server.clone(),
        );
        let h = std::thread::Builder::new()
            .name(format!("rb-flow{id}"))
            .spawn(move || flows::run(f, load_start, len, step, counter, st))
            .map_err(anyhow::Error::from)?;
        handles.push((id, meta, h));
    }
    // Start: sent 100 ms ahead, minus half the handshake RTT, so both ends begin together.
    let steps_total = (total.as_secs_f64() / cfg.step.as_secs_f64()).round() as u64;
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
                .saturating_sub(hs_rtt / 2);
            let m = Message::Start {
                start_in_us: start_in.as_micros() as u32,
                duration_ms: cfg.length.as_millis() as u32,
                step_ms: cfg.step.as_millis() as u16,
            };
            if let Err(e) = conn::write_msg(&mut ctl, &m) {
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
            upload_live.load(Ordering::Relaxed),
            download_live.load(Ordering::Relaxed),
        );
        let mbps = |b: u64| b as f64 * 8.0 / cfg.step.as_secs_f64() / 1e6;
        let rtt = live.last_rtt_us.load(Ordering::Relaxed) as f64 / 1e3;
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
        let error = control.lock().ok().and_then(|d| d.error.clone());
        if let Some(e) = error {
            failure = Some(e);
            break;
        }
    }
    if failure.is_some() || was_interrupted {
        stop.store(true, Ordering::SeqCst);
    }
    // The load measured before an interruption, in whole steps.
    let measured_load = if was_interrupted {
        let load = t0.elapsed().saturating_sub(delay).min(cfg.length);
        let whole = (load.as_secs_f64() / cfg.step.as_secs_f64()).floor();
        cfg.step.mul_f64(whole)
    } else {
        cfg.length
    };
    let streams = probes
        .join()
        .map_err(|_| anyhow::anyhow!("probe thread panicked"))??;
    let mut raw_flows = Vec::new();
    let mut outcomes: Vec<(u8, FlowOutcome)> = Vec::new();
    for (id, meta, h) in handles {
        let out = h
            .join()
            .map_err(|_| anyhow::anyhow!("flow thread panicked"))?;
        if let Some(e) = &out.error {
            notes.push(e.clone());
        }
        outcomes.push((id, out));
        raw_flows.push((id, meta));
    }
    progress.finish();
    let _ = conn::write_msg(&mut ctl, &Message::Finish);
    let give_up = Instant::now() + Duration::from_secs(5);
    while Instant::now() < give_up && !reader.is_finished() {
        std::thread::sleep(Duration::from_millis(20));
    }
    let data = std::mem::take(
        &mut *control
            .lock()
            .map_err(|_| anyhow::anyhow!("control data poisoned"))?,
    );
    match failure.or(data.error.clone()) {
        // Ending early can make the server complain; the measurement still stands.
        Some(f) if was_interrupted => notes.push(format!("server after the interruption: {f}")),
        Some(f) => return Err(LatencyError::Other(anyhow::anyhow!("test aborted: {f}"))),
        None => {}
    }
    let counts = data.finished.clone().unwrap_or_else(|| {
        notes.push("server sent no probe counts: loss is not split by direction".into());
        Vec::new()
    });
    let steps = (measured_load.as_secs_f64() / cfg.step.as_secs_f64())
        .round()
        .max(1.0) as usize;
    let flows = raw_flows
        .into_iter()
        .zip(outcomes)
        .map(
            |((id, (plan, tos_client, tos_server, cc_client, cc_server)), (_, out))| {
                let server = data.steps.get(&id).cloned().unwrap_or_default();
                let per_step = (0..steps)
                    .map(|k| {
                        let (sb, srtt) = server.get(k).copied().unwrap_or((0, 0));
                        match plan.direction {
                            Direction::Upload => (sb, out.rtt_per_step.get(k).copied().flatten()),
                            Direction::Download => {
                                (out.bytes_per_step.get(k).copied().unwrap_or(0), Some(srtt))
                            }
                        }
                    })
                    .collect();
                RawFlow {
                    plan,
                    tos_client,
                    tos_server: Some(tos_server),
                    cc_client,
                    cc_server: Some(cc_server),
                    steps: per_step,
                }
            },
        )
        .collect();
    let reflector_counts = streams
        .iter()
        .enumerate()
        .map(|(i, _)| {
            counts
                .iter()
                .find(|c| c.stream as usize == i)
                .map(|c| (c.received, c.reflected))
        })
        .collect();
    let raw = RawRun {
        test: cfg.kind.flent_name().into(),
        host: cfg.host.clone(),
        port: cfg.port,
        ip_version: if addr.is_ipv6() { 6 } else { 4 },
        started_at,
        t0_ns,
        length_s: measured_load.as_secs_f64(),
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
    };
    let mut result = raw.summarise();
    if was_interrupted {
        result.interrupted = true;
        result.notes.push(format!(
            "interrupted after {:.1} s: {:.1} s of the {:.1} s load were measured; this is a \
             partial result",
            t0.elapsed().as_secs_f64(),
            measured_load.as_secs_f64(),
            cfg.length.as_secs_f64()
        ));
    }
    Ok(result)
}
