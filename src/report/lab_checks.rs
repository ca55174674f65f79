//! `lab run`'s comparison with theory: one row per loaded direction and the round trip (per
//! phase for `phases`), as a markdown table, and a line per phase beside its theory.

use crate::results::lab::QueueCheck;
use crate::util::units::human_rate as fmt_rate;
use std::fmt::Write;

fn ms(x: Option<f64>) -> String {
    x.map(|v| format!("{v:.2}")).unwrap_or_else(|| "n/a".into())
}

/// An increase with its sign: `+36.10`, `-0.05`.
fn plus_ms(x: Option<f64>) -> String {
    x.map(|v| format!("{v:+.2}"))
        .unwrap_or_else(|| "n/a".into())
}

fn ratio(x: Option<f64>) -> String {
    x.map(|v| format!("{v:.2}")).unwrap_or_else(|| "n/a".into())
}

/// Header of `lab run`'s comparison table.
pub fn checks_header() -> String {
    "| test | NAT | direction | metric | rate | buffer B | theory ms | idle median ms | loaded med / p99 ms | median +ms | p99 +ms | median/theory | p99/theory | qdisc backlog med / p99 ms | goodput | goodput/rate | goodput/theory |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n".into()
}

/// `lab run`'s comparison with theory, one row per direction (and the round trip), no header.
pub fn checks_rows(test: &str, nat: bool, checks: &[QueueCheck]) -> String {
    let mut s = String::new();
    for c in checks {
        let g = c.goodput_ratio;
        let test = match &c.phase {
            Some(p) => format!("{test} {p}"),
            None => test.to_string(),
        };
        let _ = writeln!(
            s,
            "| {test} | {} | {} | {} | {} | {} | {:.1} | {} | {} / {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            if nat { "on" } else { "off" },
            c.direction,
            c.metric,
            c.rate_bps
                .map(|r| fmt_rate(r as f64))
                .unwrap_or_else(|| "-".into()),
            c.buffer_bytes,
            c.theory_ms,
            ms(c.idle_median_ms),
            ms(c.loaded.median_ms),
            ms(c.loaded.p99_ms),
            ms(c.median_increase_ms),
            ms(c.p99_increase_ms),
            ratio(c.median_ratio),
            ratio(c.p99_ratio),
            match (c.qdisc_median_ms, c.qdisc_p99_ms) {
                (Some(m), Some(p)) => format!("{m:.2} / {p:.2}"),
                _ => "-".into(),
            },
            c.goodput_bps.map(fmt_rate).unwrap_or_else(|| "-".into()),
            g.map(|x| format!("{x:.3}")).unwrap_or_else(|| "-".into()),
            match (g, c.goodput_theory_ratio) {
                (Some(x), Some(t)) => format!("{:.3} (of {t:.3})", x / t),
                _ => "-".into(),
            },
        );
    }
    s
}

/// `lab run`'s comparison with theory as a table, and (for a test with phases) one line per
/// phase under it.
pub fn checks(test: &str, nat: bool, checks: &[QueueCheck]) -> String {
    checks_header() + &checks_rows(test, nat, checks) + &phase_lines(checks)
}

/// One line per phase: its round trip's median increase over idle beside the theory of the
/// directions it loads (`buffer·8/rate` each, summed), with the ratio, then each loaded
/// direction's one-way increase and ratio. Empty when no check names a phase.
pub fn phase_lines(checks: &[QueueCheck]) -> String {
    let mut phases: Vec<&str> = Vec::new();
    for p in checks.iter().filter_map(|c| c.phase.as_deref()) {
        if !phases.contains(&p) {
            phases.push(p);
        }
    }
    if phases.is_empty() {
        return String::new();
    }
    let mut s = String::from(
        "\nPer phase against theory (median increase over idle; theory = buffer·8/rate per loaded direction):\n",
    );
    let ratio_x = |x: Option<f64>| x.map_or("-".to_string(), |r| format!("{r:.2}×"));
    for phase in phases {
        let of: Vec<&QueueCheck> = checks
            .iter()
            .filter(|c| c.phase.as_deref() == Some(phase))
            .collect();
        let one_way: Vec<&&QueueCheck> = of
            .iter()
            .filter(|c| c.metric == "UDP one-way delay")
            .collect();
        let theory = one_way
            .iter()
            .map(|c| format!("{} {:.1}", c.direction, c.theory_ms))
            .collect::<Vec<_>>()
            .join(" + ");
        let _ = write!(s, "  {phase:<9}");
        if let Some(rt) = of.iter().find(|c| c.metric.starts_with("round trip")) {
            let _ = write!(
                s,
                " RTT {} ms  theory {:.1} ms ({theory})  {}",
                plus_ms(rt.median_increase_ms),
                rt.theory_ms,
                ratio_x(rt.median_ratio)
            );
        }
        for c in one_way {
            let _ = write!(
                s,
                "  | one-way {} {} ms of {:.1}: {}",
                c.direction,
                plus_ms(c.median_increase_ms),
                c.theory_ms,
                ratio_x(c.median_ratio)
            );
        }
        s.push('\n');
    }
    s
}
