//! Summary statistics, the bufferbloat grade, round trips per minute, and the clock offset
//! between client and server. Pure functions over numbers; no I/O.

use crate::results::latency::SeriesStats;

/// Percentile with linear interpolation between closest ranks (numpy's default, as flent uses).
/// `sorted` must be sorted ascending and non-empty; `q` in 0..=100.
pub fn percentile(sorted: &[f64], q: f64) -> f64 {
    let pos = (q / 100.0).clamp(0.0, 1.0) * (sorted.len() - 1) as f64;
    let lo = pos.floor() as usize;
    let hi = pos.ceil() as usize;
    sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo as f64)
}

/// n, mean, median, p90, p99, min, max of the finite values.
pub fn series_stats(values: impl IntoIterator<Item = f64>) -> SeriesStats {
    let mut v: Vec<f64> = values.into_iter().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return SeriesStats::default();
    }
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    SeriesStats {
        n,
        mean: Some(v.iter().sum::<f64>() / n as f64),
        median: Some(percentile(&v, 50.0)),
        p90: Some(percentile(&v, 90.0)),
        p99: Some(percentile(&v, 99.0)),
        min: Some(v[0]),
        max: Some(v[n - 1]),
    }
}

/// DSLReports/Waveform bands on the latency increase (spec/latency.md §5).
pub fn grade(increase_ms: f64) -> &'static str {
    match increase_ms {
        x if x < 5.0 => "A+",
        x if x < 30.0 => "A",
        x if x < 60.0 => "B",
        x if x < 200.0 => "C",
        x if x < 400.0 => "D",
        _ => "F",
    }
}

/// Round trips per minute: 60000 / RTT in ms.
pub fn rpm(rtt_ms: f64) -> Option<f64> {
    (rtt_ms > 0.0 && rtt_ms.is_finite()).then(|| 60_000.0 / rtt_ms)
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
    let sum: f64 = v[..keep].iter().map(|e| e.offset_ns()).sum();
    let at: i128 = v[..keep]
        .iter()
        .map(|e| e.client_send as i128 - first as i128)
        .sum::<i128>()
        / keep as i128;
    Some((sum / keep as f64, keep, (first as i128 + at) as u64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stats_match_numpy() {
        let s = series_stats([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0]);
        assert_eq!(s.n, 10);
        assert_eq!(s.mean, Some(5.5));
        assert_eq!(s.median, Some(5.5));
        // numpy.percentile(range(1, 11), 90) == 9.1; 99 → 9.91
        assert!((s.p90.unwrap() - 9.1).abs() < 1e-9);
        assert!((s.p99.unwrap() - 9.91).abs() < 1e-9);
        assert_eq!((s.min, s.max), (Some(1.0), Some(10.0)));
        assert_eq!(series_stats([f64::NAN]).n, 0);
        assert_eq!(series_stats([]).mean, None);
    }

    #[test]
    fn grade_bands() {
        let cases = [
            (0.0, "A+"),
            (4.99, "A+"),
            (5.0, "A"),
            (29.9, "A"),
            (30.0, "B"),
            (59.0, "B"),
            (60.0, "C"),
            (199.0, "C"),
            (200.0, "D"),
            (399.0, "D"),
            (400.0, "F"),
            (-1.0, "A+"),
        ];
        for (x, g) in cases {
            assert_eq!(grade(x), g, "{x} ms");
        }
        assert_eq!(rpm(20.0), Some(3000.0));
        assert_eq!(rpm(0.0), None);
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
