//! Time-series figures: iperf3-style throughput per interval (sum and per stream), and the
//! monitor's panels (per-core CPU and softirq, queue backlog, temperature). A source that was not
//! measured gives a panel that says so, never an empty-looking zero line.

use super::model::{Figure, Panel};
use super::scale::{AxisRange, robust_range};
use crate::results::monitor::MonitorResult;
use crate::results::throughput::ThroughputResult;

/// Throughput per reporting interval: the sum (and the reverse sum under --bidir), and each
/// stream when there are several.
pub fn throughput(r: &ThroughputResult) -> Figure {
    let title = format!(
        "{:?} throughput, {} stream(s), {:?}",
        r.setup.protocol, r.setup.num_streams, r.role
    );
    let mbps = |bps: f64| bps / 1e6;
    let mut values: Vec<f64> = r
        .intervals
        .iter()
        .map(|i| mbps(i.sum.bits_per_second))
        .collect();
    values.extend(
        r.intervals
            .iter()
            .flat_map(|i| i.streams.iter().map(|s| mbps(s.bits_per_second))),
    );
    let panel = match robust_range(values, true) {
        None => Panel::missing(&title, "time (s)", "Mbit/s", "no intervals recorded"),
        Some(y) => {
            let mut p = Panel::new(&title, "time since start (s)", "throughput (Mbit/s)");
            let end = r.intervals.iter().map(|i| i.sum.end).fold(1.0, f64::max);
            p.x = (0.0, end);
            p.y = y;
            let sum: Vec<(f64, Option<f64>)> = r
                .intervals
                .iter()
                .map(|i| (i.sum.end, Some(mbps(i.sum.bits_per_second))))
                .collect();
            p.add_series("sum", &sum);
            let rev: Vec<(f64, Option<f64>)> = r
                .intervals
                .iter()
                .filter_map(|i| i.sum_bidir_reverse.as_ref())
                .map(|s| (s.end, Some(mbps(s.bits_per_second))))
                .collect();
            if !rev.is_empty() {
                p.add_series("reverse sum (--bidir)", &rev);
            }
            let ids: std::collections::BTreeSet<i32> = r
                .intervals
                .iter()
                .flat_map(|i| i.streams.iter().map(|s| s.socket))
                .collect();
            if ids.len() > 1 {
                for id in ids {
                    let pts: Vec<(f64, Option<f64>)> = r
                        .intervals
                        .iter()
                        .flat_map(|i| i.streams.iter().filter(move |s| s.socket == id))
                        .map(|s| (s.end, Some(mbps(s.bits_per_second))))
                        .collect();
                    p.add_series(&format!("stream {id}"), &pts);
                }
            }
            p
        }
    };
    Figure {
        title: format!("Throughput to {}:{}", r.host, r.port),
        panels: vec![panel],
    }
}

/// Points of one series: x, and y when there is one.
type Points = Vec<(f64, Option<f64>)>;

/// Seconds since the monitor started, or since the test's T0 for a router agent's samples.
const MON_TIME: &str = "time (s)";

fn percent_panel(
    m: &MonitorResult,
    title: &str,
    pick: fn(&crate::results::monitor::MonitorSample) -> &Vec<f64>,
) -> Panel {
    if m.samples.iter().all(|s| pick(s).is_empty()) {
        return Panel::missing(title, MON_TIME, "%", "not measured (no /proc/stat)");
    }
    let mut p = Panel::new(title, MON_TIME, "% of the interval");
    p.x = (0.0, m.samples.iter().map(|s| s.t_s).fold(1.0, f64::max));
    p.y = AxisRange { lo: 0.0, hi: 105.0 };
    for (i, cpu) in m.cpus.iter().enumerate() {
        let pts: Vec<(f64, Option<f64>)> = m
            .samples
            .iter()
            .map(|s| (s.t_s, pick(s).get(i).copied()))
            .collect();
        p.add_series(&format!("cpu{cpu}"), &pts);
    }
    p
}

fn queue_panel(m: &MonitorResult) -> Panel {
    let title = "Queue backlog per device (root qdisc, max per interval)";
    let devs: Vec<&str> = m
        .summary
        .queues
        .iter()
        .filter(|q| q.had_anything())
        .map(|q| q.dev.as_str())
        .collect();
    if m.summary.queues.is_empty() {
        return Panel::missing(
            title,
            MON_TIME,
            "KB",
            "not measured (no qdisc or BQL source)",
        );
    }
    if devs.is_empty() {
        return Panel::missing(title, MON_TIME, "KB", "every device's queues stayed empty");
    }
    // A measured device absent from an interval held nothing in it (see results::monitor).
    let series: Vec<(String, Points)> = devs
        .iter()
        .map(|dev| {
            let pts = m
                .samples
                .iter()
                .map(|s| {
                    let q = s.queues.iter().find(|q| q.dev == *dev);
                    let v = q.map_or(Some(0.0), |q| {
                        q.backlog_bytes_max.map(|b| b as f64 / 1000.0)
                    });
                    (s.t_s, v)
                })
                .collect();
            (dev.to_string(), pts)
        })
        .collect();
    let values = series
        .iter()
        .flat_map(|(_, p)| p.iter().filter_map(|v| v.1));
    let Some(y) = robust_range(values, true) else {
        return Panel::missing(title, MON_TIME, "KB", "no backlog readings");
    };
    let mut p = Panel::new(title, MON_TIME, "backlog (kB)");
    p.x = (0.0, m.samples.iter().map(|s| s.t_s).fold(1.0, f64::max));
    p.y = y;
    for (dev, pts) in &series {
        p.add_series(dev, pts);
    }
    p
}

fn temperature_panel(m: &MonitorResult) -> Panel {
    let title = "Temperature (hottest sensor)";
    let values = m.samples.iter().filter_map(|s| s.temperature_max_c);
    let Some(y) = robust_range(values, false) else {
        return Panel::missing(title, MON_TIME, "°C", "not measured (no thermal zone)");
    };
    let mut p = Panel::new(title, MON_TIME, "°C");
    p.x = (0.0, m.samples.iter().map(|s| s.t_s).fold(1.0, f64::max));
    p.y = y;
    let pts: Vec<(f64, Option<f64>)> = m
        .samples
        .iter()
        .map(|s| (s.t_s, s.temperature_max_c))
        .collect();
    p.add_series("max °C", &pts);
    p
}

/// The stations of an access point over a monitored test, one line per station and
/// direction; a station not associated in an interval is a gap, never a zero.
pub fn wifi(m: &MonitorResult) -> Option<Figure> {
    let mut stations: Vec<(String, String)> = Vec::new();
    for s in &m.samples {
        for st in &s.stations {
            let key = (st.dev.clone(), st.mac.clone());
            if !stations.contains(&key) {
                stations.push(key);
            }
        }
    }
    if stations.is_empty() {
        return None;
    }
    let iv = m.interval_s.max(1e-3);
    let x_end = m.samples.iter().map(|s| s.t_s).fold(1.0, f64::max);
    let per_station = |f: &dyn Fn(&crate::results::wifi::StationSample) -> Option<f64>| {
        stations
            .iter()
            .map(|(dev, mac)| {
                let pts: Points = m
                    .samples
                    .iter()
                    .map(|s| {
                        let v = s
                            .stations
                            .iter()
                            .find(|st| &st.dev == dev && &st.mac == mac)
                            .and_then(f);
                        (s.t_s, v)
                    })
                    .collect();
                (mac.clone(), pts)
            })
            .collect::<Vec<(String, Points)>>()
    };
    let panel = |title: &str, unit: &str, series: Vec<(String, Points)>, missing: &str| {
        let values = series
            .iter()
            .flat_map(|(_, p)| p.iter().filter_map(|v| v.1));
        let Some(y) = robust_range(values, true) else {
            return Panel::missing(title, MON_TIME, unit, missing);
        };
        let mut p = Panel::new(title, MON_TIME, unit);
        p.x = (0.0, x_end);
        p.y = y;
        for (name, pts) in &series {
            p.add_series(name, pts);
        }
        p
    };
    let mut rate: Vec<(String, Points)> = Vec::new();
    for (name, pts) in per_station(&|st| Some(st.tx_bytes as f64 * 8.0 / iv / 1e6)) {
        rate.push((format!("{name} to"), pts));
    }
    for (name, pts) in per_station(&|st| Some(st.rx_bytes as f64 * 8.0 / iv / 1e6)) {
        rate.push((format!("{name} from"), pts));
    }
    Some(Figure {
        title: format!(
            "Wi-Fi stations (the AP's counters, every {:.2} s)",
            m.interval_s
        ),
        panels: vec![
            panel(
                "Throughput to and from each station",
                "Mbit/s",
                rate,
                "no bytes counted",
            ),
            panel(
                "Wi-Fi TXQ backlog per station (mac80211 fq_codel)",
                "backlog (kB)",
                per_station(&|st| st.txq_backlog_bytes.map(|b| b as f64 / 1e3)),
                "not reported by the driver (no TXQ statistics)",
            ),
            panel(
                "Airtime share per station",
                "% of the stations' airtime",
                per_station(&|st| st.airtime_share_pct),
                "airtime not reported by the driver",
            ),
        ],
    })
}

/// The monitor's panels, one time axis.
pub fn monitor(m: &MonitorResult) -> Figure {
    Figure {
        title: format!("The machine's own view (every {:.2} s)", m.interval_s),
        panels: vec![
            percent_panel(m, "CPU busy per core", |s| &s.cpu_busy_pct),
            percent_panel(m, "softirq per core", |s| &s.cpu_softirq_pct),
            queue_panel(m),
            temperature_panel(m),
        ],
    }
}

/// One figure of a station's run (its goodput one way, a latency).
type StationFigure = fn(&crate::results::lab::StationRun) -> Option<f64>;

/// Stations of the Wi-Fi VM router side by side (`lab run rtt_fair`, `--stations`): bars per
/// station of throughput per direction and of latency idle, loaded and loaded p99. None for
/// no station.
pub fn stations(runs: &[crate::results::lab::StationRun]) -> Option<Figure> {
    use super::model::Bar;
    if runs.is_empty() {
        return None;
    }
    let members: Vec<String> = runs
        .iter()
        .map(|r| format!("station {}", r.station))
        .collect();
    let panel = |title: &str, unit: &str, groups: &[(&str, StationFigure)]| {
        let mut p = Panel::new(title, "", unit);
        p.categories = groups.iter().map(|(g, _)| g.to_string()).collect();
        p.members = members.clone();
        for (m, r) in runs.iter().enumerate() {
            for (g, (_, get)) in groups.iter().enumerate() {
                if let Some(v) = get(r).filter(|v| v.is_finite() && *v >= 0.0) {
                    p.bars.push(Bar {
                        group: g,
                        member: m,
                        value: v,
                        text: format!("{v:.1}"),
                    });
                }
            }
        }
        let hi = p.bars.iter().map(|b| b.value).fold(0.0, f64::max);
        if p.bars.is_empty() || hi <= 0.0 {
            return Panel::missing(title, "", unit, "not measured");
        }
        p.y = AxisRange {
            lo: 0.0,
            hi: hi * 1.12,
        };
        p
    };
    Some(Figure {
        title: "Wi-Fi stations side by side".into(),
        panels: vec![
            panel(
                "Goodput per station",
                "Mbit/s",
                &[
                    ("download", |r| r.download_mbps),
                    ("upload", |r| r.upload_mbps),
                ],
            ),
            panel(
                "Latency per station (median; loaded p99)",
                "ms",
                &[
                    ("idle", |r| r.idle_ms),
                    ("loaded", |r| r.loaded_ms),
                    ("loaded p99", |r| r.loaded_p99_ms),
                ],
            ),
        ],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stations_bars_per_direction_and_latency() {
        use crate::results::lab::StationRun;
        assert!(stations(&[]).is_none());
        let runs = [
            StationRun {
                station: 1,
                download_mbps: Some(12.0),
                upload_mbps: Some(3.0),
                ..Default::default()
            },
            StationRun {
                station: 2,
                download_mbps: Some(6.0),
                ..Default::default()
            },
        ];
        let f = stations(&runs).unwrap();
        let goodput = &f.panels[0];
        assert_eq!(goodput.members, ["station 1", "station 2"]);
        // Station 2 moved nothing up: no bar, not a zero one.
        assert_eq!(goodput.bars.len(), 3);
        assert!(goodput.y.hi >= 12.0);
        // No latency figures: the panel says so.
        assert_eq!(f.panels[1].note.as_deref(), Some("not measured"));
    }
    use crate::results::monitor::{MonitorSample, QueueSample, QueueSummary};

    fn sample(t: f64, busy: f64, temp: Option<f64>, backlog: Option<u64>) -> MonitorSample {
        MonitorSample {
            t_s: t,
            cpu_busy_pct: vec![busy, busy / 2.0],
            cpu_softirq_pct: vec![1.0, 2.0],
            temperature_max_c: temp,
            queues: backlog
                .map(|b| QueueSample {
                    dev: "eth0".into(),
                    backlog_bytes_max: Some(b),
                    ..Default::default()
                })
                .into_iter()
                .collect(),
            ..Default::default()
        }
    }

    #[test]
    fn monitor_without_temperature_or_queues_says_not_measured() {
        let m = MonitorResult {
            interval_s: 0.5,
            cpus: vec![0, 1],
            samples: vec![sample(0.5, 10.0, None, None), sample(1.0, 90.0, None, None)],
            ..Default::default()
        };
        let f = monitor(&m);
        assert_eq!(f.panels.len(), 4);
        assert_eq!(f.panels[0].lines.len(), 2, "one line per core");
        assert!(f.panels[0].has_data());
        assert!(
            f.panels[2]
                .note
                .as_deref()
                .unwrap_or("")
                .contains("not measured")
        );
        assert!(
            f.panels[3]
                .note
                .as_deref()
                .unwrap_or("")
                .contains("not measured")
        );
    }

    #[test]
    fn queue_backlog_of_a_measured_device_is_zero_when_absent() {
        let mut m = MonitorResult {
            interval_s: 0.5,
            cpus: vec![0, 1],
            samples: vec![
                sample(0.5, 10.0, Some(50.0), Some(3000)),
                sample(1.0, 20.0, Some(51.0), None),
                sample(1.5, 20.0, Some(52.0), Some(6000)),
            ],
            ..Default::default()
        };
        m.summary.queues = vec![QueueSummary {
            dev: "eth0".into(),
            backlog_bytes_max: Some(6000),
            ..Default::default()
        }];
        let f = monitor(&m);
        let q = &f.panels[2];
        assert_eq!(
            q.lines[0].segments,
            vec![vec![(0.5, 3.0), (1.0, 0.0), (1.5, 6.0)]]
        );
        assert!(f.panels[3].has_data());
    }
}
