//! Byte parsers for one rtnetlink `RTM_NEWQDISC` message (docs/protocols/router-signals.md §A8): the
//! `tcmsg` header, `TCA_KIND`, the `TCA_STATS2` basic and queue counters, the shaped rate of
//! tbf and CAKE from `TCA_OPTIONS`, and the qdisc-specific xstats of fq_codel (§A8.3) and
//! CAKE's nested per-tin NLAs (§A8.4). No I/O: `netlink` reads, this parses.

/// `struct tcmsg` (20 bytes) that opens every qdisc message.
pub const TCMSG_LEN: usize = 20;
/// `TC_H_ROOT`: the parent of a device's root qdisc.
pub const TC_H_ROOT: u32 = 0xFFFF_FFFF;

const TCA_KIND: u16 = 1;
const TCA_OPTIONS: u16 = 2;
const TCA_STATS: u16 = 3;
const TCA_XSTATS: u16 = 4;
const TCA_STATS2: u16 = 7;
const TCA_STATS_BASIC: u16 = 1;
const TCA_STATS_QUEUE: u16 = 3;
const TCA_STATS_APP: u16 = 4;
const TCA_TBF_PARMS: u16 = 1;
const TCA_TBF_RATE64: u16 = 4;
const TCA_CAKE_BASE_RATE64: u16 = 2;
const TCA_CAKE_STATS_MEMORY_USED: u16 = 4;
const TCA_CAKE_STATS_TIN_STATS: u16 = 10;
/// CAKE has at most 8 tins (diffserv8).
pub const MAX_CAKE_TINS: usize = 8;

/// One qdisc as the kernel reported it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct QdiscReading {
    pub ifindex: i32,
    pub handle: u32,
    pub parent: u32,
    pub kind: String,
    pub bytes: u64,
    /// u32 in the kernel's `gnet_stats_basic` (wraps).
    pub packets: u32,
    pub qlen: u32,
    pub backlog_bytes: u32,
    /// u32 counters (wrap): take deltas with `wrapping_sub`.
    pub drops: u32,
    pub requeues: u32,
    pub overlimits: u32,
    /// The shaped rate, bytes per second, where the qdisc itself shapes (tbf, CAKE).
    pub rate_bytes_per_s: Option<u64>,
    pub xstats: Option<Xstats>,
}

impl QdiscReading {
    pub fn is_root(&self) -> bool {
        self.parent == TC_H_ROOT
    }
    /// `tc`'s spelling of the handle: `1:` or `1:10`.
    pub fn handle_text(&self) -> String {
        let (major, minor) = (self.handle >> 16, self.handle & 0xFFFF);
        if minor == 0 {
            format!("{major:x}:")
        } else {
            format!("{major:x}:{minor:x}")
        }
    }
}

/// Qdisc-specific statistics.
#[derive(Debug, Clone, PartialEq)]
pub enum Xstats {
    FqCodel(FqCodelXstats),
    Cake(CakeXstats),
}

/// `struct tc_fq_codel_qd_stats` (type 0). Older kernels stop after `ce_mark`: the fields
/// they lack are `None`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FqCodelXstats {
    pub maxpacket: u32,
    pub drop_overlimit: u32,
    pub ecn_mark: u32,
    pub new_flow_count: u32,
    pub new_flows_len: u32,
    pub old_flows_len: u32,
    pub ce_mark: u32,
    pub memory_usage: Option<u32>,
    pub drop_overmemory: Option<u32>,
}

/// CAKE's qdisc statistics: the memory counters and one entry per tin.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CakeXstats {
    pub capacity_estimate_bytes_per_s: Option<u64>,
    pub memory_used_bytes: Option<u32>,
    pub tins: Vec<CakeTin>,
}

/// One CAKE tin (`TCA_CAKE_TIN_STATS_*`); delays are the kernel's EWMAs of sojourn time, µs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CakeTin {
    pub sent_packets: u32,
    pub sent_bytes: u64,
    pub dropped_packets: u32,
    pub ecn_marked_packets: u32,
    pub ack_drops: u32,
    pub backlog_packets: u32,
    pub backlog_bytes: u32,
    pub threshold_rate_bytes_per_s: u64,
    pub target_us: u32,
    pub peak_delay_us: u32,
    pub avg_delay_us: u32,
    pub base_delay_us: u32,
    pub sparse_flows: u32,
    pub bulk_flows: u32,
    pub unresponsive_flows: u32,
}

/// Why bytes are not a qdisc message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TcParseError {
    #[error("qdisc message of {0} bytes is shorter than struct tcmsg")]
    Short(usize),
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_ne_bytes(b.get(at..at + 4)?.try_into().ok()?))
}
fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_ne_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

pub use crate::net::netlink::attrs;

/// Parses the payload of one `RTM_NEWQDISC` (after the netlink header).
pub fn parse_qdisc(msg: &[u8]) -> Result<QdiscReading, TcParseError> {
    if msg.len() < TCMSG_LEN {
        return Err(TcParseError::Short(msg.len()));
    }
    let mut q = QdiscReading {
        ifindex: u32_at(msg, 4).unwrap_or(0) as i32,
        handle: u32_at(msg, 8).unwrap_or(0),
        parent: u32_at(msg, 12).unwrap_or(0),
        ..Default::default()
    };
    let mut options = None;
    let mut app = None;
    let mut legacy = None;
    let mut have_stats2 = false;
    for (ty, p) in attrs(&msg[TCMSG_LEN..]) {
        match ty {
            TCA_KIND => {
                let end = p.iter().position(|&c| c == 0).unwrap_or(p.len());
                q.kind = String::from_utf8_lossy(&p[..end]).into_owned();
            }
            TCA_OPTIONS => options = Some(p),
            TCA_STATS => legacy = Some(p),
            TCA_XSTATS => app = app.or(Some(p)),
            TCA_STATS2 => {
                have_stats2 = true;
                for (sty, sp) in attrs(p) {
                    match sty {
                        TCA_STATS_BASIC => {
                            q.bytes = u64_at(sp, 0).unwrap_or(0);
                            q.packets = u32_at(sp, 8).unwrap_or(0);
                        }
                        TCA_STATS_QUEUE => {
                            q.qlen = u32_at(sp, 0).unwrap_or(0);
                            q.backlog_bytes = u32_at(sp, 4).unwrap_or(0);
                            q.drops = u32_at(sp, 8).unwrap_or(0);
                            q.requeues = u32_at(sp, 12).unwrap_or(0);
                            q.overlimits = u32_at(sp, 16).unwrap_or(0);
                        }
                        TCA_STATS_APP => app = Some(sp),
                        _ => {}
                    }
                }
            }
            _ => {}
        }
    }
    // `struct tc_stats {u64 bytes; u32 packets, drops, overlimits, bps, pps, qlen, backlog}`:
    // only when the kernel sent no TCA_STATS2 (tc falls back the same way).
    if let (false, Some(s)) = (have_stats2, legacy) {
        q.bytes = u64_at(s, 0).unwrap_or(0);
        q.packets = u32_at(s, 8).unwrap_or(0);
        q.drops = u32_at(s, 12).unwrap_or(0);
        q.overlimits = u32_at(s, 16).unwrap_or(0);
        q.qlen = u32_at(s, 28).unwrap_or(0);
        q.backlog_bytes = u32_at(s, 32).unwrap_or(0);
    }
    q.rate_bytes_per_s = options.and_then(|o| shaped_rate(&q.kind, o));
    q.xstats = app.and_then(|a| xstats(&q.kind, a));
    Ok(q)
}

/// The rate a tbf or CAKE qdisc shapes to, bytes/s (0 = unlimited → `None`).
fn shaped_rate(kind: &str, opts: &[u8]) -> Option<u64> {
    let rate = match kind {
        "tbf" => {
            let mut r64 = None;
            let mut r32 = None;
            for (ty, p) in attrs(opts) {
                match ty {
                    TCA_TBF_RATE64 => r64 = u64_at(p, 0),
                    // struct tc_tbf_qopt starts with struct tc_ratespec, whose u32 rate
                    // (bytes/s) sits at offset 8.
                    TCA_TBF_PARMS => r32 = u32_at(p, 8).map(u64::from),
                    _ => {}
                }
            }
            r64.or(r32)?
        }
        "cake" => attrs(opts)
            .find(|(ty, _)| *ty == TCA_CAKE_BASE_RATE64)
            .and_then(|(_, p)| u64_at(p, 0))?,
        _ => return None,
    };
    (rate > 0).then_some(rate)
}

/// fq_codel's `struct tc_fq_codel_xstats` or CAKE's nested NLAs.
pub fn xstats(kind: &str, p: &[u8]) -> Option<Xstats> {
    match kind {
        "fq_codel" => fq_codel_xstats(p).map(Xstats::FqCodel),
        "cake" => Some(Xstats::Cake(cake_xstats(p))),
        _ => None,
    }
}

/// `{u32 type; tc_fq_codel_qd_stats}`; class xstats (type 1) are not qdisc statistics.
pub fn fq_codel_xstats(p: &[u8]) -> Option<FqCodelXstats> {
    if u32_at(p, 0)? != 0 {
        return None;
    }
    let f = |i: usize| u32_at(p, 4 + 4 * i);
    Some(FqCodelXstats {
        maxpacket: f(0)?,
        drop_overlimit: f(1)?,
        ecn_mark: f(2)?,
        new_flow_count: f(3)?,
        new_flows_len: f(4)?,
        old_flows_len: f(5)?,
        ce_mark: f(6)?,
        memory_usage: f(7),
        drop_overmemory: f(8),
    })
}

/// CAKE's `TCA_CAKE_STATS_*` attributes, tins in the kernel's order (at most 8).
pub fn cake_xstats(p: &[u8]) -> CakeXstats {
    let mut c = CakeXstats::default();
    for (ty, v) in attrs(p) {
        match ty {
            2 => c.capacity_estimate_bytes_per_s = u64_at(v, 0),
            TCA_CAKE_STATS_MEMORY_USED => c.memory_used_bytes = u32_at(v, 0),
            TCA_CAKE_STATS_TIN_STATS => {
                for (_, tin) in attrs(v).take(MAX_CAKE_TINS) {
                    c.tins.push(cake_tin(tin));
                }
            }
            _ => {}
        }
    }
    c
}

fn cake_tin(p: &[u8]) -> CakeTin {
    let mut t = CakeTin::default();
    for (ty, v) in attrs(p) {
        let u32v = u32_at(v, 0).unwrap_or(0);
        let u64v = u64_at(v, 0).unwrap_or(0);
        match ty {
            2 => t.sent_packets = u32v,
            3 => t.sent_bytes = u64v,
            4 => t.dropped_packets = u32v,
            6 => t.ack_drops = u32v,
            8 => t.ecn_marked_packets = u32v,
            10 => t.backlog_packets = u32v,
            11 => t.backlog_bytes = u32v,
            12 => t.threshold_rate_bytes_per_s = u64v,
            13 => t.target_us = u32v,
            18 => t.peak_delay_us = u32v,
            19 => t.avg_delay_us = u32v,
            20 => t.base_delay_us = u32v,
            21 => t.sparse_flows = u32v,
            22 => t.bulk_flows = u32v,
            23 => t.unresponsive_flows = u32v,
            _ => {}
        }
    }
    t
}

#[cfg(test)]
#[path = "tc_stats_tests.rs"]
pub(crate) mod tests;
