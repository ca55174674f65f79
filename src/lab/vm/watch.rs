//! During a test through the VM router: the host-side taps' queues (sampled over rtnetlink in
//! the LAN and WAN namespaces, every 0.1 s), a watchdog that ends the test early when qemu dies,
//! and the one-line verdict (CPU saturated? where did the queue build?).

use crate::lab::netns;
use crate::monitor::netlink::QdiscDumper;
use crate::results::lab::{QueuePlace, RouterVerdict, TapQueue, TunRing};
use crate::results::monitor::MonitorResult;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// One reading of a host-side tap: its root qdisc's counters and the device's own TX
/// counters (which the tun driver counts when qemu reads a packet, and on a full ring's drop).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct TapReading {
    pub qdisc_backlog_bytes: u64,
    /// Packets and bytes the qdisc handed to the tun device (cumulative; packets wrap in u32).
    pub qdisc_sent_packets: u32,
    pub qdisc_sent_bytes: u64,
    pub qdisc_drops: u32,
    /// From /proc/net/dev: packets and bytes qemu read, packets the full ring dropped.
    pub tx_packets: u64,
    pub tx_bytes: u64,
    pub tx_dropped: u64,
}

/// The TX counters of `dev` in a /proc/net/dev text: (tx_bytes, tx_packets, tx_drop).
pub fn proc_net_dev_tx(text: &str, dev: &str) -> Option<(u64, u64, u64)> {
    text.lines().skip(2).find_map(|l| {
        let (name, rest) = l.split_once(':')?;
        if name.trim() != dev {
            return None;
        }
        let f: Vec<u64> = rest
            .split_whitespace()
            .map(|x| x.parse().unwrap_or(0))
            .collect();
        Some((*f.get(8)?, *f.get(9)?, *f.get(11)?))
    })
}

/// What sat in the tun ring at each reading: packets the qdisc handed on since the first
/// reading, less the packets qemu read and the ring dropped since then (the ring is taken as
/// empty at the first reading, which is made before the load starts). Bytes use the qdisc's
/// mean packet size for the dropped ones. Capped at the ring's size when it is known.
pub fn ring_occupancy(readings: &[TapReading], capacity: Option<u64>) -> Vec<(u64, u64)> {
    let Some(first) = readings.first() else {
        return Vec::new();
    };
    readings
        .iter()
        .map(|r| {
            let sent = u64::from(r.qdisc_sent_packets.wrapping_sub(first.qdisc_sent_packets));
            let sent_bytes = r.qdisc_sent_bytes.saturating_sub(first.qdisc_sent_bytes);
            let read = r.tx_packets.saturating_sub(first.tx_packets);
            let read_bytes = r.tx_bytes.saturating_sub(first.tx_bytes);
            let dropped = r.tx_dropped.saturating_sub(first.tx_dropped);
            let mut pkts = sent.saturating_sub(read + dropped);
            if let Some(c) = capacity {
                pkts = pkts.min(c);
            }
            let mean = sent_bytes.checked_div(sent).unwrap_or(0);
            let bytes = sent_bytes.saturating_sub(read_bytes + dropped * mean);
            (pkts, bytes)
        })
        .collect()
}

fn p95(v: &[u64]) -> u64 {
    let mut s = v.to_vec();
    s.sort_unstable();
    s.get((s.len() * 95 / 100).min(s.len().saturating_sub(1)))
        .copied()
        .unwrap_or(0)
}

/// The tap's queues from its readings: the qdisc's backlog and drops, and the tun ring's.
pub fn tap_queue(
    ns: &str,
    dev: &str,
    direction: &str,
    qdisc: &str,
    readings: &[TapReading],
    ring_capacity: Option<u64>,
    have_dev_counters: bool,
) -> TapQueue {
    let backlog: Vec<u64> = readings.iter().map(|r| r.qdisc_backlog_bytes).collect();
    let drops = match (readings.first(), readings.last()) {
        (Some(a), Some(b)) => u64::from(b.qdisc_drops.wrapping_sub(a.qdisc_drops)),
        _ => 0,
    };
    let ring = (have_dev_counters && !readings.is_empty()).then(|| {
        let occ = ring_occupancy(readings, ring_capacity);
        let bytes: Vec<u64> = occ.iter().map(|o| o.1).collect();
        TunRing {
            capacity_packets: ring_capacity,
            max_packets: occ.iter().map(|o| o.0).max().unwrap_or(0),
            max_bytes: bytes.iter().copied().max().unwrap_or(0),
            p95_bytes: p95(&bytes),
            drops: match (readings.first(), readings.last()) {
                (Some(a), Some(b)) => b.tx_dropped.saturating_sub(a.tx_dropped),
                _ => 0,
            },
        }
    });
    TapQueue {
        ns: ns.into(),
        dev: dev.into(),
        direction: direction.into(),
        qdisc: qdisc.into(),
        samples: readings.len() as u32,
        backlog_max_bytes: backlog.iter().copied().max().unwrap_or(0),
        backlog_p95_bytes: p95(&backlog),
        drops,
        ring,
    }
}

/// The tap's `tx_queue_len` (the tun ring's size), read with iproute2's JSON.
fn tx_queue_len(ns: &str, dev: &str) -> Option<u64> {
    let out =
        crate::lab::sys::run_tool("ip", &["-n", ns, "-j", "link", "show", "dev", dev]).ok()?;
    let v: serde_json::Value = serde_json::from_slice(out.as_bytes()).ok()?;
    v.get(0)?.get("txqlen")?.as_u64()
}

/// Samples one tap's root qdisc and its TX counters every 0.1 s until stopped (at most `max`).
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
        let capacity = tx_queue_len(ns, dev);
        let handle = netns::spawn_in(ns, move || {
            let ifindex = crate::lab::vm::nlconf::ifindex(&d)?;
            let mut dumper = QdiscDumper::open()?;
            let mut readings = Vec::new();
            let mut kind = String::new();
            let mut have_dev = true;
            let t0 = Instant::now();
            while !s.load(Ordering::Relaxed) && t0.elapsed() < max && readings.len() < 100_000 {
                if let Ok(all) = dumper.dump() {
                    if let Some(q) = all.iter().find(|q| q.ifindex == ifindex && q.is_root()) {
                        // This thread's namespace: /proc/thread-self, not /proc/self.
                        let tx = std::fs::read_to_string("/proc/thread-self/net/dev")
                            .ok()
                            .and_then(|t| proc_net_dev_tx(&t, &d));
                        have_dev &= tx.is_some();
                        let (tx_bytes, tx_packets, tx_dropped) = tx.unwrap_or_default();
                        readings.push(TapReading {
                            qdisc_backlog_bytes: u64::from(q.backlog_bytes),
                            qdisc_sent_packets: q.packets,
                            qdisc_sent_bytes: q.bytes,
                            qdisc_drops: q.drops,
                            tx_packets,
                            tx_bytes,
                            tx_dropped,
                        });
                        kind.clone_from(&q.kind);
                    }
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            Ok(tap_queue(
                &n, &d, &dir, &kind, &readings, capacity, have_dev,
            ))
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

/// The places a queue built, largest first: the router's fullest qdisc (agent), and per tap
/// its tun ring and its qdisc, each kept when it held at least [`BUILT_BYTES`].
fn places(monitor: Option<&MonitorResult>, taps: &[TapQueue]) -> Vec<QueuePlace> {
    let mut v = Vec::new();
    let load = monitor.and_then(|m| m.summary.under_load.as_ref());
    if let Some((dev, peak)) =
        load.and_then(|l| Some((l.fullest_queue_dev.clone()?, l.fullest_queue_peak_bytes?)))
    {
        v.push(QueuePlace {
            place: "router qdisc".into(),
            dev,
            peak_bytes: peak,
        });
    }
    for t in taps {
        if let Some(r) = &t.ring {
            v.push(QueuePlace {
                place: "tun ring in front of the router".into(),
                dev: t.dev.clone(),
                peak_bytes: r.max_bytes,
            });
        }
        v.push(QueuePlace {
            place: "tap qdisc in front of the router".into(),
            dev: t.dev.clone(),
            peak_bytes: t.backlog_max_bytes,
        });
    }
    v.retain(|p| p.peak_bytes >= BUILT_BYTES);
    v.sort_by_key(|b| std::cmp::Reverse(b.peak_bytes));
    v
}

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
    let built = places(monitor, taps);
    let cpu = match (cpu_saturated, busiest) {
        (Some(true), Some(b)) => format!("router CPU saturated (busiest core {b:.0} % at p95)"),
        (Some(false), Some(b)) => {
            format!("router CPU not saturated (busiest core {b:.0} % at p95)")
        }
        _ => "router CPU unknown (no agent samples)".to_string(),
    };
    let kb = |b: u64| format!("{:.0} KB", b as f64 / 1000.0);
    let say = |p: &QueuePlace| match p.place.as_str() {
        "router qdisc" => format!(
            "the router's qdisc on {} (peak {})",
            p.dev,
            kb(p.peak_bytes)
        ),
        "tun ring in front of the router" => format!(
            "the tun ring of {} in front of the router (peak {})",
            p.dev,
            kb(p.peak_bytes)
        ),
        _ => format!(
            "the qdisc of tap {} in front of the router (peak {})",
            p.dev,
            kb(p.peak_bytes)
        ),
    };
    let queue = match built.split_first() {
        None => "no standing queue".to_string(),
        Some((first, rest)) => {
            let mut s = format!("the queue built in {}", say(first));
            if first.place != "router qdisc" {
                // Where a user would look first, and where the AQM cannot act.
                s.push_str(", not in the router's qdisc");
            }
            if !rest.is_empty() {
                let others: Vec<String> = rest.iter().map(say).collect();
                s.push_str(&format!("; also in {}", others.join(", ")));
            }
            s
        }
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
        queue_at: built
            .first()
            .map_or("none".to_string(), |p| p.place.clone()),
        queues_built: built,
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

    /// Made-up readings of a tap whose tun ring fills: the qdisc never holds anything, qemu
    /// reads 600 packets a tick while 1000 arrive, so the ring grows by 400 a tick up to its
    /// 1000 packets; then it drops what does not fit.
    fn filling_ring() -> Vec<TapReading> {
        let mut v = Vec::new();
        let (mut sent, mut read, mut dropped, mut ring) = (5_000u64, 4_000u64, 7u64, 0u64);
        for i in 0..10 {
            v.push(TapReading {
                qdisc_backlog_bytes: 0,
                qdisc_sent_packets: sent as u32,
                qdisc_sent_bytes: sent * 1514,
                qdisc_drops: 3,
                tx_packets: read,
                tx_bytes: read * 1514,
                tx_dropped: dropped,
            });
            if i >= 1 {
                sent += 1000;
                read += 600;
                let room = 1000 - ring;
                let fit = 400.min(room);
                ring += fit;
                dropped += 400 - fit;
            }
        }
        v
    }

    #[test]
    fn ring_occupancy_from_counters() {
        let r = filling_ring();
        let occ = ring_occupancy(&r, Some(1000));
        assert_eq!(occ[0], (0, 0));
        assert_eq!(occ[1], (0, 0));
        assert_eq!(occ[2], (400, 400 * 1514));
        assert_eq!(occ[3], (800, 800 * 1514));
        assert_eq!(occ[4], (1000, 1000 * 1514));
        assert_eq!(occ[9], (1000, 1000 * 1514));
        let t = tap_queue("ns", "lan0", "upload", "pfifo_fast", &r, Some(1000), true);
        let ring = t.ring.unwrap();
        assert_eq!(ring.max_packets, 1000);
        assert_eq!(ring.max_bytes, 1_514_000);
        assert_eq!(ring.drops, 400 * 5 + 200);
        assert_eq!(t.backlog_max_bytes, 0);
        assert_eq!(t.drops, 0);
        // Counters that wrap (the qdisc's u32 packets) still give the right difference.
        let mut w = r.clone();
        for x in &mut w {
            x.qdisc_sent_packets = x.qdisc_sent_packets.wrapping_add(u32::MAX - 5_500);
        }
        assert_eq!(ring_occupancy(&w, Some(1000))[3].0, 800);
        // Without /proc/net/dev no ring is claimed.
        assert!(
            tap_queue("ns", "lan0", "upload", "", &r, None, false)
                .ring
                .is_none()
        );
        assert!(ring_occupancy(&[], None).is_empty());
    }

    #[test]
    fn proc_net_dev_parse() {
        let text = "Inter-|   Receive                                                |  Transmit\n \
 face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed\n \
    lo:       0       0    0    0    0     0          0         0        0       0    0    0    0     0       0          0\n \
  lan0: 9912345   65000    0    0    0     0          0         0 98765432  65210    0   17    0     0       0          0\n";
        assert_eq!(
            proc_net_dev_tx(text, "lan0"),
            Some((98_765_432, 65_210, 17))
        );
        assert_eq!(proc_net_dev_tx(text, "wan0"), None);
        assert_eq!(proc_net_dev_tx("garbage", "lan0"), None);
    }

    #[test]
    fn unshaped_router_queues_in_the_tun_ring() {
        // The earlier verdict's mistake: the router's qdisc held 16 KB, the taps' qdiscs
        // nothing, and the delay sat in the LAN tap's tun ring.
        let r = filling_ring();
        let lan = tap_queue("ns", "lan0", "upload", "pfifo_fast", &r, Some(1000), true);
        let wan = tap("wan0", 0);
        let v = verdict(Some(&mon(100.0, "eth0", 16_000)), &[lan, wan], None);
        assert_eq!(v.cpu_saturated, Some(true));
        assert_eq!(v.queue_at, "tun ring in front of the router");
        assert!(
            v.line.contains("the queue built in the tun ring of lan0"),
            "{}",
            v.line
        );
        assert!(
            v.line.contains(
                "(peak 1514 KB), not in the router's qdisc; also in the router's qdisc on eth0"
            ),
            "{}",
            v.line
        );
        assert_eq!(v.queues_built.len(), 2);
        assert_eq!(v.queues_built[0].peak_bytes, 1_514_000);
    }

    #[test]
    fn saturated_router_with_its_queue_in_the_tap_qdisc() {
        let v = verdict(
            Some(&mon(100.0, "eth0", 3_000)),
            &[tap("lan0", 140_000), tap("wan0", 0)],
            None,
        );
        assert_eq!(v.cpu_saturated, Some(true));
        assert_eq!(v.queue_at, "tap qdisc in front of the router");
        assert!(v.line.contains("lan0"), "{}", v.line);
        assert!(!v.line.contains("eth0"), "{}", v.line);
        assert!(v.line.starts_with("router CPU saturated"), "{}", v.line);
    }

    #[test]
    fn shaped_router_queues_in_its_qdisc() {
        // Shaped below the ceiling: cake holds the queue, the ring only a few packets.
        let mut lan = tap("lan0", 0);
        lan.ring = Some(TunRing {
            max_bytes: 6_000,
            ..Default::default()
        });
        let v = verdict(Some(&mon(40.0, "eth1", 90_000)), &[lan], None);
        assert_eq!(v.cpu_saturated, Some(false));
        assert_eq!(v.queue_at, "router qdisc");
        assert!(v.line.contains("eth1"), "{}", v.line);
        assert!(!v.line.contains("also"), "{}", v.line);
        let none = verdict(None, &[], Some(3.2));
        assert_eq!(none.cpu_saturated, None);
        assert_eq!(none.queue_at, "none");
        assert!(
            none.line.starts_with("the VM router died 3.2 s"),
            "{}",
            none.line
        );
        assert!(none.line.ends_with("no standing queue"), "{}", none.line);
    }
}
