//! The router's queues during a test: each device's root qdisc (backlog, qlen, drops) from one
//! `tc -s -j qdisc show` for the namespace the sampler thread runs in, and BQL bytes in flight
//! from /sys. Both are gauges (spec/monitor-aqm.md §0, §A1): read several times per interval,
//! maximum kept. Qdisc drops are u32 counters: deltas wrap in u32.

use super::{bql, qdisc};
use crate::results::monitor::{QueueSample, QueueSummary};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// At most this many devices are followed (qdisc and BQL together).
pub const MAX_DEVICES: usize = 64;

/// `tc` may use at most 1/TC_COST_FACTOR of one core: after a call that took `d`, the next one
/// waits at least `TC_COST_FACTOR · d` (a slow router reads its qdiscs less often).
const TC_COST_FACTOR: u32 = 10;

/// Reads the queue gauges and accumulates them per interval and over the whole window.
pub struct QueueReader {
    root: PathBuf,
    tc: Option<String>,
    bql: bool,
    min_gap: Duration,
    tc_not_before: Instant,
    /// Last root qdisc per device: (kind, handle, drops), to take drop deltas.
    last: HashMap<String, (String, String, u64)>,
    interval: BTreeMap<String, QueueSample>,
    whole: BTreeMap<String, QueueSummary>,
    /// What could not be read, once each.
    pub notes: Vec<String>,
}

fn max_opt(a: Option<u64>, v: u64) -> Option<u64> {
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

const TC_HINT: &str = "install iproute2's tc (on OpenWrt: opkg install tc-full, which prints JSON)";

impl QueueReader {
    /// `tc`: the program to run (`None`: qdiscs are not read). Takes the first reading, which is
    /// the baseline for drop deltas.
    pub fn new(root: &Path, tc: Option<String>, min_gap: Duration) -> Self {
        let mut r = Self {
            root: root.to_path_buf(),
            tc,
            bql: true,
            min_gap,
            tc_not_before: Instant::now(),
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
        let missing = r.tc.as_ref().and_then(|tc| {
            crate::lab::sys::tool_path(tc)
                .err()
                .map(|e| (tc.clone(), e))
        });
        if let Some((tc, e)) = missing {
            r.notes.push(format!(
                "qdisc backlog and drops not sampled: {tc} not found ({e}); {TC_HINT}"
            ));
            r.tc = None;
        }
        r.read();
        r
    }

    /// True while any source is being read.
    pub fn active(&self) -> bool {
        self.bql || self.tc.is_some()
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

    /// One reading: BQL every time, the qdiscs when `tc`'s pacing allows.
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
        let Some(tc) = self.tc.clone() else { return };
        let t0 = Instant::now();
        if t0 < self.tc_not_before {
            return;
        }
        let parsed = crate::lab::sys::run_tool(&tc, &["-s", "-j", "qdisc", "show"])
            .and_then(|out| qdisc::parse_qdisc_json("", &out));
        self.tc_not_before = t0 + self.min_gap.max(t0.elapsed() * TC_COST_FACTOR);
        match parsed {
            Ok(all) => self.add_qdiscs(qdisc::roots(all, MAX_DEVICES)),
            Err(e) => {
                self.notes.push(format!(
                    "qdisc backlog and drops not sampled: {e:#}; {TC_HINT}"
                ));
                self.tc = None;
            }
        }
    }

    /// Adds one `tc` reading of root qdiscs.
    pub fn add_qdiscs(&mut self, roots: Vec<crate::results::lab::QdiscStats>) {
        for q in roots {
            let delta = match self.last.get(&q.dev) {
                Some((kind, handle, drops)) if *kind == q.kind && *handle == q.handle => {
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
            self.last.insert(q.dev, (q.kind, q.handle, q.drops));
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
        QueueReader::new(&root, None, Duration::from_millis(100))
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
        let mut r = QueueReader::new(&root, None, Duration::from_millis(100));
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
    fn missing_sysfs_and_missing_tc_are_notes() {
        let root = std::env::temp_dir().join(format!("rb-q-missing-{}", std::process::id()));
        let r = QueueReader::new(
            &root,
            Some("routerbench-no-such-tc".into()),
            Duration::from_millis(100),
        );
        assert!(!r.active());
        assert_eq!(r.notes.len(), 2, "{:?}", r.notes);
        assert!(
            r.notes[0].starts_with("/sys/class/net missing"),
            "{:?}",
            r.notes
        );
        assert!(
            r.notes[1].contains("routerbench-no-such-tc not found"),
            "{:?}",
            r.notes
        );
        assert!(r.notes[1].contains("tc-full"), "{:?}", r.notes);
        assert!(r.summary().is_empty());
    }

    #[test]
    fn a_failing_tc_is_one_note_and_is_not_retried() {
        // `false` exists and exits 1, like a tc without JSON support or without permission.
        if crate::lab::sys::tool_path("false").is_err() {
            eprintln!("skip: no `false` program");
            return;
        }
        let root = std::env::temp_dir().join(format!("rb-q-false-{}", std::process::id()));
        let mut r = QueueReader::new(&root, Some("false".into()), Duration::from_millis(10));
        r.read();
        r.read();
        let tc_notes: Vec<&String> = r.notes.iter().filter(|n| n.starts_with("qdisc")).collect();
        assert_eq!(tc_notes.len(), 1, "{:?}", r.notes);
        assert!(
            tc_notes[0].contains("`false -s -j qdisc show` failed"),
            "{tc_notes:?}"
        );
        assert!(!r.active());
    }

    #[test]
    fn this_machine_in_its_own_namespace() {
        // Whatever this host has: tc's devices are named, lo with noqueue is not among them.
        let mut r = QueueReader::new(Path::new("/"), Some("tc".into()), Duration::from_millis(10));
        r.read();
        let notes = r.notes.clone();
        let w = r.summary();
        if crate::lab::sys::tool_path("tc").is_ok() {
            assert!(!notes.iter().any(|n| n.starts_with("qdisc")), "{notes:?}");
        }
        assert!(
            w.iter()
                .all(|q| !(q.dev == "lo" && q.qdisc.as_deref() == Some("noqueue"))),
            "{w:?}"
        );
        assert!(w.len() <= MAX_DEVICES);
    }
}
