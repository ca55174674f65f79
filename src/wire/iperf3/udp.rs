//! iperf3's UDP data datagram header and the 4-byte stream hello (docs/protocols/iperf3.md §5.4, §7.2).
//!
//! ```text
//! 0      4      8               12/16
//! | sec  | usec | pcount (u32 or u64 with udp_counters_64bit) | payload ... (len bytes total)
//! ```
//! All big-endian; `sec`/`usec` are the sender's CLOCK_MONOTONIC, `pcount` starts at 1.

use super::WireError;

/// The client's hello, "9876" on the wire from every current iperf3.
pub const UDP_CONNECT_MSG: [u8; 4] = *b"9876";
/// The server's reply, "6789" on the wire.
pub const UDP_CONNECT_REPLY: [u8; 4] = *b"6789";
/// The legacy reply 987654321 as a little-endian host sent it.
pub const UDP_CONNECT_REPLY_LEGACY: [u8; 4] = 987_654_321u32.to_le_bytes();
/// Header length with 32-bit counters.
pub const HEADER_LEN_32: usize = 12;
/// Header length with 64-bit counters.
pub const HEADER_LEN_64: usize = 16;

mod field {
    use std::ops::Range;
    pub const SEC: Range<usize> = 0..4;
    pub const USEC: Range<usize> = 4..8;
    pub const PCOUNT32: Range<usize> = 8..12;
    pub const PCOUNT64: Range<usize> = 8..16;
}

/// A read/write view of a datagram's header.
#[derive(Debug, Clone)]
pub struct UdpPacket<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> UdpPacket<T> {
    /// Wraps `buffer`, checking it is long enough for the header kind.
    pub fn new_checked(buffer: T, wide: bool) -> Result<Self, WireError> {
        let needed = if wide { HEADER_LEN_64 } else { HEADER_LEN_32 };
        let got = buffer.as_ref().len();
        if got < needed {
            return Err(WireError::Truncated {
                what: "UDP datagram header",
                needed,
                got,
            });
        }
        Ok(Self { buffer })
    }

    fn u32_at(&self, r: std::ops::Range<usize>) -> u32 {
        let mut b = [0u8; 4];
        b.copy_from_slice(&self.buffer.as_ref()[r]);
        u32::from_be_bytes(b)
    }

    pub fn sec(&self) -> u32 {
        self.u32_at(field::SEC)
    }

    pub fn usec(&self) -> u32 {
        self.u32_at(field::USEC)
    }

    pub fn pcount32(&self) -> u32 {
        self.u32_at(field::PCOUNT32)
    }

    /// Only valid for a view created with `wide = true`.
    pub fn pcount64(&self) -> u64 {
        let mut b = [0u8; 8];
        b.copy_from_slice(&self.buffer.as_ref()[field::PCOUNT64]);
        u64::from_be_bytes(b)
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> UdpPacket<T> {
    pub fn set_sec(&mut self, v: u32) {
        self.buffer.as_mut()[field::SEC].copy_from_slice(&v.to_be_bytes());
    }
    pub fn set_usec(&mut self, v: u32) {
        self.buffer.as_mut()[field::USEC].copy_from_slice(&v.to_be_bytes());
    }
    pub fn set_pcount32(&mut self, v: u32) {
        self.buffer.as_mut()[field::PCOUNT32].copy_from_slice(&v.to_be_bytes());
    }
    pub fn set_pcount64(&mut self, v: u64) {
        self.buffer.as_mut()[field::PCOUNT64].copy_from_slice(&v.to_be_bytes());
    }
}

/// The header's values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UdpHeader {
    pub sec: u32,
    pub usec: u32,
    /// Sequence number, first datagram = 1.
    pub pcount: u64,
    /// 64-bit counter (`udp_counters_64bit` negotiated).
    pub wide: bool,
}

impl UdpHeader {
    /// Parses the header at the start of a datagram.
    pub fn parse(buf: &[u8], wide: bool) -> Result<UdpHeader, WireError> {
        let p = UdpPacket::new_checked(buf, wide)?;
        Ok(UdpHeader {
            sec: p.sec(),
            usec: p.usec(),
            pcount: if wide {
                p.pcount64()
            } else {
                p.pcount32() as u64
            },
            wide,
        })
    }

    /// Header length in bytes.
    pub fn len(&self) -> usize {
        if self.wide {
            HEADER_LEN_64
        } else {
            HEADER_LEN_32
        }
    }

    /// Always false: a header has a fixed, non-zero length.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Writes the header into the start of `buf` (which must hold at least [`Self::len`]).
    pub fn emit(&self, buf: &mut [u8]) -> Result<(), WireError> {
        let mut p = UdpPacket::new_checked(buf, self.wide)?;
        p.set_sec(self.sec);
        p.set_usec(self.usec);
        if self.wide {
            p.set_pcount64(self.pcount);
        } else {
            p.set_pcount32(self.pcount as u32);
        }
        Ok(())
    }

    /// Sender time in seconds (monotonic clock of the sender).
    pub fn sent_secs(&self) -> f64 {
        self.sec as f64 + self.usec as f64 * 1e-6
    }
}

/// Is this 4-byte datagram a server's hello reply (current, byte-swapped pre-3.17, or legacy)?
pub fn is_connect_reply(buf: &[u8]) -> bool {
    buf == UDP_CONNECT_REPLY || buf == UDP_CONNECT_MSG || buf == UDP_CONNECT_REPLY_LEGACY
}

#[cfg(test)]
mod tests {
    use super::*;

    // §13.4: first 16 bytes of the first data datagram (sec 586, usec 787976, seq 1).
    static DATAGRAM_32: [u8; 16] = [
        0x00, 0x00, 0x02, 0x4a, 0x00, 0x0c, 0x06, 0x08, 0x00, 0x00, 0x00, 0x01, 0xcb, 0xf5, 0x7b,
        0x29,
    ];
    // §13.6: 64-bit counters (sec 1419, usec 160134, seq 1).
    static DATAGRAM_64: [u8; 16] = [
        0x00, 0x00, 0x05, 0x8b, 0x00, 0x02, 0x71, 0x86, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x01,
    ];

    #[test]
    fn test_deconstruct() {
        let p = UdpPacket::new_checked(&DATAGRAM_32[..], false).unwrap();
        assert_eq!((p.sec(), p.usec(), p.pcount32()), (586, 787976, 1));
        let p = UdpPacket::new_checked(&DATAGRAM_64[..], true).unwrap();
        assert_eq!((p.sec(), p.usec(), p.pcount64()), (1419, 160134, 1));
        assert_eq!(p.pcount32(), 0, "a 32-bit reader sees 0 in a 64-bit header");
    }

    #[test]
    fn test_construct() {
        let mut buf = [0u8; 16];
        buf[12..].copy_from_slice(&DATAGRAM_32[12..]);
        let mut p = UdpPacket::new_checked(&mut buf[..], false).unwrap();
        p.set_sec(586);
        p.set_usec(787976);
        p.set_pcount32(1);
        assert_eq!(buf, DATAGRAM_32);
    }

    #[test]
    fn test_parse_emit() {
        let h = UdpHeader::parse(&DATAGRAM_64, true).unwrap();
        assert_eq!(
            h,
            UdpHeader {
                sec: 1419,
                usec: 160134,
                pcount: 1,
                wide: true
            }
        );
        let mut out = [0u8; 16];
        h.emit(&mut out).unwrap();
        assert_eq!(out, DATAGRAM_64);
        // The last datagram of §13.4: seq 0x2fb = 763, the packet count of the results.
        let last = [0, 0, 2, 0x4c, 0, 0x0b, 0xfe, 0x88, 0, 0, 2, 0xfb];
        assert_eq!(UdpHeader::parse(&last, false).unwrap().pcount, 763);
        assert!(UdpHeader::parse(&last[..11], false).is_err());
        assert!(UdpHeader::parse(&last, true).is_err());
    }

    #[test]
    fn test_hello_bytes() {
        assert_eq!(UDP_CONNECT_MSG, [0x39, 0x38, 0x37, 0x36]);
        assert_eq!(UDP_CONNECT_REPLY, [0x36, 0x37, 0x38, 0x39]);
        assert_eq!(UDP_CONNECT_REPLY_LEGACY, [0xb1, 0x68, 0xde, 0x3a]);
        assert!(is_connect_reply(&[0x36, 0x37, 0x38, 0x39]));
        assert!(!is_connect_reply(&[0, 0, 2, 0x4a]));
    }
}
