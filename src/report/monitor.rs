//! The router's view as text: the summary line, the queues and the busiest processes.

use crate::results::monitor::{MonitorResult, QueueSummary};

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
        let top: Vec<String> = m
            .top_processes
            .iter()
            .take(5)
            .map(|p| format!("{} {:.0}%", p.comm, p.cpu_pct))
            .collect();
        out.push_str(&format!("busiest    {}\n", top.join(", ")));
    }
    for note in &m.notes {
        out.push_str(&format!("note: {note}\n"));
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
        assert_eq!(fmt_bytes(1_350_000), "1.35 MB");
    }
}
