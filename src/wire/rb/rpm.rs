//! The byte stream of an RPM load connection (routerbench protocol's RPM extension, after
//! RpmLoadHello → LoadAccept; docs/rpm.md). Pure bytes, no I/O.
//!
//! The bulk data and the self probes share one TCP byte stream, so a probe queues behind the
//! data already written, exactly as an HTTP/2 GET multiplexed on a loaded connection does
//! (draft-ietf-ippm-responsiveness-09 §5.3, "self probes"). Records:
//!
//! ```text
//! 0x30 Data           len u16 (1..=MAX_DATA), then len bytes of filler
//! 0x31 ProbeRequest   id u32, unsent u32   (sender's unsent bytes when it queued the request)
//! 0x32 ProbeResponse  id u32, unsent u32   (sender's unsent bytes when it queued the response)
//! ```
//!
//! On a download connection the server sends Data and ProbeResponse, the client ProbeRequest;
//! on an upload connection the client sends Data and ProbeRequest, the server ProbeResponse.
//! `unsent` is TCP_INFO's `tcpi_notsent_bytes` of the side that queued the record (0 when
//! unknown): the part of a probe's time spent in the sender's own socket buffer.

use super::WireError;

pub const REC_DATA: u8 = 0x30;
pub const REC_PROBE_REQUEST: u8 = 0x31;
pub const REC_PROBE_RESPONSE: u8 = 0x32;
/// Largest Data record payload.
pub const MAX_DATA: usize = 16 * 1024;
/// Header of a Data record: type + u16 length.
pub const DATA_HEADER_LEN: usize = 3;
/// A whole probe record: type + id u32 + unsent u32.
pub const PROBE_RECORD_LEN: usize = 9;

/// A record of the stream, as the parser reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Record {
    /// `n` bytes of Data payload (reported as they arrive, possibly in several pieces).
    Data(usize),
    ProbeRequest {
        id: u32,
        unsent: u32,
    },
    ProbeResponse {
        id: u32,
        unsent: u32,
    },
}

/// Emits a Data record header for `len` payload bytes (1..=MAX_DATA; clamped).
pub fn data_header(len: usize) -> [u8; DATA_HEADER_LEN] {
    let len = len.clamp(1, MAX_DATA) as u16;
    let b = len.to_be_bytes();
    [REC_DATA, b[0], b[1]]
}

/// Emits a probe request or response.
pub fn probe_record(response: bool, id: u32, unsent: u32) -> [u8; PROBE_RECORD_LEN] {
    let mut out = [0u8; PROBE_RECORD_LEN];
    out[0] = if response {
        REC_PROBE_RESPONSE
    } else {
        REC_PROBE_REQUEST
    };
    out[1..5].copy_from_slice(&id.to_be_bytes());
    out[5..9].copy_from_slice(&unsent.to_be_bytes());
    out
}

/// Incremental parser: feed whatever `read` returned, get the records it completed. Data
/// payload is never copied, only counted. A byte that starts no known record is an error (the
/// connection is then closed: the stream has lost its framing).
#[derive(Debug, Default)]
pub struct StreamParser {
    /// Data payload bytes still to skip of the current Data record.
    data_left: usize,
    /// A partial header or probe record.
    pending: Vec<u8>,
}

impl StreamParser {
    pub fn new() -> Self {
        Self::default()
    }

    /// Parses `bytes`, calling `on` for each record (or piece of Data).
    pub fn feed(&mut self, mut bytes: &[u8], mut on: impl FnMut(Record)) -> Result<(), WireError> {
        while !bytes.is_empty() {
            if self.data_left > 0 {
                let n = self.data_left.min(bytes.len());
                self.data_left -= n;
                bytes = &bytes[n..];
                on(Record::Data(n));
                continue;
            }
            let ty = self.pending.first().copied().unwrap_or(bytes[0]);
            let need = match ty {
                REC_DATA => DATA_HEADER_LEN,
                REC_PROBE_REQUEST | REC_PROBE_RESPONSE => PROBE_RECORD_LEN,
                t => {
                    return Err(WireError::Malformed {
                        what: "RPM load stream",
                        why: format!("record type 0x{t:02x}"),
                    });
                }
            };
            let take = (need - self.pending.len()).min(bytes.len());
            self.pending.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
            if self.pending.len() < need {
                return Ok(());
            }
            let p = std::mem::take(&mut self.pending);
            match ty {
                REC_DATA => {
                    let len = u16::from_be_bytes([p[1], p[2]]) as usize;
                    if len == 0 || len > MAX_DATA {
                        return Err(WireError::Malformed {
                            what: "RPM load stream",
                            why: format!("Data record of {len} bytes (1..={MAX_DATA})"),
                        });
                    }
                    self.data_left = len;
                }
                _ => {
                    let id = u32::from_be_bytes([p[1], p[2], p[3], p[4]]);
                    let unsent = u32::from_be_bytes([p[5], p[6], p[7], p[8]]);
                    on(if ty == REC_PROBE_REQUEST {
                        Record::ProbeRequest { id, unsent }
                    } else {
                        Record::ProbeResponse { id, unsent }
                    });
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stream() -> Vec<u8> {
        let mut s = data_header(5).to_vec();
        s.extend_from_slice(b"abcde");
        s.extend_from_slice(&probe_record(false, 7, 1500));
        s.extend_from_slice(&data_header(2));
        s.extend_from_slice(b"xy");
        s.extend_from_slice(&probe_record(true, 0xDEAD_BEEF, 0));
        s
    }

    #[test]
    fn test_emit_bytes() {
        assert_eq!(data_header(16384), [0x30, 0x40, 0x00]);
        assert_eq!(
            probe_record(true, 1, 2),
            [0x32, 0, 0, 0, 1, 0, 0, 0, 2],
            "response, id 1, unsent 2"
        );
    }

    #[test]
    fn test_parse_in_every_split() {
        let s = stream();
        for cut in 0..=s.len() {
            let mut p = StreamParser::new();
            let mut got = Vec::new();
            p.feed(&s[..cut], |r| got.push(r)).unwrap();
            p.feed(&s[cut..], |r| got.push(r)).unwrap();
            let data: usize = got
                .iter()
                .map(|r| if let Record::Data(n) = r { *n } else { 0 })
                .sum();
            let probes: Vec<_> = got
                .iter()
                .filter(|r| !matches!(r, Record::Data(_)))
                .collect();
            assert_eq!(data, 7, "cut {cut}");
            assert_eq!(
                probes,
                [
                    &Record::ProbeRequest {
                        id: 7,
                        unsent: 1500
                    },
                    &Record::ProbeResponse {
                        id: 0xDEAD_BEEF,
                        unsent: 0
                    }
                ]
            );
        }
    }

    #[test]
    fn test_bad_records() {
        let mut p = StreamParser::new();
        assert!(p.feed(&[0x99], |_| {}).is_err());
        let mut p = StreamParser::new();
        assert!(p.feed(&[REC_DATA, 0, 0], |_| {}).is_err(), "empty Data");
        let mut p = StreamParser::new();
        assert!(p.feed(&[REC_DATA, 0xFF, 0xFF], |_| {}).is_err(), "too long");
    }
}
