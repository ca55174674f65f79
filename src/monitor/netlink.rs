//! Qdisc statistics over rtnetlink, in-process: one `RTM_GETQDISC` dump (`NLM_F_DUMP`) on a
//! socket opened once, no `tc` fork per sample (docs/protocols/router-signals.md §A8.1). The socket belongs
//! to the network namespace of the thread that opened it (a lab thread after setns reads the
//! router namespace). The socket and the dump's walk are `net/netlink.rs`; parsing is in
//! [`super::tc_stats`].

use super::tc_stats::{self, QdiscReading};
use crate::net::netlink::{Msg, NLM_F_DUMP, NLM_F_REQUEST, Netlink};
use nix::sys::socket::SockProtocol;
use std::io;
use std::time::Duration;

const RTM_NEWQDISC: u16 = 36;
const RTM_GETQDISC: u16 = 38;
/// At most this many qdiscs are kept per dump (a router has a few dozen).
pub const MAX_QDISCS: usize = 4096;

/// An open `NETLINK_ROUTE` socket, reused for every dump.
pub struct QdiscDumper {
    nl: Netlink,
}

impl QdiscDumper {
    /// Opens the socket in the calling thread's network namespace.
    pub fn open() -> io::Result<Self> {
        let nl = Netlink::open(
            SockProtocol::NetlinkRoute,
            "rtnetlink",
            Duration::from_secs(1),
        )?;
        Ok(Self { nl })
    }

    /// The request: `struct tcmsg` all zero (every device).
    fn request() -> Msg {
        Msg::new(
            RTM_GETQDISC,
            NLM_F_REQUEST | NLM_F_DUMP,
            &[0u8; tc_stats::TCMSG_LEN],
        )
    }

    /// Every qdisc of the namespace (roots and children), in the kernel's order.
    pub fn dump(&mut self) -> io::Result<Vec<QdiscReading>> {
        let mut out = Vec::new();
        self.nl.dump(Self::request(), "qdisc dump", |ty, payload| {
            if ty == RTM_NEWQDISC && out.len() < MAX_QDISCS {
                if let Ok(q) = tc_stats::parse_qdisc(payload) {
                    out.push(q);
                }
            }
        })?;
        Ok(out)
    }
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

    #[test]
    fn request_bytes() {
        let r = QdiscDumper::request().finish(0x0102_0304);
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
