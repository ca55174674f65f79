//! The detectors: pure functions of a stress run's recorded series, so the analysis can be
//! re-run on a saved file (`stress --analyze FILE`) and tested on series made for the test
//! (`detect_tests.rs`). docs/stress.md states each rule.
//!
//! - **stability**: test errors and reset connections (the run's events), the agent's stream
//!   stalling or breaking off (gaps in its samples, its loss with no return: "stopped answering"),
//!   the uptime going back (a reboot), the OOM killer's count rising, and kernel warnings, oopses
//!   and lockups from the kernel log;
//! - **heat**: per zone, the start (median of the first readings), the peak, the rise, the
//!   hottest zone and its peak over `--ambient`;
//! - **throttling**: the mean CPU frequency falling below the start's for a sustained time while
//!   the temperature rises; without frequency data, the crypto or network throughput doing so;
//! - **drift**: throughput and latency in the last window against the first.

use super::trend::{self, FallRule, change_pct, window_median};
use crate::results::monitor::{MonitorResult, MonitorSample};
use crate::results::stress::{
    Drift, EventKind, Heat, Instability, InstabilityKind, Stability, Stopped, StressAnalysis,
    StressResult, ThrottleVerdict, Throttling, ZoneHeat,
};

/// The window the start and the end are judged on: a fifth of the run, 10 s to 5 min.
pub fn window_s(measured_s: f64) -> f64 {
    (measured_s / 5.0).clamp(10.0, 300.0)
}

/// Every finding for `s`, reading the machine's series from `dut` (the router's agent when
/// there was one, else this machine).
pub fn analyze(s: &StressResult, dut: Option<&MonitorResult>) -> StressAnalysis {
    let samples: &[MonitorSample] = dut.map_or(&[], |m| m.samples.as_slice());
    let interval = dut.map_or(1.0, |m| m.interval_s).max(0.01);
    let conclusive = s.measured_s >= s.thresholds.min_conclusive_s;
    let mut notes = Vec::new();
    if !conclusive {
        notes.push(format!(
            "too short to conclude on throttling or drift: {:.0} s measured, at least {:.0} s \
             needed (a device heats for minutes: --for 30m)",
            s.measured_s, s.thresholds.min_conclusive_s
        ));
    }
    let mut throttling = throttling(s, samples);
    if !conclusive {
        throttling = Throttling::default();
    }
    StressAnalysis {
        conclusive,
        stability: stability(s, samples, interval),
        heat: heat(samples, s.ambient_c),
        throttling,
        drift: drift(s),
        missing: missing(s, dut),
        notes,
    }
}

/// The series this device did not give, one phrase each.
pub fn missing(s: &StressResult, dut: Option<&MonitorResult>) -> Vec<String> {
    let Some(m) = dut else {
        return vec!["every machine series (no monitor ran)".into()];
    };
    let none = |f: &dyn Fn(&MonitorSample) -> bool| !m.samples.iter().any(f);
    let mut out = Vec::new();
    let mut add = |cond: bool, what: &str| {
        if cond {
            out.push(what.to_string());
        }
    };
    add(
        none(&|x| !x.temperatures.is_empty() || x.temperature_max_c.is_some()),
        "temperature (no thermal zone or hwmon sensor)",
    );
    add(
        none(&|x| !x.cpu_freq_mhz.is_empty()),
        "CPU frequency (no cpufreq: a fixed clock, or not exposed)",
    );
    add(
        none(&|x| !x.cpu_busy_pct.is_empty()),
        "CPU and softirq load (/proc/stat)",
    );
    add(
        none(&|x| x.mem_available_kib.is_some()),
        "available memory (/proc/meminfo)",
    );
    add(
        none(&|x| x.softnet_dropped.is_some()),
        "softnet drops and time_squeeze (/proc/net/softnet_stat)",
    );
    add(
        none(&|x| x.netdev_errors.is_some()),
        "device errors and drops (/proc/net/dev)",
    );
    add(none(&|x| x.uptime_s.is_some()), "uptime (/proc/uptime)");
    add(
        none(&|x| x.oom_kills.is_some()),
        "the OOM kill count (/proc/vmstat oom_kill, kernel ≥ 4.13)",
    );
    add(
        m.notes.iter().any(|n| n.contains("kmsg not readable")),
        "the kernel log (/dev/kmsg not readable: run as root)",
    );
    add(
        s.cpu.is_some() && s.cpu_series.is_empty(),
        "the crypto load's throughput",
    );
    add(
        s.net.is_some() && s.net_series.is_empty(),
        "the network load's throughput and latency",
    );
    out
}

/// A kernel log line's kind.
fn kernel_kind(line: &str) -> InstabilityKind {
    let l = line.to_ascii_lowercase();
    let any = |ws: &[&str]| ws.iter().any(|w| l.contains(w));
    if any(&["out of memory", "oom-kill", "killed process"]) {
        InstabilityKind::OomKill
    } else if any(&[
        "oops",
        "bug:",
        "kernel panic",
        "call trace",
        "lockup",
        "hung task",
    ]) {
        InstabilityKind::KernelOops
    } else {
        InstabilityKind::KernelWarning
    }
}

/// At most this many kernel-log findings; the rest are counted in one more.
const MAX_KERNEL_FINDINGS: usize = 20;

fn stability(s: &StressResult, samples: &[MonitorSample], interval: f64) -> Stability {
    let mut findings = Vec::new();
    for e in &s.events {
        let kind = match e.kind {
            EventKind::NetError => {
                let m = e.message.to_ascii_lowercase();
                if ["reset", "broken pipe", "aborted"]
                    .iter()
                    .any(|w| m.contains(w))
                {
                    InstabilityKind::ConnectionReset
                } else {
                    InstabilityKind::TestError
                }
            }
            EventKind::CpuError => InstabilityKind::TestError,
            EventKind::AgentLost => InstabilityKind::AgentStall,
            EventKind::AgentBack | EventKind::Interrupted => continue,
        };
        findings.push(Instability {
            t_s: e.t_s,
            kind,
            detail: e.message.clone(),
        });
    }
    let lost: Vec<f64> = s
        .events
        .iter()
        .filter(|e| e.kind == EventKind::AgentLost)
        .map(|e| e.t_s)
        .collect();
    // Gaps in the samples: the agent (or this machine) fell silent for a while.
    let gap_limit = (3.0 * interval).max(interval + 2.0);
    for w in samples.windows(2) {
        let (a, b) = (w[0].t_s, w[1].t_s);
        if b - a > gap_limit && !lost.iter().any(|t| *t >= a && *t <= b) {
            findings.push(Instability {
                t_s: a,
                kind: InstabilityKind::AgentStall,
                detail: format!(
                    "no samples for {:.1} s (t = {a:.1} to {b:.1} s; one every {interval:.2} s \
                     expected)",
                    b - a
                ),
            });
        }
    }
    let mut kernel = 0usize;
    for (i, x) in samples.iter().enumerate() {
        let prev = i.checked_sub(1).and_then(|j| samples.get(j));
        let rebooted = match (prev.and_then(|p| p.uptime_s), x.uptime_s) {
            (Some(a), Some(b)) if b + 1.0 < a => {
                findings.push(Instability {
                    t_s: x.t_s,
                    kind: InstabilityKind::Reboot,
                    detail: format!(
                        "uptime went back from {a:.0} s to {b:.0} s: rebooted about t = {:.0} s",
                        x.t_s - b
                    ),
                });
                true
            }
            _ => false,
        };
        let mut oom_lines: Vec<&String> = Vec::new();
        for line in &x.kernel_log {
            match kernel_kind(line) {
                InstabilityKind::OomKill => oom_lines.push(line),
                kind => {
                    kernel += 1;
                    if kernel <= MAX_KERNEL_FINDINGS {
                        findings.push(Instability {
                            t_s: x.t_s,
                            kind,
                            detail: line.clone(),
                        });
                    }
                }
            }
        }
        let counted = match (prev.and_then(|p| p.oom_kills), x.oom_kills) {
            (Some(a), Some(b)) if b > a && !rebooted => b - a,
            _ => 0,
        };
        if counted > 0 || !oom_lines.is_empty() {
            let detail = if oom_lines.is_empty() {
                format!("the OOM killer killed {counted} process(es) (/proc/vmstat oom_kill)")
            } else {
                oom_lines
                    .iter()
                    .map(|l| l.as_str())
                    .collect::<Vec<_>>()
                    .join("; ")
            };
            findings.push(Instability {
                t_s: x.t_s,
                kind: InstabilityKind::OomKill,
                detail,
            });
        }
    }
    if kernel > MAX_KERNEL_FINDINGS {
        findings.push(Instability {
            t_s: samples.last().map_or(0.0, |x| x.t_s),
            kind: InstabilityKind::KernelWarning,
            detail: format!("and {} more kernel log lines", kernel - MAX_KERNEL_FINDINGS),
        });
    }
    findings.sort_by(|a, b| a.t_s.total_cmp(&b.t_s));
    let stopped = stopped(s, samples);
    Stability {
        stable: findings.is_empty() && stopped.is_empty(),
        findings,
        stopped,
    }
}

/// The router (its agent lost and never back), and the load's server (two or more failed
/// segments after its last step, none good since).
fn stopped(s: &StressResult, samples: &[MonitorSample]) -> Vec<Stopped> {
    let mut out = Vec::new();
    let last_lost = s.events.iter().rfind(|e| e.kind == EventKind::AgentLost);
    let back_after = |t: f64| {
        s.events
            .iter()
            .any(|e| e.kind == EventKind::AgentBack && e.t_s >= t)
    };
    if let Some(e) = last_lost.filter(|e| !back_after(e.t_s)) {
        let last = samples
            .iter()
            .map(|x| x.t_s)
            .filter(|t| *t <= e.t_s)
            .reduce(f64::max);
        out.push(Stopped {
            who: "router".into(),
            last_answer_s: last.unwrap_or(0.0),
            noticed_s: e.t_s,
            detail: e
                .message
                .trim_start_matches("the router's agent stopped answering: ")
                .to_string(),
        });
    }
    let last_step = s.net_series.last().map_or(0.0, |p| p.t_s);
    let failed_after: Vec<_> = s
        .events
        .iter()
        .filter(|e| e.kind == EventKind::NetError && e.t_s > last_step)
        .collect();
    if failed_after.len() >= 2 {
        out.push(Stopped {
            who: "server".into(),
            last_answer_s: last_step,
            noticed_s: failed_after[0].t_s,
            detail: failed_after
                .last()
                .map_or(String::new(), |e| e.message.clone()),
        });
    }
    out
}

fn heat(samples: &[MonitorSample], ambient_c: Option<f64>) -> Heat {
    let mut names: Vec<&str> = Vec::new();
    for x in samples {
        for z in &x.temperatures {
            if !names.contains(&z.zone.as_str()) && names.len() < 64 {
                names.push(&z.zone);
            }
        }
    }
    let mut zones: Vec<ZoneHeat> = Vec::new();
    for name in names {
        let series: Vec<(f64, f64)> = samples
            .iter()
            .filter_map(|x| {
                x.temperatures
                    .iter()
                    .find(|z| z.zone == name)
                    .map(|z| (x.t_s, z.c))
            })
            .collect();
        if let Some(z) = zone_heat(name, &series) {
            zones.push(z);
        }
    }
    // Results from before per-zone readings: the hottest sensor's series.
    if zones.is_empty() {
        let series: Vec<(f64, f64)> = samples
            .iter()
            .filter_map(|x| x.temperature_max_c.map(|c| (x.t_s, c)))
            .collect();
        zones.extend(zone_heat("hottest sensor", &series));
    }
    let hottest = zones.iter().max_by(|a, b| a.peak_c.total_cmp(&b.peak_c));
    Heat {
        hottest: hottest.map(|z| z.zone.clone()),
        over_ambient_c: hottest.zip(ambient_c).map(|(z, a)| z.peak_c - a),
        zones,
    }
}

/// The start is the median of the first five readings (the first seconds, before the load
/// warmed anything).
fn zone_heat(zone: &str, s: &[(f64, f64)]) -> Option<ZoneHeat> {
    let first: Vec<f64> = s.iter().take(5).map(|p| p.1).collect();
    let start = crate::stats::median(&crate::stats::sorted_finite(first))?;
    let (peak_at_s, peak_c) = s.iter().copied().max_by(|a, b| a.1.total_cmp(&b.1))?;
    Some(ZoneHeat {
        zone: zone.into(),
        start_c: start,
        peak_c,
        peak_at_s,
        rise_c: peak_c - start,
    })
}

fn rule(s: &StressResult, drop_pct: f64) -> FallRule {
    let w = window_s(s.measured_s);
    FallRule {
        window: w,
        span: 5.0,
        drop_pct,
        sustain: (w / 2.0).max(10.0),
    }
}

/// The mean frequency over the cores per sample.
fn freq_series(samples: &[MonitorSample]) -> Vec<(f64, f64)> {
    samples
        .iter()
        .filter_map(|x| crate::stats::mean(&x.cpu_freq_mhz).map(|f| (x.t_s, f)))
        .collect()
}

/// The crypto, network-up and network-down series, named.
fn throughput_series(s: &StressResult) -> Vec<(&'static str, Vec<(f64, f64)>)> {
    let crypto: Vec<(f64, f64)> = s
        .cpu_series
        .iter()
        .filter_map(|p| p.rate().map(|r| (p.t_s, r)))
        .collect();
    let up = s.net_series.iter().map(|p| (p.t_s, p.up_mbps)).collect();
    let down = s.net_series.iter().map(|p| (p.t_s, p.down_mbps)).collect();
    vec![
        ("crypto", crypto),
        ("network up", up),
        ("network down", down),
    ]
}

fn throttling(s: &StressResult, samples: &[MonitorSample]) -> Throttling {
    let th = &s.thresholds;
    let sags: Vec<(&str, trend::Fall)> = throughput_series(s)
        .into_iter()
        .filter_map(|(name, series)| {
            trend::fall(&series, rule(s, th.throughput_drop_pct)).map(|f| (name, f))
        })
        .collect();
    let first_sag = sags
        .iter()
        .min_by(|a, b| a.1.at_s.total_cmp(&b.1.at_s))
        .copied();
    let freq = freq_series(samples);
    if freq.len() >= 5 {
        let Some(f) = trend::fall(&freq, rule(s, th.freq_drop_pct)) else {
            return Throttling {
                verdict: ThrottleVerdict::None,
                freq_from_mhz: window_median(&freq, 0.0, f64::MAX),
                throughput: first_sag.map(|(n, _)| n.to_string()),
                throughput_drop_pct: first_sag.map(|(_, f)| f.drop_pct),
                at_s: first_sag.map(|(_, f)| f.at_s),
                ..Default::default()
            };
        };
        let temps: Vec<(f64, f64)> = samples
            .iter()
            .filter_map(|x| x.temperature_max_c.map(|c| (x.t_s, c)))
            .collect();
        let start = crate::stats::median(&crate::stats::sorted_finite(
            temps.iter().take(5).map(|p| p.1),
        ));
        // The temperature around the onset (the rolling median of the last few readings).
        let at_onset = trend::smooth(&temps, 5.0)
            .into_iter()
            .rfind(|(t, _)| *t <= f.at_s)
            .map(|p| p.1);
        let rise = start.zip(at_onset).map(|(a, b)| b - a);
        let thermal = rise.is_some_and(|r| r >= th.temp_rise_c);
        let sag = sags
            .iter()
            .find(|(n, _)| *n == "crypto")
            .or(first_sag.as_ref());
        return Throttling {
            verdict: if thermal {
                ThrottleVerdict::Throttled
            } else {
                ThrottleVerdict::FrequencyDrop
            },
            at_s: Some(f.at_s),
            freq_from_mhz: Some(f.from),
            freq_to_mhz: Some(f.to),
            freq_drop_pct: Some(f.drop_pct),
            temp_rise_c: rise,
            throughput: sag.map(|(n, _)| n.to_string()),
            throughput_drop_pct: sag.map(|(_, f)| f.drop_pct),
        };
    }
    let have_throughput = throughput_series(s).iter().any(|(_, v)| v.len() >= 5);
    match first_sag {
        Some((name, f)) => Throttling {
            verdict: ThrottleVerdict::Suspected,
            at_s: Some(f.at_s),
            throughput: Some(name.into()),
            throughput_drop_pct: Some(f.drop_pct),
            ..Default::default()
        },
        None if have_throughput => Throttling {
            verdict: ThrottleVerdict::None,
            ..Default::default()
        },
        None => Throttling::default(),
    }
}

fn drift(s: &StressResult) -> Drift {
    let w = window_s(s.measured_s).min(s.measured_s / 2.0).max(1.0);
    let end = s.measured_s;
    let pair = |series: &[(f64, f64)]| -> (Option<f64>, Option<f64>) {
        let (Some(a), Some(b)) = (series.first(), series.last()) else {
            return (None, None);
        };
        let (from, to) = (a.0, b.0.min(end.max(a.0)));
        (
            window_median(series, from, from + w),
            window_median(series, to - w, to),
        )
    };
    let [crypto, up, down] = [0, 1, 2].map(|i| pair(&throughput_series(s)[i].1));
    let latency: Vec<(f64, f64)> = s
        .net_series
        .iter()
        .filter_map(|p| p.latency_ms.map(|l| (p.t_s, l)))
        .collect();
    let lat = pair(&latency);
    let pct = |(a, b): (Option<f64>, Option<f64>)| a.zip(b).and_then(|(a, b)| change_pct(a, b));
    Drift {
        window_s: w,
        crypto_first_per_s: crypto.0,
        crypto_last_per_s: crypto.1,
        crypto_change_pct: pct(crypto),
        up_first_mbps: up.0,
        up_last_mbps: up.1,
        up_change_pct: pct(up),
        down_first_mbps: down.0,
        down_last_mbps: down.1,
        down_change_pct: pct(down),
        latency_first_ms: lat.0,
        latency_last_ms: lat.1,
        latency_change_ms: lat.0.zip(lat.1).map(|(a, b)| b - a),
    }
}
