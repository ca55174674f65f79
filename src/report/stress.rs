//! A stress run as text: what ran, then the answer to the seed's question in a few lines —
//! heat, throttling, drift, what this device could not tell, and last whether it stayed up
//! ("router stopped answering at t = …" when it did not).

use crate::results::stress::{
    Instability, InstabilityKind, StressResult, ThrottleVerdict, Throttling,
};

fn mmss(s: f64) -> String {
    let s = s.max(0.0).round() as u64;
    if s >= 3600 {
        format!("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
    } else {
        format!("{}:{:02}", s / 60, s % 60)
    }
}

/// Mbit/s for people: `940 Mbit/s`, `9.41 Gbit/s`.
fn mbit(v: f64) -> String {
    if v >= 1000.0 {
        format!("{:.2} Gbit/s", v / 1000.0)
    } else {
        format!("{v:.1} Mbit/s")
    }
}

/// The crypto rate in the workload's unit.
fn crypto_rate(s: &StressResult, v: f64) -> String {
    match s.cpu.as_ref().and_then(|c| c.block_bytes) {
        Some(_) => format!("{:.0} MB/s", v / 1e6),
        None => format!("{v:.0} signatures/s"),
    }
}

/// ms with the precision a loopback round trip (µs) needs.
fn ms(v: f64) -> String {
    if v.abs() < 0.1 {
        format!("{v:.3}")
    } else {
        format!("{v:.2}")
    }
}

fn pct(v: f64) -> String {
    format!("{v:+.1} %")
}

/// The first line: what ran and who was watched.
pub fn header(s: &StressResult) -> String {
    let mut parts = Vec::new();
    if let Some(c) = &s.cpu {
        parts.push(format!(
            "{} on {} core{} ({}{})",
            c.algorithm.cli_name(),
            c.threads,
            if c.threads == 1 { "" } else { "s" },
            c.engine_version,
            if c.pinned { ", pinned" } else { "" }
        ));
    }
    if let Some(n) = &s.net {
        parts.push(format!(
            "{} to {} ({} segment{} of ≤ {:.0} s, {} failed)",
            n.test,
            if n.target == "loopback" {
                "loopback".to_string()
            } else {
                format!("{}:{}", n.target, n.port)
            },
            n.segments,
            if n.segments == 1 { "" } else { "s" },
            n.segment_s,
            n.segments_failed
        ));
    }
    format!(
        "{} of {} under {}; watching {}",
        mmss(s.measured_s),
        mmss(s.planned_s),
        parts.join(" + "),
        if s.observed == "router" {
            "the router through its agent"
        } else {
            "this machine"
        }
    )
}

fn heat_line(s: &StressResult) -> String {
    let h = &s.analysis.heat;
    let Some(z) = h
        .hottest
        .as_ref()
        .and_then(|n| h.zones.iter().find(|z| &z.zone == n))
    else {
        return "not measured: no thermal zone or hwmon sensor on this device".into();
    };
    let mut t = format!(
        "hottest {}: peak {:.1} °C at t = {:.0} s, {:+.1} °C over its start ({:.1} °C)",
        z.zone, z.peak_c, z.peak_at_s, z.rise_c, z.start_c
    );
    match (h.over_ambient_c, s.ambient_c) {
        (Some(o), Some(a)) => t.push_str(&format!("; {o:+.1} °C over the {a:.0} °C ambient given")),
        _ => t.push_str("; no --ambient given"),
    }
    let others: Vec<String> = h
        .zones
        .iter()
        .filter(|o| o.zone != z.zone)
        .take(6)
        .map(|o| format!("{} {:.1} °C ({:+.1})", o.zone, o.peak_c, o.rise_c))
        .collect();
    if !others.is_empty() {
        t.push_str(&format!("; others: {}", others.join(", ")));
    }
    t
}

fn sag_text(th: &Throttling) -> Option<String> {
    Some(format!(
        "{} throughput {}",
        th.throughput.as_deref()?,
        pct(-th.throughput_drop_pct?)
    ))
}

fn throttle_line(s: &StressResult) -> String {
    let a = &s.analysis;
    let th = &a.throttling;
    let at = th
        .at_s
        .map_or(String::new(), |t| format!("from t = {t:.0} s"));
    let freq = || {
        format!(
            "CPU frequency {:.0} → {:.0} MHz ({})",
            th.freq_from_mhz.unwrap_or(0.0),
            th.freq_to_mhz.unwrap_or(0.0),
            pct(-th.freq_drop_pct.unwrap_or(0.0))
        )
    };
    match th.verdict {
        ThrottleVerdict::Throttled => format!(
            "yes, {at}: {} while the temperature rose {:+.1} °C{}",
            freq(),
            th.temp_rise_c.unwrap_or(0.0),
            sag_text(th).map_or(String::new(), |t| format!("; {t}"))
        ),
        ThrottleVerdict::FrequencyDrop => format!(
            "the clock fell {at}: {} {}: a power, governor or firmware limit rather than heat",
            freq(),
            match th.temp_rise_c {
                Some(r) => format!("with the temperature {r:+.1} °C"),
                None => "with no temperature to tell".into(),
            }
        ),
        ThrottleVerdict::Suspected => format!(
            "suspected {at}: {} with no CPU frequency to tell why (no cpufreq)",
            sag_text(th).unwrap_or_else(|| "throughput fell".into())
        ),
        ThrottleVerdict::None => match th.freq_from_mhz {
            Some(f) => format!(
                "no: the CPU frequency held at {f:.0} MHz{}",
                sag_text(th).map_or(String::new(), |t| format!(
                    "; but {t} {at}, so not the clock"
                ))
            ),
            None => format!(
                "none seen: no crypto or network throughput fell by more than {:.0} % (no \
                 cpufreq, so the clock itself was not seen)",
                s.thresholds.throughput_drop_pct
            ),
        },
        ThrottleVerdict::Unknown if !a.conclusive => format!(
            "not concluded: {:.0} s is too short (at least {:.0} s)",
            s.measured_s, s.thresholds.min_conclusive_s
        ),
        ThrottleVerdict::Unknown => "cannot tell: no CPU frequency and no throughput series".into(),
    }
}

fn drift_line(s: &StressResult) -> String {
    let d = &s.analysis.drift;
    let mut parts = Vec::new();
    if let (Some(a), Some(b), Some(c)) = (
        d.crypto_first_per_s,
        d.crypto_last_per_s,
        d.crypto_change_pct,
    ) {
        parts.push(format!(
            "crypto {} → {} ({})",
            crypto_rate(s, a),
            crypto_rate(s, b),
            pct(c)
        ));
    }
    for (name, a, b, c) in [
        ("up", d.up_first_mbps, d.up_last_mbps, d.up_change_pct),
        (
            "down",
            d.down_first_mbps,
            d.down_last_mbps,
            d.down_change_pct,
        ),
    ] {
        if let (Some(a), Some(b), Some(c)) = (a, b, c) {
            parts.push(format!("{name} {} → {} ({})", mbit(a), mbit(b), pct(c)));
        }
    }
    if let (Some(a), Some(b), Some(c)) =
        (d.latency_first_ms, d.latency_last_ms, d.latency_change_ms)
    {
        let sign = if c < 0.0 { "" } else { "+" };
        parts.push(format!(
            "latency median {} → {} ms ({sign}{} ms)",
            ms(a),
            ms(b),
            ms(c)
        ));
    }
    if parts.is_empty() {
        return "nothing to compare".into();
    }
    format!(
        "last {:.0} s against the first {:.0} s: {}{}",
        d.window_s,
        d.window_s,
        parts.join(", "),
        if s.analysis.conclusive {
            ""
        } else {
            " (too short a run to call it drift)"
        }
    )
}

fn kind_text(k: InstabilityKind) -> &'static str {
    match k {
        InstabilityKind::TestError => "test error",
        InstabilityKind::ConnectionReset => "connection reset",
        InstabilityKind::AgentStall => "agent stall",
        InstabilityKind::Reboot => "reboot",
        InstabilityKind::OomKill => "OOM kill",
        InstabilityKind::KernelOops => "kernel oops",
        InstabilityKind::KernelWarning => "kernel warning",
    }
}

fn finding_line(f: &Instability) -> String {
    format!(
        "            t = {:6.1} s  {}: {}",
        f.t_s,
        kind_text(f.kind),
        f.detail
    )
}

/// The summary: a few lines that answer the seed, stability last.
pub fn render_summary(s: &StressResult) -> String {
    let a = &s.analysis;
    let mut out = String::new();
    out.push_str(&format!("Workload    {}\n", header(s)));
    out.push_str(&format!("Heat        {}\n", heat_line(s)));
    out.push_str(&format!("Throttling  {}\n", throttle_line(s)));
    out.push_str(&format!("Drift       {}\n", drift_line(s)));
    if !a.missing.is_empty() {
        out.push_str(&format!("Not seen    {}\n", a.missing.join("; ")));
    }
    for n in &a.notes {
        out.push_str(&format!("Note        {n}\n"));
    }
    let st = &a.stability;
    if st.stable {
        out.push_str(
            "Stability   stable: no crash, no reboot, no OOM kill, no kernel warning, no stall; \
             every test ran to the end\n",
        );
        return out;
    }
    let kinds: std::collections::BTreeSet<&str> =
        st.findings.iter().map(|f| kind_text(f.kind)).collect();
    out.push_str(&format!(
        "Stability   {} finding{}{}\n",
        st.findings.len(),
        if st.findings.len() == 1 { "" } else { "s" },
        if kinds.is_empty() {
            String::new()
        } else {
            format!(" ({})", kinds.into_iter().collect::<Vec<_>>().join(", "))
        }
    ));
    for f in st.findings.iter().take(30) {
        out.push_str(&finding_line(f));
        out.push('\n');
    }
    if st.findings.len() > 30 {
        out.push_str(&format!(
            "            … and {} more\n",
            st.findings.len() - 30
        ));
    }
    // The router last: when it dies, the server behind it goes silent too, and the router's
    // silence is the answer.
    let router_stopped = st.stopped.iter().any(|x| x.who == "router");
    let (routers, servers): (Vec<_>, Vec<_>) = st.stopped.iter().partition(|x| x.who == "router");
    for x in servers.into_iter().chain(routers) {
        let who = if x.who == "router" {
            "router"
        } else if router_stopped {
            "the load's server (behind the router, which stopped too)"
        } else {
            "the load's server"
        };
        out.push_str(&format!(
            "{who} stopped answering at t = {:.1} s (noticed at t = {:.1} s; {}); the series up \
             to then are kept\n",
            x.last_answer_s, x.noticed_s, x.detail
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::stress::{Instability, Stopped, ZoneHeat};

    #[test]
    fn a_stopped_router_is_the_last_line() {
        let mut s = StressResult {
            planned_s: 25.0,
            measured_s: 25.0,
            observed: "router".into(),
            ..Default::default()
        };
        s.analysis.stability.findings.push(Instability {
            t_s: 12.4,
            kind: InstabilityKind::AgentStall,
            detail: "the router's agent stopped answering: connection reset".into(),
        });
        s.analysis.stability.stopped.push(Stopped {
            who: "router".into(),
            last_answer_s: 12.0,
            noticed_s: 12.4,
            detail: "the router's agent stopped answering: connection reset".into(),
        });
        let text = render_summary(&s);
        let last = text.lines().last().unwrap();
        assert!(
            last.starts_with("router stopped answering at t = 12.0 s"),
            "{text}"
        );
        assert!(text.contains("Heat        not measured"), "{text}");
        assert!(text.contains("not concluded"), "{text}");

        // A router that dies takes the path to the server with it: the server's silence is
        // said first, the router's still ends the summary.
        s.analysis.stability.stopped.insert(
            0,
            Stopped {
                who: "server".into(),
                last_answer_s: 13.0,
                noticed_s: 44.0,
                detail: "rrul to 10.201.2.2:23102: connect: timed out".into(),
            },
        );
        let text = render_summary(&s);
        let lines: Vec<&str> = text.lines().collect();
        assert!(
            lines[lines.len() - 1].starts_with("router stopped answering at t = 12.0 s"),
            "{text}"
        );
        assert!(
            lines[lines.len() - 2].starts_with(
                "the load's server (behind the router, which stopped too) stopped answering at \
                 t = 13.0 s"
            ),
            "{text}"
        );
    }

    #[test]
    fn heat_with_ambient_and_a_stable_run() {
        let mut s = StressResult {
            planned_s: 1800.0,
            measured_s: 1800.0,
            ambient_c: Some(44.0),
            observed: "local".into(),
            ..Default::default()
        };
        s.analysis.conclusive = true;
        s.analysis.stability.stable = true;
        s.analysis.heat.zones.push(ZoneHeat {
            zone: "cpu-thermal (thermal_zone0)".into(),
            start_c: 50.0,
            peak_c: 92.5,
            peak_at_s: 1700.0,
            rise_c: 42.5,
        });
        s.analysis.heat.hottest = Some("cpu-thermal (thermal_zone0)".into());
        s.analysis.heat.over_ambient_c = Some(48.5);
        s.analysis.throttling.verdict = ThrottleVerdict::Throttled;
        s.analysis.throttling.at_s = Some(900.0);
        s.analysis.throttling.freq_from_mhz = Some(1800.0);
        s.analysis.throttling.freq_to_mhz = Some(1200.0);
        s.analysis.throttling.freq_drop_pct = Some(33.3);
        s.analysis.throttling.temp_rise_c = Some(35.0);
        let text = render_summary(&s);
        assert!(
            text.contains("peak 92.5 °C at t = 1700 s, +42.5 °C over its start"),
            "{text}"
        );
        assert!(text.contains("+48.5 °C over the 44 °C ambient"), "{text}");
        assert!(
            text.contains("yes, from t = 900 s: CPU frequency 1800 → 1200 MHz (-33.3 %)"),
            "{text}"
        );
        assert!(
            text.lines()
                .last()
                .unwrap()
                .starts_with("Stability   stable"),
            "{text}"
        );
    }
}
