//! The router under load against idle (the seed's questions): CPU headroom, softirq share,
//! which queue filled and how far, drops and time_squeeze, temperature rise. Pure functions
//! over samples that lie on a test's time axis.

use crate::results::monitor::{LoadSummary, MonitorResult, MonitorSample};

fn p95(v: Vec<f64>) -> Option<f64> {
    crate::stats::percentile_of(v, 95.0)
}

/// A sample covers `(t_s − interval, t_s]`: inside the load when it lies wholly in it.
fn in_load(s: &MonitorSample, interval: f64, from: f64, to: f64) -> bool {
    s.t_s - interval >= from - 1e-9 && s.t_s <= to + 1e-9
}

/// One device's root qdisc backlog per sample, bytes (0 where the sample left the device out
/// because its queues were empty), as (t_s, bytes).
pub fn backlog_series(m: &MonitorResult, dev: &str) -> Vec<(f64, u64)> {
    m.samples
        .iter()
        .map(|s| {
            let b = s
                .queues
                .iter()
                .find(|q| q.dev == dev)
                .and_then(|q| q.backlog_bytes_max)
                .unwrap_or(0);
            (s.t_s, b)
        })
        .collect()
}

/// The device's shaped rate, bit/s, if any qdisc of it shapes.
pub fn shaped_rate_bps(m: &MonitorResult, dev: &str) -> Option<u64> {
    m.summary
        .queues
        .iter()
        .find(|q| q.dev == dev)
        .and_then(|q| q.shaped_rate_bps)
}

/// Under load (`[from, to)` seconds on the samples' axis) against the idle lead-in before it.
pub fn load_summary(m: &MonitorResult, from: f64, to: f64) -> LoadSummary {
    load_summary_with_idle(m, (from, to), (f64::NEG_INFINITY, from))
}

/// The same with the idle window given (`routerbench run`: only the RRUL's own lead-in is idle,
/// the throughput test before it is not).
pub fn load_summary_with_idle(
    m: &MonitorResult,
    (from, to): (f64, f64),
    (idle_from, idle_to): (f64, f64),
) -> LoadSummary {
    let iv = m.interval_s.max(1e-3);
    let is_idle = |s: &MonitorSample| in_load(s, iv, idle_from, idle_to);
    let load: Vec<&MonitorSample> = m
        .samples
        .iter()
        .filter(|s| in_load(s, iv, from, to))
        .collect();
    let idle: Vec<&MonitorSample> = m.samples.iter().filter(|s| is_idle(s)).collect();
    let mut out = LoadSummary {
        load_from_s: from,
        load_to_s: to,
        ..Default::default()
    };
    let busiest: Vec<f64> = load
        .iter()
        .filter_map(|s| s.cpu_busy_pct.iter().copied().reduce(f64::max))
        .collect();
    out.busiest_cpu_p95_pct = p95(busiest);
    out.cpu_headroom_pct = out.busiest_cpu_p95_pct.map(|b| (100.0 - b).max(0.0));
    let (soft, all): (f64, usize) = load.iter().fold((0.0, 0), |(a, n), s| {
        (
            a + s.cpu_softirq_pct.iter().sum::<f64>(),
            n + s.cpu_softirq_pct.len(),
        )
    });
    out.softirq_share_pct = (all > 0).then(|| soft / all as f64);
    // The fullest queue: highest p95 under load, in ms where the rate is known.
    let mut best: Option<(f64, String)> = None;
    for q in &m.summary.queues {
        let rate = q.shaped_rate_bps.filter(|r| *r > 0);
        let series = backlog_series(m, &q.dev);
        let v: Vec<f64> = series
            .iter()
            .zip(&m.samples)
            .filter(|(_, s)| in_load(s, iv, from, to))
            .map(|((_, b), _)| *b as f64)
            .collect();
        let Some(p) = p95(v) else { continue };
        let score = rate.map_or(p / 1e6, |r| p * 8.0 / r as f64 * 1e3);
        if best.as_ref().is_none_or(|(b, _)| score > *b) {
            best = Some((score, q.dev.clone()));
        }
    }
    if let Some((_, dev)) = best {
        let series = backlog_series(m, &dev);
        let pick = |want_load: bool| -> Vec<f64> {
            series
                .iter()
                .zip(&m.samples)
                .filter(|(_, s)| {
                    if want_load {
                        in_load(s, iv, from, to)
                    } else {
                        is_idle(s)
                    }
                })
                .map(|((_, b), _)| *b as f64)
                .collect()
        };
        let lv = pick(true);
        let peak = lv.iter().copied().fold(0.0, f64::max);
        let p = p95(lv);
        out.fullest_queue_peak_bytes = Some(peak as u64);
        out.fullest_queue_p95_bytes = p.map(|v| v as u64);
        out.fullest_queue_idle_p95_bytes = p95(pick(false)).map(|v| v as u64);
        if let Some(r) = shaped_rate_bps(m, &dev).filter(|r| *r > 0) {
            let ms = |b: f64| b * 8.0 / r as f64 * 1e3;
            out.fullest_queue_peak_ms = Some(ms(peak));
            out.fullest_queue_p95_ms = p.map(ms);
        }
        out.fullest_queue_dev = Some(dev);
    }
    let per_s = |v: &[&MonitorSample], f: &dyn Fn(&MonitorSample) -> Option<u64>| {
        let vals: Vec<u64> = v.iter().filter_map(|s| f(s)).collect();
        (!vals.is_empty()).then(|| vals.iter().sum::<u64>() as f64 / (vals.len() as f64 * iv))
    };
    let qdrops = |s: &MonitorSample| Some(s.queues.iter().filter_map(|q| q.drops).sum::<u64>());
    out.qdisc_drops_load_per_s = per_s(&load, &qdrops);
    out.qdisc_drops_idle_per_s = per_s(&idle, &qdrops);
    out.softnet_dropped_load_per_s = per_s(&load, &|s| s.softnet_dropped);
    out.softnet_dropped_idle_per_s = per_s(&idle, &|s| s.softnet_dropped);
    out.time_squeeze_load_per_s = per_s(&load, &|s| s.softnet_time_squeeze);
    out.time_squeeze_idle_per_s = per_s(&idle, &|s| s.softnet_time_squeeze);
    let idle_t: Vec<f64> = idle.iter().filter_map(|s| s.temperature_max_c).collect();
    let load_t = load
        .iter()
        .filter_map(|s| s.temperature_max_c)
        .reduce(f64::max);
    if let (Some(hot), false) = (load_t, idle_t.is_empty()) {
        out.temperature_rise_c = Some(hot - idle_t.iter().sum::<f64>() / idle_t.len() as f64);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::monitor::{QueueSample, QueueSummary};

    fn sample(t: f64, busy: [f64; 2], soft: f64, backlog: u64, temp: f64) -> MonitorSample {
        MonitorSample {
            t_s: t,
            cpu_busy_pct: busy.to_vec(),
            cpu_softirq_pct: vec![soft, 0.0],
            softnet_time_squeeze: Some(if backlog > 0 { 2 } else { 0 }),
            softnet_dropped: Some(0),
            temperature_max_c: Some(temp),
            queues: if backlog > 0 {
                vec![QueueSample {
                    dev: "wan".into(),
                    backlog_bytes_max: Some(backlog),
                    drops: Some(1),
                    ..Default::default()
                }]
            } else {
                vec![]
            },
            ..Default::default()
        }
    }

    #[test]
    fn headroom_queue_and_idle() {
        let mut m = MonitorResult {
            interval_s: 1.0,
            ..Default::default()
        };
        for t in 1..=2 {
            m.samples.push(sample(t as f64, [5.0, 3.0], 1.0, 0, 50.0));
        }
        for t in 3..=22 {
            m.samples.push(sample(
                t as f64,
                [95.0, 40.0],
                60.0,
                64_000,
                50.0 + t as f64 / 10.0,
            ));
        }
        m.summary.queues = vec![
            QueueSummary {
                dev: "wan".into(),
                shaped_rate_bps: Some(20_000_000),
                ..Default::default()
            },
            QueueSummary {
                dev: "lan".into(),
                ..Default::default()
            },
        ];
        let l = load_summary(&m, 2.0, 22.0);
        assert_eq!(l.busiest_cpu_p95_pct, Some(95.0));
        assert_eq!(l.cpu_headroom_pct, Some(5.0));
        assert_eq!(l.softirq_share_pct, Some(30.0));
        assert_eq!(l.fullest_queue_dev.as_deref(), Some("wan"));
        assert_eq!(l.fullest_queue_p95_bytes, Some(64_000));
        assert!((l.fullest_queue_p95_ms.unwrap() - 25.6).abs() < 1e-9);
        assert_eq!(l.fullest_queue_idle_p95_bytes, Some(0));
        assert_eq!(
            (l.qdisc_drops_load_per_s, l.qdisc_drops_idle_per_s),
            (Some(1.0), Some(0.0))
        );
        assert_eq!(l.time_squeeze_load_per_s, Some(2.0));
        assert!((l.temperature_rise_c.unwrap() - 2.2).abs() < 1e-9);
        let empty = load_summary(&MonitorResult::default(), 0.0, 1.0);
        assert_eq!(
            (empty.cpu_headroom_pct, empty.fullest_queue_dev),
            (None, None)
        );
    }
}
