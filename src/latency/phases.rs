//! Per-phase figures of a test that has phases (`phases`: download, then upload, then both), as
//! crusader prints them: each phase's goodput per direction, its round trip and the one-way
//! split, over the phase's steady part. Computed from the summarised result alone (the probes'
//! points, the flows' steps, the sessions' load windows). Pure; no I/O.

use super::figures::series_stats;
use crate::results::latency::{LatencyResult, PhaseSummary, ProbePoint};

/// The part of a load window left out before the figures: crusader's rule for its per-phase
/// throughput, min(20 % of the load, 2 s), so slow start and the queue filling do not count.
pub fn warmup_s(load_s: f64) -> f64 {
    (0.2 * load_s).clamp(0.0, 2.0)
}

/// One summary per session that names its phase, in timeline order; empty for other tests.
pub fn summaries(r: &LatencyResult) -> Vec<PhaseSummary> {
    let mut sessions: Vec<_> = r.sessions.iter().filter(|s| s.phase.is_some()).collect();
    sessions.sort_by(|a, b| a.load_start_s.total_cmp(&b.load_start_s));
    let idle = |value: fn(&ProbePoint) -> Option<f64>, udp_only: bool| {
        series_stats(
            r.probes
                .iter()
                .filter(|p| !udp_only || p.kind == "udp")
                .flat_map(|p| p.samples.iter())
                .filter(|pt| pt.t < r.delay_s)
                .filter_map(value),
        )
        .median
    };
    let idle_rtt = r.summary.idle_rtt_ms.median.or(idle(|p| p.rtt_ms, false));
    let idle_up = idle(|p| p.owd_up_ms, true);
    let idle_down = idle(|p| p.owd_down_ms, true);
    let minus = |a: Option<f64>, b: Option<f64>| a.zip(b).map(|(a, b)| a - b);
    sessions
        .into_iter()
        .map(|s| {
            let from = s.load_start_s + warmup_s(s.load_end_s - s.load_start_s);
            let to = s.load_end_s;
            let inside = |t: f64| t >= from && t < to;
            let points: Vec<(&str, &ProbePoint)> = r
                .probes
                .iter()
                .flat_map(|p| p.samples.iter().map(move |pt| (p.kind.as_str(), pt)))
                .filter(|(_, pt)| inside(pt.t))
                .collect();
            let rtt = series_stats(points.iter().filter_map(|(_, p)| p.rtt_ms));
            let udp = || points.iter().filter(|(k, _)| *k == "udp").map(|(_, p)| *p);
            let up = series_stats(udp().filter_map(|p| p.owd_up_ms));
            let down = series_stats(udp().filter_map(|p| p.owd_down_ms));
            PhaseSummary {
                phase: s.phase.clone().unwrap_or_default(),
                load_start_s: s.load_start_s,
                load_end_s: s.load_end_s,
                from_s: from,
                to_s: to,
                download_mbps: goodput(r, "download", from, to),
                upload_mbps: goodput(r, "upload", from, to),
                rtt_increase_ms: minus(rtt.median, idle_rtt),
                owd_up_increase_ms: minus(up.median, idle_up),
                owd_down_increase_ms: minus(down.median, idle_down),
                rtt_ms: rtt,
                owd_up_ms: up,
                owd_down_ms: down,
                probes_sent: points.len() as u32,
                probes_lost: points.iter().filter(|(_, p)| p.rtt_ms.is_none()).count() as u32,
            }
        })
        .collect()
}

/// Goodput of one direction's flows over the steps that lie inside `from..to`, Mbit/s; None
/// when no flow of that direction moved data there.
fn goodput(r: &LatencyResult, direction: &str, from: f64, to: f64) -> Option<f64> {
    let step = r.step_s;
    if step <= 0.0 {
        return None;
    }
    let eps = step / 100.0;
    let mut megabits = 0.0;
    let mut steps = std::collections::BTreeSet::new();
    for f in r.flows.iter().filter(|f| f.direction == direction) {
        for s in &f.samples {
            if s.t - step >= from - eps && s.t <= to + eps {
                megabits += s.mbps * step;
                steps.insert((s.t / step).round() as i64);
            }
        }
    }
    (!steps.is_empty() && megabits > 0.0).then(|| megabits / (steps.len() as f64 * step))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::latency::*;

    fn flow(direction: &str, start: f64, mbps: f64) -> FlowResult {
        FlowResult {
            name: format!("TCP {direction}"),
            label: "BE".into(),
            direction: direction.into(),
            tos: 0,
            tos_client: None,
            tos_server: None,
            cc_client: None,
            cc_server: None,
            bytes: 0,
            bytes_all: None,
            // 10 s of load in 0.5 s steps.
            samples: (1..=20)
                .map(|k| ThroughputSample {
                    t: start + 0.5 * f64::from(k),
                    mbps,
                    tcp_rtt_ms: None,
                })
                .collect(),
            mbps: SeriesStats::default(),
            tcp_rtt_ms: SeriesStats::default(),
        }
    }

    fn session(index: usize, phase: &str, start: f64) -> LatencySession {
        LatencySession {
            index,
            addr: "10.201.2.2".into(),
            ip_version: 4,
            load_start_s: start,
            load_end_s: start + 10.0,
            phase: Some(phase.into()),
        }
    }

    /// A phases timeline: 2 s idle, download 2..12, upload 14..24, both 26..36, 2 s idle;
    /// probes every 0.1 s with a queue delay of 40 ms in each loaded direction.
    fn result() -> LatencyResult {
        let windows = [(2.0, 12.0, true, false), (14.0, 24.0, false, true)];
        let both = (26.0, 36.0);
        let samples = (0..380)
            .map(|i| {
                let t = f64::from(i) * 0.1;
                let (mut up, mut down) = (0.05, 0.05);
                for (a, b, d, u) in windows {
                    if t >= a && t < b {
                        down += if d { 40.0 } else { 0.0 };
                        up += if u { 40.0 } else { 0.0 };
                    }
                }
                if t >= both.0 && t < both.1 {
                    up += 30.0;
                    down += 25.0;
                }
                // Every tenth probe of the download phase is lost.
                let lost = (2.0..12.0).contains(&t) && i % 10 == 5;
                ProbePoint {
                    t,
                    seq: i,
                    rtt_ms: (!lost).then_some(up + down),
                    rtt_user_ms: None,
                    owd_up_ms: (!lost).then_some(up),
                    owd_down_ms: (!lost).then_some(down),
                    user_delay_ms: None,
                    server_ms: None,
                }
            })
            .collect();
        let probe = ProbeResult {
            name: "Ping (ms) UDP BE".into(),
            kind: "udp".into(),
            tos: 0,
            timestamps: "kernel".into(),
            server_timestamps: None,
            sent: 380,
            received: 370,
            lost_up: None,
            lost_down: None,
            samples,
            rtt_ms: SeriesStats::default(),
            rtt_user_ms: SeriesStats::default(),
            idle_rtt_ms: SeriesStats::default(),
            loaded_rtt_ms: SeriesStats::default(),
            note: None,
        };
        LatencyResult {
            test: "phases".into(),
            host: "10.201.2.2".into(),
            port: 5201,
            ip_version: 4,
            started_at: String::new(),
            t0_unix: 0.0,
            length_s: 10.0,
            delay_s: 2.0,
            step_s: 0.5,
            total_length_s: 38.0,
            hosts: Vec::new(),
            sessions: vec![
                session(0, "download", 2.0),
                session(1, "upload", 14.0),
                session(2, "both", 26.0),
            ],
            probe_interval_s: 0.1,
            probe_size: 64,
            congestion_control: Some("reno".into()),
            flows: vec![
                flow("download", 2.0, 17.0),
                flow("upload", 14.0, 16.0),
                flow("download", 26.0, 8.0),
                flow("upload", 26.0, 9.0),
            ],
            probes: vec![probe],
            clock: None,
            summary: LatencySummary {
                idle_rtt_ms: series_stats([0.1, 0.1, 0.1]),
                ..Default::default()
            },
            phases: Vec::new(),
            notes: Vec::new(),
            interrupted: false,
        }
    }

    #[test]
    fn each_phase_has_its_own_throughput_latency_and_one_way_split() {
        let p = summaries(&result());
        let names: Vec<&str> = p.iter().map(|x| x.phase.as_str()).collect();
        assert_eq!(names, ["download", "upload", "both"]);
        let (d, u, b) = (&p[0], &p[1], &p[2]);
        // The window skips min(20 %, 2 s) = 2 s of each 10 s load.
        assert_eq!((d.from_s, d.to_s), (4.0, 12.0));
        assert_eq!(d.download_mbps, Some(17.0));
        assert_eq!(d.upload_mbps, None, "nothing uploads in the download phase");
        assert_eq!(u.upload_mbps, Some(16.0));
        assert_eq!(u.download_mbps, None);
        assert_eq!((b.download_mbps, b.upload_mbps), (Some(8.0), Some(9.0)));
        let inc = |x: Option<f64>| x.map(|v| (v * 1000.0).round() / 1000.0);
        assert_eq!(inc(d.rtt_increase_ms), Some(40.0));
        assert_eq!(inc(d.owd_down_increase_ms), Some(40.0));
        assert_eq!(inc(d.owd_up_increase_ms), Some(0.0));
        assert_eq!(inc(u.owd_up_increase_ms), Some(40.0));
        assert_eq!(inc(b.owd_up_increase_ms), Some(30.0));
        assert_eq!(inc(b.owd_down_increase_ms), Some(25.0));
        assert_eq!(inc(b.rtt_increase_ms), Some(55.0));
        // 80 probes in the download window, 8 of them lost (every tenth).
        assert_eq!((d.probes_sent, d.probes_lost), (80, 8));
        assert_eq!(u.probes_lost, 0);
    }

    #[test]
    fn tests_without_phases_have_none() {
        let mut r = result();
        for s in &mut r.sessions {
            s.phase = None;
        }
        assert!(summaries(&r).is_empty());
        assert_eq!(warmup_s(30.0), 2.0);
        assert_eq!(warmup_s(5.0), 1.0);
    }
}
