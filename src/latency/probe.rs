//! The probe engine: isochronous UDP probes to the reflector (one socket per DSCP class) and
//! ICMP echo, sent on one schedule from one thread, with kernel send and receive timestamps and
//! the user-space times beside them.

use super::error::LatencyError;
use super::icmp::IcmpSocket;
use super::plan::{ProbeKind, ProbePlan};
use crate::net as so;
use crate::wire::rb::{self, ProbePacket, ProbeRepr};
use portable_atomic::AtomicU64;
use std::collections::HashMap;
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsFd;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// What one probe saw. All times are CLOCK_REALTIME ns; None = not available or not received.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct RawProbe {
    pub seq: u32,
    pub send_user_ns: u64,
    pub send_kernel_ns: Option<u64>,
    pub recv_user_ns: Option<u64>,
    pub recv_kernel_ns: Option<u64>,
    /// Reflector's receive stamp (server clock).
    pub server_rx_ns: Option<u64>,
    /// The reflector said `server_rx_ns` is a kernel stamp (FLAG_SERVER_RX_KERNEL).
    pub server_rx_kernel: bool,
    /// Reflector's clock just before its send call.
    pub server_tx_user_ns: Option<u64>,
    /// Reflector's kernel send stamp (arrives with the next reply of the stream).
    pub server_tx_kernel_ns: Option<u64>,
    pub send_failed: bool,
}

impl RawProbe {
    pub fn received(&self) -> bool {
        self.recv_user_ns.is_some()
    }
}

/// All probes of one stream.
#[derive(Debug, Clone)]
pub struct StreamData {
    pub plan: ProbePlan,
    pub samples: Vec<RawProbe>,
    /// Note for the result (e.g. why ICMP is missing, which socket kind was used).
    pub note: Option<String>,
    /// True if this stream could not run at all.
    pub unavailable: bool,
}

/// Settings of one probe run.
#[derive(Debug, Clone)]
pub struct ProbeConfig {
    /// The reflector (server IP, port from Welcome).
    pub reflector: SocketAddr,
    pub session: u64,
    pub interval: Duration,
    /// Probe size in bytes (header + random fill), 56..=1200.
    pub size: usize,
    /// How long to send (TOTAL_LENGTH).
    pub duration: Duration,
    /// How long to wait for late replies after the last send.
    pub grace: Duration,
}

/// Live readout for the progress line.
#[derive(Default)]
pub struct Live {
    /// Last kernel-timestamped RTT in µs, the reflector's hold time excluded as in the
    /// summary (0 = none yet).
    pub last_rtt_us: AtomicU64,
}

enum Sock {
    Udp(UdpSocket),
    Icmp(IcmpSocket),
    None,
}

impl Sock {
    fn fd(&self) -> Option<std::os::fd::BorrowedFd<'_>> {
        match self {
            Sock::Udp(s) => Some(s.as_fd()),
            Sock::Icmp(s) => Some(s.as_fd()),
            Sock::None => None,
        }
    }
}

struct Stream {
    /// Stream byte in the probe packets: the position in the plan.
    id: u8,
    data: StreamData,
    sock: Sock,
    /// Kernel send-timestamp id → seq.
    tx_ids: HashMap<u32, u32>,
    next_tx_id: u32,
    fill: Vec<u8>,
}

/// Opens the sockets of every stream. UDP failures are errors; ICMP failure is a note.
fn open_streams(cfg: &ProbeConfig, plans: &[ProbePlan]) -> Result<Vec<Stream>, LatencyError> {
    let v6 = cfg.reflector.is_ipv6();
    let mut out = Vec::new();
    for (i, plan) in plans.iter().enumerate() {
        let (sock, note, unavailable) = match plan.kind {
            ProbeKind::Udp => {
                let bind: SocketAddr = if v6 {
                    (std::net::Ipv6Addr::UNSPECIFIED, 0).into()
                } else {
                    (std::net::Ipv4Addr::UNSPECIFIED, 0).into()
                };
                let s = UdpSocket::bind(bind)?;
                s.connect(cfg.reflector)?;
                so::set_tos(&s, plan.tos, v6)?;
                let mode = so::enable_timestamps(&s)?;
                s.set_nonblocking(true)?;
                let note = (mode == so::TimestampMode::RxOnly)
                    .then(|| "no kernel send timestamps (SO_TIMESTAMPING refused): send side uses user-space time".to_string());
                (Sock::Udp(s), note, false)
            }
            ProbeKind::Icmp => match IcmpSocket::open(cfg.reflector.ip()) {
                Ok(s) => {
                    let note = format!("ICMP echo over a {}", s.kind());
                    (Sock::Icmp(s), Some(note), false)
                }
                Err(why) => (Sock::None, Some(why), true),
            },
        };
        let fill = super::conn::random_payload(super::conn::random_u64())[..cfg.size].to_vec();
        out.push(Stream {
            id: i as u8,
            data: StreamData {
                plan: plan.clone(),
                samples: Vec::new(),
                note,
                unavailable,
            },
            sock,
            tx_ids: HashMap::new(),
            next_tx_id: 0,
            fill,
        });
    }
    Ok(out)
}

/// Runs the probes for `cfg.duration` from now (plus the grace period), or until `stop`.
pub fn run(
    cfg: &ProbeConfig,
    plans: &[ProbePlan],
    live: &Live,
    stop: &AtomicBool,
) -> Result<Vec<StreamData>, LatencyError> {
    if !(rb::PROBE_HEADER_LEN..=rb::PROBE_MAX_LEN).contains(&cfg.size) {
        return Err(LatencyError::ProbeSize {
            size: cfg.size,
            min: rb::PROBE_HEADER_LEN,
            max: rb::PROBE_MAX_LEN,
        });
    }
    let mut streams = open_streams(cfg, plans)?;
    // The kernel enables RX timestamping through deferred work after a socket asks for it;
    // a short pause keeps the first probes from going out before stamps are on.
    std::thread::sleep(Duration::from_millis(20));
    let fds: Vec<usize> = (0..streams.len())
        .filter(|&i| streams[i].sock.fd().is_some())
        .collect();
    let start = Instant::now();
    let end = start + cfg.duration;
    let hard_end = end + cfg.grace;
    let mut next = start;
    let mut seq: u32 = 0;
    let mut buf = vec![0u8; rb::PROBE_MAX_LEN + 64];
    loop {
        let now = Instant::now();
        if stop.load(Ordering::SeqCst) || now >= hard_end {
            break;
        }
        if now >= next && now < end {
            for s in streams.iter_mut() {
                send_one(s, cfg, seq);
            }
            seq += 1;
            next += cfg.interval;
            // Isochronous: a missed slot is skipped, not sent late in a burst.
            while next < now {
                next += cfg.interval;
            }
        }
        let wake = if Instant::now() < end {
            next.min(hard_end)
        } else {
            hard_end
        };
        let left = wake.saturating_duration_since(Instant::now());
        let ms = left.as_millis() as i32;
        if ms == 0 && !left.is_zero() {
            std::thread::sleep(left);
        }
        let polled: Vec<_> = fds.iter().filter_map(|&i| streams[i].sock.fd()).collect();
        let revents = so::poll_readable(&polled, ms.min(100))?;
        for (k, &i) in fds.iter().enumerate() {
            let ev = revents.get(k).copied().unwrap_or(0);
            if ev & libc::POLLERR != 0 {
                collect_tx(&mut streams[i]);
            }
            // POLLERR also flags a pending socket error (an ICMP port unreachable on a connected
            // UDP socket): a plain receive consumes it, or poll would spin until the next send.
            if ev & (libc::POLLIN | libc::POLLERR) != 0 {
                drain(&mut streams[i], cfg, &mut buf, live);
            }
        }
    }
    for s in streams.iter_mut() {
        collect_tx(s);
    }
    Ok(streams.into_iter().map(|s| s.data).collect())
}

fn send_one(s: &mut Stream, cfg: &ProbeConfig, seq: u32) {
    let now_ns = so::realtime_ns();
    let mut p = RawProbe {
        seq,
        send_user_ns: now_ns,
        ..Default::default()
    };
    let sent = match &s.sock {
        Sock::Udp(sock) => {
            let repr = ProbeRepr {
                stream: s.id,
                session: cfg.session,
                seq,
                client_tx_ns: now_ns,
            };
            let mut pkt = s.fill.clone();
            repr.emit(&mut pkt).is_ok() && sock.send(&pkt).is_ok()
        }
        Sock::Icmp(sock) => sock.send(seq as u16, now_ns).is_ok(),
        Sock::None => return,
    };
    if sent {
        s.tx_ids.insert(s.next_tx_id, seq);
        s.next_tx_id = s.next_tx_id.wrapping_add(1);
    } else {
        p.send_failed = true;
    }
    s.data.samples.push(p);
    collect_tx(s);
}

fn collect_tx(s: &mut Stream) {
    let stamps = match &s.sock {
        Sock::Udp(sock) => so::read_tx_timestamps(sock),
        Sock::Icmp(sock) => so::read_tx_timestamps(sock),
        Sock::None => return,
    };
    for (id, ns) in stamps {
        let sample = s
            .tx_ids
            .remove(&id)
            .and_then(|seq| s.data.samples.get_mut(seq as usize));
        if let Some(p) = sample {
            p.send_kernel_ns = Some(ns);
        }
    }
}

fn drain(s: &mut Stream, cfg: &ProbeConfig, buf: &mut [u8], live: &Live) {
    for _ in 0..256 {
        let r = match &s.sock {
            Sock::Udp(sock) => so::recv_timestamped(sock, buf),
            Sock::Icmp(sock) => so::recv_timestamped(sock, buf),
            Sock::None => return,
        };
        let Ok(r) = r else { return };
        let seq = match &s.sock {
            Sock::Udp(_) => {
                let Ok(pkt) = ProbePacket::new_checked(&buf[..r.len]) else {
                    continue;
                };
                if pkt.kind() != rb::KIND_REPLY
                    || pkt.session() != cfg.session
                    || pkt.stream() != s.id
                {
                    continue;
                }
                let prev = if pkt.flags() & rb::FLAG_PREV_TX != 0 {
                    s.data.samples.get_mut(pkt.prev_seq() as usize)
                } else {
                    None
                };
                if let Some(prev) = prev {
                    prev.server_tx_kernel_ns = Some(pkt.server_prev_tx_ns());
                }
                let Some(p) = s.data.samples.get_mut(pkt.seq() as usize) else {
                    continue;
                };
                if p.received() {
                    continue; // duplicate
                }
                p.server_rx_ns = Some(pkt.server_rx_ns());
                p.server_rx_kernel = pkt.flags() & rb::FLAG_SERVER_RX_KERNEL != 0;
                p.server_tx_user_ns = Some(pkt.server_tx_ns());
                pkt.seq()
            }
            Sock::Icmp(sock) => {
                let Some(seq16) = sock.parse_reply(&buf[..r.len], r.from) else {
                    continue;
                };
                // Sequence numbers wrap at 65536 (3.6 min at 5 ms): take the latest match.
                let n = s.data.samples.len() as u32;
                let Some(seq) = (0..n).rev().find(|&q| q as u16 == seq16) else {
                    continue;
                };
                if s.data.samples[seq as usize].received() {
                    continue;
                }
                seq
            }
            Sock::None => return,
        };
        if let Some(p) = s.data.samples.get_mut(seq as usize) {
            p.recv_user_ns = Some(r.user_ns);
            p.recv_kernel_ns = r.kernel_ns;
            let send = p.send_kernel_ns.unwrap_or(p.send_user_ns);
            if let Some(k) = r.kernel_ns {
                // The summary's RTT: the round trip minus the time the reflector held the
                // probe (its kernel send stamp only comes with the next reply, so the live
                // line uses the user-space one).
                let held = match (p.server_rx_ns, p.server_tx_user_ns) {
                    (Some(rx), Some(tx)) => tx.saturating_sub(rx),
                    _ => 0,
                };
                live.last_rtt_us.store(
                    k.saturating_sub(send).saturating_sub(held) / 1000,
                    Ordering::Relaxed,
                );
            }
        }
    }
}

/// Convenience for callers that run the engine on a thread.
pub fn spawn(
    cfg: ProbeConfig,
    plans: Vec<ProbePlan>,
    live: Arc<Live>,
    stop: Arc<AtomicBool>,
) -> std::io::Result<std::thread::JoinHandle<Result<Vec<StreamData>, LatencyError>>> {
    std::thread::Builder::new()
        .name("rb-probes".into())
        .spawn(move || run(&cfg, &plans, &live, &stop))
}
