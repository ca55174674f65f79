//! The router's view as text: the summary line and the busiest processes.

use crate::results::monitor::MonitorResult;

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
    }
}
