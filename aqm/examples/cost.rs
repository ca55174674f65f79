//! ns per packet (enqueue + dequeue) of each qdisc for flow mixes of 1, 16 and 1024 flows and
//! 64 / 1500-byte packets, next to a plain VecDeque FIFO as the floor, and the cost of the
//! once-per-packet receive work (parse + three keyed hashes). Run by bench/aqm-cost.sh.
//!
//! Usage: cargo run --release -p aqm --example cost [ITERATIONS]

// Tests may unwrap, expect and panic; clippy.toml's in-tests allowance does not reach an
// integration test's helper functions (rust-clippy #13981), so the crate root says it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use aqm::{
    Cake, CakeConfig, Codel, CodelParams, Dequeued, Fifo, FlowHasher, FqCodel, FqCodelConfig,
    Overhead, Packet, PktMeta, Qdisc, Shaped,
};
use std::collections::VecDeque;
use std::hint::black_box;
use std::time::Instant;

const DEPTH: usize = 64;

fn frame(flow: u32, len: usize) -> Vec<u8> {
    let mut f = vec![0u8; len.max(42)];
    f[12] = 0x08;
    f[14] = 0x45;
    let total = (f.len() - 14) as u16;
    f[16..18].copy_from_slice(&total.to_be_bytes());
    f[22] = 64;
    f[23] = 17;
    // A home network: flows spread over 32 LAN hosts and 200 destinations.
    f[26..30].copy_from_slice(&[10, 201, 1, (flow % 32) as u8 + 2]);
    f[30..34].copy_from_slice(&[10, 201, 2, (flow % 200) as u8]);
    f[34..36].copy_from_slice(&((flow as u16).wrapping_add(1024)).to_be_bytes());
    f[36..38].copy_from_slice(&5201u16.to_be_bytes());
    f
}

fn metas(flows: u32, len: usize, h: &FlowHasher) -> Vec<PktMeta> {
    (0..flows)
        .map(|i| PktMeta::parse(&frame(i, len), 0, h, 0).unwrap_or_default())
        .collect()
}

/// Steady state: keep DEPTH packets queued, one enqueue + one dequeue per step; the clock
/// advances one packet time at 10 Gbit/s so shapers never hold and CoDel sees no standing
/// queue above target. Returns ns per packet.
fn run_qdisc(q: &mut dyn Qdisc, m: &[PktMeta], iters: u64) -> f64 {
    let step = (m[0].wire_len as u64 * 8 / 10).max(1);
    let mut now = 1_000_000u64;
    for i in 0..DEPTH {
        let mut meta = m[i % m.len()];
        meta.rx_ts_ns = now;
        q.enqueue(
            Packet {
                meta,
                data: Vec::new(),
            },
            now,
        );
    }
    let t0 = Instant::now();
    for i in 0..iters {
        now += step;
        let mut meta = m[i as usize % m.len()];
        meta.rx_ts_ns = now;
        q.enqueue(
            Packet {
                meta,
                data: Vec::new(),
            },
            now,
        );
        match q.dequeue(now) {
            Dequeued::Packet(p) => {
                black_box(p);
            }
            other => {
                black_box(other);
            }
        }
    }
    t0.elapsed().as_nanos() as f64 / iters as f64
}

fn run_vecdeque(m: &[PktMeta], iters: u64) -> f64 {
    let mut q: VecDeque<Packet> = VecDeque::with_capacity(2 * DEPTH);
    for i in 0..DEPTH {
        q.push_back(Packet {
            meta: m[i % m.len()],
            data: Vec::new(),
        });
    }
    let t0 = Instant::now();
    for i in 0..iters {
        let mut meta = m[i as usize % m.len()];
        meta.rx_ts_ns = i;
        q.push_back(Packet {
            meta,
            data: Vec::new(),
        });
        black_box(q.pop_front());
    }
    t0.elapsed().as_nanos() as f64 / iters as f64
}

fn run_parse(flows: u32, len: usize, h: &FlowHasher, iters: u64) -> f64 {
    let frames: Vec<Vec<u8>> = (0..flows.min(64)).map(|i| frame(i, len)).collect();
    let t0 = Instant::now();
    for i in 0..iters {
        black_box(PktMeta::parse(black_box(&frames[i as usize % frames.len()]), i, h, 0).ok());
    }
    t0.elapsed().as_nanos() as f64 / iters as f64
}

fn best_of(n: usize, mut f: impl FnMut() -> f64) -> f64 {
    (0..n).map(|_| f()).fold(f64::INFINITY, f64::min)
}

fn main() {
    let iters: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(300_000);
    let h = FlowHasher::new(0x0123_4567_89ab_cdef, 0xfedc_ba98_7654_3210);
    let big = u64::MAX / 4;
    println!(
        "| flows | packet B | VecDeque floor ns | parse+hash ns | fifo ns | codel ns | fq_codel ns | cake ns | cake shaped ns | fq_codel / floor | cake / floor |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    for &flows in &[1u32, 16, 1024] {
        for &len in &[64usize, 1514] {
            let m = metas(flows, len, &h);
            let floor = best_of(3, || run_vecdeque(&m, iters));
            let parse = best_of(3, || run_parse(flows, len, &h, iters));
            let fifo = best_of(3, || run_qdisc(&mut Fifo::new(big), &m, iters));
            let codel = best_of(3, || {
                run_qdisc(&mut Codel::new(CodelParams::default(), big), &m, iters)
            });
            let fq = best_of(3, || {
                run_qdisc(
                    &mut FqCodel::new(FqCodelConfig {
                        memory_limit: big,
                        ..Default::default()
                    }),
                    &m,
                    iters,
                )
            });
            let cake = best_of(3, || {
                run_qdisc(
                    &mut Cake::new(CakeConfig {
                        memory_limit: Some(big),
                        ..Default::default()
                    }),
                    &m,
                    iters,
                )
            });
            let cake_shaped = best_of(3, || {
                let cfg = CakeConfig {
                    rate_bps: Some(9_000_000_000),
                    memory_limit: Some(big),
                    ..Default::default()
                };
                run_qdisc(&mut Cake::new(cfg), &m, iters)
            });
            // A shaped FIFO, to separate the shaper's cost from the queueing.
            let _ = Shaped::new(Fifo::new(big), Some(1), Overhead::raw());
            println!(
                "| {flows} | {} | {floor:.1} | {parse:.1} | {fifo:.1} | {codel:.1} | {fq:.1} | {cake:.1} | {cake_shaped:.1} | {:.1} | {:.1} |",
                if len == 1514 { 1500 } else { 64 },
                fq / floor,
                cake / floor
            );
        }
    }
}
