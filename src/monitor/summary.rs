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

/// A queue that may have filled: a device's root qdisc, or an access point's Wi-Fi TXQs.
struct QueueSeries {
    dev: String,
    /// None for the qdisc, `Wi-Fi TXQs` for mac80211's per-station queues.
    kind: Option<&'static str>,
    /// The qdisc's shaped rate, bit/s, if any.
    rate_bps: Option<u64>,
}

/// Every queue worth comparing: each device's root qdisc, and each access point interface's
/// Wi-Fi TXQs (the sum of its stations' backlogs).
fn queue_candidates(m: &MonitorResult) -> Vec<QueueSeries> {
    let mut out: Vec<QueueSeries> = m
        .summary
        .queues
        .iter()
        .map(|q| QueueSeries {
            dev: q.dev.clone(),
            kind: None,
            rate_bps: q.shaped_rate_bps.filter(|r| *r > 0),
        })
        .collect();
    for s in &m.samples {
        for st in &s.stations {
            if !out.iter().any(|q| q.kind.is_some() && q.dev == st.dev) {
                out.push(QueueSeries {
                    dev: st.dev.clone(),
                    kind: Some(WIFI_TXQS),
                    rate_bps: None,
                });
            }
        }
    }
    out
}

/// The kind of the fullest queue when it is an access point's per-station queues.
pub const WIFI_TXQS: &str = "Wi-Fi TXQs";

impl QueueSeries {
    /// (backlog bytes, delay ms where the drain rate is known) of the samples `keep` picks.
    /// A qdisc drains at its shaped rate; a station's TXQs at what the AP sent it in that
    /// interval, so the Wi-Fi delay is the slowest station's backlog over its own rate.
    fn at(
        &self,
        m: &MonitorResult,
        keep: impl Fn(&MonitorSample) -> bool,
    ) -> Vec<(u64, Option<f64>)> {
        let iv = m.interval_s.max(1e-3);
        m.samples
            .iter()
            .filter(|s| keep(s))
            .map(|s| match self.kind {
                None => {
                    let b = s
                        .queues
                        .iter()
                        .find(|q| q.dev == self.dev)
                        .and_then(|q| q.backlog_bytes_max)
                        .unwrap_or(0);
                    (b, self.rate_bps.map(|r| b as f64 * 8.0 / r as f64 * 1e3))
                }
                Some(_) => {
                    let mine = s.stations.iter().filter(|st| st.dev == self.dev);
                    let (mut bytes, mut ms) = (0u64, None::<f64>);
                    for st in mine {
                        let b = st.txq_backlog_bytes.unwrap_or(0);
                        bytes += b;
                        let rate = st.tx_bytes as f64 * 8.0 / iv;
                        if b > 0 && rate > 0.0 {
                            let d = b as f64 * 8.0 / rate * 1e3;
                            ms = Some(ms.map_or(d, |m| m.max(d)));
                        } else if b == 0 {
                            ms = Some(ms.unwrap_or(0.0));
                        }
                    }
                    (bytes, ms)
                }
            })
            .collect()
    }
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
    // The fullest queue: highest p95 under load, in ms where its drain rate is known.
    let mut best: Option<(f64, QueueSeries)> = None;
    for q in queue_candidates(m) {
        let v: Vec<f64> = q
            .at(m, |s| in_load(s, iv, from, to))
            .into_iter()
            .map(|(b, ms)| ms.unwrap_or(b as f64 / 1e3 * 1e-3))
            .collect();
        let Some(p) = p95(v) else { continue };
        if best.as_ref().is_none_or(|(b, _)| p > *b) {
            best = Some((p, q));
        }
    }
    if let Some((_, q)) = best {
        let lv = q.at(m, |s| in_load(s, iv, from, to));
        let bytes: Vec<f64> = lv.iter().map(|(b, _)| *b as f64).collect();
        let peak = bytes.iter().copied().fold(0.0, f64::max);
        out.fullest_queue_peak_bytes = Some(peak as u64);
        out.fullest_queue_p95_bytes = p95(bytes).map(|v| v as u64);
        out.fullest_queue_idle_p95_bytes =
            p95(q.at(m, is_idle).iter().map(|(b, _)| *b as f64).collect()).map(|v| v as u64);
        let ms: Vec<f64> = lv.iter().filter_map(|(_, ms)| *ms).collect();
        if !ms.is_empty() {
            out.fullest_queue_peak_ms = Some(ms.iter().copied().fold(0.0, f64::max));
            out.fullest_queue_p95_ms = p95(ms);
        }
        out.fullest_queue_kind = q.kind.map(str::to_string);
        out.fullest_queue_dev = Some(q.dev);
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

    #[test]
    fn the_wifi_txqs_are_named_when_they_hold_the_backlog() {
        use crate::results::wifi::StationSample;
        let mut m = MonitorResult {
            interval_s: 1.0,
            ..Default::default()
        };
        for t in 1..=10 {
            let mut s = sample(t as f64, [50.0, 10.0], 5.0, 3_000, 40.0);
            // 2.5 Mbit/s to the station with 62.5 kB in its TXQs: 200 ms of queue.
            s.stations = vec![StationSample {
                mac: "02:00:00:00:01:00".into(),
                dev: "wlan0".into(),
                phy: "phy0".into(),
                tx_bytes: 312_500,
                txq_backlog_bytes: Some(if t > 2 { 62_500 } else { 0 }),
                ..Default::default()
            }];
            m.samples.push(s);
        }
        m.summary.queues = vec![QueueSummary {
            dev: "wan".into(),
            shaped_rate_bps: Some(100_000_000),
            ..Default::default()
        }];
        let l = load_summary(&m, 2.0, 10.0);
        assert_eq!(l.fullest_queue_dev.as_deref(), Some("wlan0"));
        assert_eq!(l.fullest_queue_kind.as_deref(), Some(WIFI_TXQS));
        assert_eq!(l.fullest_queue_p95_bytes, Some(62_500));
        assert!(
            (l.fullest_queue_p95_ms.unwrap() - 200.0).abs() < 1e-9,
            "{l:?}"
        );
        assert_eq!(l.fullest_queue_idle_p95_bytes, Some(0));
        // The same TXQs empty: the shaped qdisc (0.24 ms) is the fuller one.
        for s in &mut m.samples {
            s.stations[0].txq_backlog_bytes = Some(0);
        }
        let l = load_summary(&m, 2.0, 10.0);
        assert_eq!(l.fullest_queue_dev.as_deref(), Some("wan"));
        assert_eq!(l.fullest_queue_kind, None);
    }
}
