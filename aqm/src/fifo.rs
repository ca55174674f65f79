//! A byte-limited tail-drop FIFO (tc's bfifo): the bufferbloat baseline.

use crate::meta::Packet;
use crate::qdisc::{Dequeued, FlowQueue, Qdisc, QdiscKind, QdiscStats};

#[derive(Debug)]
pub struct Fifo {
    q: FlowQueue,
    limit_bytes: u64,
    stats: QdiscStats,
}

impl Fifo {
    /// A FIFO holding at most `limit_bytes` of frames (a frame that does not fit is dropped).
    pub fn new(limit_bytes: u64) -> Self {
        Self {
            q: FlowQueue::default(),
            limit_bytes,
            stats: QdiscStats::default(),
        }
    }
}

impl Qdisc for Fifo {
    fn enqueue(&mut self, pkt: Packet, _now_ns: u64) {
        if self.q.bytes + u64::from(pkt.meta.wire_len) > self.limit_bytes {
            self.stats.overlimit_drops += 1;
            return;
        }
        self.stats.enqueued_packets += 1;
        self.q.push(pkt);
    }

    fn dequeue(&mut self, _now_ns: u64) -> Dequeued {
        match self.q.pop() {
            Some(p) => {
                self.stats.count_sent(p.meta.wire_len);
                Dequeued::Packet(p)
            }
            None => Dequeued::Empty,
        }
    }

    fn len(&self) -> usize {
        self.q.len()
    }

    fn backlog_bytes(&self) -> u64 {
        self.q.bytes
    }

    fn stats(&self) -> QdiscStats {
        self.stats
    }

    fn kind(&self) -> QdiscKind {
        QdiscKind::Fifo
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::meta::PktMeta;

    #[test]
    fn tail_drops_over_the_byte_limit() {
        let mut f = Fifo::new(3000);
        for _ in 0..3 {
            let meta = PktMeta {
                wire_len: 1514,
                ..Default::default()
            };
            f.enqueue(
                Packet {
                    meta,
                    data: Vec::new(),
                },
                0,
            );
        }
        assert_eq!((f.len(), f.stats().overlimit_drops), (1, 2));
        let meta = PktMeta {
            wire_len: 1000,
            ..Default::default()
        };
        f.enqueue(
            Packet {
                meta,
                data: Vec::new(),
            },
            0,
        );
        assert_eq!(f.backlog_bytes(), 2514);
        assert!(matches!(f.dequeue(0), Dequeued::Packet(_)));
    }
}
