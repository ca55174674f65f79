//! `lab run`: one of routerbench's latency tests (rrul, rrul_be, tcp_nup, tcp_ndown, ping)
//! through the lab: the server in the WAN namespace, the client in the LAN namespace, the
//! monitor in the router namespace; then the measured queue delay and goodput against theory.

use super::backlog::{BacklogSample, delays_ms};
use super::error::{Context, LabError, Result, chain};
use super::{netns, theory};
use crate::latency::{TestConfig, TestKind};
use crate::monitor::agent::{Agent, AgentConfig};
use crate::monitor::remote::{RemoteConfig, RemoteMonitor};
use crate::results::lab::{LabConfig, QueueCheck};
use crate::results::latency::{LatencyResult, ProbeResult};
use crate::results::monitor::MonitorResult;
use crate::util::progress::Progress;
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

/// The TCP port of the latency server inside the WAN namespace.
pub const LAB_TEST_PORT: u16 = 5201;

/// What `lab run` produced.
#[derive(Debug, Clone)]
pub struct LabRun {
    pub latency: LatencyResult,
    pub monitor: Option<MonitorResult>,
    pub checks: Vec<QueueCheck>,
    /// With a VM router: its taps' queues and the verdict.
    pub tap_queues: Vec<crate::results::lab::TapQueue>,
    pub router_verdict: Option<crate::results::lab::RouterVerdict>,
}

/// The latency server of a lab test in the WAN host, on [`LAB_TEST_PORT`]: its accept and
/// reflector threads are spawned from a WAN-namespace thread, so they live in that namespace.
pub(super) fn wan_latency_server(
    cfg: &LabConfig,
) -> Result<(SocketAddr, crate::latency::server::Service)> {
    let wan_ip: IpAddr = cfg.wan_ip.parse().context("lab WAN address")?;
    let bind = SocketAddr::new(wan_ip, LAB_TEST_PORT);
    netns::run_in(&cfg.ns_wan, move || {
        Ok(crate::server::latency_only::spawn_in_process(
            bind,
            crate::latency::server::Bounds::default(),
        )?)
    })
    .context("cannot start the latency server in the WAN namespace")
}

/// Runs `test` (its host and port are replaced by the lab's WAN host) through lab `cfg`.
/// `warmup` is skipped at the start of the load before queue delays are compared with theory.
pub fn run(
    cfg: &LabConfig,
    test: &TestConfig,
    warmup: Duration,
    progress: Box<dyn Progress>,
) -> Result<LabRun> {
    super::sys::require_root()?;
    let (addr, service) = wan_latency_server(cfg)?;
    // The router's view through the agent path (as `--monitor` against `server --monitor`).
    // Namespace router: an agent and its subscriber in the router namespace, over that
    // namespace's loopback, so the samples cost the lab links nothing. VM router: its own
    // agent, reached from the LAN host. Queues read every 0.1 s.
    // The whole timeline: DELAY + LENGTH + DELAY, or (phases) three loads with gaps.
    let total = crate::latency::plan::Plan::new(test.kind, test.streams)
        .windows(test.delay, test.length)
        .1;
    let remote = match &cfg.router_vm {
        Some(vm) => {
            let (addr, token) = (vm.agent.clone(), vm.agent_token.clone());
            netns::run_in(&cfg.ns_lan, move || {
                let rc = RemoteConfig::new(
                    &addr,
                    Some(token),
                    Duration::from_millis(100),
                    total + Duration::from_secs(120),
                );
                Ok(RemoteMonitor::start(&rc, None)?)
            })
        }
        None => netns::run_in(&cfg.ns_rtr, move || {
            let (addr, _agent) = crate::monitor::agent::spawn_local(
                Agent::new(AgentConfig::default()),
                Duration::from_secs(10),
            )?;
            let rc = RemoteConfig::new(
                &addr.to_string(),
                None,
                Duration::from_millis(100),
                total + Duration::from_secs(120),
            );
            Ok(RemoteMonitor::start(&rc, None)?)
        }),
    };
    // VM router: the taps' queues, and a watchdog that ends the test if qemu dies.
    let max = total + Duration::from_secs(120);
    let mut taps = Vec::new();
    let mut watchdog = None;
    let mut test = test.clone();
    if let Some(vm) = &cfg.router_vm {
        for (ns, dev, dir) in [
            (&cfg.ns_lan, &cfg.devices.lan, "upload"),
            (&cfg.ns_wan, &cfg.devices.wan, "download"),
        ] {
            taps.push(crate::lab::vm::watch::TapSampler::start(ns, dev, dir, max)?);
        }
        let flag = test
            .interrupt
            .get_or_insert_with(|| std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false)))
            .clone();
        watchdog = Some(crate::lab::vm::watch::Watchdog::start(
            vm.qemu_pid,
            flag,
            max,
        ));
    }
    let mut t = test.clone();
    t.host = addr.ip().to_string();
    t.port = addr.port();
    t.ip = crate::latency::IpPref::V4;
    let result = netns::run_in(&cfg.ns_lan, move || {
        crate::latency::run_test(&t, progress.as_ref())
            .map_err(|e| LabError::Measure(e.to_string()).into())
    });
    service.shutdown();
    let died_at = watchdog.and_then(|w| w.finish());
    let tap_queues: Vec<_> = taps.into_iter().filter_map(|t| t.finish()).collect();
    let latency = result?;
    // The load: the one window, or from the first phase's start to the last one's end.
    let load = latency
        .sessions
        .iter()
        .filter(|s| s.phase.is_some())
        .fold(None, |w: Option<(f64, f64)>, s| match w {
            Some((a, b)) => Some((a.min(s.load_start_s), b.max(s.load_end_s))),
            None => Some((s.load_start_s, s.load_end_s)),
        })
        .unwrap_or((latency.delay_s, latency.delay_s + latency.length_s));
    let monitor = remote.and_then(|r| {
        crate::monitor::remote::finish(r, latency.t0_unix, Some(load)).map_err(LabError::other)
    });
    let mut latency = latency;
    let monitor = match monitor {
        Ok(m) => Some(m),
        Err(e) => {
            latency
                .notes
                .push(format!("router samples lost: {}", chain(&e)));
            None
        }
    };
    let backlog = monitor
        .as_ref()
        .map(|m| super::backlog::from_monitor(m, &cfg.devices.rtr_wan, &cfg.devices.rtr_lan))
        .unwrap_or_default();
    let checks = checks(cfg, test.kind, &latency, &backlog, warmup);
    let router_verdict = cfg
        .router_vm
        .as_ref()
        .map(|_| crate::lab::vm::watch::verdict(monitor.as_ref(), &tap_queues, died_at));
    if let Some(t) = died_at {
        latency.interrupted = true;
        latency.notes.push(format!(
            "the VM router (qemu) died {t:.1} s into the test: the result is partial"
        ));
    }
    Ok(LabRun {
        latency,
        monitor,
        checks,
        tap_queues,
        router_verdict,
    })
}

/// Which directions a test loads: (upload, download).
fn loaded(kind: TestKind) -> (bool, bool) {
    match kind {
        TestKind::Rrul
        | TestKind::RrulBe
        | TestKind::RrulIcmp
        | TestKind::TcpBidirectional
        | TestKind::RrulVar
        | TestKind::Rrul46
        | TestKind::RttFair
        | TestKind::Phases => (true, true),
        TestKind::TcpNup => (true, false),
        TestKind::TcpNdown => (false, true),
        TestKind::Ping | TestKind::Voip => (false, false),
    }
}

/// The windows a comparison reads, s since T0: idle before `idle_end`, loaded from `from` (the
/// load's start plus the warm-up) to `to` (the load's end).
#[derive(Debug, Clone, Copy)]
struct Window {
    idle_end: f64,
    from: f64,
    to: f64,
}

/// Steady-state goodput of one direction ("upload"/"download"), bit/s: the flows' per-step
/// goodput summed over the steps that lie inside the window, so slow start does not count
/// against theory. Falls back to `whole_load_mbps` (the test's whole-load mean) when the
/// result carries no steps in that window.
fn steady_goodput(
    r: &LatencyResult,
    direction: &str,
    win: Window,
    whole_load_mbps: Option<f64>,
) -> Option<f64> {
    let (start, end) = (win.from, win.to);
    let step = r.step_s;
    if step <= 0.0 || end - start < step {
        return whole_load_mbps.map(|m| m * 1e6);
    }
    let eps = step / 100.0;
    let mut bits = 0.0;
    let mut steps = std::collections::BTreeSet::new();
    for f in r.flows.iter().filter(|f| f.direction == direction) {
        for s in &f.samples {
            if s.t - step >= start - eps && s.t <= end + eps {
                bits += s.mbps * 1e6 * step;
                steps.insert((s.t / step).round() as i64);
            }
        }
    }
    if steps.is_empty() {
        return whole_load_mbps.map(|m| m * 1e6);
    }
    Some(bits / (steps.len() as f64 * step))
}

/// One-way or round-trip samples of probe series, split into idle (before the load) and
/// loaded (inside the window).
fn split<F: Fn(&crate::results::latency::ProbePoint) -> Option<f64>>(
    series: &[&ProbeResult],
    win: Window,
    value: F,
) -> (Vec<f64>, Vec<f64>) {
    let (mut idle, mut busy) = (Vec::new(), Vec::new());
    for s in series {
        for p in &s.samples {
            if let Some(v) = value(p) {
                if p.t < win.idle_end {
                    idle.push(v);
                } else if p.t >= win.from && p.t < win.to {
                    busy.push(v);
                }
            }
        }
    }
    (idle, busy)
}

/// One row of the comparison; `idle`/`busy` empty = a goodput-only row.
struct Row<'a> {
    /// Queue delays from the qdisc backlog over the loaded window, ms.
    qdisc: Vec<f64>,
    direction: &'a str,
    metric: &'a str,
    rate_bps: Option<u64>,
    theory_ms: f64,
    goodput_bps: Option<f64>,
    goodput_theory_ratio: Option<f64>,
}

fn check(row: Row<'_>, buffer: u64, idle: &[f64], busy: &[f64]) -> QueueCheck {
    let i = theory::summarize(idle.len() as u32, idle);
    let b = theory::summarize(busy.len() as u32, busy);
    let inc = |x: Option<f64>| match (x, i.median_ms) {
        (Some(l), Some(m)) => Some(l - m),
        _ => None,
    };
    let (med, p99) = (inc(b.median_ms), inc(b.p99_ms));
    let q = theory::summarize(row.qdisc.len() as u32, &row.qdisc);
    let theory_ms = row.theory_ms;
    let ratio = |x: Option<f64>| x.filter(|_| theory_ms > 0.0).map(|d| d / theory_ms);
    QueueCheck {
        direction: row.direction.into(),
        metric: row.metric.into(),
        rate_bps: row.rate_bps,
        buffer_bytes: buffer,
        theory_ms,
        idle_median_ms: i.median_ms,
        loaded: b,
        median_increase_ms: med,
        p99_increase_ms: p99,
        median_ratio: ratio(med),
        p99_ratio: ratio(p99),
        goodput_bps: row.goodput_bps,
        goodput_ratio: match (row.goodput_bps, row.rate_bps) {
            (Some(g), Some(r)) if r > 0 => Some(g / r as f64),
            _ => None,
        },
        goodput_theory_ratio: row.goodput_theory_ratio,
        qdisc_median_ms: q.median_ms,
        qdisc_p99_ms: q.p99_ms,
        phase: None,
    }
}

/// Compares the test's queue delays and goodput with the lab's theory: per loaded direction the
/// UDP probes' one-way delay (exact here: all namespaces share one clock), and the round trip
/// against the sum of the loaded directions' queue delays. A test with phases (`phases`) gets
/// these per phase, each over its own load window, with the phase named in each check.
pub fn checks(
    cfg: &LabConfig,
    kind: TestKind,
    r: &LatencyResult,
    backlog: &[BacklogSample],
    warmup: Duration,
) -> Vec<QueueCheck> {
    let w = warmup.as_secs_f64();
    let phased: Vec<_> = r.sessions.iter().filter(|s| s.phase.is_some()).collect();
    if kind == TestKind::Phases && !phased.is_empty() {
        let mut out = Vec::new();
        for s in phased {
            let phase = s.phase.clone().unwrap_or_default();
            let (up, down) = match phase.as_str() {
                "download" => (false, true),
                "upload" => (true, false),
                _ => (true, true),
            };
            let win = Window {
                idle_end: r.delay_s,
                from: s.load_start_s + w,
                to: s.load_end_s,
            };
            let mut c = window_checks(cfg, r, backlog, (up, down), win, (None, None));
            for q in &mut c {
                q.phase = Some(phase.clone());
            }
            out.extend(c);
        }
        return out;
    }
    let win = Window {
        idle_end: r.delay_s,
        from: r.delay_s + w,
        to: r.delay_s + r.length_s,
    };
    let whole = (r.summary.upload_mbps, r.summary.download_mbps);
    window_checks(cfg, r, backlog, loaded(kind), win, whole)
}

/// The checks of one load window: `(up, down)` say which directions it loads, `whole` is the
/// test's whole-load goodput per direction (upload, download), Mbit/s, for when no step lies
/// in the window.
fn window_checks(
    cfg: &LabConfig,
    r: &LatencyResult,
    backlog: &[BacklogSample],
    (up, down): (bool, bool),
    win: Window,
    whole: (Option<f64>, Option<f64>),
) -> Vec<QueueCheck> {
    let th = |rate: Option<u64>| rate.map(|x| theory::queue_delay_ms(cfg.buffer_bytes, x));
    let udp: Vec<&ProbeResult> = r.probes.iter().filter(|p| p.kind == "udp").collect();
    let all: Vec<&ProbeResult> = r.probes.iter().collect();
    let up_good = steady_goodput(r, "upload", win, whole.0);
    let down_good = steady_goodput(r, "download", win, whole.1);
    // With both directions loaded, each link also carries the other direction's ACKs.
    let g_theory = if up && down {
        theory::goodput_ratio_with_reverse_acks()
    } else {
        theory::goodput_ratio()
    };
    let mut out = Vec::new();
    for (on, name, rate, good, owd_up) in [
        (up, "up", cfg.up_rate_bps, up_good, true),
        (down, "down", cfg.down_rate_bps, down_good, false),
    ] {
        if !on {
            continue;
        }
        let (idle, busy) = split(
            &udp,
            win,
            |p| {
                if owd_up { p.owd_up_ms } else { p.owd_down_ms }
            },
        );
        let (from, to) = (r.t0_unix + win.from, r.t0_unix + win.to);
        let row = Row {
            qdisc: rate
                .map(|x| delays_ms(backlog, from, to, owd_up, x))
                .unwrap_or_default(),
            direction: name,
            metric: if busy.is_empty() {
                "goodput"
            } else {
                "UDP one-way delay"
            },
            rate_bps: rate,
            theory_ms: th(rate).unwrap_or(0.0),
            goodput_bps: good,
            goodput_theory_ratio: rate.map(|_| g_theory),
        };
        out.push(check(row, cfg.buffer_bytes, &idle, &busy));
    }
    let rtt_theory = [(up, cfg.up_rate_bps), (down, cfg.down_rate_bps)]
        .iter()
        .filter(|(on, _)| *on)
        .filter_map(|(_, rate)| th(*rate))
        .fold(0.0, |a, b| a + b);
    let (idle, busy) = if up || down {
        split(&all, win, |p| p.rtt_ms)
    } else {
        // ping: no load, every sample is idle.
        let v = all
            .iter()
            .flat_map(|s| s.samples.iter().filter_map(|p| p.rtt_ms))
            .collect();
        (v, Vec::new())
    };
    let row = Row {
        qdisc: Vec::new(),
        direction: match (up, down) {
            (true, true) => "both",
            (true, false) => "up",
            (false, true) => "down",
            (false, false) => "idle",
        },
        metric: "round trip (all probes)",
        rate_bps: None,
        theory_ms: rtt_theory,
        goodput_bps: None,
        goodput_theory_ratio: None,
    };
    out.push(check(row, cfg.buffer_bytes, &idle, &busy));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::lab::Shaper;

    /// A real `lab run rrul -l 6 --delay 1 -s 0.2` through a 20 Mbit/s × 64000 B lab (flow
    /// samples dropped to keep the file small; the checks do not read them).
    const RRUL: &str = include_str!("../../tests/fixtures/lab/rrul-20mbit-64000.json");

    fn lab() -> LabConfig {
        LabConfig {
            name: "rbfx".into(),
            ns_lan: "rbfx-lan".into(),
            ns_rtr: "rbfx-rtr".into(),
            ns_wan: "rbfx-wan".into(),
            lan_ip: super::super::LAN_IP.into(),
            rtr_lan_ip: super::super::RTR_LAN_IP.into(),
            rtr_wan_ip: super::super::RTR_WAN_IP.into(),
            wan_ip: super::super::WAN_IP.into(),
            up_rate_bps: Some(20_000_000),
            down_rate_bps: Some(20_000_000),
            buffer_bytes: 64_000,
            burst_bytes: 15_360,
            shaper: Shaper::Tbf,
            nat: false,
            offloads: false,
            cc: "cubic".into(),
            ns_cc: "reno".into(),
            devices: Default::default(),
            router_vm: None,
        }
    }

    #[test]
    fn rrul_checks_per_direction_and_round_trip() {
        let r: LatencyResult = serde_json::from_str(RRUL).unwrap();
        let c = checks(&lab(), TestKind::Rrul, &r, &[], Duration::from_secs(2));
        let dirs: Vec<_> = c
            .iter()
            .map(|q| (q.direction.as_str(), q.metric.as_str()))
            .collect();
        assert_eq!(
            dirs,
            [
                ("up", "UDP one-way delay"),
                ("down", "UDP one-way delay"),
                ("both", "round trip (all probes)")
            ]
        );
        assert!((c[0].theory_ms - 25.6).abs() < 1e-9);
        assert!((c[2].theory_ms - 51.2).abs() < 1e-9);
        // Load 1..7 s, warm-up 2 s: 3 UDP series × 4 s / 0.2 s = 60 loaded samples per direction;
        // idle = the 1 s before the load.
        assert_eq!(c[0].loaded.sent, 60);
        assert!(c[0].idle_median_ms.unwrap() < 0.1);
        assert!(
            (c[0].p99_ratio.unwrap() - 0.768).abs() < 0.01,
            "{:?}",
            c[0].p99_ratio
        );
        assert!(
            (c[1].p99_ratio.unwrap() - 0.988).abs() < 0.01,
            "{:?}",
            c[1].p99_ratio
        );
        let g = c[0].goodput_ratio.unwrap();
        assert!((g - 18.520885 / 20.0).abs() < 1e-6);
        assert_eq!(
            c[0].goodput_theory_ratio,
            Some(theory::goodput_ratio_with_reverse_acks())
        );
        // The round trip crosses both queues, so it is larger than either one-way delay.
        assert!(c[2].loaded.median_ms.unwrap() > c[1].loaded.median_ms.unwrap());
    }

    #[test]
    fn goodput_counts_only_the_steady_state() {
        use crate::results::latency::ThroughputSample;
        let mut r: LatencyResult = serde_json::from_str(RRUL).unwrap();
        // Load 1..7 s, step 0.2 s: 1 Mbit/s per upload flow during slow start (before 3 s),
        // 5 Mbit/s after; the four upload flows give 20 Mbit/s in the steady window.
        for f in r.flows.iter_mut().filter(|f| f.direction == "upload") {
            f.samples = (1..=30)
                .map(|i| {
                    let t = 1.0 + 0.2 * f64::from(i);
                    ThroughputSample {
                        t,
                        mbps: if t <= 3.0 + 1e-9 { 1.0 } else { 5.0 },
                        tcp_rtt_ms: None,
                    }
                })
                .collect();
        }
        let win = Window {
            idle_end: r.delay_s,
            from: r.delay_s + 2.0,
            to: r.delay_s + r.length_s,
        };
        let g = steady_goodput(&r, "upload", win, r.summary.upload_mbps).unwrap();
        assert!((g - 20e6).abs() < 1.0, "{g}");
        // Downloads carry no steps in the fixture: the whole-load mean is used.
        let d = steady_goodput(&r, "download", win, r.summary.download_mbps).unwrap();
        assert!((d - r.summary.download_mbps.unwrap() * 1e6).abs() < 1e-3);
    }

    #[test]
    fn one_direction_and_ping_select_their_theory() {
        let r: LatencyResult = serde_json::from_str(RRUL).unwrap();
        let up = checks(&lab(), TestKind::TcpNup, &r, &[], Duration::from_secs(2));
        assert_eq!(up.len(), 2);
        assert_eq!(up[0].direction, "up");
        assert_eq!(up[0].goodput_theory_ratio, Some(theory::goodput_ratio()));
        assert!((up[1].theory_ms - 25.6).abs() < 1e-9);
        let ping = checks(&lab(), TestKind::Ping, &r, &[], Duration::ZERO);
        assert_eq!(ping.len(), 1);
        assert_eq!(ping[0].direction, "idle");
        assert_eq!(ping[0].theory_ms, 0.0);
        assert_eq!(ping[0].loaded.sent, 0);
        // Every probe counts as idle when nothing loads the link.
        assert!(ping[0].idle_median_ms.is_some());
    }
}
