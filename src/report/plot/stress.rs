//! A stress run on one page: the temperature of every zone, the CPU frequency of every core,
//! the crypto load's throughput, the network load's throughput and its latency, all on the
//! run's time axis, with the run's events (throttling onset, a lost agent, a reboot) as dashed
//! vertical lines. A series the device did not give is a panel that says so.

use super::model::{Figure, Panel, VLine};
use super::scale::robust_range;
use crate::results::RunResult;
use crate::results::monitor::MonitorResult;
use crate::results::stress::{InstabilityKind, StressResult, ThrottleVerdict};

const TIME: &str = "time since the start (s)";

type Points = Vec<(f64, Option<f64>)>;

/// A panel of named series, scaled to their 1st–99th percentile; `why` when none has data.
fn panel(
    title: &str,
    y: &str,
    series: &[(String, Points)],
    zero: bool,
    why: &str,
    x1: f64,
) -> Panel {
    let values = series
        .iter()
        .flat_map(|(_, p)| p.iter().filter_map(|v| v.1));
    let Some(range) = robust_range(values, zero) else {
        let mut p = Panel::missing(title, TIME, y, why);
        p.x = (0.0, x1.max(1.0));
        return p;
    };
    let mut p = Panel::new(title, TIME, y);
    p.x = (0.0, x1.max(1.0));
    p.y = range;
    for (name, pts) in series {
        p.add_series(name, pts);
    }
    p
}

fn temperatures(m: Option<&MonitorResult>, x1: f64) -> Panel {
    let title = "Temperature of every zone";
    let Some(m) = m else {
        return Panel::missing(title, TIME, "°C", "no monitor samples");
    };
    let mut names: Vec<&str> = Vec::new();
    for s in &m.samples {
        for z in &s.temperatures {
            if !names.contains(&z.zone.as_str()) && names.len() < 16 {
                names.push(&z.zone);
            }
        }
    }
    let mut series: Vec<(String, Points)> = names
        .iter()
        .map(|n| {
            let pts = m
                .samples
                .iter()
                .map(|s| {
                    let c = s.temperatures.iter().find(|z| z.zone == *n).map(|z| z.c);
                    (s.t_s, c)
                })
                .collect();
            (n.to_string(), pts)
        })
        .collect();
    if series.is_empty() {
        let pts = m
            .samples
            .iter()
            .map(|s| (s.t_s, s.temperature_max_c))
            .collect();
        series.push(("hottest sensor".into(), pts));
    }
    panel(
        title,
        "°C",
        &series,
        false,
        "not measured: no thermal zone or hwmon sensor on this device",
        x1,
    )
}

fn frequencies(m: Option<&MonitorResult>, x1: f64) -> Panel {
    let title = "CPU frequency of every core";
    let Some(m) = m else {
        return Panel::missing(title, TIME, "MHz", "no monitor samples");
    };
    let series: Vec<(String, Points)> = m
        .cpus
        .iter()
        .enumerate()
        .map(|(i, cpu)| {
            let pts = m
                .samples
                .iter()
                .map(|s| (s.t_s, s.cpu_freq_mhz.get(i).copied()))
                .collect();
            (format!("cpu{cpu}"), pts)
        })
        .collect();
    panel(
        title,
        "MHz",
        &series,
        false,
        "not measured: no cpufreq (a fixed clock, or not exposed)",
        x1,
    )
}

fn crypto(s: &StressResult, x1: f64) -> Option<Panel> {
    let w = s.cpu.as_ref()?;
    let ops = w.block_bytes.is_none();
    let pts: Points = s
        .cpu_series
        .iter()
        .map(|p| (p.t_s, p.rate().map(|r| if ops { r } else { r / 1e6 })))
        .collect();
    let title = format!(
        "Crypto load: {} on {} thread(s), {}",
        w.algorithm.cli_name(),
        w.threads,
        w.engine_version
    );
    let unit = if ops { "signatures/s" } else { "MB/s" };
    Some(panel(
        &title,
        unit,
        &[("all threads".into(), pts)],
        true,
        "no crypto samples",
        x1,
    ))
}

fn network(s: &StressResult, x1: f64) -> Vec<Panel> {
    let Some(w) = &s.net else {
        return Vec::new();
    };
    let dir = |f: fn(&crate::results::stress::NetPoint) -> f64| -> Points {
        s.net_series.iter().map(|p| (p.t_s, Some(f(p)))).collect()
    };
    let title = format!(
        "Network load: {} to {} (goodput per step)",
        w.test, w.target
    );
    let tp = panel(
        &title,
        "Mbit/s",
        &[
            ("download".into(), dir(|p| p.down_mbps)),
            ("upload".into(), dir(|p| p.up_mbps)),
        ],
        true,
        "no network steps measured",
        x1,
    );
    let lat: Points = s.net_series.iter().map(|p| (p.t_s, p.latency_ms)).collect();
    let mut lp = panel(
        "Latency under the load (median probe round trip per step)",
        "ms",
        &[("median RTT".into(), lat)],
        true,
        "no probes answered",
        x1,
    );
    let lost: Vec<(f64, f64)> = s
        .net_series
        .iter()
        .filter(|p| p.lost_probes > 0)
        .map(|p| (p.t_s, 0.0))
        .collect();
    if !lost.is_empty() && lp.note.is_none() {
        lp.marks.push(super::model::Marks {
            label: format!("steps with lost probes ({})", lost.len()),
            kind: super::model::MarkKind::Lost,
            series: 0,
            points: lost,
        });
    }
    vec![tp, lp]
}

/// The events worth a line on every panel: who stopped answering, reboots, OOM kills, oopses,
/// and the throttling onset.
fn events(s: &StressResult) -> Vec<VLine> {
    let a = &s.analysis;
    let mut out: Vec<VLine> = a
        .stability
        .stopped
        .iter()
        .map(|st| VLine {
            label: format!(
                "{} stopped answering (t = {:.1} s)",
                st.who, st.last_answer_s
            ),
            x: st.last_answer_s,
        })
        .collect();
    for f in &a.stability.findings {
        let what = match f.kind {
            InstabilityKind::Reboot => "reboot",
            InstabilityKind::OomKill => "OOM kill",
            InstabilityKind::KernelOops => "kernel oops",
            _ => continue,
        };
        if out.len() < 8 {
            out.push(VLine {
                label: format!("{what} (t = {:.0} s)", f.t_s),
                x: f.t_s,
            });
        }
    }
    if let (
        Some(t),
        ThrottleVerdict::Throttled | ThrottleVerdict::FrequencyDrop | ThrottleVerdict::Suspected,
    ) = (a.throttling.at_s, a.throttling.verdict)
    {
        out.push(VLine {
            label: format!("throttling onset (t = {t:.0} s)"),
            x: t,
        });
    }
    out
}

/// The stress figure of a result, `None` when it has no stress section.
pub fn figure(run: &RunResult) -> Option<Figure> {
    let s = run.stress.as_ref()?;
    let dut = if s.observed == "router" {
        run.router.as_ref()
    } else {
        run.monitor.as_ref()
    };
    let x1 = s.measured_s.max(s.tick_s);
    let mut panels = vec![temperatures(dut, x1), frequencies(dut, x1)];
    panels.extend(crypto(s, x1));
    panels.extend(network(s, x1));
    let marks = events(s);
    for p in &mut panels {
        if p.note.is_none() {
            p.vlines = marks.clone();
        }
    }
    let who = if s.observed == "router" {
        "the router (its agent)"
    } else {
        "this machine"
    };
    Some(Figure {
        title: format!("Stress run, {:.0} s, watching {who}", s.measured_s),
        panels,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::stress::{CpuPoint, Stopped};

    #[test]
    fn missing_series_say_so_and_events_are_marked() {
        let mut run = RunResult::new("2026-12-01T00:00:00Z".into());
        let mut s = StressResult {
            measured_s: 30.0,
            tick_s: 1.0,
            observed: "local".into(),
            cpu: Some(crate::results::stress::CpuWorkload {
                engine: "rustcrypto".into(),
                engine_version: "RustCrypto".into(),
                algorithm: crate::results::crypto::Algorithm::Aes128Cbc,
                threads: 2,
                pinned: true,
                block_bytes: Some(16384),
            }),
            cpu_series: (1..=30)
                .map(|t| CpuPoint {
                    t_s: t as f64,
                    bytes_per_s: Some(5e8),
                    ops_per_s: None,
                })
                .collect(),
            ..Default::default()
        };
        s.analysis.stability.stopped.push(Stopped {
            who: "router".into(),
            last_answer_s: 12.0,
            noticed_s: 13.0,
            detail: String::new(),
        });
        run.stress = Some(s);
        run.monitor = Some(MonitorResult {
            interval_s: 1.0,
            cpus: vec![0],
            samples: vec![Default::default()],
            ..Default::default()
        });
        let f = figure(&run).unwrap();
        assert_eq!(f.panels.len(), 3, "temperature, frequency, crypto");
        assert!(
            f.panels[0]
                .note
                .as_deref()
                .unwrap_or("")
                .contains("no thermal zone")
        );
        assert!(
            f.panels[1]
                .note
                .as_deref()
                .unwrap_or("")
                .contains("no cpufreq")
        );
        let c = &f.panels[2];
        assert!(c.has_data());
        assert_eq!(c.vlines.len(), 1);
        assert_eq!(c.vlines[0].x, 12.0);
        assert!(
            super::super::to_svg(&f, 960)
                .unwrap()
                .contains("router stopped answering")
        );
        assert!(figure(&RunResult::new(String::new())).is_none());
    }
}
