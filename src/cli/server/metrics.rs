//! The server's metrics: `GET /metrics` (with `--monitor` or `--metrics`) and `--metrics-file`
//! composed from the collector (`monitor::metrics`) and the writer
//! (`report::export::prometheus`). Scrapes are serialised and a collection is reused for a
//! second, so any number of scrapers costs at most one collection per second; the collector
//! shares nothing with a running test's sampler.

use crate::monitor::metrics::{Collector, MetricsConfig};
use crate::report::export::Exporter;
use crate::report::export::prometheus::{Prometheus, encode};
use crate::results::metrics::{Exposition, Family, Format};
use crate::results::throughput::ThroughputResult;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A collection is reused by scrapes within this time.
const REUSE: Duration = Duration::from_secs(1);

/// The metrics of this server: the collector, the last collection, the last iperf3 test served.
pub struct Metrics {
    collector: Mutex<Collector>,
    last: Mutex<Option<(Instant, Arc<Exposition>)>>,
    /// The last iperf3 test this server served (set by the log observer).
    pub served: Mutex<Option<ThroughputResult>>,
}

impl Metrics {
    pub fn new(cfg: MetricsConfig) -> Arc<Self> {
        Arc::new(Self {
            collector: Mutex::new(Collector::new(cfg)),
            last: Mutex::new(None),
            served: Mutex::new(None),
        })
    }

    /// The families now (or of the collection less than [`REUSE`] old).
    pub fn exposition(&self) -> Result<Arc<Exposition>, String> {
        let mut collector = self
            .collector
            .lock()
            .map_err(|_| "a previous collection failed".to_string())?;
        if let Ok(last) = self.last.lock() {
            if let Some((at, x)) = last.as_ref() {
                if at.elapsed() < REUSE {
                    return Ok(x.clone());
                }
            }
        }
        let served = self.served.lock().ok().and_then(|s| s.clone());
        let x = Arc::new(collector.collect(served.as_ref()));
        if let Ok(mut last) = self.last.lock() {
            *last = Some((Instant::now(), x.clone()));
        }
        Ok(x)
    }

    /// Remembers the last iperf3 test served.
    pub fn served(&self, r: &ThroughputResult) {
        if let Ok(mut s) = self.served.lock() {
            *s = Some(r.clone());
        }
    }
}

impl crate::server::http::metrics::Exposition for Metrics {
    fn scrape(&self, format: Format) -> Result<Vec<u8>, String> {
        Ok(encode(self.exposition()?.as_ref(), format).into_bytes())
    }
}

/// Which families `--metrics-file` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum FileFamilies {
    /// routerbench_* and the node_* families OpenWrt's exporters lack (softnet, softirqs,
    /// qdisc): what a textfile collector can add to prometheus-node-exporter-lua or -ucode
    /// without a name it already serves.
    Gaps,
    /// routerbench_* only (beside the Go node_exporter, which has softnet of its own).
    Routerbench,
    /// Every family (for a file nothing else merges with).
    All,
}

impl FileFamilies {
    fn keeps(self, f: &Family) -> bool {
        let gap = ["node_softnet_", "node_softirqs_", "node_qdisc_"];
        match self {
            FileFamilies::All => true,
            FileFamilies::Routerbench => f.name.starts_with("routerbench_"),
            FileFamilies::Gaps => {
                f.name.starts_with("routerbench_") || gap.iter().any(|p| f.name.starts_with(p))
            }
        }
    }
}

/// Writes the families to `path` (text 0.0.4, replaced atomically) every `interval` until
/// `stop`; the first write happens at once. Write errors go to `log`, once per kind.
pub fn spawn_file_writer(
    metrics: Arc<Metrics>,
    path: PathBuf,
    families: FileFamilies,
    interval: Duration,
    stop: Arc<AtomicBool>,
    log: Box<dyn Fn(&str) + Send>,
) -> std::io::Result<std::thread::JoinHandle<()>> {
    std::thread::Builder::new()
        .name("rb-metrics-file".into())
        .spawn(move || {
            let mut last_error = String::new();
            while !stop.load(Ordering::Relaxed) {
                let written = metrics.exposition().and_then(|x| {
                    let kept = Exposition {
                        families: x
                            .families
                            .iter()
                            .filter(|f| families.keeps(f))
                            .cloned()
                            .collect(),
                    };
                    Prometheus(Format::Text)
                        .write_to_file(&kept, &path)
                        .map_err(|e| e.to_string())
                });
                match written {
                    Ok(()) => last_error.clear(),
                    Err(e) if e != last_error => {
                        log(&format!("--metrics-file: {e}"));
                        last_error = e;
                    }
                    Err(_) => {}
                }
                let until = Instant::now() + interval;
                while Instant::now() < until && !stop.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(100));
                }
            }
        })
}
