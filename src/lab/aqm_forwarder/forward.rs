//! One direction of the userspace forwarder: frames off the ingress interface, stamped with the
//! kernel's receive time and hashed once (aqm::PktMeta), routed (MAC rewrite, TTL), queued in the
//! qdisc, and sent on the egress interface when the qdisc's shaper allows.

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
    /// Sojourn from kernel receive timestamp to transmit (socket buffer + qdisc), max and mean
    /// over the last report period, ms.
    pub sojourn_max_ms: f64,
    pub sojourn_mean_ms: f64,
    /// The largest sojourn since the forwarder started, ms.
    #[serde(default)]
    pub sojourn_max_run_ms: f64,
    /// Frames the kernel dropped at the full receive socket (the forwarder fell behind).
    #[serde(default)]
    pub rx_socket_drops: u64,
    /// CPU time of this direction's thread since it started (user + system), ms.
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
    let mut sum = 0u64;
    let seg = &data[l4..];
    let mut chunks = seg.chunks_exact(2);
    for c in &mut chunks {
        sum += u64::from(u16::from_be_bytes([c[0], c[1]]));
    }
    if let [last] = chunks.remainder() {
        sum += u64::from(*last) << 8;
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    let mut c = !(sum as u16);
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

/// Sojourn times (kernel receive stamp to transmit) since the last report, ns.
#[derive(Default)]
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
}

/// While packets wait in the shaper, or the last round received any, the loop sleeps at least
/// this long between rounds, so each round moves a batch (like NAPI polling or a NIC's interrupt
/// coalescing) instead of waking per packet; the kernel's receive stamps keep the sojourn
/// times exact. Only after a round that found nothing does it block until an arrival, so a lone
/// packet is forwarded at once.
pub const COALESCE_NS: u64 = 100_000;
/// Longest wait with nothing queued.
const IDLE_WAIT_NS: u64 = 20_000_000;

/// The receive side: the mmap'ed ring, or one recvmsg per frame where the ring is refused.
enum Rx {
    Ring(RxRing),
    Socket(Vec<u8>),
}

/// Runs one direction until `stop` is set or `deadline` passes. Every 200 ms the counters are
/// copied to `report`.
pub fn run(
    d: Direction,
    mut q: Box<dyn Qdisc>,
    hasher: FlowHasher,
    stop: Arc<AtomicBool>,
    deadline: Option<Instant>,
    report: Arc<Mutex<DirectionReport>>,
) -> Result<()> {
    // Forwarding is softirq work on a real router, ahead of user tasks: a high weight keeps
    // other tenants' builds from stalling this thread (best effort; needs root).
    // SAFETY: setpriority on the calling thread (who = 0).
    unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, -15) };
    let rx = PacketSocket::open(&d.in_dev, true)?;
    let tx = PacketSocket::open(&d.out_dev, false)?;
    let (mut input, io_path) = match RxRing::new(&rx) {
        Ok(ring) => (
            Rx::Ring(ring),
            "rx ring (TPACKET_V2) + sendmmsg".to_string(),
        ),
        Err(e) => (
            Rx::Socket(vec![0u8; 65_536]),
            format!("recvmsg per frame (no rx ring: {e}) + sendmmsg"),
        ),
    };
    let mut r = DirectionReport {
        name: d.name.clone(),
        io_path,
        ..Default::default()
    };
    let mut soj = Sojourn::default();
    let mut last_report = Instant::now();
    let mut batch: Vec<Packet> = Vec::with_capacity(TX_BATCH);
    while !stop.load(Ordering::Relaxed) && deadline.is_none_or(|t| Instant::now() < t) {
        let before = r.rx_frames;
        receive(&rx, &mut input, q.as_mut(), &hasher, &d, &mut r)?;
        let busy = r.rx_frames > before;
        let wait_ns = send(&tx, q.as_mut(), &mut r, &mut soj, &mut batch);
        if wait_ns > 0 {
            r.syscalls += 1;
            if q.is_empty() && !busy {
                afpacket::wait_readable(rx.as_fd(), wait_ns);
            } else {
                let nap = if q.is_empty() {
                    COALESCE_NS
                } else {
                    wait_ns.clamp(COALESCE_NS, IDLE_WAIT_NS)
                };
                std::thread::sleep(Duration::from_nanos(nap));
            }
        }
        if last_report.elapsed() >= Duration::from_millis(200) {
            publish(&mut r, q.as_ref(), &rx, std::mem::take(&mut soj), &report);
            last_report = Instant::now();
        }
    }
    let s = q.stats();
    r.cpu_ms = thread_cpu_ns() as f64 / 1e6;
    r.qdisc_drops = s.drops();
    r.ecn_marks = s.ecn_marks;
    if let Ok(mut g) = report.lock() {
        *g = r;
    }
    Ok(())
}

/// One received frame: classified, ours stamped and queued in `q`.
#[allow(clippy::too_many_arguments)]
fn take(
    got: Received,
    frame: &[u8],
    (mono, offset): (u64, u64),
    q: &mut dyn Qdisc,
    hasher: &FlowHasher,
    d: &Direction,
    r: &mut DirectionReport,
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
    // The kernel's receive stamp on our monotonic axis; never in the future.
    let rx_ts = match got.rx_realtime_ns {
        0 => mono,
        t => t.wrapping_sub(offset).min(mono),
    };
    match classify(frame, rx_ts, got.csum_not_ready, hasher, d) {
        Classified::Forward(p) => q.enqueue(p, mono),
        Classified::Kernel => r.left_to_kernel += 1,
        Classified::Malformed => r.malformed += 1,
        Classified::TtlExpired => r.ttl_expired += 1,
    }
}

/// The waiting frames (at most a ring's worth), classified, ours stamped and queued in `q`.
fn receive(
    rx: &PacketSocket,
    input: &mut Rx,
    q: &mut dyn Qdisc,
    hasher: &FlowHasher,
    d: &Direction,
    r: &mut DirectionReport,
) -> Result<()> {
    let (mono, real) = afpacket::clocks_ns();
    let clocks = (mono, real.wrapping_sub(mono));
    match input {
        Rx::Ring(ring) => {
            ring.drain(afpacket::RING_FRAMES, |got, frame| {
                take(got, frame, clocks, q, hasher, d, r)
            });
        }
        Rx::Socket(buf) => {
            for _ in 0..64 {
                r.syscalls += 1;
                let Some(got) = rx.recv(buf)? else { break };
                take(got, &buf[..got.len], clocks, q, hasher, d, r);
            }
        }
    }
    Ok(())
}

/// Sends what the qdisc releases now, in sendmmsg batches; returns how long to wait for the
/// next release, ns (0: go round again right away).
fn send(
    tx: &PacketSocket,
    q: &mut dyn Qdisc,
    r: &mut DirectionReport,
    soj: &mut Sojourn,
    batch: &mut Vec<Packet>,
) -> u64 {
    let now = afpacket::clocks_ns().0;
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

/// Copies the counters, the qdisc's and the period's sojourn figures to `report`.
fn publish(
    r: &mut DirectionReport,
    q: &dyn Qdisc,
    rx: &PacketSocket,
    soj: Sojourn,
    report: &Mutex<DirectionReport>,
) {
    let s = q.stats();
    r.qdisc_drops = s.drops();
    r.ecn_marks = s.ecn_marks;
    r.backlog_bytes = q.backlog_bytes();
    r.sojourn_max_ms = soj.max as f64 / 1e6;
    r.sojourn_max_run_ms = r.sojourn_max_run_ms.max(r.sojourn_max_ms);
    r.rx_socket_drops += rx.take_drops();
    r.cpu_ms = thread_cpu_ns() as f64 / 1e6;
    r.sojourn_mean_ms = if soj.n > 0 {
        soj.sum as f64 / soj.n as f64 / 1e6
    } else {
        0.0
    };
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
