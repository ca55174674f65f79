//! Time-series arithmetic the detectors share: medians over a window, a rolling median (so one
//! slow step is not a trend), and the onset of a sustained fall below a baseline. Pure; a series
//! is `(t_s, value)` pairs in time order.

use crate::stats::{median, sorted_finite};

/// The median of the values with `from <= t <= to`.
pub fn window_median(s: &[(f64, f64)], from: f64, to: f64) -> Option<f64> {
    median(&sorted_finite(
        s.iter()
            .filter(|(t, _)| *t >= from && *t <= to)
            .map(|p| p.1),
    ))
}

/// Each point replaced by the median of the points in `(t − span, t]`.
pub fn smooth(s: &[(f64, f64)], span: f64) -> Vec<(f64, f64)> {
    let mut out = Vec::with_capacity(s.len());
    let mut lo = 0;
    for (i, &(t, _)) in s.iter().enumerate() {
        while lo < i && s[lo].0 <= t - span {
            lo += 1;
        }
        let m = median(&sorted_finite(s[lo..=i].iter().map(|p| p.1)));
        if let Some(m) = m {
            out.push((t, m));
        }
    }
    out
}

/// A sustained fall: from `from` (the start's median) to `to` (the median after the onset).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Fall {
    pub at_s: f64,
    pub from: f64,
    pub to: f64,
    pub drop_pct: f64,
}

/// How a fall is looked for.
#[derive(Debug, Clone, Copy)]
pub struct FallRule {
    /// The baseline is the median of the first `window` seconds.
    pub window: f64,
    /// Rolling median span, s.
    pub span: f64,
    /// A fall is this many percent below the baseline...
    pub drop_pct: f64,
    /// ...held for this long (or to the end, when at least half of it remains).
    pub sustain: f64,
}

/// The first time the smoothed series falls more than `rule.drop_pct` below the start's
/// median, stays there for `rule.sustain` (or to the end of the series, if at least half of
/// `sustain` remains and three points lie below), and the median from then to the end is
/// below that limit too. `None` when it never does or the series is too short (fewer than 5
/// points, or no positive baseline).
pub fn fall(s: &[(f64, f64)], rule: FallRule) -> Option<Fall> {
    if s.len() < 5 {
        return None;
    }
    let (start, end) = (s.first()?.0, s.last()?.0);
    let base = window_median(s, start, start + rule.window)?;
    if base <= 0.0 {
        return None;
    }
    let limit = base * (1.0 - rule.drop_pct / 100.0);
    let sm = smooth(s, rule.span);
    let mut i = 0;
    while i < sm.len() {
        let (t, v) = sm[i];
        if v >= limit || end - t < rule.sustain / 2.0 {
            i += 1;
            continue;
        }
        let held = sm[i..]
            .iter()
            .take_while(|(u, _)| *u <= t + rule.sustain)
            .collect::<Vec<_>>();
        if held.len() < 3 || held.iter().any(|(_, w)| *w >= limit) {
            i += 1;
            continue;
        }
        // Throttling persists: a dip the series recovers from (back above the limit for the
        // sustain time) is not a fall; the search goes on after the recovery.
        if let Some(back) = recovery(&sm[i..], limit, rule.sustain) {
            i += back.max(1);
            continue;
        }
        let to = window_median(s, t, end)?;
        return Some(Fall {
            at_s: t,
            from: base,
            to,
            drop_pct: (base - to) / base * 100.0,
        });
    }
    None
}

/// The index in `sm` where it has stayed at or above `limit` for `sustain`, if it does.
fn recovery(sm: &[(f64, f64)], limit: f64, sustain: f64) -> Option<usize> {
    let mut since: Option<f64> = None;
    for (k, &(u, w)) in sm.iter().enumerate() {
        if w < limit {
            since = None;
            continue;
        }
        let s0 = *since.get_or_insert(u);
        if u - s0 >= sustain {
            return Some(k);
        }
    }
    None
}

/// Percent change from `a` to `b` (`None` when `a` is not positive).
pub fn change_pct(a: f64, b: f64) -> Option<f64> {
    (a > 0.0).then(|| (b - a) / a * 100.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn series(f: impl Fn(f64) -> f64, n: usize) -> Vec<(f64, f64)> {
        (1..=n).map(|i| (i as f64, f(i as f64))).collect()
    }

    const RULE: FallRule = FallRule {
        window: 20.0,
        span: 5.0,
        drop_pct: 10.0,
        sustain: 10.0,
    };

    #[test]
    fn a_step_down_is_found_at_its_onset() {
        let s = series(|t| if t <= 60.0 { 100.0 } else { 70.0 }, 120);
        let f = fall(&s, RULE).unwrap();
        // The rolling median crosses once most of its 5 s span is past the step.
        assert!((61.0..=64.0).contains(&f.at_s), "{f:?}");
        assert_eq!((f.from, f.to), (100.0, 70.0));
        assert!((f.drop_pct - 30.0).abs() < 1e-9);
    }

    #[test]
    fn noise_single_dips_and_a_last_second_dip_are_not_a_fall() {
        let s = series(|t| 100.0 + if t as u64 % 2 == 0 { 4.0 } else { -4.0 }, 120);
        assert_eq!(fall(&s, RULE), None);
        let dips = series(|t| if t as u64 % 17 == 0 { 10.0 } else { 100.0 }, 120);
        assert_eq!(fall(&dips, RULE), None);
        let late = series(|t| if t >= 118.0 { 10.0 } else { 100.0 }, 120);
        assert_eq!(fall(&late, RULE), None);
        // A dip that recovers within the sustain time is not held.
        let brief = series(
            |t| {
                if (50.0..56.0).contains(&t) {
                    50.0
                } else {
                    100.0
                }
            },
            120,
        );
        assert_eq!(fall(&brief, RULE), None);
        // A dip held past the sustain time that the series then recovers from is not one
        // either (the median from its onset on is back near the start).
        let dip = series(
            |t| {
                if (40.0..60.0).contains(&t) {
                    80.0
                } else {
                    100.0
                }
            },
            120,
        );
        assert_eq!(fall(&dip, RULE), None);
        // But a later fall that lasts is found after such a dip.
        let both = series(
            |t| match t {
                t if (40.0..60.0).contains(&t) => 80.0,
                t if t > 90.0 => 60.0,
                _ => 100.0,
            },
            150,
        );
        let f = fall(&both, RULE).unwrap();
        assert!(f.at_s > 90.0 && (f.to - 60.0).abs() < 1e-9, "{f:?}");
        assert_eq!(fall(&s[..4], RULE), None);
    }

    #[test]
    fn window_and_smoothing() {
        let s = [(1.0, 1.0), (2.0, 9.0), (3.0, 2.0), (4.0, 3.0)];
        assert_eq!(window_median(&s, 1.0, 3.0), Some(2.0));
        assert_eq!(window_median(&s, 10.0, 20.0), None);
        assert_eq!(
            smooth(&s, 2.5),
            vec![(1.0, 1.0), (2.0, 5.0), (3.0, 2.0), (4.0, 3.0)]
        );
        assert_eq!(change_pct(200.0, 150.0), Some(-25.0));
        assert_eq!(change_pct(0.0, 1.0), None);
    }
}
