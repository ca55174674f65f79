//! One direction of the userspace forwarder: frames off the ingress interface, stamped with the
//! time the forwarder takes them from the ring (its enqueue into the qdisc) and hashed once
//! (aqm::PktMeta), routed (MAC rewrite, TTL), queued in the qdisc, and sent on the egress
//! interface when the qdisc's shaper allows. The kernel's receive stamp gives the time each
//! frame waited in the ring before that (`ring_wait_*`), which the qdisc does not count
//! (docs/aqm.md, "Which sojourn the AQM sees").

use super::afpacket::{self, PACKET_HOST, PacketSocket, Received, RxRing, TX_BATCH};
use crate::lab::error::Result;
use aqm::{Dequeued, FlowHasher, Packet, ParseError, PktMeta, Qdisc};
use serde::{Deserialize, Serialize};
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Where one direction goes.
#[derive(Debug, Clone)]
pub struct Direction {
    /// "up" (LAN → WAN) or "down".
    pub name: String,
    pub in_dev: String,
    pub out_dev: String,
    /// MAC of the egress interface (new source MAC).
    pub out_mac: [u8; 6],
    /// MAC of the host behind the egress interface (new destination MAC).
    pub next_hop_mac: [u8; 6],
    /// The router's own addresses: frames for them are the kernel's, not ours.
    pub local_ips: Vec<[u8; 4]>,
    pub in_port: u16,
}

/// Counters of one direction (also written to the forwarder's stats file).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct DirectionReport {
    pub name: String,
    pub rx_frames: u64,
    pub forwarded: u64,
    pub forwarded_bytes: u64,
    /// ARP, frames for the router itself, other hosts' frames: left to the kernel.
    pub left_to_kernel: u64,
    /// Truncated or malformed frames, dropped.
    pub malformed: u64,
    pub ttl_expired: u64,
    pub tx_errors: u64,
    pub qdisc_drops: u64,
    pub ecn_marks: u64,
    pub backlog_bytes: u64,
    /// Sojourn in the qdisc (from the forwarder's receive, which is its enqueue, to transmit:
    /// what the AQM sees, as the kernel's qdiscs measure from their enqueue), max and mean over
    /// the last report period, ms.
    pub sojourn_max_ms: f64,
    pub sojourn_mean_ms: f64,
    /// Time frames waited in the receive ring (from the kernel's receive stamp to the
    /// forwarder's receive), max and mean over the last report period, ms.
    #[serde(default)]
    pub ring_wait_max_ms: f64,
    #[serde(default)]
    pub ring_wait_mean_ms: f64,
    /// The largest ring wait since the forwarder started, ms.
    #[serde(default)]
    pub ring_wait_max_run_ms: f64,
    /// The largest sojourn since the forwarder started, ms.
    #[serde(default)]
    pub sojourn_max_run_ms: f64,
    /// Frames the kernel dropped at the full receive socket (the forwarder fell behind).
    #[serde(default)]
    pub rx_socket_drops: u64,
    /// CPU time spent on this direction since the forwarder started (user + system), ms: that
    /// of the thread serving it; where one thread serves both directions (the namespace lab),
    /// shared out by the frames each received, so the two add up to the thread's.
    #[serde(default)]
    pub cpu_ms: f64,
    /// How frames come in and go out ("rx ring + sendmmsg", or the per-frame fallback).
    #[serde(default)]
    pub io_path: String,
    /// System calls made (receive, send, wait), for the cost per packet.
    #[serde(default)]
    pub syscalls: u64,
}

/// CPU time of the calling thread, ns.
fn thread_cpu_ns() -> u64 {
    afpacket::clock_ns(nix::time::ClockId::CLOCK_THREAD_CPUTIME_ID)
}

/// Recomputes an IPv4 header checksum word change (RFC 1624).
fn csum_replace(check: u16, old: u16, new: u16) -> u16 {
    let mut sum = u32::from(!check) + u32::from(!old) + u32::from(new);
    sum = (sum & 0xffff) + (sum >> 16);
    sum = (sum & 0xffff) + (sum >> 16);
    !(sum as u16)
}

/// The 16-bit one's complement sum of `data` as big-endian words (RFC 1071), folded, not
/// inverted. Sums 32-bit words in the CPU's own byte order into a 64-bit accumulator and swaps
/// the folded result once (RFC 1071 §2(B), byte-order independence): about a quarter of the
/// work of a 16-bit loop, which the profile showed at 8 % of the forwarder's thread.
fn ones_complement_sum(data: &[u8]) -> u16 {
    let mut sum = 0u64;
    let mut words = data.chunks_exact(4);
    for w in &mut words {
        sum += u64::from(u32::from_ne_bytes([w[0], w[1], w[2], w[3]]));
    }
    let rest = words.remainder();
    let mut tail = [0u8; 4];
    tail[..rest.len()].copy_from_slice(rest);
    sum += u64::from(u32::from_ne_bytes(tail));
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    u16::from_be(sum as u16)
}

/// Completes a TCP/UDP checksum the sender left partial (the field holds the pseudo-header
/// sum): the one's complement of the sum over the whole segment, as skb_checksum_help does.
fn complete_l4_checksum(data: &mut [u8], l4: usize, proto: u8) {
    let off = match proto {
        6 => 16,
        17 => 6,
        _ => return,
    };
    if data.len() < l4 + off + 2 {
        return;
    }
    let mut c = !ones_complement_sum(&data[l4..]);
    if proto == 17 && c == 0 {
        c = 0xffff;
    }
    data[l4 + off..l4 + off + 2].copy_from_slice(&c.to_be_bytes());
}

/// What to do with a received frame.
#[derive(Debug, PartialEq)]
pub enum Classified {
    Forward(Packet),
    Kernel,
    Malformed,
    TtlExpired,
}

/// Parses, filters and routes one frame (IPv4 only: the lab disables IPv6).
pub fn classify(
    frame: &[u8],
    rx_ts: u64,
    csum_not_ready: bool,
    hasher: &FlowHasher,
    d: &Direction,
) -> Classified {
    let meta = match PktMeta::parse(frame, rx_ts, hasher, d.in_port) {
        Ok(m) => m,
        Err(ParseError::NotIp) => return Classified::Kernel,
        Err(_) => return Classified::Malformed,
    };
    let l3 = usize::from(meta.l3_off);
    // Only plain Ethernet + IPv4 here (no VLAN/PPPoE in the lab).
    if meta.ip_version != 4 || l3 != 14 {
        return Classified::Kernel;
    }
    let Some(dst) = frame.get(l3 + 16..l3 + 20) else {
        return Classified::Malformed;
    };
    if d.local_ips.iter().any(|ip| ip[..] == dst[..]) {
        return Classified::Kernel;
    }
    let total = usize::from(u16::from_be_bytes([frame[l3 + 2], frame[l3 + 3]]));
    if l3 + total > frame.len() {
        return Classified::Malformed;
    }
    let ttl = frame[l3 + 8];
    if ttl <= 1 {
        return Classified::TtlExpired;
    }
    // Drop Ethernet padding: forward exactly the IP datagram.
    let mut data = frame[..l3 + total].to_vec();
    data[0..6].copy_from_slice(&d.next_hop_mac);
    data[6..12].copy_from_slice(&d.out_mac);
    let old = u16::from_be_bytes([data[l3 + 8], data[l3 + 9]]);
    data[l3 + 8] = ttl - 1;
    let new = u16::from_be_bytes([data[l3 + 8], data[l3 + 9]]);
    let check = u16::from_be_bytes([data[l3 + 10], data[l3 + 11]]);
    data[l3 + 10..l3 + 12].copy_from_slice(&csum_replace(check, old, new).to_be_bytes());
    let frag = u16::from_be_bytes([data[l3 + 6], data[l3 + 7]]) & 0x3fff;
    if csum_not_ready && frag == 0 {
        let ihl = usize::from(data[l3] & 0x0f) * 4;
        complete_l4_checksum(&mut data, l3 + ihl, meta.proto);
    }
    let mut meta = meta;
    meta.wire_len = data.len() as u32;
    Classified::Forward(Packet { meta, data })
}

/// Delays (qdisc sojourn, or ring wait) since the last report, ns.
#[derive(Default, Debug)]
struct Sojourn {
    sum: u64,
    n: u64,
    max: u64,
}

impl Sojourn {
    fn add(&mut self, s: u64) {
        self.sum += s;
        self.n += 1;
        self.max = self.max.max(s);
    }

    fn mean_ms(&self) -> f64 {
        if self.n > 0 {
            self.sum as f64 / self.n as f64 / 1e6
        } else {
            0.0
        }
    }
}

/// While packets wait in the shaper, or the last round received any, the loop sleeps at least
/// this long between rounds, so each round moves a batch (like NAPI polling or a NIC's interrupt
/// coalescing) instead of waking per packet; the kernel's receive stamps keep the ring wait
/// exact. Only after a round that found nothing does it block until an arrival, so a lone
/// packet is forwarded at once.
pub const COALESCE_NS: u64 = 100_000;
/// Longest wait with nothing queued.
const IDLE_WAIT_NS: u64 = 20_000_000;
/// How often the counters are copied to the report.
const REPORT_NS: u64 = 200_000_000;

/// The receive side: the mmap'ed ring, or one recvmsg per frame where the ring is refused.
enum Rx {
    Ring(RxRing),
    Socket(Vec<u8>),
}

/// One direction handed to [`run`]: where it goes, its qdisc, and where its counters go.
pub struct Lane {
    pub d: Direction,
    pub q: Box<dyn Qdisc>,
    pub report: Arc<Mutex<DirectionReport>>,
}

/// A lane with its sockets open and its running counters.
struct Open {
    d: Direction,
    q: Box<dyn Qdisc>,
    report: Arc<Mutex<DirectionReport>>,
    rx: PacketSocket,
    tx: PacketSocket,
    input: Rx,
    r: DirectionReport,
    soj: Sojourn,
    ring: Sojourn,
    /// rx_frames when the thread's CPU time was last shared out.
    frames_at_share: u64,
}

impl Open {
    fn new(lane: Lane) -> Result<Self> {
        let rx = PacketSocket::open(&lane.d.in_dev, true)?;
        let tx = PacketSocket::open(&lane.d.out_dev, false)?;
        let (input, io_path) = match RxRing::new(&rx) {
            Ok(ring) => (
                Rx::Ring(ring),
                "rx ring (TPACKET_V2) + sendmmsg".to_string(),
            ),
            Err(e) => (
                Rx::Socket(vec![0u8; 65_536]),
                format!("recvmsg per frame (no rx ring: {e}) + sendmmsg"),
            ),
        };
        Ok(Open {
            r: DirectionReport {
                name: lane.d.name.clone(),
                io_path,
                ..Default::default()
            },
            d: lane.d,
            q: lane.q,
            report: lane.report,
            rx,
            tx,
            input,
            soj: Sojourn::default(),
            ring: Sojourn::default(),
            frames_at_share: 0,
        })
    }
}

/// How long one lane wants the thread to wait after a round (its old loop's choice).
#[derive(Debug, Clone, Copy, PartialEq)]
enum Want {
    /// Go round again at once (a full batch was sent, or a release is due).
    Now,
    /// Sleep this long: packets wait in the shaper, or the round received some (coalescing).
    Nap(u64),
    /// Nothing queued and nothing came: block until an arrival on its ring, at most this long.
    Arrival(u64),
}

/// What one lane wants after a round: `wait_ns` from [`send`], whether its qdisc is empty and
/// whether the round received any frame for it.
fn want(wait_ns: u64, empty: bool, busy: bool) -> Want {
    if wait_ns == 0 {
        Want::Now
    } else if empty && !busy {
        Want::Arrival(wait_ns)
    } else if empty {
        Want::Nap(COALESCE_NS)
    } else {
        Want::Nap(wait_ns.clamp(COALESCE_NS, IDLE_WAIT_NS))
    }
}

/// The thread's one wait for all lanes: none if any lane must go again; otherwise the shortest
/// nap, cut short by an arrival on a lane that blocks for one (`Some(timeout)`, `true`: wake
/// on arrivals of the `Arrival` lanes); no lane waits longer, or wakes later, than it would
/// alone.
fn combine(wants: &[Want]) -> Option<(u64, bool)> {
    let mut nap: Option<u64> = None;
    let mut arrival: Option<u64> = None;
    for w in wants {
        match *w {
            Want::Now => return None,
            Want::Nap(t) => nap = Some(nap.map_or(t, |n| n.min(t))),
            Want::Arrival(t) => arrival = Some(arrival.map_or(t, |a| a.min(t))),
        }
    }
    match (nap, arrival) {
        (Some(n), Some(a)) => Some((n.min(a), true)),
        (Some(n), None) => Some((n, false)),
        (None, Some(a)) => Some((a, true)),
        (None, None) => None,
    }
}

/// Runs the lanes (both directions) in the calling thread until `stop` is set or `deadline`
/// passes; every 200 ms their counters are copied to their reports. One thread serves both
/// directions, as a router's one softirq loop serves all its NICs: each wake-up moves the
/// frames of both (a TCP upload's ACKs ride on the data's wake-ups), where a thread per
/// direction paid a wake-up per round for each, and the ACK direction's rounds held one or two
/// frames. The thread's CPU time is shared out to the lanes by the frames each received.
pub fn run(
    lanes: Vec<Lane>,
    hasher: FlowHasher,
    stop: Arc<AtomicBool>,
    deadline: Option<Instant>,
) -> Result<()> {
    // Forwarding is softirq work on a real router, ahead of user tasks: a high weight keeps
    // other tenants' builds from stalling this thread (best effort; needs root).
    // SAFETY: setpriority on the calling thread (who = 0).
    unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, -15) };
    if lanes.is_empty() {
        return Ok(());
    }
    let mut lanes = lanes
        .into_iter()
        .map(Open::new)
        .collect::<Result<Vec<_>>>()?;
    // One clock read per round: in the emulated ARM router a clock_gettime costs ~170 µs (no
    // vDSO fast path under TCG), and the loop used to make four or five. The offset between
    // the kernel's (realtime) receive stamps and our monotonic clock only moves with a clock
    // step, so it is read again with each report.
    let (mono0, real0) = afpacket::clocks_ns();
    let mut offset = real0.wrapping_sub(mono0);
    let mut last_report = mono0;
    let mut cpu_shared = thread_cpu_ns();
    let mut batch: Vec<Packet> = Vec::with_capacity(TX_BATCH);
    let mut wants = Vec::with_capacity(lanes.len());
    while !stop.load(Ordering::Relaxed) && deadline.is_none_or(|t| Instant::now() < t) {
        let now = afpacket::clock_ns(nix::time::ClockId::CLOCK_MONOTONIC);
        wants.clear();
        for l in lanes.iter_mut() {
            let before = l.r.rx_frames;
            let clocks = (now, offset);
            receive(
                &l.rx,
                &mut l.input,
                l.q.as_mut(),
                &hasher,
                &l.d,
                &mut l.r,
                &mut l.ring,
                clocks,
            )?;
            let busy = l.r.rx_frames > before;
            let wait_ns = send(&l.tx, l.q.as_mut(), &mut l.r, &mut l.soj, &mut batch, now);
            wants.push(want(wait_ns, l.q.is_empty(), busy));
        }
        if let Some((timeout, on_arrival)) = combine(&wants) {
            // The shared wait is counted in the first lane's system calls.
            if let Some(first) = lanes.first_mut() {
                first.r.syscalls += 1;
            }
            if on_arrival {
                let fds: Vec<_> = lanes
                    .iter()
                    .zip(&wants)
                    .filter(|(_, w)| matches!(w, Want::Arrival(_)))
                    .map(|(l, _)| l.rx.as_fd())
                    .collect();
                afpacket::wait_readable_any(&fds, timeout);
            } else {
                std::thread::sleep(Duration::from_nanos(timeout));
            }
        }
        if now.saturating_sub(last_report) >= REPORT_NS {
            share_cpu(&mut lanes, &mut cpu_shared);
            for l in lanes.iter_mut() {
                let periods = (std::mem::take(&mut l.soj), std::mem::take(&mut l.ring));
                publish(&mut l.r, l.q.as_ref(), &l.rx, periods, &l.report);
            }
            let (mono, real) = afpacket::clocks_ns();
            offset = real.wrapping_sub(mono);
            last_report = mono;
        }
    }
    share_cpu(&mut lanes, &mut cpu_shared);
    for l in lanes.iter_mut() {
        let s = l.q.stats();
        l.r.qdisc_drops = s.drops();
        l.r.ecn_marks = s.ecn_marks;
        if let Ok(mut g) = l.report.lock() {
            *g = l.r.clone();
        }
    }
    Ok(())
}

/// Shares the thread's CPU time since the last share out to the lanes (see [`shares`]).
fn share_cpu(lanes: &mut [Open], cpu_shared: &mut u64) {
    let now = thread_cpu_ns();
    let spent_ms = now.saturating_sub(*cpu_shared) as f64 / 1e6;
    *cpu_shared = now;
    let frames: Vec<u64> = lanes
        .iter()
        .map(|l| l.r.rx_frames.saturating_sub(l.frames_at_share))
        .collect();
    for (l, ms) in lanes.iter_mut().zip(shares(spent_ms, &frames)) {
        l.r.cpu_ms += ms;
        l.frames_at_share = l.r.rx_frames;
    }
}

/// `spent` split in proportion to `frames` (evenly when all are 0): the parts add up to it.
fn shares(spent: f64, frames: &[u64]) -> Vec<f64> {
    let total: u64 = frames.iter().sum();
    let n = frames.len().max(1) as f64;
    frames
        .iter()
        .map(|&f| {
            if total > 0 {
                spent * f as f64 / total as f64
            } else {
                spent / n
            }
        })
        .collect()
}

/// One received frame: classified, ours stamped with `mono` (this round's receive, which is the
/// enqueue) and queued in `q`; the time it waited in the ring since the kernel's receive stamp
/// goes to `ring`.
#[allow(clippy::too_many_arguments)]
fn take(
    got: Received,
    frame: &[u8],
    (mono, offset): (u64, u64),
    q: &mut dyn Qdisc,
    hasher: &FlowHasher,
    d: &Direction,
    r: &mut DirectionReport,
    ring: &mut Sojourn,
) {
    r.rx_frames += 1;
    if got.pkttype != PACKET_HOST {
        r.left_to_kernel += 1;
        return;
    }
    if got.truncated {
        r.malformed += 1;
        return;
    }
    // The kernel's receive stamp on our monotonic axis; never in the future. The qdisc's sojourn
    // starts at our receive (`mono`), as a kernel qdisc's starts at its enqueue: time in the
    // ring is the starved forwarder's, and dropping from a flow cannot shorten it.
    let kernel_rx = match got.rx_realtime_ns {
        0 => mono,
        t => t.wrapping_sub(offset).min(mono),
    };
    match classify(frame, mono, got.csum_not_ready, hasher, d) {
        Classified::Forward(p) => {
            ring.add(mono - kernel_rx);
            q.enqueue(p, mono)
        }
        Classified::Kernel => r.left_to_kernel += 1,
        Classified::Malformed => r.malformed += 1,
        Classified::TtlExpired => r.ttl_expired += 1,
    }
}

/// The waiting frames (at most a ring's worth), classified, ours stamped and queued in `q`;
/// `clocks` = (this round's CLOCK_MONOTONIC, CLOCK_REALTIME − CLOCK_MONOTONIC).
#[allow(clippy::too_many_arguments)]
fn receive(
    rx: &PacketSocket,
    input: &mut Rx,
    q: &mut dyn Qdisc,
    hasher: &FlowHasher,
    d: &Direction,
    r: &mut DirectionReport,
    ring: &mut Sojourn,
    clocks: (u64, u64),
) -> Result<()> {
    match input {
        Rx::Ring(mapped) => {
            mapped.drain(afpacket::RING_FRAMES, |got, frame| {
                take(got, frame, clocks, q, hasher, d, r, ring)
            });
        }
        Rx::Socket(buf) => {
            for _ in 0..64 {
                r.syscalls += 1;
                let Some(got) = rx.recv(buf)? else { break };
                take(got, &buf[..got.len], clocks, q, hasher, d, r, ring);
            }
        }
    }
    Ok(())
}

/// Sends what the qdisc releases at `now` (the round's clock reading), in sendmmsg batches;
/// returns how long to wait for the next release, ns (0: go round again right away).
fn send(
    tx: &PacketSocket,
    q: &mut dyn Qdisc,
    r: &mut DirectionReport,
    soj: &mut Sojourn,
    batch: &mut Vec<Packet>,
    now: u64,
) -> u64 {
    let mut wait_ns = if q.is_empty() { IDLE_WAIT_NS } else { 0 };
    for _ in 0..4 {
        batch.clear();
        while batch.len() < TX_BATCH {
            match q.dequeue(now) {
                Dequeued::Packet(p) => {
                    soj.add(now.saturating_sub(p.meta.rx_ts_ns));
                    batch.push(p);
                }
                Dequeued::NotBefore(t) => {
                    wait_ns = t.saturating_sub(now).min(IDLE_WAIT_NS);
                    break;
                }
                Dequeued::Empty => {
                    wait_ns = IDLE_WAIT_NS;
                    break;
                }
            }
        }
        if batch.is_empty() {
            break;
        }
        let frames: Vec<&[u8]> = batch.iter().map(|p| p.data.as_slice()).collect();
        r.syscalls += 1;
        let sent = tx.send_batch(&frames);
        r.forwarded += sent as u64;
        r.forwarded_bytes += frames[..sent].iter().map(|f| f.len() as u64).sum::<u64>();
        r.tx_errors += (frames.len() - sent) as u64;
        if batch.len() < TX_BATCH {
            break;
        }
    }
    wait_ns
}

/// Copies the counters, the qdisc's and the period's sojourn and ring-wait figures to `report`.
fn publish(
    r: &mut DirectionReport,
    q: &dyn Qdisc,
    rx: &PacketSocket,
    (soj, ring): (Sojourn, Sojourn),
    report: &Mutex<DirectionReport>,
) {
    let s = q.stats();
    r.qdisc_drops = s.drops();
    r.ecn_marks = s.ecn_marks;
    r.backlog_bytes = q.backlog_bytes();
    r.sojourn_max_ms = soj.max as f64 / 1e6;
    r.sojourn_max_run_ms = r.sojourn_max_run_ms.max(r.sojourn_max_ms);
    r.rx_socket_drops += rx.take_drops();
    r.sojourn_mean_ms = soj.mean_ms();
    r.ring_wait_max_ms = ring.max as f64 / 1e6;
    r.ring_wait_max_run_ms = r.ring_wait_max_run_ms.max(r.ring_wait_max_ms);
    r.ring_wait_mean_ms = ring.mean_ms();
    if let Ok(mut g) = report.lock() {
        *g = r.clone();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir() -> Direction {
        Direction {
            name: "up".into(),
            in_dev: "rtr-lan".into(),
            out_dev: "rtr-wan".into(),
            out_mac: [2, 0, 0, 0, 0, 1],
            next_hop_mac: [2, 0, 0, 0, 0, 2],
            local_ips: vec![[10, 201, 1, 1], [10, 201, 2, 1]],
            in_port: 0,
        }
    }

    fn udp(dst: [u8; 4], ttl: u8, pad: usize) -> Vec<u8> {
        let mut f = vec![0u8; 14 + 28 + pad];
        f[12] = 8;
        let ip = &mut f[14..];
        ip[0] = 0x45;
        ip[2..4].copy_from_slice(&28u16.to_be_bytes());
        ip[8] = ttl;
        ip[9] = 17;
        ip[12..16].copy_from_slice(&[10, 201, 1, 2]);
        ip[16..20].copy_from_slice(&dst);
        let mut sum = 0u32;
        for i in (0..20).step_by(2) {
            sum += u32::from(u16::from_be_bytes([ip[i], ip[i + 1]]));
        }
        while sum > 0xffff {
            sum = (sum & 0xffff) + (sum >> 16);
        }
        ip[10..12].copy_from_slice(&(!(sum as u16)).to_be_bytes());
        f
    }

    /// RFC 1071's 16-bit loop, the reference for the word-at-a-time sum.
    fn sum16(data: &[u8]) -> u16 {
        let mut sum = 0u64;
        for c in data.chunks(2) {
            sum += u64::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]));
        }
        while sum > 0xffff {
            sum = (sum & 0xffff) + (sum >> 16);
        }
        sum as u16
    }

    #[test]
    fn word_at_a_time_sum_equals_rfc1071s_loop_at_every_length_and_offset() {
        // RFC 1071 §3's example: 00 01 f2 03 f4 f5 f6 f7 sums to ddf2.
        assert_eq!(
            ones_complement_sum(&[0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7]),
            0xddf2
        );
        assert_eq!(ones_complement_sum(&[]), 0);
        assert_eq!(ones_complement_sum(&[0xff; 3000]), 0xffff);
        let mut x = 0x1234_5678u32;
        let data: Vec<u8> = (0..1600)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                x as u8
            })
            .collect();
        for start in 0..8 {
            for len in (0..=1514).step_by(7).chain(1590..1600 - start) {
                let d = &data[start..start + len];
                assert_eq!(ones_complement_sum(d), sum16(d), "start {start} len {len}");
            }
        }
    }

    #[test]
    fn routes_and_decrements_ttl_with_valid_checksum() {
        let h = FlowHasher::new(1, 2);
        let Classified::Forward(p) = classify(&udp([10, 201, 2, 2], 64, 18), 5, false, &h, &dir())
        else {
            panic!("not forwarded")
        };
        assert_eq!(p.data.len(), 42, "padding removed");
        assert_eq!(&p.data[0..12], &[2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1]);
        assert_eq!(p.data[22], 63);
        let mut sum = 0u32;
        for i in (14..34).step_by(2) {
            sum += u32::from(u16::from_be_bytes([p.data[i], p.data[i + 1]]));
        }
        while sum > 0xffff {
            sum = (sum & 0xffff) + (sum >> 16);
        }
        assert_eq!(sum, 0xffff);
    }

    /// A full-sized UDP datagram (1500 bytes of IP) to `dst` from `sport`.
    fn full_udp(dst: [u8; 4], sport: u16) -> Vec<u8> {
        let mut f = udp(dst, 64, 1472);
        let ip = &mut f[14..];
        ip[2..4].copy_from_slice(&1500u16.to_be_bytes());
        ip[20..22].copy_from_slice(&sport.to_be_bytes());
        ip[10..12].copy_from_slice(&[0, 0]);
        let mut sum = 0u32;
        for i in (0..20).step_by(2) {
            sum += u32::from(u16::from_be_bytes([ip[i], ip[i + 1]]));
        }
        while sum > 0xffff {
            sum = (sum & 0xffff) + (sum >> 16);
        }
        ip[10..12].copy_from_slice(&(!(sum as u16)).to_be_bytes());
        f
    }

    /// A starved forwarder (the VM's): every frame has waited 20 ms in the receive ring before
    /// the thread's round took it, but cake's own queue stays short (3 frames every 5 ms into a
    /// 10 Mbit/s shaper, 7.3 Mbit/s). The qdisc must count only its own queue, as a kernel
    /// qdisc does from its enqueue: no drops, sojourn below CoDel's 5 ms target, the ring wait
    /// reported apart. Before, the sojourn started at the kernel's stamp, was above the target
    /// for every frame, and cake dropped from a flow whose queue it could not shorten.
    #[test]
    fn time_in_the_receive_ring_is_not_the_qdiscs_sojourn() {
        use crate::lab::aqm_forwarder::make_qdisc;
        let h = FlowHasher::new(1, 2);
        let d = dir();
        let mut q = make_qdisc(aqm::QdiscKind::Cake, Some(10_000_000), 1 << 20);
        let mut r = DirectionReport::default();
        let (mut ring, mut soj) = (Sojourn::default(), Sojourn::default());
        let frame = full_udp([10, 201, 2, 2], 40_000);
        let ms = 1_000_000u64;
        let t0 = 1_000 * ms;
        let mut sent = 0u64;
        for tick in 0..2_000u64 {
            let now = t0 + tick * ms;
            if tick % 5 == 0 {
                for _ in 0..3 {
                    let got = Received {
                        len: frame.len(),
                        truncated: false,
                        rx_realtime_ns: now - 20 * ms,
                        pkttype: PACKET_HOST,
                        csum_not_ready: false,
                    };
                    take(got, &frame, (now, 0), q.as_mut(), &h, &d, &mut r, &mut ring);
                }
            }
            while let Dequeued::Packet(p) = q.dequeue(now) {
                soj.add(now - p.meta.rx_ts_ns);
                sent += 1;
            }
        }
        assert_eq!(r.rx_frames, 1_200);
        assert_eq!(q.stats().drops(), 0, "cake dropped for the ring's wait");
        assert_eq!(sent, 1_200);
        assert!(soj.max < 5 * ms, "qdisc sojourn max {} ns", soj.max);
        assert_eq!((ring.n, ring.max), (1_200, 20 * ms));
        assert!((ring.mean_ms() - 20.0).abs() < 1e-9);
    }

    /// Each lane's old loop, alone, would have: gone again (a full batch), napped (packets in
    /// the shaper, or arrivals to coalesce) or blocked until an arrival. Together, no lane
    /// wakes later than alone, and arrivals only cut the wait short for lanes that block.
    #[test]
    fn one_thread_waits_no_longer_than_either_direction_would_alone() {
        let ms = 1_000_000;
        assert_eq!(want(0, false, true), Want::Now);
        assert_eq!(want(IDLE_WAIT_NS, true, false), Want::Arrival(IDLE_WAIT_NS));
        assert_eq!(want(IDLE_WAIT_NS, true, true), Want::Nap(COALESCE_NS));
        assert_eq!(want(3 * ms, false, true), Want::Nap(3 * ms));
        assert_eq!(
            want(1_000, false, false),
            Want::Nap(COALESCE_NS),
            "at least the coalescing"
        );
        assert_eq!(want(60 * ms, false, false), Want::Nap(IDLE_WAIT_NS));
        // A full batch on either side: no wait at all.
        assert_eq!(combine(&[Want::Now, Want::Arrival(IDLE_WAIT_NS)]), None);
        assert_eq!(combine(&[Want::Nap(COALESCE_NS), Want::Now]), None);
        // Upload data napping to coalesce, idle ACK side: the nap, woken early by an ACK.
        assert_eq!(
            combine(&[Want::Nap(COALESCE_NS), Want::Arrival(IDLE_WAIT_NS)]),
            Some((COALESCE_NS, true))
        );
        // Both shaping: the earlier release, no early wake-up (arrivals join their queues).
        assert_eq!(
            combine(&[Want::Nap(3 * ms), Want::Nap(ms)]),
            Some((ms, false))
        );
        // Both idle: block on both rings.
        assert_eq!(
            combine(&[Want::Arrival(IDLE_WAIT_NS), Want::Arrival(5 * ms)]),
            Some((5 * ms, true))
        );
        assert_eq!(combine(&[]), None);
    }

    #[test]
    fn the_threads_cpu_is_shared_out_by_frames_and_adds_up() {
        assert_eq!(shares(10.0, &[3, 1]), vec![7.5, 2.5]);
        assert_eq!(shares(4.0, &[0, 0]), vec![2.0, 2.0]);
        assert_eq!(shares(4.0, &[0, 5]), vec![0.0, 4.0]);
        assert!(shares(1.0, &[]).is_empty());
        let parts = shares(123.456, &[661_967, 172_564]);
        assert!((parts.iter().sum::<f64>() - 123.456).abs() < 1e-9);
    }

    #[test]
    fn leaves_local_arp_and_bad_frames() {
        let h = FlowHasher::new(1, 2);
        let d = dir();
        assert_eq!(
            classify(&udp([10, 201, 1, 1], 64, 0), 0, false, &h, &d),
            Classified::Kernel
        );
        assert_eq!(
            classify(&udp([10, 201, 2, 2], 1, 0), 0, false, &h, &d),
            Classified::TtlExpired
        );
        let mut arp = udp([10, 201, 2, 2], 64, 0);
        arp[12..14].copy_from_slice(&[8, 6]);
        assert_eq!(classify(&arp, 0, false, &h, &d), Classified::Kernel);
        let mut long = udp([10, 201, 2, 2], 64, 0);
        long[16..18].copy_from_slice(&1000u16.to_be_bytes());
        assert_eq!(classify(&long, 0, false, &h, &d), Classified::Malformed);
        assert_eq!(
            classify(&long[..20], 0, false, &h, &d),
            Classified::Malformed
        );
    }
}
