//! During a test through the VM router: the host-side taps' queues (sampled over rtnetlink in
//! the LAN and WAN namespaces, every 0.1 s), a watchdog that ends the test early when qemu dies,
//! and the one-line verdict (CPU saturated? where did the queue build?).

use crate::lab::netns;
use crate::monitor::netlink::QdiscDumper;
use crate::results::lab::{RouterVerdict, TapQueue};
use crate::results::monitor::MonitorResult;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Samples one tap's root qdisc until stopped (at most `max`).
pub struct TapSampler {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<crate::lab::Result<TapQueue>>>,
}

impl TapSampler {
    pub fn start(ns: &str, dev: &str, direction: &str, max: Duration) -> crate::lab::Result<Self> {
        let stop = Arc::new(AtomicBool::new(false));
        let (s, d, dir, n) = (
            stop.clone(),
            dev.to_string(),
            direction.to_string(),
            ns.to_string(),
        );
        let handle = netns::spawn_in(ns, move || {
            let ifindex = crate::lab::vm::nlconf::ifindex(&d)?;
            let mut dumper = QdiscDumper::open()?;
            let mut backlog = Vec::new();
            let (mut first, mut last, mut kind) = (None, 0u32, String::new());
            let t0 = Instant::now();
            while !s.load(Ordering::Relaxed) && t0.elapsed() < max && backlog.len() < 100_000 {
                if let Ok(all) = dumper.dump() {
                    if let Some(q) = all.iter().find(|q| q.ifindex == ifindex && q.is_root()) {
                        backlog.push(u64::from(q.backlog_bytes));
                        first.get_or_insert(q.drops);
                        last = q.drops;
                        kind.clone_from(&q.kind);
                    }
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            let mut sorted = backlog.clone();
            sorted.sort_unstable();
            let p95 = sorted
                .get((sorted.len() * 95 / 100).min(sorted.len().saturating_sub(1)))
                .copied()
                .unwrap_or(0);
            Ok(TapQueue {
                ns: n,
                dev: d,
                direction: dir,
                qdisc: kind,
                samples: backlog.len() as u32,
                backlog_max_bytes: sorted.last().copied().unwrap_or(0),
                backlog_p95_bytes: p95,
                drops: u64::from(last.wrapping_sub(first.unwrap_or(last))),
            })
        })?;
        Ok(Self {
            stop,
            handle: Some(handle),
        })
    }

    pub fn finish(mut self) -> Option<TapQueue> {
        self.stop.store(true, Ordering::Relaxed);
        self.handle.take().and_then(|h| netns::join(h).ok())
    }
}

impl Drop for TapSampler {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// Watches qemu; when it dies, raises `interrupt` (the test then ends, keeping what it has).
pub struct Watchdog {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<Option<f64>>>,
}

impl Watchdog {
    pub fn start(pid: i32, interrupt: Arc<AtomicBool>, max: Duration) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let handle = std::thread::Builder::new()
            .name("vm-watchdog".into())
            .spawn(move || {
                let t0 = Instant::now();
                while !s.load(Ordering::Relaxed) && t0.elapsed() < max {
                    if !super::qemu::qemu_alive(pid) {
                        interrupt.store(true, Ordering::Relaxed);
                        return Some(t0.elapsed().as_secs_f64());
                    }
                    std::thread::sleep(Duration::from_millis(200));
                }
                None
            })
            .ok();
        Self { stop, handle }
    }

    /// Seconds after the start at which qemu died, if it did.
    pub fn finish(mut self) -> Option<f64> {
        self.stop.store(true, Ordering::Relaxed);
        self.handle.take().and_then(|h| h.join().ok()).flatten()
    }
}

/// A queue counts as built when it held at least this many bytes (about 10 full frames).
const BUILT_BYTES: u64 = 15_000;

/// The verdict from the router's agent samples and the taps.
pub fn verdict(
    monitor: Option<&MonitorResult>,
    taps: &[TapQueue],
    died_at: Option<f64>,
) -> RouterVerdict {
    let load = monitor.and_then(|m| m.summary.under_load.as_ref());
    let busiest = load.and_then(|l| l.busiest_cpu_p95_pct);
    let cpu_saturated = busiest.map(|b| b >= 95.0);
    let router_q =
        load.and_then(|l| Some((l.fullest_queue_dev.clone()?, l.fullest_queue_peak_bytes?)));
    let tap_q = taps
        .iter()
        .max_by_key(|t| t.backlog_max_bytes)
        .map(|t| (t.dev.clone(), t.backlog_max_bytes));
    let r_built = router_q.as_ref().is_some_and(|q| q.1 >= BUILT_BYTES);
    let t_built = tap_q.as_ref().is_some_and(|q| q.1 >= BUILT_BYTES);
    let queue_at = match (r_built, t_built) {
        (true, true) => "both",
        (true, false) => "router qdisc",
        (false, true) => "tap in front of the router",
        (false, false) => "none",
    };
    let cpu = match (cpu_saturated, busiest) {
        (Some(true), Some(b)) => format!("router CPU saturated (busiest core {b:.0} % at p95)"),
        (Some(false), Some(b)) => {
            format!("router CPU not saturated (busiest core {b:.0} % at p95)")
        }
        _ => "router CPU unknown (no agent samples)".to_string(),
    };
    let kb = |b: u64| format!("{:.0} KB", b as f64 / 1000.0);
    let queue = match queue_at {
        "router qdisc" | "both" if router_q.is_some() => {
            let (d, b) = router_q.clone().unwrap_or_default();
            let mut s = format!(
                "the queue built in the router's qdisc on {d} (peak {})",
                kb(b)
            );
            if queue_at == "both" {
                let (td, tb) = tap_q.clone().unwrap_or_default();
                s.push_str(&format!(
                    " and in the tap {td} in front of it (peak {})",
                    kb(tb)
                ));
            }
            s
        }
        "tap in front of the router" => {
            let (td, tb) = tap_q.clone().unwrap_or_default();
            format!(
                "the queue built in the tap {td} in front of the router (peak {}), not in its qdisc",
                kb(tb)
            )
        }
        _ => "no standing queue".to_string(),
    };
    let mut line = format!("{cpu}; {queue}");
    if let Some(t) = died_at {
        line = format!("the VM router died {t:.1} s into the test; {line}");
    }
    RouterVerdict {
        cpu_saturated,
        busiest_cpu_p95_pct: busiest,
        softirq_max_pct: monitor.and_then(|m| m.summary.softirq_max_pct),
        time_squeeze_total: monitor.and_then(|m| m.summary.softnet_time_squeeze_total),
        queue_at: queue_at.into(),
        router_queue_dev: router_q.as_ref().map(|q| q.0.clone()),
        router_queue_peak_bytes: router_q.map(|q| q.1),
        tap_queue_dev: tap_q.as_ref().map(|q| q.0.clone()),
        tap_queue_peak_bytes: tap_q.map(|q| q.1),
        vm_died_at_s: died_at,
        line,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::monitor::LoadSummary;

    fn mon(busy: f64, dev: &str, peak: u64) -> MonitorResult {
        let mut m = MonitorResult::default();
        m.summary.under_load = Some(LoadSummary {
            busiest_cpu_p95_pct: Some(busy),
            fullest_queue_dev: Some(dev.into()),
            fullest_queue_peak_bytes: Some(peak),
            ..Default::default()
        });
        m
    }

    fn tap(dev: &str, peak: u64) -> TapQueue {
        TapQueue {
            dev: dev.into(),
            backlog_max_bytes: peak,
            ..Default::default()
        }
    }

    #[test]
    fn saturated_router_with_its_queue_in_front() {
        let v = verdict(
            Some(&mon(100.0, "eth0", 3_000)),
            &[tap("lan0", 140_000), tap("wan0", 0)],
            None,
        );
        assert_eq!(v.cpu_saturated, Some(true));
        assert_eq!(v.queue_at, "tap in front of the router");
        assert!(v.line.contains("lan0"), "{}", v.line);
        assert!(v.line.starts_with("router CPU saturated"), "{}", v.line);
    }

    #[test]
    fn shaped_router_queues_in_its_qdisc() {
        let v = verdict(Some(&mon(40.0, "eth1", 90_000)), &[tap("lan0", 0)], None);
        assert_eq!(v.cpu_saturated, Some(false));
        assert_eq!(v.queue_at, "router qdisc");
        assert!(v.line.contains("eth1"), "{}", v.line);
        let none = verdict(None, &[], Some(3.2));
        assert_eq!(none.cpu_saturated, None);
        assert_eq!(none.queue_at, "none");
        assert!(
            none.line.starts_with("the VM router died 3.2 s"),
            "{}",
            none.line
        );
    }
}
