//! Reading an iperf3 `-J` document back into a [`ThroughputResult`]: what `routerbench client`,
//! `loopback` and `server` write with `--json` (iperf3's schema, so iperf3 tools read it), and
//! what iperf3 itself writes. `report` renders these like any result. The result model's field
//! names carry serde aliases of iperf3's keys (`start`, `rtt`, `max_rtt`, …), so most pieces
//! deserialize as they are; this file maps the rest (`start.test_start`, the CPU block, the
//! per-stream `sender`/`receiver`/`udp` objects).

use super::throughput::{
    Connected, CpuUtil, EndSide, Interval, Protocol, Role, StreamEnd, TestSetup, ThroughputResult,
};
use serde_json::Value;

fn field<T: serde::de::DeserializeOwned>(v: &Value, what: &str) -> Result<T, String> {
    serde_json::from_value(v.clone()).map_err(|e| format!("{what}: {e}"))
}

fn u64_at(v: &Value, key: &str) -> u64 {
    v.get(key).and_then(Value::as_u64).unwrap_or(0)
}

fn f64_at(v: &Value, key: &str) -> f64 {
    v.get(key).and_then(Value::as_f64).unwrap_or(0.0)
}

fn str_at(v: &Value, key: &str) -> Option<String> {
    v.get(key).and_then(Value::as_str).map(str::to_string)
}

/// Whether `doc` looks like an iperf3 `-J` document.
pub fn is_iperf3_doc(doc: &Value) -> bool {
    doc.get("start").is_some() && doc.get("end").is_some()
}

/// The throughput result an iperf3 `-J` document describes.
pub fn from_iperf3_json(doc: &Value) -> Result<ThroughputResult, String> {
    let start = doc.get("start").ok_or("no \"start\" object")?;
    let end = doc.get("end").ok_or("no \"end\" object")?;
    if let Some(e) = str_at(doc, "error") {
        if end.get("sum_sent").is_none() && end.get("sum_received").is_none() {
            return Err(format!("the test failed: {e}"));
        }
    }
    let ts = start.get("test_start").cloned().unwrap_or(Value::Null);
    let protocol = match ts.get("protocol").and_then(Value::as_str) {
        Some("UDP") => Protocol::Udp,
        Some("SCTP") => Protocol::Sctp,
        _ => Protocol::Tcp,
    };
    let udp = protocol == Protocol::Udp;
    let setup = TestSetup {
        protocol,
        num_streams: u64_at(&ts, "num_streams") as u32,
        blksize: u64_at(&ts, "blksize") as u32,
        omit: u64_at(&ts, "omit") as u32,
        duration: u64_at(&ts, "duration") as u32,
        bytes: u64_at(&ts, "bytes"),
        blocks: u64_at(&ts, "blocks"),
        reverse: u64_at(&ts, "reverse") != 0,
        bidir: u64_at(&ts, "bidir") != 0,
        tos: u64_at(&ts, "tos") as u8,
        target_bitrate: u64_at(&ts, "target_bitrate"),
        window: u64_at(start, "sock_bufsize") as u32,
    };
    let connecting = start.get("connecting_to");
    let accepted = start.get("accepted_connection");
    let (role, host, port) = match (connecting, accepted) {
        (Some(c), _) => (
            Role::Client,
            str_at(c, "host").unwrap_or_default(),
            u64_at(c, "port") as u16,
        ),
        (None, Some(a)) => (
            Role::Server,
            str_at(a, "host").unwrap_or_default(),
            u64_at(a, "port") as u16,
        ),
        (None, None) => (Role::Client, String::new(), 0),
    };
    let connected: Vec<Connected> = match start.get("connected") {
        Some(c) => field(c, "start.connected")?,
        None => Vec::new(),
    };
    let intervals: Vec<Interval> = match doc.get("intervals") {
        Some(i) => field(i, "intervals")?,
        None => Vec::new(),
    };
    let side = |key: &str| -> Result<EndSide, String> {
        match end.get(key) {
            Some(v) => field(v, &format!("end.{key}")),
            None => Ok(EndSide::default()),
        }
    };
    let opt_side = |key: &str| -> Result<Option<EndSide>, String> {
        end.get(key)
            .map(|v| field(v, &format!("end.{key}")))
            .transpose()
    };
    let mut streams = Vec::new();
    for (i, s) in end
        .get("streams")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
        .iter()
        .enumerate()
    {
        let get = |k: &str| -> Result<Option<EndSide>, String> {
            s.get(k)
                .map(|v| field(v, &format!("end.streams[{i}].{k}")))
                .transpose()
        };
        let (sender, receiver, u) = (get("sender")?, get("receiver")?, get("udp")?);
        let first = sender.as_ref().or(u.as_ref());
        streams.push(StreamEnd {
            id: first.map_or(i as i32 + 1, |x| x.socket),
            local_sends: first.is_some_and(|x| x.sender),
            sender: sender.unwrap_or_default(),
            receiver: receiver.unwrap_or_default(),
            udp: u,
        });
    }
    let cpu = end
        .get("cpu_utilization_percent")
        .cloned()
        .unwrap_or(Value::Null);
    let (sum_sent, sum_received) = if udp && end.get("sum_sent").is_none() {
        (side("sum")?, side("sum")?)
    } else {
        (side("sum_sent")?, side("sum_received")?)
    };
    let mut notes = Vec::new();
    if let Some(e) = str_at(doc, "error") {
        notes.push(format!("iperf3 reported: {e}"));
    }
    Ok(ThroughputResult {
        role,
        peer_version: None,
        host,
        port,
        cookie: str_at(start, "cookie").unwrap_or_default(),
        timesecs: start
            .get("timestamp")
            .map(|t| u64_at(t, "timesecs"))
            .unwrap_or(0),
        setup,
        tcp_mss_default: start
            .get("tcp_mss_default")
            .and_then(Value::as_u64)
            .map(|m| m as u32),
        sndbuf_actual: u64_at(start, "sndbuf_actual"),
        rcvbuf_actual: u64_at(start, "rcvbuf_actual"),
        connected,
        intervals,
        streams,
        sum_sent,
        sum_received,
        sum_sent_bidir_reverse: opt_side("sum_sent_bidir_reverse")?,
        sum_received_bidir_reverse: opt_side("sum_received_bidir_reverse")?,
        cpu_local: CpuUtil {
            total: f64_at(&cpu, "host_total"),
            user: f64_at(&cpu, "host_user"),
            system: f64_at(&cpu, "host_system"),
        },
        cpu_remote: CpuUtil {
            total: f64_at(&cpu, "remote_total"),
            user: f64_at(&cpu, "remote_user"),
            system: f64_at(&cpu, "remote_system"),
        },
        sender_tcp_congestion: str_at(end, "sender_tcp_congestion"),
        receiver_tcp_congestion: str_at(end, "receiver_tcp_congestion"),
        server_output_text: str_at(doc, "server_output_text"),
        server_output_json: doc.get("server_output_json").cloned(),
        notes,
        interrupted: doc
            .get("interrupted")
            .and_then(Value::as_bool)
            .unwrap_or(false),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// iperf3 3.12's own `-J` output of a TCP and a UDP run (tests/fixtures/iperf3/).
    #[test]
    fn reads_real_iperf3_documents() {
        let tcp: Value =
            serde_json::from_str(include_str!("../../tests/fixtures/iperf3/iperf3-tcp.json"))
                .unwrap();
        let r = from_iperf3_json(&tcp).unwrap();
        assert_eq!(r.setup.protocol, Protocol::Tcp);
        assert_eq!(r.role, Role::Client);
        assert!(!r.intervals.is_empty());
        assert!(r.sum_received.bytes > 0 && r.sum_received.bits_per_second > 0.0);
        assert!(r.cpu_local.total > 0.0);
        assert!(!r.streams.is_empty() && r.streams[0].local_sends);
        let udp: Value =
            serde_json::from_str(include_str!("../../tests/fixtures/iperf3/iperf3-udp.json"))
                .unwrap();
        let r = from_iperf3_json(&udp).unwrap();
        assert_eq!(r.setup.protocol, Protocol::Udp);
        assert!(r.streams[0].udp.is_some());
        assert!(r.sum_received.bytes > 0);
        let failed: Value = serde_json::json!({"start": {}, "intervals": [], "end": {},
            "error": "unable to connect to server"});
        assert!(
            from_iperf3_json(&failed)
                .unwrap_err()
                .contains("unable to connect")
        );
    }
}
