//! One AF_PACKET socket bound to an interface: receive frames with the kernel's receive
//! timestamp (SO_TIMESTAMPNS) and the packet type, send frames as they are.

use crate::lab::error::{LabError, Result};
use crate::net::sockopt::setsockopt_int;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

/// sll_pkttype of a frame addressed to this host's MAC.
pub const PACKET_HOST: u8 = 0;
const PACKET_IGNORE_OUTGOING: libc::c_int = 23;
const PACKET_AUXDATA: libc::c_int = 8;
const PACKET_STATISTICS: libc::c_int = 6;
const TP_STATUS_CSUMNOTREADY: u32 = 1 << 3;

/// A frame's metadata from `recv`.
#[derive(Debug, Clone, Copy)]
pub struct Received {
    pub len: usize,
    /// Frame was longer than the buffer (cut).
    pub truncated: bool,
    /// Kernel receive time, CLOCK_REALTIME ns (0 if the kernel gave none).
    pub rx_realtime_ns: u64,
    pub pkttype: u8,
    /// The sender left the TCP/UDP checksum to "hardware" (a local veth sender with
    /// tx-checksumming): the forwarder must complete it, as the kernel would on egress.
    pub csum_not_ready: bool,
}

/// A raw packet socket on one interface.
#[derive(Debug)]
pub struct PacketSocket {
    fd: OwnedFd,
    ifindex: i32,
}

fn os_err(what: &str, dev: &str) -> LabError {
    let e = std::io::Error::last_os_error();
    LabError::Sys(format!(
        "{what} on {dev}: {e} (the forwarder needs root: CAP_NET_RAW)"
    ))
}

/// Interface index of `dev` in the calling thread's namespace.
pub fn ifindex(dev: &str) -> Result<i32> {
    match nix::net::if_::if_nametoindex(dev) {
        Ok(i) if i > 0 => Ok(i as i32),
        _ => Err(LabError::State(format!(
            "no interface {dev} in this namespace (is the lab up?)"
        ))),
    }
}

impl PacketSocket {
    /// Opens a non-blocking packet socket on `dev`. `receive`: all protocols with timestamps
    /// and our own transmissions ignored; otherwise a send-only socket (protocol 0 receives
    /// nothing).
    pub fn open(dev: &str, receive: bool) -> Result<Self> {
        let ifindex = ifindex(dev)?;
        let proto = if receive {
            (libc::ETH_P_ALL as u16).to_be()
        } else {
            0
        };
        // SAFETY: plain socket(2).
        let raw = unsafe {
            libc::socket(
                libc::AF_PACKET,
                libc::SOCK_RAW | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
                libc::c_int::from(proto),
            )
        };
        if raw < 0 {
            return Err(os_err("socket(AF_PACKET)", dev));
        }
        // SAFETY: raw is a new, owned descriptor.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        // SAFETY: zeroed sockaddr_ll is valid; fields set below.
        let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        sll.sll_family = libc::AF_PACKET as u16;
        sll.sll_protocol = proto;
        sll.sll_ifindex = ifindex;
        // SAFETY: binding with a sockaddr_ll of its own size.
        let r = unsafe {
            libc::bind(
                fd.as_raw_fd(),
                (&sll as *const libc::sockaddr_ll).cast(),
                std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
            )
        };
        if r < 0 {
            return Err(os_err("bind(AF_PACKET)", dev));
        }
        if receive {
            setsockopt_int(fd.as_raw_fd(), libc::SOL_SOCKET, libc::SO_TIMESTAMPNS, 1)
                .map_err(|e| LabError::Sys(format!("SO_TIMESTAMPNS on {dev}: {e}")))?;
            setsockopt_int(fd.as_raw_fd(), libc::SOL_PACKET, PACKET_AUXDATA, 1)
                .map_err(|e| LabError::Sys(format!("PACKET_AUXDATA on {dev}: {e}")))?;
            // Since Linux 4.20; older kernels: the pkttype check drops our own frames anyway.
            let _ = setsockopt_int(fd.as_raw_fd(), libc::SOL_PACKET, PACKET_IGNORE_OUTGOING, 1);
            // About a NIC ring's worth (the kernel doubles it: ~450 full frames of truesize),
            // so a stalled forwarder drops like a router's ring instead of queueing seconds.
            let _ = setsockopt_int(fd.as_raw_fd(), libc::SOL_SOCKET, libc::SO_RCVBUF, 512 << 10);
        } else {
            let _ = setsockopt_int(fd.as_raw_fd(), libc::SOL_SOCKET, libc::SO_SNDBUF, 1 << 20);
        }
        Ok(Self { fd, ifindex })
    }

    pub fn raw_fd(&self) -> i32 {
        self.fd.as_raw_fd()
    }

    pub fn ifindex(&self) -> i32 {
        self.ifindex
    }

    /// One frame into `buf`, or `None` when nothing is waiting (non-blocking).
    pub fn recv(&self, buf: &mut [u8]) -> Result<Option<Received>> {
        let mut iov = libc::iovec {
            iov_base: buf.as_mut_ptr().cast(),
            iov_len: buf.len(),
        };
        // SAFETY: zeroed plain C structs.
        let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        let mut control = [0u64; 16];
        // SAFETY: zeroed msghdr, pointers set to live buffers below.
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_name = (&mut sll as *mut libc::sockaddr_ll).cast();
        msg.msg_namelen = std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t;
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = std::mem::size_of_val(&control) as _;
        // SAFETY: msg points at buffers that outlive the call; MSG_TRUNC reports the real size.
        let n = unsafe { libc::recvmsg(self.fd.as_raw_fd(), &mut msg, libc::MSG_TRUNC) };
        if n < 0 {
            let e = std::io::Error::last_os_error();
            return match e.kind() {
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::Interrupted => Ok(None),
                _ => Err(LabError::Io {
                    what: "recvmsg on a packet socket".into(),
                    source: e,
                }),
            };
        }
        let real = n as usize;
        let mut ts = 0u64;
        let mut csum_not_ready = false;
        // SAFETY: the libc CMSG macros bound-check against msg_controllen; payload read
        // unaligned.
        unsafe {
            let mut c = libc::CMSG_FIRSTHDR(&msg);
            while !c.is_null() {
                let h = &*c;
                if h.cmsg_level == libc::SOL_SOCKET && h.cmsg_type == libc::SCM_TIMESTAMPNS {
                    let t: libc::timespec = std::ptr::read_unaligned(libc::CMSG_DATA(c).cast());
                    ts = (t.tv_sec as u64)
                        .saturating_mul(1_000_000_000)
                        .saturating_add(t.tv_nsec as u64);
                } else if h.cmsg_level == libc::SOL_PACKET && h.cmsg_type == PACKET_AUXDATA {
                    // struct tpacket_auxdata starts with u32 tp_status.
                    let status: u32 = std::ptr::read_unaligned(libc::CMSG_DATA(c).cast());
                    csum_not_ready = status & TP_STATUS_CSUMNOTREADY != 0;
                }
                c = libc::CMSG_NXTHDR(&msg, c);
            }
        }
        Ok(Some(Received {
            len: real.min(buf.len()),
            truncated: real > buf.len(),
            rx_realtime_ns: ts,
            pkttype: sll.sll_pkttype,
            csum_not_ready,
        }))
    }

    /// Frames the kernel dropped because this socket's receive buffer was full, since the
    /// last call (PACKET_STATISTICS resets on read).
    pub fn take_drops(&self) -> u64 {
        let mut st = [0u32; 2];
        let mut len = std::mem::size_of_val(&st) as libc::socklen_t;
        // SAFETY: struct tpacket_stats is two u32 (tp_packets, tp_drops); len says its size.
        let r = unsafe {
            libc::getsockopt(
                self.fd.as_raw_fd(),
                libc::SOL_PACKET,
                PACKET_STATISTICS,
                st.as_mut_ptr().cast(),
                &mut len,
            )
        };
        if r < 0 { 0 } else { u64::from(st[1]) }
    }

    /// Sends one complete frame; false if the kernel refused it right now (full, down).
    pub fn send(&self, frame: &[u8]) -> bool {
        // SAFETY: sending from a live slice.
        let n = unsafe {
            libc::send(
                self.fd.as_raw_fd(),
                frame.as_ptr().cast(),
                frame.len(),
                libc::MSG_DONTWAIT,
            )
        };
        n == frame.len() as isize
    }
}

impl AsFd for PacketSocket {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

/// Waits until `fd` is readable or `timeout_ns` passes (ppoll: ns resolution, no ms rounding).
/// An interrupted or failed wait just returns: the caller polls again.
pub fn wait_readable(fd: BorrowedFd<'_>, timeout_ns: u64) {
    wait_readable_any(&[fd], timeout_ns);
}

/// Waits until any of `fds` is readable or `timeout_ns` passes (ppoll); with no `fds`, just
/// sleeps. An interrupted or failed wait just returns: the caller polls again.
pub fn wait_readable_any(fds: &[BorrowedFd<'_>], timeout_ns: u64) {
    use nix::poll::{PollFd, PollFlags, ppoll};
    let mut p: Vec<PollFd> = fds
        .iter()
        .map(|fd| PollFd::new(*fd, PollFlags::POLLIN))
        .collect();
    let ts = nix::sys::time::TimeSpec::from_duration(std::time::Duration::from_nanos(timeout_ns));
    let _ = ppoll(&mut p, Some(ts), None);
}

/// Nanoseconds of `clock` now (0 if the clock cannot be read, which Linux never refuses for
/// the clocks used here).
pub fn clock_ns(clock: nix::time::ClockId) -> u64 {
    nix::time::clock_gettime(clock).map_or(0, |t| {
        (t.tv_sec() as u64)
            .saturating_mul(1_000_000_000)
            .saturating_add(t.tv_nsec() as u64)
    })
}

/// CLOCK_MONOTONIC and CLOCK_REALTIME now, ns.
pub fn clocks_ns() -> (u64, u64) {
    use nix::time::ClockId;
    (
        clock_ns(ClockId::CLOCK_MONOTONIC),
        clock_ns(ClockId::CLOCK_REALTIME),
    )
}

const PACKET_VERSION: libc::c_int = 10;
const PACKET_RX_RING: libc::c_int = 5;
const TPACKET_V2: libc::c_int = 1;
const TP_STATUS_KERNEL: u32 = 0;
const TP_STATUS_USER: u32 = 1;
/// Offset of the sockaddr_ll after a tpacket2_hdr (TPACKET_ALIGN(32)), and of its pkttype.
const TPACKET2_HDRLEN: usize = 32;
const SLL_PKTTYPE: usize = 10;

/// Frames of the receive ring: about a NIC ring's worth, as the socket buffer was before.
pub const RING_FRAMES: usize = 512;
const RING_FRAME_SIZE: usize = 2048;
const RING_BLOCK_SIZE: usize = 1 << 16;

/// A PACKET_RX_RING (TPACKET_V2) on a receive socket: the kernel writes each frame, its
/// receive timestamp and status into shared memory, so reading a frame takes no system call
/// (packet_mmap.rst). V2 rather than V3: a V3 block reaches user space only when full or when
/// its retire timer fires, in jiffies (4 ms at HZ=250), which would delay packets at low rates;
/// V2 hands each frame over as soon as it is written.
#[derive(Debug)]
pub struct RxRing {
    base: *mut u8,
    size: usize,
    frames: usize,
    next: usize,
}

// SAFETY: the mapping belongs to the ring alone and is only touched through &mut self.
unsafe impl Send for RxRing {}

impl RxRing {
    /// Maps a receive ring on `sock` (a receive socket from [`PacketSocket::open`]).
    pub fn new(sock: &PacketSocket) -> std::io::Result<Self> {
        let fd = sock.raw_fd();
        setsockopt_int(fd, libc::SOL_PACKET, PACKET_VERSION, TPACKET_V2)?;
        let frames_per_block = RING_BLOCK_SIZE / RING_FRAME_SIZE;
        let blocks = RING_FRAMES / frames_per_block;
        // struct tpacket_req: block size, block count, frame size, frame count (all u32).
        let req: [u32; 4] = [
            RING_BLOCK_SIZE as u32,
            blocks as u32,
            RING_FRAME_SIZE as u32,
            (blocks * frames_per_block) as u32,
        ];
        // SAFETY: tpacket_req passed by pointer with its size.
        let r = unsafe {
            libc::setsockopt(
                fd,
                libc::SOL_PACKET,
                PACKET_RX_RING,
                req.as_ptr().cast(),
                std::mem::size_of_val(&req) as libc::socklen_t,
            )
        };
        if r < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let size = RING_BLOCK_SIZE * blocks;
        // SAFETY: mapping the ring the kernel just allocated for this socket.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                size,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        Ok(RxRing {
            base: base.cast(),
            size,
            frames: blocks * frames_per_block,
            next: 0,
        })
    }

    fn status(&self, frame: *mut u8) -> &std::sync::atomic::AtomicU32 {
        // SAFETY: tp_status is the first, 4-byte aligned u32 of a frame inside the mapping,
        // shared with the kernel: accessed atomically only.
        unsafe { &*frame.cast::<std::sync::atomic::AtomicU32>() }
    }

    /// Hands up to `max` waiting frames, in arrival order, to `each` and gives their slots back
    /// to the kernel; returns how many were handed.
    pub fn drain(&mut self, max: usize, mut each: impl FnMut(Received, &[u8])) -> usize {
        use std::sync::atomic::Ordering;
        let mut n = 0;
        while n < max {
            // SAFETY: next < frames, so the frame lies inside the mapping.
            let frame = unsafe { self.base.add(self.next * RING_FRAME_SIZE) };
            let status = self.status(frame).load(Ordering::Acquire);
            if status & TP_STATUS_USER == 0 {
                break;
            }
            // SAFETY: the kernel hands the frame over with TP_STATUS_USER (Acquire above);
            // the header fields and the data it points at lie inside this frame.
            let (got, data) = unsafe {
                let word = |off: usize| std::ptr::read_unaligned(frame.add(off).cast::<u32>());
                let half = |off: usize| std::ptr::read_unaligned(frame.add(off).cast::<u16>());
                let len = word(4) as usize;
                let snap = word(8) as usize;
                let mac = usize::from(half(12));
                let (sec, nsec) = (u64::from(word(16)), u64::from(word(20)));
                let pkttype = *frame.add(TPACKET2_HDRLEN + SLL_PKTTYPE);
                let snap = snap.min(RING_FRAME_SIZE.saturating_sub(mac));
                (
                    Received {
                        len: snap,
                        truncated: len > snap,
                        rx_realtime_ns: sec * 1_000_000_000 + nsec,
                        pkttype,
                        csum_not_ready: status & TP_STATUS_CSUMNOTREADY != 0,
                    },
                    std::slice::from_raw_parts(frame.add(mac), snap),
                )
            };
            each(got, data);
            self.status(frame)
                .store(TP_STATUS_KERNEL, Ordering::Release);
            self.next = (self.next + 1) % self.frames;
            n += 1;
        }
        n
    }
}

impl Drop for RxRing {
    fn drop(&mut self) {
        // SAFETY: unmapping exactly the mapping made in new().
        unsafe { libc::munmap(self.base.cast(), self.size) };
    }
}

/// Frames per sendmmsg call.
pub const TX_BATCH: usize = 64;

impl PacketSocket {
    /// Sends up to [`TX_BATCH`] complete frames with one sendmmsg; returns how many the
    /// kernel took (the rest were refused right now: full, down).
    pub fn send_batch(&self, frames: &[&[u8]]) -> usize {
        let n = frames.len().min(TX_BATCH);
        if n == 0 {
            return 0;
        }
        let mut iov: [libc::iovec; TX_BATCH] = [libc::iovec {
            iov_base: std::ptr::null_mut(),
            iov_len: 0,
        }; TX_BATCH];
        // SAFETY: a zeroed mmsghdr is valid; pointers are set below.
        let mut msgs: [libc::mmsghdr; TX_BATCH] = unsafe { std::mem::zeroed() };
        for i in 0..n {
            iov[i].iov_base = frames[i].as_ptr() as *mut libc::c_void;
            iov[i].iov_len = frames[i].len();
            msgs[i].msg_hdr.msg_iov = &mut iov[i];
            msgs[i].msg_hdr.msg_iovlen = 1;
        }
        // SAFETY: msgs, iov and the frames they point at live across the call; the kernel only
        // reads the frames.
        let r = unsafe {
            libc::sendmmsg(
                self.fd.as_raw_fd(),
                msgs.as_mut_ptr(),
                n as libc::c_uint,
                // `as _`: musl's sendmmsg takes unsigned flags, glibc's signed.
                libc::MSG_DONTWAIT as _,
            )
        };
        if r < 0 { 0 } else { r as usize }
    }
}
