//! routerbench's own protocol (version 1): control frames on TCP and probe packets on UDP.
//!
//! Pure byte formats, no I/O. Every TCP connection to the server's port starts with
//! [`ROUTERBENCH_MAGIC`](super::ROUTERBENCH_MAGIC) (8 bytes). After it come **frames**:
//!
//! ```text
//! 0      1        3
//! +------+--------+----------------------+
//! | type | length | payload (length B)   |   length: u16 big-endian, at most MAX_PAYLOAD
//! +------+--------+----------------------+
//! ```
//!
//! All integers are big-endian. A string is a u8 length then that many UTF-8 bytes.
//!
//! | type | name        | direction | payload |
//! |------|-------------|-----------|---------|
//! | 0x01 | Hello       | c → s     | version u16, then optionally token str (opens a control connection) |
//! | 0x02 | LoadHello   | c → s     | version u16, session u64, flow u8, direction u8 (0 up, 1 down), tos u8, cc str |
//! | 0x03 | Start       | c → s     | start_in_us u32, duration_ms u32, step_ms u16 |
//! | 0x04 | Finish      | c → s     | (empty) |
//! | 0x81 | Welcome     | s → c     | version u16, session u64, udp_port u16, max_duration_ms u32, max_flows u8 |
//! | 0x82 | LoadAccept  | s → c     | flow u8, tos u8, cc str (both read back from the server's socket) |
//! | 0x83 | StepReport  | s → c     | step u32, n u8, n × (flow u8, bytes u64, tcp_rtt_us u32) |
//! | 0x84 | Finished    | s → c     | n u8, n × (stream u8, received u32, reflected u32) |
//! | 0x05 | RpmBegin    | c → s     | duration_ms u32 (an RPM test on this session, at most this long) |
//! | 0x06 | RpmLoadHello| c → s     | version u16, session u64, conn u8, direction u8 (first message of an RPM load connection) |
//! | 0x07 | RpmProbe    | c → s     | version u16, session u64, id u32 (first message of a foreign-probe connection) |
//! | 0x85 | RpmReady    | s → c     | max_connections u8, max_duration_ms u32 |
//! | 0x87 | RpmProbeReply | s → c   | id u32 |
//! | 0xEE | Error       | s → c     | code u8, message str |
//!
//! **RPM extension** (`routerbench rpm`, docs/rpm.md): after Welcome the client sends RpmBegin
//! and gets RpmReady; each load connection starts with RpmLoadHello (answered by LoadAccept)
//! and then carries the framed stream of [`rpm`] (data, and probe requests and responses queued
//! behind the data); each foreign probe is a fresh connection whose first message is RpmProbe,
//! answered by RpmProbeReply. A server without the extension answers these types with Error
//! BadRequest ("unknown message type"), which the client reports as such; older clients never
//! send them, so version 1 stays as it was.
//!
//! A session: the client opens a control connection (Hello → Welcome), then one TCP connection
//! per load flow (LoadHello → LoadAccept), probes the UDP reflector on `udp_port`, sends Start
//! (all flows begin `start_in_us` after the server reads it, for `duration_ms`), receives one
//! StepReport per step with the bytes each upload flow delivered to the server in that step (and
//! the server-side TCP RTT of each download flow), and ends with Finish → Finished, which carries
//! how many probes of each stream the reflector received and answered (loss per direction).
//!
//! Probe packets (UDP, both directions, [`PROBE_HEADER_LEN`] bytes then fill):
//!
//! ```text
//!  0 "RBPR"  4 version u8  5 kind u8 (1 probe, 2 reply)  6 stream u8  7 flags u8
//!  8 session u64      16 seq u32      20 prev_seq u32
//! 24 client_tx_ns u64 (client clock, informative)
//! 32 server_rx_ns u64 (kernel receive timestamp at the reflector)
//! 40 server_tx_ns u64 (reflector clock just before its send call)
//! 48 server_prev_tx_ns u64 (kernel send timestamp of the reply to `prev_seq`, flag bit 0)
//! ```
//!
//! The reflector answers with exactly the bytes it received (fill included), never more.
//!
//! **Token** (server `--token`): Hello may carry a shared secret after the version, as a string
//! (u8 length, at most [`MAX_TOKEN_LEN`] bytes). A Hello of only the version (older clients) has
//! the empty token. A server started with a token answers a Hello whose token differs with
//! Error `Unauthorized` (6) and closes; load flows need the session id of an accepted Hello, so
//! they carry no token of their own.

use std::fmt;

/// The protocol version this build speaks.
pub const VERSION: u16 = 1;
/// Largest frame payload accepted; anything longer is a protocol error, not an allocation.
pub const MAX_PAYLOAD: usize = 4096;
/// Frame header: type u8 + length u16.
pub const FRAME_HEADER_LEN: usize = 3;
/// Longest congestion-control name (Linux TCP_CA_NAME_MAX is 16).
pub const MAX_CC_LEN: usize = 16;
/// Longest shared token a Hello may carry.
pub const MAX_TOKEN_LEN: usize = 128;

/// Why bytes are not a valid message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    #[error("truncated: needed {needed} bytes, got {got}")]
    Truncated { needed: usize, got: usize },
    #[error("unknown message type 0x{0:02x}")]
    UnknownType(u8),
    #[error("frame payload of {0} bytes exceeds the limit of {MAX_PAYLOAD}")]
    TooLong(usize),
    #[error("malformed {what}: {why}")]
    Malformed { what: &'static str, why: String },
    #[error("not a routerbench probe (bad magic or version)")]
    NotProbe,
}

/// Error codes carried by an Error frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorCode {
    UnsupportedVersion = 1,
    Busy = 2,
    BadRequest = 3,
    LimitExceeded = 4,
    UnknownSession = 5,
    Unauthorized = 6,
}

impl ErrorCode {
    fn from_u8(v: u8) -> Option<Self> {
        Some(match v {
            1 => Self::UnsupportedVersion,
            2 => Self::Busy,
            3 => Self::BadRequest,
            4 => Self::LimitExceeded,
            5 => Self::UnknownSession,
            6 => Self::Unauthorized,
            _ => return None,
        })
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = match self {
            Self::UnsupportedVersion => "unsupported protocol version",
            Self::Busy => "server busy",
            Self::BadRequest => "bad request",
            Self::LimitExceeded => "limit exceeded",
            Self::UnknownSession => "unknown session",
            Self::Unauthorized => "wrong or missing token (use --token)",
        };
        f.write_str(s)
    }
}

/// Direction of a load flow, seen from the client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    Upload = 0,
    Download = 1,
}

/// One step's numbers for one flow, as the server saw them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FlowStep {
    pub flow: u8,
    /// Bytes received by the server in this step (upload flows; 0 for downloads).
    pub bytes: u64,
    /// Smoothed RTT from the server socket's TCP_INFO, µs (0 when unknown).
    pub tcp_rtt_us: u32,
}

/// Per probe stream counts at the reflector.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamCount {
    pub stream: u8,
    pub received: u32,
    pub reflected: u32,
}

/// A control message (high-level representation).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Message {
    Hello {
        version: u16,
        /// Shared secret (`--token`); empty when the client has none.
        token: String,
    },
    LoadHello {
        version: u16,
        session: u64,
        flow: u8,
        direction: Direction,
        tos: u8,
        cc: String,
    },
    Start {
        start_in_us: u32,
        duration_ms: u32,
        step_ms: u16,
    },
    Finish,
    Welcome {
        version: u16,
        session: u64,
        udp_port: u16,
        max_duration_ms: u32,
        max_flows: u8,
    },
    LoadAccept {
        flow: u8,
        tos: u8,
        cc: String,
    },
    StepReport {
        step: u32,
        flows: Vec<FlowStep>,
    },
    Finished {
        streams: Vec<StreamCount>,
    },
    RpmBegin {
        duration_ms: u32,
    },
    RpmLoadHello {
        version: u16,
        session: u64,
        conn: u8,
        direction: Direction,
    },
    RpmProbe {
        version: u16,
        session: u64,
        id: u32,
    },
    RpmReady {
        max_connections: u8,
        max_duration_ms: u32,
    },
    RpmProbeReply {
        id: u32,
    },
    Error {
        code: Option<ErrorCode>,
        raw_code: u8,
        message: String,
    },
}

mod field {
    pub const TYPE: usize = 0;
    pub const LENGTH: std::ops::Range<usize> = 1..3;
}

/// Reads the payload length from a frame header; errors when it exceeds [`MAX_PAYLOAD`].
pub fn frame_payload_len(header: &[u8; FRAME_HEADER_LEN]) -> Result<usize, WireError> {
    let len = u16::from_be_bytes([header[field::LENGTH.start], header[field::LENGTH.start + 1]]);
    let len = len as usize;
    if len > MAX_PAYLOAD {
        return Err(WireError::TooLong(len));
    }
    Ok(len)
}

/// A cursor over a payload that fails with `Truncated` instead of panicking.
struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], WireError> {
        let end = self.pos + n;
        if end > self.buf.len() {
            return Err(WireError::Truncated {
                needed: end,
                got: self.buf.len(),
            });
        }
        let s = &self.buf[self.pos..end];
        self.pos = end;
        Ok(s)
    }
    fn u8(&mut self) -> Result<u8, WireError> {
        Ok(self.take(1)?[0])
    }
    fn u16(&mut self) -> Result<u16, WireError> {
        let b = self.take(2)?;
        Ok(u16::from_be_bytes([b[0], b[1]]))
    }
    fn u32(&mut self) -> Result<u32, WireError> {
        let b = self.take(4)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }
    fn u64(&mut self) -> Result<u64, WireError> {
        let b = self.take(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_be_bytes(a))
    }
    fn str(&mut self, what: &'static str, max: usize) -> Result<String, WireError> {
        let n = self.u8()? as usize;
        if n > max {
            return Err(WireError::Malformed {
                what,
                why: format!("string of {n} bytes, max {max}"),
            });
        }
        let b = self.take(n)?;
        String::from_utf8(b.to_vec()).map_err(|_| WireError::Malformed {
            what,
            why: "string is not UTF-8".into(),
        })
    }
    fn end(&self, what: &'static str) -> Result<(), WireError> {
        if self.pos != self.buf.len() {
            return Err(WireError::Malformed {
                what,
                why: format!("{} trailing bytes", self.buf.len() - self.pos),
            });
        }
        Ok(())
    }
}

fn direction_of(d: u8, what: &'static str) -> Result<Direction, WireError> {
    match d {
        0 => Ok(Direction::Upload),
        1 => Ok(Direction::Download),
        d => Err(WireError::Malformed {
            what,
            why: format!("direction {d} (expected 0 or 1)"),
        }),
    }
}

fn put_str(out: &mut Vec<u8>, s: &str) {
    let b = &s.as_bytes()[..s.len().min(255)];
    out.push(b.len() as u8);
    out.extend_from_slice(b);
}

impl Message {
    /// The frame type byte.
    pub fn type_code(&self) -> u8 {
        match self {
            Self::Hello { .. } => 0x01,
            Self::LoadHello { .. } => 0x02,
            Self::Start { .. } => 0x03,
            Self::Finish => 0x04,
            Self::Welcome { .. } => 0x81,
            Self::LoadAccept { .. } => 0x82,
            Self::StepReport { .. } => 0x83,
            Self::Finished { .. } => 0x84,
            Self::RpmBegin { .. } => 0x05,
            Self::RpmLoadHello { .. } => 0x06,
            Self::RpmProbe { .. } => 0x07,
            Self::RpmReady { .. } => 0x85,
            Self::RpmProbeReply { .. } => 0x87,
            Self::Error { .. } => 0xEE,
        }
    }

    /// Parses one payload of frame type `ty`.
    pub fn parse(ty: u8, payload: &[u8]) -> Result<Self, WireError> {
        if payload.len() > MAX_PAYLOAD {
            return Err(WireError::TooLong(payload.len()));
        }
        let mut r = Reader {
            buf: payload,
            pos: 0,
        };
        let (msg, what) = match ty {
            0x01 => (Self::parse_hello(&mut r)?, "Hello"),
            0x02 => (Self::parse_load_hello(&mut r)?, "LoadHello"),
            0x03 => {
                let m = Self::Start {
                    start_in_us: r.u32()?,
                    duration_ms: r.u32()?,
                    step_ms: r.u16()?,
                };
                (m, "Start")
            }
            0x04 => (Self::Finish, "Finish"),
            0x81 => {
                let m = Self::Welcome {
                    version: r.u16()?,
                    session: r.u64()?,
                    udp_port: r.u16()?,
                    max_duration_ms: r.u32()?,
                    max_flows: r.u8()?,
                };
                (m, "Welcome")
            }
            0x82 => {
                let m = Self::LoadAccept {
                    flow: r.u8()?,
                    tos: r.u8()?,
                    cc: r.str("LoadAccept", MAX_CC_LEN)?,
                };
                (m, "LoadAccept")
            }
            0x83 => (Self::parse_step_report(&mut r)?, "StepReport"),
            0x84 => (Self::parse_finished(&mut r)?, "Finished"),
            0x05 => (
                Self::RpmBegin {
                    duration_ms: r.u32()?,
                },
                "RpmBegin",
            ),
            0x06 => {
                let version = r.u16()?;
                let session = r.u64()?;
                let conn = r.u8()?;
                let direction = direction_of(r.u8()?, "RpmLoadHello")?;
                let m = Self::RpmLoadHello {
                    version,
                    session,
                    conn,
                    direction,
                };
                (m, "RpmLoadHello")
            }
            0x07 => {
                let m = Self::RpmProbe {
                    version: r.u16()?,
                    session: r.u64()?,
                    id: r.u32()?,
                };
                (m, "RpmProbe")
            }
            0x85 => {
                let m = Self::RpmReady {
                    max_connections: r.u8()?,
                    max_duration_ms: r.u32()?,
                };
                (m, "RpmReady")
            }
            0x87 => (Self::RpmProbeReply { id: r.u32()? }, "RpmProbeReply"),
            0xEE => {
                let raw_code = r.u8()?;
                let message = r.str("Error", 255)?;
                (
                    Self::Error {
                        code: ErrorCode::from_u8(raw_code),
                        raw_code,
                        message,
                    },
                    "Error",
                )
            }
            t => return Err(WireError::UnknownType(t)),
        };
        r.end(what)?;
        Ok(msg)
    }

    fn parse_hello(r: &mut Reader<'_>) -> Result<Self, WireError> {
        let version = r.u16()?;
        let token = if r.pos < r.buf.len() {
            let t = r.str("Hello", MAX_TOKEN_LEN)?;
            if t.is_empty() {
                // No token is no field, so every Hello has one encoding.
                return Err(WireError::Malformed {
                    what: "Hello",
                    why: "empty token (omit the field instead)".into(),
                });
            }
            t
        } else {
            String::new()
        };
        Ok(Self::Hello { version, token })
    }

    fn parse_load_hello(r: &mut Reader<'_>) -> Result<Self, WireError> {
        let version = r.u16()?;
        let session = r.u64()?;
        let flow = r.u8()?;
        let direction = direction_of(r.u8()?, "LoadHello")?;
        let tos = r.u8()?;
        let cc = r.str("LoadHello", MAX_CC_LEN)?;
        Ok(Self::LoadHello {
            version,
            session,
            flow,
            direction,
            tos,
            cc,
        })
    }

    fn parse_step_report(r: &mut Reader<'_>) -> Result<Self, WireError> {
        let step = r.u32()?;
        let n = r.u8()?;
        let mut flows = Vec::with_capacity(n as usize);
        for _ in 0..n {
            flows.push(FlowStep {
                flow: r.u8()?,
                bytes: r.u64()?,
                tcp_rtt_us: r.u32()?,
            });
        }
        Ok(Self::StepReport { step, flows })
    }

    fn parse_finished(r: &mut Reader<'_>) -> Result<Self, WireError> {
        let n = r.u8()?;
        let mut streams = Vec::with_capacity(n as usize);
        for _ in 0..n {
            streams.push(StreamCount {
                stream: r.u8()?,
                received: r.u32()?,
                reflected: r.u32()?,
            });
        }
        Ok(Self::Finished { streams })
    }

    /// Emits the whole frame (header + payload).
    pub fn emit(&self) -> Vec<u8> {
        let mut p = Vec::with_capacity(32);
        match self {
            Self::Hello { version, token } => {
                p.extend_from_slice(&version.to_be_bytes());
                if !token.is_empty() {
                    put_str(&mut p, token);
                }
            }
            Self::LoadHello {
                version,
                session,
                flow,
                direction,
                tos,
                cc,
            } => {
                p.extend_from_slice(&version.to_be_bytes());
                p.extend_from_slice(&session.to_be_bytes());
                p.push(*flow);
                p.push(*direction as u8);
                p.push(*tos);
                put_str(&mut p, &cc[..cc.len().min(MAX_CC_LEN)]);
            }
            Self::Start {
                start_in_us,
                duration_ms,
                step_ms,
            } => {
                p.extend_from_slice(&start_in_us.to_be_bytes());
                p.extend_from_slice(&duration_ms.to_be_bytes());
                p.extend_from_slice(&step_ms.to_be_bytes());
            }
            Self::Finish => {}
            Self::Welcome {
                version,
                session,
                udp_port,
                max_duration_ms,
                max_flows,
            } => {
                p.extend_from_slice(&version.to_be_bytes());
                p.extend_from_slice(&session.to_be_bytes());
                p.extend_from_slice(&udp_port.to_be_bytes());
                p.extend_from_slice(&max_duration_ms.to_be_bytes());
                p.push(*max_flows);
            }
            Self::LoadAccept { flow, tos, cc } => {
                p.push(*flow);
                p.push(*tos);
                put_str(&mut p, &cc[..cc.len().min(MAX_CC_LEN)]);
            }
            Self::StepReport { step, flows } => {
                p.extend_from_slice(&step.to_be_bytes());
                let n = flows.len().min(255);
                p.push(n as u8);
                for f in &flows[..n] {
                    p.push(f.flow);
                    p.extend_from_slice(&f.bytes.to_be_bytes());
                    p.extend_from_slice(&f.tcp_rtt_us.to_be_bytes());
                }
            }
            Self::Finished { streams } => {
                let n = streams.len().min(255);
                p.push(n as u8);
                for s in &streams[..n] {
                    p.push(s.stream);
                    p.extend_from_slice(&s.received.to_be_bytes());
                    p.extend_from_slice(&s.reflected.to_be_bytes());
                }
            }
            Self::RpmBegin { duration_ms } => p.extend_from_slice(&duration_ms.to_be_bytes()),
            Self::RpmLoadHello {
                version,
                session,
                conn,
                direction,
            } => {
                p.extend_from_slice(&version.to_be_bytes());
                p.extend_from_slice(&session.to_be_bytes());
                p.push(*conn);
                p.push(*direction as u8);
            }
            Self::RpmProbe {
                version,
                session,
                id,
            } => {
                p.extend_from_slice(&version.to_be_bytes());
                p.extend_from_slice(&session.to_be_bytes());
                p.extend_from_slice(&id.to_be_bytes());
            }
            Self::RpmReady {
                max_connections,
                max_duration_ms,
            } => {
                p.push(*max_connections);
                p.extend_from_slice(&max_duration_ms.to_be_bytes());
            }
            Self::RpmProbeReply { id } => p.extend_from_slice(&id.to_be_bytes()),
            Self::Error {
                raw_code, message, ..
            } => {
                p.push(*raw_code);
                put_str(&mut p, message);
            }
        }
        let mut out = Vec::with_capacity(FRAME_HEADER_LEN + p.len());
        out.push(self.type_code());
        out.extend_from_slice(&(p.len() as u16).to_be_bytes());
        out.extend_from_slice(&p);
        out
    }

    /// An Error frame.
    pub fn error(code: ErrorCode, message: impl Into<String>) -> Self {
        Self::Error {
            code: Some(code),
            raw_code: code as u8,
            message: message.into(),
        }
    }
}

/// Parses a complete frame from a buffer (header + payload, nothing after).
pub fn parse_frame(bytes: &[u8]) -> Result<Message, WireError> {
    if bytes.len() < FRAME_HEADER_LEN {
        return Err(WireError::Truncated {
            needed: FRAME_HEADER_LEN,
            got: bytes.len(),
        });
    }
    let header = [bytes[0], bytes[1], bytes[2]];
    let len = frame_payload_len(&header)?;
    let payload = &bytes[FRAME_HEADER_LEN..];
    if payload.len() < len {
        return Err(WireError::Truncated {
            needed: FRAME_HEADER_LEN + len,
            got: bytes.len(),
        });
    }
    if payload.len() > len {
        return Err(WireError::Malformed {
            what: "frame",
            why: "bytes after the payload".into(),
        });
    }
    Message::parse(bytes[field::TYPE], payload)
}

mod probe;
pub use probe::*;

pub mod rpm;

#[cfg(test)]
mod tests;
