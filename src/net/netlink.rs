//! The one netlink base under every netlink user of the tree: a socket of one protocol
//! (rtnetlink, nfnetlink, generic netlink) in the calling thread's network namespace, message
//! building ([`Msg`]), the walk over a datagram's messages and over a message's attributes
//! ([`attrs`]), acknowledged requests, bounded dumps (`NLM_F_DUMP`), and generic netlink's
//! family lookup (`CTRL_CMD_GETFAMILY`). Above it: the monitor's qdisc dump and nl80211 reader
//! (`monitor/netlink.rs`, `monitor/nl80211.rs`) and the VM router's configuration
//! (`lab/vm/nlconf.rs`, `lab/vm/wg.rs`). Layouts are the kernel's uapi (`linux/netlink.h`,
//! `linux/genetlink.h`); hand-written rather than netlink-packet-* for size (docs/architecture.md).

use nix::errno::Errno;
use nix::sys::socket::{
    self, AddressFamily, MsgFlags, NetlinkAddr, SockFlag, SockProtocol, SockType, sockopt,
};
use nix::sys::time::TimeVal;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::time::{Duration, Instant};

pub const NLMSG_HDRLEN: usize = 16;
pub const NLMSG_ERROR: u16 = 2;
pub const NLMSG_DONE: u16 = 3;
pub const NLM_F_REQUEST: u16 = 1;
pub const NLM_F_ACK: u16 = 4;
/// `NLM_F_ROOT | NLM_F_MATCH`.
pub const NLM_F_DUMP: u16 = 0x300;
pub const NLM_F_REPLACE: u16 = 0x100;
pub const NLM_F_EXCL: u16 = 0x200;
pub const NLM_F_CREATE: u16 = 0x400;
pub const NLA_F_NESTED: u16 = 0x8000;
/// The attribute type without the NESTED and NET_BYTEORDER flags.
pub const NLA_TYPE_MASK: u16 = 0x3FFF;
/// At most this many attributes are walked at one level (a wiphy's frequency list is the
/// longest the tree reads: a few dozen).
pub const MAX_ATTRS: usize = 512;

/// Generic netlink's controller and its GETFAMILY command (`linux/genetlink.h`).
pub const GENL_ID_CTRL: u16 = 0x10;
const CTRL_CMD_GETFAMILY: u8 = 3;
const CTRL_ATTR_FAMILY_ID: u16 = 1;
const CTRL_ATTR_FAMILY_NAME: u16 = 2;
/// `struct genlmsghdr`: cmd, version, reserved.
pub const GENL_HDRLEN: usize = 4;

/// A native-endian integer at the start of an attribute's payload.
pub fn u8_of(p: &[u8]) -> Option<u8> {
    p.first().copied()
}
pub fn u16_of(p: &[u8]) -> Option<u16> {
    Some(u16::from_ne_bytes(p.get(..2)?.try_into().ok()?))
}
pub fn u32_of(p: &[u8]) -> Option<u32> {
    Some(u32::from_ne_bytes(p.get(..4)?.try_into().ok()?))
}
pub fn u64_of(p: &[u8]) -> Option<u64> {
    Some(u64::from_ne_bytes(p.get(..8)?.try_into().ok()?))
}
/// An unsigned attribute of whatever width the kernel sent (1, 2, 4 or 8 bytes: newer
/// kernels send `NLA_UINT` counters as 4 bytes until they need 8).
pub fn uint_of(p: &[u8]) -> Option<u64> {
    match p.len() {
        1 => u8_of(p).map(u64::from),
        2 | 3 => u16_of(p).map(u64::from),
        4..=7 => u32_of(p).map(u64::from),
        _ => u64_of(p),
    }
}
/// A string attribute up to its NUL (lossy UTF-8).
pub fn str_of(p: &[u8]) -> String {
    let end = p.iter().position(|&c| c == 0).unwrap_or(p.len());
    String::from_utf8_lossy(&p[..end]).into_owned()
}

/// Netlink attributes (`struct nlattr {u16 len; u16 type}` + payload, 4-byte aligned), in
/// host byte order, types without their flags. Stops at the first malformed one (a length
/// shorter than the header or past the end); at most [`MAX_ATTRS`].
pub fn attrs(mut b: &[u8]) -> impl Iterator<Item = (u16, &[u8])> {
    let mut n = 0;
    std::iter::from_fn(move || {
        n += 1;
        if n > MAX_ATTRS {
            return None;
        }
        let len = u16_of(b)? as usize;
        let ty = u16_of(b.get(2..)?)? & NLA_TYPE_MASK;
        if len < 4 || len > b.len() {
            return None;
        }
        let payload = &b[4..len];
        b = b.get(len.next_multiple_of(4)..).unwrap_or(&[]);
        Some((ty, payload))
    })
}

/// One netlink message of a datagram: its header's fields and the bytes after the header.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Message<'a> {
    pub ty: u16,
    pub flags: u16,
    pub seq: u32,
    pub payload: &'a [u8],
}

impl Message<'_> {
    /// The errno of an `NLMSG_ERROR` (0 = an ACK), None for other types.
    pub fn error_code(&self) -> Option<i32> {
        (self.ty == NLMSG_ERROR).then(|| {
            self.payload
                .get(..4)
                .map_or(0, |e| u32_of(e).unwrap_or(0) as i32)
        })
    }
}

/// The messages of one datagram, in order. A message whose length is shorter than its header
/// or runs past the datagram ends the walk with an error naming both lengths.
pub fn messages<'a>(mut b: &'a [u8], what: &str) -> io::Result<Vec<Message<'a>>> {
    let mut out = Vec::new();
    while b.len() >= NLMSG_HDRLEN {
        let len = u32_of(b).unwrap_or(0) as usize;
        if len < NLMSG_HDRLEN || len > b.len() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{what}: message length {len} in a datagram of {}", b.len()),
            ));
        }
        out.push(Message {
            ty: u16_of(&b[4..]).unwrap_or(0),
            flags: u16_of(&b[6..]).unwrap_or(0),
            seq: u32_of(&b[8..]).unwrap_or(0),
            payload: &b[NLMSG_HDRLEN..len],
        });
        b = b.get(len.next_multiple_of(4)..).unwrap_or(&[]);
    }
    Ok(out)
}

/// One netlink message under construction: header, fixed part, attributes (nests tracked).
pub struct Msg {
    buf: Vec<u8>,
    nests: Vec<usize>,
}

impl Msg {
    pub fn new(ty: u16, flags: u16, fixed: &[u8]) -> Self {
        let mut buf = vec![0u8; NLMSG_HDRLEN];
        buf[4..6].copy_from_slice(&ty.to_ne_bytes());
        buf[6..8].copy_from_slice(&flags.to_ne_bytes());
        buf.extend_from_slice(fixed);
        pad(&mut buf);
        Self {
            buf,
            nests: Vec::new(),
        }
    }

    /// A generic netlink request: family `family`, command `cmd`.
    pub fn genl(family: u16, flags: u16, cmd: u8, version: u8) -> Self {
        Self::new(family, flags, &[cmd, version, 0, 0])
    }

    /// An attribute with raw bytes.
    pub fn attr(&mut self, ty: u16, data: &[u8]) -> &mut Self {
        let len = (4 + data.len()) as u16;
        self.buf.extend_from_slice(&len.to_ne_bytes());
        self.buf.extend_from_slice(&ty.to_ne_bytes());
        self.buf.extend_from_slice(data);
        pad(&mut self.buf);
        self
    }

    /// A flag attribute (no payload).
    pub fn flag(&mut self, ty: u16) -> &mut Self {
        self.attr(ty, &[])
    }

    pub fn str(&mut self, ty: u16, s: &str) -> &mut Self {
        let mut v = s.as_bytes().to_vec();
        v.push(0);
        self.attr(ty, &v)
    }

    pub fn u32_ne(&mut self, ty: u16, v: u32) -> &mut Self {
        self.attr(ty, &v.to_ne_bytes())
    }

    pub fn u32_be(&mut self, ty: u16, v: u32) -> &mut Self {
        self.attr(ty, &v.to_be_bytes())
    }

    pub fn u64_ne(&mut self, ty: u16, v: u64) -> &mut Self {
        self.attr(ty, &v.to_ne_bytes())
    }

    /// Opens a nested attribute; close it with [`Msg::end`].
    pub fn nest(&mut self, ty: u16) -> &mut Self {
        self.nests.push(self.buf.len());
        self.buf.extend_from_slice(&[0, 0]);
        self.buf
            .extend_from_slice(&(ty | NLA_F_NESTED).to_ne_bytes());
        self
    }

    pub fn end(&mut self) -> &mut Self {
        if let Some(at) = self.nests.pop() {
            let len = (self.buf.len() - at) as u16;
            self.buf[at..at + 2].copy_from_slice(&len.to_ne_bytes());
        }
        self
    }

    /// The finished bytes with length and sequence number.
    pub fn finish(mut self, seq: u32) -> Vec<u8> {
        while self.nests.pop().is_some() {}
        let len = self.buf.len() as u32;
        self.buf[0..4].copy_from_slice(&len.to_ne_bytes());
        self.buf[8..12].copy_from_slice(&seq.to_ne_bytes());
        self.buf
    }
}

fn pad(v: &mut Vec<u8>) {
    while v.len() % 4 != 0 {
        v.push(0);
    }
}

/// `CTRL_CMD_GETFAMILY name`: the request whose answer carries the family's id.
pub fn getfamily_msg(name: &str) -> Msg {
    let mut m = Msg::genl(
        GENL_ID_CTRL,
        NLM_F_REQUEST | NLM_F_ACK,
        CTRL_CMD_GETFAMILY,
        1,
    );
    m.str(CTRL_ATTR_FAMILY_NAME, name);
    m
}

/// The family id in a controller's answer (a whole netlink message), if it is one.
pub fn family_id_of(reply: &[u8]) -> Option<u16> {
    if u16_of(reply.get(4..)?)? != GENL_ID_CTRL {
        return None;
    }
    // nlmsghdr (16) + genlmsghdr (4), then attributes; a bad length ends the walk.
    attrs(reply.get(NLMSG_HDRLEN + GENL_HDRLEN..)?)
        .find_map(|(ty, p)| (ty == CTRL_ATTR_FAMILY_ID).then(|| u16_of(p)).flatten())
}

/// One datagram of a dump: hands each answer of sequence `seq` to `each`; true at its end
/// (`NLMSG_DONE`, or an ACK); the kernel's error message as an error naming `step`.
pub fn dump_datagram(
    datagram: &[u8],
    seq: u32,
    what: &str,
    step: &str,
    each: &mut impl FnMut(u16, &[u8]),
) -> io::Result<bool> {
    for msg in messages(datagram, what)? {
        if msg.seq != seq {
            continue;
        }
        match (msg.ty, msg.error_code()) {
            (NLMSG_DONE, _) | (_, Some(0)) => return Ok(true),
            (_, Some(code)) => {
                let e = io::Error::from_raw_os_error(-code);
                return Err(io::Error::new(
                    e.kind(),
                    format!("{what} {step} refused: {e}"),
                ));
            }
            _ => each(msg.ty, msg.payload),
        }
    }
    Ok(false)
}

/// A dump must end within this time, whatever the socket's timeout.
pub const DUMP_DEADLINE: Duration = Duration::from_secs(2);
/// At most this many datagrams per dump.
const MAX_DATAGRAMS: usize = 4096;

/// A netlink socket of one protocol in the calling thread's network namespace, with its
/// receive buffer.
pub struct Netlink {
    fd: OwnedFd,
    seq: u32,
    what: &'static str,
    buf: Vec<u8>,
}

fn err(what: &str, step: &str, e: Errno) -> io::Error {
    let e = io::Error::from(e);
    io::Error::new(e.kind(), format!("{what} {step}: {e}"))
}

impl Netlink {
    pub fn route() -> io::Result<Self> {
        Self::open(
            SockProtocol::NetlinkRoute,
            "rtnetlink",
            Duration::from_secs(2),
        )
    }

    pub fn netfilter() -> io::Result<Self> {
        Self::open(
            SockProtocol::NetlinkNetFilter,
            "nfnetlink",
            Duration::from_secs(2),
        )
    }

    /// Generic netlink (nl80211, WireGuard's configuration).
    pub fn generic() -> io::Result<Self> {
        Self::open(
            SockProtocol::NetlinkGeneric,
            "generic netlink",
            Duration::from_secs(2),
        )
    }

    /// A socket with receive timeout `timeout`, bound to a port the kernel picks.
    pub fn open(proto: SockProtocol, what: &'static str, timeout: Duration) -> io::Result<Self> {
        let fd = socket::socket(
            AddressFamily::Netlink,
            SockType::Raw,
            SockFlag::SOCK_CLOEXEC,
            proto,
        )
        .map_err(|e| err(what, "socket", e))?;
        let tv = TimeVal::new(timeout.as_secs() as _, timeout.subsec_micros() as _);
        socket::setsockopt(&fd, sockopt::ReceiveTimeout, &tv)
            .map_err(|e| err(what, "SO_RCVTIMEO", e))?;
        socket::bind(fd.as_raw_fd(), &NetlinkAddr::new(0, 0)).map_err(|e| err(what, "bind", e))?;
        Ok(Self {
            fd,
            seq: 0,
            what,
            buf: vec![0; 64 * 1024],
        })
    }

    fn send(&self, bytes: &[u8]) -> io::Result<()> {
        // pid 0 addresses the kernel.
        socket::sendto(
            self.fd.as_raw_fd(),
            bytes,
            &NetlinkAddr::new(0, 0),
            MsgFlags::empty(),
        )
        .map(|_| ())
        .map_err(|e| err(self.what, "sendto", e))
    }

    /// One datagram into the buffer; its length. A datagram larger than the buffer is an
    /// error, never a silently cut message.
    fn recv(&mut self, step: &str) -> io::Result<usize> {
        loop {
            match socket::recv(self.fd.as_raw_fd(), &mut self.buf, MsgFlags::MSG_TRUNC) {
                Ok(n) if n > self.buf.len() => {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidData,
                        format!(
                            "{} {step}: a {n}-byte answer does not fit the {}-byte buffer",
                            self.what,
                            self.buf.len()
                        ),
                    ));
                }
                Ok(n) => return Ok(n),
                Err(Errno::EINTR) => continue,
                Err(e) => return Err(err(self.what, &format!("{step}: no answer"), e)),
            }
        }
    }

    /// Sends the messages as one datagram and waits for the ACK of each one that asked for it
    /// (`need_ack`). The first error the kernel returns is the result.
    pub fn transact(&mut self, msgs: Vec<Msg>, need_ack: &[bool], step: &str) -> io::Result<()> {
        self.transact_replies(msgs, need_ack, step, &mut Vec::new())
    }

    /// As `transact`, keeping every message that is not an ACK or error (whole, header
    /// included) in `replies`: the answers of a GET.
    fn transact_replies(
        &mut self,
        msgs: Vec<Msg>,
        need_ack: &[bool],
        step: &str,
        replies: &mut Vec<Vec<u8>>,
    ) -> io::Result<()> {
        let mut out = Vec::new();
        let mut waiting = Vec::new();
        for (m, ack) in msgs.into_iter().zip(need_ack) {
            self.seq = self.seq.wrapping_add(1);
            if *ack {
                waiting.push(self.seq);
            }
            out.extend(m.finish(self.seq));
        }
        self.send(&out)?;
        for _ in 0..64 {
            if waiting.is_empty() {
                return Ok(());
            }
            let n = self.recv(step)?;
            let mut b = self.buf.get(..n).unwrap_or(&[]);
            while b.len() >= NLMSG_HDRLEN {
                let len = u32_of(b).unwrap_or(0) as usize;
                if len < NLMSG_HDRLEN || len > b.len() {
                    break;
                }
                let m = Message {
                    ty: u16_of(&b[4..]).unwrap_or(0),
                    flags: 0,
                    seq: u32_of(&b[8..]).unwrap_or(0),
                    payload: &b[NLMSG_HDRLEN..len],
                };
                match m.error_code() {
                    Some(0) => waiting.retain(|&s| s != m.seq),
                    Some(code) => {
                        let e = io::Error::from_raw_os_error(-code);
                        return Err(io::Error::new(
                            e.kind(),
                            format!("{} {step}: the kernel refused: {e}", self.what),
                        ));
                    }
                    None if replies.len() < 64 => replies.push(b[..len].to_vec()),
                    None => {}
                }
                b = b.get(len.next_multiple_of(4)..).unwrap_or(&[]);
            }
        }
        Err(io::Error::new(
            io::ErrorKind::TimedOut,
            format!("{} {step}: no acknowledgement", self.what),
        ))
    }

    /// One request, acknowledged.
    pub fn request(&mut self, m: Msg, step: &str) -> io::Result<()> {
        self.transact(vec![m], &[true], step)
    }

    /// One request, acknowledged, and the kernel's answers before the ACK.
    pub fn query(&mut self, m: Msg, step: &str) -> io::Result<Vec<Vec<u8>>> {
        let mut replies = Vec::new();
        self.transact_replies(vec![m], &[true], step, &mut replies)?;
        Ok(replies)
    }

    /// A dump: sends `m` (its flags should include `NLM_F_REQUEST | NLM_F_DUMP`) and hands
    /// each answer (type, payload after the netlink header) to `each`, until `NLMSG_DONE`.
    /// Bounded by [`DUMP_DEADLINE`] and a datagram count; an error message from the kernel is
    /// the result, named with `step`.
    pub fn dump(&mut self, m: Msg, step: &str, mut each: impl FnMut(u16, &[u8])) -> io::Result<()> {
        self.seq = self.seq.wrapping_add(1);
        let seq = self.seq;
        self.send(&m.finish(seq))?;
        let deadline = Instant::now() + DUMP_DEADLINE;
        for _ in 0..MAX_DATAGRAMS {
            if Instant::now() > deadline {
                break;
            }
            let n = self.recv(step)?;
            let datagram = self.buf.get(..n).unwrap_or(&[]);
            if dump_datagram(datagram, seq, self.what, step, &mut each)? {
                return Ok(());
            }
        }
        Err(io::Error::new(
            io::ErrorKind::TimedOut,
            format!(
                "{} {step} did not end (no NLMSG_DONE within {} s)",
                self.what,
                DUMP_DEADLINE.as_secs()
            ),
        ))
    }

    /// The id of generic netlink family `name` (`CTRL_CMD_GETFAMILY`); NotFound when the
    /// kernel has no such family (its module is not loaded, or it is not built).
    pub fn resolve_family(&mut self, name: &str) -> io::Result<u16> {
        let replies = match self.query(getfamily_msg(name), &format!("resolve the {name} family")) {
            Ok(r) => r,
            Err(e)
                if e.raw_os_error() == Some(libc::ENOENT)
                    || e.kind() == io::ErrorKind::NotFound =>
            {
                return Err(io::Error::new(
                    io::ErrorKind::NotFound,
                    format!("generic netlink has no {name} family"),
                ));
            }
            Err(e) => return Err(e),
        };
        replies.iter().find_map(|r| family_id_of(r)).ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::NotFound,
                format!("generic netlink has no {name} family"),
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn u16ne(v: u16) -> [u8; 2] {
        v.to_ne_bytes()
    }

    /// A whole netlink message of type `ty`, sequence `seq`, around `payload`.
    pub fn nlmsg(ty: u16, seq: u32, payload: &[u8]) -> Vec<u8> {
        let mut m = ((NLMSG_HDRLEN + payload.len()) as u32)
            .to_ne_bytes()
            .to_vec();
        m.extend_from_slice(&ty.to_ne_bytes());
        m.extend_from_slice(&2u16.to_ne_bytes()); // NLM_F_MULTI
        m.extend_from_slice(&seq.to_ne_bytes());
        m.extend_from_slice(&0u32.to_ne_bytes());
        m.extend_from_slice(payload);
        pad(&mut m);
        m
    }

    #[test]
    fn nested_lengths_and_padding() {
        let mut m = Msg::new(36, NLM_F_REQUEST, &[0u8; 20]);
        m.str(1, "cake").nest(2).u64_ne(2, 1).end();
        let b = m.finish(7);
        assert_eq!(b.len() % 4, 0);
        assert_eq!(u32_of(&b).unwrap() as usize, b.len());
        assert_eq!(u32_of(&b[8..]).unwrap(), 7);
        // header 16 + fixed 20 + "cake\0" 9 → 12 + nest 4 + u64 attr 12.
        assert_eq!(b.len(), 16 + 20 + 12 + 4 + 12);
        let nest = 16 + 20 + 12;
        assert_eq!(u16_of(&b[nest..]).unwrap(), 16);
        assert_eq!(u16_of(&b[nest + 2..]).unwrap(), 2 | NLA_F_NESTED);
        // The walker reads back what the builder wrote, flags masked.
        let got: Vec<(u16, usize)> = attrs(&b[36..]).map(|(t, p)| (t, p.len())).collect();
        assert_eq!(got, [(1, 5), (2, 12)]);
        let inner: Vec<(u16, u64)> = attrs(attrs(&b[36..]).nth(1).unwrap().1)
            .map(|(t, p)| (t, u64_of(p).unwrap()))
            .collect();
        assert_eq!(inner, [(2, 1)]);
    }

    #[test]
    fn attribute_walk_stops_at_malformed_and_reads_any_width() {
        // A good u32 attribute, then one claiming 200 bytes.
        let mut b = vec![8, 0, 5, 0, 1, 0, 0, 0];
        b.extend_from_slice(&[200, 0, 6, 0, 0, 0, 0, 0]);
        let got: Vec<u16> = attrs(&b).map(|(t, _)| t).collect();
        assert_eq!(got, [5]);
        assert_eq!(attrs(&[3, 0, 1, 0]).count(), 0, "length below the header");
        assert_eq!(attrs(&[8, 0]).count(), 0, "truncated header");
        assert_eq!(uint_of(&[7]), Some(7));
        assert_eq!(uint_of(&300u16.to_ne_bytes()), Some(300));
        assert_eq!(uint_of(&70_000u32.to_ne_bytes()), Some(70_000));
        assert_eq!(uint_of(&(1u64 << 40).to_ne_bytes()), Some(1 << 40));
        assert_eq!(uint_of(&[]), None);
        assert_eq!(str_of(b"wlan0\0\0\0"), "wlan0");
        assert_eq!(str_of(b"no-nul"), "no-nul");
    }

    #[test]
    fn datagram_walk() {
        let mut d = nlmsg(36, 7, &[1, 2, 3, 4]);
        d.extend(nlmsg(NLMSG_DONE, 7, &0i32.to_ne_bytes()));
        let ms = messages(&d, "t").unwrap();
        assert_eq!(ms.len(), 2);
        assert_eq!(
            (ms[0].ty, ms[0].seq, ms[0].payload),
            (36, 7, &[1u8, 2, 3, 4][..])
        );
        assert_eq!(ms[1].error_code(), None);
        let e = nlmsg(NLMSG_ERROR, 7, &(-libc::EPERM).to_ne_bytes());
        assert_eq!(
            messages(&e, "t").unwrap()[0].error_code(),
            Some(-libc::EPERM)
        );
        let bad = [0xFF, 0, 0, 0, 36, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0];
        let err = messages(&bad, "rtnetlink").unwrap_err();
        assert!(err.to_string().contains("message length 255"), "{err}");
    }

    #[test]
    fn a_multipart_dump_from_bytes() {
        let mut d1 = nlmsg(36, 7, &[1; 8]);
        d1.extend(nlmsg(36, 7, &[2; 4]));
        d1.extend(nlmsg(36, 6, &[3; 4])); // an old sequence: not ours
        let mut got = Vec::new();
        let mut each = |ty: u16, p: &[u8]| got.push((ty, p.to_vec()));
        assert!(!dump_datagram(&d1, 7, "rtnetlink", "qdisc dump", &mut each).unwrap());
        let d2 = nlmsg(NLMSG_DONE, 7, &0i32.to_ne_bytes());
        assert!(dump_datagram(&d2, 7, "rtnetlink", "qdisc dump", &mut each).unwrap());
        assert_eq!(got, [(36, vec![1; 8]), (36, vec![2; 4])]);
        let err = nlmsg(NLMSG_ERROR, 7, &(-libc::EPERM).to_ne_bytes());
        let e = dump_datagram(&err, 7, "rtnetlink", "qdisc dump", &mut |_, _| {}).unwrap_err();
        assert!(e.to_string().contains("qdisc dump refused"), "{e}");
        let bad = [0xFF, 0, 0, 0, 36, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0];
        assert!(dump_datagram(&bad, 7, "rtnetlink", "x", &mut |_, _| {}).is_err());
    }

    #[test]
    fn getfamily_bytes_and_answer() {
        let g = getfamily_msg("nl80211").finish(2);
        assert_eq!(&g[4..6], &u16ne(0x10));
        assert_eq!(&g[16..20], &[3, 1, 0, 0]);
        assert_eq!(&g[20..24], &[12, 0, 2, 0]);
        assert_eq!(&g[24..32], b"nl80211\0");
        // A controller answer: FAMILY_NAME first, then FAMILY_ID 0x1f (as the kernel sends).
        let mut r = vec![0u8; 16];
        r[4..6].copy_from_slice(&u16ne(0x10));
        r.extend_from_slice(&[1, 2, 0, 0]);
        r.extend_from_slice(&[14, 0, 2, 0]);
        r.extend_from_slice(b"wireguard\0\0\0");
        r.extend_from_slice(&[6, 0, 1, 0, 0x1f, 0, 0, 0]);
        let len = r.len() as u32;
        r[0..4].copy_from_slice(&len.to_ne_bytes());
        assert_eq!(family_id_of(&r), Some(0x1f));
        // Truncated, another type, or a bad attribute length: no id, no panic.
        assert_eq!(family_id_of(&r[..30]), None);
        let mut other = r.clone();
        other[4] = 0x11;
        assert_eq!(family_id_of(&other), None);
        let mut bad = r.clone();
        bad[20] = 200;
        assert_eq!(family_id_of(&bad), None);
        assert_eq!(family_id_of(&[]), None);
    }

    #[test]
    fn live_family_lookup() {
        // Every Linux kernel with generic netlink has its controller; no family has this name.
        let mut g = Netlink::generic().expect("generic netlink socket");
        assert_eq!(g.resolve_family("nlctrl").unwrap(), GENL_ID_CTRL);
        let e = g.resolve_family("no-such-family").unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::NotFound, "{e}");
        assert!(e.to_string().contains("no-such-family"), "{e}");
    }
}
