//! Packet metadata computed once on receive (docs/protocols/router-signals.md B4): receive timestamp, keyed
//! flow and host hashes, lengths, DSCP and ECN, and where the IP header starts so CE can be set
//! on transmit without parsing again.

use crate::hash::FlowHasher;

/// The IP ECN field as received.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Ecn {
    #[default]
    NotEct,
    Ect1,
    Ect0,
    Ce,
}

impl Ecn {
    pub fn from_bits(b: u8) -> Self {
        match b & 3 {
            0 => Ecn::NotEct,
            1 => Ecn::Ect1,
            2 => Ecn::Ect0,
            _ => Ecn::Ce,
        }
    }
}

/// What the receive path learned about a packet, once.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PktMeta {
    /// Receive time (ns, the caller's monotonic clock): sojourn = now − rx_ts_ns.
    pub rx_ts_ns: u64,
    /// Keyed hash of (proto, saddr, daddr, sport, dport).
    pub flow_hash: u32,
    /// Keyed hash of the source address (CAKE host isolation).
    pub src_host_hash: u32,
    /// Keyed hash of the destination address.
    pub dst_host_hash: u32,
    /// Frame length including the 14-byte Ethernet header (what tc counts).
    pub wire_len: u32,
    /// Offset of the IP header in the frame.
    pub l3_off: u16,
    /// 4 or 6; 0 = not IP.
    pub ip_version: u8,
    /// IP protocol / IPv6 next header.
    pub proto: u8,
    /// DSCP (the upper six bits of TOS / traffic class).
    pub dscp: u8,
    pub ecn: Ecn,
    /// Receiving port (the forwarder's interface index).
    pub in_port: u16,
}

/// A frame and its metadata. `data` may be empty in benchmarks: then only `meta` is touched.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Packet {
    pub meta: PktMeta,
    pub data: Vec<u8>,
}

/// Why a frame could not be classified.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParseError {
    /// Shorter than an Ethernet header, or the IP header does not fit.
    Truncated,
    /// Not IPv4 or IPv6 (ARP, LLDP, ...): the host's stack handles it, not the AQM.
    NotIp,
    /// IP version, header length or total length inconsistent.
    BadIpHeader,
}

impl std::fmt::Display for ParseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ParseError::Truncated => "frame truncated",
            ParseError::NotIp => "not an IP packet",
            ParseError::BadIpHeader => "malformed IP header",
        })
    }
}

impl std::error::Error for ParseError {}

const ETH_HLEN: usize = 14;

/// Finds the IP header behind Ethernet, up to two VLAN tags and PPPoE session framing.
fn l3_start(frame: &[u8]) -> Result<(usize, u8), ParseError> {
    if frame.len() < ETH_HLEN {
        return Err(ParseError::Truncated);
    }
    let mut off = 12;
    let mut ethertype = u16::from_be_bytes([frame[off], frame[off + 1]]);
    off += 2;
    for _ in 0..2 {
        if ethertype != 0x8100 && ethertype != 0x88a8 {
            break;
        }
        let b = frame.get(off + 2..off + 4).ok_or(ParseError::Truncated)?;
        ethertype = u16::from_be_bytes([b[0], b[1]]);
        off += 4;
    }
    if ethertype == 0x8864 {
        // PPPoE session: 6-byte header, then the 2-byte PPP protocol.
        let b = frame.get(off + 6..off + 8).ok_or(ParseError::Truncated)?;
        ethertype = match u16::from_be_bytes([b[0], b[1]]) {
            0x0021 => 0x0800,
            0x0057 => 0x86dd,
            _ => return Err(ParseError::NotIp),
        };
        off += 8;
    }
    match ethertype {
        0x0800 => Ok((off, 4)),
        0x86dd => Ok((off, 6)),
        _ => Err(ParseError::NotIp),
    }
}

fn has_ports(proto: u8) -> bool {
    matches!(proto, 6 | 17 | 33 | 132 | 136)
}

impl PktMeta {
    /// Classifies an Ethernet frame received at `rx_ts_ns` on port `in_port`: one parse, three
    /// keyed hashes. Never panics on any input.
    pub fn parse(
        frame: &[u8],
        rx_ts_ns: u64,
        hasher: &FlowHasher,
        in_port: u16,
    ) -> Result<Self, ParseError> {
        let (l3, ver) = l3_start(frame)?;
        let ip = &frame[l3..];
        // Key material: proto, then addresses, then ports; a fixed buffer, no allocation.
        let mut key = [0u8; 37];
        let (tos, proto, alen, l4): (u8, u8, usize, Option<usize>) = if ver == 4 {
            if ip.len() < 20 {
                return Err(ParseError::Truncated);
            }
            let ihl = usize::from(ip[0] & 0x0f) * 4;
            let total = usize::from(u16::from_be_bytes([ip[2], ip[3]]));
            if ip[0] >> 4 != 4 || ihl < 20 || total < ihl || ip.len() < ihl {
                return Err(ParseError::BadIpHeader);
            }
            key[1..5].copy_from_slice(&ip[12..16]);
            key[17..21].copy_from_slice(&ip[16..20]);
            let frag_off = u16::from_be_bytes([ip[6], ip[7]]) & 0x1fff;
            (ip[1], ip[9], 4, (frag_off == 0).then_some(ihl))
        } else {
            if ip.len() < 40 {
                return Err(ParseError::Truncated);
            }
            if ip[0] >> 4 != 6 {
                return Err(ParseError::BadIpHeader);
            }
            key[1..17].copy_from_slice(&ip[8..24]);
            key[17..33].copy_from_slice(&ip[24..40]);
            ((ip[0] << 4) | (ip[1] >> 4), ip[6], 16, Some(40))
        };
        key[0] = proto;
        if let Some(l4) = l4.filter(|_| has_ports(proto)) {
            if let Some(p) = ip.get(l4..l4 + 4) {
                key[33..37].copy_from_slice(p);
            }
        }
        // Host hashes: address only, with a domain byte so they differ from each other.
        let mut host = [0u8; 17];
        host[0] = 1;
        host[1..1 + alen].copy_from_slice(&key[1..1 + alen]);
        let src_host_hash = hasher.hash(&host[..1 + alen]);
        host[0] = 2;
        host[1..1 + alen].copy_from_slice(&key[17..17 + alen]);
        let dst_host_hash = hasher.hash(&host[..1 + alen]);
        Ok(PktMeta {
            rx_ts_ns,
            flow_hash: hasher.hash(&key),
            src_host_hash,
            dst_host_hash,
            wire_len: u32::try_from(frame.len()).unwrap_or(u32::MAX),
            l3_off: u16::try_from(l3).map_err(|_| ParseError::BadIpHeader)?,
            ip_version: ver,
            proto,
            dscp: tos >> 2,
            ecn: Ecn::from_bits(tos),
            in_port,
        })
    }
}

impl Packet {
    /// Sets CE if the packet is ECN-capable (true), or reports that it must be dropped instead
    /// (false). The IPv4 header checksum is updated incrementally (RFC 1624).
    pub fn mark_ce(&mut self) -> bool {
        match self.meta.ecn {
            Ecn::NotEct => return false,
            Ecn::Ce => return true,
            Ecn::Ect0 | Ecn::Ect1 => {}
        }
        self.meta.ecn = Ecn::Ce;
        let l3 = usize::from(self.meta.l3_off);
        if self.meta.ip_version == 4 && self.data.len() >= l3 + 20 {
            let old = u16::from_be_bytes([self.data[l3], self.data[l3 + 1]]);
            self.data[l3 + 1] |= 3;
            let new = u16::from_be_bytes([self.data[l3], self.data[l3 + 1]]);
            let hc = u16::from_be_bytes([self.data[l3 + 10], self.data[l3 + 11]]);
            let mut sum = u32::from(!hc) + u32::from(!old) + u32::from(new);
            sum = (sum & 0xffff) + (sum >> 16);
            sum = (sum & 0xffff) + (sum >> 16);
            let c = !(sum as u16);
            self.data[l3 + 10..l3 + 12].copy_from_slice(&c.to_be_bytes());
        } else if self.meta.ip_version == 6 && self.data.len() >= l3 + 2 {
            self.data[l3 + 1] |= 0x30;
        }
        true
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Ethernet + IPv4 + UDP frame, 64 bytes of payload-free headers plus padding.
    pub fn udp4(
        src: [u8; 4],
        dst: [u8; 4],
        sport: u16,
        dport: u16,
        tos: u8,
        len: usize,
    ) -> Vec<u8> {
        let mut f = vec![0u8; len.max(42)];
        f[12] = 0x08;
        let ip = &mut f[14..];
        ip[0] = 0x45;
        ip[1] = tos;
        let total = (len.max(42) - 14) as u16;
        ip[2..4].copy_from_slice(&total.to_be_bytes());
        ip[8] = 64;
        ip[9] = 17;
        ip[12..16].copy_from_slice(&src);
        ip[16..20].copy_from_slice(&dst);
        let mut sum = 0u32;
        for i in (0..20).step_by(2) {
            sum += u32::from(u16::from_be_bytes([ip[i], ip[i + 1]]));
        }
        while sum > 0xffff {
            sum = (sum & 0xffff) + (sum >> 16);
        }
        ip[10..12].copy_from_slice(&(!(sum as u16)).to_be_bytes());
        ip[20..22].copy_from_slice(&sport.to_be_bytes());
        ip[22..24].copy_from_slice(&dport.to_be_bytes());
        f
    }

    fn ipv4_checksum_ok(ip: &[u8]) -> bool {
        let mut sum = 0u32;
        for i in (0..20).step_by(2) {
            sum += u32::from(u16::from_be_bytes([ip[i], ip[i + 1]]));
        }
        while sum > 0xffff {
            sum = (sum & 0xffff) + (sum >> 16);
        }
        sum == 0xffff
    }

    #[test]
    fn parses_udp4_once() {
        let h = FlowHasher::new(7, 9);
        let f = udp4([10, 0, 0, 1], [10, 0, 0, 2], 1000, 5201, 0xb8 | 2, 100);
        let m = PktMeta::parse(&f, 123, &h, 3).unwrap();
        assert_eq!(
            (m.rx_ts_ns, m.wire_len, m.l3_off, m.proto),
            (123, 100, 14, 17)
        );
        assert_eq!((m.dscp, m.ecn, m.in_port), (46, Ecn::Ect0, 3));
        let g = udp4([10, 0, 0, 1], [10, 0, 0, 2], 1001, 5201, 0, 100);
        let n = PktMeta::parse(&g, 0, &h, 0).unwrap();
        assert_ne!(m.flow_hash, n.flow_hash);
        assert_eq!(m.src_host_hash, n.src_host_hash);
        assert_ne!(m.src_host_hash, m.dst_host_hash);
    }

    #[test]
    fn malformed_frames_are_errors_not_panics() {
        let h = FlowHasher::new(1, 1);
        let good = udp4([1, 2, 3, 4], [5, 6, 7, 8], 1, 2, 0, 60);
        for cut in 0..good.len() {
            let _ = PktMeta::parse(&good[..cut], 0, &h, 0);
        }
        assert_eq!(
            PktMeta::parse(&good[..10], 0, &h, 0),
            Err(ParseError::Truncated)
        );
        let mut bad = good.clone();
        bad[14] = 0x43; // IHL 3
        assert_eq!(PktMeta::parse(&bad, 0, &h, 0), Err(ParseError::BadIpHeader));
        let mut arp = good.clone();
        arp[12..14].copy_from_slice(&[0x08, 0x06]);
        assert_eq!(PktMeta::parse(&arp, 0, &h, 0), Err(ParseError::NotIp));
        // Pseudo-random garbage of every length must never panic.
        let mut x = 0x1234_5678u32;
        for len in 0..200 {
            let f: Vec<u8> = (0..len)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 17;
                    x ^= x << 5;
                    x as u8
                })
                .collect();
            let _ = PktMeta::parse(&f, 0, &h, 0);
        }
    }

    #[test]
    fn mark_ce_fixes_ipv4_checksum() {
        let h = FlowHasher::new(1, 1);
        let f = udp4([10, 0, 0, 1], [10, 0, 0, 2], 1, 2, 0x02, 80);
        let mut p = Packet {
            meta: PktMeta::parse(&f, 0, &h, 0).unwrap(),
            data: f,
        };
        assert!(p.mark_ce());
        assert_eq!(p.data[15] & 3, 3);
        assert!(ipv4_checksum_ok(&p.data[14..34]));
        let g = udp4([10, 0, 0, 1], [10, 0, 0, 2], 1, 2, 0, 80);
        let mut q = Packet {
            meta: PktMeta::parse(&g, 0, &h, 0).unwrap(),
            data: g,
        };
        assert!(!q.mark_ce(), "not-ECT must be dropped, not marked");
    }
}
