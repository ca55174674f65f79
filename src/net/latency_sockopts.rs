//! Socket options the latency tests need: TOS/traffic class, TCP congestion control, TCP_INFO
//! RTT, and kernel software timestamps (receive via cmsg, send via the error queue).
//!
//! Kernel timestamps are `CLOCK_REALTIME` nanoseconds, so user-space times compared with them
//! come from [`realtime_ns`].

use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};
use std::os::fd::{AsFd, AsRawFd, RawFd};

/// `CLOCK_REALTIME` in ns, the clock kernel software timestamps use.
pub fn realtime_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

/// Reads the TOS byte or traffic class back from a socket.
pub fn tos(sock: &impl AsFd, v6: bool) -> io::Result<u8> {
    let s = socket2::SockRef::from(sock);
    Ok((if v6 { s.tclass_v6()? } else { s.tos_v4()? }) as u8)
}

// Congestion control and marking are the same for every test: one implementation in `sockopt`
// (its `set_tos(sock, tos, v6)` also marks IPv4-mapped peers of a dual-stack socket).
pub use super::sockopt::{congestion, set_congestion, set_tos};

/// Smoothed RTT (µs) from TCP_INFO, or None if the kernel refuses.
pub fn tcp_rtt_us(sock: &impl AsFd) -> Option<u32> {
    let fd = sock.as_fd().as_raw_fd();
    // SAFETY: tcp_info is plain old data; the kernel writes at most `len` bytes.
    let mut info: libc::tcp_info = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::tcp_info>() as libc::socklen_t;
    let rc = unsafe {
        libc::getsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            (&mut info as *mut libc::tcp_info).cast(),
            &mut len,
        )
    };
    (rc == 0).then_some(info.tcpi_rtt)
}

fn setsockopt_int(fd: RawFd, level: i32, name: i32, value: libc::c_int) -> io::Result<()> {
    // SAFETY: passing a valid pointer to an int of the stated size.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            (&value as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Which kernel timestamps a socket delivers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimestampMode {
    /// SO_TIMESTAMPING: receive and send (error queue, with a per-socket packet id).
    RxTx,
    /// SO_TIMESTAMPNS: receive only.
    RxOnly,
}

/// Asks the kernel for software receive timestamps and send timestamps at qdisc entry; falls
/// back to receive only.
pub fn enable_timestamps(sock: &impl AsFd) -> io::Result<TimestampMode> {
    let fd = sock.as_fd().as_raw_fd();
    let flags = libc::SOF_TIMESTAMPING_RX_SOFTWARE
        // TX_SCHED, not TX_SOFTWARE: the send stamp is taken as the packet enters the qdisc,
        // so time queued in this host's own qdisc counts as path delay (it is bloat the user
        // feels), while the time before the send call (user-space scheduling) stays out.
        // TX_SOFTWARE stamps in the driver, after the qdisc: measured in a netns with a tbf
        // bottleneck on lo, it hid a 48 ms queue entirely.
        | libc::SOF_TIMESTAMPING_TX_SCHED
        | libc::SOF_TIMESTAMPING_SOFTWARE
        | libc::SOF_TIMESTAMPING_OPT_ID
        | libc::SOF_TIMESTAMPING_OPT_TSONLY;
    if setsockopt_int(
        fd,
        libc::SOL_SOCKET,
        libc::SO_TIMESTAMPING,
        flags as libc::c_int,
    )
    .is_ok()
    {
        return Ok(TimestampMode::RxTx);
    }
    setsockopt_int(fd, libc::SOL_SOCKET, libc::SO_TIMESTAMPNS, 1).map_err(|e| {
        io::Error::new(
            e.kind(),
            format!("kernel receive timestamps (SO_TIMESTAMPNS) unavailable: {e}"),
        )
    })?;
    Ok(TimestampMode::RxOnly)
}

/// Asks the kernel to report each datagram's TOS byte (IPv4) and traffic class (IPv6).
pub fn enable_recv_tos(sock: &impl AsFd, v6: bool) -> io::Result<()> {
    let fd = sock.as_fd().as_raw_fd();
    if v6 {
        setsockopt_int(fd, libc::SOL_IPV6, libc::IPV6_RECVTCLASS, 1)
    } else {
        setsockopt_int(fd, libc::SOL_IP, libc::IP_RECVTOS, 1)
    }
}

/// One datagram received with `recvmsg`.
#[derive(Debug, Clone, Copy)]
pub struct Received {
    pub len: usize,
    pub from: Option<SocketAddr>,
    /// Kernel software receive timestamp (CLOCK_REALTIME ns).
    pub kernel_ns: Option<u64>,
    /// User-space time right after `recvmsg` returned.
    pub user_ns: u64,
    /// The datagram was longer than the buffer.
    pub truncated: bool,
    /// TOS byte / traffic class of the datagram (after [`enable_recv_tos`]).
    pub tos: Option<u8>,
}

fn ts_ns(ts: &libc::timespec) -> Option<u64> {
    let ns = (ts.tv_sec as i128) * 1_000_000_000 + ts.tv_nsec as i128;
    (ns > 0).then_some(ns as u64)
}

fn sockaddr_to_std(ss: &libc::sockaddr_storage, len: libc::socklen_t) -> Option<SocketAddr> {
    match ss.ss_family as i32 {
        libc::AF_INET if len as usize >= std::mem::size_of::<libc::sockaddr_in>() => {
            // SAFETY: family says sockaddr_in and the length covers it.
            let sin: &libc::sockaddr_in = unsafe { &*(ss as *const _ as *const libc::sockaddr_in) };
            let ip = Ipv4Addr::from(u32::from_be(sin.sin_addr.s_addr));
            Some(SocketAddr::V4(SocketAddrV4::new(
                ip,
                u16::from_be(sin.sin_port),
            )))
        }
        libc::AF_INET6 if len as usize >= std::mem::size_of::<libc::sockaddr_in6>() => {
            // SAFETY: as above for sockaddr_in6.
            let sin6: &libc::sockaddr_in6 =
                unsafe { &*(ss as *const _ as *const libc::sockaddr_in6) };
            let ip = Ipv6Addr::from(sin6.sin6_addr.s6_addr);
            Some(SocketAddr::V6(SocketAddrV6::new(
                ip,
                u16::from_be(sin6.sin6_port),
                sin6.sin6_flowinfo,
                sin6.sin6_scope_id,
            )))
        }
        _ => None,
    }
}

/// What the control messages of one `recvmsg` carried.
#[derive(Default)]
struct Cmsgs {
    kernel_ns: Option<u64>,
    tx_id: Option<u32>,
    tos: Option<u8>,
}

fn parse_cmsgs(msg: &libc::msghdr) -> Cmsgs {
    let mut out = Cmsgs::default();
    // SAFETY: iterating the control buffer with the libc CMSG macros, which bound-check against
    // msg_controllen; each payload is read unaligned.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(msg);
        while !c.is_null() {
            let h = &*c;
            let data = libc::CMSG_DATA(c);
            if h.cmsg_level == libc::SOL_SOCKET && h.cmsg_type == libc::SCM_TIMESTAMPING {
                let ts: [libc::timespec; 3] = std::ptr::read_unaligned(data.cast());
                out.kernel_ns = ts_ns(&ts[0]);
            } else if h.cmsg_level == libc::SOL_SOCKET && h.cmsg_type == libc::SCM_TIMESTAMPNS {
                let ts: libc::timespec = std::ptr::read_unaligned(data.cast());
                out.kernel_ns = ts_ns(&ts);
            } else if h.cmsg_level == libc::SOL_IP && h.cmsg_type == libc::IP_TOS {
                out.tos = Some(*data);
            } else if h.cmsg_level == libc::SOL_IPV6 && h.cmsg_type == libc::IPV6_TCLASS {
                let v: libc::c_int = std::ptr::read_unaligned(data.cast());
                out.tos = Some(v as u8);
            } else if (h.cmsg_level == libc::SOL_IP && h.cmsg_type == libc::IP_RECVERR)
                || (h.cmsg_level == libc::SOL_IPV6 && h.cmsg_type == libc::IPV6_RECVERR)
            {
                let ee: libc::sock_extended_err = std::ptr::read_unaligned(data.cast());
                if ee.ee_errno == libc::ENOMSG as u32
                    && ee.ee_origin == libc::SO_EE_ORIGIN_TIMESTAMPING
                {
                    out.tx_id = Some(ee.ee_data);
                }
            }
            c = libc::CMSG_NXTHDR(msg, c);
        }
    }
    out
}

fn recvmsg_raw(
    fd: RawFd,
    buf: &mut [u8],
    flags: i32,
) -> io::Result<(usize, Option<SocketAddr>, Cmsgs, bool)> {
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    // SAFETY: zeroed sockaddr_storage is valid; the buffers outlive the call.
    let mut addr: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let mut control = [0u64; 64]; // 512 bytes, 8-aligned
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_name = (&mut addr as *mut libc::sockaddr_storage).cast();
    msg.msg_namelen = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = std::mem::size_of_val(&control) as _;
    // SAFETY: msg points at valid buffers for the duration of the call.
    let n = unsafe { libc::recvmsg(fd, &mut msg, flags) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    let from = sockaddr_to_std(&addr, msg.msg_namelen);
    let truncated = msg.msg_flags & libc::MSG_TRUNC != 0;
    Ok((n as usize, from, parse_cmsgs(&msg), truncated))
}

/// Receives one datagram with its kernel timestamp. Honors the socket's read timeout.
pub fn recv_timestamped(sock: &impl AsFd, buf: &mut [u8]) -> io::Result<Received> {
    let (len, from, c, truncated) = recvmsg_raw(sock.as_fd().as_raw_fd(), buf, 0)?;
    Ok(Received {
        len,
        from,
        kernel_ns: c.kernel_ns,
        user_ns: realtime_ns(),
        truncated,
        tos: c.tos,
    })
}

/// Drains the error queue without blocking: `(packet id, kernel send time ns)` for each sent
/// packet whose software TX timestamp is ready. Ids count sends on this socket from 0.
pub fn read_tx_timestamps(sock: &impl AsFd) -> Vec<(u32, u64)> {
    let fd = sock.as_fd().as_raw_fd();
    let mut out = Vec::new();
    let mut buf = [0u8; 256];
    for _ in 0..64 {
        match recvmsg_raw(fd, &mut buf, libc::MSG_ERRQUEUE | libc::MSG_DONTWAIT) {
            Ok((_, _, c, _)) => {
                if let (Some(id), Some(ns)) = (c.tx_id, c.kernel_ns) {
                    out.push((id, ns));
                }
            }
            Err(_) => break,
        }
    }
    out
}

/// Waits up to `timeout_ms` until one of `fds` is readable or has an error-queue entry.
/// Returns the revents per fd (0 if nothing happened).
pub fn poll_readable(fds: &[RawFd], timeout_ms: i32) -> io::Result<Vec<i16>> {
    let mut pfds: Vec<libc::pollfd> = fds
        .iter()
        .map(|&fd| libc::pollfd {
            fd,
            events: libc::POLLIN | libc::POLLERR,
            revents: 0,
        })
        .collect();
    // SAFETY: pfds is a valid array of pollfd of the given length.
    let rc = unsafe { libc::poll(pfds.as_mut_ptr(), pfds.len() as libc::nfds_t, timeout_ms) };
    if rc < 0 {
        let e = io::Error::last_os_error();
        if e.kind() == io::ErrorKind::Interrupted {
            return Ok(vec![0; fds.len()]);
        }
        return Err(e);
    }
    Ok(pfds.iter().map(|p| p.revents).collect())
}

/// True for an IPv6 address (including v4-mapped, which still uses the IPv6 socket options).
pub fn is_v6(ip: &IpAddr) -> bool {
    ip.is_ipv6()
}

/// Compares two addresses for "same peer", treating v4-mapped IPv6 as IPv4.
pub fn same_ip(a: IpAddr, b: IpAddr) -> bool {
    let canon = |ip: IpAddr| match ip {
        IpAddr::V6(v6) => v6
            .to_ipv4_mapped()
            .map(IpAddr::V4)
            .unwrap_or(IpAddr::V6(v6)),
        v4 => v4,
    };
    canon(a) == canon(b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::UdpSocket;

    #[test]
    fn udp_loopback_has_kernel_rx_and_tx_timestamps() {
        let a = UdpSocket::bind("127.0.0.1:0").unwrap();
        let b = UdpSocket::bind("127.0.0.1:0").unwrap();
        b.set_read_timeout(Some(std::time::Duration::from_secs(2)))
            .unwrap();
        let mode_a = enable_timestamps(&a).unwrap();
        enable_timestamps(&b).unwrap();
        enable_recv_tos(&b, false).unwrap();
        set_tos(&a, 0xb8, false).unwrap();
        assert_eq!(tos(&a, false).unwrap(), 0xb8);
        // RX stamping is switched on by deferred kernel work after the first socket asks, so
        // the first packets of a process may be unstamped: retry a few times.
        std::thread::sleep(std::time::Duration::from_millis(20));
        let mut buf = [0u8; 64];
        for id in 0..5u32 {
            let before = realtime_ns();
            a.send_to(b"hello", b.local_addr().unwrap()).unwrap();
            let r = recv_timestamped(&b, &mut buf).unwrap();
            assert_eq!(r.len, 5);
            assert_eq!(r.from, Some(a.local_addr().unwrap()));
            assert_eq!(r.tos, Some(0xb8), "TOS reported by IP_RECVTOS");
            let tx = read_tx_timestamps(&a);
            let Some(k) = r.kernel_ns else { continue };
            assert!(
                k >= before && k <= r.user_ns,
                "{before} <= {k} <= {}",
                r.user_ns
            );
            if mode_a == TimestampMode::RxTx {
                assert_eq!(tx.len(), 1, "one tx timestamp for one send");
                assert_eq!(tx[0].0, id, "packet ids count sends from 0");
                assert!(tx[0].1 >= before && tx[0].1 <= k);
            }
            return;
        }
        panic!("no kernel receive timestamp on 5 loopback datagrams");
    }

    #[test]
    fn same_ip_treats_mapped_as_v4() {
        let v4: IpAddr = "127.0.0.1".parse().unwrap();
        let mapped: IpAddr = "::ffff:127.0.0.1".parse().unwrap();
        assert!(same_ip(v4, mapped));
        assert!(!same_ip(v4, "127.0.0.2".parse().unwrap()));
    }
}
