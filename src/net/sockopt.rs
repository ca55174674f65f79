//! Socket options for test traffic, usable on any std socket (`TcpStream`, `UdpSocket`,
//! `TcpListener`): DSCP/TOS (set, read back, reported per datagram), congestion control, buffer
//! sizes (checked), MSS, pacing rate, don't-fragment. Each function says which option it sets and
//! why it may fail. Through socket2 and nix; a raw `setsockopt` only for the two options neither
//! names (SO_MAX_PACING_RATE, IP_MTU_DISCOVER).

use nix::sys::socket::{MsgFlags, getsockopt, setsockopt, sockopt};
use socket2::SockRef;
use std::io;
use std::os::fd::{AsFd, AsRawFd};

/// The TOS byte for a DSCP code point (DSCP sits in the upper 6 bits).
pub fn tos_from_dscp(dscp: u8) -> u8 {
    dscp << 2
}

/// Parses a DSCP given as a number (decimal, `0x` hex, `0` octal) or a PHB name
/// (`ef`, `af11`…`af43`, `cs0`…`cs7`, `le`, `va`), like iperf3's `--dscp`.
pub fn parse_dscp(text: &str) -> Option<u8> {
    let t = text.trim().to_ascii_lowercase();
    if let Some(n) = parse_int(&t) {
        return u8::try_from(n).ok().filter(|&d| d < 64);
    }
    let v = match t.as_str() {
        "ef" => 46,
        "va" => 44,
        "le" => 1,
        _ => {
            if let Some(cs) = t.strip_prefix("cs") {
                let n: u8 = cs.parse().ok().filter(|&n| n <= 7)?;
                n << 3
            } else if let Some(af) = t.strip_prefix("af") {
                let b = af.as_bytes();
                if b.len() != 2 {
                    return None;
                }
                let class = (b[0] as char)
                    .to_digit(10)
                    .filter(|c| (1..=4).contains(c))?;
                let drop = (b[1] as char)
                    .to_digit(10)
                    .filter(|d| (1..=3).contains(d))?;
                (class * 8 + drop * 2) as u8
            } else {
                return None;
            }
        }
    };
    Some(v)
}

/// Parses an integer with C `strtol(…, 0)` prefixes (`0x` hex, leading `0` octal).
pub fn parse_int(t: &str) -> Option<u64> {
    if let Some(h) = t.strip_prefix("0x") {
        u64::from_str_radix(h, 16).ok()
    } else if t.len() > 1 && t.starts_with('0') {
        u64::from_str_radix(&t[1..], 8).ok()
    } else {
        t.parse().ok()
    }
}

/// Sets the TOS byte on an IPv4 or IPv6 socket. On an IPv6 socket both `IPV6_TCLASS` and
/// `IP_TOS` are set, so IPv4-mapped peers on a dual-stack socket are marked too (iperf3 3.12
/// missed this; docs/protocols/iperf3.md §12). The `IP_TOS` failure on a v6-only socket is ignored.
pub fn set_tos<S: AsFd>(sock: &S, tos: u8, ipv6: bool) -> io::Result<()> {
    let s = SockRef::from(sock);
    if ipv6 {
        s.set_tclass_v6(tos as u32)?;
        let _ = s.set_tos_v4(tos as u32);
        Ok(())
    } else {
        s.set_tos_v4(tos as u32)
    }
}

/// Sets TCP_CONGESTION (e.g. `bbr`, `cubic`, `reno`). ENOENT means the algorithm is not
/// available: load its module (`modprobe tcp_bbr`) or pick one from
/// /proc/sys/net/ipv4/tcp_available_congestion_control.
/// The error names both sysctls and the fix.
pub fn set_congestion<S: AsFd>(sock: &S, name: &str) -> io::Result<()> {
    SockRef::from(sock)
        .set_tcp_congestion(name.as_bytes())
        .map_err(|e| {
            io::Error::new(
                e.kind(),
                format!(
                    "cannot set TCP congestion control {name:?}: {e} (see \
                     net.ipv4.tcp_available_congestion_control and tcp_allowed_congestion_control; \
                     `modprobe tcp_{name}` or run as root)"
                ),
            )
        })
}

/// Reads TCP_CONGESTION: the algorithm in use on this socket.
pub fn congestion<S: AsFd>(sock: &S) -> io::Result<String> {
    let raw = SockRef::from(sock).tcp_congestion()?;
    let end = raw.iter().position(|&b| b == 0).unwrap_or(raw.len());
    Ok(String::from_utf8_lossy(&raw[..end]).into_owned())
}

/// Reads the TOS byte or traffic class back from a socket.
pub fn tos(sock: &impl AsFd, v6: bool) -> io::Result<u8> {
    let s = SockRef::from(sock);
    Ok((if v6 { s.tclass_v6()? } else { s.tos_v4()? }) as u8)
}

/// Asks the kernel to report each datagram's TOS byte (IPv4, IP_RECVTOS) or traffic class
/// (IPv6, IPV6_RECVTCLASS); [`super::timestamp::recv_timestamped`] returns it.
pub fn enable_recv_tos(sock: &impl AsFd, v6: bool) -> io::Result<()> {
    if v6 {
        setsockopt(sock, sockopt::Ipv6RecvTClass, &true)?;
    } else {
        setsockopt(sock, sockopt::IpRecvTos, &true)?;
    }
    Ok(())
}

/// Asks for each datagram's destination address (IP_PKTINFO / IPV6_RECVPKTINFO), so a socket
/// bound to the wildcard address can answer from the address it was sent to
/// ([`super::timestamp::send_from`]).
pub fn enable_recv_dst(sock: &impl AsFd, v6: bool) -> io::Result<()> {
    if v6 {
        setsockopt(sock, sockopt::Ipv6RecvPacketInfo, &true)?;
    } else {
        setsockopt(sock, sockopt::Ipv4PacketInfo, &true)?;
    }
    Ok(())
}

/// Actual send and receive buffer sizes (what the kernel reports, i.e. doubled).
pub fn buffer_sizes<S: AsFd>(sock: &S) -> io::Result<(usize, usize)> {
    let s = SockRef::from(sock);
    Ok((s.send_buffer_size()?, s.recv_buffer_size()?))
}

/// Sets SO_SNDBUF and SO_RCVBUF to `bytes` and checks the kernel kept at least that much
/// (it reports double the request; less means `net.core.{w,r}mem_max` capped it: raise the
/// sysctl or ask for a smaller window).
pub fn set_buffers<S: AsFd>(sock: &S, bytes: usize) -> io::Result<()> {
    let s = SockRef::from(sock);
    s.set_send_buffer_size(bytes)?;
    s.set_recv_buffer_size(bytes)?;
    let (snd, rcv) = (s.send_buffer_size()?, s.recv_buffer_size()?);
    if snd < bytes || rcv < bytes {
        return Err(io::Error::other(format!(
            "socket buffer {bytes} B capped by the kernel to send {snd} / receive {rcv} B: \
             raise net.core.wmem_max / rmem_max or use a smaller -w"
        )));
    }
    Ok(())
}

/// Sets TCP_MAXSEG (`-M`).
pub fn set_mss<S: AsFd>(sock: &S, mss: u32) -> io::Result<()> {
    Ok(setsockopt(sock, sockopt::TcpMaxSeg, &mss)?)
}

/// Reads TCP_MAXSEG: the MSS of a connected TCP socket.
pub fn mss<S: AsFd>(sock: &S) -> io::Result<u32> {
    Ok(getsockopt(sock, sockopt::TcpMaxSeg)?)
}

/// `recv(MSG_WAITALL)`: blocks until `buf` is full, the read timeout passes (then returns
/// what arrived, or a timeout error if nothing did), EOF or an error.
pub fn recv_waitall<S: AsRawFd>(sock: &S, buf: &mut [u8]) -> io::Result<usize> {
    Ok(nix::sys::socket::recv(
        sock.as_raw_fd(),
        buf,
        MsgFlags::MSG_WAITALL,
    )?)
}

/// Sets SO_RCVLOWAT: the kernel wakes a TCP reader once this many bytes are queued (or at its
/// receive timeout), not for every segment.
pub fn set_recv_lowat<S: AsRawFd>(sock: &S, bytes: usize) -> io::Result<()> {
    let v = libc::c_int::try_from(bytes).unwrap_or(libc::c_int::MAX);
    setsockopt_int(sock.as_raw_fd(), libc::SOL_SOCKET, libc::SO_RCVLOWAT, v)
}

/// Sets SO_MAX_PACING_RATE in bytes/s (`--fq-rate`, needs the fq qdisc or TCP internal pacing).
pub fn set_max_pacing_rate<S: AsRawFd>(sock: &S, bytes_per_sec: u64) -> io::Result<()> {
    let v = u32::try_from(bytes_per_sec).unwrap_or(u32::MAX);
    setsockopt_u32(sock, libc::SOL_SOCKET, libc::SO_MAX_PACING_RATE, v)
}

/// Sets IP_MTU_DISCOVER = IP_PMTUDISC_DO on an IPv4 socket (`--dont-fragment`).
pub fn set_dont_fragment<S: AsRawFd>(sock: &S) -> io::Result<()> {
    setsockopt_u32(
        sock,
        libc::IPPROTO_IP,
        libc::IP_MTU_DISCOVER,
        libc::IP_PMTUDISC_DO as u32,
    )
}

/// `setsockopt` of a C int on a raw fd, for the options nix has no wrapper for (the batched UDP
/// and zero-copy paths, the `_NEW` timestamp options, the forwarder's AF_PACKET sockets).
pub(crate) fn setsockopt_int(fd: i32, level: i32, name: i32, v: libc::c_int) -> io::Result<()> {
    // SAFETY: a c_int option passed by pointer with its size.
    let r = unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            (&v as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// `setsockopt` of a 32-bit value, for the options nix has no wrapper for.
fn setsockopt_u32<S: AsRawFd>(sock: &S, level: i32, name: i32, v: u32) -> io::Result<()> {
    // SAFETY: passes a pointer to a live u32 and its exact size; the kernel only reads it.
    let rc = unsafe {
        libc::setsockopt(
            sock.as_raw_fd(),
            level,
            name,
            (&v as *const u32).cast(),
            std::mem::size_of::<u32>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Sets TCP_NOTSENT_LOWAT: the socket counts as writable only while fewer than `bytes` written
/// bytes wait unsent, which keeps the sender's own queue short (the RPM draft's "Interaction
/// with End Systems"; docs/rpm.md).
pub fn set_notsent_lowat<S: AsRawFd>(sock: &S, bytes: u32) -> io::Result<()> {
    setsockopt_u32(sock, libc::IPPROTO_TCP, libc::TCP_NOTSENT_LOWAT, bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dscp_names_and_numbers() {
        assert_eq!(parse_dscp("ef"), Some(46));
        assert_eq!(parse_dscp("AF41"), Some(34));
        assert_eq!(parse_dscp("cs1"), Some(8));
        assert_eq!(parse_dscp("0x2e"), Some(46));
        assert_eq!(parse_dscp("10"), Some(10));
        assert_eq!(parse_dscp("64"), None);
        assert_eq!(parse_dscp("af5"), None);
        assert_eq!(tos_from_dscp(46), 0xb8);
        assert_eq!(parse_int("0x10"), Some(16));
        assert_eq!(parse_int("020"), Some(16));
    }

    #[test]
    fn options_on_loopback_socket() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let c = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
        set_tos(&c, 0xb8, false).unwrap();
        assert_eq!(SockRef::from(&c).tos_v4().unwrap(), 0xb8);
        set_congestion(&c, "reno").unwrap();
        assert_eq!(congestion(&c).unwrap(), "reno");
        let err = set_congestion(&c, "no-such-cc").unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::NotFound);
        assert!(
            err.to_string().contains("tcp_available_congestion_control"),
            "{err}"
        );
        assert!(mss(&c).unwrap() > 0);
        set_buffers(&c, 65536).unwrap();
        assert!(set_buffers(&c, 1 << 30).is_err());
    }
}
