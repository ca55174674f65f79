//! UDP datagrams in batches (docs/throughput.md, "UDP at line rate"): the sender hands the
//! kernel up to 64 datagrams per call with UDP GSO (`UDP_SEGMENT`, Linux 4.18), or with
//! `sendmmsg` where the kernel or the route refuses GSO; the receiver takes coalesced datagrams
//! with UDP GRO (`UDP_GRO`, Linux 5.0) and several messages per call with `recvmmsg`. Every
//! datagram keeps its own bytes, so the caller's per-datagram accounting (sequence numbers,
//! loss, reordering) is unchanged.

use std::io;
use std::os::fd::AsRawFd;

const SOL_UDP: libc::c_int = 17;
const UDP_SEGMENT: libc::c_int = 103;
const UDP_GRO: libc::c_int = 104;
/// The kernel's cap on segments per GSO send (UDP_MAX_SEGMENTS).
pub const MAX_SEGMENTS: usize = 64;
/// The largest UDP payload of one send, GSO or not.
pub const MAX_UDP_PAYLOAD: usize = 65507;

fn setsockopt_int(fd: i32, level: i32, name: i32, v: libc::c_int) -> io::Result<()> {
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

/// How many datagrams of `len` bytes fit one GSO send.
pub fn gso_segments(len: usize) -> usize {
    (MAX_UDP_PAYLOAD / len.max(1)).clamp(1, MAX_SEGMENTS)
}

/// The sending side: a buffer of `segments` datagrams, each `len` bytes.
#[derive(Debug)]
pub struct UdpTx {
    len: usize,
    segments: usize,
    buf: Vec<u8>,
    gso: bool,
}

impl UdpTx {
    /// Fills every slot with `payload` (`len` bytes). `batch`: at most this many datagrams per
    /// call; `want_gso`: try UDP_SEGMENT first.
    pub fn new<S: AsRawFd>(sock: &S, payload: &[u8], batch: usize, want_gso: bool) -> Self {
        let len = payload.len().max(1);
        let gso_cap = gso_segments(len);
        let mut segments = batch.clamp(1, MAX_SEGMENTS);
        let gso = want_gso
            && segments > 1
            && setsockopt_int(sock.as_raw_fd(), SOL_UDP, UDP_SEGMENT, len as libc::c_int).is_ok();
        if gso {
            segments = segments.min(gso_cap);
        }
        let mut buf = Vec::with_capacity(len * segments);
        for _ in 0..segments {
            buf.extend_from_slice(payload);
        }
        UdpTx {
            len,
            segments,
            buf,
            gso,
        }
    }

    /// Datagrams one call can carry.
    pub fn capacity(&self) -> usize {
        self.segments
    }

    /// Whether sends go out as GSO super-datagrams.
    pub fn gso(&self) -> bool {
        self.gso
    }

    /// Slot `i` (a whole datagram) to write its header into.
    pub fn slot(&mut self, i: usize) -> &mut [u8] {
        let len = self.len;
        &mut self.buf[i * len..(i + 1) * len]
    }

    /// Sends slots `0..n`; returns how many datagrams the kernel took (UDP sends are all or
    /// nothing per datagram; sendmmsg may stop early).
    pub fn send<S: AsRawFd>(&mut self, sock: &S, n: usize) -> io::Result<usize> {
        let n = n.clamp(1, self.segments);
        let fd = sock.as_raw_fd();
        if n == 1 || self.gso {
            let bytes = n * self.len;
            // SAFETY: sending from a live slice of `bytes` bytes.
            let r = unsafe { libc::send(fd, self.buf.as_ptr().cast(), bytes, 0) };
            if r >= 0 {
                return Ok(n);
            }
            let e = io::Error::last_os_error();
            // EIO: the route's device cannot segment (no checksum offload); EINVAL: the size.
            if self.gso && n > 1 && matches!(e.raw_os_error(), Some(libc::EIO | libc::EINVAL)) {
                let _ = setsockopt_int(fd, SOL_UDP, UDP_SEGMENT, 0);
                self.gso = false;
                return self.send_mmsg(fd, n);
            }
            return Err(e);
        }
        self.send_mmsg(fd, n)
    }

    fn send_mmsg(&mut self, fd: i32, n: usize) -> io::Result<usize> {
        let mut iov: Vec<libc::iovec> = (0..n)
            .map(|i| libc::iovec {
                // SAFETY: within buf (n <= segments).
                iov_base: unsafe { self.buf.as_mut_ptr().add(i * self.len) }.cast(),
                iov_len: self.len,
            })
            .collect();
        let mut msgs: Vec<libc::mmsghdr> = iov
            .iter_mut()
            .map(|v| {
                // SAFETY: a zeroed mmsghdr is valid; the iovec pointer is set below.
                let mut m: libc::mmsghdr = unsafe { std::mem::zeroed() };
                m.msg_hdr.msg_iov = v;
                m.msg_hdr.msg_iovlen = 1;
                m
            })
            .collect();
        // SAFETY: msgs and the iovecs they point to live across the call.
        let r = unsafe { libc::sendmmsg(fd, msgs.as_mut_ptr(), n as libc::c_uint, 0) };
        if r < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(r as usize)
        }
    }
}

/// The receiving side: `slots` buffers per call, each datagram or GRO super-datagram walked in
/// steps of its segment size.
#[derive(Debug)]
pub struct UdpRx {
    slot_len: usize,
    slots: usize,
    buf: Vec<u8>,
    control: Vec<u64>,
    gro: bool,
}

/// Bytes of control space per message (one int cmsg, with room to spare).
const CONTROL_WORDS: usize = 8;

impl UdpRx {
    /// `len`: the datagram size; `want_gro`: try UDP_GRO; `budget`: bytes of buffer to use.
    pub fn new<S: AsRawFd>(sock: &S, len: usize, want_gro: bool, budget: usize) -> Self {
        let gro = want_gro && setsockopt_int(sock.as_raw_fd(), SOL_UDP, UDP_GRO, 1).is_ok();
        let slot_len = if gro { 65536 } else { len.clamp(1, 65536) };
        let slots = (budget / slot_len).clamp(1, MAX_SEGMENTS);
        UdpRx {
            slot_len,
            slots,
            buf: vec![0u8; slot_len * slots],
            control: vec![0u64; CONTROL_WORDS * slots],
            gro,
        }
    }

    pub fn gro(&self) -> bool {
        self.gro
    }

    /// Waits (up to the socket's SO_RCVTIMEO) for at least one datagram, takes what else is
    /// waiting, and calls `each` on every datagram; returns the number of datagrams.
    pub fn recv<S: AsRawFd>(&mut self, sock: &S, mut each: impl FnMut(&[u8])) -> io::Result<usize> {
        let slots = self.slots;
        let slot_len = self.slot_len;
        let base = self.buf.as_mut_ptr();
        let cbase = self.control.as_mut_ptr();
        let mut iov: Vec<libc::iovec> = (0..slots)
            .map(|i| libc::iovec {
                // SAFETY: within buf.
                iov_base: unsafe { base.add(i * slot_len) }.cast(),
                iov_len: slot_len,
            })
            .collect();
        let mut msgs: Vec<libc::mmsghdr> = iov
            .iter_mut()
            .enumerate()
            .map(|(i, v)| {
                // SAFETY: a zeroed mmsghdr is valid; pointers set below.
                let mut m: libc::mmsghdr = unsafe { std::mem::zeroed() };
                m.msg_hdr.msg_iov = v;
                m.msg_hdr.msg_iovlen = 1;
                // SAFETY: within control.
                m.msg_hdr.msg_control = unsafe { cbase.add(i * CONTROL_WORDS) }.cast();
                // `as _`: socklen_t on musl, size_t on glibc.
                m.msg_hdr.msg_controllen = (CONTROL_WORDS * 8) as _;
                m
            })
            .collect();
        // SAFETY: msgs, iovecs and buffers live across the call; MSG_WAITFORONE blocks only
        // for the first message.
        let r = unsafe {
            libc::recvmmsg(
                sock.as_raw_fd(),
                msgs.as_mut_ptr(),
                slots as libc::c_uint,
                // `as _`: musl's recvmmsg takes unsigned flags, glibc's signed.
                libc::MSG_WAITFORONE as _,
                std::ptr::null_mut(),
            )
        };
        if r < 0 {
            return Err(io::Error::last_os_error());
        }
        let mut count = 0;
        for (i, m) in msgs.iter().take(r as usize).enumerate() {
            let n = (m.msg_len as usize).min(slot_len);
            let seg = gro_segment_size(&m.msg_hdr).unwrap_or(n).max(1);
            let data = &self.buf[i * slot_len..i * slot_len + n];
            for d in data.chunks(seg) {
                each(d);
                count += 1;
            }
        }
        Ok(count)
    }
}

/// The UDP_GRO control message's segment size, if the kernel coalesced this message.
fn gro_segment_size(msg: &libc::msghdr) -> Option<usize> {
    // SAFETY: the CMSG macros bound-check against msg_controllen; payload read unaligned.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(msg);
        while !c.is_null() {
            let h = &*c;
            if h.cmsg_level == SOL_UDP && h.cmsg_type == UDP_GRO {
                let v: libc::c_int = std::ptr::read_unaligned(libc::CMSG_DATA(c).cast());
                return usize::try_from(v).ok().filter(|&s| s > 0);
            }
            c = libc::CMSG_NXTHDR(msg, c);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::UdpSocket;
    use std::time::Duration;

    fn pair() -> (UdpSocket, UdpSocket) {
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
        tx.connect(rx.local_addr().unwrap()).unwrap();
        rx.set_read_timeout(Some(Duration::from_millis(500)))
            .unwrap();
        (tx, rx)
    }

    /// Sends `rounds` batches of `batch` numbered datagrams; the receiver sees each once, in
    /// order, with its own bytes.
    fn roundtrip(gso: bool, gro: bool) {
        let (tx, rx) = pair();
        let len = 1400;
        let mut t = UdpTx::new(&tx, &vec![0xabu8; len], 40, gso);
        let mut r = UdpRx::new(&rx, len, gro, 128 << 10);
        let mut seq = 0u32;
        let mut seen = Vec::new();
        for _ in 0..20 {
            let k = t.capacity();
            for i in 0..k {
                t.slot(i)[..4].copy_from_slice(&(seq + i as u32).to_be_bytes());
            }
            let sent = t.send(&tx, k).unwrap();
            seq += sent as u32;
            while seen.len() < seq as usize {
                r.recv(&rx, |d| {
                    assert_eq!(d.len(), len);
                    assert!(d[4..].iter().all(|&b| b == 0xab));
                    seen.push(u32::from_be_bytes([d[0], d[1], d[2], d[3]]));
                })
                .unwrap();
            }
        }
        assert_eq!(seen, (0..seq).collect::<Vec<_>>());
        assert!(seq >= 20 * 40, "batches of 40 went out whole");
    }

    #[test]
    fn gso_and_gro_keep_every_datagram() {
        roundtrip(true, true);
    }

    #[test]
    fn mmsg_fallback_keeps_every_datagram() {
        roundtrip(false, false);
        roundtrip(true, false);
        roundtrip(false, true);
    }

    #[test]
    fn segment_counts() {
        assert_eq!(gso_segments(1400), 46);
        assert_eq!(gso_segments(32768), 1);
        assert_eq!(gso_segments(16), 64);
    }
}
