//! ICMP echo for the `Ping (ms) ICMP` series: an unprivileged ping socket where
//! `net.ipv4.ping_group_range` allows it, a raw socket as root, else a note saying why not.

use crate::net as so;
use socket2::{Domain, Protocol, Socket, Type};
use std::net::{IpAddr, SocketAddr};
use std::os::fd::{AsFd, BorrowedFd};

const ECHO_REQUEST_V4: u8 = 8;
const ECHO_REPLY_V4: u8 = 0;
const ECHO_REQUEST_V6: u8 = 128;
const ECHO_REPLY_V6: u8 = 129;
/// Payload: 8-byte token, 8-byte send time (informative), padding to 56 bytes like ping.
const PAYLOAD_LEN: usize = 56;

/// An open ICMP echo socket.
pub struct IcmpSocket {
    sock: Socket,
    v6: bool,
    /// Raw sockets see every ICMP packet and need the IPv4 header stripped and our id checked.
    raw: bool,
    ident: u16,
    token: u64,
    target: SocketAddr,
}

impl AsFd for IcmpSocket {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.sock.as_fd()
    }
}

impl IcmpSocket {
    /// Opens a ping socket, or a raw socket, to `target`. The error text explains what to do.
    pub fn open(target: IpAddr) -> Result<Self, String> {
        let v6 = target.is_ipv6();
        let (domain, proto) = if v6 {
            (Domain::IPV6, Protocol::ICMPV6)
        } else {
            (Domain::IPV4, Protocol::ICMPV4)
        };
        let (sock, raw) = match Socket::new(domain, Type::DGRAM, Some(proto)) {
            Ok(s) => (s, false),
            Err(dgram_err) => match Socket::new(domain, Type::RAW, Some(proto)) {
                Ok(s) => (s, true),
                Err(raw_err) => {
                    let range = std::fs::read_to_string("/proc/sys/net/ipv4/ping_group_range")
                        .map(|s| s.split_whitespace().collect::<Vec<_>>().join(" "))
                        .unwrap_or_else(|_| "unreadable".into());
                    return Err(format!(
                        "no ICMP probe: ping socket refused ({dgram_err}; net.ipv4.ping_group_range = {range}) \
                         and raw socket refused ({raw_err}). Run as root, or allow your group with \
                         `sysctl -w net.ipv4.ping_group_range=\"0 2147483647\"`"
                    ));
                }
            },
        };
        sock.set_nonblocking(true)
            .map_err(|e| format!("ICMP socket: {e}"))?;
        if let Err(e) = so::enable_timestamps(&sock) {
            return Err(format!("ICMP socket: {e}"));
        }
        let token = super::conn::random_u64();
        Ok(Self {
            sock,
            v6,
            raw,
            ident: (token >> 48) as u16,
            token,
            target: SocketAddr::new(target, 0),
        })
    }

    /// "raw socket" or "ping socket", for the notes.
    pub fn kind(&self) -> &'static str {
        if self.raw {
            "raw socket"
        } else {
            "unprivileged ping socket"
        }
    }

    /// Sends echo request `seq`.
    pub fn send(&self, seq: u16, now_ns: u64) -> std::io::Result<()> {
        let mut p = vec![0u8; 8 + PAYLOAD_LEN];
        p[0] = if self.v6 {
            ECHO_REQUEST_V6
        } else {
            ECHO_REQUEST_V4
        };
        p[4..6].copy_from_slice(&self.ident.to_be_bytes());
        p[6..8].copy_from_slice(&seq.to_be_bytes());
        p[8..16].copy_from_slice(&self.token.to_be_bytes());
        p[16..24].copy_from_slice(&now_ns.to_be_bytes());
        if !self.v6 {
            let c = checksum(&p);
            p[2..4].copy_from_slice(&c.to_be_bytes());
        }
        self.sock.send_to(&p, &self.target.into()).map(|_| ())
    }

    /// Parses a received datagram: `Some(seq)` if it is the reply to one of our requests.
    pub fn parse_reply(&self, buf: &[u8], from: Option<SocketAddr>) -> Option<u16> {
        if from.is_some_and(|f| !so::same_ip(f.ip(), self.target.ip())) {
            return None;
        }
        let icmp = if self.raw && !self.v6 {
            let ihl = ((*buf.first()? & 0x0f) as usize) * 4;
            buf.get(ihl..)?
        } else {
            buf
        };
        if icmp.len() < 16 {
            return None;
        }
        let reply = if self.v6 {
            ECHO_REPLY_V6
        } else {
            ECHO_REPLY_V4
        };
        if icmp[0] != reply || icmp[1] != 0 {
            return None;
        }
        // Ping sockets rewrite the id to the local port; only raw sockets see foreign replies.
        if self.raw && u16::from_be_bytes([icmp[4], icmp[5]]) != self.ident {
            return None;
        }
        if icmp[8..16] != self.token.to_be_bytes() {
            return None;
        }
        Some(u16::from_be_bytes([icmp[6], icmp[7]]))
    }
}

/// The Internet checksum (RFC 1071).
pub fn checksum(data: &[u8]) -> u16 {
    let mut sum: u32 = 0;
    for chunk in data.chunks(2) {
        let word = if chunk.len() == 2 {
            u16::from_be_bytes([chunk[0], chunk[1]])
        } else {
            u16::from_be_bytes([chunk[0], 0])
        };
        sum += word as u32;
    }
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checksum_of_known_echo_request() {
        // An echo request, id 0x1234, seq 1, no payload: checksum 0xe5ca.
        let p = [8u8, 0, 0, 0, 0x12, 0x34, 0x00, 0x01];
        assert_eq!(checksum(&p), 0xe5ca);
        let mut with = p;
        with[2..4].copy_from_slice(&0xe5cau16.to_be_bytes());
        assert_eq!(
            checksum(&with),
            0,
            "a packet with its checksum sums to zero"
        );
    }

    #[test]
    fn loopback_echo_or_clear_reason() {
        let target: IpAddr = "127.0.0.1".parse().unwrap();
        let s = match IcmpSocket::open(target) {
            Ok(s) => s,
            Err(why) => {
                assert!(why.contains("ping_group_range"), "{why}");
                eprintln!("skipping ICMP echo: {why}");
                return;
            }
        };
        // The kernel turns RX timestamping on through deferred work after the first socket asks,
        // so the very first packets may lack a stamp: several echoes, at least one stamped.
        let mut buf = [0u8; 256];
        let (mut replies, mut stamped) = (0, 0);
        for seq in 0..5u16 {
            s.send(seq, 0).unwrap();
            for _ in 0..100 {
                let got = so::recv_timestamped(&s, &mut buf)
                    .ok()
                    .and_then(|r| s.parse_reply(&buf[..r.len], r.from).map(|g| (g, r)));
                if let Some((got, r)) = got {
                    assert_eq!(got, seq);
                    replies += 1;
                    stamped += r.kernel_ns.is_some() as u32;
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
        }
        if replies == 5 {
            assert!(stamped >= 1, "no kernel timestamp on any of 5 ICMP replies");
            return;
        }
        panic!(
            "no ICMP echo reply from 127.0.0.1 within 1 s ({})",
            s.kind()
        );
    }
}
