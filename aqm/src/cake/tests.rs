//! CAKE's documented behaviour on a simulated clock.

use super::*;
use crate::shaper::drain_simulated;

fn pkt(flow: u32, src: u32, dst: u32, len: u32, dscp: u8, ts: u64) -> Packet {
    Packet {
        meta: PktMeta {
            flow_hash: flow,
            src_host_hash: src,
            dst_host_hash: dst,
            wire_len: len,
            dscp,
            rx_ts_ns: ts,
            ..Default::default()
        },
        data: Vec::new(),
    }
}

/// Host A runs 8 bulk flows, host B one: triple-isolate gives each host half the bytes, per-flow
/// mode gives A 8/9.
#[test]
fn host_fairness() {
    for (mode, want_a) in [
        (FlowMode::TripleIsolate, 0.5),
        (FlowMode::DualSrcHost, 0.5),
        (FlowMode::Flows, 8.0 / 9.0),
    ] {
        let mut c = Cake::new(CakeConfig {
            flow_mode: mode,
            diffserv: DiffservMode::Besteffort,
            ..Default::default()
        });
        for i in 0..2400u32 {
            let f = i % 8;
            c.enqueue(pkt(1000 + f * 7919, 0xA, 0xC0 + f, 1514, 0, 0), 0);
            c.enqueue(pkt(555_555, 0xB, 0xD0, 1514, 0, 0), 0);
        }
        let (mut a, mut b) = (0u64, 0u64);
        for i in 0..2000 {
            if let Dequeued::Packet(p) = c.dequeue(0) {
                // Skip the first round, where every flow is still new (sparse).
                if i > 100 {
                    if p.meta.src_host_hash == 0xA {
                        a += 1
                    } else {
                        b += 1
                    }
                }
            }
        }
        let share = a as f64 / (a + b) as f64;
        assert!(
            (share - want_a).abs() < 0.05,
            "{mode:?}: host A share {share}"
        );
    }
}

#[test]
fn sparse_flow_goes_first() {
    let mut c = Cake::new(CakeConfig {
        diffserv: DiffservMode::Besteffort,
        ..Default::default()
    });
    for _ in 0..50 {
        c.enqueue(pkt(1, 1, 2, 1514, 0, 0), 0);
    }
    for _ in 0..3 {
        assert!(matches!(c.dequeue(0), Dequeued::Packet(_)));
    }
    c.enqueue(pkt(99, 3, 4, 100, 0, 0), 0);
    match c.dequeue(0) {
        Dequeued::Packet(p) => assert_eq!(p.meta.flow_hash, 99),
        other => panic!("{other:?}"),
    }
}

#[test]
fn set_associative_hash_separates_colliding_flows() {
    let mut c = Cake::new(CakeConfig {
        diffserv: DiffservMode::Besteffort,
        flow_mode: FlowMode::Flows,
        ..Default::default()
    });
    // Same bucket (hash % 1024), different tags: 8 ways give each its own queue.
    for k in 0..8u32 {
        c.enqueue(pkt(5 + 1024 * k, 1, 2, 1000, 0, 0), 0);
    }
    let s = c.tin_stats()[0];
    // The first takes its home way (a miss too, as in Linux), the others the free ways.
    assert_eq!(s.way_misses, 8, "{s:?}");
    assert_eq!(s.way_collisions, 0);
    assert_eq!(s.sparse_flows, 8);
    // A ninth collides.
    c.enqueue(pkt(5 + 1024 * 8, 1, 2, 1000, 0, 0), 0);
    assert_eq!(c.tin_stats()[0].way_collisions, 1);
    // A known flow in a non-home way is found again by its tag.
    c.enqueue(pkt(5 + 1024 * 3, 1, 2, 1000, 0, 0), 0);
    assert_eq!(c.tin_stats()[0].way_hits, 1);
}

#[test]
fn shaper_rate_within_one_percent_with_overhead() {
    for (rate, len, oh) in [
        (50_000_000u64, 1514u32, Overhead::raw()),
        (20_000_000, 64, Overhead::raw()),
        (
            100_000_000,
            1514,
            Overhead::keyword("ethernet").unwrap_or_default(),
        ),
        (
            8_000_000,
            600,
            Overhead::keyword("conservative").unwrap_or_default(),
        ),
    ] {
        let cfg = CakeConfig {
            rate_bps: Some(rate),
            overhead: oh,
            diffserv: DiffservMode::Besteffort,
            memory_limit: Some(u64::MAX),
            ..Default::default()
        };
        let mut c = Cake::new(cfg);
        let n = 4000;
        for i in 0..n {
            c.enqueue(pkt(i % 4, 1, 2, len, 0, 0), 0);
        }
        // Deep queue: COBALT would drop; the rx stamp moves with the clock so it does not.
        let mut now = 0u64;
        let mut sent = 0u64;
        let mut last = 0;
        for _ in 0..10 * n {
            match c.dequeue(now) {
                Dequeued::Packet(p) => {
                    sent += 1;
                    last = now;
                    let _ = p;
                }
                Dequeued::NotBefore(t) => now = t,
                Dequeued::Empty => break,
            }
            if sent == u64::from(n) {
                break;
            }
        }
        let adj = f64::from(oh.adjust(len));
        let got = (sent as f64 - 1.0) * adj * 8.0 / (last as f64 / 1e9);
        let err = got / rate as f64 - 1.0;
        assert!(
            err.abs() < 0.01,
            "{rate} {len}: {got} ({err:+.4}), sent {sent}"
        );
    }
}

#[test]
fn voice_tin_has_priority_up_to_its_threshold() {
    let rate = 10_000_000;
    let cfg = CakeConfig {
        rate_bps: Some(rate),
        memory_limit: Some(u64::MAX),
        ..Default::default()
    };
    let mut c = Cake::new(cfg);
    for i in 0..3000u32 {
        c.enqueue(pkt(1, 1, 2, 1000, 0, 0), 0);
        c.enqueue(pkt(2, 3, 4, 1000, 46, 0), 0);
        let _ = i;
    }
    let mut now = 0;
    let (mut voice, mut be) = (0u64, 0u64);
    for _ in 0..20_000 {
        match c.dequeue(now) {
            Dequeued::Packet(p) => {
                if p.meta.dscp == 46 {
                    voice += 1
                } else {
                    be += 1
                }
            }
            Dequeued::NotBefore(t) => now = t,
            Dequeued::Empty => break,
        }
        if voice + be >= 2000 {
            break;
        }
    }
    // Voice is capped near its 1/4 threshold once it exceeds it; best effort gets the rest.
    let share = voice as f64 / (voice + be) as f64;
    assert!((0.2..0.35).contains(&share), "voice share {share}");
}

#[test]
fn cobalt_controls_a_standing_queue() {
    // 1 Mbit/s more offered than the 20 Mbit/s shaper by an unresponsive flow: the delay must
    // stay far under what the 4 MiB buffer would allow (1.6 s), thanks to COBALT and BLUE.
    let rate = 20_000_000u64;
    let cfg = CakeConfig {
        rate_bps: Some(rate),
        diffserv: DiffservMode::Besteffort,
        ..Default::default()
    };
    let mut c = Cake::new(cfg);
    let pkt_ns = 1514 * 8 * 1_000_000_000 / rate;
    let mut now = 0u64;
    let mut worst_late = 0u64;
    for i in 0..40_000u64 {
        now = i * pkt_ns * 20 / 21;
        c.enqueue(pkt(7, 1, 2, 1514, 0, now), now);
        if let Dequeued::Packet(p) = c.dequeue(now) {
            if i > 20_000 {
                worst_late = worst_late.max(now - p.meta.rx_ts_ns);
            }
        }
    }
    let _ = drain_simulated(&mut c, now, now);
    assert!(c.stats().aqm_drops > 100, "{:?}", c.stats());
    assert!(
        worst_late < 200 * MS,
        "worst sojourn {} ms",
        worst_late / MS
    );
}

/// Random traffic over all tins, hosts and a memory limit that overflows: dequeue never says
/// Empty while packets are queued.
#[test]
fn never_empty_while_backlogged() {
    let cfg = CakeConfig {
        rate_bps: Some(50_000_000),
        memory_limit: Some(300_000),
        ..Default::default()
    };
    let mut c = Cake::new(cfg);
    let mut x = 0x1234_5678_9abc_def0u64;
    let mut rnd = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let dscps = [0u8, 8, 46, 34, 40, 10];
    let mut now = 0u64;
    for _ in 0..200_000 {
        let r = rnd();
        now += r % 200_000;
        for _ in 0..(r >> 20) % 4 {
            let f = (rnd() % 40) as u32;
            let len = if f % 3 == 0 { 100 } else { 1514 };
            c.enqueue(
                pkt(
                    f.wrapping_mul(2_654_435_761),
                    f % 5,
                    100 + f % 3,
                    len,
                    dscps[(f % 6) as usize],
                    now,
                ),
                now,
            );
        }
        match c.dequeue(now) {
            Dequeued::Empty => assert_eq!(c.len(), 0, "Empty with {} queued", c.len()),
            Dequeued::NotBefore(t) => assert!(t > now),
            Dequeued::Packet(_) => {}
        }
    }
}
