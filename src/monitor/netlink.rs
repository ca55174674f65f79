//! Qdisc statistics over rtnetlink, in-process: one `RTM_GETQDISC` dump (`NLM_F_DUMP`) on a
//! socket opened once, no `tc` fork per sample (docs/protocols/router-signals.md §A8.1). The socket belongs
//! to the network namespace of the thread that opened it (a lab thread after setns reads the
//! router namespace). Hand-written instead of netlink-packet-route: docs/architecture.md has the
//! size comparison. Parsing is in [`super::tc_stats`].

use super::tc_stats::{self, QdiscReading};
use nix::errno::Errno;
use nix::sys::socket::{
    self, AddressFamily, MsgFlags, NetlinkAddr, SockFlag, SockProtocol, SockType, sockopt,
};
use nix::sys::time::TimeVal;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::time::{Duration, Instant};

const RTM_NEWQDISC: u16 = 36;
const RTM_GETQDISC: u16 = 38;
const NLMSG_ERROR: u16 = 2;
const NLMSG_DONE: u16 = 3;
const NLMSG_HDRLEN: usize = 16;
/// One dump must end within this time and this many datagrams.
const DUMP_DEADLINE: Duration = Duration::from_secs(2);
const MAX_DATAGRAMS: usize = 1024;
/// At most this many qdiscs are kept per dump (a router has a few dozen).
pub const MAX_QDISCS: usize = 4096;

/// An open `NETLINK_ROUTE` socket and its receive buffer, reused for every dump.
pub struct QdiscDumper {
    fd: OwnedFd,
    seq: u32,
    buf: Vec<u8>,
}

fn nl_error(what: &str, e: Errno) -> io::Error {
    let e = io::Error::from(e);
    io::Error::new(e.kind(), format!("rtnetlink {what}: {e}"))
}

impl QdiscDumper {
    /// Opens the socket in the calling thread's network namespace.
    pub fn open() -> io::Result<Self> {
        let fd = socket::socket(
            AddressFamily::Netlink,
            SockType::Raw,
            SockFlag::SOCK_CLOEXEC,
            SockProtocol::NetlinkRoute,
        )
        .map_err(|e| nl_error("socket", e))?;
        socket::setsockopt(&fd, sockopt::ReceiveTimeout, &TimeVal::new(1, 0))
            .map_err(|e| nl_error("SO_RCVTIMEO", e))?;
        // pid 0: the kernel assigns one.
        socket::bind(fd.as_raw_fd(), &NetlinkAddr::new(0, 0)).map_err(|e| nl_error("bind", e))?;
        Ok(Self {
            fd,
            seq: 0,
            buf: vec![0; 32 * 1024],
        })
    }

    /// The request: nlmsghdr + `struct tcmsg` (all zero: every device).
    fn request(seq: u32) -> [u8; NLMSG_HDRLEN + tc_stats::TCMSG_LEN] {
        let mut r = [0u8; NLMSG_HDRLEN + tc_stats::TCMSG_LEN];
        let total = r.len() as u32;
        r[0..4].copy_from_slice(&total.to_ne_bytes());
        r[4..6].copy_from_slice(&RTM_GETQDISC.to_ne_bytes());
        let flags = (libc::NLM_F_REQUEST | libc::NLM_F_DUMP) as u16;
        r[6..8].copy_from_slice(&flags.to_ne_bytes());
        r[8..12].copy_from_slice(&seq.to_ne_bytes());
        r
    }

    /// Every qdisc of the namespace (roots and children), in the kernel's order.
    pub fn dump(&mut self) -> io::Result<Vec<QdiscReading>> {
        self.seq = self.seq.wrapping_add(1);
        let req = Self::request(self.seq);
        // pid 0 addresses the kernel.
        socket::sendto(
            self.fd.as_raw_fd(),
            &req,
            &NetlinkAddr::new(0, 0),
            MsgFlags::empty(),
        )
        .map_err(|e| nl_error("sendto", e))?;
        let deadline = Instant::now() + DUMP_DEADLINE;
        let mut out = Vec::new();
        for _ in 0..MAX_DATAGRAMS {
            if Instant::now() > deadline {
                break;
            }
            let n = match socket::recv(self.fd.as_raw_fd(), &mut self.buf, MsgFlags::empty()) {
                Ok(n) => n,
                Err(Errno::EINTR) => continue,
                Err(e) => return Err(nl_error("recv", e)),
            };
            match walk(self.buf.get(..n).unwrap_or(&[]), self.seq, &mut out)? {
                Walk::Done => return Ok(out),
                Walk::More => {}
            }
        }
        Err(io::Error::new(
            io::ErrorKind::TimedOut,
            "rtnetlink qdisc dump did not end (no NLMSG_DONE within 2 s)",
        ))
    }
}

enum Walk {
    More,
    Done,
}

/// Walks the netlink messages of one datagram, appending qdiscs; `Done` at NLMSG_DONE.
fn walk(mut b: &[u8], seq: u32, out: &mut Vec<QdiscReading>) -> io::Result<Walk> {
    while b.len() >= NLMSG_HDRLEN {
        let len = u32::from_ne_bytes([b[0], b[1], b[2], b[3]]) as usize;
        let ty = u16::from_ne_bytes([b[4], b[5]]);
        let mseq = u32::from_ne_bytes([b[8], b[9], b[10], b[11]]);
        if len < NLMSG_HDRLEN || len > b.len() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "rtnetlink: message length {len} in a datagram of {}",
                    b.len()
                ),
            ));
        }
        let payload = &b[NLMSG_HDRLEN..len];
        if mseq == seq {
            match ty {
                NLMSG_DONE => return Ok(Walk::Done),
                NLMSG_ERROR => {
                    let errno = payload
                        .get(..4)
                        .map_or(0, |e| i32::from_ne_bytes([e[0], e[1], e[2], e[3]]));
                    if errno != 0 {
                        let e = io::Error::from_raw_os_error(-errno);
                        return Err(io::Error::new(
                            e.kind(),
                            format!("rtnetlink qdisc dump refused: {e}"),
                        ));
                    }
                    return Ok(Walk::Done);
                }
                RTM_NEWQDISC if out.len() < MAX_QDISCS => {
                    if let Ok(q) = tc_stats::parse_qdisc(payload) {
                        out.push(q);
                    }
                }
                _ => {}
            }
        }
        b = b.get(len.next_multiple_of(4)..).unwrap_or(&[]);
    }
    Ok(Walk::More)
}

/// The name of device `ifindex` in the calling thread's namespace (`if_indextoname`).
pub fn ifname(ifindex: i32) -> Option<String> {
    let index = u32::try_from(ifindex).ok()?;
    let name = nix::net::if_::if_indextoname(index).ok()?;
    Some(name.to_string_lossy().into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::monitor::tc_stats::tests as fx;

    fn nlmsg(ty: u16, seq: u32, payload: &[u8]) -> Vec<u8> {
        let mut m = ((NLMSG_HDRLEN + payload.len()) as u32)
            .to_ne_bytes()
            .to_vec();
        m.extend_from_slice(&ty.to_ne_bytes());
        m.extend_from_slice(&2u16.to_ne_bytes()); // NLM_F_MULTI
        m.extend_from_slice(&seq.to_ne_bytes());
        m.extend_from_slice(&0u32.to_ne_bytes());
        m.extend_from_slice(payload);
        while m.len() % 4 != 0 {
            m.push(0);
        }
        m
    }

    #[test]
    fn a_multipart_dump_from_bytes() {
        let mut d1 = nlmsg(RTM_NEWQDISC, 7, &fx::fq_codel_message());
        d1.extend(nlmsg(RTM_NEWQDISC, 7, &fx::cake_message()));
        d1.extend(nlmsg(RTM_NEWQDISC, 6, &fx::tbf_message(1, None, 1))); // old sequence
        let mut out = Vec::new();
        assert!(matches!(walk(&d1, 7, &mut out).unwrap(), Walk::More));
        let d2 = nlmsg(NLMSG_DONE, 7, &0i32.to_ne_bytes());
        assert!(matches!(walk(&d2, 7, &mut out).unwrap(), Walk::Done));
        let kinds: Vec<&str> = out.iter().map(|q| q.kind.as_str()).collect();
        assert_eq!(kinds, ["fq_codel", "cake"]);
        let err = nlmsg(NLMSG_ERROR, 7, &(-libc::EPERM).to_ne_bytes());
        let e = walk(&err, 7, &mut out).err().unwrap();
        assert!(e.to_string().contains("refused"), "{e}");
        assert!(
            walk(
                &[0xFF, 0, 0, 0, 36, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0],
                7,
                &mut out
            )
            .is_err()
        );
    }

    #[test]
    fn request_bytes() {
        let r = QdiscDumper::request(0x0102_0304);
        assert_eq!(r.len(), 36);
        assert_eq!(u32::from_ne_bytes([r[0], r[1], r[2], r[3]]), 36);
        assert_eq!(u16::from_ne_bytes([r[4], r[5]]), 38);
        assert_eq!(u16::from_ne_bytes([r[6], r[7]]), 0x301, "REQUEST|DUMP");
        assert!(r[16..].iter().all(|&b| b == 0), "tcmsg: every device");
    }

    #[test]
    fn live_dump_agrees_with_tc() {
        // This host's own qdiscs (no root needed to read them).
        let mut d = QdiscDumper::open().expect("netlink socket");
        let ours = d.dump().expect("dump");
        assert!(!ours.is_empty(), "every device has a root qdisc");
        assert!(ours.iter().all(|q| !q.kind.is_empty()));
        let lo = ours.iter().find(|q| q.ifindex == 1 && q.is_root());
        assert!(lo.is_some(), "{ours:?}");
        assert_eq!(ifname(1).as_deref(), Some("lo"));
        if let Ok(out) = crate::util::tool::run_tool("tc", &["-s", "-j", "qdisc", "show"]) {
            let theirs = crate::monitor::qdisc::parse_qdisc_json("", &out).unwrap();
            let mut a: Vec<(String, String)> = ours
                .iter()
                .filter(|q| q.is_root())
                .map(|q| (ifname(q.ifindex).unwrap_or_default(), q.kind.clone()))
                .collect();
            let mut b: Vec<(String, String)> = theirs
                .iter()
                .filter(|q| q.root)
                .map(|q| (q.dev.clone(), q.kind.clone()))
                .collect();
            a.sort();
            b.sort();
            assert_eq!(a, b, "root qdiscs: netlink vs tc");
        }
        // The socket is reused: a second dump works.
        assert_eq!(d.dump().unwrap().len(), ours.len());
    }
}
