//! The timing loop of `openssl speed` (docs/protocols/openssl-speed.md §6.3): run an operation for a fixed
//! wall-clock duration, checking a monotonic clock between adaptively sized batches instead of
//! SIGALRM, and divide the count by the thread's user CPU time (`getrusage(RUSAGE_THREAD)`), or by
//! wall time with `--elapsed` / `--multi`. Threads of `--multi` run together; rates are summed.

use std::time::{Duration, Instant};

use super::SuiteConfig;
use super::engine::{Engine, EngineError};
use crate::results::crypto::{Algorithm, TimeBase};

/// A batch is grown until one takes at least this long, so clock reads cost nothing.
const BATCH_TARGET: Duration = Duration::from_micros(500);
/// Below this much user CPU time the rusage clock is too coarse; wall time is used instead.
const MIN_CPU_SECS: f64 = 0.001;

/// One run's outcome.
#[derive(Debug, Clone, Copy)]
pub struct Measured {
    /// Operations per second (summed over threads).
    pub per_sec: f64,
    /// True if a thread used less than 1 ms of CPU and its rate fell back to wall time.
    pub coarse_clock: bool,
}

/// The calling thread's user CPU time in seconds.
pub fn thread_user_cpu() -> f64 {
    use nix::sys::resource::{UsageWho, getrusage};
    use nix::sys::time::TimeValLike;
    getrusage(UsageWho::RUSAGE_THREAD)
        .map(|ru| ru.user_time().num_microseconds() as f64 / 1e6)
        .unwrap_or(0.0)
}

/// Raw counts of one thread's run.
#[derive(Debug, Clone, Copy)]
struct Sample {
    ops: u64,
    user_secs: f64,
    wall_secs: f64,
}

/// Calls `batch(n)` (which performs `n` operations) until `seconds` of wall time have passed,
/// or until `stop` is set (checked after every batch, a batch being ~0.5 ms or one operation):
/// then the run is `EngineError::Interrupted`, so Ctrl-C ends even a 10 s RSA run at once.
fn run_for(
    seconds: f64,
    stop: Option<&std::sync::atomic::AtomicBool>,
    mut batch: impl FnMut(u64) -> Result<(), EngineError>,
) -> Result<Sample, EngineError> {
    let deadline = Duration::try_from_secs_f64(seconds).unwrap_or(Duration::from_secs(3600));
    let cpu0 = thread_user_cpu();
    let t0 = Instant::now();
    let mut ops = 0u64;
    let mut n = 1u64;
    loop {
        let tb = Instant::now();
        batch(n)?;
        ops += n;
        if stop.is_some_and(|s| s.load(std::sync::atomic::Ordering::Relaxed)) {
            return Err(EngineError::Interrupted);
        }
        let now = Instant::now();
        if now.duration_since(t0) >= deadline {
            break;
        }
        if now.duration_since(tb) < BATCH_TARGET && n < (1 << 24) {
            n *= 2;
        }
    }
    let wall_secs = t0.elapsed().as_secs_f64();
    let user_secs = thread_user_cpu() - cpu0;
    Ok(Sample {
        ops,
        user_secs,
        wall_secs,
    })
}

fn rate(s: Sample, base: TimeBase) -> (f64, bool) {
    match base {
        TimeBase::UserCpu if s.user_secs >= MIN_CPU_SECS => (s.ops as f64 / s.user_secs, false),
        TimeBase::UserCpu => (s.ops as f64 / s.wall_secs.max(1e-9), true),
        _ => (s.ops as f64 / s.wall_secs.max(1e-9), false),
    }
}

/// Runs `work` on `threads` threads at once and sums their rates.
fn on_threads(
    threads: u32,
    base: TimeBase,
    work: impl Fn() -> Result<Sample, EngineError> + Sync,
) -> Result<Measured, EngineError> {
    if threads <= 1 {
        let (per_sec, coarse_clock) = rate(work()?, base);
        return Ok(Measured {
            per_sec,
            coarse_clock,
        });
    }
    let results: Vec<Result<Sample, EngineError>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|_| std::thread::Builder::new().spawn_scoped(scope, &work))
            .collect();
        handles
            .into_iter()
            .map(|h| match h {
                Ok(h) => h.join().unwrap_or_else(|_| {
                    Err(EngineError::Failed(
                        "a measuring thread panicked; please report this as a bug".into(),
                    ))
                }),
                Err(e) => Err(EngineError::Failed(format!(
                    "cannot start a measuring thread ({e}); use a smaller --multi"
                ))),
            })
            .collect()
    });
    let mut total = Measured {
        per_sec: 0.0,
        coarse_clock: false,
    };
    for r in results {
        let (per_sec, coarse) = rate(r?, base);
        total.per_sec += per_sec;
        total.coarse_clock |= coarse;
    }
    Ok(total)
}

/// Hash or cipher operations per second on `size`-byte blocks.
pub fn measure_bulk(
    engine: &dyn Engine,
    alg: Algorithm,
    size: usize,
    cfg: &SuiteConfig,
    base: TimeBase,
) -> Result<Measured, EngineError> {
    // Probe once on this thread so an unavailable algorithm is reported before threads start.
    drop(engine.bulk(alg)?);
    on_threads(cfg.threads, base, || {
        let mut op = engine.bulk(alg)?;
        run_for(cfg.seconds_bulk, cfg.interrupt.as_deref(), |n| {
            op.run(size, n)
        })
    })
}

/// Sign/s and verify/s of RSA or DSA (sign first, then verify, like openssl speed).
pub fn measure_pkey(
    engine: &dyn Engine,
    alg: Algorithm,
    cfg: &SuiteConfig,
    base: TimeBase,
) -> Result<(Measured, Measured), EngineError> {
    let sign = on_threads(cfg.threads, base, || {
        let mut op = engine.signer(alg)?;
        run_for(cfg.seconds_pkey, cfg.interrupt.as_deref(), |n| op.sign(n))
    })?;
    let verify = on_threads(cfg.threads, base, || {
        let mut op = engine.signer(alg)?;
        run_for(cfg.seconds_pkey, cfg.interrupt.as_deref(), |n| op.verify(n))
    })?;
    Ok((sign, verify))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_for_stops_after_the_duration_and_counts_ops() {
        let mut calls = 0u64;
        let s = run_for(0.02, None, |n| {
            calls += n;
            std::hint::black_box(calls);
            Ok(())
        })
        .unwrap();
        assert_eq!(s.ops, calls);
        assert!(s.wall_secs >= 0.02 && s.wall_secs < 2.0, "{s:?}");
    }

    #[test]
    fn errors_stop_the_loop() {
        let r = run_for(10.0, None, |_| Err(EngineError::Failed("boom".into())));
        assert!(matches!(r, Err(EngineError::Failed(m)) if m == "boom"));
    }

    #[test]
    fn a_stop_ends_a_long_run_after_the_batch_in_progress() {
        let stop = std::sync::atomic::AtomicBool::new(false);
        let t = Instant::now();
        let mut batches = 0;
        let r = run_for(3600.0, Some(&stop), |_| {
            batches += 1;
            if batches == 3 {
                stop.store(true, std::sync::atomic::Ordering::Relaxed);
            }
            Ok(())
        });
        assert!(matches!(r, Err(EngineError::Interrupted)));
        assert_eq!(batches, 3);
        assert!(t.elapsed() < Duration::from_secs(60));
    }

    #[test]
    fn coarse_cpu_falls_back_to_wall_time() {
        let s = Sample {
            ops: 100,
            user_secs: 0.0,
            wall_secs: 0.5,
        };
        assert_eq!(rate(s, TimeBase::UserCpu), (200.0, true));
        let s = Sample {
            ops: 100,
            user_secs: 0.25,
            wall_secs: 0.5,
        };
        assert_eq!(rate(s, TimeBase::UserCpu), (400.0, false));
        assert_eq!(rate(s, TimeBase::Elapsed), (200.0, false));
    }

    #[test]
    fn user_cpu_advances_when_busy() {
        let t0 = thread_user_cpu();
        let start = Instant::now();
        let mut x = 0u64;
        while start.elapsed() < Duration::from_millis(50) {
            x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
        }
        assert!(thread_user_cpu() >= t0);
    }
}
