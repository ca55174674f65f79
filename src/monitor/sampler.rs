//! A background sampler: started before a test, stopped after it, it returns a
//! `MonitorResult`. Bounded in samples and duration so it can never run away.

use super::health::{self, KernelLog};
use super::processes::{busiest, process_ticks};
use super::procfs::{self, CpuTicks, SoftnetRow};
use super::queues::QueueReader;
use super::sources::{self, ProcFiles};
use super::thermal::{self, Sensor};
use super::wifi::{WifiReader, WifiReading};
use super::wifi_derive::interval_samples;
use crate::results::monitor::{MonitorResult, MonitorSample, MonitorSummary, ZoneTemperature};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::SyncSender;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// What and how to sample.
#[derive(Debug, Clone)]
pub struct SamplerConfig {
    /// Where /proc and /sys live (`/` here; a fixture tree in tests).
    pub root: PathBuf,
    pub interval: Duration,
    /// Hard stop even if `stop` is never called.
    pub max_duration: Duration,
    /// How often the queue gauges (qdisc backlog, BQL inflight) are read; at most `interval`.
    /// The rtnetlink dump is additionally paced to a tenth of one core.
    pub queue_interval: Duration,
    /// Read the qdiscs over rtnetlink (in the sampler thread's network namespace).
    pub qdiscs: bool,
    /// Each sample is also offered here as it is taken (the live view, the agent); a full
    /// channel drops the sample for that receiver, never blocks the sampler.
    pub live: Option<SyncSender<MonitorSample>>,
    /// Keep the samples in the result. The agent streams them and keeps none, so a long
    /// subscription costs the router no memory; its client recomputes the summary.
    pub keep_samples: bool,
}

impl Default for SamplerConfig {
    fn default() -> Self {
        Self {
            root: PathBuf::from("/"),
            interval: Duration::from_millis(500),
            max_duration: Duration::from_secs(3600),
            queue_interval: Duration::from_millis(100),
            qdiscs: true,
            live: None,
            keep_samples: true,
        }
    }
}

/// At most this many samples are kept (a day at 1 Hz).
const MAX_SAMPLES: usize = 86_400;

/// A running sampler; `stop` ends it and returns what it saw.
pub struct Sampler {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<MonitorResult>>,
}

impl Sampler {
    pub fn start(cfg: SamplerConfig) -> std::io::Result<Self> {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let handle = std::thread::Builder::new()
            .name("rb-monitor".into())
            .spawn(move || run(cfg, &flag))?;
        Ok(Self {
            stop,
            handle: Some(handle),
        })
    }

    pub fn stop(mut self) -> MonitorResult {
        self.stop.store(true, Ordering::Relaxed);
        match self.handle.take().map(JoinHandle::join) {
            Some(Ok(r)) => r,
            _ => MonitorResult {
                notes: vec!["the monitor thread failed; no samples".into()],
                ..Default::default()
            },
        }
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// One reading of every counter.
#[derive(Default)]
struct Snapshot {
    at: Option<Instant>,
    cpus: Vec<(u32, CpuTicks)>,
    softirq_cpus: Vec<u32>,
    net_rx: Vec<u32>,
    net_tx: Vec<u32>,
    softnet: Option<Vec<SoftnetRow>>,
    temp_max_c: Option<f64>,
    temps: Vec<ZoneTemperature>,
    irq_cpus: Vec<u32>,
    irq_sums: Vec<u64>,
    /// Per device (not `lo`): errors and drops since boot.
    netdev: Option<HashMap<String, (u64, u64)>>,
}

fn snapshot(files: &mut ProcFiles, sensors: &[Sensor]) -> Snapshot {
    let mut s = Snapshot {
        at: Some(Instant::now()),
        ..Default::default()
    };
    if let Some(t) = files.read("proc/stat") {
        s.cpus = procfs::parse_stat_cpus(t);
    }
    if let Some(t) = files.read("proc/softirqs") {
        (s.softirq_cpus, s.net_rx, s.net_tx) = procfs::parse_softirqs_net(t);
    }
    s.softnet = files
        .read("proc/net/softnet_stat")
        .map(procfs::parse_softnet);
    (s.temps, s.temp_max_c) = thermal::read(files, sensors);
    if let Some(t) = files.read("proc/interrupts") {
        (s.irq_cpus, s.irq_sums) = sources::parse_interrupts(t);
    }
    s.netdev = files.read("proc/net/dev").map(health::parse_net_dev);
    s
}

fn interval(prev: &Snapshot, cur: &Snapshot, t_s: f64) -> MonitorSample {
    let dt = match (prev.at, cur.at) {
        (Some(a), Some(b)) => b.duration_since(a).as_secs_f64().max(1e-6),
        _ => 1.0,
    };
    let mut s = MonitorSample {
        t_s,
        temperature_max_c: cur.temp_max_c,
        temperatures: cur.temps.clone(),
        ..Default::default()
    };
    if let (Some(p), Some(c)) = (&prev.netdev, &cur.netdev) {
        let (errors, dropped) = health::net_dev_delta(p, c);
        s.netdev_errors = Some(errors);
        s.netdev_dropped = Some(dropped);
    }
    for (id, now) in &cur.cpus {
        let Some((_, before)) = prev.cpus.iter().find(|(p, _)| p == id) else {
            continue;
        };
        let total = now.total().saturating_sub(before.total()) as f64;
        if total <= 0.0 {
            s.cpu_busy_pct.push(0.0);
            s.cpu_softirq_pct.push(0.0);
            continue;
        }
        let idle = now.idle_all().saturating_sub(before.idle_all()) as f64;
        let soft = now.softirq.saturating_sub(before.softirq) as f64;
        s.cpu_busy_pct
            .push((100.0 * (1.0 - idle / total)).clamp(0.0, 100.0));
        s.cpu_softirq_pct
            .push((100.0 * soft / total).clamp(0.0, 100.0));
    }
    // u32 counters wrap: wrapping_sub in u32.
    let rate = |a: &[u32], b: &[u32]| -> Vec<f64> {
        a.iter()
            .zip(b)
            .map(|(x, y)| f64::from(y.wrapping_sub(*x)) / dt)
            .collect()
    };
    if prev.irq_cpus == cur.irq_cpus && !cur.irq_cpus.is_empty() {
        s.irq_per_s = prev
            .irq_sums
            .iter()
            .zip(&cur.irq_sums)
            .map(|(a, b)| b.saturating_sub(*a) as f64 / dt)
            .collect();
    }
    if prev.softirq_cpus == cur.softirq_cpus {
        s.net_rx_per_s = rate(&prev.net_rx, &cur.net_rx);
        s.net_tx_per_s = rate(&prev.net_tx, &cur.net_tx);
    }
    if let (Some(p), Some(c)) = (&prev.softnet, &cur.softnet) {
        let (mut drop, mut squeeze) = (0u64, 0u64);
        for row in c {
            if let Some(old) = p.iter().find(|r| r.cpu == row.cpu) {
                drop += u64::from(row.dropped.wrapping_sub(old.dropped));
                squeeze += u64::from(row.time_squeeze.wrapping_sub(old.time_squeeze));
            }
        }
        s.softnet_dropped = Some(drop);
        s.softnet_time_squeeze = Some(squeeze);
    }
    s
}

/// The sampler thread: set-up (sources, notes on the missing ones, queue reader), the
/// sampling loop, then the whole-run figures (busiest processes, summary, queues).
fn run(cfg: SamplerConfig, stop: &AtomicBool) -> MonitorResult {
    let start = Instant::now();
    let procs_before = process_ticks(&cfg.root);
    let mut files = ProcFiles::new(&cfg.root);
    let sensors = thermal::sensors(&cfg.root);
    let first = snapshot(&mut files, &sensors);
    let mut result = MonitorResult {
        interval_s: cfg.interval.as_secs_f64(),
        cpus: first.cpus.iter().map(|(id, _)| *id).collect(),
        start_unix_s: Some(crate::util::time::unix_now_f64() - start.elapsed().as_secs_f64()),
        ..Default::default()
    };
    let has_meminfo = files.read("proc/meminfo").is_some();
    let has_cpufreq = !sources::cpu_freq_mhz(&mut files, &result.cpus).is_empty();
    result.notes = missing_sources(&first, has_meminfo, has_cpufreq);
    let kmsg = KernelLog::open(&cfg.root);
    result.notes.extend(kmsg.missing.clone());
    let queue_gap = cfg.queue_interval.clamp(
        Duration::from_millis(10),
        cfg.interval.max(Duration::from_millis(10)),
    );
    let queues = QueueReader::new(&cfg.root, cfg.qdiscs, queue_gap);
    let mut wifi = match WifiReader::open(&cfg.root) {
        Ok(w) => Some(w),
        Err(note) => {
            result.notes.push(note);
            None
        }
    };
    let wifi_prev = wifi.as_mut().map(WifiReader::read);
    if queues.active() {
        result.queue_interval_s = Some(queue_gap.as_secs_f64());
    }
    let mut run = Run {
        procs_prev: procs_before.clone(),
        procs_at: Instant::now(),
        cfg: &cfg,
        files,
        sensors,
        queues,
        queue_gap,
        has_meminfo,
        kmsg,
        wifi,
        wifi_prev,
        hostapd_before: HashMap::new(),
    };
    if let Some(w) = &run.wifi {
        run.hostapd_before = w.hostapd_ticks();
    }
    run.sample_until_stopped(start, first, stop, &mut result);
    let elapsed = start.elapsed().as_secs_f64().max(1e-6);
    let procs_after = process_ticks(&cfg.root);
    result.top_processes = busiest(&procs_before, &procs_after, elapsed, 8);
    // hostapd's CPU counts against the router (the second seed): listed whenever it ran.
    if let Some(w) = &run.wifi {
        let after = w.hostapd_ticks();
        for h in busiest(&run.hostapd_before, &after, elapsed, 4) {
            if !result.top_processes.iter().any(|p| p.pid == h.pid) {
                result.top_processes.push(h);
            }
        }
    }
    result.summary = summarize(&result.samples, result.interval_s);
    result.notes.append(&mut run.queues.notes);
    result.summary.queues = run.queues.summary();
    result
}

/// A note for each source the first snapshot found missing.
fn missing_sources(first: &Snapshot, has_meminfo: bool, has_cpufreq: bool) -> Vec<String> {
    let mut notes: Vec<String> = Vec::new();
    if first.irq_cpus.is_empty() {
        notes.push("/proc/interrupts missing: no interrupt rates".into());
    }
    if !has_meminfo {
        notes.push("/proc/meminfo missing: no available memory".into());
    }
    if !has_cpufreq {
        notes.push("no cpufreq (fixed clock, or not exposed): no CPU frequency".into());
    }
    if first.cpus.is_empty() {
        notes.push("/proc/stat missing or unreadable: no CPU load".into());
    }
    if first.softirq_cpus.is_empty() {
        notes.push("/proc/softirqs missing: no NET_RX/NET_TX rates".into());
    }
    if first.softnet.is_none() {
        notes.push(
            "/proc/net/softnet_stat missing (stripped /proc?): no softnet drops or time_squeeze"
                .into(),
        );
    }
    if first.temp_max_c.is_none() {
        notes.push("no temperature sensor (no thermal zone, no hwmon input)".into());
    }
    if first.netdev.is_none() {
        notes.push("/proc/net/dev missing: no device errors or drops".into());
    }
    notes
}

/// What the sampling loop reads from, and the busiest-process scan it keeps.
struct Run<'a> {
    cfg: &'a SamplerConfig,
    files: ProcFiles,
    sensors: Vec<Sensor>,
    queues: QueueReader,
    queue_gap: Duration,
    has_meminfo: bool,
    kmsg: KernelLog,
    procs_prev: HashMap<u32, (String, u64)>,
    procs_at: Instant,
    /// The Wi-Fi reader (nl80211) and its last reading, when this machine has a radio.
    wifi: Option<WifiReader>,
    wifi_prev: Option<WifiReading>,
    /// hostapd's CPU ticks at the start, so its share is listed whether or not it is among
    /// the busiest.
    hostapd_before: HashMap<u32, (String, u64)>,
}

impl Run<'_> {
    /// One sample per interval until `stop`, `max_duration` or MAX_SAMPLES; each goes live
    /// and (if kept) into `result`.
    fn sample_until_stopped(
        &mut self,
        start: Instant,
        first: Snapshot,
        stop: &AtomicBool,
        result: &mut MonitorResult,
    ) {
        let cfg = self.cfg;
        let mut next_queue = Instant::now() + self.queue_gap;
        let mut prev = first;
        let mut taken = 0usize;
        let mut next = start + cfg.interval;
        loop {
            self.wait(next, &mut next_queue, stop);
            let cur = snapshot(&mut self.files, &self.sensors);
            let t = start.elapsed().as_secs_f64();
            if cur
                .at
                .zip(prev.at)
                .is_some_and(|(c, p)| c.duration_since(p) >= cfg.interval / 4)
            {
                let s = self.sample(&prev, &cur, t, &result.cpus);
                if let Some(tx) = &cfg.live {
                    let _ = tx.try_send(s.clone());
                }
                taken += 1;
                if cfg.keep_samples {
                    result.samples.push(s);
                }
                prev = cur;
            }
            if stop.load(Ordering::Relaxed)
                || start.elapsed() >= cfg.max_duration
                || taken >= MAX_SAMPLES
            {
                break;
            }
            next += cfg.interval;
        }
    }

    /// Sleeps until `next` in short slices so `stop` is seen quickly, reading the queues in
    /// between.
    fn wait(&mut self, next: Instant, next_queue: &mut Instant, stop: &AtomicBool) {
        while Instant::now() < next && !stop.load(Ordering::Relaxed) {
            if self.queues.active() && Instant::now() >= *next_queue {
                self.queues.read();
                *next_queue = (*next_queue + self.queue_gap).max(Instant::now());
            }
            // Wake for the next queue reading or sample, at least every 100 ms to see `stop`.
            let wake = if self.queues.active() {
                next.min(*next_queue)
            } else {
                next
            };
            std::thread::sleep(
                Duration::from_millis(100).min(wake.saturating_duration_since(Instant::now())),
            );
        }
    }

    /// The interval between two snapshots, with the queues, CPU frequency, memory, wireless
    /// and (about once a second) the busiest process.
    fn sample(&mut self, prev: &Snapshot, cur: &Snapshot, t: f64, cpus: &[u32]) -> MonitorSample {
        let mut s = interval(prev, cur, t);
        s.queues = self.queues.take_interval();
        s.cpu_freq_mhz = sources::cpu_freq_mhz(&mut self.files, cpus);
        if self.has_meminfo {
            s.mem_available_kib = self
                .files
                .read("proc/meminfo")
                .and_then(sources::parse_mem_available_kib);
        }
        s.wireless = self
            .files
            .read("proc/net/wireless")
            .map(sources::parse_wireless)
            .unwrap_or_default();
        s.uptime_s = self
            .files
            .read("proc/uptime")
            .and_then(health::parse_uptime_s);
        s.oom_kills = self
            .files
            .read("proc/vmstat")
            .and_then(health::parse_oom_kills);
        s.kernel_log = self.kmsg.drain();
        if let Some(w) = self.wifi.as_mut() {
            let now = w.read();
            if let Some(prev) = &self.wifi_prev {
                (s.stations, s.radios) = interval_samples(prev, &now);
            }
            self.wifi_prev = Some(now);
        }
        // The busiest process about once a second: a scan reads every /proc/PID/stat.
        if self.procs_at.elapsed() >= Duration::from_millis(950) {
            let now = process_ticks(&self.cfg.root);
            s.top_process = busiest(
                &self.procs_prev,
                &now,
                self.procs_at.elapsed().as_secs_f64(),
                1,
            )
            .into_iter()
            .next();
            self.procs_prev = now;
            self.procs_at = Instant::now();
        }
        s
    }
}

/// The summary of a window's samples `interval_s` apart (queues are filled in by the caller).
pub fn summarize(samples: &[MonitorSample], interval_s: f64) -> MonitorSummary {
    let fmax = |it: &mut dyn Iterator<Item = f64>| {
        it.fold(None, |m: Option<f64>, v| Some(m.map_or(v, |m| m.max(v))))
    };
    let busy: Vec<f64> = samples
        .iter()
        .flat_map(|s| s.cpu_busy_pct.iter().copied())
        .collect();
    let sum_opt = |f: &dyn Fn(&MonitorSample) -> Option<u64>| -> Option<u64> {
        samples
            .iter()
            .filter_map(f)
            .fold(None, |a, v| Some(a.unwrap_or(0) + v))
    };
    MonitorSummary {
        busiest_cpu_max_pct: fmax(&mut busy.iter().copied()),
        cpu_mean_pct: (!busy.is_empty()).then(|| busy.iter().sum::<f64>() / busy.len() as f64),
        softirq_max_pct: fmax(
            &mut samples
                .iter()
                .flat_map(|s| s.cpu_softirq_pct.iter().copied()),
        ),
        softnet_dropped_total: sum_opt(&|s| s.softnet_dropped),
        softnet_time_squeeze_total: sum_opt(&|s| s.softnet_time_squeeze),
        temperature_max_c: fmax(&mut samples.iter().filter_map(|s| s.temperature_max_c)),
        queues: Vec::new(),
        under_load: None,
        wifi: super::wifi_derive::summarize(samples, interval_s),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_this_machine_and_sees_a_busy_thread() {
        let sampler = Sampler::start(SamplerConfig {
            interval: Duration::from_millis(100),
            ..Default::default()
        })
        .expect("start");
        // 1 s of spinning against 100 ms samples: even if parallel unit tests share the
        // core or the spinner migrates once, some interval sees it above half a core.
        let until = Instant::now() + Duration::from_millis(1000);
        let mut x = 0u64;
        while Instant::now() < until {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
        }
        std::hint::black_box(x);
        let r = sampler.stop();
        assert!(r.samples.len() >= 3, "{} samples", r.samples.len());
        assert!(!r.cpus.is_empty());
        // One core spun for 1 s: some CPU was well above idle in some interval.
        assert!(
            r.summary.busiest_cpu_max_pct.unwrap_or(0.0) > 50.0,
            "{:?}",
            r.summary
        );
        assert!(
            r.top_processes.iter().any(|p| p.pid == std::process::id()),
            "{:?}",
            r.top_processes
        );
    }

    #[test]
    fn missing_sources_are_notes() {
        let root = std::env::temp_dir().join(format!("rb-mon-empty-{}", std::process::id()));
        std::fs::create_dir_all(&root).unwrap();
        let s = Sampler::start(SamplerConfig {
            root: root.clone(),
            interval: Duration::from_millis(30),
            max_duration: Duration::from_millis(200),
            queue_interval: Duration::from_millis(10),
            qdiscs: false,
            live: None,
            keep_samples: true,
        })
        .unwrap();
        std::thread::sleep(Duration::from_millis(100));
        let r = s.stop();
        assert!(
            r.notes.iter().any(|n| n.contains("softnet_stat")),
            "{:?}",
            r.notes
        );
        assert!(r.notes.iter().any(|n| n.contains("/proc/stat")));
        assert_eq!(r.summary.busiest_cpu_max_pct, None);
        // No /sys/class/net and qdiscs off: one note, no readings, no panic.
        assert_eq!(
            r.notes
                .iter()
                .filter(|n| n.starts_with("/sys/class/net missing"))
                .count(),
            1,
            "{:?}",
            r.notes
        );
        assert!(r.notes.iter().any(|n| n.contains("/proc/interrupts")));
        assert_eq!(r.queue_interval_s, None);
        assert!(r.summary.queues.is_empty());
        assert!(r.samples.iter().all(|s| s.queues.is_empty()));
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn interval_math_wraps_u32_counters() {
        let at = Instant::now();
        let prev = Snapshot {
            at: Some(at),
            cpus: vec![(
                0,
                CpuTicks {
                    user: 100,
                    idle: 100,
                    ..Default::default()
                },
            )],
            softirq_cpus: vec![0],
            net_rx: vec![u32::MAX - 4],
            net_tx: vec![0],
            softnet: Some(vec![SoftnetRow {
                cpu: 0,
                processed: 0,
                dropped: u32::MAX,
                time_squeeze: 7,
            }]),
            temp_max_c: None,
            temps: Vec::new(),
            irq_cpus: vec![0],
            irq_sums: vec![100],
            netdev: None,
        };
        let cur = Snapshot {
            at: Some(at + Duration::from_secs(1)),
            cpus: vec![(
                0,
                CpuTicks {
                    user: 150,
                    idle: 150,
                    softirq: 0,
                    ..Default::default()
                },
            )],
            softirq_cpus: vec![0],
            net_rx: vec![5],
            net_tx: vec![10],
            softnet: Some(vec![SoftnetRow {
                cpu: 0,
                processed: 0,
                dropped: 1,
                time_squeeze: 9,
            }]),
            temp_max_c: Some(51.0),
            temps: Vec::new(),
            irq_cpus: vec![0],
            irq_sums: vec![350],
            netdev: None,
        };
        let s = interval(&prev, &cur, 1.0);
        assert_eq!(s.cpu_busy_pct, [50.0]);
        assert_eq!(s.net_rx_per_s, [10.0]);
        assert_eq!(s.softnet_dropped, Some(2));
        assert_eq!(s.softnet_time_squeeze, Some(2));
        assert_eq!(s.irq_per_s, [250.0]);
    }
}
