//! Text rendering of a latency test: the headline (idle vs loaded latency, increase, grade,
//! round trips per minute, throughput), then one table row per series. Nothing here measures.

use crate::results::latency::{LatencyResult, SeriesStats};
use std::fmt::Write;

fn f(v: Option<f64>, prec: usize) -> String {
    v.map(|x| {
        let t = format!("{x:.prec$}");
        // A value that rounds to zero prints without a sign ("-0.000" reads as a defect).
        if t.starts_with('-') && t[1..].chars().all(|c| c == '0' || c == '.') {
            t[1..].to_string()
        } else {
            t
        }
    })
    .unwrap_or_else(|| "-".into())
}

/// `+1.5`, `-0.3`, `+0.0` (never `+-0.0`).
fn signed(x: f64, prec: usize) -> String {
    let t = f(Some(x), prec);
    if t.starts_with('-') {
        t
    } else {
        format!("+{t}")
    }
}

fn row(out: &mut String, name: &str, s: &SeriesStats, prec: usize, extra: &str) {
    let _ = writeln!(
        out,
        "  {name:<24} {:>9} {:>9} {:>9} {:>9} {:>9} {:>6}  {extra}",
        f(s.mean, prec),
        f(s.median, prec),
        f(s.p90, prec),
        f(s.p99, prec),
        f(s.max, prec),
        s.n
    );
}

/// The human summary printed after a test.
pub fn render_text(r: &LatencyResult) -> String {
    let mut out = String::new();
    render_header(&mut out, r);
    render_summary(&mut out, r);
    render_phases(&mut out, r);
    render_series(&mut out, r);
    out
}

/// One line per phase (crusader's per-phase figures): goodput per direction, the round trip
/// and its one-way split, each with its increase over the idle lead-in.
fn render_phases(out: &mut String, r: &LatencyResult) {
    let Some(first) = r.phases.first() else {
        return;
    };
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "  per phase, over each load less its first {:.1} s (crusader's min(20 %, 2 s)); ms, increase over idle in brackets:",
        first.from_s - first.load_start_s
    );
    let _ = writeln!(
        out,
        "  {:<9} {:>12} {:>11} {:>10}  {:<17} {:<17} {:<17} lost",
        "phase", "window s", "down Mbit/s", "up Mbit/s", "RTT median", "one-way up", "one-way down"
    );
    let with = |v: Option<f64>, inc: Option<f64>| match (v, inc) {
        (Some(v), Some(i)) => format!("{} ({})", f(Some(v), 2), signed(i, 1)),
        (Some(v), None) => f(Some(v), 2),
        _ => "-".into(),
    };
    for p in &r.phases {
        let _ = writeln!(
            out,
            "  {:<9} {:>12} {:>11} {:>10}  {:<17} {:<17} {:<17} {} of {}",
            p.phase,
            format!("{:.1}–{:.1}", p.from_s, p.to_s),
            f(p.download_mbps, 2),
            f(p.upload_mbps, 2),
            with(p.rtt_ms.median, p.rtt_increase_ms),
            with(p.owd_up_ms.median, p.owd_up_increase_ms),
            with(p.owd_down_ms.median, p.owd_down_increase_ms),
            p.probes_lost,
            p.probes_sent
        );
    }
}

/// The test line: what ran against whom, its timeline and step.
fn render_header(out: &mut String, r: &LatencyResult) {
    let timeline = if r.flows.is_empty() {
        format!("{} s of idle probing", r.length_s)
    } else {
        format!(
            "{} s load, {} s idle before and after",
            r.length_s, r.delay_s
        )
    };
    let _ = writeln!(
        out,
        "{} to {} port {} (IPv{}), {timeline}, step {} s, probes every {} ms",
        r.test,
        r.host,
        r.port,
        r.ip_version,
        r.step_s,
        r.probe_interval_s * 1e3
    );
    if let Some(cc) = &r.congestion_control {
        let _ = writeln!(out, "congestion control: {cc} (set on both ends)");
    }
}

/// The summary block: idle and loaded latency, grade, throughput, one-way delays, user-space
/// delay, clock offset.
fn render_summary(out: &mut String, r: &LatencyResult) {
    let s = &r.summary;
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "  idle latency    {} ms (median {} ms)",
        f(s.idle_rtt_ms.mean, 3),
        f(s.idle_rtt_ms.median, 3)
    );
    if s.loaded_rtt_ms.n > 0 {
        let _ = writeln!(
            out,
            "  loaded latency  {} ms (median {}, p99 {} ms)",
            f(s.loaded_rtt_ms.mean, 3),
            f(s.loaded_rtt_ms.median, 3),
            f(s.loaded_rtt_ms.p99, 3)
        );
        let _ = writeln!(
            out,
            "  increase        {} ms   grade {}   round trips/min {} loaded ({} idle)",
            f(s.increase_ms, 3),
            s.grade.as_deref().unwrap_or("-"),
            f(s.rpm_loaded, 0),
            f(s.rpm_idle, 0)
        );
    }
    if s.upload_mbps.is_some() || s.download_mbps.is_some() {
        let _ = writeln!(
            out,
            "  throughput      up {} Mbit/s, down {} Mbit/s",
            f(s.upload_mbps, 1),
            f(s.download_mbps, 1)
        );
    }
    if s.loaded_owd_up_ms.n > 0 {
        let _ = writeln!(
            out,
            "  one-way (load)  up {} ms, down {} ms (median, clock-corrected)",
            f(s.loaded_owd_up_ms.median, 3),
            f(s.loaded_owd_down_ms.median, 3)
        );
    }
    if s.user_delay_ms.n > 0 {
        let _ = writeln!(
            out,
            "  user-space      delay p99 {} ms, max {} ms (kept out of the RTTs above by kernel timestamps)",
            f(s.user_delay_ms.p99, 3),
            f(s.user_delay_ms.max, 3),
        );
        if s.loaded_rtt_user_ms.n > 0 {
            let _ = writeln!(
                out,
                "                  user-space RTT under load: median {} ms, p99 {} ms (what a user-space tool would report)",
                f(s.loaded_rtt_user_ms.median, 3),
                f(s.loaded_rtt_user_ms.p99, 3)
            );
        }
    }
    if let Some(c) = &r.clock {
        let _ = writeln!(
            out,
            "  clock offset    {:.3} ms (end {}, drift {} ppm, from {} probes)",
            c.offset_ms,
            f(c.offset_end_ms, 3),
            f(c.drift_ppm, 1),
            c.samples
        );
    }
}

/// The per-series table (flows, then probes) and the notes.
fn render_series(out: &mut String, r: &LatencyResult) {
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "  {:<24} {:>9} {:>9} {:>9} {:>9} {:>9} {:>6}",
        "series", "mean", "median", "p90", "p99", "max", "n"
    );
    for fl in &r.flows {
        let marks = format!(
            "Mbit/s  tcp rtt {} ms  tos {:#04x} (client {}, server {})  cc {}/{}",
            f(fl.tcp_rtt_ms.median, 2),
            fl.tos,
            fl.tos_client
                .map(|t| format!("{t:#04x}"))
                .unwrap_or("-".into()),
            fl.tos_server
                .map(|t| format!("{t:#04x}"))
                .unwrap_or("-".into()),
            fl.cc_client.as_deref().unwrap_or("-"),
            fl.cc_server.as_deref().unwrap_or("-"),
        );
        row(out, &fl.name, &fl.mbps, 2, &marks);
    }
    for p in &r.probes {
        if p.sent == 0 {
            let _ = writeln!(out, "  {:<24} not run (see the note below)", p.name);
            continue;
        }
        let loss = match (p.lost_up, p.lost_down) {
            (Some(u), Some(d)) => format!("lost {} up / {} down", u, d),
            _ => format!("lost {}", p.sent.saturating_sub(p.received)),
        };
        row(
            out,
            &p.name,
            &p.rtt_ms,
            3,
            &match &p.server_timestamps {
                Some(srv) => format!(
                    "ms  {loss}, timestamps: here {}, far end {srv}",
                    p.timestamps
                ),
                None => format!("ms  {loss}, {} timestamps", p.timestamps),
            },
        );
    }
    for n in r
        .probes
        .iter()
        .filter_map(|p| p.note.as_ref().map(|n| (p, n)))
    {
        let _ = writeln!(out, "  note: {}: {}", n.0.name, n.1);
    }
    for n in &r.notes {
        let _ = writeln!(out, "  note: {n}");
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn negative_zero_prints_unsigned() {
        assert_eq!(super::f(Some(-0.0004), 3), "0.000");
        assert_eq!(super::f(Some(-0.4), 3), "-0.400");
        assert_eq!(super::f(None, 3), "-");
    }

    use super::*;
    use crate::results::latency::*;

    fn stats(mean: f64) -> SeriesStats {
        SeriesStats {
            n: 10,
            mean: Some(mean),
            median: Some(mean),
            p90: Some(mean),
            p99: Some(mean),
            min: Some(mean),
            max: Some(mean),
        }
    }

    #[test]
    fn headline_shows_grade_rpm_and_loss() {
        let r = LatencyResult {
            test: "rrul".into(),
            host: "192.0.2.1".into(),
            port: 5201,
            ip_version: 4,
            started_at: String::new(),
            t0_unix: 0.0,
            length_s: 60.0,
            delay_s: 5.0,
            step_s: 0.2,
            total_length_s: 70.0,
            hosts: Vec::new(),
            sessions: Vec::new(),
            probe_interval_s: 0.2,
            probe_size: 64,
            congestion_control: Some("cubic".into()),
            flows: vec![],
            probes: vec![ProbeResult {
                name: "Ping (ms) UDP EF".into(),
                kind: "udp".into(),
                tos: 0xb8,
                timestamps: "kernel".into(),
                server_timestamps: None,
                sent: 350,
                received: 347,
                lost_up: Some(1),
                lost_down: Some(2),
                samples: vec![],
                rtt_ms: stats(20.0),
                rtt_user_ms: stats(21.0),
                idle_rtt_ms: stats(10.0),
                loaded_rtt_ms: stats(45.0),
                note: None,
            }],
            clock: None,
            summary: LatencySummary {
                idle_rtt_ms: stats(10.0),
                loaded_rtt_ms: stats(45.0),
                increase_ms: Some(35.0),
                grade: Some("B".into()),
                rpm_loaded: Some(1333.0),
                rpm_idle: Some(6000.0),
                upload_mbps: Some(9.5),
                download_mbps: Some(95.0),
                ..Default::default()
            },
            phases: Vec::new(),
            notes: vec!["a note".into()],
            interrupted: false,
        };
        let text = render_text(&r);
        assert!(text.contains("grade B"), "{text}");
        assert!(
            text.contains("round trips/min 1333 loaded (6000 idle)"),
            "{text}"
        );
        assert!(text.contains("up 9.5 Mbit/s, down 95.0 Mbit/s"), "{text}");
        assert!(text.contains("lost 1 up / 2 down"), "{text}");
        assert!(text.contains("congestion control: cubic"), "{text}");
        assert!(text.contains("note: a note"), "{text}");
    }
}
