//! The monitor agent's frames (routerbench protocol v1, same port, same magic and framing as
//! [`super::rb`]): `routerbench server --monitor` streams the machine's samples to a client.
//!
//! | type | name          | direction | payload |
//! |------|---------------|-----------|---------|
//! | 0x10 | MonitorHello  | c → s     | version u16, interval_ms u32, duration_ms u32, token str |
//! | 0x11 | TimeRequest   | c → s     | client_ns u64 (client CLOCK_REALTIME) |
//! | 0x12 | MonitorStart  | c → s     | (empty) |
//! | 0x13 | MonitorStop   | c → s     | (empty) |
//! | 0x90 | MonitorWelcome| s → c     | version u16, interval_ms u32 (granted), max_duration_ms u32 |
//! | 0x91 | TimeReply     | s → c     | client_ns u64, agent_rx_ns u64, agent_tx_ns u64 (agent CLOCK_REALTIME) |
//! | 0x92 | Chunk         | s → c     | what u8 (1 sample, 2 final), last u8 (1 = ends the document), bytes |
//! | 0x93 | Started       | s → c     | start_unix_ns u64 (agent clock at the samples' t_s = 0) |
//! | 0xEE | Error         | s → c     | code u8, message str (as in `rb`; code 6 = unauthorized) |
//!
//! A subscription: Hello → Welcome (or Error: wrong token, too many subscriptions, bad
//! interval); any number (≤ [`MAX_TIME_EXCHANGES`]) of TimeRequest → TimeReply for the clock
//! offset; Start → Started, then one JSON `MonitorSample` per interval, in Chunks of at most
//! [`MAX_CHUNK`] bytes; Stop (or the granted duration) → the final JSON `MonitorResult` without
//! its samples (summary, busiest processes, notes) in Chunks with `what` = 2, then the agent
//! closes. The JSON is the result model's (docs/results-schema.md), so a sample means the
//! same on the wire as in a saved result.

use super::rb::{FRAME_HEADER_LEN, MAX_PAYLOAD, WireError};

/// Agent protocol version.
pub const AGENT_VERSION: u16 = 1;
/// Most JSON bytes per Chunk frame.
pub const MAX_CHUNK: usize = MAX_PAYLOAD - 2;
/// Most clock exchanges a subscriber may make.
pub const MAX_TIME_EXCHANGES: usize = 64;
/// Longest token.
pub const MAX_TOKEN_LEN: usize = 128;
/// Error code: the token was missing or wrong.
pub const ERROR_UNAUTHORIZED: u8 = 6;

/// What a Chunk carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChunkKind {
    Sample = 1,
    Final = 2,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AgentMessage {
    Hello {
        version: u16,
        interval_ms: u32,
        duration_ms: u32,
        token: String,
    },
    TimeRequest {
        client_ns: u64,
    },
    Start,
    Stop,
    Welcome {
        version: u16,
        interval_ms: u32,
        max_duration_ms: u32,
    },
    TimeReply {
        client_ns: u64,
        agent_rx_ns: u64,
        agent_tx_ns: u64,
    },
    Chunk {
        kind: ChunkKind,
        last: bool,
        bytes: Vec<u8>,
    },
    Started {
        start_unix_ns: u64,
    },
    Error {
        code: u8,
        message: String,
    },
}

fn be<const N: usize>(p: &[u8], at: usize) -> Result<[u8; N], WireError> {
    p.get(at..at + N)
        .and_then(|s| s.try_into().ok())
        .ok_or(WireError::Truncated {
            needed: at + N,
            got: p.len(),
        })
}

fn u16_at(p: &[u8], at: usize) -> Result<u16, WireError> {
    Ok(u16::from_be_bytes(be(p, at)?))
}
fn u32_at(p: &[u8], at: usize) -> Result<u32, WireError> {
    Ok(u32::from_be_bytes(be(p, at)?))
}
fn u64_at(p: &[u8], at: usize) -> Result<u64, WireError> {
    Ok(u64::from_be_bytes(be(p, at)?))
}

/// A u8-length string at `at`; returns it and the offset after it.
fn str_at(
    p: &[u8],
    at: usize,
    what: &'static str,
    max: usize,
) -> Result<(String, usize), WireError> {
    let n = *p.get(at).ok_or(WireError::Truncated {
        needed: at + 1,
        got: p.len(),
    })? as usize;
    if n > max {
        return Err(WireError::Malformed {
            what,
            why: format!("string of {n} bytes, max {max}"),
        });
    }
    let b = p.get(at + 1..at + 1 + n).ok_or(WireError::Truncated {
        needed: at + 1 + n,
        got: p.len(),
    })?;
    let s = String::from_utf8(b.to_vec()).map_err(|_| WireError::Malformed {
        what,
        why: "string is not UTF-8".into(),
    })?;
    Ok((s, at + 1 + n))
}

fn exact(p: &[u8], len: usize, what: &'static str) -> Result<(), WireError> {
    if p.len() < len {
        return Err(WireError::Truncated {
            needed: len,
            got: p.len(),
        });
    }
    if p.len() > len {
        return Err(WireError::Malformed {
            what,
            why: format!("{} trailing bytes", p.len() - len),
        });
    }
    Ok(())
}

fn put_str(out: &mut Vec<u8>, s: &str, max: usize) {
    let mut n = s.len().min(max);
    while !s.is_char_boundary(n) {
        n -= 1;
    }
    out.push(n as u8);
    out.extend_from_slice(&s.as_bytes()[..n]);
}

impl AgentMessage {
    pub fn type_code(&self) -> u8 {
        match self {
            Self::Hello { .. } => 0x10,
            Self::TimeRequest { .. } => 0x11,
            Self::Start => 0x12,
            Self::Stop => 0x13,
            Self::Welcome { .. } => 0x90,
            Self::TimeReply { .. } => 0x91,
            Self::Chunk { .. } => 0x92,
            Self::Started { .. } => 0x93,
            Self::Error { .. } => 0xEE,
        }
    }

    /// True if `ty` opens an agent subscription (the server's dispatch looks at this byte).
    pub fn is_hello(ty: u8) -> bool {
        ty == 0x10
    }

    pub fn parse(ty: u8, p: &[u8]) -> Result<Self, WireError> {
        if p.len() > MAX_PAYLOAD {
            return Err(WireError::TooLong(p.len()));
        }
        Ok(match ty {
            0x10 => {
                let (token, end) = str_at(p, 10, "MonitorHello", MAX_TOKEN_LEN)?;
                exact(p, end, "MonitorHello")?;
                Self::Hello {
                    version: u16_at(p, 0)?,
                    interval_ms: u32_at(p, 2)?,
                    duration_ms: u32_at(p, 6)?,
                    token,
                }
            }
            0x11 => {
                exact(p, 8, "TimeRequest")?;
                Self::TimeRequest {
                    client_ns: u64_at(p, 0)?,
                }
            }
            0x12 => {
                exact(p, 0, "MonitorStart")?;
                Self::Start
            }
            0x13 => {
                exact(p, 0, "MonitorStop")?;
                Self::Stop
            }
            0x90 => {
                exact(p, 10, "MonitorWelcome")?;
                Self::Welcome {
                    version: u16_at(p, 0)?,
                    interval_ms: u32_at(p, 2)?,
                    max_duration_ms: u32_at(p, 6)?,
                }
            }
            0x91 => {
                exact(p, 24, "TimeReply")?;
                Self::TimeReply {
                    client_ns: u64_at(p, 0)?,
                    agent_rx_ns: u64_at(p, 8)?,
                    agent_tx_ns: u64_at(p, 16)?,
                }
            }
            0x92 => {
                let head: [u8; 2] = be(p, 0)?;
                let kind = match head[0] {
                    1 => ChunkKind::Sample,
                    2 => ChunkKind::Final,
                    k => {
                        return Err(WireError::Malformed {
                            what: "Chunk",
                            why: format!("kind {k} (expected 1 or 2)"),
                        });
                    }
                };
                Self::Chunk {
                    kind,
                    last: head[1] != 0,
                    bytes: p[2..].to_vec(),
                }
            }
            0x93 => {
                exact(p, 8, "Started")?;
                Self::Started {
                    start_unix_ns: u64_at(p, 0)?,
                }
            }
            0xEE => {
                let code = *p
                    .first()
                    .ok_or(WireError::Truncated { needed: 1, got: 0 })?;
                let (message, end) = str_at(p, 1, "Error", 255)?;
                exact(p, end, "Error")?;
                Self::Error { code, message }
            }
            t => return Err(WireError::UnknownType(t)),
        })
    }

    /// The whole frame (header + payload). A Chunk longer than [`MAX_CHUNK`] is cut there:
    /// use [`chunks`] to split a document.
    pub fn emit(&self) -> Vec<u8> {
        let mut p = Vec::with_capacity(32);
        match self {
            Self::Hello {
                version,
                interval_ms,
                duration_ms,
                token,
            } => {
                p.extend_from_slice(&version.to_be_bytes());
                p.extend_from_slice(&interval_ms.to_be_bytes());
                p.extend_from_slice(&duration_ms.to_be_bytes());
                put_str(&mut p, token, MAX_TOKEN_LEN);
            }
            Self::TimeRequest { client_ns } => p.extend_from_slice(&client_ns.to_be_bytes()),
            Self::Start | Self::Stop => {}
            Self::Welcome {
                version,
                interval_ms,
                max_duration_ms,
            } => {
                p.extend_from_slice(&version.to_be_bytes());
                p.extend_from_slice(&interval_ms.to_be_bytes());
                p.extend_from_slice(&max_duration_ms.to_be_bytes());
            }
            Self::TimeReply {
                client_ns,
                agent_rx_ns,
                agent_tx_ns,
            } => {
                for v in [client_ns, agent_rx_ns, agent_tx_ns] {
                    p.extend_from_slice(&v.to_be_bytes());
                }
            }
            Self::Chunk { kind, last, bytes } => {
                p.push(*kind as u8);
                p.push(u8::from(*last));
                p.extend_from_slice(&bytes[..bytes.len().min(MAX_CHUNK)]);
            }
            Self::Started { start_unix_ns } => p.extend_from_slice(&start_unix_ns.to_be_bytes()),
            Self::Error { code, message } => {
                p.push(*code);
                put_str(&mut p, message, 255);
            }
        }
        let mut out = Vec::with_capacity(FRAME_HEADER_LEN + p.len());
        out.push(self.type_code());
        out.extend_from_slice(&(p.len() as u16).to_be_bytes());
        out.extend_from_slice(&p);
        out
    }
}

/// Splits a JSON document into Chunk messages (the last one flagged).
pub fn chunks(kind: ChunkKind, doc: &[u8]) -> Vec<AgentMessage> {
    let parts: Vec<&[u8]> = if doc.is_empty() {
        vec![&[][..]]
    } else {
        doc.chunks(MAX_CHUNK).collect()
    };
    let n = parts.len();
    parts
        .into_iter()
        .enumerate()
        .map(|(i, b)| AgentMessage::Chunk {
            kind,
            last: i + 1 == n,
            bytes: b.to_vec(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round(m: AgentMessage) {
        let f = m.emit();
        let len = u16::from_be_bytes([f[1], f[2]]) as usize;
        assert_eq!(f.len(), FRAME_HEADER_LEN + len);
        assert_eq!(AgentMessage::parse(f[0], &f[3..]).unwrap(), m);
    }

    #[test]
    fn every_message_round_trips() {
        round(AgentMessage::Hello {
            version: 1,
            interval_ms: 200,
            duration_ms: 70_000,
            token: "s3cret".into(),
        });
        round(AgentMessage::TimeRequest { client_ns: 1 << 60 });
        round(AgentMessage::Start);
        round(AgentMessage::Stop);
        round(AgentMessage::Welcome {
            version: 1,
            interval_ms: 200,
            max_duration_ms: 3_600_000,
        });
        round(AgentMessage::TimeReply {
            client_ns: 5,
            agent_rx_ns: 6,
            agent_tx_ns: 7,
        });
        round(AgentMessage::Started { start_unix_ns: 42 });
        round(AgentMessage::Error {
            code: ERROR_UNAUTHORIZED,
            message: "wrong token".into(),
        });
    }

    #[test]
    fn hello_bytes() {
        let f = AgentMessage::Hello {
            version: 1,
            interval_ms: 100,
            duration_ms: 2000,
            token: "ab".into(),
        }
        .emit();
        assert_eq!(
            f,
            [
                0x10, 0, 13, 0, 1, 0, 0, 0, 100, 0, 0, 0x07, 0xD0, 2, b'a', b'b'
            ]
        );
    }

    #[test]
    fn chunks_split_and_flag_the_last() {
        let doc = vec![b'x'; MAX_CHUNK * 2 + 5];
        let c = chunks(ChunkKind::Sample, &doc);
        assert_eq!(c.len(), 3);
        let mut back = Vec::new();
        for (i, m) in c.iter().enumerate() {
            let f = m.emit();
            assert!(f.len() <= FRAME_HEADER_LEN + MAX_PAYLOAD);
            let AgentMessage::Chunk { last, bytes, kind } =
                AgentMessage::parse(f[0], &f[3..]).unwrap()
            else {
                panic!("not a chunk");
            };
            assert_eq!((kind, last), (ChunkKind::Sample, i == 2));
            back.extend(bytes);
        }
        assert_eq!(back, doc);
        assert_eq!(chunks(ChunkKind::Final, b"").len(), 1);
    }

    #[test]
    fn malformed() {
        assert!(AgentMessage::parse(0x11, &[0; 7]).is_err());
        assert!(AgentMessage::parse(0x11, &[0; 9]).is_err());
        assert!(AgentMessage::parse(0x92, &[3, 0]).is_err());
        assert!(AgentMessage::parse(0x10, &[0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 200]).is_err());
        assert!(matches!(
            AgentMessage::parse(0x7F, &[]),
            Err(WireError::UnknownType(0x7F))
        ));
        // An rb Error frame (as the latency service sends one) parses here too.
        let e =
            crate::wire::rb::Message::error(crate::wire::rb::ErrorCode::BadRequest, "no").emit();
        assert_eq!(
            AgentMessage::parse(e[0], &e[3..]).unwrap(),
            AgentMessage::Error {
                code: 3,
                message: "no".into()
            }
        );
    }
}
