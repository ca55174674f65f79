//! CPU utilisation as iperf3 reports it (`cpu_util_total/user/system`): CPU seconds over wall
//! seconds, in percent of one core. We sum `getrusage(RUSAGE_THREAD)` over the threads that
//! belong to one test, so concurrent tests on one server, and the two ends of a loopback test
//! in one process, are accounted separately (iperf3 uses RUSAGE_SELF: one test per process).

use crate::results::throughput::CpuUtil;
use nix::sys::resource::{UsageWho, getrusage};
use nix::sys::time::TimeVal;
use std::time::Instant;

/// User and system CPU seconds consumed by the calling thread so far.
pub fn thread_cpu() -> (f64, f64) {
    rusage(UsageWho::RUSAGE_THREAD)
}

/// User and system CPU seconds consumed by the whole process so far.
pub fn process_cpu() -> (f64, f64) {
    rusage(UsageWho::RUSAGE_SELF)
}

fn rusage(who: UsageWho) -> (f64, f64) {
    let Ok(ru) = getrusage(who) else {
        return (0.0, 0.0);
    };
    let secs = |t: TimeVal| t.tv_sec() as f64 + t.tv_usec() as f64 * 1e-6;
    (secs(ru.user_time()), secs(ru.system_time()))
}

/// Measures the calling thread's CPU from creation to [`ThreadCpu::stop`].
#[derive(Debug, Clone, Copy)]
pub struct ThreadCpu {
    start: (f64, f64),
}

impl ThreadCpu {
    pub fn start() -> Self {
        Self {
            start: thread_cpu(),
        }
    }

    /// (user, system) seconds used by this thread since `start`. Call on the same thread.
    pub fn stop(&self) -> (f64, f64) {
        let (u, s) = thread_cpu();
        ((u - self.start.0).max(0.0), (s - self.start.1).max(0.0))
    }
}

/// Accumulates CPU seconds of several threads over one wall-clock window.
#[derive(Debug, Clone, Copy)]
pub struct CpuWindow {
    wall_start: Instant,
    user: f64,
    system: f64,
}

impl Default for CpuWindow {
    fn default() -> Self {
        Self::new()
    }
}

impl CpuWindow {
    pub fn new() -> Self {
        Self {
            wall_start: Instant::now(),
            user: 0.0,
            system: 0.0,
        }
    }

    /// Adds one thread's (user, system) seconds.
    pub fn add(&mut self, (user, system): (f64, f64)) {
        self.user += user;
        self.system += system;
    }

    /// Percentages over the wall time since `new`.
    pub fn util(&self) -> CpuUtil {
        let wall = self.wall_start.elapsed().as_secs_f64().max(1e-6);
        CpuUtil {
            total: 100.0 * (self.user + self.system) / wall,
            user: 100.0 * self.user / wall,
            system: 100.0 * self.system / wall,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn busy_thread_shows_cpu() {
        let t = ThreadCpu::start();
        let mut w = CpuWindow::new();
        let mut x = 0u64;
        let until = Instant::now() + std::time::Duration::from_millis(60);
        while Instant::now() < until {
            x = x.wrapping_mul(31).wrapping_add(7);
        }
        std::hint::black_box(x);
        w.add(t.stop());
        let u = w.util();
        assert!(u.total > 10.0 && u.total <= 101.0, "{u:?}");
        assert!((u.total - u.user - u.system).abs() < 1e-9);
    }
}
