//! The test parameters of draft-ietf-ippm-responsiveness-09 §5.2 ("Test Parameters") with
//! the draft's defaults, and the limits routerbench adds (the time limit of §5.4.1).

use crate::results::rpm::RpmParams;
use std::time::Duration;

/// One run's parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct Params {
    /// MAD, moving-average distance (intervals).
    pub mad: usize,
    /// ID, interval duration: 5 s in -09 (1 s in -08 and earlier, and in goresponsiveness).
    pub interval: Duration,
    /// TMP: the single-sided trimmed mean keeps the lowest this-many percent.
    pub trimmed_mean_percent: f64,
    /// SDT, standard-deviation tolerance (fraction).
    pub sdt: f64,
    /// INP, initial connections per loaded direction.
    pub inp: usize,
    /// INC, connections added per interval per direction while goodput is not saturated.
    pub inc: usize,
    /// MNP, most connections per direction.
    pub mnp: usize,
    /// MPS, most probes per second, foreign and self together.
    pub mps: f64,
    /// PTC, share of the measured capacity the probes may use.
    pub ptc: f64,
    /// The time limit of one run (§5.4.1 lets a tool choose one); the run then reports what it
    /// has with its confidence.
    pub time_limit: Duration,
}

impl Default for Params {
    /// The draft's defaults (§5.2) and a 90 s limit per run: at ID = 5 s the fastest possible
    /// run is 10 intervals (7 for MAD goodput moving averages, 3 more for MAD responsiveness
    /// values), 50 s.
    fn default() -> Self {
        Self {
            mad: 4,
            interval: Duration::from_secs(5),
            trimmed_mean_percent: 95.0,
            sdt: 0.05,
            inp: 1,
            inc: 1,
            mnp: 16,
            mps: 100.0,
            ptc: 0.05,
            time_limit: Duration::from_secs(90),
        }
    }
}

/// Bytes one foreign probe costs on the wire, the draft's estimate with TCP and TLS overhead
/// (§5.3: "around 5000 bytes").
pub const FOREIGN_PROBE_BYTES: f64 = 5000.0;
/// Bytes one self probe costs (§5.3: "no more than 1000 bytes").
pub const SELF_PROBE_BYTES: f64 = 1000.0;

impl Params {
    /// Checks the values make sense; the message names the option.
    pub fn validate(&self) -> Result<(), String> {
        if !(2..=20).contains(&self.mad) {
            return Err("--mad must be between 2 and 20 intervals".into());
        }
        if self.interval < Duration::from_millis(100) || self.interval > Duration::from_secs(30) {
            return Err("--interval must be between 0.1 and 30 s".into());
        }
        if !(1..=64).contains(&self.mnp) || self.inp == 0 || self.inp > self.mnp || self.inc == 0 {
            return Err("connections: need 1 <= initial <= --max-connections <= 64".into());
        }
        if !(1.0..=1000.0).contains(&self.mps) {
            return Err("--max-probes-per-second must be between 1 and 1000".into());
        }
        if !(0.001..=0.5).contains(&self.ptc) {
            return Err("--probe-share must be between 0.001 and 0.5".into());
        }
        if self.time_limit < self.interval * 2 || self.time_limit > Duration::from_secs(600) {
            return Err("--max-time must be at least two intervals and at most 600 s".into());
        }
        Ok(())
    }

    /// Probe pairs (one foreign + one self) per second allowed when the path carries
    /// `goodput_bps` (bit/s): at most MPS probes a second in all, and the probes' bytes at most
    /// PTC of the goodput (§5.3); at least one pair per interval so a slow link still gets a score.
    pub fn probe_pairs_per_s(&self, goodput_bps: Option<f64>) -> f64 {
        let by_count = self.mps / 2.0;
        let by_capacity = goodput_bps
            .map(|g| self.ptc * g / 8.0 / (FOREIGN_PROBE_BYTES + SELF_PROBE_BYTES))
            .unwrap_or(by_count);
        by_count
            .min(by_capacity)
            .max(1.0 / self.interval.as_secs_f64())
    }

    pub fn to_result(&self) -> RpmParams {
        RpmParams {
            mad: self.mad,
            interval_s: self.interval.as_secs_f64(),
            trimmed_mean_percent: self.trimmed_mean_percent,
            sdt: self.sdt,
            initial_connections: self.inp,
            connections_per_interval: self.inc,
            max_connections: self.mnp,
            max_probes_per_second: self.mps,
            probe_capacity_share: self.ptc,
            time_limit_s: self.time_limit.as_secs_f64(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_the_drafts() {
        let p = Params::default();
        assert_eq!((p.mad, p.inp, p.inc, p.mnp), (4, 1, 1, 16));
        assert_eq!(p.interval, Duration::from_secs(5));
        assert_eq!(
            (p.trimmed_mean_percent, p.sdt, p.mps, p.ptc),
            (95.0, 0.05, 100.0, 0.05)
        );
        assert!(p.validate().is_ok());
    }

    #[test]
    fn probe_rate_limits() {
        let p = Params::default();
        // Unknown capacity or a fast link: MPS = 100 probes/s = 50 pairs.
        assert_eq!(p.probe_pairs_per_s(None), 50.0);
        assert_eq!(p.probe_pairs_per_s(Some(1e9)), 50.0);
        // 20 Mbit/s: 5 % = 125 000 B/s over 6000 B per pair = 20.8 pairs/s.
        assert!((p.probe_pairs_per_s(Some(20e6)) - 125_000.0 / 6000.0).abs() < 1e-9);
        // 100 kbit/s: 0.1 pairs/s by capacity, but one pair per 5 s interval at least.
        assert_eq!(p.probe_pairs_per_s(Some(1e5)), 0.2);
    }
}
