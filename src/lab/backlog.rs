//! The kernel's own view of the queue: the bottleneck qdiscs' backlog (bytes waiting in tbf /
//! htb) in the router namespace, as the router's monitor agent recorded it during a test
//! (`lab run` subscribes to an agent in the router namespace, the same path as `--monitor`).
//! backlog·8/rate is the queue delay a packet arriving at that moment will see, independent of
//! any probe.

use crate::results::monitor::MonitorResult;

/// One reading: Unix time (s) and the root qdisc's backlog in bytes per device.
#[derive(Debug, Clone, PartialEq)]
pub struct BacklogSample {
    pub unix_s: f64,
    pub up_bytes: Option<u64>,
    pub down_bytes: Option<u64>,
}

/// The backlog of `up_dev` and `down_dev` per monitor sample (the highest reading of each
/// interval; a device the sample leaves out held nothing). Empty without an absolute start.
pub fn from_monitor(m: &MonitorResult, up_dev: &str, down_dev: &str) -> Vec<BacklogSample> {
    let Some(start) = m.start_unix_s else {
        return Vec::new();
    };
    let of = |s: &crate::results::monitor::MonitorSample, dev: &str| {
        Some(
            s.queues
                .iter()
                .find(|q| q.dev == dev)
                .and_then(|q| q.backlog_bytes_max)
                .unwrap_or(0),
        )
    };
    m.samples
        .iter()
        .map(|s| BacklogSample {
            unix_s: start + s.t_s,
            up_bytes: of(s, up_dev),
            down_bytes: of(s, down_dev),
        })
        .collect()
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

    #[test]
    fn from_monitor_samples() {
        use crate::results::monitor::{MonitorSample, QueueSample};
        let m = MonitorResult {
            start_unix_s: Some(100.0),
            samples: vec![
                MonitorSample {
                    t_s: 0.1,
                    ..Default::default()
                },
                MonitorSample {
                    t_s: 0.2,
                    queues: vec![QueueSample {
                        dev: "rtr-wan".into(),
                        backlog_bytes_max: Some(64_000),
                        ..Default::default()
                    }],
                    ..Default::default()
                },
            ],
            ..Default::default()
        };
        let b = from_monitor(&m, "rtr-wan", "rtr-lan");
        assert_eq!(b.len(), 2);
        assert_eq!(
            (b[0].up_bytes, b[1].up_bytes, b[1].down_bytes),
            (Some(0), Some(64_000), Some(0))
        );
        assert!((b[1].unix_s - 100.2).abs() < 1e-9);
        assert!(from_monitor(&MonitorResult::default(), "a", "b").is_empty());
    }
}
