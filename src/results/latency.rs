//! The result of a latency-under-load test (rrul, rrul_be, tcp_nup, tcp_ndown, ping): per-flow
//! throughput, per-probe latency samples with kernel and user-space figures, clock sync, and the
//! summary (idle vs loaded latency, grade, round trips per minute). Times `t` are seconds since the test's T0.

use serde::{Deserialize, Serialize};

/// Summary statistics of one series. All None when the series is empty.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SeriesStats {
    pub n: usize,
    pub mean: Option<f64>,
    pub median: Option<f64>,
    pub p90: Option<f64>,
    pub p99: Option<f64>,
    pub min: Option<f64>,
    pub max: Option<f64>,
}

/// One step of a load flow.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThroughputSample {
    /// End of the step, seconds since T0.
    #[serde(rename = "t_s", alias = "t")]
    pub t: f64,
    /// Goodput in this step, Mbit/s (10⁶ bit/s).
    pub mbps: f64,
    /// Smoothed RTT from the sender's TCP_INFO at the end of the step, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tcp_rtt_ms: Option<f64>,
}

/// One TCP load flow.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FlowResult {
    /// flent series name (`TCP upload BE`, `TCP download::2`, …).
    pub name: String,
    /// Class label (`BE`, `BK`, `CS5`, `EF`).
    pub label: String,
    /// `upload` (client → server) or `download`.
    pub direction: String,
    /// TOS byte requested on both ends.
    pub tos: u8,
    /// TOS read back from the client's socket.
    pub tos_client: Option<u8>,
    /// TOS read back from the server's socket (reported by the server).
    pub tos_server: Option<u8>,
    /// Congestion control read back from the client's socket.
    pub cc_client: Option<String>,
    /// Congestion control read back from the server's socket.
    pub cc_server: Option<String>,
    /// Bytes delivered to the receiver during the load phase.
    pub bytes: u64,
    /// Every byte the client wrote (upload) or read (download) over the flow's life: `bytes`
    /// plus what was in flight or buffered when the load window closed (what crossed the
    /// path once; lab Wi-Fi runs check the AP's counters against it). Absent in older results.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes_all: Option<u64>,
    pub samples: Vec<ThroughputSample>,
    /// Statistics of `samples[].mbps`.
    pub mbps: SeriesStats,
    /// Statistics of the sender's TCP RTT, ms.
    pub tcp_rtt_ms: SeriesStats,
}

/// One latency probe.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProbePoint {
    /// Send time, seconds since T0.
    #[serde(rename = "t_s", alias = "t")]
    pub t: f64,
    pub seq: u32,
    /// Round trip from kernel timestamps, minus the reflector's time (None = lost).
    pub rtt_ms: Option<f64>,
    /// Round trip from user-space send and receive times (what irtt/crusader measure).
    pub rtt_user_ms: Option<f64>,
    /// One-way delay client → server, after clock-offset correction.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owd_up_ms: Option<f64>,
    /// One-way delay server → client, after clock-offset correction.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owd_down_ms: Option<f64>,
    /// User-space delay on the client: receive wake-up + send call (ms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_delay_ms: Option<f64>,
    /// Time the reflector held the probe (kernel rx → send), ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_ms: Option<f64>,
}

/// One probe series.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProbeResult {
    /// flent series name (`Ping (ms) UDP EF`, `Ping (ms) ICMP`, …).
    pub name: String,
    /// `udp` or `icmp`.
    pub kind: String,
    pub tos: u8,
    /// Which timestamps the RTT uses at this end (the client): `kernel` (rx and tx),
    /// `kernel-rx`, or `user`.
    pub timestamps: String,
    /// The same for the far end (UDP: the reflector, as it flags each reply): `kernel` (its
    /// receive and send stamps from its kernel), `kernel-rx`, `kernel-tx`, or `user` (its
    /// user-space clock, or a reflector too old to say). None for ICMP (the far end's kernel
    /// answers the echo itself) and in results from before this field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_timestamps: Option<String>,
    pub sent: u32,
    pub received: u32,
    /// Probes that never reached the reflector (UDP only).
    pub lost_up: Option<u32>,
    /// Probes the reflector answered that never came back (UDP only).
    pub lost_down: Option<u32>,
    pub samples: Vec<ProbePoint>,
    /// RTT over the whole test (flent's default summary window).
    pub rtt_ms: SeriesStats,
    /// User-space RTT over the whole test.
    pub rtt_user_ms: SeriesStats,
    /// RTT while idle: the lead-in before the load (the whole run for `ping`).
    pub idle_rtt_ms: SeriesStats,
    /// RTT under load (DELAY … TOTAL_LENGTH − DELAY).
    pub loaded_rtt_ms: SeriesStats,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// Clock offset between client and server (crusader's method, docs/protocols/latency.md §2.3).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClockSync {
    /// server clock − client clock at the start, ms (lowest third of idle RTTs).
    pub offset_ms: f64,
    /// The same from the idle tail, when there is one.
    pub offset_end_ms: Option<f64>,
    /// Drift between the two estimates, µs per second (ppm).
    pub drift_ppm: Option<f64>,
    /// Probes the start estimate used.
    pub samples: usize,
}

/// The numbers a user asks for first.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LatencySummary {
    /// Kernel-timestamped RTT of all probes in the idle lead-in (the whole run for `ping`), ms.
    pub idle_rtt_ms: SeriesStats,
    /// The same under load.
    pub loaded_rtt_ms: SeriesStats,
    /// Mean loaded − mean idle, ms (DSLReports "bloat").
    pub increase_ms: Option<f64>,
    /// A+ < 5 ms, A < 30, B < 60, C < 200, D < 400, F (docs/protocols/latency.md §5).
    pub grade: Option<String>,
    /// Round trips per minute under load: 60000 / mean loaded probe RTT in ms. Not the IETF
    /// responsiveness draft's "RPM" (that one times TCP, TLS and HTTP exchanges on new and on
    /// loaded connections), hence the JSON name.
    #[serde(rename = "round_trips_per_minute_loaded", alias = "rpm_loaded")]
    pub rpm_loaded: Option<f64>,
    /// The same for the idle lead-in.
    #[serde(rename = "round_trips_per_minute_idle", alias = "rpm_idle")]
    pub rpm_idle: Option<f64>,
    /// Mean goodput per direction over the load phase, Mbit/s.
    pub upload_mbps: Option<f64>,
    pub download_mbps: Option<f64>,
    /// One-way delays under load (UDP probes, clock-corrected), ms.
    pub loaded_owd_up_ms: SeriesStats,
    pub loaded_owd_down_ms: SeriesStats,
    /// User-space RTT (what a tool without kernel timestamps would report) under load, ms.
    pub loaded_rtt_user_ms: SeriesStats,
    /// Client user-space delay (wake-up + send call) over the whole test, ms.
    pub user_delay_ms: SeriesStats,
}

/// One session of a multi-session test (rrul46, rtt_fair, phases).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LatencySession {
    pub index: usize,
    /// The server address it used.
    pub addr: String,
    pub ip_version: u8,
    /// Its load window from T0, s.
    pub load_start_s: f64,
    pub load_end_s: f64,
    /// phases: `download`, `upload` or `both`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
}

/// One phase of a test that has phases (`phases`: download, upload, both), as crusader prints
/// it: throughput per direction and latency with its one-way split, over the phase's steady
/// part (`from_s`..`to_s`: its load window less the first min(20 %, 2 s), crusader's rule).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PhaseSummary {
    /// `download`, `upload` or `both`.
    pub phase: String,
    /// The phase's load window, s since T0.
    pub load_start_s: f64,
    pub load_end_s: f64,
    /// The window the figures below cover, s since T0.
    pub from_s: f64,
    pub to_s: f64,
    /// Goodput of the phase's flows per direction over the window, Mbit/s (None: that
    /// direction was idle in this phase).
    pub download_mbps: Option<f64>,
    pub upload_mbps: Option<f64>,
    /// Round trips of every probe series sent in the window (kernel timestamps), ms.
    pub rtt_ms: SeriesStats,
    /// Median round trip in the window minus the idle lead-in's median, ms.
    pub rtt_increase_ms: Option<f64>,
    /// One-way delays of the UDP probes in the window (clock-corrected), ms.
    pub owd_up_ms: SeriesStats,
    pub owd_down_ms: SeriesStats,
    /// Each one-way median minus its idle lead-in median, ms.
    pub owd_up_increase_ms: Option<f64>,
    pub owd_down_increase_ms: Option<f64>,
    /// Probes sent in the window, and how many never came back.
    pub probes_sent: u32,
    pub probes_lost: u32,
}

/// A whole latency test.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LatencyResult {
    /// flent test name: `rrul`, `rrul_be`, `tcp_nup`, `tcp_ndown`, `ping`.
    pub test: String,
    pub host: String,
    pub port: u16,
    pub ip_version: u8,
    /// RFC 3339 UTC.
    pub started_at: String,
    /// T0 as Unix seconds (flent's T0).
    #[serde(rename = "t0_unix_s", alias = "t0_unix")]
    pub t0_unix: f64,
    /// Load length (flent LENGTH), s.
    pub length_s: f64,
    /// Idle lead-in and tail (flent DELAY), s.
    pub delay_s: f64,
    /// Sampling step (flent STEP_SIZE), s.
    pub step_s: f64,
    /// LENGTH + 2·DELAY, s (phases: its whole timeline).
    pub total_length_s: f64,
    /// Every server address the test used, when more than one session ran (rrul46: the IPv4
    /// and the IPv6 address; rtt_fair: one per host; phases: one per phase). Flent's HOSTS.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hosts: Vec<String>,
    /// The sessions (control connections) of a test that has several, with their load windows.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sessions: Vec<LatencySession>,
    pub probe_interval_s: f64,
    pub probe_size: usize,
    /// Congestion control requested (None = system default on each end).
    pub congestion_control: Option<String>,
    pub flows: Vec<FlowResult>,
    pub probes: Vec<ProbeResult>,
    pub clock: Option<ClockSync>,
    pub summary: LatencySummary,
    /// Per phase, for a test that has phases (`phases`); empty otherwise.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub phases: Vec<PhaseSummary>,
    #[serde(default)]
    pub notes: Vec<String>,
    /// Ended early by SIGINT/SIGTERM: the fields above hold what was measured until then.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub interrupted: bool,
}
