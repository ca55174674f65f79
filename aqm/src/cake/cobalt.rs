//! COBALT, CAKE's per-flow AQM: CoDel's control law without `first_above_time` (the count
//! decays one step per interval instead), plus BLUE for flows that do not respond.

/// Per-tin COBALT parameters (derived from the tin rate by `CakeTin::set_rate`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CobaltParams {
    pub target_ns: u64,
    pub interval_ns: u64,
    /// Serialisation time of one MTU at the tin's rate (0 when unlimited).
    pub mtu_time_ns: u64,
    /// BLUE increment and decrement of the drop probability (Q0.32).
    pub p_inc: u32,
    pub p_dec: u32,
}

impl CobaltParams {
    /// `cake_set_rate`: target at least 1.5 MTU times, interval at least twice the target.
    pub fn new(rtt_ns: u64, target_ns: u64, mtu_time_ns: u64) -> Self {
        let t = target_ns.max(mtu_time_ns * 3 / 2);
        Self {
            target_ns: t,
            interval_ns: (rtt_ns + t).saturating_sub(target_ns).max(2 * t),
            mtu_time_ns,
            p_inc: 1 << 24,
            p_dec: 1 << 20,
        }
    }
}

/// Per-flow COBALT state.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Cobalt {
    pub count: u32,
    pub drop_next: u64,
    pub blue_timer: u64,
    pub p_drop: u32,
    pub dropping: bool,
    pub ecn_marked: bool,
}

fn control(t: u64, interval: u64, count: u32) -> u64 {
    t + (interval as f64 / f64::from(count.max(1)).sqrt()) as u64
}

/// What `should_drop` decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Pass,
    /// CoDel part: mark CE if the packet is ECN-capable, else drop.
    MarkOrDrop,
    /// BLUE: drop (deliberately no ECN).
    BlueDrop,
}

impl Cobalt {
    /// The dequeue-time decision for a packet that waited `sojourn_ns`. `bulk_flows` only
    /// matters in ingress mode (else pass 0). `rand` is a uniform u32 for BLUE.
    pub fn should_drop(
        &mut self,
        p: &CobaltParams,
        now: u64,
        sojourn_ns: u64,
        bulk_flows: u64,
        rand: u32,
    ) -> Verdict {
        let over = sojourn_ns > p.target_ns
            && sojourn_ns > p.mtu_time_ns * bulk_flows * 2
            && sojourn_ns > p.mtu_time_ns * 4;
        let mut next_due = self.count > 0 && now >= self.drop_next;
        self.ecn_marked = false;
        if over {
            if !self.dropping {
                self.dropping = true;
                self.drop_next = control(now, p.interval_ns, self.count);
            }
            if self.count == 0 {
                self.count = 1;
            }
        } else if self.dropping {
            self.dropping = false;
        }
        let mut verdict = Verdict::Pass;
        if next_due && self.dropping {
            verdict = Verdict::MarkOrDrop;
            self.count = self.count.saturating_add(1);
            self.drop_next = control(self.drop_next, p.interval_ns, self.count);
        } else {
            // The count relaxes by one per control interval; bounded by the count.
            while next_due {
                self.count -= 1;
                self.drop_next = control(self.drop_next, p.interval_ns, self.count);
                next_due = self.count > 0 && now >= self.drop_next;
            }
        }
        if self.p_drop > 0 && verdict == Verdict::Pass && rand < self.p_drop {
            verdict = Verdict::BlueDrop;
        }
        if self.count == 0 {
            self.drop_next = now + p.interval_ns;
        } else if now > self.drop_next && verdict == Verdict::Pass {
            self.drop_next = now;
        }
        verdict
    }

    /// The queue overflowed and this flow lost its head: BLUE turns up, CoDel starts now.
    /// True if the flow just became "unresponsive" (p_drop left 0).
    pub fn queue_full(&mut self, p: &CobaltParams, now: u64) -> bool {
        let mut up = false;
        if now.saturating_sub(self.blue_timer) > p.target_ns {
            up = self.p_drop == 0;
            self.p_drop = self.p_drop.saturating_add(p.p_inc);
            self.blue_timer = now;
        }
        self.dropping = true;
        self.drop_next = now;
        if self.count == 0 {
            self.count = 1;
        }
        up
    }

    /// Dequeue found the flow empty: BLUE turns down, the count decays. True if the flow
    /// stopped being unresponsive.
    pub fn queue_empty(&mut self, p: &CobaltParams, now: u64) -> bool {
        let mut down = false;
        if self.p_drop > 0 && now.saturating_sub(self.blue_timer) > p.target_ns {
            self.p_drop = self.p_drop.saturating_sub(p.p_dec);
            self.blue_timer = now;
            down = self.p_drop == 0;
        }
        self.dropping = false;
        if self.count > 0 && now >= self.drop_next {
            self.count -= 1;
            self.drop_next = control(self.drop_next, p.interval_ns, self.count);
        }
        down
    }

    /// Still doing something: keep the flow on the decaying list.
    pub fn active(&self, now: u64) -> bool {
        self.p_drop > 0 || self.count > 0 || now < self.drop_next
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::MS;

    #[test]
    fn params_follow_cake_set_rate() {
        let p = CobaltParams::new(100 * MS, 5 * MS, 0);
        assert_eq!((p.target_ns, p.interval_ns), (5 * MS, 100 * MS));
        // 1 Mbit/s: an MTU takes 12 ms, so target grows to 18 ms and interval to 113 ms.
        let q = CobaltParams::new(100 * MS, 5 * MS, 12 * MS);
        assert_eq!((q.target_ns, q.interval_ns), (18 * MS, 113 * MS));
    }

    #[test]
    fn marks_on_schedule_then_relaxes() {
        let p = CobaltParams::new(100 * MS, 5 * MS, 0);
        let mut c = Cobalt::default();
        let mut signals = Vec::new();
        for t in 0..400u64 {
            let now = t * MS;
            if c.should_drop(&p, now, 20 * MS, 0, u32::MAX) != Verdict::Pass {
                signals.push(t);
            }
        }
        // Over target from t=0: first signal one interval later, then interval/√count.
        assert_eq!(signals[0], 100);
        assert!((signals[1] - signals[0]) as f64 - 100.0 / 2f64.sqrt() <= 1.0);
        let count = c.count;
        // Below target: the count decays one per (shrinking) interval instead of resetting.
        for t in 400..2400u64 {
            c.should_drop(&p, t * MS, MS, 0, u32::MAX);
        }
        assert!(c.count < count);
    }

    #[test]
    fn blue_rises_on_overflow_and_falls_when_empty() {
        let p = CobaltParams::new(100 * MS, 5 * MS, 0);
        let mut c = Cobalt::default();
        assert!(c.queue_full(&p, 10 * MS));
        assert_eq!(c.p_drop, 1 << 24);
        c.queue_full(&p, 11 * MS); // within target of the last change: no step
        assert_eq!(c.p_drop, 1 << 24);
        assert_eq!(c.should_drop(&p, 12 * MS, 0, 0, 0), Verdict::BlueDrop);
        let mut now = 20 * MS;
        for _ in 0..10 {
            now += 6 * MS;
            c.queue_empty(&p, now);
        }
        assert_eq!(c.p_drop, (1 << 24) - 10 * (1 << 20));
    }
}
