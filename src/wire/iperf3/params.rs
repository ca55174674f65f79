//! The parameter JSON a client sends after PARAM_EXCHANGE (docs/protocols/iperf3.md §6).
//!
//! Server semantics follow every iperf3: flag keys count by **presence** (`"reverse":false`
//! enables reverse), keys are case-insensitive, unknown keys and wrongly typed values are
//! ignored (3.18+), numbers are read leniently. The emitter writes keys in `send_parameters`
//! order and omits every flag that is off.

use super::WireError;
use super::json::{ObjWriter, get, lenient_i64};
use serde_json::{Map, Value};

/// Transport of the data streams.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Protocol {
    Tcp,
    Udp,
    Sctp,
}

/// The test a client asks for. Defaults are what a server assumes for absent keys.
#[derive(Debug, Clone, PartialEq)]
pub struct TestParams {
    pub protocol: Protocol,
    /// `-O`: seconds omitted at the start.
    pub omit: u32,
    /// `-A n,m`: the CPU the server pins its streams to.
    pub server_affinity: Option<i64>,
    /// `-t`: seconds; 0 with `-n`/`-k` or unlimited.
    pub time: u32,
    /// `-n`: bytes (0 = not bytes-based).
    pub num: u64,
    /// `-k`: blocks (0 = not blocks-based).
    pub blockcount: u64,
    /// `-M`: TCP_MAXSEG.
    pub mss: Option<u32>,
    pub nodelay: bool,
    /// `-P`: streams per direction.
    pub parallel: u32,
    pub reverse: bool,
    pub bidirectional: bool,
    /// `-w`: socket buffer size in bytes.
    pub window: Option<u32>,
    /// `-l`: block size; `None` means the TCP default 131072 (a UDP client always sends it).
    pub len: Option<u32>,
    /// `-b`: bit/s per stream (0 = unlimited).
    pub bandwidth: u64,
    /// `--fq-rate`: bit/s.
    pub fqrate: u64,
    pub pacing_timer: Option<u32>,
    pub burst: u32,
    /// `-S`/`--dscp`: the whole TOS byte.
    pub tos: Option<u8>,
    pub flowlabel: Option<u32>,
    pub title: Option<String>,
    pub extra_data: Option<String>,
    /// `-C`: congestion control name.
    pub congestion: Option<String>,
    pub congestion_used: Option<String>,
    pub get_server_output: bool,
    pub udp_counters_64bit: bool,
    pub repeating_payload: bool,
    pub zerocopy: bool,
    /// `--skip-rx-copy` (3.19): the TCP receiver discards data in the kernel (MSG_TRUNC).
    pub skip_rx_copy: bool,
    /// `--gsro` (3.21): UDP GSO on the sender, with `gso_dg_size`-byte datagrams in
    /// `gso_bf_size`-byte sends; the keys are always sent by a 3.21 UDP client, 0 when off.
    pub gso: Option<UdpOffload>,
    /// `--gsro` (3.21): UDP GRO on the receiver into `gro_bf_size`-byte buffers.
    pub gro: Option<UdpOffload>,
    pub dont_fragment: bool,
    /// `authtoken`: base64 RSA-encrypted credentials (`iperf3::auth`).
    pub authtoken: Option<String>,
    pub client_version: Option<String>,
}

/// 3.21's UDP offload keys: `gso`/`gro` (0 or 1) and the sizes beside them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UdpOffload {
    pub on: bool,
    /// GSO: the datagram size (`gso_dg_size`); GRO: unused (0).
    pub dg_size: u32,
    /// `gso_bf_size` / `gro_bf_size`: bytes per send or receive buffer.
    pub bf_size: u32,
}

/// iperf3's TCP default block size.
pub const DEFAULT_TCP_LEN: u32 = 128 * 1024;
/// iperf3's largest TCP block size (`MAX_BLOCKSIZE`, 1 MiB).
pub const MAX_TCP_LEN: u32 = 1 << 20;
/// iperf3's UDP block size when the control MSS is unknown.
pub const DEFAULT_UDP_LEN: u32 = 1460;

impl Default for TestParams {
    fn default() -> Self {
        TestParams {
            protocol: Protocol::Tcp,
            omit: 0,
            server_affinity: None,
            time: 10,
            num: 0,
            blockcount: 0,
            mss: None,
            nodelay: false,
            parallel: 1,
            reverse: false,
            bidirectional: false,
            window: None,
            len: None,
            bandwidth: 0,
            fqrate: 0,
            pacing_timer: None,
            burst: 0,
            tos: None,
            flowlabel: None,
            title: None,
            extra_data: None,
            congestion: None,
            congestion_used: None,
            get_server_output: false,
            udp_counters_64bit: false,
            repeating_payload: false,
            zerocopy: false,
            skip_rx_copy: false,
            gso: None,
            gro: None,
            dont_fragment: false,
            authtoken: None,
            client_version: None,
        }
    }
}

fn num<T: TryFrom<i64>>(obj: &Map<String, Value>, key: &'static str) -> Option<T> {
    get(obj, key)
        .and_then(lenient_i64)
        .and_then(|v| T::try_from(v).ok())
}

fn text(obj: &Map<String, Value>, key: &str) -> Option<String> {
    get(obj, key).and_then(|v| v.as_str()).map(str::to_string)
}

impl TestParams {
    /// Block size in effect: `len`, or the TCP default.
    pub fn block_len(&self) -> u32 {
        self.len.unwrap_or(DEFAULT_TCP_LEN)
    }

    /// Parses the parameter JSON body (without its length header).
    pub fn parse(body: &[u8]) -> Result<TestParams, WireError> {
        let value: Value =
            crate::util::json::from_json(body).map_err(|e| WireError::Json(e.to_string()))?;
        let obj = value
            .as_object()
            .ok_or_else(|| WireError::Json("parameters are not a JSON object".into()))?;
        let has = |k: &str| get(obj, k).is_some();
        let mut p = TestParams::default();
        // Later checks win, as in iperf3's get_parameters: tcp, then udp, then sctp.
        if has("tcp") {
            p.protocol = Protocol::Tcp;
        }
        if has("udp") {
            p.protocol = Protocol::Udp;
        }
        if has("sctp") {
            p.protocol = Protocol::Sctp;
        }
        p.omit = num(obj, "omit").unwrap_or(0);
        p.server_affinity = num(obj, "server_affinity");
        p.time = num(obj, "time").unwrap_or(if has("time") { 0 } else { 10 });
        p.num = num(obj, "num").unwrap_or(0);
        p.blockcount = num(obj, "blockcount").unwrap_or(0);
        p.mss = num(obj, "MSS").filter(|&m: &u32| m > 0);
        p.nodelay = has("nodelay");
        p.parallel = num(obj, "parallel").unwrap_or(1);
        p.reverse = has("reverse");
        p.bidirectional = has("bidirectional");
        p.window = num(obj, "window").filter(|&w: &u32| w > 0);
        p.len = num(obj, "len").filter(|&l: &u32| l > 0);
        p.bandwidth = num(obj, "bandwidth").unwrap_or(0);
        p.fqrate = num(obj, "fqrate").unwrap_or(0);
        p.pacing_timer = num(obj, "pacing_timer");
        p.burst = num(obj, "burst").unwrap_or(0);
        p.tos = num::<i64>(obj, "TOS").and_then(|t| u8::try_from(t).ok());
        p.flowlabel = num(obj, "flowlabel");
        p.title = text(obj, "title");
        p.extra_data = text(obj, "extra_data");
        p.congestion = text(obj, "congestion");
        p.congestion_used = text(obj, "congestion_used");
        p.get_server_output = has("get_server_output");
        p.udp_counters_64bit = has("udp_counters_64bit");
        p.repeating_payload = has("repeating_payload");
        p.zerocopy = num::<i64>(obj, "zerocopy").is_some_and(|z| z != 0);
        p.skip_rx_copy = num::<i64>(obj, "skip_rx_copy").is_some_and(|z| z != 0);
        p.gso = num::<i64>(obj, "gso").map(|on| UdpOffload {
            on: on != 0,
            dg_size: num(obj, "gso_dg_size").unwrap_or(0),
            bf_size: num(obj, "gso_bf_size").unwrap_or(0),
        });
        p.gro = num::<i64>(obj, "gro").map(|on| UdpOffload {
            on: on != 0,
            dg_size: 0,
            bf_size: num(obj, "gro_bf_size").unwrap_or(0),
        });
        p.dont_fragment = num::<i64>(obj, "dont_fragment").is_some_and(|z| z != 0);
        p.authtoken = text(obj, "authtoken");
        p.client_version = text(obj, "client_version");
        Ok(p)
    }

    /// Range checks a server applies before accepting (iperf3 master's limits).
    pub fn validate(&self) -> Result<(), WireError> {
        let bad = |s: String| Err(WireError::Invalid(s));
        if self.parallel == 0 || self.parallel > super::MAX_STREAMS {
            return bad(format!("parallel {} not in 1..128", self.parallel));
        }
        if self.omit > 600 {
            return bad(format!("omit {} s above 600", self.omit));
        }
        if self.time > 86_400 {
            return bad(format!("time {} s above 86400", self.time));
        }
        let len = self.block_len();
        match self.protocol {
            Protocol::Tcp if len > MAX_TCP_LEN => {
                return bad(format!("block size {len} above {MAX_TCP_LEN} bytes"));
            }
            Protocol::Udp if !(super::udp::HEADER_LEN_32 as u32..=65507).contains(&len) => {
                return bad(format!("UDP len {len} not in 16..65507"));
            }
            Protocol::Sctp => return bad("SCTP is not supported".into()),
            _ => {}
        }
        if self.window.is_some_and(|w| w > 512 << 20) {
            return bad("window above 512 MiB".into());
        }
        Ok(())
    }

    /// The compact JSON body, keys in iperf3's order, flags only when on.
    pub fn emit(&self) -> String {
        let mut w = ObjWriter::new();
        match self.protocol {
            Protocol::Tcp => w.boolean("tcp", true),
            Protocol::Udp => w.boolean("udp", true),
            Protocol::Sctp => w.boolean("sctp", true),
        };
        w.int("omit", self.omit as i64);
        if let Some(a) = self.server_affinity {
            w.int("server_affinity", a);
        }
        w.int("time", self.time as i64);
        w.int("num", self.num as i64);
        w.int("blockcount", self.blockcount as i64);
        if let Some(m) = self.mss {
            w.int("MSS", m as i64);
        }
        if self.nodelay {
            w.boolean("nodelay", true);
        }
        w.int("parallel", self.parallel as i64);
        if self.reverse {
            w.boolean("reverse", true);
        }
        if self.bidirectional {
            w.boolean("bidirectional", true);
        }
        if let Some(win) = self.window {
            w.int("window", win as i64);
        }
        if let Some(l) = self.len {
            w.int("len", l as i64);
        }
        if self.bandwidth != 0 {
            w.int("bandwidth", self.bandwidth as i64);
        }
        if self.fqrate != 0 {
            w.int("fqrate", self.fqrate as i64);
        }
        if let Some(pt) = self.pacing_timer {
            w.int("pacing_timer", pt as i64);
        }
        if self.burst != 0 {
            w.int("burst", self.burst as i64);
        }
        if let Some(t) = self.tos {
            w.int("TOS", t as i64);
        }
        if let Some(f) = self.flowlabel {
            w.int("flowlabel", f as i64);
        }
        if let Some(t) = &self.title {
            w.string("title", t);
        }
        if let Some(t) = &self.extra_data {
            w.string("extra_data", t);
        }
        if let Some(c) = &self.congestion {
            w.string("congestion", c);
        }
        if let Some(c) = &self.congestion_used {
            w.string("congestion_used", c);
        }
        if self.get_server_output {
            w.int("get_server_output", 1);
        }
        if self.udp_counters_64bit {
            w.int("udp_counters_64bit", 1);
        }
        if self.repeating_payload {
            w.int("repeating_payload", 1);
        }
        if self.zerocopy {
            w.int("zerocopy", 1);
        }
        if self.dont_fragment {
            w.int("dont_fragment", 1);
        }
        if self.skip_rx_copy {
            w.int("skip_rx_copy", 1);
        }
        if let Some(g) = self.gso {
            w.int("gso", i64::from(g.on));
            w.int("gso_dg_size", i64::from(g.dg_size));
            w.int("gso_bf_size", i64::from(g.bf_size));
        }
        if let Some(g) = self.gro {
            w.int("gro", i64::from(g.on));
            w.int("gro_bf_size", i64::from(g.bf_size));
        }
        if let Some(a) = &self.authtoken {
            w.string("authtoken", a);
        }
        if let Some(v) = &self.client_version {
            w.string("client_version", v);
        }
        w.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Real parameter bodies from docs/protocols/iperf3.md §6 and §13.
    const TCP: &str = r#"{"tcp":true,"omit":0,"time":2,"num":0,"blockcount":0,"parallel":1,"len":131072,"pacing_timer":1000,"client_version":"3.12"}"#;
    const REVERSE: &str = r#"{"tcp":true,"omit":0,"time":2,"num":0,"blockcount":0,"parallel":1,"reverse":true,"len":131072,"pacing_timer":1000,"client_version":"3.12"}"#;
    const UDP321: &str = r#"{"udp":true,"omit":0,"time":1,"num":0,"blockcount":0,"parallel":1,"len":32768,"bandwidth":10000000,"pacing_timer":1000,"gso":0,"gso_dg_size":0,"gso_bf_size":65507,"gro":0,"gro_bf_size":65507,"client_version":"3.21"}"#;
    const MANY: &str = r#"{"tcp":true,"omit":1,"time":1,"num":0,"blockcount":0,"MSS":1400,"nodelay":true,"parallel":1,"window":524288,"len":102400,"bandwidth":1000000000,"pacing_timer":1000,"TOS":16,"title":"T1","extra_data":"X1","congestion":"reno","repeating_payload":1,"zerocopy":1,"client_version":"3.12"}"#;
    const UDP64: &str = r#"{"udp":true,"omit":0,"time":1,"num":0,"blockcount":0,"parallel":1,"len":1400,"bandwidth":10000000,"fqrate":20000000,"pacing_timer":500,"burst":5,"udp_counters_64bit":1,"repeating_payload":1,"dont_fragment":1,"client_version":"3.12"}"#;
    const GSRO: &str = r#"{"udp":true,"omit":0,"time":1,"num":0,"blockcount":0,"parallel":1,"len":1400,"bandwidth":1000000000,"pacing_timer":1000,"gso":1,"gso_dg_size":1400,"gso_bf_size":64400,"gro":1,"gro_bf_size":65507,"client_version":"3.21"}"#;
    const ORDER: &str = r#"{"tcp":true,"omit":0,"time":1,"num":0,"blockcount":0,"parallel":1,"len":131072,"pacing_timer":1000,"TOS":16,"title":"tt","congestion":"reno","repeating_payload":1,"zerocopy":1,"skip_rx_copy":1,"client_version":"3.21"}"#;
    const SKIP: &str = r#"{"tcp":true,"omit":0,"time":1,"num":0,"blockcount":0,"parallel":1,"len":131072,"pacing_timer":1000,"skip_rx_copy":1,"client_version":"3.21"}"#;
    const ZC: &str = r#"{"tcp":true,"omit":0,"time":1,"num":0,"blockcount":0,"parallel":1,"len":131072,"pacing_timer":1000,"zerocopy":1,"client_version":"3.21"}"#;
    const BYTES: &str = r#"{"tcp":true,"omit":0,"time":0,"num":104857600,"blockcount":0,"parallel":1,"len":131072,"pacing_timer":1000,"client_version":"3.12"}"#;

    #[test]
    fn test_parse_tcp() {
        let p = TestParams::parse(TCP.as_bytes()).unwrap();
        assert_eq!(p.protocol, Protocol::Tcp);
        assert_eq!((p.time, p.parallel, p.block_len()), (2, 1, 131072));
        assert!(!p.reverse && !p.bidirectional);
        assert_eq!(p.client_version.as_deref(), Some("3.12"));
        assert!(p.validate().is_ok());
        assert!(TestParams::parse(REVERSE.as_bytes()).unwrap().reverse);
        assert_eq!(TestParams::parse(BYTES.as_bytes()).unwrap().num, 104857600);
    }

    #[test]
    fn test_parse_many_options() {
        let p = TestParams::parse(MANY.as_bytes()).unwrap();
        assert_eq!(p.omit, 1);
        assert_eq!(p.mss, Some(1400));
        assert!(p.nodelay);
        assert_eq!(p.window, Some(524288));
        assert_eq!(p.len, Some(102400));
        assert_eq!(p.bandwidth, 1_000_000_000);
        assert_eq!(p.tos, Some(16));
        assert_eq!(p.title.as_deref(), Some("T1"));
        assert_eq!(p.congestion.as_deref(), Some("reno"));
        assert!(p.repeating_payload && p.zerocopy);
        let u = TestParams::parse(UDP64.as_bytes()).unwrap();
        assert_eq!(u.protocol, Protocol::Udp);
        assert!(u.udp_counters_64bit && u.dont_fragment);
        assert_eq!((u.burst, u.fqrate, u.len), (5, 20_000_000, Some(1400)));
        let g = TestParams::parse(UDP321.as_bytes()).unwrap();
        assert_eq!(g.bandwidth, 10_000_000);
        assert!(
            !g.gso.unwrap().on && !g.gro.unwrap().on,
            "3.21 sends gso 0 when off"
        );
        let g = TestParams::parse(GSRO.as_bytes()).unwrap();
        let (gso, gro) = (g.gso.unwrap(), g.gro.unwrap());
        assert!(gso.on && gro.on);
        assert_eq!(
            (gso.dg_size, gso.bf_size, gro.bf_size),
            (1400, 64400, 65507)
        );
        assert!(TestParams::parse(SKIP.as_bytes()).unwrap().skip_rx_copy);
        assert!(TestParams::parse(ZC.as_bytes()).unwrap().zerocopy);
    }

    #[test]
    fn test_emit_matches_capture() {
        for cap in [
            TCP, REVERSE, MANY, UDP64, BYTES, UDP321, GSRO, SKIP, ZC, ORDER,
        ] {
            let p = TestParams::parse(cap.as_bytes()).unwrap();
            assert_eq!(p.emit(), cap);
        }
    }

    #[test]
    fn test_presence_semantics() {
        let p =
            TestParams::parse(br#"{"TCP":true,"Reverse":false,"udp_counters_64bit":0}"#).unwrap();
        assert!(p.reverse, "presence, not value, turns reverse on");
        assert!(p.udp_counters_64bit);
        assert_eq!(p.time, 10, "absent time means iperf3's default");
        // Wrongly typed values are ignored; 3.12's unsigned -1 reads as -1.
        let p = TestParams::parse(br#"{"tcp":true,"time":"10","parallel":2.0,"TOS":1e400}"#);
        assert!(p.is_err(), "1e400 is not valid JSON for serde_json");
        let p = TestParams::parse(br#"{"tcp":true,"time":"10","parallel":2.0}"#).unwrap();
        assert_eq!((p.time, p.parallel), (0, 2));
    }

    #[test]
    fn test_refuses_bad_input() {
        assert!(TestParams::parse(b"").is_err());
        assert!(TestParams::parse(b"[1,2]").is_err());
        assert!(TestParams::parse(b"{\"tcp\":tru").is_err());
        let p = TestParams::parse(br#"{"tcp":true,"parallel":500}"#).unwrap();
        assert!(p.validate().is_err());
        let p = TestParams::parse(br#"{"udp":true,"len":8}"#).unwrap();
        assert!(p.validate().is_err());
        let p = TestParams::parse(br#"{"tcp":true,"len":2097152}"#).unwrap();
        assert!(p.validate().is_err(), "above iperf3's 1 MiB MAX_BLOCKSIZE");
    }
}
