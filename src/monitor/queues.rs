//! The router's queues during a test: each device's root qdisc (backlog, qlen, drops, and the
//! fq_codel / CAKE statistics) from one rtnetlink dump of the namespace the sampler thread runs
//! in, no process spawned (docs/protocols/router-signals.md §A8), and BQL bytes in flight from /sys. Both are
//! gauges (§0, §A1): read several times per interval, maximum kept. Qdisc drops are u32
//! counters: deltas wrap in u32.

use super::netlink::{self, QdiscDumper};
use super::tc_stats::{QdiscReading, Xstats};
use super::{bql, qdisc};
use crate::results::lab::QdiscStats;
use crate::results::monitor::{QueueSample, QueueSummary};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// At most this many devices are followed (qdisc and BQL together).
pub const MAX_DEVICES: usize = 64;

/// The dump may use at most 1/COST_FACTOR of one core: after a dump that took `d`, the next
/// one waits at least `COST_FACTOR · d` (a slow router reads its qdiscs less often).
const COST_FACTOR: u32 = 10;

/// What one dump says about a device besides its root's counters.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DeviceExtras {
    /// The lowest rate any tbf or CAKE qdisc of the device shapes to, bit/s.
    pub shaped_rate_bps: Option<u64>,
    /// CAKE: the highest per-tin peak sojourn-time EWMA, ms.
    pub cake_peak_delay_ms: Option<f64>,
    /// fq_codel or CAKE: ECN marks so far (u32 counter).
    pub ecn_marks: Option<u32>,
}

/// Reads the queue gauges and accumulates them per interval and over the whole window.
pub struct QueueReader {
    root: PathBuf,
    dumper: Option<QdiscDumper>,
    names: HashMap<i32, String>,
    bql: bool,
    min_gap: Duration,
    not_before: Instant,
    /// Last root qdisc per device: (kind, handle, drops, ecn marks), to take deltas.
    last: HashMap<String, (String, String, u64, Option<u32>)>,
    interval: BTreeMap<String, QueueSample>,
    whole: BTreeMap<String, QueueSummary>,
    /// What could not be read, once each.
    pub notes: Vec<String>,
}

fn max_opt(a: Option<u64>, v: u64) -> Option<u64> {
    Some(a.map_or(v, |a| a.max(v)))
}

fn max_f(a: Option<f64>, v: f64) -> Option<f64> {
    Some(a.map_or(v, |a| a.max(v)))
}

/// True if this thread joined another network namespace than its process's (a lab thread
/// after setns): /sys/class/net then still lists the devices of the namespace that mounted /sys.
fn thread_in_other_netns() -> bool {
    match (
        std::fs::read_link("/proc/thread-self/ns/net"),
        std::fs::read_link("/proc/self/ns/net"),
    ) {
        (Ok(a), Ok(b)) => a != b,
        _ => false,
    }
}

/// The root qdiscs of one dump as `QdiscStats` (by device name), and each device's extras.
pub fn roots_of_dump(
    all: &[QdiscReading],
    name_of: &mut dyn FnMut(i32) -> Option<String>,
) -> (Vec<QdiscStats>, HashMap<String, DeviceExtras>) {
    let mut extras: HashMap<String, DeviceExtras> = HashMap::new();
    let mut roots = Vec::new();
    for q in all {
        let Some(dev) = name_of(q.ifindex) else {
            continue;
        };
        let x = extras.entry(dev.clone()).or_default();
        if let Some(r) = q.rate_bytes_per_s {
            let bps = r.saturating_mul(8);
            x.shaped_rate_bps = Some(x.shaped_rate_bps.map_or(bps, |o| o.min(bps)));
        }
        match &q.xstats {
            Some(Xstats::Cake(c)) => {
                if let Some(peak) = c.tins.iter().map(|t| t.peak_delay_us).max() {
                    x.cake_peak_delay_ms = Some(f64::from(peak) / 1000.0);
                }
                if q.is_root() {
                    x.ecn_marks = Some(c.tins.iter().map(|t| t.ecn_marked_packets).sum());
                }
            }
            Some(Xstats::FqCodel(f)) if q.is_root() => x.ecn_marks = Some(f.ecn_mark),
            _ => {}
        }
        roots.push(QdiscStats {
            dev,
            kind: q.kind.clone(),
            handle: q.handle_text(),
            root: q.is_root(),
            bytes: q.bytes,
            packets: u64::from(q.packets),
            drops: u64::from(q.drops),
            overlimits: u64::from(q.overlimits),
            backlog_bytes: u64::from(q.backlog_bytes),
            qlen: u64::from(q.qlen),
        });
    }
    (qdisc::roots(roots, MAX_DEVICES), extras)
}

impl QueueReader {
    /// `qdiscs`: read the qdiscs over rtnetlink (in this thread's network namespace). Takes the
    /// first reading, which is the baseline for drop deltas.
    pub fn new(root: &Path, qdiscs: bool, min_gap: Duration) -> Self {
        let mut r = Self {
            root: root.to_path_buf(),
            dumper: None,
            names: HashMap::new(),
            bql: true,
            min_gap,
            not_before: Instant::now(),
            last: HashMap::new(),
            interval: BTreeMap::new(),
            whole: BTreeMap::new(),
            notes: Vec::new(),
        };
        if !root.join("sys/class/net").is_dir() {
            r.bql = false;
            r.notes
                .push("/sys/class/net missing: no BQL (TX ring bytes in flight)".into());
        } else if root == Path::new("/") && thread_in_other_netns() {
            r.bql = false;
            r.notes.push(
                "BQL not read: the monitor runs in another network namespace than /sys/class/net \
                 shows (qdiscs are read in the monitor's namespace)"
                    .into(),
            );
        }
        if qdiscs {
            match QdiscDumper::open() {
                Ok(d) => r.dumper = Some(d),
                Err(e) => r.notes.push(format!(
                    "qdisc backlog and drops not sampled: {e} (a kernel without rtnetlink?)"
                )),
            }
        }
        r.read();
        r
    }

    /// True while any source is being read.
    pub fn active(&self) -> bool {
        self.bql || self.dumper.is_some()
    }

    fn entry(&mut self, dev: &str) -> Option<(&mut QueueSample, &mut QueueSummary)> {
        if !self.whole.contains_key(dev) && self.whole.len() >= MAX_DEVICES {
            return None;
        }
        let w = self
            .whole
            .entry(dev.to_string())
            .or_insert_with(|| QueueSummary {
                dev: dev.to_string(),
                ..Default::default()
            });
        let i = self
            .interval
            .entry(dev.to_string())
            .or_insert_with(|| QueueSample {
                dev: dev.to_string(),
                ..Default::default()
            });
        Some((i, w))
    }

    /// One reading: BQL every time, the qdiscs when the dump's pacing allows.
    pub fn read(&mut self) {
        if self.bql {
            for d in bql::read(&self.root).unwrap_or_default() {
                let (inflight, limit, n) = (d.inflight(), d.limit(), d.queues.len() as u32);
                if let Some((i, w)) = self.entry(&d.dev) {
                    i.bql_inflight_max_bytes = max_opt(i.bql_inflight_max_bytes, inflight);
                    i.bql_limit_bytes = Some(limit);
                    w.bql_inflight_max_bytes = max_opt(w.bql_inflight_max_bytes, inflight);
                    w.bql_limit_max_bytes = max_opt(w.bql_limit_max_bytes, limit);
                    w.bql_tx_queues = Some(n);
                }
            }
        }
        let t0 = Instant::now();
        if t0 < self.not_before {
            return;
        }
        let Some(d) = self.dumper.as_mut() else {
            return;
        };
        let dumped = d.dump();
        self.not_before = t0 + self.min_gap.max(t0.elapsed() * COST_FACTOR);
        match dumped {
            Ok(all) => {
                let names = &mut self.names;
                let mut name_of = |i: i32| -> Option<String> {
                    if let Some(n) = names.get(&i) {
                        return Some(n.clone());
                    }
                    let n = netlink::ifname(i)?;
                    if names.len() < 4 * MAX_DEVICES {
                        names.insert(i, n.clone());
                    }
                    Some(n)
                };
                let (roots, extras) = roots_of_dump(&all, &mut name_of);
                // A device renamed or gone: names are looked up again next time.
                if roots.is_empty() {
                    self.names.clear();
                }
                self.add_qdiscs(roots);
                self.add_extras(&extras);
            }
            Err(e) => {
                self.notes
                    .push(format!("qdisc backlog and drops not sampled: {e}"));
                self.dumper = None;
            }
        }
    }

    /// Shaped rate, backlog in ms at that rate, CAKE's peak delay, ECN marks.
    pub fn add_extras(&mut self, extras: &HashMap<String, DeviceExtras>) {
        for (dev, x) in extras {
            let ecn_delta = match (self.last.get(dev.as_str()), x.ecn_marks) {
                (Some((_, _, _, Some(before))), Some(now)) => {
                    Some(u64::from(now.wrapping_sub(*before)))
                }
                _ => None,
            };
            if let Some(l) = self.last.get_mut(dev.as_str()) {
                l.3 = x.ecn_marks;
            }
            // Only devices whose root qdisc is followed (lo's noqueue is not).
            if !self.whole.contains_key(dev.as_str()) {
                continue;
            }
            let Some((i, w)) = self.entry(dev) else {
                continue;
            };
            if let Some(rate) = x.shaped_rate_bps.filter(|r| *r > 0) {
                i.shaped_rate_bps = Some(rate);
                w.shaped_rate_bps = Some(rate);
                if let Some(b) = i.backlog_bytes_max {
                    i.backlog_ms_max = Some(b as f64 * 8.0 / rate as f64 * 1000.0);
                    w.backlog_ms_max = max_f(w.backlog_ms_max, b as f64 * 8e3 / rate as f64);
                }
            }
            if let Some(p) = x.cake_peak_delay_ms {
                i.cake_peak_delay_ms_max = max_f(i.cake_peak_delay_ms_max, p);
                w.cake_peak_delay_ms_max = max_f(w.cake_peak_delay_ms_max, p);
            }
            if let Some(d) = ecn_delta {
                i.ecn_marks = Some(i.ecn_marks.unwrap_or(0) + d);
                w.ecn_marks_total = Some(w.ecn_marks_total.unwrap_or(0) + d);
            }
        }
    }

    /// Adds one reading of root qdiscs.
    pub fn add_qdiscs(&mut self, roots: Vec<crate::results::lab::QdiscStats>) {
        for q in roots {
            let delta = match self.last.get(&q.dev) {
                Some((kind, handle, drops, _)) if *kind == q.kind && *handle == q.handle => {
                    Some(u64::from((q.drops as u32).wrapping_sub(*drops as u32)))
                }
                // New device, or its qdisc was replaced: counters restart, no delta.
                _ => None,
            };
            let Some((i, w)) = self.entry(&q.dev) else {
                continue;
            };
            i.qdisc = Some(q.kind.clone());
            i.backlog_bytes_max = max_opt(i.backlog_bytes_max, q.backlog_bytes);
            i.qlen_max = max_opt(i.qlen_max, q.qlen);
            i.drops = Some(i.drops.unwrap_or(0) + delta.unwrap_or(0));
            w.qdisc = Some(q.kind.clone());
            w.backlog_bytes_max = max_opt(w.backlog_bytes_max, q.backlog_bytes);
            w.qlen_max = max_opt(w.qlen_max, q.qlen);
            w.drops_total = Some(w.drops_total.unwrap_or(0) + delta.unwrap_or(0));
            let ecn = match self.last.get(&q.dev) {
                Some((kind, handle, _, e)) if *kind == q.kind && *handle == q.handle => *e,
                _ => None,
            };
            self.last.insert(q.dev, (q.kind, q.handle, q.drops, ecn));
        }
    }

    /// The readings since the last call, devices that held or dropped anything only.
    pub fn take_interval(&mut self) -> Vec<QueueSample> {
        std::mem::take(&mut self.interval)
            .into_values()
            .filter(|s| {
                [
                    s.backlog_bytes_max,
                    s.qlen_max,
                    s.drops,
                    s.bql_inflight_max_bytes,
                ]
                .iter()
                .any(|v| v.unwrap_or(0) > 0)
            })
            .collect()
    }

    /// Every device seen, by name.
    pub fn summary(self) -> Vec<QueueSummary> {
        self.whole.into_values().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::lab::QdiscStats;

    fn q(dev: &str, kind: &str, handle: &str, drops: u64, backlog: u64, qlen: u64) -> QdiscStats {
        QdiscStats {
            dev: dev.into(),
            kind: kind.into(),
            handle: handle.into(),
            root: true,
            drops,
            backlog_bytes: backlog,
            qlen,
            ..Default::default()
        }
    }

    fn reader() -> QueueReader {
        let root = std::env::temp_dir().join(format!("rb-q-none-{}", std::process::id()));
        QueueReader::new(&root, false, Duration::from_millis(100))
    }

    #[test]
    fn drops_wrap_in_u32_and_restart_with_a_new_qdisc() {
        let mut r = reader();
        assert!(!r.active());
        r.add_qdiscs(vec![q(
            "eth0",
            "fq_codel",
            "0:",
            u64::from(u32::MAX) - 2,
            0,
            0,
        )]);
        r.add_qdiscs(vec![q("eth0", "fq_codel", "0:", 4, 45_200, 31)]);
        r.add_qdiscs(vec![q("eth0", "fq_codel", "0:", 12, 1_000, 2)]);
        let s = r.take_interval();
        assert_eq!(
            s,
            vec![QueueSample {
                dev: "eth0".into(),
                qdisc: Some("fq_codel".into()),
                backlog_bytes_max: Some(45_200),
                qlen_max: Some(31),
                drops: Some(15),
                ..Default::default()
            }]
        );
        // Replaced by cake: its counter restarts at 3; that is no drop of this interval.
        r.add_qdiscs(vec![q("eth0", "cake", "8001:", 3, 0, 0)]);
        assert!(
            r.take_interval().is_empty(),
            "an all-zero interval is left out"
        );
        r.add_qdiscs(vec![q("eth0", "cake", "8001:", 5, 0, 0)]);
        assert_eq!(r.take_interval()[0].drops, Some(2));
        let w = r.summary();
        assert_eq!(w.len(), 1);
        assert_eq!(
            (
                w[0].qdisc.as_deref(),
                w[0].drops_total,
                w[0].backlog_bytes_max,
                w[0].qlen_max
            ),
            (Some("cake"), Some(17), Some(45_200), Some(31))
        );
    }

    #[test]
    fn devices_are_bounded() {
        let mut r = reader();
        r.add_qdiscs(
            (0..100)
                .map(|n| q(&format!("veth{n}"), "noqueue", "0:", 0, 1, 1))
                .collect(),
        );
        assert_eq!(r.take_interval().len(), MAX_DEVICES);
        assert_eq!(r.summary().len(), MAX_DEVICES);
    }

    #[test]
    fn bql_from_a_fixture_tree() {
        let root = bql::tests::fixture("reader");
        let mut r = QueueReader::new(&root, false, Duration::from_millis(100));
        assert!(r.notes.is_empty(), "{:?}", r.notes);
        assert!(r.active());
        r.read();
        let s = r.take_interval();
        assert_eq!(
            s,
            vec![QueueSample {
                dev: "eth0".into(),
                bql_inflight_max_bytes: Some(9084),
                bql_limit_bytes: Some(14_577),
                ..Default::default()
            }]
        );
        let w = r.summary();
        assert_eq!(w[0].bql_tx_queues, Some(2));
        assert_eq!(w[0].bql_limit_max_bytes, Some(14_577));
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn missing_sysfs_is_a_note() {
        let root = std::env::temp_dir().join(format!("rb-q-missing-{}", std::process::id()));
        let r = QueueReader::new(&root, false, Duration::from_millis(100));
        assert!(!r.active());
        assert_eq!(r.notes.len(), 1, "{:?}", r.notes);
        assert!(
            r.notes[0].starts_with("/sys/class/net missing"),
            "{:?}",
            r.notes
        );
        assert!(r.summary().is_empty());
    }

    #[test]
    fn cake_and_tbf_fixtures_give_rate_ms_and_peak_delay() {
        use crate::monitor::tc_stats::{parse_qdisc, tests as fx};
        let all = vec![
            parse_qdisc(&fx::cake_message()).unwrap(),
            parse_qdisc(&fx::tbf_message(2_500_000, None, 64_000)).unwrap(),
            parse_qdisc(&fx::fq_codel_message()).unwrap(),
        ];
        let mut name = |i: i32| Some(format!("if{i}"));
        let (roots, extras) = roots_of_dump(&all, &mut name);
        assert_eq!(roots.len(), 3);
        assert_eq!(extras["if3"].shaped_rate_bps, Some(20_000_000));
        assert_eq!(extras["if3"].cake_peak_delay_ms, Some(36.0));
        assert_eq!(extras["if3"].ecn_marks, Some(2 + 4 + 6 + 8));
        assert_eq!(extras["if2"].ecn_marks, Some(42));
        let mut r = reader();
        r.add_qdiscs(roots.clone());
        r.add_extras(&extras);
        let mut later = extras.clone();
        if let Some(x) = later.get_mut("if2") {
            x.ecn_marks = Some(50);
        }
        r.add_qdiscs(roots);
        r.add_extras(&later);
        let s = r.take_interval();
        let tbf = s.iter().find(|q| q.dev == "if8").unwrap();
        // 64000 B at 20 Mbit/s = 25.6 ms.
        assert_eq!(tbf.shaped_rate_bps, Some(20_000_000));
        assert!((tbf.backlog_ms_max.unwrap() - 25.6).abs() < 1e-9, "{tbf:?}");
        let cake = s.iter().find(|q| q.dev == "if3").unwrap();
        assert_eq!(cake.cake_peak_delay_ms_max, Some(36.0));
        let fq = s.iter().find(|q| q.dev == "if2").unwrap();
        assert_eq!((fq.ecn_marks, fq.shaped_rate_bps), (Some(8), None));
    }

    #[test]
    fn this_machine_in_its_own_namespace() {
        // Whatever this host has: devices are named, lo with noqueue is not among them.
        let mut r = QueueReader::new(Path::new("/"), true, Duration::from_millis(10));
        r.read();
        let notes = r.notes.clone();
        let w = r.summary();
        assert!(!notes.iter().any(|n| n.starts_with("qdisc")), "{notes:?}");
        assert!(
            w.iter()
                .all(|q| !(q.dev == "lo" && q.qdisc.as_deref() == Some("noqueue"))),
            "{w:?}"
        );
        assert!(w.len() <= MAX_DEVICES);
    }
}
