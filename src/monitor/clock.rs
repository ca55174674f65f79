//! A measured clock (docs/crypto.md, "Does the row check itself?"): how many dependent
//! one-cycle integer operations this CPU runs per microsecond. Every core routerbench targets
//! (x86, ARMv7/v8, MIPS 24K/74K/1004K) adds and xors two registers in one cycle with the result
//! ready for the next, so a chain of them runs at one per cycle: the rate is the clock in MHz.
//! Two loops with 32 and 96 such operations per iteration are timed; their difference cancels
//! the loop's own overhead (the counter, the branch, a delay slot), so the same code calibrates
//! itself on every instruction set. The best of a few short rounds is kept: preemption only
//! ever makes a round slower. Like sbc-bench's `mhz`, it measures what the core does, not what
//! cpufreq says.

use std::hint::black_box;
use std::time::{Duration, Instant};

/// `x = (x + a) ^ b`, `n` times: a dependent chain the compiler cannot shorten (add and xor do
/// not combine), two one-cycle operations per step.
macro_rules! chain {
    ($x:ident, $a:ident, $b:ident; $($n:tt)*) => {
        $( let _ = $n; $x = $x.wrapping_add($a) ^ $b; )*
    };
}

/// `iters` iterations of 16 steps (32 operations).
#[inline(never)]
fn short_loop(iters: u32, a: u32, b: u32) -> u32 {
    let mut x = a;
    for _ in 0..iters {
        chain!(x, a, b; 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15);
    }
    x
}

/// `iters` iterations of 48 steps (96 operations).
#[inline(never)]
fn long_loop(iters: u32, a: u32, b: u32) -> u32 {
    let mut x = a;
    for _ in 0..iters {
        chain!(x, a, b; 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15
            16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31
            32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47);
    }
    x
}

const SHORT_OPS: f64 = 32.0;
const LONG_OPS: f64 = 96.0;

fn time(f: fn(u32, u32, u32) -> u32, iters: u32) -> Duration {
    let t = Instant::now();
    black_box(f(
        black_box(iters),
        black_box(0x9e37_79b9),
        black_box(0x7f4a_7c15),
    ));
    t.elapsed()
}

/// Why there is no figure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClockError {
    /// The long loop was not slower than the short one by a clear margin: the timer is too
    /// coarse or the rounds too disturbed to calibrate.
    NotCalibrated,
}

impl std::fmt::Display for ClockError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ClockError::NotCalibrated => write!(
                f,
                "the measured clock could not be calibrated (the longer loop was not clearly \
                 slower than the shorter one: a coarse timer or a disturbed CPU)"
            ),
        }
    }
}

/// The clock from two loop timings: `extra_ops` more operations took `extra` longer.
pub fn mhz_from(short: Duration, long: Duration, iters: u32) -> Result<f64, ClockError> {
    let extra = long.as_secs_f64() - short.as_secs_f64();
    // The long loop runs 3x the operations: anything under 1.5x the short one is noise.
    if extra <= 0.0 || long.as_secs_f64() < 1.5 * short.as_secs_f64() {
        return Err(ClockError::NotCalibrated);
    }
    Ok((LONG_OPS - SHORT_OPS) * f64::from(iters) / extra / 1e6)
}

/// Measures the clock of the CPU this thread runs on, in about `budget`: the iteration count
/// grows until the short loop takes a quarter of a millisecond, then rounds alternate the two
/// loops and the fastest of each counts. Short rounds fit between preemptions: on a 2-CPU VM
/// with 10 runnable tasks, 2 ms rounds read 545-4010 MHz, quarter-millisecond ones 3950-4015.
pub fn measure(budget: Duration) -> Result<f64, ClockError> {
    let mut iters: u32 = 1024;
    while time(short_loop, iters) < Duration::from_micros(250) {
        match iters.checked_mul(2) {
            Some(n) if n <= 1 << 30 => iters = n,
            _ => return Err(ClockError::NotCalibrated),
        }
    }
    let start = Instant::now();
    let (mut short, mut long) = (Duration::MAX, Duration::MAX);
    for round in 0..1000 {
        short = short.min(time(short_loop, iters));
        long = long.min(time(long_loop, iters));
        if round >= 2 && start.elapsed() >= budget {
            break;
        }
    }
    mhz_from(short, long, iters)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_difference_of_two_loops_is_the_clock() {
        // 64 extra operations per iteration, 1e6 iterations, 64 ms more: 1000 MHz.
        let mhz = mhz_from(
            Duration::from_millis(40),
            Duration::from_millis(104),
            1_000_000,
        )
        .unwrap();
        assert!((mhz - 1000.0).abs() < 1e-6, "{mhz}");
        assert_eq!(
            mhz_from(Duration::from_millis(40), Duration::from_millis(41), 1000),
            Err(ClockError::NotCalibrated)
        );
        assert_eq!(
            mhz_from(Duration::from_millis(40), Duration::from_millis(10), 1000),
            Err(ClockError::NotCalibrated)
        );
    }

    #[test]
    fn this_cpu_has_a_plausible_clock() {
        // Between a 50 MHz and a 10 GHz core: the loops run and the arithmetic holds
        // (a disturbed round only lowers the figure, never raises it past the top).
        match measure(Duration::from_millis(60)) {
            Ok(mhz) => assert!((50.0..10_000.0).contains(&mhz), "{mhz} MHz"),
            Err(e) => assert_eq!(e, ClockError::NotCalibrated),
        }
    }
}
