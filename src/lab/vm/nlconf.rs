//! Configuring a router over netlink, in-process, with no `ip`, `tc` or `nft` binary: what the VM
//! router's init needs (its initramfs has busybox and routerbench only). rtnetlink for links,
//! addresses, routes and qdiscs (cake, htb classes with an fq_codel / codel / bfifo leaf);
//! nfnetlink for the one nftables masquerade rule. Message layouts are the kernel's uapi
//! (`linux/rtnetlink.h`, `linux/pkt_sched.h`, `linux/netfilter/nf_tables.h`); docs/vm-router.md
//! lists the attribute numbers used. Every request asks for an ACK, so a refusal comes back as
//! the kernel's errno, named in the error. The socket and message building are
//! `net/netlink.rs`, shared with the monitor.

pub use crate::net::netlink::{Msg, Netlink};
use crate::net::netlink::{NLM_F_ACK, NLM_F_CREATE, NLM_F_EXCL, NLM_F_REPLACE, NLM_F_REQUEST};
use std::io;
use std::net::Ipv4Addr;

const RTM_NEWLINK: u16 = 16;
const RTM_NEWADDR: u16 = 20;
const RTM_NEWROUTE: u16 = 24;
const RTM_NEWQDISC: u16 = 36;
const RTM_DELQDISC: u16 = 37;
const RTM_NEWTCLASS: u16 = 40;

const TCA_KIND: u16 = 1;
const TCA_OPTIONS: u16 = 2;
/// `TC_H_ROOT`: the root of a device's egress.
pub const TC_H_ROOT: u32 = 0xFFFF_FFFF;

/// The index of device `name` in the calling thread's namespace.
pub fn ifindex(name: &str) -> io::Result<i32> {
    let i = nix::net::if_::if_nametoindex(name).map_err(|e| {
        io::Error::new(
            io::Error::from(e).kind(),
            format!("no network device {name}: {e}"),
        )
    })?;
    Ok(i as i32)
}

fn ifinfomsg(index: i32, flags: u32, change: u32) -> [u8; 16] {
    let mut m = [0u8; 16];
    m[4..8].copy_from_slice(&index.to_ne_bytes());
    m[8..12].copy_from_slice(&flags.to_ne_bytes());
    m[12..16].copy_from_slice(&change.to_ne_bytes());
    m
}

/// `ip link set DEV up`.
pub fn link_up(nl: &mut Netlink, dev: &str) -> io::Result<()> {
    let idx = ifindex(dev)?;
    let up = libc::IFF_UP as u32;
    let m = Msg::new(
        RTM_NEWLINK,
        NLM_F_REQUEST | NLM_F_ACK,
        &ifinfomsg(idx, up, up),
    );
    nl.request(m, &format!("set {dev} up"))
}

/// `ip link set DEV mtu N`.
pub fn link_mtu(nl: &mut Netlink, dev: &str, mtu: u32) -> io::Result<()> {
    let idx = ifindex(dev)?;
    let mut m = Msg::new(
        RTM_NEWLINK,
        NLM_F_REQUEST | NLM_F_ACK,
        &ifinfomsg(idx, 0, 0),
    );
    m.u32_ne(4, mtu); // IFLA_MTU
    nl.request(m, &format!("set the MTU of {dev}"))
}

/// `ip addr replace ADDR/PREFIX dev DEV`.
pub fn addr_add(nl: &mut Netlink, dev: &str, addr: Ipv4Addr, prefix: u8) -> io::Result<()> {
    let idx = ifindex(dev)?;
    let mut fixed = [0u8; 8];
    fixed[0] = libc::AF_INET as u8;
    fixed[1] = prefix;
    fixed[4..8].copy_from_slice(&(idx as u32).to_ne_bytes());
    let flags = NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_REPLACE;
    let mut m = Msg::new(RTM_NEWADDR, flags, &fixed);
    m.attr(2, &addr.octets()); // IFA_LOCAL
    m.attr(1, &addr.octets()); // IFA_ADDRESS
    nl.request(m, &format!("add {addr}/{prefix} to {dev}"))
}

/// `ip route replace DST/LEN via GW` (LEN 0 = default route).
pub fn route_add(nl: &mut Netlink, dst: Ipv4Addr, len: u8, gw: Ipv4Addr) -> io::Result<()> {
    let mut fixed = [0u8; 12];
    fixed[0] = libc::AF_INET as u8;
    fixed[1] = len;
    fixed[4] = 254; // RT_TABLE_MAIN
    fixed[5] = 3; // RTPROT_BOOT
    fixed[6] = 0; // RT_SCOPE_UNIVERSE
    fixed[7] = 1; // RTN_UNICAST
    let flags = NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_REPLACE;
    let mut m = Msg::new(RTM_NEWROUTE, flags, &fixed);
    if len > 0 {
        m.attr(1, &dst.octets()); // RTA_DST
    }
    m.attr(5, &gw.octets()); // RTA_GATEWAY
    nl.request(m, &format!("add the route {dst}/{len} via {gw}"))
}

fn tcmsg(index: i32, handle: u32, parent: u32) -> [u8; 20] {
    let mut m = [0u8; 20];
    m[4..8].copy_from_slice(&index.to_ne_bytes());
    m[8..12].copy_from_slice(&handle.to_ne_bytes());
    m[12..16].copy_from_slice(&parent.to_ne_bytes());
    m
}

/// A qdisc to put on a device's egress, at a rate (bit/s) with a byte limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QdiscPlan {
    /// `cake bandwidth RATE memlimit BUFFER diffserv4 [nat]`.
    Cake {
        rate_bps: u64,
        buffer: u32,
        nat: bool,
    },
    /// `htb` class at RATE with `fq_codel memory_limit BUFFER` as its leaf.
    HtbFqCodel { rate_bps: u64, buffer: u32 },
    /// `htb` class at RATE with `codel` as its leaf.
    HtbCodel { rate_bps: u64 },
    /// `htb` class at RATE with a `bfifo limit BUFFER` leaf (the lab's FIFO bottleneck).
    HtbFifo { rate_bps: u64, buffer: u32 },
}

/// `tc qdisc del dev DEV root`; a device without a qdisc of ours is fine.
pub fn qdisc_del_root(nl: &mut Netlink, dev: &str) -> io::Result<()> {
    let idx = ifindex(dev)?;
    let m = Msg::new(
        RTM_DELQDISC,
        NLM_F_REQUEST | NLM_F_ACK,
        &tcmsg(idx, 0, TC_H_ROOT),
    );
    match nl.request(m, &format!("delete the root qdisc of {dev}")) {
        Ok(()) => Ok(()),
        // ENOENT / EINVAL: the default qdisc (or none) is there, nothing to delete.
        Err(e) if matches!(e.raw_os_error(), Some(2) | Some(22)) => Ok(()),
        Err(e) if e.to_string().contains("No such file") || e.to_string().contains("Invalid") => {
            Ok(())
        }
        Err(e) => Err(e),
    }
}

/// tc's rate spec with an Ethernet link layer (so the kernel needs no rate table).
fn ratespec(rate_bps: u64) -> [u8; 12] {
    let mut r = [0u8; 12];
    r[1] = 1; // TC_LINKLAYER_ETHERNET
    let bytes = (rate_bps / 8).min(u64::from(u32::MAX)) as u32;
    r[8..12].copy_from_slice(&bytes.to_ne_bytes());
    r
}

/// Bytes the shaper may send back to back: tc's default `rate/HZ + MTU`, at least 15 kB.
pub fn htb_burst_bytes(rate_bps: u64) -> u64 {
    (rate_bps / 8 / 250 + 1600).max(15_360)
}

/// The time to send `bytes` at `rate_bps`, in the kernel's psched ticks (64 ns).
fn xmit_ticks(bytes: u64, rate_bps: u64) -> u32 {
    let ns = bytes as u128 * 8 * 1_000_000_000 / u128::from(rate_bps.max(1));
    (ns / 64).min(u128::from(u32::MAX)) as u32
}

/// Replaces the root qdisc of `dev` with `plan`.
pub fn qdisc_set(nl: &mut Netlink, dev: &str, plan: QdiscPlan) -> io::Result<()> {
    qdisc_del_root(nl, dev)?;
    let idx = ifindex(dev)?;
    let create = NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL;
    let step = |what: &str| format!("{what} on {dev}");
    match plan {
        QdiscPlan::Cake {
            rate_bps,
            buffer,
            nat,
        } => {
            let mut m = Msg::new(RTM_NEWQDISC, create, &tcmsg(idx, 0x8001_0000, TC_H_ROOT));
            m.str(TCA_KIND, "cake").nest(TCA_OPTIONS);
            m.u64_ne(2, rate_bps / 8); // TCA_CAKE_BASE_RATE64, bytes/s
            m.u32_ne(3, 1); // TCA_CAKE_DIFFSERV_MODE = CAKE_DIFFSERV_DIFFSERV4
            m.u32_ne(10, buffer); // TCA_CAKE_MEMORY
            m.u32_ne(11, u32::from(nat)); // TCA_CAKE_NAT
            m.end();
            nl.request(m, &step("add cake"))
        }
        QdiscPlan::HtbFqCodel { rate_bps, .. }
        | QdiscPlan::HtbCodel { rate_bps }
        | QdiscPlan::HtbFifo { rate_bps, .. } => {
            // htb 1: default 1, class 1:1 at rate = ceil, leaf 10: under it.
            let mut q = Msg::new(RTM_NEWQDISC, create, &tcmsg(idx, 0x0001_0000, TC_H_ROOT));
            let mut glob = [0u8; 20];
            glob[0..4].copy_from_slice(&3u32.to_ne_bytes()); // version (HTB_VER >> 16)
            glob[4..8].copy_from_slice(&10u32.to_ne_bytes()); // rate2quantum
            glob[8..12].copy_from_slice(&1u32.to_ne_bytes()); // defcls
            q.str(TCA_KIND, "htb")
                .nest(TCA_OPTIONS)
                .attr(2, &glob)
                .end(); // TCA_HTB_INIT
            nl.request(q, &step("add htb"))?;
            let mut opt = Vec::with_capacity(44);
            opt.extend_from_slice(&ratespec(rate_bps));
            opt.extend_from_slice(&ratespec(rate_bps));
            let ticks = xmit_ticks(htb_burst_bytes(rate_bps), rate_bps);
            opt.extend_from_slice(&ticks.to_ne_bytes()); // buffer
            opt.extend_from_slice(&ticks.to_ne_bytes()); // cbuffer
            opt.extend_from_slice(&[0u8; 12]); // quantum (from rate2quantum), level, prio
            let mut c = Msg::new(RTM_NEWTCLASS, create, &tcmsg(idx, 0x0001_0001, 0x0001_0000));
            c.str(TCA_KIND, "htb").nest(TCA_OPTIONS).attr(1, &opt); // TCA_HTB_PARMS
            if rate_bps / 8 > u64::from(u32::MAX) {
                c.u64_ne(6, rate_bps / 8).u64_ne(7, rate_bps / 8); // TCA_HTB_RATE64 / CEIL64
            }
            c.end();
            nl.request(c, &step("add the htb class"))?;
            let mut l = Msg::new(RTM_NEWQDISC, create, &tcmsg(idx, 0x0010_0000, 0x0001_0001));
            match plan {
                QdiscPlan::HtbFqCodel { buffer, .. } => {
                    l.str(TCA_KIND, "fq_codel").nest(TCA_OPTIONS);
                    l.u32_ne(9, buffer).end(); // TCA_FQ_CODEL_MEMORY_LIMIT
                }
                QdiscPlan::HtbCodel { .. } => {
                    l.str(TCA_KIND, "codel");
                }
                QdiscPlan::HtbFifo { buffer, .. } => {
                    // struct tc_fifo_qopt { u32 limit } as the bare option.
                    l.str(TCA_KIND, "bfifo")
                        .attr(TCA_OPTIONS, &buffer.to_ne_bytes());
                }
                QdiscPlan::Cake { .. } => {}
            }
            nl.request(l, &step("add the leaf qdisc"))
        }
    }
}

// nfnetlink / nf_tables.
const NFNL_SUBSYS_NFTABLES: u16 = 10;
const NFNL_MSG_BATCH_BEGIN: u16 = 0x10;
const NFNL_MSG_BATCH_END: u16 = 0x11;
const NFT_MSG_NEWTABLE: u16 = 0;
const NFT_MSG_NEWCHAIN: u16 = 3;
const NFT_MSG_NEWRULE: u16 = 6;
const NFT_MSG_DELTABLE: u16 = 2;
const NFPROTO_IPV4: u8 = 2;

fn nfgenmsg(family: u8, res_id: u16) -> [u8; 4] {
    let mut m = [0u8; 4];
    m[0] = family;
    m[2..4].copy_from_slice(&res_id.to_be_bytes());
    m
}

fn nft(ty: u16, flags: u16) -> Msg {
    Msg::new(
        (NFNL_SUBSYS_NFTABLES << 8) | ty,
        flags,
        &nfgenmsg(NFPROTO_IPV4, 0),
    )
}

/// The nftables messages of `table ip TABLE { chain postrouting { type nat hook postrouting
/// priority srcnat; policy accept; oifname "DEV" masquerade } }`, inside one batch.
fn masquerade_batch(table: &str, dev: &str) -> Vec<Msg> {
    let batch = |ty| {
        Msg::new(
            ty,
            NLM_F_REQUEST,
            &nfgenmsg(0, NFNL_SUBSYS_NFTABLES), // AF_UNSPEC, res_id = the subsystem
        )
    };
    let create = NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE;
    let mut t = nft(NFT_MSG_NEWTABLE, create);
    t.str(1, table); // NFTA_TABLE_NAME
    let mut c = nft(NFT_MSG_NEWCHAIN, create);
    c.str(1, table).str(3, "postrouting"); // NFTA_CHAIN_TABLE, NFTA_CHAIN_NAME
    c.nest(4).u32_be(1, 4).u32_be(2, 100).end(); // NFTA_CHAIN_HOOK: POST_ROUTING, srcnat
    c.u32_be(5, 1); // NFTA_CHAIN_POLICY: NF_ACCEPT
    c.str(7, "nat"); // NFTA_CHAIN_TYPE
    let mut r = nft(NFT_MSG_NEWRULE, create | 0x800); // NLM_F_APPEND
    r.str(1, table).str(2, "postrouting"); // NFTA_RULE_TABLE, NFTA_RULE_CHAIN
    r.nest(4); // NFTA_RULE_EXPRESSIONS
    r.nest(1).str(1, "meta").nest(2); // NFTA_LIST_ELEM { NFTA_EXPR_NAME, NFTA_EXPR_DATA
    r.u32_be(2, 7).u32_be(1, 1).end().end(); // NFTA_META_KEY = OIFNAME, NFTA_META_DREG = REG_1
    let mut name = [0u8; 16];
    for (d, s) in name.iter_mut().zip(dev.bytes().take(15)) {
        *d = s;
    }
    r.nest(1).str(1, "cmp").nest(2);
    r.u32_be(1, 1).u32_be(2, 0); // NFTA_CMP_SREG = REG_1, NFTA_CMP_OP = EQ
    r.nest(3).attr(1, &name).end(); // NFTA_CMP_DATA { NFTA_DATA_VALUE }
    r.end().end();
    r.nest(1).str(1, "counter").end();
    r.nest(1).str(1, "masq").end();
    r.end();
    vec![
        batch(NFNL_MSG_BATCH_BEGIN),
        t,
        c,
        r,
        batch(NFNL_MSG_BATCH_END),
    ]
}

/// Installs the masquerade rule for traffic leaving `dev` (table `table`, replaced if present).
pub fn masquerade(table: &str, dev: &str) -> io::Result<()> {
    let mut nl = Netlink::netfilter()?;
    let _ = delete_table(&mut nl, table);
    let msgs = masquerade_batch(table, dev);
    let acks = [false, true, true, true, false];
    nl.transact(msgs, &acks, "install the masquerade rule")
}

fn delete_table(nl: &mut Netlink, table: &str) -> io::Result<()> {
    let batch = |ty| Msg::new(ty, NLM_F_REQUEST, &nfgenmsg(0, NFNL_SUBSYS_NFTABLES));
    let mut d = nft(NFT_MSG_DELTABLE, NLM_F_REQUEST | NLM_F_ACK);
    d.str(1, table);
    let msgs = vec![batch(NFNL_MSG_BATCH_BEGIN), d, batch(NFNL_MSG_BATCH_END)];
    nl.transact(msgs, &[false, true, false], "delete the old table")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn htb_ticks() {
        // 15360 B at 100 Mbit/s = 1.2288 ms = 19200 ticks of 64 ns.
        assert_eq!(xmit_ticks(15_360, 100_000_000), 19_200);
        assert_eq!(htb_burst_bytes(1_000_000_000), 501_600);
        assert_eq!(htb_burst_bytes(10_000_000), 15_360);
        let r = ratespec(80_000_000);
        assert_eq!(r[1], 1);
        assert_eq!(u32::from_ne_bytes([r[8], r[9], r[10], r[11]]), 10_000_000);
    }

    #[test]
    fn masquerade_batch_shape() {
        let msgs = masquerade_batch("t", "eth1");
        assert_eq!(msgs.len(), 5);
        let bytes: Vec<Vec<u8>> = msgs
            .into_iter()
            .enumerate()
            .map(|(i, m)| m.finish(i as u32))
            .collect();
        let ty = |b: &[u8]| u16::from_ne_bytes([b[4], b[5]]);
        assert_eq!(ty(&bytes[0]), NFNL_MSG_BATCH_BEGIN);
        assert_eq!(ty(&bytes[3]), (10 << 8) | NFT_MSG_NEWRULE);
        assert_eq!(ty(&bytes[4]), NFNL_MSG_BATCH_END);
        // The device name is carried as a 16-byte value.
        let rule = &bytes[3];
        assert!(rule.windows(8).any(|w| w == b"eth1\0\0\0\0"));
    }
}
