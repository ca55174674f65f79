//! The result of `routerbench rpm`: responsiveness under working conditions as
//! draft-ietf-ippm-responsiveness-09 defines it (docs/rpm.md). Every interval of the ramp and
//! every probe is kept, so the score can be recomputed from the raw probe times. Times `t_s` are
//! seconds since the test's T0.

use serde::{Deserialize, Serialize};

/// The draft's test parameters (§5.2, "Test Parameters"), as this run used them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RpmParams {
    /// MAD: moving-average distance, intervals.
    pub mad: usize,
    /// ID: interval duration, s (5 in -09).
    pub interval_s: f64,
    /// TMP: the single-sided trimmed mean keeps this share of the probes, %.
    pub trimmed_mean_percent: f64,
    /// SDT: standard-deviation tolerance for stability, as a fraction (0.05 = 5 %).
    pub sdt: f64,
    /// INP: load-generating connections at the start (per direction).
    pub initial_connections: usize,
    /// INC: connections added per interval while goodput is not saturated.
    pub connections_per_interval: usize,
    /// MNP: most load-generating connections (per direction).
    pub max_connections: usize,
    /// MPS: most probes per second (foreign and self together).
    pub max_probes_per_second: f64,
    /// PTC: share of the measured capacity the probes may use, fraction.
    pub probe_capacity_share: f64,
    /// The time limit of one run (one direction, or both at once), s.
    pub time_limit_s: f64,
}

/// One interval of the ramp (§5.4).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RpmInterval {
    pub index: usize,
    /// End of the interval, s since T0.
    pub t_end_s: f64,
    /// Load-generating connections during the interval (all directions).
    pub connections: usize,
    /// Goodput in this interval, Mbit/s, download and upload.
    pub download_mbps: f64,
    pub upload_mbps: f64,
    /// Moving average of the aggregate goodput over the last MAD intervals, Mbit/s (None
    /// until MAD intervals exist).
    pub moving_average_mbps: Option<f64>,
    /// Standard deviation of the last MAD moving averages relative to the current one.
    pub goodput_relative_sd: Option<f64>,
    /// Goodput saturation declared at (or before) this interval.
    pub goodput_saturated: bool,
    /// Responsiveness over the probes of the last MAD intervals, RPM (once goodput is saturated).
    pub responsiveness_rpm: Option<f64>,
    /// Standard deviation of the last MAD responsiveness values relative to the current one.
    pub responsiveness_relative_sd: Option<f64>,
    /// Probe pairs per second scheduled in this interval (MPS and PTC limits applied).
    pub probe_pairs_per_s: f64,
}

/// One probe: a foreign one (fresh connection) or a self one (on a load connection).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RpmProbe {
    /// `foreign` or `self`.
    pub kind: String,
    /// Launch time, s since T0.
    pub t_s: f64,
    /// Interval the probe was launched in.
    pub interval: usize,
    /// The load connection a self probe used, and its direction.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connection: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connection_direction: Option<String>,
    /// Foreign: TCP handshake (tcp_f), ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tcp_ms: Option<f64>,
    /// Foreign over TLS: handshake time divided by its round trips (tls_f), ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls_round_trips: Option<u32>,
    /// Request to full response: http_f (foreign) or http_l (self), ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http_ms: Option<f64>,
    /// The sender's unsent bytes when it queued the probe (routerbench's own protocol).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sender_unsent_bytes: Option<u32>,
    /// Why the probe failed (None = it completed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The score over the final window (§5.3.1): trimmed means and RPMs.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RpmScore {
    /// The window the score covers: the last MAD intervals, s since T0.
    pub window_start_s: f64,
    pub window_end_s: f64,
    pub tm_tcp_ms: Option<f64>,
    pub tm_tls_ms: Option<f64>,
    pub tm_http_foreign_ms: Option<f64>,
    pub tm_http_self_ms: Option<f64>,
    pub foreign_rpm: Option<f64>,
    pub loaded_rpm: Option<f64>,
    /// (foreign + loaded) / 2.
    pub rpm: Option<f64>,
    pub foreign_probes: usize,
    pub self_probes: usize,
}

/// One run of the algorithm: one direction, or both at once.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RpmRun {
    /// `download`, `upload` or `both`.
    pub direction: String,
    pub intervals: Vec<RpmInterval>,
    pub probes: Vec<RpmProbe>,
    pub score: RpmScore,
    /// Low / Medium / High (§5.4.1) for the goodput stage and the responsiveness stage.
    pub goodput_confidence: String,
    pub rpm_confidence: String,
    /// Moving-average goodput at the end, Mbit/s, per direction loaded.
    pub download_mbps: Option<f64>,
    pub upload_mbps: Option<f64>,
    pub connections: usize,
    /// Why the run ended: `stable`, `time limit`, `interrupted` or the error.
    pub end: String,
    /// A clear word on what went wrong (never saturated, never stable, a connection failed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
}

/// A whole `rpm` test.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RpmResult {
    /// What was tested: `HOST:PORT` or the config URL.
    pub target: String,
    /// `routerbench TCP` or `HTTP/2 over TLS 1.3` (and so on).
    pub transport: String,
    /// `sequential`, `concurrent`, `download` or `upload`.
    pub mode: String,
    pub started_at: String,
    pub t0_unix_s: f64,
    pub params: RpmParams,
    pub runs: Vec<RpmRun>,
    /// Idle latency before the load: foreign probes on an idle path, ms (trimmed mean).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_latency_ms: Option<f64>,
    #[serde(default)]
    pub notes: Vec<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub interrupted: bool,
}

impl RpmResult {
    /// The draft's classification of an RPM value (§1.2).
    pub fn band(rpm: f64) -> &'static str {
        if rpm < 300.0 {
            "Poor"
        } else if rpm < 1000.0 {
            "Fair"
        } else if rpm < 6000.0 {
            "Good"
        } else {
            "Excellent"
        }
    }
}
