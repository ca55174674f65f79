//! The ramp of draft-ietf-ippm-responsiveness-09 §5.4 ("Final Algorithm"), as a pure state
//! machine fed one interval at a time: add INC load-generating connections per interval while
//! goodput is not saturated (up to MNP), declare goodput saturated when the standard deviation
//! of the last MAD moving averages is within SDT of the current one, then do the same for the
//! responsiveness; the confidence of each stage follows §5.4.1. No I/O, no clock.

use super::params::Params;
use crate::stats::{mean, std_dev};

/// Stability of one measured series: its per-interval values, their moving averages.
#[derive(Debug, Clone, Default)]
struct Series {
    values: Vec<f64>,
    /// Moving average at each interval that has MAD values behind it.
    averages: Vec<f64>,
}

impl Series {
    /// Adds a value; returns (moving average, relative sd of the last MAD averages).
    fn push(&mut self, v: f64, mad: usize) -> (Option<f64>, Option<f64>) {
        self.values.push(v);
        if self.values.len() < mad {
            return (None, None);
        }
        let window = &self.values[self.values.len() - mad..];
        let ma = mean(window).unwrap_or(0.0);
        self.averages.push(ma);
        if self.averages.len() < mad {
            return (Some(ma), None);
        }
        (Some(ma), relative_spread(&self.averages, mad))
    }
}

/// Draft §5.4.1: Low = fewer than MAD iterations of the stage, Medium = MAD or more without
/// stability, High = stable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Confidence {
    Low,
    Medium,
    High,
}

impl Confidence {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Low => "Low",
            Self::Medium => "Medium",
            Self::High => "High",
        }
    }
}

/// What one interval gave the ramp, and what the ramp decided.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    pub moving_average_bps: Option<f64>,
    pub goodput_relative_sd: Option<f64>,
    pub goodput_saturated: bool,
    pub responsiveness_relative_sd: Option<f64>,
    /// Connections to add per loaded direction before the next interval.
    pub add: Vec<usize>,
    /// The responsiveness is stable: the run is over.
    pub done: bool,
}

/// The ramp over `directions` loaded directions.
#[derive(Debug, Clone)]
pub struct Ramp {
    params: Params,
    /// Goodput per direction and in total.
    per_dir: Vec<Series>,
    total: Series,
    dir_stable: Vec<bool>,
    saturated_at: Option<usize>,
    /// Responsiveness per interval since saturation (each already over the last MAD intervals).
    responsiveness: Vec<f64>,
    stable_at: Option<usize>,
    intervals: usize,
}

impl Ramp {
    pub fn new(params: Params, directions: usize) -> Self {
        Self {
            params,
            per_dir: vec![Series::default(); directions],
            total: Series::default(),
            dir_stable: vec![false; directions],
            saturated_at: None,
            responsiveness: Vec::new(),
            stable_at: None,
            intervals: 0,
        }
    }

    /// Whether goodput is saturated (the responsiveness stage runs).
    pub fn saturated(&self) -> bool {
        self.saturated_at.is_some()
    }

    /// One interval: the goodput of each loaded direction (bit/s) and its connections now.
    /// `responsiveness` is computed by the caller over the last MAD intervals; it is read only
    /// once goodput is saturated (this interval included).
    pub fn interval(
        &mut self,
        goodput_bps: &[f64],
        connections: &[usize],
        responsiveness: impl FnOnce() -> Option<f64>,
    ) -> Step {
        let mad = self.params.mad;
        let i = self.intervals;
        self.intervals += 1;
        for (k, g) in goodput_bps.iter().enumerate() {
            if let Some(s) = self.per_dir.get_mut(k) {
                let (_, rel) = s.push(*g, mad);
                // A direction, once stable, stays so: its connections stop growing.
                if rel.is_some_and(|r| r <= self.params.sdt) {
                    self.dir_stable[k] = true;
                }
            }
        }
        let (ma, rel) = self.total.push(goodput_bps.iter().sum(), mad);
        if self.saturated_at.is_none() && self.dir_stable.iter().all(|s| *s) {
            self.saturated_at = Some(i);
        }
        let mut resp_rel = None;
        if self.saturated_at.is_some() && self.stable_at.is_none() {
            if let Some(r) = responsiveness() {
                self.responsiveness.push(r);
                // The values are themselves over MAD intervals: their spread is the test.
                resp_rel = relative_spread(&self.responsiveness, mad);
                if resp_rel.is_some_and(|x| x <= self.params.sdt) {
                    self.stable_at = Some(i);
                }
            }
        }
        let add = (0..self.per_dir.len())
            .map(|k| {
                let have = connections.get(k).copied().unwrap_or(0);
                if self.dir_stable[k] || have >= self.params.mnp {
                    0
                } else {
                    self.params.inc.min(self.params.mnp - have)
                }
            })
            .collect();
        Step {
            moving_average_bps: ma,
            goodput_relative_sd: rel,
            goodput_saturated: self.saturated_at.is_some(),
            responsiveness_relative_sd: resp_rel,
            add,
            done: self.stable_at.is_some(),
        }
    }

    /// §5.4.1 for the goodput stage.
    pub fn goodput_confidence(&self) -> Confidence {
        if self.saturated_at.is_some() {
            Confidence::High
        } else if self.intervals >= self.params.mad {
            Confidence::Medium
        } else {
            Confidence::Low
        }
    }

    /// §5.4.1 for the responsiveness stage: its iterations are the intervals since goodput
    /// saturation.
    pub fn responsiveness_confidence(&self) -> Confidence {
        if self.stable_at.is_some() {
            Confidence::High
        } else if self.responsiveness.len() >= self.params.mad {
            Confidence::Medium
        } else {
            Confidence::Low
        }
    }

    /// The relative spread of the last MAD goodput moving averages (for messages).
    pub fn last_goodput_spread(&self) -> Option<f64> {
        relative_spread(
            &self.total.averages,
            self.params.mad.min(self.total.averages.len()).max(2),
        )
    }

    /// The relative spread of the last MAD responsiveness values.
    pub fn last_responsiveness_spread(&self) -> Option<f64> {
        relative_spread(
            &self.responsiveness,
            self.params.mad.min(self.responsiveness.len()).max(2),
        )
    }
}

/// Standard deviation of the last `n` values relative to the last one (None with fewer).
fn relative_spread(values: &[f64], n: usize) -> Option<f64> {
    if values.len() < n || n == 0 {
        return None;
    }
    let last = &values[values.len() - n..];
    let current = *last.last()?;
    std_dev(last).map(|sd| {
        if current > 0.0 {
            sd / current
        } else {
            f64::INFINITY
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params() -> Params {
        Params::default()
    }

    #[test]
    fn steady_link_saturates_then_stabilises() {
        let mut r = Ramp::new(params(), 1);
        let mut conns = 1;
        let mut log = Vec::new();
        for i in 0..20 {
            // Goodput grows with the first connections, then holds at 100 Mbit/s.
            let g = (conns as f64 * 40e6).min(100e6);
            let s = r.interval(&[g], &[conns], || Some(1200.0));
            conns += s.add[0];
            log.push((i, s.goodput_saturated, s.done, conns));
            if s.done {
                break;
            }
        }
        // Goodput 40, 80, then 100 Mbit/s: moving averages 80, 95, 100, 100 (interval 6, sd
        // 8 %), then 95, 100, 100, 100 (interval 7, sd 2 %): saturated at 7. Responsiveness
        // values from 7 on; MAD of them at 10, all equal: stable.
        let sat = log.iter().find(|l| l.1).map(|l| l.0);
        let done = log.iter().find(|l| l.2).map(|l| l.0);
        assert_eq!(sat, Some(7), "{log:?}");
        assert_eq!(
            done,
            Some(10),
            "MAD responsiveness values after saturation: {log:?}"
        );
        assert_eq!(
            log.last().unwrap().3,
            8,
            "one connection per interval until saturation"
        );
        assert_eq!(r.goodput_confidence(), Confidence::High);
        assert_eq!(r.responsiveness_confidence(), Confidence::High);
    }

    #[test]
    fn never_saturates_reaches_mnp_and_stays_unsure() {
        let mut r = Ramp::new(params(), 1);
        let mut conns = 1;
        for i in 0..30i32 {
            // Goodput that keeps growing by a fifth per interval: never saturated. (An
            // alternation such as 10, 90, 10, 90 would not do: its moving averages are flat.)
            let g = 10e6 * 1.2f64.powi(i);
            let s = r.interval(&[g], &[conns], || Some(1000.0));
            conns += s.add[0];
            assert!(!s.goodput_saturated && !s.done);
        }
        assert_eq!(conns, 16, "the ramp stops at MNP");
        assert_eq!(r.goodput_confidence(), Confidence::Medium);
        assert_eq!(
            r.responsiveness_confidence(),
            Confidence::Low,
            "its stage never ran"
        );
        assert!(r.last_goodput_spread().unwrap() > 0.05);
        let mut short = Ramp::new(params(), 1);
        short.interval(&[1e6], &[1], || None);
        assert_eq!(short.goodput_confidence(), Confidence::Low);
    }

    #[test]
    fn responsiveness_that_never_stabilises_is_medium() {
        let mut r = Ramp::new(params(), 2);
        for i in 0..20 {
            let resp = if i % 2 == 0 { 500.0 } else { 3000.0 };
            let s = r.interval(&[50e6, 10e6], &[2, 2], || Some(resp));
            assert!(!s.done);
        }
        assert_eq!(r.goodput_confidence(), Confidence::High);
        assert_eq!(r.responsiveness_confidence(), Confidence::Medium);
    }
}
