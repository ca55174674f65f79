//! The one statistics module: percentiles, mean, median, and the clock offset between two hosts
//! from four-timestamp exchanges. Pure functions over numbers; no I/O, no result types.
//!
//! **Percentile definition.** Every percentile in routerbench — the latency summary, `lab run`'s
//! checks, the monitor's 95th percentiles, the plots' axes and boxes — is [`percentile`]: linear
//! interpolation between the closest ranks, at position `p/100 · (n − 1)` of the sorted values.
//! This is numpy's default (`numpy.percentile(a, q)`, method "linear"), which is what flent uses
//! (`flent/combiners.py` calls `np.percentile(data, 99)`; its plot axes use `np.nanpercentile`),
//! so our figures can be compared with flent's on the same samples. p = 0 is the minimum,
//! p = 100 the maximum, the median of an even count is the mean of the middle two. NaN and
//! infinite values are left out first ([`sorted_finite`]), as `numpy.nanpercentile` does.

/// The finite values, sorted ascending (NaN and ±∞ left out).
pub fn sorted_finite(values: impl IntoIterator<Item = f64>) -> Vec<f64> {
    let mut v: Vec<f64> = values.into_iter().filter(|x| x.is_finite()).collect();
    v.sort_by(f64::total_cmp);
    v
}

/// The `p`-th percentile (0–100, clamped) of `sorted` (ascending, finite: see
/// [`sorted_finite`]) by linear interpolation between the closest ranks (numpy's default; see
/// the module doc). `None` when `sorted` is empty or `p` is NaN.
pub fn percentile(sorted: &[f64], p: f64) -> Option<f64> {
    let pos = percentile_position(sorted.len(), p)?;
    let lo = pos.floor() as usize;
    let hi = pos.ceil() as usize;
    let (a, b) = (*sorted.get(lo)?, *sorted.get(hi)?);
    Some(if lo == hi {
        a
    } else {
        a + (b - a) * (pos - lo as f64)
    })
}

/// Where the `p`-th percentile (0–100, clamped) lies among `n` sorted values: the 0-based
/// position `p/100 · (n − 1)` that [`percentile`] interpolates at. `None` when `n` is 0 or `p`
/// is NaN. A caller that needs a measured value rather than an interpolated one (a plot axis
/// ending on a sample) takes the sample at the rounded position.
pub fn percentile_position(n: usize, p: f64) -> Option<f64> {
    if n == 0 || p.is_nan() {
        return None;
    }
    Some((p / 100.0).clamp(0.0, 1.0) * (n - 1) as f64)
}

/// The `p`-th percentile of any values: [`sorted_finite`] then [`percentile`].
pub fn percentile_of(values: impl IntoIterator<Item = f64>, p: f64) -> Option<f64> {
    percentile(&sorted_finite(values), p)
}

/// The median (50th percentile) of `sorted` (ascending, finite); `None` when empty.
pub fn median(sorted: &[f64]) -> Option<f64> {
    percentile(sorted, 50.0)
}

/// Population standard deviation; `None` when empty.
pub fn std_dev(values: &[f64]) -> Option<f64> {
    let m = mean(values)?;
    let var = values.iter().map(|v| (v - m) * (v - m)).sum::<f64>() / values.len() as f64;
    Some(var.sqrt())
}

/// Single-sided trimmed mean: the mean of the lowest `keep_percent` % of the finite values (the
/// largest ones are dropped; the RPM draft's TM, 95 %, docs/rpm.md). At least one value is kept;
/// `None` when there is none.
pub fn trimmed_mean(values: impl IntoIterator<Item = f64>, keep_percent: f64) -> Option<f64> {
    let v = sorted_finite(values);
    if v.is_empty() {
        return None;
    }
    let keep = ((v.len() as f64 * keep_percent.clamp(0.0, 100.0) / 100.0).floor() as usize)
        .clamp(1, v.len());
    mean(&v[..keep])
}

/// The arithmetic mean; `None` when empty.
pub fn mean(values: &[f64]) -> Option<f64> {
    (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
}

/// One probe exchange with all four timestamps, ns (client clock for c*, server clock for s*).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Exchange {
    pub client_send: u64,
    pub server_rx: u64,
    pub server_tx: u64,
    pub client_recv: u64,
}

impl Exchange {
    /// Network round trip: total minus the time the reflector held the probe, ns.
    pub fn rtt_ns(&self) -> i64 {
        (self.client_recv as i64 - self.client_send as i64)
            - (self.server_tx as i64 - self.server_rx as i64)
    }
    /// server − client clock estimate from this exchange, assuming a symmetric path, ns.
    pub fn offset_ns(&self) -> f64 {
        // Differences first, in integers: absolute ns (~1.8e18) lose precision in an f64.
        let up = self.server_rx as i64 - self.client_send as i64;
        let down = self.server_tx as i64 - self.client_recv as i64;
        (up + down) as f64 / 2.0
    }
}

/// Crusader's method: among the idle exchanges, keep the lowest third by RTT (the least queued,
/// hence most symmetric) and average their offsets. Returns (offset ns, samples used, mean
/// client send time of those samples in ns) — the time the estimate belongs to, for drift.
pub fn clock_offset(exchanges: &[Exchange]) -> Option<(f64, usize, u64)> {
    let first = exchanges.first()?.client_send;
    let mut v: Vec<&Exchange> = exchanges.iter().collect();
    v.sort_by_key(|e| e.rtt_ns());
    let keep = v.len().div_ceil(3);
    let kept = v.get(..keep)?;
    let sum: f64 = kept.iter().map(|e| e.offset_ns()).sum();
    let at: i128 = kept
        .iter()
        .map(|e| e.client_send as i128 - first as i128)
        .sum::<i128>()
        / keep as i128;
    Some((sum / keep as f64, keep, (first as i128 + at) as u64))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: Option<f64>, b: f64) -> bool {
        a.is_some_and(|a| (a - b).abs() < 1e-9)
    }

    #[test]
    fn trimmed_mean_drops_the_top_and_std_dev_is_population() {
        // 20 values 1..=20: 95 % keeps 19 (floor), the mean of 1..=19 is 10.
        let v: Vec<f64> = (1..=20).map(f64::from).collect();
        assert!(close(trimmed_mean(v.clone(), 95.0), 10.0));
        assert!(close(trimmed_mean([5.0], 95.0), 5.0), "one value is kept");
        assert!(trimmed_mean([f64::NAN], 95.0).is_none());
        assert!(close(
            std_dev(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]),
            2.0
        ));
    }

    #[test]
    fn percentile_matches_numpy_linear() {
        // numpy.percentile(range(1, 11), q) for q = 90, 99, 50, 25.
        let v: Vec<f64> = (1..=10).map(f64::from).collect();
        assert!(close(percentile(&v, 90.0), 9.1));
        assert!(close(percentile(&v, 99.0), 9.91));
        assert!(close(percentile(&v, 50.0), 5.5));
        assert!(close(percentile(&v, 25.0), 3.25));
        // numpy.percentile(range(1, 71), [50, 99]) == [35.5, 69.31]
        let v: Vec<f64> = (1..=70).map(f64::from).collect();
        assert!(close(percentile(&v, 50.0), 35.5));
        assert!(close(percentile(&v, 99.0), 69.31));
        // A spike in five samples pulls the 99th most of the way (numpy: 960.16), not all.
        let s = [1.0, 2.0, 3.0, 4.0, 1000.0];
        assert!(close(percentile(&s, 99.0), 960.16));
        assert!(close(percentile(&s, 1.0), 1.04));
        assert_eq!(percentile(&s, 50.0), Some(3.0));
        // 151 values: position 0.99 · 150 = 148.5 lies between 148 and 149, far from the spike.
        let mut many: Vec<f64> = (0..150).map(f64::from).collect();
        many.push(1e6);
        assert!(close(percentile(&many, 99.0), 148.5));
    }

    #[test]
    fn percentile_edges() {
        assert_eq!(percentile(&[], 50.0), None);
        assert_eq!(percentile(&[7.0], 0.0), Some(7.0));
        assert_eq!(percentile(&[7.0], 99.0), Some(7.0));
        assert_eq!(percentile(&[7.0], 100.0), Some(7.0));
        let v = [1.0, 2.0, 4.0];
        assert_eq!(percentile(&v, 0.0), Some(1.0), "p=0 is the minimum");
        assert_eq!(percentile(&v, 100.0), Some(4.0), "p=100 is the maximum");
        assert_eq!(percentile(&v, -5.0), Some(1.0), "clamped");
        assert_eq!(percentile(&v, 250.0), Some(4.0), "clamped");
        assert_eq!(percentile(&v, f64::NAN), None);
        assert_eq!(percentile_position(0, 50.0), None);
        assert_eq!(percentile_position(101, 99.0), Some(99.0));
        assert_eq!(percentile_position(3, 50.0), Some(1.0));
        // NaN and infinities are left out (numpy.nanpercentile).
        let s = sorted_finite([3.0, f64::NAN, 1.0, f64::INFINITY, 2.0, f64::NEG_INFINITY]);
        assert_eq!(s, vec![1.0, 2.0, 3.0]);
        assert_eq!(percentile_of([f64::NAN, 4.0, 2.0], 50.0), Some(3.0));
        assert_eq!(percentile_of([f64::NAN], 50.0), None);
    }

    #[test]
    fn mean_and_median() {
        assert_eq!(mean(&[]), None);
        assert_eq!(mean(&[1.0, 2.0, 6.0]), Some(3.0));
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[1.0, 2.0, 3.0]), Some(2.0));
        assert_eq!(
            median(&[1.0, 2.0, 3.0, 10.0]),
            Some(2.5),
            "even count: mean of the middle"
        );
    }

    #[test]
    fn clock_offset_uses_lowest_third() {
        // Server clock 1 ms ahead; symmetric 100 µs path; reflector holds 10 µs.
        let base = |t: u64, extra_up: u64| Exchange {
            client_send: t,
            server_rx: t + 50_000 + extra_up + 1_000_000,
            server_tx: t + 60_000 + extra_up + 1_000_000,
            client_recv: t + 110_000 + extra_up,
        };
        let mut ex: Vec<Exchange> = (0..3).map(|i| base(i * 1_000_000, 0)).collect();
        // Six queued exchanges, delayed on the way up only: they would skew a plain mean.
        ex.extend((3..9).map(|i| base(i * 1_000_000, 5_000_000)));
        let (off, used, at) = clock_offset(&ex).unwrap();
        assert_eq!(at, 1_000_000, "mean send time of the three kept");
        assert_eq!(used, 3);
        assert!((off - 1_000_000.0).abs() < 1.0, "{off}");
        assert_eq!(ex[0].rtt_ns(), 100_000);
        assert!(clock_offset(&[]).is_none());
    }
}
