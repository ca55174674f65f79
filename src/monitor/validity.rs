//! A run that checks itself (docs/crypto.md, "Does the row check itself?"), after sbc-bench:
//! wait (a bounded time) for the machine to be idle, then, for each measured window (a crypto
//! column, a part of `run`), the CPU other processes used from `/proc/stat` against our own
//! from `/proc/self/stat` and our children's; cpufreq and the temperature before and after; a
//! measured clock before and after, beside cpufreq's and the BogoMIPS. [`judge`] turns the
//! readings into the verdict. Every source is optional: a missing one is a note, never a
//! failure, never a zero.

use super::cpufreq::{self, PolicyRead};
use super::procfs::CpuTicks;
use crate::results::validity::{ClockCheck, IdleCheck, LoadWindow, PolicyFreq, Validity, Verdict};
use crate::util::progress::Progress;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Others' CPU (% of one CPU) under which the machine counts as idle before measuring.
pub const IDLE_PCT: f64 = 10.0;
/// Others' CPU (% of one CPU) averaged over every judged window above which the run fails.
pub const BACKGROUND_PCT: f64 = 10.0;
/// Others' CPU (% of one CPU) in one judged window above which that window counts as disturbed…
pub const WINDOW_PCT: f64 = 25.0;
/// …when it also amounts to this many ticks (10 ms each): a 0.2 s column is 20 ticks, and the
/// two files count ticks separately.
pub const WINDOW_MIN_TICKS: f64 = 5.0;
/// cpufreq's clock falling below this share of its highest reading during the run is scaling.
pub const FREQ_DROP: f64 = 0.90;
/// Time-in-state below the top state, percent of the run, counted as throttling.
pub const BELOW_TOP_PCT: f64 = 10.0;
/// The measured clock off cpufreq's by more than this share is "far from its claim".
pub const CLOCK_TOLERANCE: f64 = 0.15;
/// The measured clock falling by more than this share between before and after.
pub const CLOCK_DROP: f64 = 0.10;
/// One idle-check window.
const IDLE_WINDOW: Duration = Duration::from_millis(250);

/// The CPU counters of one moment: /proc/stat's aggregate line, our process tree's ticks, the
/// CPU the calling thread is on.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Counters {
    pub all: Option<CpuTicks>,
    /// CPUs in /proc/stat (`cpuN` lines).
    pub ncpu: u32,
    /// utime + stime (+ children's) of this process and its live descendants.
    pub own: Option<u64>,
    pub cpu: Option<u32>,
}

/// The aggregate `cpu` line of /proc/stat and the number of `cpuN` lines.
pub fn parse_stat_all(text: &str) -> Option<(CpuTicks, u32)> {
    let mut all = None;
    let mut n = 0;
    for line in text.lines() {
        let mut it = line.split_ascii_whitespace();
        match it.next() {
            Some("cpu") => {
                if let Some(t) = CpuTicks::from_stat_fields(it) {
                    all = Some(t);
                }
            }
            Some(c) if c.starts_with("cpu") && c[3..].parse::<u32>().is_ok() => n += 1,
            _ => {}
        }
    }
    all.map(|a| (a, n.max(1)))
}

/// From a `/proc/PID/stat` text: `(ppid, utime + stime + cutime + cstime, processor)`.
pub fn parse_task_stat(text: &str) -> Option<(u32, u64, Option<u32>)> {
    let close = text.rfind(')')?;
    // After ")": field 3 (state) is index 0; ppid is field 4, utime 14 … cstime 17, processor 39.
    let f: Vec<&str> = text[close + 1..].split_ascii_whitespace().collect();
    let num = |i: usize| f.get(i).and_then(|t| t.parse::<u64>().ok());
    let ppid = num(1)? as u32;
    let ticks = num(11)? + num(12)? + num(13).unwrap_or(0) + num(14).unwrap_or(0);
    Some((ppid, ticks, num(36).map(|c| c as u32)))
}

/// Our ticks: this process's (with its waited-for children) and every live descendant's (the
/// `openssl speed` program the openssl-speed engine runs, and its `-multi` children).
fn own_ticks(root: &Path, me: u32) -> Option<u64> {
    let proc_dir = root.join("proc");
    let text = std::fs::read_to_string(proc_dir.join(me.to_string()).join("stat")).ok()?;
    let (_, mut total, _) = parse_task_stat(&text)?;
    let mut tasks: Vec<(u32, u32, u64)> = Vec::new();
    if let Ok(dir) = std::fs::read_dir(&proc_dir) {
        for e in dir.flatten().take(65536) {
            let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
                continue;
            };
            if pid == me {
                continue;
            }
            if let Some((ppid, t, _)) = std::fs::read_to_string(e.path().join("stat"))
                .ok()
                .and_then(|s| parse_task_stat(&s))
            {
                tasks.push((pid, ppid, t));
            }
        }
    }
    let mut ours = vec![me];
    let mut i = 0;
    while i < ours.len() && ours.len() < 4096 {
        let parent = ours[i];
        for &(pid, ppid, t) in &tasks {
            if ppid == parent && !ours.contains(&pid) {
                ours.push(pid);
                total += t;
            }
        }
        i += 1;
    }
    Some(total)
}

/// Reads the counters under `root` (`/` for this machine).
pub fn counters(root: &Path) -> Counters {
    let (all, ncpu) = std::fs::read_to_string(root.join("proc/stat"))
        .ok()
        .and_then(|t| parse_stat_all(&t))
        .map_or((None, 0), |(a, n)| (Some(a), n));
    let me = std::process::id();
    let cpu = std::fs::read_to_string(root.join("proc/thread-self/stat"))
        .ok()
        .and_then(|t| parse_task_stat(&t))
        .and_then(|x| x.2);
    Counters {
        all,
        ncpu,
        own: own_ticks(root, me),
        cpu,
    }
}

/// The window between two readings, in % of one CPU; None without /proc/stat, or when no tick
/// passed. Without our own ticks everything counts as others'.
pub fn window(
    name: &str,
    a: &Counters,
    b: &Counters,
    seconds: f64,
    judged: bool,
) -> Option<LoadWindow> {
    let (x, y) = (a.all?, b.all?);
    let per_cpu = y.total().checked_sub(x.total())? as f64 / f64::from(b.ncpu.max(1));
    if per_cpu <= 0.0 {
        return None;
    }
    let d = |f: fn(&CpuTicks) -> u64| f(&y).saturating_sub(f(&x)) as f64;
    let busy = d(|c| c.user + c.nice + c.system);
    let irq = d(|c| c.irq + c.softirq);
    let own = match (a.own, b.own) {
        (Some(p), Some(q)) => q.saturating_sub(p) as f64,
        _ => 0.0,
    };
    Some(LoadWindow {
        name: name.to_string(),
        seconds,
        own_pct: own / per_cpu * 100.0,
        others_pct: (busy - own).max(0.0) / per_cpu * 100.0,
        irq_pct: irq / per_cpu * 100.0,
        judged,
        cur_khz: None,
    })
}

/// A window's ticks of others' CPU (to tell a real load from the two files' rounding).
fn others_ticks(w: &LoadWindow) -> f64 {
    w.others_pct / 100.0 * w.seconds * 100.0
}

/// The verdict from the readings: the problems, one phrase each.
pub fn judge(v: &Validity) -> Vec<String> {
    let mut problems = Vec::new();
    let judged: Vec<&LoadWindow> = v.windows.iter().filter(|w| w.judged).collect();
    let total_s: f64 = judged.iter().map(|w| w.seconds).sum();
    let busy: Vec<&&LoadWindow> = judged
        .iter()
        .filter(|w| w.others_pct + w.irq_pct > WINDOW_PCT && others_ticks(w) >= WINDOW_MIN_TICKS)
        .collect();
    let mean = if total_s > 0.0 {
        judged
            .iter()
            .map(|w| (w.others_pct + w.irq_pct) * w.seconds)
            .sum::<f64>()
            / total_s
    } else {
        0.0
    };
    if mean > BACKGROUND_PCT || !busy.is_empty() {
        let worst = judged
            .iter()
            .max_by(|a, b| (a.others_pct + a.irq_pct).total_cmp(&(b.others_pct + b.irq_pct)));
        let mut p = format!(
            "background load: other processes used {:.0} % of a CPU on average while measuring, \
             {} of {} windows over {:.0} %",
            mean,
            busy.len(),
            judged.len(),
            WINDOW_PCT
        );
        if let Some(w) = worst {
            p.push_str(&format!(
                " (most during {}: {:.0} %)",
                w.name,
                w.others_pct + w.irq_pct
            ));
        }
        problems.push(p);
    }
    // cpufreq's clock during the run, on the CPUs the measuring thread was on.
    let khz: Vec<u64> = v.windows.iter().filter_map(|w| w.cur_khz).collect();
    if let (Some(&hi), Some(&lo)) = (khz.iter().max(), khz.iter().min()) {
        if (lo as f64) < FREQ_DROP * hi as f64 {
            problems.push(format!(
                "frequency scaling during the run: cpufreq's clock went from {} to {} MHz",
                hi / 1000,
                lo / 1000
            ));
        }
    }
    for p in &v.cpufreq {
        if let (Some(b), Some(a)) = (p.max_before_khz, p.max_after_khz) {
            if a < b {
                problems.push(format!(
                    "throttled: cpu{}'s cpufreq limit fell from {} to {} MHz during the run",
                    p.cpu.trim_start_matches("cpu"),
                    b / 1000,
                    a / 1000
                ));
            }
        }
        if p.measured_on {
            if let Some(below) = p.below_top_pct.filter(|b| *b > BELOW_TOP_PCT) {
                let top = p.time_in_state.first().map_or(0, |s| s.khz / 1000);
                problems.push(format!(
                    "throttling: {} spent {below:.0} % of the run below {top} MHz \
                     (cpufreq time_in_state)",
                    p.cpu
                ));
            }
        }
    }
    let c = &v.clock;
    if let (Some(m), Some(f)) = (c.before_mhz, c.cpufreq_mhz) {
        if (m - f).abs() > CLOCK_TOLERANCE * f {
            problems.push(format!(
                "clock far from its claim: measured {m:.0} MHz, cpufreq says {f:.0} MHz"
            ));
        }
    }
    if let (Some(b), Some(a)) = (c.before_mhz, c.after_mhz) {
        if a < (1.0 - CLOCK_DROP) * b {
            problems.push(format!(
                "the measured clock fell during the run: {b:.0} → {a:.0} MHz"
            ));
        }
    }
    problems
}

/// Watches one run: [`Watch::begin`] waits for idle and takes the "before" readings,
/// [`Watch::mark`] closes a window, [`Watch::finish`] takes the "after" readings and judges.
pub struct Watch {
    root: PathBuf,
    started: Instant,
    first: Counters,
    last: Counters,
    last_at: Instant,
    idle: IdleCheck,
    freq_before: Vec<PolicyRead>,
    temp_before: Option<f64>,
    clock_before: Option<f64>,
    cpufreq_mhz: Option<f64>,
    cpus_seen: Vec<u32>,
    windows: Vec<LoadWindow>,
    notes: Vec<String>,
}

/// The hottest sensor now.
fn hottest(root: &Path) -> Option<f64> {
    let sensors = super::thermal::sensors(root);
    let mut files = super::sources::ProcFiles::new(root);
    super::thermal::read(&mut files, &sensors).1
}

/// Round to 0.1 (JSON that reads well).
fn r1(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}

impl Watch {
    /// Waits up to `idle_wait` for others' CPU to fall under [`IDLE_PCT`] (at least one
    /// quarter-second window is always measured, so the figure is there; `stop`, set by
    /// SIGINT/SIGTERM, ends the wait), then reads cpufreq, the temperature and the measured
    /// clock.
    pub fn begin(
        root: &Path,
        idle_wait: Duration,
        stop: Option<&std::sync::atomic::AtomicBool>,
    ) -> Watch {
        let t0 = Instant::now();
        let mut notes = Vec::new();
        let mut prev = counters(root);
        let mut others = None;
        let mut idle = false;
        if prev.all.is_none() {
            notes.push("no /proc/stat: other processes' CPU is unknown".to_string());
        } else {
            loop {
                std::thread::sleep(IDLE_WINDOW);
                let now = counters(root);
                if let Some(w) = window("idle", &prev, &now, IDLE_WINDOW.as_secs_f64(), true) {
                    others = Some(r1(w.others_pct + w.irq_pct));
                    idle = w.others_pct + w.irq_pct < IDLE_PCT;
                }
                prev = now;
                let stopped = stop.is_some_and(|f| f.load(std::sync::atomic::Ordering::Relaxed));
                if idle || stopped || t0.elapsed() >= idle_wait {
                    break;
                }
            }
        }
        if prev.own.is_none() && prev.all.is_some() {
            notes.push(
                "no /proc/self/stat: this process's CPU is unknown, so all of it counts as \
                 others'"
                    .into(),
            );
        }
        let freq_before = cpufreq::read_all(root);
        if freq_before.is_empty() {
            notes.push("no cpufreq: the clock's scaling and throttling are not checked".into());
        } else if freq_before.iter().all(|p| p.time_in_state.is_none()) {
            notes.push(
                "no cpufreq stats/time_in_state (CONFIG_CPU_FREQ_STAT): time in lower states \
                 is not checked"
                    .into(),
            );
        }
        let temp_before = hottest(root);
        if temp_before.is_none() {
            notes.push("no temperature sensor".into());
        }
        let clock_before = match super::clock::measure(Duration::from_millis(60)) {
            Ok(m) => Some(r1(m)),
            Err(e) => {
                notes.push(e.to_string());
                None
            }
        };
        let here = counters(root);
        let cpufreq_mhz = here
            .cpu
            .and_then(|c| cpufreq::cur_khz(root, c))
            .map(|k| k as f64 / 1000.0);
        let waited = t0.elapsed().as_secs_f64();
        Watch {
            root: root.to_path_buf(),
            started: Instant::now(),
            first: here.clone(),
            last_at: Instant::now(),
            cpus_seen: here.cpu.into_iter().collect(),
            last: here,
            idle: IdleCheck {
                limit_s: idle_wait.as_secs_f64(),
                waited_s: r1(waited),
                idle,
                others_pct: others,
            },
            freq_before,
            temp_before,
            clock_before,
            cpufreq_mhz,
            windows: Vec::new(),
            notes,
        }
    }

    /// Starts the next window now, without keeping the one that ends (time between parts).
    pub fn skip(&mut self) {
        self.last = counters(&self.root);
        self.last_at = Instant::now();
    }

    /// Closes the window since the last mark as `name`; `judged`: its background counts.
    pub fn mark(&mut self, name: &str, judged: bool) {
        let now = counters(&self.root);
        let secs = self.last_at.elapsed().as_secs_f64();
        if let Some(mut w) = window(name, &self.last, &now, secs, judged) {
            w.cur_khz = now.cpu.and_then(|c| cpufreq::cur_khz(&self.root, c));
            w.seconds = (secs * 1000.0).round() / 1000.0;
            w.own_pct = r1(w.own_pct);
            w.others_pct = r1(w.others_pct);
            w.irq_pct = r1(w.irq_pct);
            self.windows.push(w);
        }
        if let Some(c) = now.cpu {
            self.cpus_seen.push(c);
        }
        self.last = now;
        self.last_at = Instant::now();
    }

    /// The "after" readings and the verdict.
    pub fn finish(self) -> Validity {
        let end = counters(&self.root);
        let whole = window(
            "whole",
            &self.first,
            &end,
            self.started.elapsed().as_secs_f64(),
            false,
        )
        .map(|mut w| {
            w.seconds = r1(w.seconds);
            w.own_pct = r1(w.own_pct);
            w.others_pct = r1(w.others_pct);
            w.irq_pct = r1(w.irq_pct);
            w
        });
        let clock_after = super::clock::measure(Duration::from_millis(60))
            .ok()
            .map(r1);
        let after = cpufreq::read_all(&self.root);
        // The CPU the measuring thread was on most often.
        let mut main_cpu = None;
        let mut best = 0;
        for &c in &self.cpus_seen {
            let n = self.cpus_seen.iter().filter(|&&x| x == c).count();
            if n > best {
                best = n;
                main_cpu = Some(c);
            }
        }
        let cpufreq = self
            .freq_before
            .iter()
            .map(|b| {
                let a = after.iter().find(|a| a.cpu == b.cpu);
                let tis = match (&b.time_in_state, a.and_then(|a| a.time_in_state.as_ref())) {
                    (Some(x), Some(y)) => cpufreq::time_in_state_delta(x, y),
                    _ => None,
                };
                PolicyFreq {
                    cpu: format!("cpu{}", b.cpu),
                    cur_before_khz: b.cur_khz,
                    cur_after_khz: a.and_then(|a| a.cur_khz),
                    max_before_khz: b.max_khz,
                    max_after_khz: a.and_then(|a| a.max_khz),
                    hw_max_khz: b.hw_max_khz,
                    below_top_pct: tis.as_ref().map(|t| r1(t.1)),
                    time_in_state: tis.map(|t| t.0).unwrap_or_default(),
                    measured_on: main_cpu.is_some_and(|c| b.cpus.contains(&c)),
                }
            })
            .collect();
        let bogomips = std::fs::read_to_string(self.root.join("proc/cpuinfo"))
            .ok()
            .and_then(|t| crate::device::cpuinfo::parse(&t).bogomips)
            .and_then(|b| b.trim().parse::<f64>().ok());
        let mut notes = self.notes;
        if self.clock_before.is_some() && self.cpufreq_mhz.is_none() {
            notes.push("the measured clock has no cpufreq figure to be checked against".into());
        }
        let mut v = Validity {
            verdict: Verdict::Pass,
            problems: Vec::new(),
            idle: self.idle,
            windows: self.windows,
            whole,
            cpufreq,
            temp_before_c: self.temp_before,
            temp_after_c: hottest(&self.root),
            clock: ClockCheck {
                before_mhz: self.clock_before,
                after_mhz: clock_after,
                cpufreq_mhz: self.cpufreq_mhz,
                bogomips,
            },
            notes,
        };
        v.problems = judge(&v);
        if !v.problems.is_empty() {
            v.verdict = Verdict::Fail;
        }
        v
    }
}

/// A [`Progress`] that closes a window at every step (each crypto column) and passes every
/// call on.
pub struct WatchedProgress<'a> {
    inner: &'a dyn Progress,
    state: Mutex<(Watch, Option<String>)>,
}

impl<'a> WatchedProgress<'a> {
    pub fn new(inner: &'a dyn Progress, watch: Watch) -> Self {
        Self {
            inner,
            state: Mutex::new((watch, None)),
        }
    }

    /// The watch back, the last column closed.
    pub fn into_watch(self) -> Watch {
        let (mut w, open) = match self.state.into_inner() {
            Ok(s) => s,
            Err(p) => p.into_inner(),
        };
        if let Some(name) = open {
            w.mark(&name, true);
        }
        w
    }
}

impl Progress for WatchedProgress<'_> {
    fn phase(&self, name: &str, total: u64) {
        self.inner.phase(name, total);
    }
    fn step(&self, done: u64, message: &str) {
        if let Ok(mut s) = self.state.lock() {
            let (w, open) = &mut *s;
            match open.take() {
                Some(name) => w.mark(&name, true),
                None => w.skip(),
            }
            if message != "done" {
                let name = message.strip_prefix("openssl speed: ").unwrap_or(message);
                *open = Some(name.to_string());
            }
        }
        self.inner.step(done, message);
    }
    fn finish(&self) {
        self.inner.finish();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const STAT_A: &str = "cpu  11123 0 2317 54710 265 0 56 27 0 0\ncpu0 5337 0 914 27934 36 0 17 10 0 0\ncpu1 5786 0 1403 26775 228 0 38 17 0 0\nintr 195695 0 0 0\n";
    /// One second later on 2 CPUs (200 ticks in all): 100 ticks of user time (ours), 98 of
    /// another process's, 2 idle.
    const STAT_B_BUSY: &str = "cpu  11321 0 2317 54712 265 0 56 27 0 0\ncpu0 5437 0 914 27935 36 0 17 10 0 0\ncpu1 5884 0 1403 26776 228 0 38 17 0 0\n";
    /// The same second with the other CPU idle.
    const STAT_B_IDLE: &str = "cpu  11224 0 2317 54807 265 0 58 27 0 0\ncpu0 5437 0 914 27934 36 0 18 10 0 0\ncpu1 5787 0 1403 26874 228 0 39 17 0 0\n";
    const SELF_A: &str = "4242 (routerbench) R 1 4242 4242 0 -1 4194304 500 0 0 0 300 20 0 0 20 0 2 0 100 0 0 18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0";
    const SELF_B: &str = "4242 (routerbench) R 1 4242 4242 0 -1 4194304 500 0 0 0 400 20 0 0 20 0 2 0 100 0 0 18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0";

    fn reading(stat: &str, own: &str) -> Counters {
        let (all, ncpu) = parse_stat_all(stat).unwrap();
        let (_, ticks, cpu) = parse_task_stat(own).unwrap();
        Counters {
            all: Some(all),
            ncpu,
            own: Some(ticks),
            cpu,
        }
    }

    fn validity(windows: Vec<LoadWindow>) -> Validity {
        Validity {
            verdict: Verdict::Pass,
            problems: Vec::new(),
            idle: IdleCheck {
                limit_s: 3.0,
                waited_s: 0.3,
                idle: true,
                others_pct: Some(1.0),
            },
            windows,
            whole: None,
            cpufreq: Vec::new(),
            temp_before_c: None,
            temp_after_c: None,
            clock: ClockCheck::default(),
            notes: Vec::new(),
        }
    }

    #[test]
    fn proc_stat_and_self_stat_give_ours_and_others() {
        let (all, n) = parse_stat_all(STAT_A).unwrap();
        assert_eq!((all.user, all.idle, n), (11123, 54710, 2));
        assert_eq!(parse_task_stat(SELF_A), Some((1, 320, Some(1))));
        let a = reading(STAT_A, SELF_A);
        let busy = window("sha1", &a, &reading(STAT_B_BUSY, SELF_B), 1.0, true).unwrap();
        assert_eq!(busy.own_pct, 100.0);
        assert_eq!(busy.others_pct, 98.0);
        assert_eq!(busy.irq_pct, 0.0);
        let idle = window("sha1", &a, &reading(STAT_B_IDLE, SELF_B), 1.0, true).unwrap();
        assert_eq!(idle.own_pct, 100.0);
        assert_eq!(idle.others_pct, 1.0);
        assert_eq!(idle.irq_pct, 2.0);
        assert!(judge(&validity(vec![idle.clone()])).is_empty());
        let p = judge(&validity(vec![idle, busy]));
        assert_eq!(p.len(), 1, "{p:?}");
        assert!(
            p[0].starts_with("background load: other processes used 50 % of a CPU"),
            "{p:?}"
        );
        assert!(p[0].contains("1 of 2 windows") && p[0].contains("most during sha1: 98 %"));
        // No /proc/stat, or no tick between the readings: no window, not a zero.
        assert!(window("x", &Counters::default(), &a, 1.0, true).is_none());
        assert!(window("x", &a, &a, 1.0, true).is_none());
        assert!(parse_stat_all("intr 1 2\n").is_none());
        assert!(parse_task_stat("garbage").is_none());
    }

    #[test]
    fn unjudged_windows_and_rounding_noise_do_not_fail() {
        let w = |name: &str, others: f64, secs: f64, judged: bool| LoadWindow {
            name: name.into(),
            seconds: secs,
            own_pct: 100.0,
            others_pct: others,
            irq_pct: 0.0,
            judged,
            cur_khz: None,
        };
        // A network test's own kernel threads, and 3 ticks in a 0.05 s column.
        assert!(judge(&validity(vec![w("throughput", 80.0, 3.0, false)])).is_empty());
        assert!(
            judge(&validity(vec![
                w("md5", 60.0, 0.05, true),
                w("sha1", 0.0, 2.0, true)
            ]))
            .is_empty()
        );
    }

    #[test]
    fn a_frequency_drop_mid_row_is_scaling() {
        let mut v = validity(
            [2_400_000u64, 2_400_000, 1_200_000, 2_400_000]
                .iter()
                .enumerate()
                .map(|(i, k)| LoadWindow {
                    name: format!("c{i}"),
                    seconds: 1.0,
                    own_pct: 100.0,
                    others_pct: 0.0,
                    irq_pct: 0.0,
                    judged: true,
                    cur_khz: Some(*k),
                })
                .collect(),
        );
        assert_eq!(
            judge(&v),
            ["frequency scaling during the run: cpufreq's clock went from 2400 to 1200 MHz"]
        );
        for w in &mut v.windows {
            w.cur_khz = Some(2_350_000);
        }
        v.windows[0].cur_khz = Some(2_400_000);
        assert!(judge(&v).is_empty(), "2 % is not scaling");
    }

    #[test]
    fn time_in_state_in_a_lower_state_and_a_lowered_limit_are_throttling() {
        let before = cpufreq::parse_time_in_state("600000 100\n1400000 5027\n1725000 40221\n");
        let after = cpufreq::parse_time_in_state("600000 100\n1400000 5927\n1725000 42321\n");
        let (states, below) = cpufreq::time_in_state_delta(&before, &after).unwrap();
        let mut v = validity(Vec::new());
        v.cpufreq.push(PolicyFreq {
            cpu: "cpu0".into(),
            cur_before_khz: Some(1_725_000),
            cur_after_khz: Some(1_400_000),
            max_before_khz: Some(1_725_000),
            max_after_khz: Some(1_400_000),
            hw_max_khz: Some(1_725_000),
            time_in_state: states,
            below_top_pct: Some(below),
            measured_on: true,
        });
        let p = judge(&v);
        assert_eq!(
            p,
            [
                "throttled: cpu0's cpufreq limit fell from 1725 to 1400 MHz during the run",
                "throttling: cpu0 spent 30 % of the run below 1725 MHz (cpufreq time_in_state)"
            ]
        );
        // Another policy's idle cores at a low clock are not the row's.
        v.cpufreq[0].measured_on = false;
        v.cpufreq[0].max_after_khz = Some(1_725_000);
        assert!(judge(&v).is_empty());
    }

    #[test]
    fn a_clock_far_from_its_claim_or_falling_fails() {
        let mut v = validity(Vec::new());
        v.clock = ClockCheck {
            before_mhz: Some(590.0),
            after_mhz: Some(585.0),
            cpufreq_mhz: Some(880.0),
            bogomips: Some(583.68),
        };
        assert_eq!(
            judge(&v),
            ["clock far from its claim: measured 590 MHz, cpufreq says 880 MHz"]
        );
        v.clock.cpufreq_mhz = Some(600.0);
        assert!(judge(&v).is_empty());
        v.clock.after_mhz = Some(450.0);
        assert_eq!(
            judge(&v),
            ["the measured clock fell during the run: 590 → 450 MHz"]
        );
        // Without cpufreq the clock is shown, not checked against a claim.
        v.clock = ClockCheck {
            before_mhz: Some(590.0),
            after_mhz: Some(590.0),
            cpufreq_mhz: None,
            bogomips: Some(583.68),
        };
        assert!(judge(&v).is_empty());
    }

    #[test]
    fn a_machine_without_proc_or_sys_gives_notes() {
        let root = std::env::temp_dir().join(format!("rb-validity-empty-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(&root).unwrap();
        let mut w = Watch::begin(&root, Duration::from_millis(0), None);
        w.mark("md5", true);
        let v = w.finish();
        assert_eq!(v.verdict, Verdict::Pass, "{v:?}");
        assert!(v.windows.is_empty() && v.whole.is_none() && v.cpufreq.is_empty());
        assert_eq!(v.idle.others_pct, None);
        assert!(!v.idle.idle);
        for want in ["no /proc/stat", "no cpufreq", "no temperature sensor"] {
            assert!(
                v.notes.iter().any(|n| n.starts_with(want)),
                "{want}: {:?}",
                v.notes
            );
        }
        std::fs::remove_dir_all(&root).unwrap();
    }
}
