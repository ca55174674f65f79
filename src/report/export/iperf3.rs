//! iperf3's `-J` JSON document (`start` / `intervals` / `end`, as in tests/fixtures/iperf3/iperf3-*.json)
//! rendered from a [`ThroughputResult`], so tools that parse iperf3 JSON work unchanged.
//! Differences: `socket` holds the stream id (iperf3: the fd), `version` names routerbench.
//! The client, loopback and server commands write it (`cli/`); `results::iperf3_doc` reads it.

use super::{ExportError, Exporter};
use crate::results::throughput::{
    Connected, EndSide, Interval, IntervalStream, Protocol, StreamEnd, ThroughputResult,
};
use serde::Serialize;

/// iperf3's `-J` document of one test, with a final newline; `system_info` is the measuring
/// host's `uname -a`-like line (`iperf3::system_info`, the document's `start.system_info`).
#[derive(Debug, Clone, Default)]
pub struct Iperf3Json {
    pub system_info: String,
}

impl Iperf3Json {
    pub fn new(system_info: &str) -> Self {
        Self {
            system_info: system_info.to_string(),
        }
    }

    /// The document as text (ending in a newline), for the `--json` writer of the commands.
    pub fn text(&self, r: &ThroughputResult) -> String {
        render(r, &self.system_info) + "\n"
    }
}

impl Exporter<ThroughputResult> for Iperf3Json {
    fn serialize(&self, r: &ThroughputResult) -> Result<Vec<u8>, ExportError> {
        Ok(self.text(r).into_bytes())
    }
}

#[derive(Serialize)]
struct Timestamp {
    time: String,
    timesecs: u64,
}

#[derive(Serialize)]
struct ConnectingTo<'a> {
    host: &'a str,
    port: u16,
}

#[derive(Serialize)]
struct TestStart {
    protocol: &'static str,
    num_streams: u32,
    blksize: u32,
    omit: u32,
    duration: u32,
    bytes: u64,
    blocks: u64,
    reverse: u8,
    #[serde(skip_serializing_if = "is_zero")]
    bidir: u8,
    tos: u8,
    target_bitrate: u64,
}

fn is_zero(v: &u8) -> bool {
    *v == 0
}

#[derive(Serialize)]
struct Start<'a> {
    connected: &'a [Connected],
    version: String,
    system_info: String,
    timestamp: Timestamp,
    connecting_to: ConnectingTo<'a>,
    cookie: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    tcp_mss_default: Option<u32>,
    target_bitrate: u64,
    sock_bufsize: u64,
    sndbuf_actual: u64,
    rcvbuf_actual: u64,
    test_start: TestStart,
}

#[derive(Serialize)]
struct CpuPercent {
    host_total: f64,
    host_user: f64,
    host_system: f64,
    remote_total: f64,
    remote_user: f64,
    remote_system: f64,
}

/// iperf3's `end` object of one side, with iperf3's bare names (`start`, `max_rtt`); the
/// result model's JSON carries units (`start_s`, `max_rtt_us`).
#[derive(Serialize)]
struct Side {
    socket: i32,
    start: f64,
    end: f64,
    seconds: f64,
    bytes: u64,
    bits_per_second: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    retransmits: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_snd_cwnd: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_snd_wnd: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_rtt: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    min_rtt: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    mean_rtt: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    jitter_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    lost_packets: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    packets: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    lost_percent: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    out_of_order: Option<i64>,
    sender: bool,
}

impl From<&EndSide> for Side {
    fn from(e: &EndSide) -> Self {
        Side {
            socket: e.socket,
            start: e.start,
            end: e.end,
            seconds: e.seconds,
            bytes: e.bytes,
            bits_per_second: e.bits_per_second,
            retransmits: e.retransmits,
            max_snd_cwnd: e.max_snd_cwnd,
            max_snd_wnd: e.max_snd_wnd,
            max_rtt: e.max_rtt,
            min_rtt: e.min_rtt,
            mean_rtt: e.mean_rtt,
            jitter_ms: e.jitter_ms,
            lost_packets: e.lost_packets,
            packets: e.packets,
            lost_percent: e.lost_percent,
            out_of_order: e.out_of_order,
            sender: e.sender,
        }
    }
}

/// iperf3's `intervals[].streams[]` / `sum` with iperf3's bare names (`start`, `rtt`).
#[derive(Serialize)]
struct IntervalLine {
    socket: i32,
    start: f64,
    end: f64,
    seconds: f64,
    bytes: u64,
    bits_per_second: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    retransmits: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    snd_cwnd: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    snd_wnd: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    rtt: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    rttvar: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pmtu: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    jitter_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    lost_packets: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    packets: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    lost_percent: Option<f64>,
    omitted: bool,
    sender: bool,
}

impl From<&IntervalStream> for IntervalLine {
    fn from(s: &IntervalStream) -> Self {
        IntervalLine {
            socket: s.socket,
            start: s.start,
            end: s.end,
            seconds: s.seconds,
            bytes: s.bytes,
            bits_per_second: s.bits_per_second,
            retransmits: s.retransmits,
            snd_cwnd: s.snd_cwnd,
            snd_wnd: s.snd_wnd,
            rtt: s.rtt,
            rttvar: s.rttvar,
            pmtu: s.pmtu,
            jitter_ms: s.jitter_ms,
            lost_packets: s.lost_packets,
            packets: s.packets,
            lost_percent: s.lost_percent,
            omitted: s.omitted,
            sender: s.sender,
        }
    }
}

#[derive(Serialize)]
struct IntervalJson {
    streams: Vec<IntervalLine>,
    sum: IntervalLine,
    #[serde(skip_serializing_if = "Option::is_none")]
    sum_bidir_reverse: Option<IntervalLine>,
}

impl From<&Interval> for IntervalJson {
    fn from(iv: &Interval) -> Self {
        IntervalJson {
            streams: iv.streams.iter().map(IntervalLine::from).collect(),
            sum: (&iv.sum).into(),
            sum_bidir_reverse: iv.sum_bidir_reverse.as_ref().map(IntervalLine::from),
        }
    }
}

/// One stream of `end.streams`: `sender` and `receiver` (TCP) or `udp`.
#[derive(Serialize)]
struct EndStream {
    #[serde(skip_serializing_if = "Option::is_none")]
    sender: Option<Side>,
    #[serde(skip_serializing_if = "Option::is_none")]
    receiver: Option<Side>,
    #[serde(skip_serializing_if = "Option::is_none")]
    udp: Option<Side>,
}

#[derive(Serialize)]
struct End<'a> {
    streams: Vec<EndStream>,
    #[serde(skip_serializing_if = "Option::is_none")]
    sum: Option<Side>,
    sum_sent: Side,
    sum_received: Side,
    #[serde(skip_serializing_if = "Option::is_none")]
    sum_sent_bidir_reverse: Option<Side>,
    #[serde(skip_serializing_if = "Option::is_none")]
    sum_received_bidir_reverse: Option<Side>,
    cpu_utilization_percent: CpuPercent,
    #[serde(skip_serializing_if = "Option::is_none")]
    sender_tcp_congestion: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    receiver_tcp_congestion: Option<&'a str>,
}

#[derive(Serialize)]
struct Doc<'a> {
    start: Start<'a>,
    intervals: Vec<IntervalJson>,
    end: End<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    server_output_text: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    server_output_json: Option<&'a serde_json::Value>,
    /// routerbench's addition: the test was ended early by SIGINT/SIGTERM; the figures cover
    /// the part measured (iperf3 tools ignore the key).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    interrupted: bool,
}

/// `Sun, 29 Nov 2026 19:27:25 GMT` for a Unix time.
pub fn http_date(unix: u64) -> String {
    let rfc = crate::util::time::rfc3339_utc(unix as i64);
    // rfc: 2026-11-29T19:27:25Z
    let (y, m, d) = (&rfc[0..4], &rfc[5..7], &rfc[8..10]);
    let days = unix / 86_400;
    let wd = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"][(days % 7) as usize];
    let months = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let mi: usize = m.parse().unwrap_or(1);
    let mon = months.get(mi.wrapping_sub(1)).copied().unwrap_or("Jan");
    format!("{wd}, {d} {mon} {y} {} GMT", &rfc[11..19])
}

/// Renders the iperf3 `-J` document, pretty-printed by serde_json (cJSON indents with tabs;
/// parsers do not care), without a final newline. `system_info` is the measuring host's
/// `uname -a`-like line (`iperf3::system_info`).
pub fn render(r: &ThroughputResult, system_info: &str) -> String {
    let udp = r.setup.protocol == Protocol::Udp;
    let streams = r
        .streams
        .iter()
        .map(|s: &StreamEnd| match (&s.udp, udp) {
            (Some(u), true) => EndStream {
                sender: None,
                receiver: None,
                udp: Some(u.into()),
            },
            _ => EndStream {
                sender: Some((&s.sender).into()),
                receiver: Some((&s.receiver).into()),
                udp: None,
            },
        })
        .collect();
    let doc = Doc {
        start: Start {
            connected: &r.connected,
            version: format!("iperf 3.12 (routerbench {})", env!("CARGO_PKG_VERSION")),
            system_info: system_info.to_string(),
            timestamp: Timestamp {
                time: http_date(r.timesecs),
                timesecs: r.timesecs,
            },
            connecting_to: ConnectingTo {
                host: &r.host,
                port: r.port,
            },
            cookie: &r.cookie,
            tcp_mss_default: r.tcp_mss_default.filter(|_| !udp),
            target_bitrate: r.setup.target_bitrate,
            sock_bufsize: r.setup.window as u64,
            sndbuf_actual: r.sndbuf_actual,
            rcvbuf_actual: r.rcvbuf_actual,
            test_start: TestStart {
                protocol: match r.setup.protocol {
                    Protocol::Tcp => "TCP",
                    Protocol::Udp => "UDP",
                    Protocol::Sctp => "SCTP",
                },
                num_streams: r.setup.num_streams,
                blksize: r.setup.blksize,
                omit: r.setup.omit,
                duration: r.setup.duration,
                bytes: r.setup.bytes,
                blocks: r.setup.blocks,
                reverse: r.setup.reverse as u8,
                bidir: r.setup.bidir as u8,
                tos: r.setup.tos,
                target_bitrate: r.setup.target_bitrate,
            },
        },
        intervals: r.intervals.iter().map(IntervalJson::from).collect(),
        end: End {
            streams,
            sum: udp.then(|| (&r.sum_received).into()),
            sum_sent: (&r.sum_sent).into(),
            sum_received: (&r.sum_received).into(),
            sum_sent_bidir_reverse: r.sum_sent_bidir_reverse.as_ref().map(Side::from),
            sum_received_bidir_reverse: r.sum_received_bidir_reverse.as_ref().map(Side::from),
            cpu_utilization_percent: CpuPercent {
                host_total: r.cpu_local.total,
                host_user: r.cpu_local.user,
                host_system: r.cpu_local.system,
                remote_total: r.cpu_remote.total,
                remote_user: r.cpu_remote.user,
                remote_system: r.cpu_remote.system,
            },
            sender_tcp_congestion: r.sender_tcp_congestion.as_deref(),
            receiver_tcp_congestion: r.receiver_tcp_congestion.as_deref(),
        },
        server_output_text: r.server_output_text.as_deref(),
        server_output_json: r.server_output_json.as_ref(),
        interrupted: r.interrupted,
    };
    serde_json::to_string_pretty(&doc).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn date_like_iperf3() {
        assert_eq!(http_date(1795980445), "Sun, 29 Nov 2026 19:27:25 GMT");
    }
}
