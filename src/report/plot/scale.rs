//! Axis statistics for plots: the 1st–99th percentile range a value axis is scaled to, so one
//! huge spike never squashes the rest; the values outside it are drawn as marks. No drawing here.

/// A value axis: the range drawn, and whether values fell outside it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AxisRange {
    pub lo: f64,
    pub hi: f64,
}

impl AxisRange {
    /// True if `v` is drawn inside the axis (not an outlier).
    pub fn contains(&self, v: f64) -> bool {
        v >= self.lo && v <= self.hi
    }
}

use crate::stats::{percentile_position, sorted_finite};

/// The sample nearest the `p`-th percentile's position (`crate::stats`, the one definition):
/// an axis ends on a value that was measured, never on a point interpolated towards a spike
/// (one spike in 100 samples would pull an interpolated 99th a hundredth of the way up to it).
/// Under 51 samples the 99th is the maximum.
fn sample_at(sorted: &[f64], p: f64) -> Option<f64> {
    let pos = percentile_position(sorted.len(), p)?;
    sorted.get(pos.round() as usize).copied()
}

/// The axis for `values`: 1st–99th percentile (each the sample nearest its position), widened by 8 % on top (and below when not
/// `zero_based`); from 0 when `zero_based` and all values are ≥ 0. `None` for no values.
pub fn robust_range(values: impl IntoIterator<Item = f64>, zero_based: bool) -> Option<AxisRange> {
    let sorted = sorted_finite(values);
    let p1 = sample_at(&sorted, 1.0)?;
    let p99 = sample_at(&sorted, 99.0)?;
    let mut lo = if zero_based { p1.min(0.0) } else { p1 };
    let mut hi = p99;
    if hi - lo <= f64::EPSILON * hi.abs().max(1.0) {
        // One value (or all equal): a range around it.
        let pad = (hi.abs() * 0.5).max(1.0);
        hi += pad;
        if !zero_based || lo < 0.0 {
            lo -= pad;
        }
    }
    let span = hi - lo;
    hi += span * 0.08;
    if !zero_based {
        lo -= span * 0.08;
    }
    // Values just below the 1st percentile still belong on the axis when the range starts at 0.
    if zero_based && lo >= 0.0 {
        lo = 0.0;
    }
    Some(AxisRange { lo, hi })
}

/// A log axis over positive values: from the smallest to the largest, widened to whole decades.
pub fn log_range(values: impl IntoIterator<Item = f64>) -> Option<AxisRange> {
    let sorted = sorted_finite(values.into_iter().filter(|v| *v > 0.0));
    let lo = *sorted.first()?;
    let hi = *sorted.last()?;
    let mut floor = 10f64.powf(lo.log10().floor());
    if lo / floor < 3.0 {
        // A bar just above a decade would be a sliver: start one decade lower.
        floor /= 10.0;
    }
    Some(AxisRange {
        lo: floor,
        hi: 10f64.powf((hi.log10() + 1e-9).ceil()).max(floor * 10.0),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hundredfold_spike_does_not_set_the_axis() {
        let mut v: Vec<f64> = (0..200).map(|i| 10.0 + (i % 7) as f64).collect();
        v.push(1600.0);
        let r = robust_range(v.iter().copied(), true).unwrap();
        assert_eq!(r.lo, 0.0);
        assert!(r.hi < 20.0, "axis {r:?} blown up by the spike");
        assert!(!r.contains(1600.0), "the spike is an outlier, marked");
        assert!(r.contains(16.0));
    }

    #[test]
    fn single_value_and_empty() {
        assert_eq!(robust_range(std::iter::empty(), true), None);
        let r = robust_range([5.0], true).unwrap();
        assert!(r.lo <= 5.0 && r.hi > 5.0 && r.lo == 0.0);
        let r = robust_range([5.0], false).unwrap();
        assert!(r.lo < 5.0 && r.hi > 5.0);
        assert!(robust_range([f64::NAN], true).is_none());
    }

    #[test]
    fn an_axis_ends_on_the_sample_nearest_the_percentile() {
        let s = [1.0, 2.0, 3.0, 4.0, 1000.0];
        assert_eq!(
            sample_at(&s, 99.0),
            Some(1000.0),
            "few samples: the maximum"
        );
        assert_eq!(sample_at(&s, 1.0), Some(1.0));
        assert_eq!(sample_at(&s, 50.0), Some(3.0));
        let mut many: Vec<f64> = (0..150).map(|i| i as f64).collect();
        many.push(1e6);
        assert_eq!(sample_at(&many, 99.0), Some(149.0));
        assert_eq!(sample_at(&[], 99.0), None);
    }

    #[test]
    fn log_range_whole_decades() {
        let r = log_range([10.5, 5441.4, 0.0]).unwrap();
        assert_eq!((r.lo, r.hi), (1.0, 10000.0), "10.5 is no sliver above 10");
        let r = log_range([31.4, 493.3]).unwrap();
        assert_eq!((r.lo, r.hi), (10.0, 1000.0));
    }
}
