//! The kernel's own view of the queue: samples the bottleneck qdiscs' backlog (bytes waiting in
//! tbf / htb) in the router namespace while a test runs. backlog·8/rate is the queue delay a
//! packet arriving at that moment will see, independent of any probe.

use super::sys::run_tool;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

/// One reading: Unix time (s) and the root qdisc's backlog in bytes per device.
#[derive(Debug, Clone, PartialEq)]
pub struct BacklogSample {
    pub unix_s: f64,
    pub up_bytes: Option<u64>,
    pub down_bytes: Option<u64>,
}

/// At most this many samples (an hour at 10 Hz).
const MAX_SAMPLES: usize = 36_000;

/// A running backlog sampler.
pub struct BacklogSampler {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<Vec<BacklogSample>>>,
}

fn root_backlog(ns: &str, dev: &str) -> Option<u64> {
    let out = run_tool("tc", &["-n", ns, "-s", "-j", "qdisc", "show", "dev", dev]).ok()?;
    let q = crate::monitor::qdisc::parse_qdisc_json(dev, &out).ok()?;
    q.iter().find(|q| q.root).map(|q| q.backlog_bytes)
}

impl BacklogSampler {
    /// Starts sampling `up_dev` and `down_dev` in namespace `ns` every `interval`, for at most
    /// `max_duration`.
    pub fn start(
        ns: &str,
        up_dev: &str,
        down_dev: &str,
        interval: Duration,
        max_duration: Duration,
    ) -> std::io::Result<Self> {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let (ns, up, down) = (ns.to_string(), up_dev.to_string(), down_dev.to_string());
        let handle = std::thread::Builder::new()
            .name("rb-lab-backlog".into())
            .spawn(move || {
                let start = std::time::Instant::now();
                let mut v = Vec::new();
                while !flag.load(Ordering::Relaxed)
                    && start.elapsed() < max_duration
                    && v.len() < MAX_SAMPLES
                {
                    let next = std::time::Instant::now() + interval;
                    v.push(BacklogSample {
                        unix_s: crate::util::time::unix_now_f64(),
                        up_bytes: root_backlog(&ns, &up),
                        down_bytes: root_backlog(&ns, &down),
                    });
                    std::thread::sleep(next.saturating_duration_since(std::time::Instant::now()));
                }
                v
            })?;
        Ok(Self {
            stop,
            handle: Some(handle),
        })
    }

    /// Stops and returns the samples.
    pub fn stop(mut self) -> Vec<BacklogSample> {
        self.stop.store(true, Ordering::Relaxed);
        self.handle
            .take()
            .and_then(|h| h.join().ok())
            .unwrap_or_default()
    }
}

impl Drop for BacklogSampler {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// Queue delays (ms) from backlog samples in `[from, to)` Unix seconds, for one direction.
pub fn delays_ms(
    samples: &[BacklogSample],
    from: f64,
    to: f64,
    up: bool,
    rate_bps: u64,
) -> Vec<f64> {
    if rate_bps == 0 {
        return Vec::new();
    }
    samples
        .iter()
        .filter(|s| s.unix_s >= from && s.unix_s < to)
        .filter_map(|s| if up { s.up_bytes } else { s.down_bytes })
        .map(|b| b as f64 * 8.0 / rate_bps as f64 * 1000.0)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_and_conversion() {
        let s = |t: f64, u: u64| BacklogSample {
            unix_s: t,
            up_bytes: Some(u),
            down_bytes: None,
        };
        let v = [s(0.5, 1000), s(1.0, 64_000), s(1.5, 32_000), s(2.0, 0)];
        // 64000 B at 20 Mbit/s = 25.6 ms; the window is half-open.
        assert_eq!(delays_ms(&v, 1.0, 2.0, true, 20_000_000), vec![25.6, 12.8]);
        assert!(delays_ms(&v, 1.0, 2.0, false, 20_000_000).is_empty());
        assert!(delays_ms(&v, 0.0, 9.0, true, 0).is_empty());
    }
}
