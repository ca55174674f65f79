//! Slow guessing: after a wrong secret (routerbench `--token`, the agent's token, an iperf3
//! authtoken) the client's address must wait before its next try, and the wait doubles with
//! each failure (`base`, 2·`base`, 4·`base` … up to `max`). A try during the wait is refused at
//! once, without looking at the secret, so a guesser gets one guess per wait whatever its rate.
//! A success clears the address; an address quiet for `2·max` is forgotten.
//!
//! The table is bounded: beyond [`MAX_HOSTS`] addresses, new ones share a single entry, so a
//! guesser rotating through many addresses (an IPv6 prefix) is slowed as one.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Addresses with a back-off of their own at most.
pub const MAX_HOSTS: usize = 4096;

#[derive(Debug, Clone, Copy)]
struct Entry {
    failures: u32,
    until: Instant,
    last: Instant,
}

/// Per-address failure back-off for one secret.
#[derive(Debug)]
pub struct Backoff {
    base: Duration,
    max: Duration,
    st: Mutex<HashMap<Option<IpAddr>, Entry>>,
}

impl Default for Backoff {
    /// 1 s after the first failure, doubling up to 60 s.
    fn default() -> Self {
        Backoff::new(Duration::from_secs(1), Duration::from_secs(60))
    }
}

impl Backoff {
    pub fn new(base: Duration, max: Duration) -> Self {
        Backoff {
            base,
            max: max.max(base),
            st: Mutex::new(HashMap::new()),
        }
    }

    /// The table key of `ip`: its own entry, or the shared overflow entry (`None`).
    fn key(map: &mut HashMap<Option<IpAddr>, Entry>, ip: IpAddr, max: Duration) -> Option<IpAddr> {
        let ip = Some(crate::net::addr::canonical_ip(ip));
        if map.contains_key(&ip) || map.len() < MAX_HOSTS {
            return ip;
        }
        let now = Instant::now();
        map.retain(|_, e| now.duration_since(e.last) < 2 * max);
        if map.len() < MAX_HOSTS { ip } else { None }
    }

    /// Before a secret from `ip` is checked: `Err(wait)` if `ip` must still wait that long.
    pub fn check(&self, ip: IpAddr) -> Result<(), Duration> {
        let Ok(mut map) = self.st.lock() else {
            return Ok(());
        };
        let key = Self::key(&mut map, ip, self.max);
        let now = Instant::now();
        match map.get(&key) {
            Some(e) if e.until > now => Err(e.until - now),
            _ => Ok(()),
        }
    }

    /// `ip` gave a wrong secret: the wait before its next try.
    pub fn failed(&self, ip: IpAddr) -> Duration {
        let Ok(mut map) = self.st.lock() else {
            return self.base;
        };
        let key = Self::key(&mut map, ip, self.max);
        let now = Instant::now();
        let e = map.entry(key).or_insert(Entry {
            failures: 0,
            until: now,
            last: now,
        });
        if now.duration_since(e.last) >= 2 * self.max {
            e.failures = 0;
        }
        e.failures = e.failures.saturating_add(1);
        let wait = self
            .base
            .saturating_mul(1u32 << (e.failures - 1).min(20))
            .min(self.max);
        e.until = now + wait;
        e.last = now;
        wait
    }

    /// `ip` gave the right secret: its failures are forgotten.
    pub fn succeeded(&self, ip: IpAddr) {
        if let Ok(mut map) = self.st.lock() {
            map.remove(&Some(crate::net::addr::canonical_ip(ip)));
        }
    }
}

/// The refusal text for a try during the wait.
pub fn wait_message(what: &str, wait: Duration) -> String {
    format!(
        "too many wrong {what}s from this address: next try in {:.1} s",
        wait.as_secs_f64()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_double_per_failure_and_a_success_clears() {
        let b = Backoff::new(Duration::from_millis(40), Duration::from_millis(100));
        let a: IpAddr = "10.0.0.1".parse().unwrap();
        let other: IpAddr = "10.0.0.2".parse().unwrap();
        assert!(b.check(a).is_ok());
        assert_eq!(b.failed(a), Duration::from_millis(40));
        assert!(b.check(a).is_err(), "must wait after a failure");
        assert!(b.check(other).is_ok(), "another address is not affected");
        let mapped: IpAddr = "::ffff:10.0.0.1".parse().unwrap();
        assert!(b.check(mapped).is_err(), "v4-mapped = IPv4");
        assert_eq!(b.failed(a), Duration::from_millis(80));
        assert_eq!(b.failed(a), Duration::from_millis(100), "capped");
        std::thread::sleep(Duration::from_millis(110));
        assert!(b.check(a).is_ok(), "the wait is over");
        b.failed(a);
        b.succeeded(a);
        assert!(b.check(a).is_ok());
        assert_eq!(
            b.failed(a),
            Duration::from_millis(40),
            "counting starts over"
        );
    }

    #[test]
    fn many_addresses_share_one_entry_beyond_the_bound() {
        let b = Backoff::new(Duration::from_secs(5), Duration::from_secs(60));
        for i in 0..MAX_HOSTS as u32 {
            b.failed(IpAddr::from((0x0a00_0000u32 + i).to_be_bytes()));
        }
        let late1: IpAddr = "11.0.0.1".parse().unwrap();
        let late2: IpAddr = "11.0.0.2".parse().unwrap();
        assert!(b.check(late1).is_ok());
        b.failed(late1);
        assert!(b.check(late2).is_err(), "the overflow entry is shared");
    }
}
