//! `--server-bitrate-limit RATE[/SECS]` as iperf3 has it: the server samples a test's total
//! bytes (both directions) once a second and ends the test (IETOTALRATE) when the average over
//! the last SECS seconds (or over the whole test without SECS) goes above RATE.

use std::collections::VecDeque;
use std::time::Duration;

/// The check for one test.
#[derive(Debug)]
pub struct RateCheck {
    limit: Option<(u64, u32)>,
    /// (second, total bytes at its end), newest last.
    samples: VecDeque<(u64, u64)>,
}

impl RateCheck {
    pub fn new(limit: Option<(u64, u32)>) -> Self {
        RateCheck {
            limit,
            samples: VecDeque::from([(0, 0)]),
        }
    }

    /// Feeds the running total; an error (the log line) once the average is over the limit.
    /// Called every tick; acts once per whole second of the test.
    pub fn sample(&mut self, elapsed: Duration, total_bytes: u64) -> Result<(), String> {
        let Some((limit, window)) = self.limit else {
            return Ok(());
        };
        let sec = elapsed.as_secs();
        if self.samples.back().is_some_and(|&(s, _)| s >= sec) {
            return Ok(());
        }
        self.samples.push_back((sec, total_bytes));
        if window > 0 {
            while self
                .samples
                .front()
                .is_some_and(|&(s, _)| s + (window as u64) < sec)
            {
                self.samples.pop_front();
            }
        }
        let (Some(&(s0, b0)), Some(&(s1, b1))) = (self.samples.front(), self.samples.back()) else {
            return Ok(());
        };
        if s1 <= s0 {
            return Ok(());
        }
        let rate = (b1 - b0) as f64 * 8.0 / (s1 - s0) as f64;
        if rate > limit as f64 {
            return Err(format!(
                "average {:.1} Mbit/s over {} s is above the server's --server-bitrate-limit {:.1} Mbit/s",
                rate / 1e6,
                s1 - s0,
                limit as f64 / 1e6
            ));
        }
        Ok(())
    }
}

/// Parses `RATE[/SECS]`, RATE with iperf3's K/M/G suffixes (powers of 1000 for rates).
pub fn parse_limit(s: &str) -> Result<(u64, u32), String> {
    let (rate, secs) = match s.split_once('/') {
        Some((r, w)) => (
            r,
            w.parse::<u32>()
                .map_err(|_| format!("--server-bitrate-limit {s}: SECS must be a whole number"))?,
        ),
        None => (s, 0),
    };
    let (num, mult) = match rate.chars().last() {
        Some('k' | 'K') => (&rate[..rate.len() - 1], 1e3),
        Some('m' | 'M') => (&rate[..rate.len() - 1], 1e6),
        Some('g' | 'G') => (&rate[..rate.len() - 1], 1e9),
        Some('t' | 'T') => (&rate[..rate.len() - 1], 1e12),
        _ => (rate, 1.0),
    };
    let v: f64 = num.parse().map_err(|_| {
        format!("--server-bitrate-limit {s}: expected RATE[/SECS], e.g. 100M or 1G/5")
    })?;
    if !(v.is_finite() && v > 0.0) {
        return Err(format!("--server-bitrate-limit {s}: RATE must be above 0"));
    }
    Ok(((v * mult) as u64, secs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_iperf3_syntax() {
        assert_eq!(parse_limit("100M"), Ok((100_000_000, 0)));
        assert_eq!(parse_limit("1.5G/5"), Ok((1_500_000_000, 5)));
        assert_eq!(parse_limit("800k"), Ok((800_000, 0)));
        assert!(parse_limit("fast").is_err());
        assert!(parse_limit("10M/x").is_err());
        assert!(parse_limit("0").is_err());
    }

    #[test]
    fn whole_test_average() {
        let mut c = RateCheck::new(Some((8_000_000, 0))); // 1 MB/s
        let s = Duration::from_secs;
        assert!(c.sample(s(1), 900_000).is_ok());
        assert!(c.sample(s(2), 1_900_000).is_ok());
        // A burst of 1.5 MB in one second keeps the whole-test average at 1.13 MB/s: over.
        assert!(c.sample(s(3), 3_400_000).unwrap_err().contains("over 3 s"));
    }

    #[test]
    fn windowed_average_forgets_old_seconds() {
        let mut c = RateCheck::new(Some((8_000_000, 2)));
        let s = Duration::from_secs;
        assert!(c.sample(s(1), 500_000).is_ok());
        assert!(c.sample(s(2), 1_000_000).is_ok());
        assert!(c.sample(s(2), 9_000_000).is_ok(), "once per second");
        assert!(c.sample(s(3), 1_500_000).is_ok());
        assert!(c.sample(s(4), 4_000_000).is_err(), "3 MB in the last 2 s");
        assert!(RateCheck::new(None).sample(s(9), u64::MAX).is_ok());
    }
}
