//! Throughput results (iperf3-compatible tests: client, server session, loopback).
//!
//! The per-interval and end-of-test pieces use iperf3's `-J` key names and units
//! (`bits_per_second`, `jitter_ms`, `rtt` in µs…), so `report::export::iperf3` can emit iperf3's schema
//! from them unchanged and readers of iperf3 JSON feel at home.

use serde::{Deserialize, Serialize};

pub use crate::wire::iperf3::Protocol;

/// Which end(s) of the test this process was.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    Client,
    Server,
    /// Client and server in one process over loopback.
    Loopback,
}

/// CPU utilisation of one end during the test, in percent of **one** core (JSON `total_pct`,
/// `user_pct`, `system_pct`) (may exceed 100
/// with several streams, as in iperf3 3.16+): `getrusage` deltas divided by wall time.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct CpuUtil {
    #[serde(rename = "total_pct", alias = "total")]
    pub total: f64,
    #[serde(rename = "user_pct", alias = "user")]
    pub user: f64,
    #[serde(rename = "system_pct", alias = "system")]
    pub system: f64,
}

/// One stream's numbers over one reporting interval (iperf3 `intervals[].streams[]`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct IntervalStream {
    /// Stream id (1, 3, 4, …); iperf3 shows the socket fd here, we show the id in `socket` too.
    /// (Absent in iperf3's sums: 0 when read from an iperf3 document.)
    #[serde(default)]
    pub socket: i32,
    /// Seconds since the test start.
    #[serde(rename = "start_s", alias = "start")]
    pub start: f64,
    #[serde(rename = "end_s", alias = "end")]
    pub end: f64,
    pub seconds: f64,
    pub bytes: u64,
    pub bits_per_second: f64,
    /// TCP sender only: retransmits in this interval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retransmits: Option<i64>,
    /// TCP sender only: congestion window in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snd_cwnd: Option<u64>,
    /// TCP sender only: peer's receive window in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snd_wnd: Option<u64>,
    /// TCP sender only: smoothed RTT in µs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(rename = "rtt_us", alias = "rtt")]
    pub rtt: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(rename = "rttvar_us", alias = "rttvar")]
    pub rttvar: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pmtu: Option<u64>,
    /// UDP receiver: jitter in ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jitter_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lost_packets: Option<i64>,
    /// UDP: datagrams sent (sender) or received span (receiver) in this interval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub packets: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lost_percent: Option<f64>,
    /// Inside the `-O` omit period (not counted in the end summary).
    pub omitted: bool,
    /// This end sends on this stream.
    pub sender: bool,
}

/// The sum over one direction's streams for one interval (iperf3 `intervals[].sum`).
pub type IntervalSum = IntervalStream;

/// One reporting interval.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Interval {
    pub streams: Vec<IntervalStream>,
    /// Sum of the streams in the test's main direction (all streams unless bidir).
    pub sum: IntervalSum,
    /// Under `--bidir`: sum of the reverse-direction streams.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sum_bidir_reverse: Option<IntervalSum>,
}

/// End-of-test totals of one side of one stream, or a sum (iperf3 `end.sum_sent` etc.).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct EndSide {
    #[serde(default)]
    pub socket: i32,
    #[serde(rename = "start_s", alias = "start")]
    pub start: f64,
    #[serde(rename = "end_s", alias = "end")]
    pub end: f64,
    pub seconds: f64,
    pub bytes: u64,
    pub bits_per_second: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retransmits: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_snd_cwnd: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_snd_wnd: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(rename = "max_rtt_us", alias = "max_rtt")]
    pub max_rtt: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(rename = "min_rtt_us", alias = "min_rtt")]
    pub min_rtt: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(rename = "mean_rtt_us", alias = "mean_rtt")]
    pub mean_rtt: Option<u64>,
    /// UDP: the receiver's jitter in ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jitter_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lost_packets: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub packets: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lost_percent: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub out_of_order: Option<i64>,
    /// As in iperf3: whether the *local* end sends on this stream.
    pub sender: bool,
}

/// Both ends of one stream at the end of the test.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct StreamEnd {
    pub id: i32,
    /// The local end sends on this stream.
    pub local_sends: bool,
    /// Sender's totals (local if `local_sends`, else reported by the peer).
    pub sender: EndSide,
    /// Receiver's totals.
    pub receiver: EndSide,
    /// UDP: one merged object like iperf3's `end.streams[].udp`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub udp: Option<EndSide>,
}

/// A data connection of the test.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Connected {
    pub socket: i32,
    pub local_host: String,
    pub local_port: u16,
    pub remote_host: String,
    pub remote_port: u16,
}

/// What was asked for (iperf3 `start.test_start`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TestSetup {
    pub protocol: Protocol,
    pub num_streams: u32,
    pub blksize: u32,
    #[serde(rename = "omit_s", alias = "omit")]
    pub omit: u32,
    #[serde(rename = "duration_s", alias = "duration")]
    pub duration: u32,
    pub bytes: u64,
    pub blocks: u64,
    pub reverse: bool,
    pub bidir: bool,
    pub tos: u8,
    /// bit/s per stream, 0 = unlimited.
    #[serde(rename = "target_bitrate_bps", alias = "target_bitrate")]
    pub target_bitrate: u64,
    /// Socket buffer size asked for with `-w` (0 = kernel default).
    #[serde(default)]
    pub window: u32,
}

/// One complete throughput test.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThroughputResult {
    pub role: Role,
    /// "iperf 3.12"-style version of the peer when known (the client's `client_version`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peer_version: Option<String>,
    /// Host and port the client connected to.
    pub host: String,
    pub port: u16,
    pub cookie: String,
    /// Unix seconds when the test started.
    pub timesecs: u64,
    pub setup: TestSetup,
    /// Control connection MSS (iperf3 `tcp_mss_default`), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tcp_mss_default: Option<u32>,
    pub sndbuf_actual: u64,
    pub rcvbuf_actual: u64,
    pub connected: Vec<Connected>,
    pub intervals: Vec<Interval>,
    pub streams: Vec<StreamEnd>,
    /// Totals of the main direction (client → server, or server → client with `-R`).
    pub sum_sent: EndSide,
    pub sum_received: EndSide,
    /// Under `--bidir`: totals of the reverse direction.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sum_sent_bidir_reverse: Option<EndSide>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sum_received_bidir_reverse: Option<EndSide>,
    /// CPU of this end (the client in loopback).
    pub cpu_local: CpuUtil,
    /// CPU of the other end (the server in loopback), from its results message.
    pub cpu_remote: CpuUtil,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sender_tcp_congestion: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receiver_tcp_congestion: Option<String>,
    /// The server's own output when `--get-server-output` was asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_output_text: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_output_json: Option<serde_json::Value>,
    /// Things that degraded the test without failing it (e.g. an unavailable `-C` algorithm).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// How this end moved the data (`-Z`: MSG_ZEROCOPY or sendfile; UDP: GSO/sendmmsg,
    /// GRO/recvmmsg); rendered with `-V` only.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub io_paths: Vec<String>,
    /// The client was interrupted (SIGINT): a partial result, the peer's figures are missing.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub interrupted: bool,
}

impl ThroughputResult {
    /// Main-direction throughput seen by the receiver, bit/s (the headline number).
    pub fn received_bps(&self) -> f64 {
        self.sum_received.bits_per_second
    }

    /// Main-direction throughput seen by the sender, bit/s.
    pub fn sent_bps(&self) -> f64 {
        self.sum_sent.bits_per_second
    }
}
