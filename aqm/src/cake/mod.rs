//! A CAKE-style qdisc ("Piece of CAKE", Linux `sch_cake.c`; docs/protocols/router-signals.md B3): a
//! deficit-mode shaper with overhead compensation in front of DiffServ tins, each with 1024
//! flow queues in an 8-way set-associative hash, DRR++ (sparse, bulk and decaying lists), host
//! fairness (triple-isolate by default) and COBALT per flow. Sojourn times start at the packet's
//! receive timestamp.

mod chain;
pub mod cobalt;
pub mod tins;

use crate::MS;
use crate::meta::{Packet, PktMeta};
use crate::qdisc::{Dequeued, FlowQueue, Qdisc, QdiscKind, QdiscStats};
use crate::shaper::{Overhead, VirtualClock};
use chain::{Chains, ListId};
use cobalt::{Cobalt, CobaltParams, Verdict};
pub use tins::DiffservMode;

const QUEUES: usize = 1024;
const WAYS: usize = 8;

/// How flows are told apart and how fairness between hosts works.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FlowMode {
    Flowblind,
    SrcHost,
    DstHost,
    Hosts,
    Flows,
    DualSrcHost,
    DualDstHost,
    #[default]
    TripleIsolate,
}

impl FlowMode {
    fn bits(self) -> u8 {
        self as u8
    }

    fn dual_src(self) -> bool {
        self.bits() & 5 == 5
    }

    fn dual_dst(self) -> bool {
        self.bits() & 6 == 6
    }

    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "flowblind" => FlowMode::Flowblind,
            "srchost" => FlowMode::SrcHost,
            "dsthost" => FlowMode::DstHost,
            "hosts" => FlowMode::Hosts,
            "flows" => FlowMode::Flows,
            "dual-srchost" => FlowMode::DualSrcHost,
            "dual-dsthost" => FlowMode::DualDstHost,
            "triple-isolate" => FlowMode::TripleIsolate,
            _ => return None,
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CakeConfig {
    /// Shaped rate in bit/s; `None` = unlimited (DRR between tins by weight).
    pub rate_bps: Option<u64>,
    pub diffserv: DiffservMode,
    pub flow_mode: FlowMode,
    pub overhead: Overhead,
    pub rtt_ns: u64,
    pub target_ns: u64,
    /// Bytes queued at most; `None` = CAKE's default (max(4·rate·interval, 4 MiB)).
    pub memory_limit: Option<u64>,
    pub limit_packets: u32,
    /// Seed of the dithering / BLUE random numbers.
    pub seed: u64,
}

impl Default for CakeConfig {
    fn default() -> Self {
        Self {
            rate_bps: None,
            diffserv: DiffservMode::Diffserv4,
            flow_mode: FlowMode::TripleIsolate,
            overhead: Overhead::raw(),
            rtt_ns: 100 * MS,
            target_ns: 5 * MS,
            memory_limit: None,
            limit_packets: 10_240,
            seed: 0x9e37_79b9_7f4a_7c15,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Set {
    None,
    Sparse,
    SparseWait,
    Bulk,
    Decaying,
}

#[derive(Debug)]
struct CakeFlow {
    q: FlowQueue,
    deficit: i32,
    cvars: Cobalt,
    set: Set,
    srchost: u16,
    dsthost: u16,
}

#[derive(Debug, Clone, Copy, Default)]
struct Host {
    src_tag: u32,
    dst_tag: u32,
    src_bulk: u16,
    dst_bulk: u16,
}

/// Per-tin counters and delay estimates (what `tc -s qdisc show` prints for cake).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TinStats {
    pub name: &'static str,
    pub sent_packets: u64,
    pub sent_bytes: u64,
    pub drops: u64,
    pub ecn_marks: u64,
    pub overlimit_drops: u64,
    pub way_directs: u64,
    pub way_hits: u64,
    pub way_misses: u64,
    pub way_collisions: u64,
    pub peak_delay_ns: u64,
    pub avg_delay_ns: u64,
    pub base_delay_ns: u64,
    pub sparse_flows: u32,
    pub bulk_flows: u32,
    pub unresponsive_flows: u32,
}

#[derive(Debug)]
struct Tin {
    flows: Vec<CakeFlow>,
    tags: Vec<u32>,
    hosts: Vec<Host>,
    chains: Chains,
    decaying: u32,
    backlog: u64,
    flow_quantum: u32,
    tin_quantum: i32,
    tin_deficit: i32,
    params: CobaltParams,
    clock: VirtualClock,
    stats: TinStats,
}

fn ewma(avg: u64, sample: u64, shift: u32) -> u64 {
    avg - (avg >> shift) + (sample >> shift)
}

impl Tin {
    fn new(name: &'static str, rate_bps: Option<u64>, shift: u32, cfg: &CakeConfig) -> Self {
        let rate = rate_bps.map(|r| (r >> shift).max(8));
        let clock = VirtualClock::new(rate);
        let (flow_quantum, mtu_time) = match rate {
            Some(r) => (
                ((r / 8) >> 12).clamp(300, 1514) as u32,
                clock.duration(1514),
            ),
            None => (1514, 0),
        };
        Self {
            flows: (0..QUEUES)
                .map(|_| CakeFlow {
                    q: FlowQueue::default(),
                    deficit: 0,
                    cvars: Cobalt::default(),
                    set: Set::None,
                    srchost: 0,
                    dsthost: 0,
                })
                .collect(),
            tags: vec![0; QUEUES],
            hosts: vec![Host::default(); QUEUES],
            chains: Chains::new(QUEUES),
            decaying: 0,
            backlog: 0,
            flow_quantum,
            tin_quantum: (1024 >> shift).max(1),
            tin_deficit: 0,
            params: CobaltParams::new(cfg.rtt_ns, cfg.target_ns, mtu_time),
            clock,
            stats: TinStats {
                name,
                ..Default::default()
            },
        }
    }

    fn active_flows(&self) -> u32 {
        self.stats.sparse_flows + self.stats.bulk_flows
    }

    fn host_bulk(&mut self, i: usize, mode: FlowMode, up: bool) {
        let (s, d) = (
            usize::from(self.flows[i].srchost),
            usize::from(self.flows[i].dsthost),
        );
        let step = |v: &mut u16| {
            *v = if up {
                v.saturating_add(1)
            } else {
                v.saturating_sub(1)
            }
        };
        if mode.dual_src() {
            step(&mut self.hosts[s].src_bulk);
        }
        if mode.dual_dst() {
            step(&mut self.hosts[d].dst_bulk);
        }
    }

    fn flow_quantum(&self, i: usize, mode: FlowMode, rand: u32) -> i32 {
        let f = &self.flows[i];
        let mut load = 1u32;
        if mode.dual_src() {
            load = load.max(u32::from(self.hosts[usize::from(f.srchost)].src_bulk));
        }
        if mode.dual_dst() {
            load = load.max(u32::from(self.hosts[usize::from(f.dsthost)].dst_bulk));
        }
        ((u64::from(self.flow_quantum) * u64::from(65_535 / load) + u64::from(rand & 0xffff)) >> 16)
            as i32
    }

    /// Finds the host slot for `hash` in its 8-way set (tag match, else a slot with no bulk
    /// flows, else the original slot).
    fn host_slot(&mut self, hash: u32, src: bool) -> usize {
        let base = hash as usize % QUEUES;
        let (inner, outer) = (base % WAYS, base - base % WAYS);
        let tag = |h: &Host| if src { h.src_tag } else { h.dst_tag };
        let bulk = |h: &Host| if src { h.src_bulk } else { h.dst_bulk };
        for i in 0..WAYS {
            let k = outer + (inner + i) % WAYS;
            if tag(&self.hosts[k]) == hash {
                return k;
            }
        }
        let k = (0..WAYS)
            .map(|i| outer + (inner + i) % WAYS)
            .find(|&k| bulk(&self.hosts[k]) == 0)
            .unwrap_or(base);
        if src {
            self.hosts[k].src_tag = hash;
        } else {
            self.hosts[k].dst_tag = hash;
        }
        k
    }

    /// The set-associative flow lookup (`cake_hash`): direct hit, a way with the same tag, a
    /// free way, or a collision in the original slot. Returns the queue index.
    fn lookup(&mut self, flow_hash: u32, m: &PktMeta, mode: FlowMode) -> usize {
        let reduced = flow_hash as usize % QUEUES;
        if self.tags[reduced] == flow_hash && self.flows[reduced].set != Set::None {
            self.stats.way_directs += 1;
            return reduced;
        }
        let (inner, outer) = (reduced % WAYS, reduced - reduced % WAYS);
        let mut allocate = false;
        let mut chosen = None;
        for i in 0..WAYS {
            let k = outer + (inner + i) % WAYS;
            if self.tags[k] == flow_hash {
                if i > 0 {
                    self.stats.way_hits += 1;
                }
                allocate = self.flows[k].set == Set::None;
                chosen = Some(k);
                break;
            }
        }
        if chosen.is_none() {
            chosen = (0..WAYS)
                .map(|i| outer + (inner + i) % WAYS)
                .find(|&k| self.flows[k].set == Set::None);
            if chosen.is_some() {
                self.stats.way_misses += 1;
            } else {
                self.stats.way_collisions += 1;
                if self.flows[reduced].set == Set::Bulk {
                    self.host_bulk(reduced, mode, false);
                }
            }
            allocate = true;
        }
        let k = chosen.unwrap_or(reduced);
        self.tags[k] = flow_hash;
        if allocate {
            let bulk = self.flows[k].set == Set::Bulk;
            if mode.dual_src() {
                let s = self.host_slot(m.src_host_hash, true);
                self.flows[k].srchost = s as u16;
            }
            if mode.dual_dst() {
                let d = self.host_slot(m.dst_host_hash, false);
                self.flows[k].dsthost = d as u16;
            }
            if bulk {
                self.host_bulk(k, mode, true);
            }
        }
        k
    }
}

/// The CAKE-style qdisc.
#[derive(Debug)]
pub struct Cake {
    cfg: CakeConfig,
    tins: Vec<Tin>,
    clock: VirtualClock,
    qlen: usize,
    buffer_used: u64,
    buffer_limit: u64,
    cur_tin: usize,
    rng: u64,
    stats: QdiscStats,
}

impl Cake {
    pub fn new(cfg: CakeConfig) -> Self {
        let rate = cfg.rate_bps.filter(|&r| r > 0);
        let tins = cfg
            .diffserv
            .tins()
            .iter()
            .map(|t| Tin::new(t.name, rate, t.rate_shift, &cfg))
            .collect();
        let cap = u64::from(cfg.limit_packets) * 1514;
        let buffer_limit = match (cfg.memory_limit, rate) {
            (Some(m), _) => m,
            (None, Some(r)) => (r / 8 * 4 * cfg.rtt_ns / 1_000_000_000)
                .max(4 << 20)
                .min(cap),
            (None, None) => cap,
        };
        Self {
            cfg: CakeConfig {
                rate_bps: rate,
                ..cfg
            },
            tins,
            clock: VirtualClock::new(rate),
            qlen: 0,
            buffer_used: 0,
            buffer_limit,
            cur_tin: 0,
            rng: cfg.seed | 1,
            stats: QdiscStats::default(),
        }
    }

    fn rand(&mut self) -> u32 {
        // xorshift64*
        self.rng ^= self.rng >> 12;
        self.rng ^= self.rng << 25;
        self.rng ^= self.rng >> 27;
        (self.rng.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 32) as u32
    }

    pub fn tin_stats(&self) -> Vec<TinStats> {
        self.tins.iter().map(|t| t.stats).collect()
    }

    pub fn buffer_limit(&self) -> u64 {
        self.buffer_limit
    }

    fn flow_hash(&self, m: &PktMeta) -> u32 {
        let bits = self.cfg.flow_mode.bits();
        if bits & 4 != 0 {
            return m.flow_hash;
        }
        let mut h = 0;
        if bits & 1 != 0 {
            h ^= m.src_host_hash;
        }
        if bits & 2 != 0 {
            h ^= m.dst_host_hash;
        }
        h
    }

    /// Head drop from the longest queue of any tin (Linux keeps a heap; a scan of the
    /// 1024·tins backlogs costs a few µs and only runs on overflow).
    fn drop_fattest(&mut self, now: u64) -> bool {
        let mut best = (0, 0, 0u64);
        for (ti, t) in self.tins.iter().enumerate() {
            for (fi, f) in t.flows.iter().enumerate() {
                if f.q.bytes > best.2 {
                    best = (ti, fi, f.q.bytes);
                }
            }
        }
        let (ti, fi, bytes) = best;
        if bytes == 0 {
            return false;
        }
        let t = &mut self.tins[ti];
        let Some(p) = t.flows[fi].q.pop() else {
            return false;
        };
        let len = u64::from(p.meta.wire_len);
        t.backlog -= len;
        self.buffer_used -= len;
        self.qlen -= 1;
        t.stats.overlimit_drops += 1;
        self.stats.overlimit_drops += 1;
        let params = t.params;
        if t.flows[fi].cvars.queue_full(&params, now) {
            t.stats.unresponsive_flows += 1;
        }
        true
    }

    /// Shaped mode: the highest tin whose own clock allows it, else the one due soonest.
    fn pick_tin_shaped(&self, now: u64) -> Option<usize> {
        let mut best: Option<(usize, i64)> = None;
        for (i, t) in self.tins.iter().enumerate() {
            if t.active_flows() == 0 {
                continue;
            }
            let until = t.clock.time_next() as i64 - now as i64;
            if best.is_none_or(|(_, b)| until <= 0 || until <= b) {
                best = Some((i, until));
            }
        }
        best.map(|(i, _)| i)
    }

    /// Unlimited mode: DRR between tins by weight.
    fn pick_tin_drr(&mut self) -> Option<usize> {
        let n = self.tins.len();
        for _ in 0..(64 * n + 2) {
            let t = &mut self.tins[self.cur_tin];
            if t.tin_deficit >= 0 && t.active_flows() > 0 {
                return Some(self.cur_tin);
            }
            if t.tin_deficit <= 0 {
                t.tin_deficit += t.tin_quantum;
            }
            self.cur_tin = (self.cur_tin + 1) % n;
        }
        None
    }

    /// Takes an emptied flow off the rotation (or parks it on the decaying list while COBALT
    /// is still active).
    fn retire_flow(&mut self, ti: usize, fi: usize, now: u64) {
        let mode = self.cfg.flow_mode;
        let t = &mut self.tins[ti];
        let params = t.params;
        if t.flows[fi].cvars.queue_empty(&params, now) {
            t.stats.unresponsive_flows = t.stats.unresponsive_flows.saturating_sub(1);
        }
        let set = t.flows[fi].set;
        match set {
            Set::Bulk => {
                t.stats.bulk_flows -= 1;
                t.host_bulk(fi, mode, false);
            }
            Set::Sparse | Set::SparseWait => t.stats.sparse_flows -= 1,
            Set::Decaying => t.decaying -= 1,
            Set::None => {}
        }
        if t.flows[fi].cvars.active(now) {
            t.chains.push_back(ListId::Decaying, fi);
            t.decaying += 1;
            t.flows[fi].set = Set::Decaying;
        } else {
            t.chains.remove(fi);
            t.flows[fi].set = Set::None;
        }
    }
}

impl Qdisc for Cake {
    fn enqueue(&mut self, pkt: Packet, now: u64) {
        let ti = self
            .cfg
            .diffserv
            .tin_of(pkt.meta.dscp)
            .min(self.tins.len() - 1);
        let mode = self.cfg.flow_mode;
        let flow_hash = self.flow_hash(&pkt.meta);
        let rand = self.rand();
        if self.tins[ti].backlog == 0 {
            let t = &mut self.tins[ti];
            if t.clock.time_next() < now {
                t.clock.set_time_next(now);
            }
            if self.qlen == 0 {
                self.clock.on_idle(now);
            }
        }
        let t = &mut self.tins[ti];
        let fi = t.lookup(flow_hash, &pkt.meta, mode);
        let len = u64::from(pkt.meta.wire_len);
        t.flows[fi].q.push(pkt);
        t.backlog += len;
        self.buffer_used += len;
        self.qlen += 1;
        self.stats.enqueued_packets += 1;
        match t.flows[fi].set {
            Set::None | Set::Decaying => {
                if t.flows[fi].set == Set::Decaying {
                    t.decaying -= 1;
                }
                t.chains.push_back(ListId::New, fi);
                t.stats.sparse_flows += 1;
                t.flows[fi].set = Set::Sparse;
                t.flows[fi].deficit = t.flow_quantum(fi, mode, rand);
                self.stats.new_flows += 1;
            }
            Set::SparseWait => {
                t.flows[fi].set = Set::Bulk;
                t.stats.sparse_flows -= 1;
                t.stats.bulk_flows += 1;
                t.host_bulk(fi, mode, true);
            }
            Set::Sparse | Set::Bulk => {}
        }
        let mut guard = 0;
        while (self.buffer_used > self.buffer_limit || self.qlen > self.cfg.limit_packets as usize)
            && guard < 100_000
            && self.drop_fattest(now)
        {
            guard += 1;
        }
    }

    fn dequeue(&mut self, now: u64) -> Dequeued {
        if self.qlen == 0 {
            return Dequeued::Empty;
        }
        if let Err(t) = self.clock.ready(now) {
            return Dequeued::NotBefore(t);
        }
        let mode = self.cfg.flow_mode;
        let shaped = !self.clock.unlimited();
        let mut first_flow = true;
        let mut ti = None;
        for _ in 0..(4 * QUEUES * self.tins.len() + 64) {
            if self.qlen == 0 {
                return Dequeued::Empty;
            }
            let cur = match ti {
                Some(c) => c,
                None => {
                    let pick = if shaped {
                        self.pick_tin_shaped(now)
                    } else {
                        self.pick_tin_drr()
                    };
                    let Some(c) = pick else {
                        return Dequeued::Empty;
                    };
                    ti = Some(c);
                    c
                }
            };
            let rand = self.rand();
            let t = &mut self.tins[cur];
            let head = [ListId::Decaying, ListId::New, ListId::Old, ListId::Decaying]
                .into_iter()
                .enumerate()
                .find(|&(i, l)| (i > 0 || first_flow) && !t.chains.is_empty(l))
                .map(|(_, l)| l);
            let Some(fi) = head.and_then(|l| t.chains.front(l)) else {
                ti = None;
                continue;
            };
            first_flow = false;
            if t.flows[fi].deficit <= 0 {
                if t.flows[fi].set == Set::Sparse {
                    if t.flows[fi].q.is_empty() {
                        t.flows[fi].set = Set::SparseWait;
                    } else {
                        t.stats.sparse_flows -= 1;
                        t.stats.bulk_flows += 1;
                        t.host_bulk(fi, mode, true);
                        t.flows[fi].set = Set::Bulk;
                    }
                }
                let q = t.flow_quantum(fi, mode, rand);
                t.flows[fi].deficit += q;
                t.chains.push_back(ListId::Old, fi);
                continue;
            }
            // COBALT decides per packet; the last packet of a queue is never dropped.
            let mut out = None;
            while let Some(mut p) = t.flows[fi].q.pop() {
                let len = u64::from(p.meta.wire_len);
                t.backlog -= len;
                self.buffer_used -= len;
                self.qlen -= 1;
                let sojourn = now.saturating_sub(p.meta.rx_ts_ns);
                let params = t.params;
                let r = (self.rng >> 7) as u32 ^ rand;
                let verdict = t.flows[fi].cvars.should_drop(&params, now, sojourn, 0, r);
                let keep = match verdict {
                    Verdict::Pass => true,
                    Verdict::MarkOrDrop => {
                        let m = p.mark_ce();
                        t.stats.ecn_marks += u64::from(m);
                        self.stats.ecn_marks += u64::from(m);
                        m
                    }
                    Verdict::BlueDrop => false,
                };
                if keep || t.flows[fi].q.is_empty() {
                    out = Some((p, sojourn));
                    break;
                }
                t.stats.drops += 1;
                self.stats.aqm_drops += 1;
            }
            let Some((p, delay)) = out else {
                self.retire_flow(cur, fi, now);
                ti = None;
                continue;
            };
            let t = &mut self.tins[cur];
            t.stats.avg_delay_ns = ewma(t.stats.avg_delay_ns, delay, 8);
            let ps = if delay > t.stats.peak_delay_ns { 2 } else { 8 };
            t.stats.peak_delay_ns = ewma(t.stats.peak_delay_ns, delay, ps);
            let bs = if delay < t.stats.base_delay_ns || t.stats.base_delay_ns == 0 {
                2
            } else {
                8
            };
            t.stats.base_delay_ns = ewma(t.stats.base_delay_ns, delay, bs);
            let adj = self.cfg.overhead.adjust(p.meta.wire_len);
            if shaped {
                let d = t.clock.duration(adj);
                let tn = t.clock.time_next();
                if tn < now {
                    t.clock.set_time_next(tn + d);
                } else if tn < now + d {
                    t.clock.set_time_next(now + d);
                }
                self.clock.charge(adj);
            }
            t.flows[fi].deficit -= adj as i32;
            t.tin_deficit -= adj as i32;
            t.stats.sent_packets += 1;
            t.stats.sent_bytes += u64::from(p.meta.wire_len);
            self.stats.count_sent(p.meta.wire_len);
            return Dequeued::Packet(p);
        }
        Dequeued::Empty
    }

    fn len(&self) -> usize {
        self.qlen
    }

    fn backlog_bytes(&self) -> u64 {
        self.buffer_used
    }

    fn stats(&self) -> QdiscStats {
        self.stats
    }

    fn kind(&self) -> QdiscKind {
        QdiscKind::Cake
    }
}

#[cfg(test)]
mod tests;
