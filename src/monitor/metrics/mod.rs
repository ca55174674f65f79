//! What `GET /metrics` and `--metrics-file` export: this machine's counters read when asked,
//! plus the last results, as metric families (`results::metrics`; the text is written by
//! `report::export::prometheus`). docs/metrics.md lists every family.
//!
//! A collection reads the same files and rtnetlink dump as the sampler, on the caller's thread
//! with its own file handles and socket: it shares no state and no lock with a running test's
//! sampler, so a scrape never delays a test's own samples (the caller serialises scrapes and
//! caches the last one briefly, so a scrape flood costs one collection per period). Sources
//! that are missing (a stripped /proc without softnet_stat, no radios, no qdiscs) export no
//! family rather than zeros.

pub mod node;
pub mod queues;
pub mod results;
pub mod wifi;

use super::sources::ProcFiles;
use super::wifi::{WifiReader, WifiReading};
use super::{bql, netlink};
use crate::results::RunResult;
use crate::results::metrics::{Exposition, Family, MetricType};
use crate::results::throughput::ThroughputResult;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

/// What to collect.
#[derive(Debug, Clone)]
pub struct MetricsConfig {
    /// Where /proc and /sys live (`/`; a fixture tree in tests).
    pub root: PathBuf,
    /// Dump the qdiscs over rtnetlink (in the calling thread's network namespace).
    pub qdiscs: bool,
    /// Read the radios over nl80211.
    pub wifi: bool,
    /// Where this machine's result files are (`routerbench run`'s `routerbench-results/`):
    /// the newest of each kind is exported.
    pub results_dir: Option<PathBuf>,
}

impl Default for MetricsConfig {
    fn default() -> Self {
        Self {
            root: PathBuf::from("/"),
            qdiscs: true,
            wifi: true,
            results_dir: None,
        }
    }
}

/// Result files read at most (the newest by modification time), and their largest size.
const MAX_RESULT_FILES: usize = 32;
const MAX_RESULT_BYTES: u64 = 16 << 20;
/// Thermal zones and CPUs read at most.
const MAX_ZONES: usize = 64;
const MAX_CPUS: usize = 256;
/// How often a machine without radios is looked at again.
const WIFI_RETRY: Duration = Duration::from_secs(60);

/// Collects the metric families; keep one and call [`Collector::collect`] per scrape.
pub struct Collector {
    cfg: MetricsConfig,
    files: ProcFiles,
    user_hz: f64,
    dumper: Option<netlink::QdiscDumper>,
    wifi: Option<WifiReader>,
    wifi_tried: Option<Instant>,
    prev_wifi: Option<WifiReading>,
    /// The result files last read: (path, modification time) and what they held.
    results_seen: Vec<(PathBuf, SystemTime)>,
    results: Vec<RunResult>,
}

/// USER_HZ, the unit of /proc/stat (100 on every Linux build routers run).
fn user_hz() -> f64 {
    // SAFETY: sysconf only reads a configuration value.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if hz > 0 { hz as f64 } else { 100.0 }
}

fn read_small(path: &Path) -> Option<String> {
    let mut s = String::new();
    super::sources::read_into(path, &mut s)?;
    Some(s)
}

/// `(number, path)` of the entries of `dir` named `prefix<number>`, sorted, at most `max`.
fn numbered(dir: &Path, prefix: &str, max: usize) -> Vec<(u32, PathBuf)> {
    let mut v: Vec<(u32, PathBuf)> = std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .filter_map(|e| {
                    let n = e.file_name().to_str()?.strip_prefix(prefix)?.parse().ok()?;
                    Some((n, e.path()))
                })
                .take(4 * max)
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v.truncate(max);
    v
}

impl Collector {
    pub fn new(cfg: MetricsConfig) -> Self {
        Self {
            files: ProcFiles::new(&cfg.root),
            user_hz: user_hz(),
            dumper: None,
            wifi: None,
            wifi_tried: None,
            prev_wifi: None,
            results_seen: Vec::new(),
            results: Vec::new(),
            cfg,
        }
    }

    /// Every family now; `served` is the last iperf3 test this machine's server served.
    pub fn collect(&mut self, served: Option<&ThroughputResult>) -> Exposition {
        let started = Instant::now();
        let mut x = Exposition::default();
        if let Some(t) = self.files.read("proc/stat") {
            x.add(node::cpu_seconds(t, self.user_hz));
        }
        x.add(self.frequencies());
        if let Some(t) = self.files.read("proc/softirqs") {
            x.add(node::softirqs(t));
        }
        for f in node::softnet(self.files.read("proc/net/softnet_stat")) {
            x.add(f);
        }
        if let Some(t) = self.files.read("proc/net/dev") {
            for f in node::net_dev(t) {
                x.add(f);
            }
        }
        x.add(self.thermal());
        let qdiscs = self.qdiscs();
        for f in queues::node_qdisc(&qdiscs)
            .into_iter()
            .chain(queues::aqm(&qdiscs))
        {
            x.add(f);
        }
        if let Some(devs) = bql::read(&self.cfg.root) {
            for f in queues::bql(&devs) {
                x.add(f);
            }
        }
        if let Some(report) = self.wifi_report() {
            for f in wifi::families(&report) {
                x.add(f);
            }
        }
        self.refresh_results();
        for f in results::last_results(&self.results) {
            x.add(f);
        }
        if let Some(r) = served {
            for f in results::served_iperf3(r) {
                x.add(f);
            }
        }
        let mut info = Family::new(
            "routerbench_build_info",
            MetricType::Gauge,
            "The routerbench agent serving these metrics: its version as a label; value 1.",
        );
        info.push1("version", env!("CARGO_PKG_VERSION"), 1.0);
        x.add(info);
        let mut took = Family::new(
            "routerbench_scrape_collect_seconds",
            MetricType::Gauge,
            "How long collecting this scrape's families took, seconds.",
        );
        took.push(vec![], started.elapsed().as_secs_f64());
        x.add(took);
        x
    }

    fn frequencies(&self) -> Family {
        let cpus: Vec<(u32, String)> = numbered(
            &self.cfg.root.join("sys/devices/system/cpu"),
            "cpu",
            MAX_CPUS,
        )
        .into_iter()
        .filter_map(|(n, p)| Some((n, read_small(&p.join("cpufreq/scaling_cur_freq"))?)))
        .collect();
        node::scaling_frequency(&cpus)
    }

    fn thermal(&self) -> Family {
        let zones: Vec<(String, String, String)> = numbered(
            &self.cfg.root.join("sys/class/thermal"),
            "thermal_zone",
            MAX_ZONES,
        )
        .into_iter()
        .filter_map(|(n, p)| {
            Some((
                n.to_string(),
                read_small(&p.join("type")).unwrap_or_default(),
                read_small(&p.join("temp"))?,
            ))
        })
        .collect();
        node::thermal_zones(&zones)
    }

    /// Every qdisc with its device name (empty without rtnetlink).
    fn qdiscs(&mut self) -> Vec<(String, super::tc_stats::QdiscReading)> {
        if !self.cfg.qdiscs {
            return Vec::new();
        }
        if self.dumper.is_none() {
            self.dumper = netlink::QdiscDumper::open().ok();
        }
        let Some(d) = &mut self.dumper else {
            return Vec::new();
        };
        let all = match d.dump() {
            Ok(all) => all,
            Err(_) => {
                // A socket that failed once is opened again next time.
                self.dumper = None;
                return Vec::new();
            }
        };
        let mut names = std::collections::HashMap::new();
        all.into_iter()
            .filter_map(|q| {
                let name = names
                    .entry(q.ifindex)
                    .or_insert_with(|| netlink::ifname(q.ifindex))
                    .clone()?;
                Some((name, q))
            })
            .collect()
    }

    /// The radios now, with rates since the previous scrape's reading.
    fn wifi_report(&mut self) -> Option<crate::results::wifi::WifiReport> {
        if !self.cfg.wifi {
            return None;
        }
        if self.wifi.is_none() && self.wifi_tried.is_none_or_elapsed(WIFI_RETRY) {
            self.wifi_tried = Some(Instant::now());
            self.wifi = WifiReader::open(&self.cfg.root).ok();
        }
        let reader = self.wifi.as_mut()?;
        let now = reader.read();
        let prev = self.prev_wifi.take().unwrap_or_else(|| now.clone());
        let report = super::wifi_derive::build_report(&prev, &now, Default::default());
        self.prev_wifi = Some(now);
        Some(report)
    }

    /// Reads the result files again if the directory's newest ones changed.
    fn refresh_results(&mut self) {
        let Some(dir) = &self.cfg.results_dir else {
            return;
        };
        let mut files: Vec<(PathBuf, SystemTime)> = std::fs::read_dir(dir)
            .map(|d| {
                d.flatten()
                    .take(4096)
                    .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
                    .filter_map(|e| {
                        let m = e.metadata().ok()?;
                        (m.is_file() && m.len() <= MAX_RESULT_BYTES)
                            .then(|| Some((e.path(), m.modified().ok()?)))?
                    })
                    .collect()
            })
            .unwrap_or_default();
        files.sort_by_key(|f| std::cmp::Reverse(f.1));
        files.truncate(MAX_RESULT_FILES);
        if files == self.results_seen {
            return;
        }
        self.results = files
            .iter()
            .filter_map(|(p, _)| crate::results::load(p).ok())
            .collect();
        self.results_seen = files;
    }
}

/// `Option<Instant>`: never set, or set longer ago than a period.
trait Elapsed {
    fn is_none_or_elapsed(&self, period: Duration) -> bool;
}

impl Elapsed for Option<Instant> {
    fn is_none_or_elapsed(&self, period: Duration) -> bool {
        match self {
            None => true,
            Some(t) => t.elapsed() >= period,
        }
    }
}
