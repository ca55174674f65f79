//! Whether a run was clean (docs/crypto.md, "Does the row check itself?"): was the machine idle
//! when it started, did other processes use the CPU while a column was measured, did the clock
//! or the cpufreq state move, and how does a measured clock compare with what the kernel claims.
//! The checks follow sbc-bench's (idle wait, background activity during single-threaded
//! phases, cpufreq time-in-state before and after, a measured clock against cpufreq).

use serde::{Deserialize, Serialize};

/// The outcome: `pass` (every check that could run passed), `fail` (one did not: `problems`
/// says which).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    Pass,
    Fail,
}

/// The checks of one run (a `crypto` row, or `run` as a whole).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Validity {
    pub verdict: Verdict,
    /// One phrase per failed check, e.g. `background load: other processes used 98 % of a CPU
    /// during 13 of 13 columns`.
    #[serde(default)]
    pub problems: Vec<String>,
    pub idle: IdleCheck,
    /// Other processes' CPU in each measured window: the crypto columns, `run`'s parts.
    #[serde(default)]
    pub windows: Vec<LoadWindow>,
    /// The same over everything measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub whole: Option<LoadWindow>,
    /// cpufreq per policy, where `/sys/devices/system/cpu/cpu*/cpufreq` exists.
    #[serde(default)]
    pub cpufreq: Vec<PolicyFreq>,
    /// Hottest sensor before and after, °C.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temp_before_c: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temp_after_c: Option<f64>,
    pub clock: ClockCheck,
    /// Missing sources and what could not be checked (never a failure).
    #[serde(default)]
    pub notes: Vec<String>,
}

/// The wait for an idle machine before measuring.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IdleCheck {
    /// `--idle-wait`: the longest wait, seconds.
    pub limit_s: f64,
    /// How long it waited.
    pub waited_s: f64,
    /// Idle (others below the threshold) when measuring began.
    pub idle: bool,
    /// The CPU everything else used in the last window before measuring, % of one CPU; None
    /// without /proc/stat.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub others_pct: Option<f64>,
}

/// The CPU time of one window, in % of one CPU.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoadWindow {
    /// `md5`, `aes-128-cbc`, … (a crypto column) or `crypto`, `throughput`, `latency`.
    pub name: String,
    pub seconds: f64,
    /// This process (all its threads, and its waited-for children).
    pub own_pct: f64,
    /// Every other process: user, nice and system time less ours.
    pub others_pct: f64,
    /// Interrupts and softirqs (a router forwarding traffic; our own sockets' in a network test).
    pub irq_pct: f64,
    /// Whether this window's background counts against the verdict (a network test's own
    /// softirq and kernel threads are not someone else's).
    pub judged: bool,
    /// The clock of the CPU the measuring thread was on at the window's end, kHz (cpufreq).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cur_khz: Option<u64>,
}

/// One cpufreq policy before and after.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PolicyFreq {
    /// `cpu0` (the directory whose `cpufreq/` this is).
    pub cpu: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cur_before_khz: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cur_after_khz: Option<u64>,
    /// `scaling_max_freq` before and after: a thermal or power cap lowers it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_before_khz: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_after_khz: Option<u64>,
    /// `cpuinfo_max_freq`, the hardware's top.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hw_max_khz: Option<u64>,
    /// The `stats/time_in_state` difference over the run: seconds per state, highest first;
    /// empty without `stats/`.
    #[serde(default)]
    pub time_in_state: Vec<StateTime>,
    /// Share of that time below the highest state it spent time in, percent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub below_top_pct: Option<f64>,
    /// The measuring thread ran on this policy's CPU (what the checks judge).
    pub measured_on: bool,
}

/// Seconds in one cpufreq state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StateTime {
    pub khz: u64,
    pub s: f64,
}

/// A measured clock against the kernel's claims.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ClockCheck {
    /// Dependent one-cycle operations per microsecond, before and after the run: the clock in
    /// MHz on a CPU that runs one such operation per cycle. None: it could not be calibrated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before_mhz: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after_mhz: Option<f64>,
    /// cpufreq's current clock of that CPU when measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpufreq_mhz: Option<f64>,
    /// /proc/cpuinfo's BogoMIPS (a delay-loop figure: shown beside, never judged).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bogomips: Option<f64>,
}

impl Validity {
    pub fn passed(&self) -> bool {
        self.verdict == Verdict::Pass
    }
}
