//! Latency figures from a [`LatencyResult`]: flent's all_scaled (download per class, upload per
//! class, latency per probe on one time axis, lost probes as marks), the latency CDF, and the
//! idle-vs-loaded box plot with the grade. The lab's theory lines come in as [`HLine`]s.

use super::model::{BoxStat, Figure, HLine, MarkKind, Marks, Panel};
use super::scale::robust_range;
use crate::results::latency::{LatencyResult, ProbeResult};
use crate::stats::{percentile, sorted_finite};

const TIME: &str = "time since start (s)";

/// The time axis of the whole test (0 … total length).
fn time_axis(r: &LatencyResult) -> (f64, f64) {
    let last = r
        .probes
        .iter()
        .flat_map(|p| p.samples.iter().map(|s| s.t))
        .chain(r.flows.iter().flat_map(|f| f.samples.iter().map(|s| s.t)))
        .fold(0.0f64, f64::max);
    (0.0, r.total_length_s.max(last).max(1.0))
}

fn throughput_panel(r: &LatencyResult, direction: &str, title: &str) -> Panel {
    let flows: Vec<_> = r
        .flows
        .iter()
        .filter(|f| f.direction == direction)
        .collect();
    let values = flows.iter().flat_map(|f| f.samples.iter().map(|s| s.mbps));
    let Some(y) = robust_range(values, true) else {
        return Panel::missing(
            title,
            TIME,
            "Mbit/s",
            &format!("no {direction} flows in {}", r.test),
        );
    };
    let mut p = Panel::new(title, TIME, "goodput (Mbit/s)");
    p.x = time_axis(r);
    p.y = y;
    for f in flows {
        let pts: Vec<(f64, Option<f64>)> = f.samples.iter().map(|s| (s.t, Some(s.mbps))).collect();
        p.add_series(&format!("{} {}", f.label, f.direction), &pts);
    }
    p
}

fn short_probe_name(p: &ProbeResult) -> String {
    p.name.trim_start_matches("Ping (ms) ").to_string()
}

/// The latency panel: every probe series on the time axis, lost probes as marks on the bottom
/// edge (the line is broken there, never drawn through).
pub fn latency_panel(r: &LatencyResult, theory: &[HLine]) -> Panel {
    let title = "Round-trip latency per probe (kernel timestamps)";
    let values = r
        .probes
        .iter()
        .flat_map(|p| p.samples.iter().filter_map(|s| s.rtt_ms));
    let Some(mut y) = robust_range(values, true) else {
        return Panel::missing(title, TIME, "RTT (ms)", "no latency samples");
    };
    // The theory lines are always on the axis (a percentile would drop three values).
    let top = theory.iter().map(|h| h.y * 1.08).fold(y.hi, f64::max);
    y.hi = top;
    let mut p = Panel::new(title, TIME, "RTT (ms)");
    p.x = time_axis(r);
    p.y = y;
    p.hlines = theory.to_vec();
    for (i, probe) in r.probes.iter().enumerate() {
        let pts: Vec<(f64, Option<f64>)> = probe.samples.iter().map(|s| (s.t, s.rtt_ms)).collect();
        p.add_series(&short_probe_name(probe), &pts);
        let lost: Vec<(f64, f64)> = probe
            .samples
            .iter()
            .filter(|s| s.rtt_ms.is_none())
            .map(|s| (s.t, 0.0))
            .collect();
        if !lost.is_empty() {
            p.marks.push(Marks {
                label: format!("{}: {} lost", short_probe_name(probe), lost.len()),
                kind: MarkKind::Lost,
                series: i,
                points: lost,
            });
        }
    }
    p
}

/// flent's all_scaled: download, upload and latency on one time axis.
pub fn all_scaled(r: &LatencyResult, theory: &[HLine]) -> Figure {
    Figure {
        title: format!("{} to {} — all_scaled", r.test, r.host),
        panels: vec![
            throughput_panel(r, "download", "Download per flow"),
            throughput_panel(r, "upload", "Upload per flow"),
            latency_panel(r, theory),
        ],
    }
}

/// The CDF of every probe series' RTT; the tail beyond the 99th percentile is marked on the
/// right edge instead of stretching the axis.
pub fn cdf(r: &LatencyResult) -> Figure {
    let title = "Latency CDF (all probes, whole test)";
    let all = r
        .probes
        .iter()
        .flat_map(|p| p.samples.iter().filter_map(|s| s.rtt_ms));
    let panel = match robust_range(all, true) {
        None => Panel::missing(
            title,
            "RTT (ms)",
            "fraction of probes",
            "no latency samples",
        ),
        Some(xr) => {
            let mut p = Panel::new(title, "RTT (ms)", "fraction of probes ≤ x");
            p.x = (xr.lo, xr.hi);
            p.y = super::scale::AxisRange { lo: 0.0, hi: 1.0 };
            for (i, probe) in r.probes.iter().enumerate() {
                let sorted = sorted_finite(probe.samples.iter().filter_map(|s| s.rtt_ms));
                let n = sorted.len() as f64;
                let mut inside = Vec::new();
                let mut beyond = Vec::new();
                for (k, v) in sorted.iter().enumerate() {
                    let frac = (k + 1) as f64 / n;
                    if *v <= xr.hi {
                        inside.push((*v, Some(frac)));
                    } else {
                        beyond.push((*v, frac));
                    }
                }
                p.add_series(&short_probe_name(probe), &inside);
                if !beyond.is_empty() {
                    p.marks.push(Marks {
                        label: format!(
                            "{}: {} beyond the axis (max {:.1} ms)",
                            short_probe_name(probe),
                            beyond.len(),
                            sorted.last().copied().unwrap_or(0.0)
                        ),
                        kind: MarkKind::Right,
                        series: i,
                        points: beyond,
                    });
                }
            }
            p
        }
    };
    Figure {
        title: format!("{} to {} — latency CDF", r.test, r.host),
        panels: vec![panel],
    }
}

fn box_of(values: impl IntoIterator<Item = f64>, slot: usize, series: usize) -> Option<BoxStat> {
    let s = sorted_finite(values);
    Some(BoxStat {
        slot,
        series,
        whisker_lo: percentile(&s, 1.0)?,
        q1: percentile(&s, 25.0)?,
        median: percentile(&s, 50.0)?,
        q3: percentile(&s, 75.0)?,
        whisker_hi: percentile(&s, 99.0)?,
        n: s.len(),
    })
}

/// Idle (lead-in) vs loaded RTT per probe series: boxes from the 25th to the 75th percentile,
/// whiskers at the 1st and 99th, with the grade in the title.
pub fn boxes(r: &LatencyResult) -> Figure {
    let grade = match (&r.summary.grade, r.summary.increase_ms) {
        (Some(g), Some(inc)) => format!("grade {g} (+{inc:.1} ms under load)"),
        (Some(g), None) => format!("grade {g}"),
        _ => "no grade".into(),
    };
    let title = format!("Idle vs loaded RTT — {grade}");
    let load_end = r.total_length_s - r.delay_s;
    let mut p = Panel::new(&title, "probe", "RTT (ms)");
    p.members = vec!["idle (lead-in)".into(), "loaded".into()];
    for (slot, probe) in r.probes.iter().enumerate() {
        p.categories.push(short_probe_name(probe));
        let idle = probe
            .samples
            .iter()
            .filter(|s| s.t < r.delay_s || r.length_s <= 0.0)
            .filter_map(|s| s.rtt_ms);
        let loaded = probe
            .samples
            .iter()
            .filter(|s| s.t >= r.delay_s && s.t <= load_end && r.length_s > 0.0)
            .filter_map(|s| s.rtt_ms);
        p.boxes.extend(box_of(idle, slot, 0));
        p.boxes.extend(box_of(loaded, slot, 1));
    }
    let ends = p.boxes.iter().flat_map(|b| [b.whisker_lo, b.whisker_hi]);
    match robust_range(ends, true) {
        Some(y) => p.y = y,
        None => {
            p = Panel::missing(&title, "probe", "RTT (ms)", "no latency samples");
        }
    }
    Figure {
        title: format!("{} to {} — idle vs loaded", r.test, r.host),
        panels: vec![p],
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::results::latency::{FlowResult, ProbePoint, SeriesStats, ThroughputSample};

    pub(crate) fn probe(name: &str, rtts: &[Option<f64>], step: f64) -> ProbeResult {
        ProbeResult {
            name: format!("Ping (ms) {name}"),
            kind: "udp".into(),
            tos: 0,
            timestamps: "kernel".into(),
            server_timestamps: None,
            sent: rtts.len() as u32,
            received: rtts.iter().filter(|r| r.is_some()).count() as u32,
            lost_up: None,
            lost_down: None,
            samples: rtts
                .iter()
                .enumerate()
                .map(|(i, r)| ProbePoint {
                    t: i as f64 * step,
                    seq: i as u32,
                    rtt_ms: *r,
                    rtt_user_ms: None,
                    owd_up_ms: None,
                    owd_down_ms: None,
                    user_delay_ms: None,
                    server_ms: None,
                })
                .collect(),
            rtt_ms: SeriesStats::default(),
            rtt_user_ms: SeriesStats::default(),
            idle_rtt_ms: SeriesStats::default(),
            loaded_rtt_ms: SeriesStats::default(),
            note: None,
        }
    }

    pub(crate) fn result(flows: Vec<FlowResult>, probes: Vec<ProbeResult>) -> LatencyResult {
        LatencyResult {
            test: "rrul".into(),
            host: "127.0.0.1".into(),
            port: 27400,
            ip_version: 4,
            started_at: "2026-11-30T16:00:00Z".into(),
            t0_unix: 0.0,
            length_s: 6.0,
            delay_s: 2.0,
            step_s: 0.2,
            total_length_s: 10.0,
            hosts: Vec::new(),
            sessions: Vec::new(),
            probe_interval_s: 0.2,
            probe_size: 64,
            congestion_control: None,
            flows,
            probes,
            clock: None,
            summary: Default::default(),
            phases: Vec::new(),
            notes: vec![],
            interrupted: false,
        }
    }

    pub(crate) fn flow(direction: &str, mbps: &[f64]) -> FlowResult {
        FlowResult {
            name: format!("TCP {direction} BE"),
            label: "BE".into(),
            direction: direction.into(),
            tos: 0,
            tos_client: None,
            tos_server: None,
            cc_client: None,
            cc_server: None,
            bytes: 0,
            bytes_all: None,
            samples: mbps
                .iter()
                .enumerate()
                .map(|(i, m)| ThroughputSample {
                    t: 2.0 + i as f64 * 0.2,
                    mbps: *m,
                    tcp_rtt_ms: None,
                })
                .collect(),
            mbps: SeriesStats::default(),
            tcp_rtt_ms: SeriesStats::default(),
        }
    }

    #[test]
    fn lost_probes_are_marks_and_the_line_is_not_drawn_through_them() {
        let rtts = [
            Some(1.0),
            Some(1.2),
            None,
            None,
            Some(1.1),
            Some(1.3),
            None,
            Some(1.0),
        ];
        let r = result(vec![], vec![probe("UDP EF", &rtts, 0.2)]);
        let p = latency_panel(&r, &[]);
        assert_eq!(
            p.lines[0].segments.len(),
            3,
            "three runs between the losses"
        );
        for seg in &p.lines[0].segments {
            for w in seg.windows(2) {
                assert!(
                    (w[1].0 - w[0].0 - 0.2).abs() < 1e-9,
                    "a segment spans a loss: {seg:?}"
                );
            }
        }
        let lost: Vec<_> = p
            .marks
            .iter()
            .filter(|m| m.kind == MarkKind::Lost)
            .collect();
        assert_eq!(lost.len(), 1);
        let xs: Vec<f64> = lost[0].points.iter().map(|p| p.0).collect();
        assert_eq!(xs.len(), 3);
        assert!((xs[0] - 0.4).abs() < 1e-9 && (xs[2] - 1.2).abs() < 1e-9);
    }

    #[test]
    fn a_hundredfold_outlier_does_not_blow_up_the_latency_axis() {
        let mut rtts: Vec<Option<f64>> = (0..100).map(|i| Some(10.0 + (i % 5) as f64)).collect();
        rtts[50] = Some(1400.0);
        let r = result(vec![], vec![probe("UDP BE", &rtts, 0.1)]);
        let p = latency_panel(&r, &[]);
        assert!(p.y.hi < 20.0, "axis {:?}", p.y);
        let above: Vec<_> = p
            .marks
            .iter()
            .filter(|m| m.kind == MarkKind::Above)
            .collect();
        assert_eq!(above.len(), 1);
        assert_eq!(above[0].points, vec![(5.0, 1400.0)]);
        let c = cdf(&r);
        assert!(c.panels[0].x.1 < 20.0);
        assert!(c.panels[0].marks.iter().any(|m| m.kind == MarkKind::Right));
    }

    #[test]
    fn theory_lines_stay_on_the_axis() {
        let rtts: Vec<Option<f64>> = (0..200).map(|_| Some(20.0)).collect();
        let r = result(vec![], vec![probe("UDP EF", &rtts, 0.1)]);
        let th = [HLine {
            label: "theory".into(),
            y: 51.2,
        }];
        let p = latency_panel(&r, &th);
        assert!(p.y.contains(51.2) && p.y.hi < 60.0, "{:?}", p.y);
    }

    #[test]
    fn missing_series_give_a_panel_that_says_so() {
        // tcp_nup-like: uploads only, and no probes at all.
        let r = result(vec![flow("upload", &[10.0, 11.0, 12.0])], vec![]);
        let f = all_scaled(&r, &[]);
        assert_eq!(f.panels.len(), 3);
        assert!(!f.panels[0].has_data());
        assert!(
            f.panels[0]
                .note
                .as_deref()
                .unwrap_or("")
                .contains("no download")
        );
        assert!(f.panels[1].has_data());
        assert!(!f.panels[2].has_data());
        assert!(!boxes(&r).panels[0].has_data());
        assert!(!cdf(&r).panels[0].has_data());
    }

    #[test]
    fn a_single_sample_is_drawn_as_a_point_on_a_sane_axis() {
        let r = result(
            vec![flow("download", &[42.0])],
            vec![probe("ICMP", &[Some(3.0)], 0.2)],
        );
        let f = all_scaled(&r, &[]);
        let d = &f.panels[0];
        assert_eq!(d.lines[0].segments, vec![vec![(2.0, 42.0)]]);
        assert!(d.y.contains(42.0) && d.y.lo == 0.0);
        assert!(f.panels[2].y.contains(3.0));
        let b = boxes(&r);
        assert_eq!(
            b.panels[0].boxes.len(),
            1,
            "one idle sample, nothing loaded"
        );
    }

    #[test]
    fn idle_and_loaded_boxes_carry_the_grade() {
        let rtts: Vec<Option<f64>> = (0..50)
            .map(|i| Some(if i < 10 { 1.0 } else { 20.0 }))
            .collect();
        let mut r = result(vec![], vec![probe("UDP EF", &rtts, 0.2)]);
        r.summary.grade = Some("A".into());
        r.summary.increase_ms = Some(19.0);
        let f = boxes(&r);
        assert!(f.panels[0].title.contains("grade A"));
        let b = &f.panels[0].boxes;
        assert_eq!(b.len(), 2);
        assert_eq!((b[0].median, b[1].median), (1.0, 20.0));
    }
}
