//! The detectors on series made for the test: each case builds a run second by second and
//! checks the one finding it is about (and that a flat run finds nothing).

use super::detect::analyze;
use crate::results::monitor::{MonitorResult, MonitorSample, ZoneTemperature};
use crate::results::stress::{
    CpuPoint, EventKind, InstabilityKind, NetPoint, StressEvent, StressResult, ThrottleVerdict,
};

/// A run of `n` seconds: crypto at `crypto(t)` bytes/s, network at `net(t)` Mbit/s each way
/// with 0.5 ms latency, one machine sample per second from `sample(t)`.
fn run(
    n: usize,
    crypto: impl Fn(f64) -> f64,
    net: impl Fn(f64) -> f64,
    sample: impl Fn(f64) -> MonitorSample,
) -> (StressResult, MonitorResult) {
    let ts: Vec<f64> = (1..=n).map(|i| i as f64).collect();
    let s = StressResult {
        planned_s: n as f64,
        measured_s: n as f64,
        t0_unix_s: 1_000_000.0,
        tick_s: 1.0,
        observed: "router".into(),
        cpu_series: ts
            .iter()
            .map(|&t| CpuPoint {
                t_s: t,
                bytes_per_s: Some(crypto(t)),
                ops_per_s: None,
            })
            .collect(),
        net_series: ts
            .iter()
            .map(|&t| NetPoint {
                t_s: t,
                up_mbps: net(t),
                down_mbps: net(t),
                latency_ms: Some(0.5),
                probes: 5,
                lost_probes: 0,
            })
            .collect(),
        ..Default::default()
    };
    let m = MonitorResult {
        interval_s: 1.0,
        cpus: vec![0, 1],
        samples: ts.iter().map(|&t| sample(t)).collect(),
        start_unix_s: Some(1_000_000.0),
        ..Default::default()
    };
    (s, m)
}

/// A healthy machine's sample at `t`: 45 °C, 1800 MHz on both cores, up since 5000 s.
fn healthy(t: f64) -> MonitorSample {
    MonitorSample {
        t_s: t,
        cpu_busy_pct: vec![100.0, 100.0],
        cpu_softirq_pct: vec![5.0, 5.0],
        temperature_max_c: Some(45.0),
        temperatures: vec![ZoneTemperature {
            zone: "cpu-thermal (thermal_zone0)".into(),
            c: 45.0,
        }],
        cpu_freq_mhz: vec![1800.0, 1800.0],
        uptime_s: Some(5000.0 + t),
        oom_kills: Some(0),
        mem_available_kib: Some(100_000),
        softnet_dropped: Some(0),
        netdev_errors: Some(0),
        ..Default::default()
    }
}

fn flat(_: f64) -> f64 {
    1e9
}

#[test]
fn temperature_ramp_with_a_frequency_drop_is_throttling() {
    // 300 s: the zone warms from 45 °C by 0.15 °C/s; at 85 °C (t ≈ 267 s) the clock steps
    // down from 1800 to 1200 MHz, and the crypto rate with it.
    let temp = |t: f64| (45.0 + 0.15 * t).min(90.0);
    let (s, m) = run(
        300,
        |t| if temp(t) >= 85.0 { 0.67e9 } else { 1e9 },
        flat,
        |t| {
            let mut x = healthy(t);
            let c = temp(t);
            x.temperature_max_c = Some(c);
            x.temperatures[0].c = c;
            let f = if c >= 85.0 { 1200.0 } else { 1800.0 };
            x.cpu_freq_mhz = vec![f, f];
            x
        },
    );
    let a = analyze(&s, Some(&m));
    let th = &a.throttling;
    assert_eq!(th.verdict, ThrottleVerdict::Throttled, "{th:?}");
    let at = th.at_s.unwrap();
    assert!((267.0..=272.0).contains(&at), "onset {at}");
    assert_eq!(th.freq_from_mhz, Some(1800.0));
    assert_eq!(th.freq_to_mhz, Some(1200.0));
    assert!((th.freq_drop_pct.unwrap() - 33.3).abs() < 0.1);
    assert!(th.temp_rise_c.unwrap() > 35.0, "{th:?}");
    assert_eq!(th.throughput.as_deref(), Some("crypto"));
    assert!((th.throughput_drop_pct.unwrap() - 33.0).abs() < 0.1);
    // Heat: the zone's start, peak and rise, and over the ambient given.
    let z = &a.heat.zones[0];
    assert!(
        (z.start_c - 45.45).abs() < 1e-9,
        "median of the first five: {z:?}"
    );
    assert!((z.peak_c - 90.0).abs() < 1e-9, "{z:?}");
    assert!(a.stability.stable, "{:?}", a.stability);
    assert!(a.conclusive);
}

#[test]
fn a_flat_run_is_not_throttling_and_finds_nothing() {
    let (mut s, m) = run(300, flat, flat, healthy);
    s.ambient_c = Some(23.0);
    let a = analyze(&s, Some(&m));
    assert_eq!(
        a.throttling.verdict,
        ThrottleVerdict::None,
        "{:?}",
        a.throttling
    );
    assert_eq!(a.throttling.at_s, None);
    assert_eq!(a.throttling.freq_from_mhz, Some(1800.0));
    assert!(a.stability.stable, "{:?}", a.stability);
    assert!(a.stability.stopped.is_empty());
    assert_eq!(
        a.heat.hottest.as_deref(),
        Some("cpu-thermal (thermal_zone0)")
    );
    assert_eq!(a.heat.zones[0].rise_c, 0.0);
    assert_eq!(a.heat.over_ambient_c, Some(22.0));
    assert_eq!(a.drift.crypto_change_pct, Some(0.0));
    assert_eq!(a.drift.latency_change_ms, Some(0.0));
    assert_eq!(a.drift.window_s, 60.0, "a fifth of 300 s");
    assert!(a.missing.is_empty(), "{:?}", a.missing);
    // A ramp without a frequency drop is heat, not throttling.
    let (s, m) = run(300, flat, flat, |t| {
        let mut x = healthy(t);
        x.temperature_max_c = Some(45.0 + 0.1 * t);
        x
    });
    assert_eq!(
        analyze(&s, Some(&m)).throttling.verdict,
        ThrottleVerdict::None
    );
}

#[test]
fn a_throughput_sag_without_frequency_data_is_a_suspected_throttle() {
    // No cpufreq (MT7621: a fixed clock), no thermal zone: crypto falls 25 % at t = 200 s.
    let (s, m) = run(
        300,
        |t| if t > 200.0 { 0.75e9 } else { 1e9 },
        flat,
        |t| {
            let mut x = healthy(t);
            x.cpu_freq_mhz.clear();
            x.temperatures.clear();
            x.temperature_max_c = None;
            x
        },
    );
    let a = analyze(&s, Some(&m));
    let th = &a.throttling;
    assert_eq!(th.verdict, ThrottleVerdict::Suspected, "{th:?}");
    assert_eq!(th.throughput.as_deref(), Some("crypto"));
    assert!((201.0..=205.0).contains(&th.at_s.unwrap()), "{th:?}");
    assert!((th.throughput_drop_pct.unwrap() - 25.0).abs() < 0.1);
    assert!(a.drift.crypto_change_pct.unwrap() < -24.0);
    assert!(a.missing.iter().any(|m| m.starts_with("temperature")));
    assert!(a.missing.iter().any(|m| m.starts_with("CPU frequency")));
    // A sag below the threshold (5 % of 10 %) is not suspected.
    let (s, m) = run(
        300,
        |t| if t > 200.0 { 0.95e9 } else { 1e9 },
        flat,
        |t| {
            let mut x = healthy(t);
            x.cpu_freq_mhz.clear();
            x
        },
    );
    assert_eq!(
        analyze(&s, Some(&m)).throttling.verdict,
        ThrottleVerdict::None
    );
    // The network sagging alone is suspected too, and named.
    let (s, m) = run(
        300,
        flat,
        |t| if t > 150.0 { 400.0 } else { 900.0 },
        |t| {
            let mut x = healthy(t);
            x.cpu_freq_mhz.clear();
            x
        },
    );
    let th = analyze(&s, Some(&m)).throttling;
    assert_eq!(th.verdict, ThrottleVerdict::Suspected);
    assert!(th.throughput.unwrap().starts_with("network"));
}

#[test]
fn an_uptime_reset_is_a_reboot() {
    // The router rebooted at t ≈ 100 s: its agent came back at t = 160 s with 60 s of uptime.
    let (mut s, mut m) = run(300, flat, flat, |t| {
        let mut x = healthy(t);
        if t >= 160.0 {
            x.uptime_s = Some(t - 100.0);
        }
        x
    });
    m.samples.retain(|x| !(95.0..160.0).contains(&x.t_s));
    s.events = vec![
        StressEvent {
            t_s: 99.0,
            kind: EventKind::AgentLost,
            message: "the agent's stream broke off".into(),
        },
        StressEvent {
            t_s: 160.0,
            kind: EventKind::AgentBack,
            message: "subscribed again".into(),
        },
    ];
    let a = analyze(&s, Some(&m));
    let reboots: Vec<_> = a
        .stability
        .findings
        .iter()
        .filter(|f| f.kind == InstabilityKind::Reboot)
        .collect();
    assert_eq!(reboots.len(), 1, "{:?}", a.stability.findings);
    assert_eq!(reboots[0].t_s, 160.0);
    assert!(
        reboots[0].detail.contains("rebooted about t = 100 s"),
        "{reboots:?}"
    );
    assert!(!a.stability.stable);
    // It came back: it did not stop answering; the gap is the loss, not a second stall.
    assert!(a.stability.stopped.is_empty());
    let stalls = a
        .stability
        .findings
        .iter()
        .filter(|f| f.kind == InstabilityKind::AgentStall)
        .count();
    assert_eq!(stalls, 1, "{:?}", a.stability.findings);
}

#[test]
fn an_agent_lost_for_good_stopped_answering_at_its_last_sample() {
    let (mut s, mut m) = run(30, flat, flat, healthy);
    m.samples.retain(|x| x.t_s <= 12.0);
    s.events.push(StressEvent {
        t_s: 12.4,
        kind: EventKind::AgentLost,
        message: "connection reset by peer".into(),
    });
    let a = analyze(&s, Some(&m));
    assert_eq!(a.stability.stopped.len(), 1);
    let st = &a.stability.stopped[0];
    assert_eq!(
        (st.who.as_str(), st.last_answer_s, st.noticed_s),
        ("router", 12.0, 12.4)
    );
    assert!(!a.conclusive, "30 s is too short to conclude");
    assert!(
        a.notes[0].starts_with("too short to conclude"),
        "{:?}",
        a.notes
    );
    assert_eq!(a.throttling.verdict, ThrottleVerdict::Unknown);
}

#[test]
fn stalls_oom_kills_kernel_oopses_resets_and_a_silent_server() {
    let (mut s, mut m) = run(120, flat, flat, |t| {
        let mut x = healthy(t);
        if t >= 50.0 {
            x.oom_kills = Some(1);
        }
        if t == 70.0 {
            x.kernel_log = vec![
                "BUG: soft lockup - CPU#0 stuck for 22s! [ksoftirqd/0:9]".into(),
                "eth0: transmit timed out".into(),
            ];
        }
        x
    });
    // Samples 30..36 missing: 7 s of silence at a 1 s interval.
    m.samples.retain(|x| !(30.0..37.0).contains(&x.t_s));
    // The server went away after t = 100 s: two failed segments, no step since.
    s.net_series.retain(|p| p.t_s <= 100.0);
    for (t, msg) in [
        (
            40.0,
            "TCP upload BE: send failed: Connection reset by peer (os error 104)",
        ),
        (101.0, "cannot connect to 10.0.0.2:5201: Connection refused"),
        (104.0, "cannot connect to 10.0.0.2:5201: Connection refused"),
    ] {
        s.events.push(StressEvent {
            t_s: t,
            kind: EventKind::NetError,
            message: msg.into(),
        });
    }
    let a = analyze(&s, Some(&m));
    let kinds: Vec<(f64, InstabilityKind)> = a
        .stability
        .findings
        .iter()
        .map(|f| (f.t_s, f.kind))
        .collect();
    assert_eq!(
        kinds,
        vec![
            (29.0, InstabilityKind::AgentStall),
            (40.0, InstabilityKind::ConnectionReset),
            (50.0, InstabilityKind::OomKill),
            (70.0, InstabilityKind::KernelOops),
            (70.0, InstabilityKind::KernelWarning),
            (101.0, InstabilityKind::TestError),
            (104.0, InstabilityKind::TestError),
        ]
    );
    assert_eq!(a.stability.stopped.len(), 1);
    assert_eq!(a.stability.stopped[0].who, "server");
    assert_eq!(a.stability.stopped[0].last_answer_s, 100.0);
}
