//! `routerbench stress`: a full workload (crypto on every core, RRUL-style network load, or both)
//! for a set time, the load's own throughput and latency on the run's time axis, what happened
//! (test errors, the agent going away and coming back), and the analysis the detectors drew from
//! the series (stability, heat, throttling, drift). The machine's series themselves are the
//! envelope's `monitor` (this machine) and `router` (its agent), on the same axis: `t_s` is
//! seconds since `t0_unix_s`. docs/stress.md says how each finding is decided.

use super::crypto::Algorithm;
use serde::{Deserialize, Serialize};

/// One stress run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StressResult {
    /// What `--for` asked for, s.
    pub planned_s: f64,
    /// How long the workload ran, s (less when interrupted).
    pub measured_s: f64,
    /// Unix time of `t_s = 0` (the `monitor` and `router` series' `start_unix_s` too).
    pub t0_unix_s: f64,
    /// Period of the crypto series and of the progress line, s.
    pub tick_s: f64,
    /// The room's temperature the user gave (`--ambient`), °C.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ambient_c: Option<f64>,
    /// The crypto load, when one ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<CpuWorkload>,
    /// The network load, when one ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub net: Option<NetWorkload>,
    /// Whose series the analysis read: `router` (its agent, the envelope's `router`) or
    /// `local` (this machine, the envelope's `monitor`).
    pub observed: String,
    /// The crypto load's throughput per tick.
    #[serde(default)]
    pub cpu_series: Vec<CpuPoint>,
    /// The network load's throughput and latency per step.
    #[serde(default)]
    pub net_series: Vec<NetPoint>,
    /// What happened during the run, in time order.
    #[serde(default)]
    pub events: Vec<StressEvent>,
    /// The thresholds the analysis used.
    pub thresholds: Thresholds,
    /// The detectors' findings (re-computable from the series: `stress --analyze FILE`).
    pub analysis: StressAnalysis,
}

/// Crypto on every core.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CpuWorkload {
    /// `openssl` or `rustcrypto`, and the version string (the Engine cell of the crypto row).
    pub engine: String,
    pub engine_version: String,
    pub algorithm: Algorithm,
    /// Threads, one per core (pinned when `pinned`).
    pub threads: u32,
    pub pinned: bool,
    /// Block size of a hash or cipher, bytes (none for RSA/DSA: the series counts signatures).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block_bytes: Option<u32>,
}

/// The network load: back-to-back RRUL segments against one server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NetWorkload {
    /// `loopback` (a server in this process) or the server's host.
    pub target: String,
    pub port: u16,
    /// flent test name of each segment (`rrul`).
    pub test: String,
    /// Length of one segment, s; a failed segment loses at most this much of the load's series.
    pub segment_s: f64,
    /// Step of the series, s.
    pub step_s: f64,
    /// Segments run, and how many ended in an error.
    pub segments: u32,
    pub segments_failed: u32,
}

/// The crypto load over one tick: summed over threads, per wall-clock second.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CpuPoint {
    /// End of the tick, s since t0.
    pub t_s: f64,
    /// Hash or cipher throughput, bytes/s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes_per_s: Option<f64>,
    /// RSA/DSA signatures per second.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ops_per_s: Option<f64>,
}

impl CpuPoint {
    /// The tick's rate in whichever unit the algorithm counts.
    pub fn rate(&self) -> Option<f64> {
        self.bytes_per_s.or(self.ops_per_s)
    }
}

/// The network load over one step.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NetPoint {
    /// End of the step, s since t0.
    pub t_s: f64,
    /// Goodput of the upload flows, summed, Mbit/s.
    pub up_mbps: f64,
    pub down_mbps: f64,
    /// Median kernel-timestamped round trip of the probes sent in the step, ms (None: all lost).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_ms: Option<f64>,
    /// Probes sent in the step, and how many never came back.
    pub probes: u32,
    pub lost_probes: u32,
}

/// Something that happened during the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StressEvent {
    pub t_s: f64,
    pub kind: EventKind,
    pub message: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    /// A network segment ended in an error (its message says which).
    NetError,
    /// A crypto thread failed.
    CpuError,
    /// The agent's stream broke off or fell silent.
    AgentLost,
    /// A new subscription to the agent after it was lost.
    AgentBack,
    /// SIGINT/SIGTERM ended the run.
    Interrupted,
}

/// What the detectors compare against.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Thresholds {
    /// A frequency this much below the start's is a drop, percent.
    pub freq_drop_pct: f64,
    /// A throughput this much below the start's is a sag, percent.
    pub throughput_drop_pct: f64,
    /// A temperature at least this much above the start's is "rising", °C.
    pub temp_rise_c: f64,
    /// Shorter runs than this are too short to conclude on throttling or drift, s.
    pub min_conclusive_s: f64,
}

impl Default for Thresholds {
    fn default() -> Self {
        Self {
            freq_drop_pct: 5.0,
            throughput_drop_pct: 10.0,
            temp_rise_c: 2.0,
            min_conclusive_s: 60.0,
        }
    }
}

/// The detectors' findings.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StressAnalysis {
    /// Long enough for throttling and drift (at least `min_conclusive_s` measured).
    pub conclusive: bool,
    pub stability: Stability,
    pub heat: Heat,
    pub throttling: Throttling,
    pub drift: Drift,
    /// Series this device did not give (no thermal zone, no cpufreq, …), one phrase each.
    #[serde(default)]
    pub missing: Vec<String>,
    #[serde(default)]
    pub notes: Vec<String>,
}

/// Did it crash, reboot or misbehave, and when.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Stability {
    /// Nothing below happened.
    pub stable: bool,
    #[serde(default)]
    pub findings: Vec<Instability>,
    /// Who stopped answering for good, and the last time they answered.
    #[serde(default)]
    pub stopped: Vec<Stopped>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Instability {
    pub t_s: f64,
    pub kind: InstabilityKind,
    pub detail: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum InstabilityKind {
    /// A load test failed (not a reset connection).
    TestError,
    /// A load connection was reset or broke.
    ConnectionReset,
    /// The agent's samples stopped for a while, or its stream broke off.
    AgentStall,
    /// The uptime went back: the device rebooted.
    Reboot,
    /// The kernel's OOM killer ran.
    OomKill,
    /// Oops, BUG, panic, lockup or hung task in the kernel log.
    KernelOops,
    /// Another kernel warning (or worse) in the kernel log.
    KernelWarning,
}

/// A party that stopped answering and did not come back before the end.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Stopped {
    /// `router` (its agent) or `server` (the network load's).
    pub who: String,
    /// The last time it answered (its last sample or step), s since t0.
    pub last_answer_s: f64,
    /// When the silence was noticed, s since t0.
    pub noticed_s: f64,
    pub detail: String,
}

/// The temperatures.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Heat {
    #[serde(default)]
    pub zones: Vec<ZoneHeat>,
    /// The zone with the highest peak.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hottest: Option<String>,
    /// The hottest zone's peak minus `--ambient`, °C.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub over_ambient_c: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ZoneHeat {
    pub zone: String,
    /// Median of the first readings, °C.
    pub start_c: f64,
    pub peak_c: f64,
    pub peak_at_s: f64,
    pub rise_c: f64,
}

/// Did the clock (or the work done) fall under the heat.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Throttling {
    pub verdict: ThrottleVerdict,
    /// When the drop (or sag) began, s since t0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at_s: Option<f64>,
    /// Mean CPU frequency at the start and at its lowest sustained level, MHz.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub freq_from_mhz: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub freq_to_mhz: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub freq_drop_pct: Option<f64>,
    /// The hottest sensor at the drop minus at the start, °C.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temp_rise_c: Option<f64>,
    /// Which throughput sagged (`crypto`, `network up`, `network down`) and by how much.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub throughput: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub throughput_drop_pct: Option<f64>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ThrottleVerdict {
    /// The frequency fell while the temperature rose.
    Throttled,
    /// The frequency fell without a temperature rise (or with no temperature to see): a power,
    /// governor or firmware limit rather than heat.
    FrequencyDrop,
    /// No frequency data, but the crypto or network throughput fell by more than the threshold.
    Suspected,
    /// Frequency (or, without it, throughput) held.
    None,
    /// Nothing to decide from (no frequency, no throughput), or too short a run.
    #[default]
    Unknown,
}

/// Throughput and latency in the last window against the first.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Drift {
    /// Length of each window, s.
    pub window_s: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub crypto_first_per_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub crypto_last_per_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub crypto_change_pct: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub up_first_mbps: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub up_last_mbps: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub up_change_pct: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub down_first_mbps: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub down_last_mbps: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub down_change_pct: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_first_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_last_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_change_ms: Option<f64>,
}
