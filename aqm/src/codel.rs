//! CoDel (RFC 8289), following Linux `include/net/codel_impl.h`: the per-queue state machine
//! and control law `drop_next = t + interval/√count`, used alone and per flow by FQ-CoDel. The
//! sojourn time is measured from the packet's receive timestamp, not from enqueue.

use crate::MS;
use crate::meta::Packet;
use crate::qdisc::{Dequeued, FlowQueue, Qdisc, QdiscKind, QdiscStats};

/// CoDel's parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CodelParams {
    /// Acceptable standing queue delay (5 ms).
    pub target_ns: u64,
    /// Window over which the delay must stay above target before dropping (100 ms).
    pub interval_ns: u64,
    /// Never drop while the queue holds at most this many bytes (one MTU frame).
    pub mtu_bytes: u64,
    /// Mark ECN-capable packets with CE instead of dropping them.
    pub ecn: bool,
    /// Linux extra: mark CE whenever the sojourn exceeds this, whatever the state.
    pub ce_threshold_ns: Option<u64>,
}

impl Default for CodelParams {
    /// Plain `codel`: ECN off.
    fn default() -> Self {
        Self {
            target_ns: 5 * MS,
            interval_ns: 100 * MS,
            mtu_bytes: 1514,
            ecn: false,
            ce_threshold_ns: None,
        }
    }
}

/// `interval / √count`, the spacing of the next drop.
pub fn control_law(t: u64, interval_ns: u64, count: u32) -> u64 {
    t + (interval_ns as f64 / f64::from(count.max(1)).sqrt()) as u64
}

/// Per-queue CoDel state.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CodelVars {
    pub first_above_time: u64,
    pub drop_next: u64,
    pub count: u32,
    pub lastcount: u32,
    pub dropping: bool,
    /// Sojourn of the last packet dequeued.
    pub ldelay: u64,
}

/// Drops and marks made by one call.
#[derive(Debug, Clone, Copy, Default)]
pub struct CodelCounters {
    pub drops: u64,
    pub marks: u64,
}

fn should_drop(
    v: &mut CodelVars,
    p: &CodelParams,
    pkt: Option<&Packet>,
    now: u64,
    backlog_after: u64,
) -> bool {
    let Some(pkt) = pkt else {
        v.first_above_time = 0;
        return false;
    };
    v.ldelay = now.saturating_sub(pkt.meta.rx_ts_ns);
    if v.ldelay < p.target_ns || backlog_after <= p.mtu_bytes {
        v.first_above_time = 0;
        return false;
    }
    if v.first_above_time == 0 {
        v.first_above_time = now + p.interval_ns;
        return false;
    }
    now >= v.first_above_time
}

/// RFC 8289 `dequeue()` over one queue. `rest_backlog` is what the rest of the qdisc holds
/// (FQ-CoDel: the other flows), so "at most one MTU queued" is judged on the whole qdisc as
/// Linux does. The loop is bounded by the queue length.
pub fn codel_dequeue(
    v: &mut CodelVars,
    p: &CodelParams,
    q: &mut FlowQueue,
    rest_backlog: u64,
    now: u64,
    c: &mut CodelCounters,
) -> Option<Packet> {
    let mut pkt = q.pop();
    if pkt.is_none() {
        v.dropping = false;
        return None;
    }
    let drop = should_drop(v, p, pkt.as_ref(), now, q.bytes + rest_backlog);
    if v.dropping {
        if !drop {
            v.dropping = false;
        } else if now >= v.drop_next {
            while v.dropping && now >= v.drop_next {
                v.count = v.count.saturating_add(1);
                if let Some(pk) = pkt.as_mut() {
                    if p.ecn && pk.mark_ce() {
                        c.marks += 1;
                        v.drop_next = control_law(v.drop_next, p.interval_ns, v.count);
                        return pkt;
                    }
                }
                c.drops += 1;
                pkt = q.pop();
                if !should_drop(v, p, pkt.as_ref(), now, q.bytes + rest_backlog) {
                    v.dropping = false;
                } else {
                    v.drop_next = control_law(v.drop_next, p.interval_ns, v.count);
                }
            }
        }
    } else if drop {
        let marked = match pkt.as_mut() {
            Some(pk) if p.ecn => pk.mark_ce(),
            _ => false,
        };
        if marked {
            c.marks += 1;
        } else {
            c.drops += 1;
            pkt = q.pop();
            // Called for its side effect on first_above_time, as Linux does.
            let _ = should_drop(v, p, pkt.as_ref(), now, q.bytes + rest_backlog);
        }
        v.dropping = true;
        let delta = v.count.wrapping_sub(v.lastcount);
        v.count = if delta > 1 && now.wrapping_sub(v.drop_next) < 16 * p.interval_ns {
            delta
        } else {
            1
        };
        v.lastcount = v.count;
        v.drop_next = control_law(now, p.interval_ns, v.count);
    }
    if let (Some(pk), Some(ce)) = (pkt.as_mut(), p.ce_threshold_ns) {
        if now.saturating_sub(pk.meta.rx_ts_ns) > ce && pk.mark_ce() {
            c.marks += 1;
        }
    }
    pkt
}

/// The `codel` qdisc: one queue, tail drop at a byte limit.
#[derive(Debug)]
pub struct Codel {
    q: FlowQueue,
    vars: CodelVars,
    params: CodelParams,
    limit_bytes: u64,
    stats: QdiscStats,
}

impl Codel {
    pub fn new(params: CodelParams, limit_bytes: u64) -> Self {
        Self {
            q: FlowQueue::default(),
            vars: CodelVars::default(),
            params,
            limit_bytes,
            stats: QdiscStats::default(),
        }
    }

    pub fn vars(&self) -> &CodelVars {
        &self.vars
    }
}

impl Qdisc for Codel {
    fn enqueue(&mut self, pkt: Packet, _now_ns: u64) {
        if self.q.bytes + u64::from(pkt.meta.wire_len) > self.limit_bytes {
            self.stats.overlimit_drops += 1;
            return;
        }
        self.stats.enqueued_packets += 1;
        self.q.push(pkt);
    }

    fn dequeue(&mut self, now_ns: u64) -> Dequeued {
        let mut c = CodelCounters::default();
        let p = codel_dequeue(&mut self.vars, &self.params, &mut self.q, 0, now_ns, &mut c);
        self.stats.aqm_drops += c.drops;
        self.stats.ecn_marks += c.marks;
        match p {
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
        QdiscKind::Codel
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::meta::{Ecn, PktMeta};

    fn pkt(ts: u64) -> Packet {
        Packet {
            meta: PktMeta {
                rx_ts_ns: ts,
                wire_len: 1514,
                ..Default::default()
            },
            data: Vec::new(),
        }
    }

    /// A queue that always holds a 50 ms standing queue, served at one packet per ms: CoDel must
    /// start dropping after one interval above target and space its drops interval/√count.
    #[test]
    fn drop_schedule_is_interval_over_sqrt_count() {
        let mut c = Codel::new(CodelParams::default(), u64::MAX);
        let mut drop_times = Vec::new();
        let mut last_drops = 0;
        let mut now = 0;
        for _ in 0..1500 {
            now += MS;
            // Arrivals keep the queue 50 packets (50 ms) deep.
            while c.len() < 50 {
                c.enqueue(pkt(now), now);
            }
            // Every packet waited ≥ target.
            let _ = c.dequeue(now);
            let d = c.stats().aqm_drops;
            if d > last_drops {
                drop_times.push(now);
                last_drops = d;
            }
        }
        assert!(drop_times.len() >= 5, "{drop_times:?}");
        // The first drop comes one interval after the delay went above target.
        assert!(
            drop_times[0] >= 100 * MS && drop_times[0] <= 110 * MS,
            "{drop_times:?}"
        );
        // Gaps shrink as 100 ms/√count (± 1 ms of the 1 ms service tick).
        for (i, w) in drop_times.windows(2).enumerate().take(8) {
            let want = 100.0 / ((i + 1) as f64).sqrt();
            let got = (w[1] - w[0]) as f64 / MS as f64;
            assert!(
                (got - want).abs() <= 1.01,
                "gap after drop {}: {got} ms, want {want}",
                i + 1
            );
        }
    }

    #[test]
    fn short_queue_never_drops() {
        let mut c = Codel::new(CodelParams::default(), u64::MAX);
        for t in 0..1000u64 {
            let now = t * MS;
            // 20 ms old packet but alone in the queue: at most one MTU, never dropped.
            c.enqueue(pkt(now.saturating_sub(20 * MS)), now);
            assert!(matches!(c.dequeue(now), Dequeued::Packet(_)));
        }
        assert_eq!(c.stats().aqm_drops, 0);
    }

    #[test]
    fn ecn_capable_packets_are_marked_not_dropped() {
        let params = CodelParams {
            ecn: true,
            ..Default::default()
        };
        let mut c = Codel::new(params, u64::MAX);
        let mut now = 0;
        for i in 0..600u64 {
            now = i * MS;
            while c.len() < 50 {
                let mut p = pkt(now.saturating_sub(50 * MS));
                p.meta.ecn = Ecn::Ect0;
                p.meta.ip_version = 4;
                c.enqueue(p, now);
            }
            let _ = c.dequeue(now);
        }
        let s = c.stats();
        assert!(s.ecn_marks > 3, "{s:?} at {now}");
        assert_eq!(s.aqm_drops, 0);
    }
}
