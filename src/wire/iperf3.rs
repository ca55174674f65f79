//! iperf3's control protocol on the wire (docs/protocols/iperf3.md §2–§4, §11): the 37-byte cookie, the
//! one-byte states, the 4-byte JSON length framing and the SERVER_ERROR payload. No I/O.
//!
//! Submodules hold the JSON messages ([`params`], [`results`]) and the UDP datagram header
//! ([`udp`]). Every parser here is `pub` and total (never panics) so `fuzz/` can drive it.

pub mod errors;
pub mod json;
pub mod params;
pub mod results;
pub mod udp;

pub use errors::{ErrorPayload, strerror};
pub use params::{Protocol, TestParams, UdpOffload};
pub use results::{StreamResults, TestResults};
pub use udp::{UDP_CONNECT_MSG, UDP_CONNECT_REPLY, UdpHeader};

/// iperf3's default port, for both the control connection and the data streams.
pub const DEFAULT_PORT: u16 = 5201;
/// The cookie: 36 characters and a NUL, first on the control and on every TCP data connection.
pub const COOKIE_SIZE: usize = 37;
/// The alphabet iperf3's `make_cookie` draws from (never validated by a server).
pub const COOKIE_ALPHABET: &[u8; 32] = b"abcdefghijklmnopqrstuvwxyz234567";
/// iperf3 3.18+ refuses parameter JSON longer than this (`MAX_PARAMS_JSON_STRING`).
pub const MAX_PARAMS_LEN: usize = 8192;
/// Our cap for results JSON (iperf3 has none; with `--get-server-output` it is a few KB).
pub const MAX_RESULTS_LEN: usize = 4 << 20;
/// Most streams a client may ask for (`-P`), as in iperf3.
pub const MAX_STREAMS: u32 = 128;

/// Why bytes on the wire were refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    #[error("truncated: {what} needs {needed} bytes, got {got}")]
    Truncated {
        what: &'static str,
        needed: usize,
        got: usize,
    },
    #[error("unknown iperf3 control state byte 0x{0:02x}")]
    UnknownState(u8),
    #[error("JSON length {len} is {why} (limit {max} bytes)")]
    BadJsonLength {
        len: u64,
        max: usize,
        why: &'static str,
    },
    #[error("invalid JSON: {0}")]
    Json(String),
    #[error("JSON message is missing the required field `{0}`")]
    MissingField(&'static str),
    #[error("invalid value: {0}")]
    Invalid(String),
}

/// The control-connection states (`iperf_api.h`, identical in 3.12 and 3.21), one signed byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum State {
    TestStart,
    TestRunning,
    ResultRequest,
    TestEnd,
    StreamBegin,
    StreamRunning,
    StreamEnd,
    AllStreamsEnd,
    ParamExchange,
    CreateStreams,
    ServerTerminate,
    ClientTerminate,
    ExchangeResults,
    DisplayResults,
    IperfStart,
    IperfDone,
    AccessDenied,
    ServerError,
}

impl State {
    /// The byte on the wire.
    pub fn to_byte(self) -> u8 {
        let v: i8 = match self {
            State::TestStart => 1,
            State::TestRunning => 2,
            State::ResultRequest => 3,
            State::TestEnd => 4,
            State::StreamBegin => 5,
            State::StreamRunning => 6,
            State::StreamEnd => 7,
            State::AllStreamsEnd => 8,
            State::ParamExchange => 9,
            State::CreateStreams => 10,
            State::ServerTerminate => 11,
            State::ClientTerminate => 12,
            State::ExchangeResults => 13,
            State::DisplayResults => 14,
            State::IperfStart => 15,
            State::IperfDone => 16,
            State::AccessDenied => -1,
            State::ServerError => -2,
        };
        v as u8
    }

    /// Parses a state byte; any value not in iperf3's table is an error (IEMESSAGE).
    pub fn from_byte(b: u8) -> Result<State, WireError> {
        Ok(match b as i8 {
            1 => State::TestStart,
            2 => State::TestRunning,
            3 => State::ResultRequest,
            4 => State::TestEnd,
            5 => State::StreamBegin,
            6 => State::StreamRunning,
            7 => State::StreamEnd,
            8 => State::AllStreamsEnd,
            9 => State::ParamExchange,
            10 => State::CreateStreams,
            11 => State::ServerTerminate,
            12 => State::ClientTerminate,
            13 => State::ExchangeResults,
            14 => State::DisplayResults,
            15 => State::IperfStart,
            16 => State::IperfDone,
            -1 => State::AccessDenied,
            -2 => State::ServerError,
            _ => return Err(WireError::UnknownState(b)),
        })
    }
}

/// The test cookie: 37 bytes, 36 characters of [`COOKIE_ALPHABET`] and a NUL from every iperf3
/// 3.x client. Parsing keeps any bytes; a server checks [`Cookie::is_plausible`] before it
/// gives the connection a test slot.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Cookie(pub [u8; COOKIE_SIZE]);

impl Cookie {
    /// Reads the cookie from the first 37 bytes of `buf`.
    pub fn parse(buf: &[u8]) -> Result<Cookie, WireError> {
        let bytes: [u8; COOKIE_SIZE] = buf
            .get(..COOKIE_SIZE)
            .and_then(|b| b.try_into().ok())
            .ok_or(WireError::Truncated {
                what: "cookie",
                needed: COOKIE_SIZE,
                got: buf.len(),
            })?;
        Ok(Cookie(bytes))
    }

    /// A fresh cookie like iperf3's `make_cookie`: 36 characters from [`COOKIE_ALPHABET`]
    /// chosen by `random` (one byte each), then a NUL.
    pub fn from_random(random: &[u8; COOKIE_SIZE - 1]) -> Cookie {
        let mut c = [0u8; COOKIE_SIZE];
        for (dst, r) in c.iter_mut().zip(random) {
            *dst = COOKIE_ALPHABET[(*r % 32) as usize];
        }
        Cookie(c)
    }

    /// The 37 bytes to send.
    pub fn as_bytes(&self) -> &[u8; COOKIE_SIZE] {
        &self.0
    }

    /// The part before the first NUL: what iperf3 compares (`strncmp`) and prints in `-J`.
    pub fn text_bytes(&self) -> &[u8] {
        let end = self.0.iter().position(|&b| b == 0).unwrap_or(COOKIE_SIZE);
        &self.0[..end]
    }

    /// The text part, lossily decoded (for `start.cookie` in the JSON output).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(self.text_bytes()).into_owned()
    }

    /// iperf3's data-stream check: `strncmp(a, b, 37) == 0`, i.e. equal up to the first NUL.
    pub fn matches(&self, other: &Cookie) -> bool {
        self.text_bytes() == other.text_bytes()
    }

    /// 36 characters of iperf3's alphabet then a NUL, as `make_cookie` writes: anything else is
    /// not an iperf3 client and must not take a test slot.
    pub fn is_plausible(&self) -> bool {
        self.0[COOKIE_SIZE - 1] == 0
            && self.0[..COOKIE_SIZE - 1]
                .iter()
                .all(|b| COOKIE_ALPHABET.contains(b))
    }

    /// Does this connection start with routerbench's own protocol magic instead of a cookie?
    pub fn is_routerbench(first_byte: u8) -> bool {
        first_byte == crate::wire::ROUTERBENCH_MAGIC[0]
    }
}

impl std::fmt::Debug for Cookie {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Cookie({:?})",
            String::from_utf8_lossy(self.text_bytes())
        )
    }
}

/// The 4-byte big-endian length that precedes each JSON message.
pub fn json_len_header(len: usize) -> [u8; 4] {
    (len as u32).to_be_bytes()
}

/// Parses a JSON length header, refusing 0 (iperf3 does too) and anything above `max`.
pub fn parse_json_len(buf: &[u8], max: usize) -> Result<usize, WireError> {
    let b: [u8; 4] = buf
        .get(..4)
        .and_then(|b| b.try_into().ok())
        .ok_or(WireError::Truncated {
            what: "JSON length",
            needed: 4,
            got: buf.len(),
        })?;
    let len = u32::from_be_bytes(b) as u64;
    if len == 0 {
        return Err(WireError::BadJsonLength {
            len,
            max,
            why: "zero",
        });
    }
    if len > max as u64 {
        return Err(WireError::BadJsonLength {
            len,
            max,
            why: "too long",
        });
    }
    Ok(len as usize)
}

/// Parses one framed JSON message `[u32 len][body]` from the start of `buf`: the body and the
/// total number of bytes used.
pub fn parse_json_frame(buf: &[u8], max: usize) -> Result<(&[u8], usize), WireError> {
    let len = parse_json_len(buf, max)?;
    let body = buf.get(4..4 + len).ok_or(WireError::Truncated {
        what: "JSON body",
        needed: 4 + len,
        got: buf.len(),
    })?;
    Ok((body, 4 + len))
}

/// The bytes of one framed JSON message (sent by iperf3 as two writes: header, then body).
pub fn emit_json_frame(body: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(4 + body.len());
    v.extend_from_slice(&json_len_header(body.len()));
    v.extend_from_slice(body);
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    /// §13: start of the client → server stream of the TCP example (cookie, length, JSON).
    static CLIENT_START: [u8; 48] = [
        0x77, 0x78, 0x61, 0x75, 0x6a, 0x33, 0x66, 0x76, 0x6f, 0x78, 0x64, 0x79, 0x37, 0x66, 0x34,
        0x74, 0x78, 0x77, 0x32, 0x6e, 0x65, 0x37, 0x63, 0x77, 0x66, 0x73, 0x7a, 0x7a, 0x79, 0x35,
        0x6b, 0x70, 0x63, 0x33, 0x6b, 0x36, 0x00, 0x00, 0x00, 0x00, 0x7b, 0x7b, 0x22, 0x74, 0x63,
        0x70, 0x22, 0x3a,
    ];
    /// §13: the server → client state bytes of the TCP example, up to the results length.
    static SERVER_START: [u8; 9] = [0x09, 0x0a, 0x01, 0x02, 0x0d, 0x00, 0x00, 0x01, 0x42];

    #[test]
    fn test_parse_cookie() {
        let c = Cookie::parse(&CLIENT_START).unwrap();
        assert_eq!(c.text(), "wxauj3fvoxdy7f4txw2ne7cwfszzy5kpc3k6");
        assert_eq!(c.as_bytes()[36], 0);
        assert_eq!(
            Cookie::parse(&CLIENT_START[..36]),
            Err(WireError::Truncated {
                what: "cookie",
                needed: 37,
                got: 36
            })
        );
    }

    #[test]
    fn test_cookie_matches_like_strncmp() {
        let a = Cookie::parse(&CLIENT_START).unwrap();
        let mut b = a;
        assert!(a.matches(&b));
        b.0[5] = b'z';
        assert!(!a.matches(&b));
        // Bytes after the first NUL are not compared.
        let mut old = [0u8; 37];
        old[..5].copy_from_slice(b"host.");
        let mut old2 = old;
        old2[20] = b'x';
        assert!(Cookie(old).matches(&Cookie(old2)));
    }

    #[test]
    fn test_cookie_plausible() {
        let good = Cookie::parse(b"npr43x5sa2ne3y7mrklos66ak3vzsyja3qim\0").unwrap();
        assert!(good.is_plausible());
        let mut upper = good;
        upper.0[3] = b'A';
        assert!(!upper.is_plausible(), "upper case is not in the alphabet");
        let mut no_nul = good;
        no_nul.0[36] = b'a';
        assert!(!no_nul.is_plausible());
        assert!(!Cookie([0xab; COOKIE_SIZE]).is_plausible());
        assert!(crate::iperf3::new_cookie().is_plausible());
    }

    #[test]
    fn test_generate_cookie() {
        let c = Cookie::from_random(&[0u8; 36]);
        assert_eq!(c.text(), "a".repeat(36));
        let r: [u8; 36] = std::array::from_fn(|i| (i * 7 + 31) as u8);
        let c = Cookie::from_random(&r);
        assert!(c.text_bytes().iter().all(|b| COOKIE_ALPHABET.contains(b)));
        assert_eq!(c.as_bytes()[36], 0);
        assert!(!Cookie::is_routerbench(c.as_bytes()[0]));
        assert!(Cookie::is_routerbench(crate::wire::ROUTERBENCH_MAGIC[0]));
    }

    #[test]
    fn test_state_bytes() {
        let states: Vec<State> = SERVER_START[..5]
            .iter()
            .map(|&b| State::from_byte(b).unwrap())
            .collect();
        assert_eq!(
            states,
            [
                State::ParamExchange,
                State::CreateStreams,
                State::TestStart,
                State::TestRunning,
                State::ExchangeResults
            ]
        );
        for s in states {
            assert!(SERVER_START.contains(&s.to_byte()));
        }
        assert_eq!(State::from_byte(0x0e), Ok(State::DisplayResults));
        assert_eq!(State::from_byte(0x10), Ok(State::IperfDone));
        assert_eq!(State::from_byte(0x04), Ok(State::TestEnd));
        assert_eq!(State::from_byte(0xff), Ok(State::AccessDenied));
        assert_eq!(State::from_byte(0xfe), Ok(State::ServerError));
        assert_eq!(State::AccessDenied.to_byte(), 0xff);
        assert_eq!(State::ServerError.to_byte(), 0xfe);
        assert_eq!(State::from_byte(0), Err(WireError::UnknownState(0)));
        assert_eq!(State::from_byte(17), Err(WireError::UnknownState(17)));
        assert_eq!(State::from_byte(0xfd), Err(WireError::UnknownState(0xfd)));
    }

    #[test]
    fn test_parse_json_len() {
        // Client results length in §13.1: 0x11c = 284; server results: 0x142 = 322.
        assert_eq!(parse_json_len(&[0, 0, 1, 0x1c], MAX_RESULTS_LEN), Ok(284));
        assert_eq!(parse_json_len(&SERVER_START[5..], MAX_RESULTS_LEN), Ok(322));
        // Parameters of §13.1: 0x7b = 123.
        assert_eq!(parse_json_len(&CLIENT_START[37..], MAX_PARAMS_LEN), Ok(123));
        assert!(matches!(
            parse_json_len(&[0, 0, 0, 0], MAX_PARAMS_LEN),
            Err(WireError::BadJsonLength { why: "zero", .. })
        ));
        // A 4 GiB length is refused before anything is allocated.
        assert!(matches!(
            parse_json_len(&[0xff, 0xff, 0xff, 0xff], MAX_PARAMS_LEN),
            Err(WireError::BadJsonLength {
                len: 0xffff_ffff,
                ..
            })
        ));
        assert!(parse_json_len(&[0, 0, 0x20, 0x01], MAX_PARAMS_LEN).is_err());
        assert!(matches!(
            parse_json_len(&[0, 0], MAX_PARAMS_LEN),
            Err(WireError::Truncated { .. })
        ));
    }

    #[test]
    fn test_json_frame_roundtrip() {
        let body = br#"{"tcp":true}"#;
        let framed = emit_json_frame(body);
        assert_eq!(&framed[..4], &[0, 0, 0, 12]);
        assert_eq!(parse_json_frame(&framed, 100), Ok((&body[..], 16)));
        assert!(parse_json_frame(&framed[..10], 100).is_err());
    }
}
