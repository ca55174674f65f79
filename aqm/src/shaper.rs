//! CAKE's deficit-mode shaper (a virtual clock, no burst credit) with overhead compensation, and
//! `Shaped<Q>`, which puts it in front of any qdisc (fifo, codel, fq_codel at a set rate).

use crate::meta::Packet;
use crate::qdisc::{Dequeued, Qdisc, QdiscKind, QdiscStats};

/// Link-layer framing for overhead compensation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Framing {
    #[default]
    None,
    /// ATM cells: `ceil(len/48) * 53`.
    Atm,
    /// PTM (VDSL2): one byte per 64.
    Ptm,
}

/// How the shaper counts a packet's length (`cake_calc_overhead`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Overhead {
    /// Remove the 14-byte Ethernet header before adding `overhead` (any keyword but `raw`).
    pub strip_mac: bool,
    pub overhead: i32,
    /// Minimum counted size.
    pub mpu: u32,
    pub framing: Framing,
}

impl Overhead {
    /// `raw` (the default): the frame length as received, Ethernet header included.
    pub fn raw() -> Self {
        Self::default()
    }

    /// tc-cake's keywords: raw, ethernet, docsis, conservative, pppoe-ptm, bridged-ptm, or a
    /// plain number of bytes.
    pub fn keyword(s: &str) -> Option<Self> {
        let o = |overhead, mpu, framing| Overhead {
            strip_mac: true,
            overhead,
            mpu,
            framing,
        };
        Some(match s {
            "raw" => Self::raw(),
            "ethernet" => o(38, 84, Framing::None),
            "docsis" => o(18, 64, Framing::None),
            "conservative" => o(48, 0, Framing::Atm),
            "pppoe-ptm" => o(30, 0, Framing::Ptm),
            "bridged-ptm" => o(22, 0, Framing::Ptm),
            n => o(
                n.parse().ok().filter(|v: &i32| (-64..=256).contains(v))?,
                0,
                Framing::None,
            ),
        })
    }

    /// The length the shaper charges for a frame of `wire_len` bytes.
    pub fn adjust(&self, wire_len: u32) -> u32 {
        let mut len = i64::from(wire_len);
        if self.strip_mac {
            len -= 14;
        }
        len = (len + i64::from(self.overhead))
            .max(i64::from(self.mpu))
            .max(1);
        len = match self.framing {
            Framing::None => len,
            Framing::Atm => (len + 47) / 48 * 53,
            Framing::Ptm => len + (len + 63) / 64,
        };
        u32::try_from(len).unwrap_or(u32::MAX)
    }
}

/// A rate as time per byte: the next packet may leave at `time_next`, which advances by each
/// packet's serialisation time; when idle the clock is pulled up to now (no accumulated burst).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VirtualClock {
    /// ns per byte in Q16 fixed point; 0 = unlimited.
    ns_per_byte_q16: u64,
    time_next: u64,
    failsafe_next: u64,
}

impl VirtualClock {
    /// `rate_bps` bits per second, `None` = unlimited.
    pub fn new(rate_bps: Option<u64>) -> Self {
        let ns_per_byte_q16 = match rate_bps {
            Some(r) if r >= 8 => {
                ((8_000_000_000u128 << 16) / u128::from(r)).min(u128::from(u64::MAX >> 20)) as u64
            }
            _ => 0,
        };
        Self {
            ns_per_byte_q16,
            time_next: 0,
            failsafe_next: 0,
        }
    }

    pub fn unlimited(&self) -> bool {
        self.ns_per_byte_q16 == 0
    }

    /// Serialisation time of `len` bytes.
    pub fn duration(&self, len: u32) -> u64 {
        (u64::from(len) * self.ns_per_byte_q16) >> 16
    }

    /// `Err(t)` while the shaper holds packets until `t`.
    pub fn ready(&self, now: u64) -> Result<(), u64> {
        if self.time_next > now && self.failsafe_next > now {
            Err(self.time_next.min(self.failsafe_next))
        } else {
            Ok(())
        }
    }

    /// A packet arrives at an empty queue: no credit for the idle time.
    pub fn on_idle(&mut self, now: u64) {
        if self.time_next < now {
            self.time_next = now;
            self.failsafe_next = now;
        }
    }

    /// Charges a sent packet of `len` (adjusted) bytes; the failsafe clock runs at 1.5x the
    /// packet time so a wedged clock cannot hold the queue forever.
    pub fn charge(&mut self, len: u32) {
        let d = self.duration(len);
        self.time_next += d;
        self.failsafe_next += d + d / 2;
    }

    pub fn time_next(&self) -> u64 {
        self.time_next
    }

    /// Sets the clock (CAKE's per-tin clock logic advances it itself).
    pub fn set_time_next(&mut self, t: u64) {
        self.time_next = t;
    }
}

/// Any qdisc behind a deficit-mode shaper.
#[derive(Debug)]
pub struct Shaped<Q> {
    inner: Q,
    clock: VirtualClock,
    overhead: Overhead,
    overlimits: u64,
}

impl<Q: Qdisc> Shaped<Q> {
    pub fn new(inner: Q, rate_bps: Option<u64>, overhead: Overhead) -> Self {
        Self {
            inner,
            clock: VirtualClock::new(rate_bps),
            overhead,
            overlimits: 0,
        }
    }

    pub fn inner(&self) -> &Q {
        &self.inner
    }

    /// Times the shaper held a non-empty queue.
    pub fn overlimits(&self) -> u64 {
        self.overlimits
    }
}

impl<Q: Qdisc> Qdisc for Shaped<Q> {
    fn enqueue(&mut self, pkt: Packet, now_ns: u64) {
        if self.inner.is_empty() {
            self.clock.on_idle(now_ns);
        }
        self.inner.enqueue(pkt, now_ns);
    }

    fn dequeue(&mut self, now_ns: u64) -> Dequeued {
        if self.inner.is_empty() {
            return Dequeued::Empty;
        }
        if let Err(t) = self.clock.ready(now_ns) {
            self.overlimits += 1;
            return Dequeued::NotBefore(t);
        }
        let d = self.inner.dequeue(now_ns);
        if let Dequeued::Packet(p) = &d {
            self.clock.charge(self.overhead.adjust(p.meta.wire_len));
        }
        d
    }

    fn len(&self) -> usize {
        self.inner.len()
    }

    fn backlog_bytes(&self) -> u64 {
        self.inner.backlog_bytes()
    }

    fn stats(&self) -> QdiscStats {
        self.inner.stats()
    }

    fn kind(&self) -> QdiscKind {
        self.inner.kind()
    }
}

/// Drives `q` on a simulated clock until `bytes` have been sent or `deadline` passes, jumping to
/// each release time the shaper gives; returns (bytes sent, time of the last send). For tests
/// and benchmarks.
pub fn drain_simulated<Q: Qdisc + ?Sized>(q: &mut Q, start: u64, deadline: u64) -> (u64, u64) {
    let (mut now, mut sent, mut last) = (start, 0u64, start);
    let mut steps = 0u64;
    while now <= deadline && steps < 100_000_000 {
        steps += 1;
        match q.dequeue(now) {
            Dequeued::Packet(p) => {
                sent += u64::from(p.meta.wire_len);
                last = now;
            }
            Dequeued::NotBefore(t) => now = t.max(now + 1),
            Dequeued::Empty => break,
        }
    }
    (sent, last)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fifo::Fifo;
    use crate::meta::PktMeta;

    #[test]
    fn overhead_keywords() {
        assert_eq!(Overhead::raw().adjust(1514), 1514);
        assert_eq!(Overhead::keyword("ethernet").unwrap().adjust(1514), 1538);
        assert_eq!(Overhead::keyword("ethernet").unwrap().adjust(60), 84);
        // 1500-byte IP packet + 48 over ATM: 1548 → 33 cells of 53 bytes.
        assert_eq!(
            Overhead::keyword("conservative").unwrap().adjust(1514),
            33 * 53
        );
        assert_eq!(
            Overhead::keyword("pppoe-ptm").unwrap().adjust(1514),
            1530 + 24
        );
        assert!(Overhead::keyword("bogus").is_none());
    }

    #[test]
    fn shaped_fifo_rate_within_one_percent() {
        for (rate, len) in [
            (50_000_000u64, 1514u32),
            (10_000_000, 64),
            (900_000_000, 1000),
        ] {
            let mut q = Shaped::new(Fifo::new(u64::MAX), Some(rate), Overhead::raw());
            for _ in 0..5000 {
                let meta = PktMeta {
                    wire_len: len,
                    ..Default::default()
                };
                q.enqueue(
                    Packet {
                        meta,
                        data: Vec::new(),
                    },
                    1_000,
                );
            }
            let (sent, last) = drain_simulated(&mut q, 1_000, u64::MAX / 2);
            // The last packet leaves one packet time before the byte total is "paid".
            let secs = (last - 1_000) as f64 / 1e9 + f64::from(len) * 8.0 / rate as f64;
            let got = sent as f64 * 8.0 / secs;
            assert!((got / rate as f64 - 1.0).abs() < 0.01, "{rate}: {got}");
        }
    }
}
