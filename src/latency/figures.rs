//! The figures of a latency summary: a series' statistics (through `crate::stats`, the one
//! percentile definition), the bufferbloat grade and round trips per minute. Pure; no I/O.

use crate::results::latency::SeriesStats;
use crate::stats::{mean, percentile, sorted_finite};

/// n, mean, median, p90, p99, min, max of the finite values.
pub fn series_stats(values: impl IntoIterator<Item = f64>) -> SeriesStats {
    let v = sorted_finite(values);
    SeriesStats {
        n: v.len(),
        mean: mean(&v),
        median: percentile(&v, 50.0),
        p90: percentile(&v, 90.0),
        p99: percentile(&v, 99.0),
        min: v.first().copied(),
        max: v.last().copied(),
    }
}

/// DSLReports/Waveform bands on the latency increase (docs/protocols/latency.md §5).
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
}
