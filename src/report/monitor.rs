//! The router's view as text: the summary line, the queues and the busiest processes.

use crate::results::monitor::{
    LoadSummary, MonitorResult, MonitorSample, ProcessCpu, QueueSummary,
};

/// Bytes for people, decimal units: `812 B`, `45.2 KB`, `1.35 MB`.
fn fmt_bytes(b: u64) -> String {
    match b {
        0..1000 => format!("{b} B"),
        1000..1_000_000 => format!("{:.1} KB", b as f64 / 1e3),
        _ => format!("{:.2} MB", b as f64 / 1e6),
    }
}

/// `eth0 qdisc fq_codel backlog max 45.2 KB (qlen 31, 12 drops), BQL inflight max 9.1 KB`.
fn queue_line(q: &QueueSummary) -> String {
    let mut parts = Vec::new();
    if let Some(kind) = &q.qdisc {
        let mut t = format!(
            "qdisc {kind} backlog max {}",
            fmt_bytes(q.backlog_bytes_max.unwrap_or(0))
        );
        let drops = q.drops_total.unwrap_or(0);
        t.push_str(&format!(
            " (qlen {}, {drops} drop{})",
            q.qlen_max.unwrap_or(0),
            if drops == 1 { "" } else { "s" }
        ));
        if let (Some(ms), Some(rate)) = (q.backlog_ms_max, q.shaped_rate_bps) {
            t.push_str(&format!(" = {ms:.1} ms at {:.1} Mbit/s", rate as f64 / 1e6));
        }
        if let Some(p) = q.cake_peak_delay_ms_max {
            t.push_str(&format!(", CAKE peak delay {p:.1} ms"));
        }
        parts.push(t);
    }
    if let Some(b) = q.bql_inflight_max_bytes {
        let limit = q
            .bql_limit_max_bytes
            .map_or(String::new(), |l| format!(" (limit {})", fmt_bytes(l)));
        parts.push(format!("BQL inflight max {}{limit}", fmt_bytes(b)));
    }
    format!("{} {}", q.dev, parts.join(", "))
}

pub fn render_text(m: &MonitorResult) -> String {
    let mut out = String::new();
    let s = &m.summary;
    let pct = |v: Option<f64>| v.map_or("n/a".to_string(), |v| format!("{v:.0}%"));
    out.push_str(&format!(
        "CPU        busiest core max {}, mean {}, softirq max {}\n",
        pct(s.busiest_cpu_max_pct),
        pct(s.cpu_mean_pct),
        pct(s.softirq_max_pct)
    ));
    let n = |v: Option<u64>| v.map_or("n/a".to_string(), |v| v.to_string());
    out.push_str(&format!(
        "softnet    dropped {}, time_squeeze {}\n",
        n(s.softnet_dropped_total),
        n(s.softnet_time_squeeze_total)
    ));
    for q in s.queues.iter().filter(|q| q.had_anything()) {
        out.push_str(&format!("queues     {}\n", queue_line(q)));
    }
    // Watched but never held a byte: say so, so an empty queue is not mistaken for unmeasured.
    let idle: Vec<&str> = s
        .queues
        .iter()
        .filter(|q| !q.had_anything())
        .map(|q| q.dev.as_str())
        .collect();
    if !idle.is_empty() {
        out.push_str(&format!(
            "queues     empty throughout: {}\n",
            idle.join(", ")
        ));
    }
    if let Some(t) = s.temperature_max_c {
        out.push_str(&format!("temp       max {t:.1} °C\n"));
    }
    if !m.top_processes.is_empty() {
        // The five busiest, and hostapd wherever it ranks: its CPU is the router's (the
        // second seed counts it against the router's throughput).
        let top: Vec<String> = m
            .top_processes
            .iter()
            .enumerate()
            .filter(|(i, p)| *i < 5 || matches!(p.comm.as_str(), "hostapd" | "wpad"))
            .map(|(_, p)| format!("{} {:.0}%", p.comm, p.cpu_pct))
            .collect();
        out.push_str(&format!("busiest    {}\n", top.join(", ")));
    }
    if let Some(w) = &s.wifi {
        out.push_str(&super::wifi::render_summary(w));
    }
    if let Some(l) = &s.under_load {
        out.push_str(&render_load(l));
    }
    if let Some(a) = &m.agent {
        out.push_str(&format!(
            "agent      {} clock offset {:+.3} ms (±{:.3} ms, {} exchanges)\n",
            a.address,
            a.offset_ms,
            a.rtt_ms / 2.0,
            a.exchanges
        ));
    }
    for note in &m.notes {
        out.push_str(&format!("note: {note}\n"));
    }
    out
}

/// The router under load: the answers to the seed's questions, one line each.
pub fn render_load(l: &LoadSummary) -> String {
    let f = |v: Option<f64>, unit: &str| v.map_or("n/a".to_string(), |v| format!("{v:.1}{unit}"));
    let mut out = format!(
        "under load CPU headroom {} (busiest core p95 {}), softirq share {}\n",
        f(l.cpu_headroom_pct, "%"),
        f(l.busiest_cpu_p95_pct, "%"),
        f(l.softirq_share_pct, "%")
    );
    if l.fullest_queue_dev.is_some() && l.fullest_queue_peak_bytes == Some(0) {
        out.push_str("           queues empty under load (every root qdisc watched)\n");
    } else if let Some(dev) = &l.fullest_queue_dev {
        let b = |v: Option<u64>| v.map_or("n/a".to_string(), fmt_bytes);
        let ms = match (l.fullest_queue_peak_ms, l.fullest_queue_p95_ms) {
            (Some(p), Some(q)) => format!(" = peak {p:.1} ms, p95 {q:.1} ms"),
            _ => String::new(),
        };
        let dev = match &l.fullest_queue_kind {
            Some(kind) => format!("{dev}'s {kind}"),
            None => dev.clone(),
        };
        out.push_str(&format!(
            "           fullest queue {dev}: peak {}, p95 {}{ms} (idle p95 {})\n",
            b(l.fullest_queue_peak_bytes),
            b(l.fullest_queue_p95_bytes),
            b(l.fullest_queue_idle_p95_bytes)
        ));
    }
    out.push_str(&format!(
        "           per s load/idle: qdisc drops {}/{}, softnet drops {}/{}, time_squeeze {}/{}\n",
        f(l.qdisc_drops_load_per_s, ""),
        f(l.qdisc_drops_idle_per_s, ""),
        f(l.softnet_dropped_load_per_s, ""),
        f(l.softnet_dropped_idle_per_s, ""),
        f(l.time_squeeze_load_per_s, ""),
        f(l.time_squeeze_idle_per_s, "")
    ));
    if let Some(t) = l.temperature_rise_c {
        out.push_str(&format!("           temperature rise {t:+.1} °C\n"));
    }
    out
}

/// One line per interval while the monitor runs: per-core busy/softirq, NET_RX/NET_TX, device
/// interrupts, the fullest queue in bytes and in ms at its shaped rate, temperature, the top
/// process with its PID.
pub fn render_live(s: &MonitorSample, top: Option<&ProcessCpu>) -> String {
    let join = |v: &[f64]| {
        v.iter()
            .map(|x| format!("{x:.0}"))
            .collect::<Vec<_>>()
            .join("/")
    };
    let sum = |v: &[f64]| v.iter().sum::<f64>();
    let mut out = format!(
        "{:7.1}s cpu {}% soft {}%",
        s.t_s,
        join(&s.cpu_busy_pct),
        join(&s.cpu_softirq_pct)
    );
    if !s.net_rx_per_s.is_empty() {
        out.push_str(&format!(
            " | NET_RX {:.0}/s NET_TX {:.0}/s",
            sum(&s.net_rx_per_s),
            sum(&s.net_tx_per_s)
        ));
    }
    if !s.irq_per_s.is_empty() {
        out.push_str(&format!(" | irq {}/s", join(&s.irq_per_s)));
    }
    let fullest = s.queues.iter().max_by(|a, b| {
        let key = |q: &crate::results::monitor::QueueSample| {
            (
                q.backlog_ms_max.unwrap_or(0.0),
                q.backlog_bytes_max.unwrap_or(0),
            )
        };
        let (ka, kb) = (key(a), key(b));
        ka.0.total_cmp(&kb.0).then(ka.1.cmp(&kb.1))
    });
    match fullest {
        Some(q) => {
            out.push_str(&format!(
                " | q {} {}",
                q.dev,
                fmt_bytes(q.backlog_bytes_max.unwrap_or(0))
            ));
            if let Some(ms) = q.backlog_ms_max {
                out.push_str(&format!(" {ms:.1} ms"));
            }
        }
        None => out.push_str(" | q empty"),
    }
    if !s.stations.is_empty() {
        let tx: u64 = s.stations.iter().map(|st| st.tx_bytes).sum();
        let rx: u64 = s.stations.iter().map(|st| st.rx_bytes).sum();
        let backlog: u64 = s
            .stations
            .iter()
            .filter_map(|st| st.txq_backlog_bytes)
            .sum();
        out.push_str(&format!(
            " | wifi {} sta, {} to / {} from, TXQ {}",
            s.stations.len(),
            fmt_bytes(tx),
            fmt_bytes(rx),
            fmt_bytes(backlog)
        ));
    }
    if let Some(t) = s.temperature_max_c {
        out.push_str(&format!(" | {t:.1}°C"));
    }
    if let Some(p) = top {
        out.push_str(&format!(" | top {}[{}] {:.0}%", p.comm, p.pid, p.cpu_pct));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::monitor::{MonitorSummary, ProcessCpu};

    #[test]
    fn renders_summary_and_missing_values() {
        let m = MonitorResult {
            summary: MonitorSummary {
                busiest_cpu_max_pct: Some(97.4),
                softnet_time_squeeze_total: Some(12),
                ..Default::default()
            },
            top_processes: vec![ProcessCpu {
                pid: 9,
                comm: "ksoftirqd/0".into(),
                cpu_pct: 41.2,
            }],
            notes: vec!["no temperature sensor".into()],
            ..Default::default()
        };
        let t = render_text(&m);
        assert!(t.contains("busiest core max 97%, mean n/a"), "{t}");
        assert!(t.contains("dropped n/a, time_squeeze 12"), "{t}");
        assert!(t.contains("busiest    ksoftirqd/0 41%"), "{t}");
        assert!(t.contains("note: no temperature sensor"));
        assert!(!t.contains("queues"), "{t}");
    }

    #[test]
    fn queues_line_only_for_devices_that_had_anything() {
        let m = MonitorResult {
            summary: MonitorSummary {
                queues: vec![
                    QueueSummary {
                        dev: "eth0".into(),
                        qdisc: Some("fq_codel".into()),
                        backlog_bytes_max: Some(45_200),
                        qlen_max: Some(31),
                        drops_total: Some(12),
                        bql_inflight_max_bytes: Some(9_084),
                        bql_limit_max_bytes: Some(14_577),
                        bql_tx_queues: Some(2),
                        ..Default::default()
                    },
                    QueueSummary {
                        dev: "wan".into(),
                        qdisc: Some("cake".into()),
                        backlog_bytes_max: Some(0),
                        qlen_max: Some(0),
                        drops_total: Some(1),
                        ..Default::default()
                    },
                    QueueSummary {
                        dev: "br-lan".into(),
                        qdisc: Some("noqueue".into()),
                        backlog_bytes_max: Some(0),
                        qlen_max: Some(0),
                        drops_total: Some(0),
                        ..Default::default()
                    },
                    QueueSummary {
                        dev: "lan1".into(),
                        bql_inflight_max_bytes: Some(0),
                        bql_limit_max_bytes: Some(2465),
                        ..Default::default()
                    },
                ],
                ..Default::default()
            },
            ..Default::default()
        };
        let t = render_text(&m);
        let lines: Vec<&str> = t.lines().filter(|l| l.starts_with("queues")).collect();
        assert_eq!(
            lines,
            [
                "queues     eth0 qdisc fq_codel backlog max 45.2 KB (qlen 31, 12 drops), BQL inflight max 9.1 KB (limit 14.6 KB)",
                "queues     wan qdisc cake backlog max 0 B (qlen 0, 1 drop)",
                "queues     empty throughout: br-lan, lan1",
            ]
        );
        assert_eq!(fmt_bytes(999), "999 B");
        let live = render_live(
            &MonitorSample {
                t_s: 1.5,
                cpu_busy_pct: vec![97.0, 12.0],
                cpu_softirq_pct: vec![60.0, 1.0],
                net_rx_per_s: vec![900.0, 100.0],
                net_tx_per_s: vec![50.0, 0.0],
                irq_per_s: vec![4000.0, 10.0],
                temperature_max_c: Some(61.0),
                queues: vec![crate::results::monitor::QueueSample {
                    dev: "wan".into(),
                    backlog_bytes_max: Some(64_000),
                    backlog_ms_max: Some(25.6),
                    ..Default::default()
                }],
                ..Default::default()
            },
            Some(&ProcessCpu {
                pid: 14,
                comm: "ksoftirqd/0".into(),
                cpu_pct: 38.0,
            }),
        );
        assert_eq!(
            live,
            "    1.5s cpu 97/12% soft 60/1% | NET_RX 1000/s NET_TX 50/s | irq 4000/10/s | q wan 64.0 KB 25.6 ms | 61.0°C | top ksoftirqd/0[14] 38%"
        );
        assert_eq!(fmt_bytes(1_350_000), "1.35 MB");
    }
}
