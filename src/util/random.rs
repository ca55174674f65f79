//! The one random source: the kernel's `getrandom(2)` through the `getrandom` crate (the same
//! crate rsa's `OsRng` draws from). iperf3 cookies, test ids, probe tokens and payload seeds
//! come from here. The RSA signing of the crypto suite and iperf3's authentication keep passing
//! rsa's `rand_core::OsRng`, because rsa's API wants an `RngCore`; it is this same source.
//!
//! If the kernel refuses (a seccomp filter, a kernel older than 3.17 without /dev/urandom),
//! the bytes come from a xorshift seeded with the time, the PID and a counter: unique per call,
//! not secret, which is all the callers need.

use portable_atomic::AtomicU64;
use std::sync::atomic::Ordering;

/// Fills `buf` with random bytes (see the module note for the fallback).
pub fn fill(buf: &mut [u8]) {
    if getrandom::getrandom(buf).is_err() {
        fallback(buf);
    }
}

/// A random u64 that differs between calls and processes.
pub fn u64() -> u64 {
    let mut b = [0u8; 8];
    fill(&mut b);
    u64::from_le_bytes(b)
}

fn fallback(buf: &mut [u8]) {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0x9e37_79b9);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let mut x = now ^ ((std::process::id() as u64) << 32) ^ n.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    for b in buf.iter_mut() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        *b = x as u8;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_differ() {
        assert_ne!(u64(), u64());
        let (mut a, mut b) = ([0u8; 32], [0u8; 32]);
        fill(&mut a);
        fill(&mut b);
        assert_ne!(a, b);
    }

    #[test]
    fn fallback_differs_between_calls() {
        let (mut a, mut b) = ([0u8; 16], [0u8; 16]);
        fallback(&mut a);
        fallback(&mut b);
        assert_ne!(a, b);
    }
}
