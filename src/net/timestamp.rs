//! Kernel software timestamps: switching them on (`SO_TIMESTAMPING`, or `SO_TIMESTAMPNS` as the
//! fallback), receiving a datagram with its receive stamp and TOS from the control messages,
//! and draining send stamps from the error queue.
//!
//! Kernel timestamps are `CLOCK_REALTIME` nanoseconds, so user-space times compared with them
//! come from [`realtime_ns`].

use super::sockopt::setsockopt_int;
use std::io;
use std::io::IoSliceMut;
use std::net::{IpAddr, SocketAddr};
use std::os::fd::{AsFd, AsRawFd};

use nix::sys::socket::{
    ControlMessage, ControlMessageOwned, MsgFlags, SockaddrStorage, TimestampingFlag, recvmsg,
    setsockopt, sockopt,
};
use nix::sys::time::TimeSpec;

/// `CLOCK_REALTIME` in ns, the clock kernel software timestamps use.
pub fn realtime_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

/// Which kernel timestamps a socket delivers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimestampMode {
    /// SO_TIMESTAMPING: receive and send (error queue, with a per-socket packet id).
    RxTx,
    /// SO_TIMESTAMPNS: receive only.
    RxOnly,
}

/// The y2038-safe socket options (Linux ≥ 5.1): their control messages carry
/// `struct __kernel_timespec` (two i64) on every architecture, whatever the C library thinks
/// `time_t` is. On 64-bit targets they equal the old layout; on 32-bit ones the old options
/// carry 32-bit seconds.
pub const SO_TIMESTAMPNS_NEW: libc::c_int = 64;
pub const SO_TIMESTAMPING_NEW: libc::c_int = 65;

/// Whether [`enable_timestamps`] asks for the `_NEW` options first: on 32-bit targets, where
/// the old ones carry 32-bit seconds (and where Rust's libc for musl still uses the time32
/// ABI), so stamps stay right past 2038 and the cmsg layout is ours, not libc's.
pub const PREFER_NEW_OPTIONS: bool = cfg!(target_pointer_width = "32");

/// Asks the kernel for software receive timestamps and send timestamps at qdisc entry; falls
/// back to receive only. On 32-bit targets the `_NEW` options come first (see
/// [`PREFER_NEW_OPTIONS`]), the old ones after them for kernels before 5.1.
pub fn enable_timestamps(sock: &impl AsFd) -> io::Result<TimestampMode> {
    enable_timestamps_with(sock, PREFER_NEW_OPTIONS)
}

/// [`enable_timestamps`], choosing whether the `_NEW` options are tried first.
pub fn enable_timestamps_with(sock: &impl AsFd, prefer_new: bool) -> io::Result<TimestampMode> {
    let flags = timestamping_flags();
    if prefer_new {
        if setsockopt_int(
            sock.as_fd().as_raw_fd(),
            libc::SOL_SOCKET,
            SO_TIMESTAMPING_NEW,
            flags.bits() as libc::c_int,
        )
        .is_ok()
        {
            return Ok(TimestampMode::RxTx);
        }
        if setsockopt_int(
            sock.as_fd().as_raw_fd(),
            libc::SOL_SOCKET,
            SO_TIMESTAMPNS_NEW,
            1,
        )
        .is_ok()
        {
            return Ok(TimestampMode::RxOnly);
        }
    }
    enable_old(sock, flags)
}

fn timestamping_flags() -> TimestampingFlag {
    TimestampingFlag::SOF_TIMESTAMPING_RX_SOFTWARE
        // TX_SCHED, not TX_SOFTWARE: the send stamp is taken as the packet enters the qdisc,
        // so time queued in this host's own qdisc counts as path delay (it is bloat the user
        // feels), while the time before the send call (user-space scheduling) stays out.
        // TX_SOFTWARE stamps in the driver, after the qdisc: measured in a netns with a tbf
        // bottleneck on lo, it hid a 48 ms queue entirely. (nix names no TX_SCHED flag.)
        | TimestampingFlag::from_bits_retain(libc::SOF_TIMESTAMPING_TX_SCHED)
        | TimestampingFlag::SOF_TIMESTAMPING_SOFTWARE
        | TimestampingFlag::SOF_TIMESTAMPING_OPT_ID
        | TimestampingFlag::SOF_TIMESTAMPING_OPT_TSONLY
}

fn enable_old(sock: &impl AsFd, flags: TimestampingFlag) -> io::Result<TimestampMode> {
    if setsockopt(sock, sockopt::Timestamping, &flags).is_ok() {
        return Ok(TimestampMode::RxTx);
    }
    setsockopt(sock, sockopt::ReceiveTimestampns, &true).map_err(|e| {
        let e = io::Error::from(e);
        io::Error::new(
            e.kind(),
            format!("kernel receive timestamps (SO_TIMESTAMPNS) unavailable: {e}"),
        )
    })?;
    Ok(TimestampMode::RxOnly)
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
    /// TOS byte / traffic class of the datagram (after [`super::sockopt::enable_recv_tos`]).
    pub tos: Option<u8>,
    /// The address the datagram was sent to (after [`super::sockopt::enable_recv_dst`]).
    pub dst: Option<IpAddr>,
}

fn ts_ns(ts: &TimeSpec) -> Option<u64> {
    let ns = (ts.tv_sec() as i128) * 1_000_000_000 + ts.tv_nsec() as i128;
    (ns > 0).then_some(ns as u64)
}

/// The first `struct __kernel_timespec` of a `_NEW` timestamp cmsg, in ns (None if short or 0).
pub fn kernel_timespec_ns(data: &[u8]) -> Option<u64> {
    let sec = i64::from_ne_bytes(data.get(0..8)?.try_into().ok()?);
    let nsec = i64::from_ne_bytes(data.get(8..16)?.try_into().ok()?);
    let ns = i128::from(sec) * 1_000_000_000 + i128::from(nsec);
    (ns > 0 && ns < i128::from(u64::MAX)).then_some(ns as u64)
}

/// What the control messages of one `recvmsg` carried.
#[derive(Default)]
struct Cmsgs {
    kernel_ns: Option<u64>,
    tx_id: Option<u32>,
    tos: Option<u8>,
    dst: Option<IpAddr>,
}

impl Cmsgs {
    fn add(&mut self, c: ControlMessageOwned) {
        match c {
            ControlMessageOwned::ScmTimestampsns(ts) => self.kernel_ns = ts_ns(&ts.system),
            ControlMessageOwned::ScmTimestampns(ts) => self.kernel_ns = ts_ns(&ts),
            // SCM_TIMESTAMPNS_NEW / SCM_TIMESTAMPING_NEW: __kernel_timespec (i64 s, i64 ns),
            // one, or three of which the first is the software stamp.
            ControlMessageOwned::Unknown(u)
                if u.cmsg_header.cmsg_level == libc::SOL_SOCKET
                    && matches!(
                        u.cmsg_header.cmsg_type,
                        SO_TIMESTAMPNS_NEW | SO_TIMESTAMPING_NEW
                    ) =>
            {
                self.kernel_ns = kernel_timespec_ns(&u.data_bytes);
            }
            ControlMessageOwned::Ipv4Tos(tos) => self.tos = Some(tos),
            // ipi_addr: the header's destination address (ipi_spec_dst is the local address
            // the kernel would answer from, which for a datagram to 127.0.0.2 is 127.0.0.1).
            ControlMessageOwned::Ipv4PacketInfo(pi) => {
                self.dst = Some(IpAddr::from(u32::from_be(pi.ipi_addr.s_addr).to_be_bytes()));
            }
            ControlMessageOwned::Ipv6PacketInfo(pi) => {
                self.dst = Some(IpAddr::from(pi.ipi6_addr.s6_addr));
            }
            ControlMessageOwned::Ipv6TClass(tc) => self.tos = Some(tc as u8),
            // A send timestamp on the error queue: ENOMSG from the timestamping origin, with
            // the packet id in ee_data.
            ControlMessageOwned::Ipv4RecvErr(ee, _) | ControlMessageOwned::Ipv6RecvErr(ee, _)
                if ee.ee_errno == libc::ENOMSG as u32
                    && ee.ee_origin == libc::SO_EE_ORIGIN_TIMESTAMPING =>
            {
                self.tx_id = Some(ee.ee_data);
            }
            _ => {}
        }
    }
}

/// One `recvmsg`: length, sender, control messages, truncation.
struct RawReceive {
    len: usize,
    from: Option<SocketAddr>,
    cmsgs: Cmsgs,
    truncated: bool,
}

/// Control buffer size: three timespecs of SCM_TIMESTAMPING, a sock_extended_err with its
/// offender address, and the TOS byte fit with room to spare.
const CONTROL_BYTES: usize = 512;

fn recvmsg_raw(sock: &impl AsFd, buf: &mut [u8], flags: MsgFlags) -> io::Result<RawReceive> {
    let mut iov = [IoSliceMut::new(buf)];
    // A Vec, as nix's `cmsg_space!` makes it: the allocator aligns it for cmsghdr.
    let mut control = vec![0u8; CONTROL_BYTES];
    let msg = recvmsg::<SockaddrStorage>(
        sock.as_fd().as_raw_fd(),
        &mut iov,
        Some(&mut control),
        flags,
    )?;
    let from = msg.address.and_then(|a| {
        a.as_sockaddr_in()
            .map(|v4| SocketAddr::from(*v4))
            .or_else(|| a.as_sockaddr_in6().map(|v6| SocketAddr::from(*v6)))
    });
    let mut cmsgs = Cmsgs::default();
    if let Ok(it) = msg.cmsgs() {
        for c in it {
            cmsgs.add(c);
        }
    }
    Ok(RawReceive {
        len: msg.bytes,
        from,
        cmsgs,
        truncated: msg.flags.contains(MsgFlags::MSG_TRUNC),
    })
}

/// Receives one datagram with its kernel timestamp. Honors the socket's read timeout.
pub fn recv_timestamped(sock: &impl AsFd, buf: &mut [u8]) -> io::Result<Received> {
    let r = recvmsg_raw(sock, buf, MsgFlags::empty())?;
    Ok(Received {
        len: r.len,
        from: r.from,
        kernel_ns: r.cmsgs.kernel_ns,
        user_ns: realtime_ns(),
        truncated: r.truncated,
        tos: r.cmsgs.tos,
        dst: r.cmsgs.dst,
    })
}

/// Sends one datagram to `to`, from the local address `src` when given (IP_PKTINFO /
/// IPV6_PKTINFO): a wildcard-bound server answers from the address the request was sent to, as
/// a client that connected its socket to that address requires (the kernel would otherwise pick
/// the source by route: for a server with several addresses, the wrong one). A source the kernel
/// refuses (a broadcast or multicast destination) falls back to the kernel's own choice.
pub fn send_from(
    sock: &std::net::UdpSocket,
    buf: &[u8],
    to: SocketAddr,
    src: Option<IpAddr>,
) -> io::Result<usize> {
    let fd = sock.as_fd().as_raw_fd();
    let iov = [io::IoSlice::new(buf)];
    let dest = SockaddrStorage::from(to);
    let sent = match (src, to) {
        (Some(IpAddr::V4(a)), SocketAddr::V4(_)) if !a.is_multicast() && !a.is_broadcast() => {
            let pi = libc::in_pktinfo {
                ipi_ifindex: 0,
                ipi_spec_dst: libc::in_addr {
                    s_addr: u32::from(a).to_be(),
                },
                ipi_addr: libc::in_addr { s_addr: 0 },
            };
            nix::sys::socket::sendmsg(
                fd,
                &iov,
                &[ControlMessage::Ipv4PacketInfo(&pi)],
                MsgFlags::empty(),
                Some(&dest),
            )
        }
        (Some(IpAddr::V6(a)), SocketAddr::V6(_)) if !a.is_multicast() => {
            let pi = libc::in6_pktinfo {
                ipi6_addr: libc::in6_addr {
                    s6_addr: a.octets(),
                },
                ipi6_ifindex: 0,
            };
            nix::sys::socket::sendmsg(
                fd,
                &iov,
                &[ControlMessage::Ipv6PacketInfo(&pi)],
                MsgFlags::empty(),
                Some(&dest),
            )
        }
        _ => return sock.send_to(buf, to),
    };
    match sent {
        Ok(n) => Ok(n),
        Err(nix::errno::Errno::EINVAL | nix::errno::Errno::EADDRNOTAVAIL) => sock.send_to(buf, to),
        Err(e) => Err(e.into()),
    }
}

/// Drains the error queue without blocking: `(packet id, kernel send time ns)` for each sent
/// packet whose software TX timestamp is ready. Ids count sends on this socket from 0.
pub fn read_tx_timestamps(sock: &impl AsFd) -> Vec<(u32, u64)> {
    let mut out = Vec::new();
    let mut buf = [0u8; 256];
    for _ in 0..64 {
        match recvmsg_raw(
            sock,
            &mut buf,
            MsgFlags::MSG_ERRQUEUE | MsgFlags::MSG_DONTWAIT,
        ) {
            Ok(r) => {
                if let (Some(id), Some(ns)) = (r.cmsgs.tx_id, r.cmsgs.kernel_ns) {
                    out.push((id, ns));
                }
            }
            Err(_) => break,
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::sockopt::{enable_recv_tos, set_tos, tos};
    use super::*;
    use std::net::UdpSocket;

    #[test]
    fn udp_loopback_has_kernel_rx_and_tx_timestamps() {
        loopback_stamps(PREFER_NEW_OPTIONS);
    }

    /// The `_NEW` options (what 32-bit builds use) and their 64-bit cmsgs, on this kernel.
    #[test]
    fn new_options_give_the_same_stamps() {
        loopback_stamps(true);
        loopback_stamps(false);
    }

    /// A wildcard-bound server answers a client that connected to 127.0.0.2 from 127.0.0.2
    /// (with the kernel's own choice of source, 127.0.0.1, the connected client drops it).
    #[test]
    fn wildcard_server_answers_from_the_probed_address() {
        use super::super::sockopt::enable_recv_dst;
        let server = UdpSocket::bind("0.0.0.0:0").unwrap();
        server
            .set_read_timeout(Some(std::time::Duration::from_secs(2)))
            .unwrap();
        enable_recv_dst(&server, false).unwrap();
        let port = server.local_addr().unwrap().port();
        let client = UdpSocket::bind("127.0.0.1:0").unwrap();
        client.connect(("127.0.0.2", port)).unwrap();
        client
            .set_read_timeout(Some(std::time::Duration::from_secs(2)))
            .unwrap();
        client.send(b"probe").unwrap();
        let mut buf = [0u8; 16];
        let r = recv_timestamped(&server, &mut buf).unwrap();
        assert_eq!(r.dst, Some("127.0.0.2".parse().unwrap()));
        let from = r.from.unwrap();
        send_from(&server, b"reply", from, r.dst).unwrap();
        let n = client
            .recv(&mut buf)
            .expect("the reply from 127.0.0.2 reaches the client");
        assert_eq!(&buf[..n], b"reply");
        // IPv6 on the wildcard: the destination comes back too (::1, the only loopback).
        if let Ok(s6) = UdpSocket::bind("[::]:0") {
            enable_recv_dst(&s6, true).unwrap();
            s6.set_read_timeout(Some(std::time::Duration::from_secs(2)))
                .unwrap();
            let c6 = UdpSocket::bind("[::1]:0").unwrap();
            c6.connect(("::1", s6.local_addr().unwrap().port()))
                .unwrap();
            c6.set_read_timeout(Some(std::time::Duration::from_secs(2)))
                .unwrap();
            c6.send(b"probe").unwrap();
            let r = recv_timestamped(&s6, &mut buf).unwrap();
            assert_eq!(r.dst, Some("::1".parse().unwrap()));
            send_from(&s6, b"reply6", r.from.unwrap(), r.dst).unwrap();
            let n = c6.recv(&mut buf).unwrap();
            assert_eq!(&buf[..n], b"reply6");
        }
    }

    #[test]
    fn kernel_timespec_layout() {
        let mut d = Vec::new();
        d.extend_from_slice(&2_200_000_000i64.to_ne_bytes()); // after 2038
        d.extend_from_slice(&5i64.to_ne_bytes());
        assert_eq!(kernel_timespec_ns(&d), Some(2_200_000_000_000_000_005));
        assert_eq!(kernel_timespec_ns(&d[..12]), None);
        assert_eq!(kernel_timespec_ns(&[0u8; 48]), None);
    }

    fn loopback_stamps(prefer_new: bool) {
        let a = UdpSocket::bind("127.0.0.1:0").unwrap();
        let b = UdpSocket::bind("127.0.0.1:0").unwrap();
        b.set_read_timeout(Some(std::time::Duration::from_secs(2)))
            .unwrap();
        let mode_a = enable_timestamps_with(&a, prefer_new).unwrap();
        enable_timestamps_with(&b, prefer_new).unwrap();
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
}
