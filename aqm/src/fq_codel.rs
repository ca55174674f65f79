//! FQ-CoDel (RFC 8290, Linux `net/sched/sch_fq_codel.c`): 1024 flow queues by flow hash, DRR
//! with a quantum, new (sparse) and old lists, CoDel per flow, batch drop from the fattest flow
//! on overflow, a memory limit and ECN marking. The flow hash comes from the packet's metadata,
//! computed once on receive.

use crate::codel::{CodelCounters, CodelParams, CodelVars, codel_dequeue};
use crate::meta::Packet;
use crate::qdisc::{Dequeued, FlowQueue, Qdisc, QdiscKind, QdiscStats};
use std::collections::VecDeque;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FqCodelConfig {
    pub flows: u32,
    /// DRR quantum in bytes (MTU + Ethernet header).
    pub quantum: u32,
    pub limit_packets: u32,
    /// Bytes of frames queued at most (Linux counts skb truesize; here frame bytes).
    pub memory_limit: u64,
    pub drop_batch: u32,
    pub codel: CodelParams,
}

impl Default for FqCodelConfig {
    /// Linux's defaults: 1024 flows, quantum 1514, limit 10240, 32 MB, batch 64, ECN on.
    fn default() -> Self {
        Self {
            flows: 1024,
            quantum: 1514,
            limit_packets: 10_240,
            memory_limit: 32 << 20,
            drop_batch: 64,
            codel: CodelParams {
                ecn: true,
                ..CodelParams::default()
            },
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum List {
    None,
    New,
    Old,
}

#[derive(Debug)]
struct Flow {
    q: FlowQueue,
    deficit: i32,
    cvars: CodelVars,
    list: List,
}

#[derive(Debug)]
pub struct FqCodel {
    cfg: FqCodelConfig,
    flows: Vec<Flow>,
    new_flows: VecDeque<u32>,
    old_flows: VecDeque<u32>,
    qlen: usize,
    backlog: u64,
    stats: QdiscStats,
    /// Drops because the memory limit (not the packet limit) was hit.
    pub drop_overmemory: u64,
}

/// Linux's `reciprocal_scale`: a 32-bit hash onto `n` buckets without a division.
pub fn reciprocal_scale(hash: u32, n: u32) -> u32 {
    ((u64::from(hash) * u64::from(n)) >> 32) as u32
}

impl FqCodel {
    pub fn new(cfg: FqCodelConfig) -> Self {
        let n = cfg.flows.clamp(1, 65_536);
        let flows = (0..n)
            .map(|_| Flow {
                q: FlowQueue::default(),
                deficit: 0,
                cvars: CodelVars::default(),
                list: List::None,
            })
            .collect();
        Self {
            cfg: FqCodelConfig {
                flows: n,
                quantum: cfg.quantum.max(256),
                ..cfg
            },
            flows,
            new_flows: VecDeque::new(),
            old_flows: VecDeque::new(),
            qlen: 0,
            backlog: 0,
            stats: QdiscStats::default(),
            drop_overmemory: 0,
        }
    }

    /// The queue a packet with this flow hash goes to.
    pub fn flow_index(&self, flow_hash: u32) -> u32 {
        reciprocal_scale(flow_hash, self.cfg.flows)
    }

    /// Head drops from the flow with the largest backlog: up to `drop_batch` packets or half of
    /// its bytes. Returns the flow's index.
    fn drop_from_fattest(&mut self) -> usize {
        let mut fat = 0;
        let mut most = 0;
        for (i, f) in self.flows.iter().enumerate() {
            if f.q.bytes > most {
                most = f.q.bytes;
                fat = i;
            }
        }
        let threshold = most / 2;
        let (mut n, mut bytes) = (0u32, 0u64);
        let f = &mut self.flows[fat];
        while let Some(p) = f.q.pop() {
            bytes += u64::from(p.meta.wire_len);
            n += 1;
            if n >= self.cfg.drop_batch || bytes >= threshold {
                break;
            }
        }
        f.cvars.count = f.cvars.count.saturating_add(n);
        self.qlen -= n as usize;
        self.backlog -= bytes;
        self.stats.overlimit_drops += u64::from(n);
        fat
    }
}

impl Qdisc for FqCodel {
    fn enqueue(&mut self, pkt: Packet, _now_ns: u64) {
        let idx = reciprocal_scale(pkt.meta.flow_hash, self.cfg.flows) as usize;
        let len = u64::from(pkt.meta.wire_len);
        let f = &mut self.flows[idx];
        f.q.push(pkt);
        if f.list == List::None {
            f.list = List::New;
            f.deficit = self.cfg.quantum as i32;
            self.new_flows.push_back(idx as u32);
            self.stats.new_flows += 1;
        }
        self.stats.enqueued_packets += 1;
        self.qlen += 1;
        self.backlog += len;
        let over_memory = self.backlog > self.cfg.memory_limit;
        if self.qlen > self.cfg.limit_packets as usize || over_memory {
            let before = self.stats.overlimit_drops;
            self.drop_from_fattest();
            if over_memory {
                self.drop_overmemory += self.stats.overlimit_drops - before;
            }
        }
    }

    fn dequeue(&mut self, now_ns: u64) -> Dequeued {
        // Each pass returns, or moves/removes one flow: bounded by twice the flows plus one.
        for _ in 0..(2 * self.flows.len() + 2) {
            let from_new = !self.new_flows.is_empty();
            let head = if from_new {
                self.new_flows.front()
            } else {
                self.old_flows.front()
            };
            let Some(&idx) = head else {
                return Dequeued::Empty;
            };
            let i = idx as usize;
            if self.flows[i].deficit <= 0 {
                self.flows[i].deficit += self.cfg.quantum as i32;
                self.pop_front(from_new);
                self.flows[i].list = List::Old;
                self.old_flows.push_back(idx);
                continue;
            }
            let rest = self.backlog - self.flows[i].q.bytes;
            let (len0, bytes0) = (self.flows[i].q.len(), self.flows[i].q.bytes);
            let mut c = CodelCounters::default();
            let f = &mut self.flows[i];
            let pkt = codel_dequeue(
                &mut f.cvars,
                &self.cfg.codel,
                &mut f.q,
                rest,
                now_ns,
                &mut c,
            );
            self.qlen -= len0 - f.q.len();
            self.backlog -= bytes0 - f.q.bytes;
            self.stats.aqm_drops += c.drops;
            self.stats.ecn_marks += c.marks;
            match pkt {
                None => {
                    self.pop_front(from_new);
                    if from_new && !self.old_flows.is_empty() {
                        self.flows[i].list = List::Old;
                        self.old_flows.push_back(idx);
                    } else {
                        self.flows[i].list = List::None;
                    }
                }
                Some(p) => {
                    self.flows[i].deficit -= p.meta.wire_len as i32;
                    self.stats.count_sent(p.meta.wire_len);
                    return Dequeued::Packet(p);
                }
            }
        }
        Dequeued::Empty
    }

    fn len(&self) -> usize {
        self.qlen
    }

    fn backlog_bytes(&self) -> u64 {
        self.backlog
    }

    fn stats(&self) -> QdiscStats {
        self.stats
    }

    fn kind(&self) -> QdiscKind {
        QdiscKind::FqCodel
    }
}

impl FqCodel {
    fn pop_front(&mut self, from_new: bool) {
        if from_new {
            self.new_flows.pop_front();
        } else {
            self.old_flows.pop_front();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::MS;
    use crate::meta::PktMeta;

    /// Flow hashes that land in distinct queues.
    fn hash_for(q: &FqCodel, want: u32) -> u32 {
        (0..u32::MAX)
            .step_by(65_537)
            .find(|h| q.flow_index(*h) == want)
            .unwrap_or(0)
    }

    fn pkt(hash: u32, len: u32, ts: u64) -> Packet {
        Packet {
            meta: PktMeta {
                flow_hash: hash,
                wire_len: len,
                rx_ts_ns: ts,
                ..Default::default()
            },
            data: Vec::new(),
        }
    }

    #[test]
    fn sparse_flow_jumps_the_bulk_queue() {
        let mut q = FqCodel::new(FqCodelConfig::default());
        let (bulk, sparse) = (hash_for(&q, 1), hash_for(&q, 2));
        for _ in 0..100 {
            q.enqueue(pkt(bulk, 1514, 0), 0);
        }
        // Serve the bulk flow past its first quantum, so it is on the old list.
        for _ in 0..3 {
            assert!(matches!(q.dequeue(MS), Dequeued::Packet(_)));
        }
        q.enqueue(pkt(sparse, 100, MS), MS);
        match q.dequeue(MS) {
            Dequeued::Packet(p) => {
                assert_eq!(p.meta.flow_hash, sparse, "sparse packet must go next")
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(q.stats().new_flows, 2);
    }

    #[test]
    fn drr_shares_bytes_between_bulk_flows() {
        let mut q = FqCodel::new(FqCodelConfig::default());
        let (a, b) = (hash_for(&q, 10), hash_for(&q, 20));
        for _ in 0..400 {
            q.enqueue(pkt(a, 1514, 0), 0);
            q.enqueue(pkt(b, 300, 0), 0);
            q.enqueue(pkt(b, 300, 0), 0);
            q.enqueue(pkt(b, 300, 0), 0);
            q.enqueue(pkt(b, 300, 0), 0);
            q.enqueue(pkt(b, 300, 0), 0);
        }
        let (mut ba, mut bb) = (0u64, 0u64);
        for _ in 0..300 {
            if let Dequeued::Packet(p) = q.dequeue(0) {
                if p.meta.flow_hash == a {
                    ba += 1514
                } else {
                    bb += 300
                }
            }
        }
        let ratio = ba as f64 / bb as f64;
        assert!((0.9..1.1).contains(&ratio), "byte share {ba}:{bb}");
    }

    #[test]
    fn overflow_drops_from_the_fattest_flow() {
        let cfg = FqCodelConfig {
            limit_packets: 100,
            ..Default::default()
        };
        let mut q = FqCodel::new(cfg);
        let (fat, thin) = (hash_for(&q, 3), hash_for(&q, 4));
        for _ in 0..5 {
            q.enqueue(pkt(thin, 1514, 0), 0);
        }
        for _ in 0..96 {
            q.enqueue(pkt(fat, 1514, 0), 0);
        }
        // 101 packets > 100: half the fat flow's bytes go in one batch, the thin flow keeps all.
        assert_eq!(q.stats().overlimit_drops, 48);
        assert_eq!(q.len(), 101 - 48);
        let mut thin_left = 0;
        while let Dequeued::Packet(p) = q.dequeue(0) {
            thin_left += usize::from(p.meta.flow_hash == thin);
        }
        assert_eq!(thin_left, 5);
    }

    #[test]
    fn memory_limit_counts_bytes() {
        let cfg = FqCodelConfig {
            memory_limit: 30_000,
            ..Default::default()
        };
        let mut q = FqCodel::new(cfg);
        let h = hash_for(&q, 7);
        for _ in 0..100 {
            q.enqueue(pkt(h, 1514, 0), 0);
        }
        assert!(q.backlog_bytes() <= 30_000);
        assert!(q.drop_overmemory > 0);
    }
}
