//! The results JSON both sides exchange after EXCHANGE_RESULTS (docs/protocols/iperf3.md §10).
//!
//! Required on receipt: the three `cpu_util_*`, `sender_has_retransmits` and `streams[]` with
//! `id`, `bytes`, `retransmits`, `jitter`, `errors`, `packets`; `omitted_errors` and
//! `omitted_packets` come both or neither (3.14+). Numbers are read leniently (3.12 prints -1
//! as 18446744073709551615); -1 is always written as `-1`.

use super::WireError;
use super::json::{ObjWriter, get, lenient_f64, lenient_i64};
use serde_json::{Map, Value};

/// One side's results for one of its streams.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct StreamResults {
    /// Local stream id: 1, 3, 4, 5, … in creation order; the peer matches on it.
    pub id: i32,
    /// Bytes sent (net of omit) for a sending stream, bytes received for a receiving stream.
    pub bytes: u64,
    /// TCP retransmits of a sending stream, else -1.
    pub retransmits: i64,
    /// Receiver's jitter EWMA in **seconds** (UDP), else 0.
    pub jitter: f64,
    /// Receiver's lost datagrams (UDP).
    pub errors: i64,
    pub omitted_errors: Option<i64>,
    /// UDP: datagrams sent, or the highest sequence number seen by a receiver; TCP: 0.
    pub packets: i64,
    pub omitted_packets: Option<i64>,
    /// Always 0 in practice.
    pub start_time: f64,
    /// Seconds from the stream start to this side's last sample.
    pub end_time: f64,
}

/// One side's results message.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TestResults {
    pub cpu_util_total: f64,
    pub cpu_util_user: f64,
    pub cpu_util_system: f64,
    /// 1: TCP sender with TCP_INFO; 0: UDP sender; -1: receive-only side.
    pub sender_has_retransmits: i64,
    pub congestion_used: Option<String>,
    pub streams: Vec<StreamResults>,
    /// With `get_server_output`: the server's human-readable output.
    pub server_output_text: Option<String>,
    /// With `get_server_output` from a `-J` server: its whole JSON document.
    pub server_output_json: Option<Value>,
}

fn req_f64(obj: &Map<String, Value>, key: &'static str) -> Result<f64, WireError> {
    get(obj, key)
        .and_then(lenient_f64)
        .ok_or(WireError::MissingField(key))
}

fn req_i64(obj: &Map<String, Value>, key: &'static str) -> Result<i64, WireError> {
    get(obj, key)
        .and_then(lenient_i64)
        .ok_or(WireError::MissingField(key))
}

impl StreamResults {
    fn parse(obj: &Map<String, Value>) -> Result<StreamResults, WireError> {
        let omitted_errors = get(obj, "omitted_errors").and_then(lenient_i64);
        let omitted_packets = get(obj, "omitted_packets").and_then(lenient_i64);
        if omitted_errors.is_some() != omitted_packets.is_some() {
            return Err(WireError::Invalid(
                "omitted_errors and omitted_packets must come together".into(),
            ));
        }
        let id = req_i64(obj, "id")?;
        Ok(StreamResults {
            id: i32::try_from(id)
                .map_err(|_| WireError::Invalid(format!("stream id {id} out of range")))?,
            bytes: req_i64(obj, "bytes")? as u64,
            retransmits: req_i64(obj, "retransmits")?,
            jitter: req_f64(obj, "jitter")?,
            errors: req_i64(obj, "errors")?,
            omitted_errors,
            packets: req_i64(obj, "packets")?,
            omitted_packets,
            start_time: get(obj, "start_time").and_then(lenient_f64).unwrap_or(0.0),
            end_time: get(obj, "end_time").and_then(lenient_f64).unwrap_or(0.0),
        })
    }

    fn emit(&self) -> String {
        let mut w = ObjWriter::new();
        w.int("id", self.id as i64)
            .int("bytes", self.bytes as i64)
            .int("retransmits", self.retransmits)
            .float("jitter", self.jitter)
            .int("errors", self.errors);
        if let (Some(e), Some(p)) = (self.omitted_errors, self.omitted_packets) {
            w.int("omitted_errors", e);
            w.int("packets", self.packets);
            w.int("omitted_packets", p);
        } else {
            w.int("packets", self.packets);
        }
        w.float("start_time", self.start_time)
            .float("end_time", self.end_time);
        w.finish()
    }
}

impl TestResults {
    /// Parses a results JSON body (without its length header).
    pub fn parse(body: &[u8]) -> Result<TestResults, WireError> {
        let value: Value =
            crate::util::json::from_json(body).map_err(|e| WireError::Json(e.to_string()))?;
        let obj = value
            .as_object()
            .ok_or_else(|| WireError::Json("results are not a JSON object".into()))?;
        let streams = get(obj, "streams")
            .and_then(Value::as_array)
            .ok_or(WireError::MissingField("streams"))?
            .iter()
            .map(|s| {
                s.as_object()
                    .ok_or_else(|| WireError::Json("a stream is not an object".into()))
                    .and_then(StreamResults::parse)
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(TestResults {
            cpu_util_total: req_f64(obj, "cpu_util_total")?,
            cpu_util_user: req_f64(obj, "cpu_util_user")?,
            cpu_util_system: req_f64(obj, "cpu_util_system")?,
            sender_has_retransmits: req_i64(obj, "sender_has_retransmits")?,
            congestion_used: get(obj, "congestion_used")
                .and_then(Value::as_str)
                .map(str::to_string),
            streams,
            server_output_text: get(obj, "server_output_text")
                .and_then(Value::as_str)
                .map(str::to_string),
            server_output_json: get(obj, "server_output_json").cloned(),
        })
    }

    /// The compact JSON body, keys in iperf3's order.
    pub fn emit(&self) -> String {
        let mut w = ObjWriter::new();
        w.float("cpu_util_total", self.cpu_util_total)
            .float("cpu_util_user", self.cpu_util_user)
            .float("cpu_util_system", self.cpu_util_system)
            .int("sender_has_retransmits", self.sender_has_retransmits);
        if let Some(c) = &self.congestion_used {
            w.string("congestion_used", c);
        }
        if let Some(t) = &self.server_output_text {
            w.string("server_output_text", t);
        }
        if let Some(j) = &self.server_output_json {
            w.raw("server_output_json", &j.to_string());
        }
        let streams: Vec<String> = self.streams.iter().map(StreamResults::emit).collect();
        w.raw("streams", &format!("[{}]", streams.join(",")));
        w.finish()
    }

    /// The peer's stream with this id (results are matched by id, IESTREAMID otherwise).
    pub fn stream(&self, id: i32) -> Option<&StreamResults> {
        self.streams.iter().find(|s| s.id == id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // §13.1 client results (sender) and server results (receiver, 3.12's unsigned -1).
    const CLIENT: &str = r#"{"cpu_util_total":40.9486032955941,"cpu_util_user":0.25041840450413511,"cpu_util_system":40.698184891089966,"sender_has_retransmits":1,"congestion_used":"bbr","streams":[{"id":1,"bytes":4089446400,"retransmits":1,"jitter":0,"errors":0,"packets":0,"start_time":0,"end_time":2.000331}]}"#;
    const SERVER: &str = r#"{"cpu_util_total":49.34766158465974,"cpu_util_user":1.2126336722225328,"cpu_util_system":48.134977997492271,"sender_has_retransmits":18446744073709551615,"congestion_used":"bbr","streams":[{"id":1,"bytes":4088922112,"retransmits":18446744073709551615,"jitter":0,"errors":0,"packets":0,"start_time":0,"end_time":2.003381}]}"#;
    // §13.6, 3.21 UDP with omitted_* fields and an exponent jitter.
    const UDP321: &str = r#"{"cpu_util_total":0.33684925147384026,"cpu_util_user":0.33684925147384026,"cpu_util_system":0,"sender_has_retransmits":0,"streams":[{"id":1,"bytes":1277952,"retransmits":-1,"jitter":5.2866392098286157e-06,"errors":0,"omitted_errors":0,"packets":39,"omitted_packets":0,"start_time":0,"end_time":1.001628},{"id":3,"bytes":1277952,"retransmits":-1,"jitter":4.5561477772657564e-05,"errors":0,"omitted_errors":0,"packets":39,"omitted_packets":0,"start_time":0,"end_time":1.001629}]}"#;

    #[test]
    fn test_parse_captures() {
        assert_eq!(CLIENT.len(), 0x11c);
        assert_eq!(SERVER.len(), 0x142);
        let c = TestResults::parse(CLIENT.as_bytes()).unwrap();
        assert_eq!(c.sender_has_retransmits, 1);
        assert_eq!(c.congestion_used.as_deref(), Some("bbr"));
        assert_eq!(c.streams[0].bytes, 4089446400);
        assert_eq!(c.streams[0].end_time, 2.000331);
        let s = TestResults::parse(SERVER.as_bytes()).unwrap();
        assert_eq!(s.sender_has_retransmits, -1);
        assert_eq!(s.streams[0].retransmits, -1);
        assert_eq!(s.stream(1).map(|s| s.bytes), Some(4088922112));
        assert!(s.stream(3).is_none());
        let u = TestResults::parse(UDP321.as_bytes()).unwrap();
        assert_eq!(u.streams.len(), 2);
        // serde_json's default float parser may be 1 ulp off the C strtod value.
        assert!((u.streams[1].jitter - 4.5561477772657564e-05).abs() < 1e-18);
        assert_eq!(u.streams[1].omitted_packets, Some(0));
        assert_eq!(u.streams[0].packets, 39);
    }

    #[test]
    fn test_emit_exact() {
        // Values with ≤ 15 significant digits print exactly as cJSON does.
        let r = TestResults {
            cpu_util_total: 40.9486032955941,
            cpu_util_user: 0.5,
            cpu_util_system: 0.0,
            sender_has_retransmits: -1,
            congestion_used: Some("bbr".into()),
            streams: vec![StreamResults {
                id: 1,
                bytes: 4089446400,
                retransmits: -1,
                packets: 0,
                end_time: 2.000331,
                ..Default::default()
            }],
            ..Default::default()
        };
        assert_eq!(
            r.emit(),
            r#"{"cpu_util_total":40.9486032955941,"cpu_util_user":0.5,"cpu_util_system":0,"sender_has_retransmits":-1,"congestion_used":"bbr","streams":[{"id":1,"bytes":4089446400,"retransmits":-1,"jitter":0,"errors":0,"packets":0,"start_time":0,"end_time":2.000331}]}"#
        );
    }

    #[test]
    fn test_roundtrip_captures() {
        for cap in [CLIENT, SERVER, UDP321] {
            let r = TestResults::parse(cap.as_bytes()).unwrap();
            assert_eq!(TestResults::parse(r.emit().as_bytes()).unwrap(), r);
        }
        // 3.12 -1 is re-emitted as -1.
        let s = TestResults::parse(SERVER.as_bytes()).unwrap().emit();
        assert!(s.contains(r#""sender_has_retransmits":-1"#));
    }

    #[test]
    fn test_refuses_incomplete() {
        let missing = CLIENT.replace(r#""cpu_util_user":0.25041840450413511,"#, "");
        assert_eq!(
            TestResults::parse(missing.as_bytes()),
            Err(WireError::MissingField("cpu_util_user"))
        );
        let half = UDP321.replacen(r#""omitted_packets":0,"#, "", 1);
        assert!(TestResults::parse(half.as_bytes()).is_err());
        assert!(TestResults::parse(b"{\"streams\":5}").is_err());
        assert!(TestResults::parse(b"nul").is_err());
    }
}
