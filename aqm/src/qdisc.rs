//! The interface every queue discipline here implements, its counters, and the per-flow queue.

use crate::meta::Packet;
use std::collections::VecDeque;

/// What `dequeue` gives.
#[derive(Debug)]
pub enum Dequeued {
    Packet(Packet),
    /// Nothing queued.
    Empty,
    /// Packets are queued but the shaper holds them until this time (ns).
    NotBefore(u64),
}

/// Counters every qdisc keeps (a subset of what `tc -s` shows).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QdiscStats {
    pub enqueued_packets: u64,
    pub sent_packets: u64,
    pub sent_bytes: u64,
    /// Dropped by the AQM (CoDel / COBALT) at dequeue.
    pub aqm_drops: u64,
    /// Dropped because the queue was over its packet or memory limit.
    pub overlimit_drops: u64,
    pub ecn_marks: u64,
    /// FQ-CoDel / CAKE: flows that arrived empty and were served as new (sparse) flows.
    pub new_flows: u64,
}

impl QdiscStats {
    pub fn drops(&self) -> u64 {
        self.aqm_drops + self.overlimit_drops
    }

    /// Counts one packet handed to the link (`wire_len` bytes on the wire).
    pub fn count_sent(&mut self, wire_len: u32) {
        self.sent_packets += 1;
        self.sent_bytes += u64::from(wire_len);
    }
}

/// Which discipline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum QdiscKind {
    Fifo,
    Codel,
    FqCodel,
    Cake,
}

impl QdiscKind {
    pub const ALL: [QdiscKind; 4] = [
        QdiscKind::Fifo,
        QdiscKind::Codel,
        QdiscKind::FqCodel,
        QdiscKind::Cake,
    ];

    /// tc's name for it.
    pub fn name(self) -> &'static str {
        match self {
            QdiscKind::Fifo => "fifo",
            QdiscKind::Codel => "codel",
            QdiscKind::FqCodel => "fq_codel",
            QdiscKind::Cake => "cake",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.name() == s)
    }
}

impl std::fmt::Display for QdiscKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A queue discipline fed with packets whose metadata was filled on receive.
pub trait Qdisc: Send {
    /// Queues `pkt`; may drop it or others (counted in `stats`).
    fn enqueue(&mut self, pkt: Packet, now_ns: u64);
    /// The next packet to send at `now_ns`, if any and if the shaper allows.
    fn dequeue(&mut self, now_ns: u64) -> Dequeued;
    /// Packets queued.
    fn len(&self) -> usize;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Bytes queued (wire length).
    fn backlog_bytes(&self) -> u64;
    fn stats(&self) -> QdiscStats;
    fn kind(&self) -> QdiscKind;
}

/// One FIFO of packets with its byte count.
#[derive(Debug, Default)]
pub struct FlowQueue {
    pub pkts: VecDeque<Packet>,
    pub bytes: u64,
}

impl FlowQueue {
    pub fn push(&mut self, p: Packet) {
        self.bytes += u64::from(p.meta.wire_len);
        self.pkts.push_back(p);
    }

    pub fn pop(&mut self) -> Option<Packet> {
        let p = self.pkts.pop_front()?;
        self.bytes -= u64::from(p.meta.wire_len);
        Some(p)
    }

    pub fn len(&self) -> usize {
        self.pkts.len()
    }

    pub fn is_empty(&self) -> bool {
        self.pkts.is_empty()
    }
}
