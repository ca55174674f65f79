//! Probe packets of the routerbench protocol (UDP): the layout is documented in `wire::rb`.

use super::WireError;

/// "RBPR".
pub const PROBE_MAGIC: [u8; 4] = *b"RBPR";
pub const PROBE_VERSION: u8 = 1;
pub const PROBE_HEADER_LEN: usize = 56;
/// Largest probe accepted (fits an IPv6 minimum-MTU path with room to spare).
pub const PROBE_MAX_LEN: usize = 1200;
pub const KIND_PROBE: u8 = 1;
pub const KIND_REPLY: u8 = 2;
/// Flag bit: `server_prev_tx_ns` holds a kernel send timestamp for `prev_seq`.
pub const FLAG_PREV_TX: u8 = 0x01;
/// Flag bit: `server_rx_ns` is the reflector's kernel receive timestamp (clear: its user-space
/// clock after `recvmsg`, or a reflector from before this bit, which never sets it).
pub const FLAG_SERVER_RX_KERNEL: u8 = 0x02;

mod pfield {
    use std::ops::Range;
    pub const MAGIC: Range<usize> = 0..4;
    pub const VERSION: usize = 4;
    pub const KIND: usize = 5;
    pub const STREAM: usize = 6;
    pub const FLAGS: usize = 7;
    pub const SESSION: Range<usize> = 8..16;
    pub const SEQ: Range<usize> = 16..20;
    pub const PREV_SEQ: Range<usize> = 20..24;
    pub const CLIENT_TX: Range<usize> = 24..32;
    pub const SERVER_RX: Range<usize> = 32..40;
    pub const SERVER_TX: Range<usize> = 40..48;
    pub const SERVER_PREV_TX: Range<usize> = 48..56;
}

/// A read/write view over a probe packet (smoltcp style). `new_checked` validates length,
/// magic and version; the accessors then cannot go out of bounds.
#[derive(Debug)]
pub struct ProbePacket<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> ProbePacket<T> {
    pub fn new_checked(buffer: T) -> Result<Self, WireError> {
        let b = buffer.as_ref();
        if b.len() < PROBE_HEADER_LEN {
            return Err(WireError::Truncated {
                needed: PROBE_HEADER_LEN,
                got: b.len(),
            });
        }
        if b[pfield::MAGIC] != PROBE_MAGIC || b[pfield::VERSION] != PROBE_VERSION {
            return Err(WireError::NotProbe);
        }
        Ok(Self { buffer })
    }
    fn u64_at(&self, r: std::ops::Range<usize>) -> u64 {
        let mut a = [0u8; 8];
        a.copy_from_slice(&self.buffer.as_ref()[r]);
        u64::from_be_bytes(a)
    }
    fn u32_at(&self, r: std::ops::Range<usize>) -> u32 {
        let mut a = [0u8; 4];
        a.copy_from_slice(&self.buffer.as_ref()[r]);
        u32::from_be_bytes(a)
    }
    pub fn kind(&self) -> u8 {
        self.buffer.as_ref()[pfield::KIND]
    }
    pub fn stream(&self) -> u8 {
        self.buffer.as_ref()[pfield::STREAM]
    }
    pub fn flags(&self) -> u8 {
        self.buffer.as_ref()[pfield::FLAGS]
    }
    pub fn session(&self) -> u64 {
        self.u64_at(pfield::SESSION)
    }
    pub fn seq(&self) -> u32 {
        self.u32_at(pfield::SEQ)
    }
    pub fn prev_seq(&self) -> u32 {
        self.u32_at(pfield::PREV_SEQ)
    }
    pub fn client_tx_ns(&self) -> u64 {
        self.u64_at(pfield::CLIENT_TX)
    }
    pub fn server_rx_ns(&self) -> u64 {
        self.u64_at(pfield::SERVER_RX)
    }
    pub fn server_tx_ns(&self) -> u64 {
        self.u64_at(pfield::SERVER_TX)
    }
    pub fn server_prev_tx_ns(&self) -> u64 {
        self.u64_at(pfield::SERVER_PREV_TX)
    }
    pub fn len(&self) -> usize {
        self.buffer.as_ref().len()
    }
    pub fn is_empty(&self) -> bool {
        self.buffer.as_ref().is_empty()
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> ProbePacket<T> {
    /// Turns a received probe into a reply in place, stamping the reflector's times.
    pub fn make_reply(
        &mut self,
        server_rx_ns: u64,
        server_rx_kernel: bool,
        server_tx_ns: u64,
        prev_tx: Option<(u32, u64)>,
    ) {
        let b = self.buffer.as_mut();
        b[pfield::KIND] = KIND_REPLY;
        if server_rx_kernel {
            b[pfield::FLAGS] |= FLAG_SERVER_RX_KERNEL;
        } else {
            b[pfield::FLAGS] &= !FLAG_SERVER_RX_KERNEL;
        }
        b[pfield::SERVER_RX].copy_from_slice(&server_rx_ns.to_be_bytes());
        b[pfield::SERVER_TX].copy_from_slice(&server_tx_ns.to_be_bytes());
        match prev_tx {
            Some((seq, ns)) => {
                b[pfield::FLAGS] |= FLAG_PREV_TX;
                b[pfield::PREV_SEQ].copy_from_slice(&seq.to_be_bytes());
                b[pfield::SERVER_PREV_TX].copy_from_slice(&ns.to_be_bytes());
            }
            None => {
                b[pfield::FLAGS] &= !FLAG_PREV_TX;
                b[pfield::PREV_SEQ].copy_from_slice(&0u32.to_be_bytes());
                b[pfield::SERVER_PREV_TX].copy_from_slice(&0u64.to_be_bytes());
            }
        }
    }
}

/// What a client puts in a probe before sending it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProbeRepr {
    pub stream: u8,
    pub session: u64,
    pub seq: u32,
    pub client_tx_ns: u64,
}

impl ProbeRepr {
    /// Writes the header into `buf[..PROBE_HEADER_LEN]`; the caller fills the rest (random bytes).
    pub fn emit(&self, buf: &mut [u8]) -> Result<(), WireError> {
        if buf.len() < PROBE_HEADER_LEN || buf.len() > PROBE_MAX_LEN {
            return Err(WireError::Malformed {
                what: "probe",
                why: format!(
                    "length {} outside {PROBE_HEADER_LEN}..={PROBE_MAX_LEN}",
                    buf.len()
                ),
            });
        }
        buf[pfield::MAGIC].copy_from_slice(&PROBE_MAGIC);
        buf[pfield::VERSION] = PROBE_VERSION;
        buf[pfield::KIND] = KIND_PROBE;
        buf[pfield::STREAM] = self.stream;
        buf[pfield::FLAGS] = 0;
        buf[pfield::SESSION].copy_from_slice(&self.session.to_be_bytes());
        buf[pfield::SEQ].copy_from_slice(&self.seq.to_be_bytes());
        buf[pfield::PREV_SEQ].fill(0);
        buf[pfield::CLIENT_TX].copy_from_slice(&self.client_tx_ns.to_be_bytes());
        buf[pfield::SERVER_RX.start..PROBE_HEADER_LEN].fill(0);
        Ok(())
    }
}
