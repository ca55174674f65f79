//! The validity verdict in words (docs/crypto.md, "Does the row check itself?"): one line for
//! the text outputs, and the short word `compare` shows.

use crate::results::validity::{Validity, Verdict};

/// Others' CPU at the start, when the machine was not idle: `busy at start: others 97 % of a
/// CPU after waiting 3.0 s`.
fn start(v: &Validity) -> Option<String> {
    let o = v.idle.others_pct?;
    (!v.idle.idle).then(|| {
        format!(
            "busy at start: others {o:.0} % of a CPU after waiting {:.1} s",
            v.idle.waited_s
        )
    })
}

/// What was measured, briefly: others' CPU while measuring, the clocks, the temperatures.
fn readings(v: &Validity) -> Vec<String> {
    let mut out = Vec::new();
    let judged: Vec<_> = v.windows.iter().filter(|w| w.judged).collect();
    let total: f64 = judged.iter().map(|w| w.seconds).sum();
    if total > 0.0 {
        let mean = judged
            .iter()
            .map(|w| (w.others_pct + w.irq_pct) * w.seconds)
            .sum::<f64>()
            / total;
        let max = judged
            .iter()
            .map(|w| w.others_pct + w.irq_pct)
            .fold(0.0, f64::max);
        out.push(format!(
            "others {mean:.0} % of a CPU while measuring (≤ {max:.0} % per window)"
        ));
    } else if v.windows.is_empty() {
        out.push("others' CPU unknown".into());
    }
    let c = &v.clock;
    let mut clock = match c.before_mhz {
        Some(m) => format!("clock {m:.0} MHz measured"),
        None => "clock not calibrated".into(),
    };
    match c.cpufreq_mhz {
        Some(f) => clock.push_str(&format!(", cpufreq {f:.0}")),
        None => clock.push_str(", no cpufreq"),
    }
    if let Some(b) = c.bogomips {
        clock.push_str(&format!(", BogoMIPS {b:.0}"));
    }
    out.push(clock);
    if let (Some(a), Some(b)) = (v.temp_before_c, v.temp_after_c) {
        out.push(format!("{a:.0} → {b:.0} °C"));
    }
    out
}

/// `validity: PASS (…)` or `validity: FAIL: problem; problem (…)`.
pub fn verdict_line(v: &Validity) -> String {
    let mut info = readings(v);
    if let Some(s) = start(v) {
        info.insert(0, s);
    }
    match v.verdict {
        Verdict::Pass => format!("validity: PASS ({})", info.join("; ")),
        Verdict::Fail => format!(
            "validity: FAIL: {} ({})",
            v.problems.join("; "),
            info.join("; ")
        ),
    }
}

/// The word `compare` shows: `pass`, or `FAIL: ` and the first problem's name (the text
/// before its colon).
pub fn short(v: &Validity) -> String {
    match v.verdict {
        Verdict::Pass => "pass".into(),
        Verdict::Fail => {
            let names: Vec<&str> = v
                .problems
                .iter()
                .map(|p| p.split(':').next().unwrap_or(p).trim())
                .collect();
            format!("FAIL: {}", names.join(", "))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::validity::{ClockCheck, IdleCheck, LoadWindow};

    fn v(verdict: Verdict, problems: &[&str], idle: bool, others: f64) -> Validity {
        Validity {
            verdict,
            problems: problems.iter().map(|p| p.to_string()).collect(),
            idle: IdleCheck {
                limit_s: 3.0,
                waited_s: 3.0,
                idle,
                others_pct: Some(others),
            },
            windows: vec![LoadWindow {
                name: "md5".into(),
                seconds: 1.0,
                own_pct: 100.0,
                others_pct: others,
                irq_pct: 0.0,
                judged: true,
                cur_khz: None,
            }],
            whole: None,
            cpufreq: Vec::new(),
            temp_before_c: Some(41.0),
            temp_after_c: Some(47.5),
            clock: ClockCheck {
                before_mhz: Some(880.4),
                after_mhz: Some(879.0),
                cpufreq_mhz: None,
                bogomips: Some(583.68),
            },
            notes: Vec::new(),
        }
    }

    #[test]
    fn one_line_names_the_problem_and_the_readings() {
        assert_eq!(
            verdict_line(&v(Verdict::Pass, &[], true, 1.0)),
            "validity: PASS (others 1 % of a CPU while measuring (≤ 1 % per window); clock 880 \
             MHz measured, no cpufreq, BogoMIPS 584; 41 → 48 °C)"
        );
        let bad = v(
            Verdict::Fail,
            &["background load: other processes used 98 % of a CPU on average while measuring"],
            false,
            98.0,
        );
        let line = verdict_line(&bad);
        assert!(
            line.starts_with(
                "validity: FAIL: background load: other processes used 98 % of a CPU on \
                 average while measuring (busy at start: others 98 % of a CPU after waiting \
                 3.0 s; "
            ),
            "{line}"
        );
        assert!(!line.contains('\n'));
        assert_eq!(short(&bad), "FAIL: background load");
        assert_eq!(short(&v(Verdict::Pass, &[], true, 0.0)), "pass");
    }
}
