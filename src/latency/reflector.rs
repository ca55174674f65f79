//! The UDP reflector: answers probes of live sessions with the kernel receive timestamp, the
//! reflector's send time and the kernel send timestamp of the previous reply of that stream.
//!
//! It answers only a probe that parses, belongs to a live session, comes from that session's IP
//! address and from the port the probe stream's first answered probe came from, is within the
//! size limit and within the session's rate; the reply is the received bytes, rewritten in
//! place, so it is never larger than the probe (no amplification). The reply carries the probe's
//! own DSCP mark back (EF stays EF in both directions).
//!
//! Under a flood: a socket filter (`net::bpf`) drops in the kernel every datagram that can be
//! neither a probe nor an iperf3 hello, so garbage never wakes this thread; what passes is
//! charged to its source address's budget ([`SourceBudget`]) before any session is looked up.

use super::error::ServiceError;
use super::state::{Inner, MAX_STREAMS};
use crate::net as so;
use crate::wire::rb::{self, ProbePacket};
use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// The reflector's sockets (one per address family).
pub struct Reflector {
    port_v4: Option<u16>,
    port_v6: Option<u16>,
}

impl Reflector {
    pub(crate) fn start(inner: Arc<Inner>) -> Result<Self, ServiceError> {
        let b = &inner.bounds;
        let (want_v4, want_v6, ip4, ip6) = match b.udp_bind {
            Some(IpAddr::V4(ip)) => (true, false, ip, Ipv6Addr::UNSPECIFIED),
            Some(IpAddr::V6(ip)) => (false, true, Ipv4Addr::UNSPECIFIED, ip),
            None => (true, true, Ipv4Addr::UNSPECIFIED, Ipv6Addr::UNSPECIFIED),
        };
        let mut port_v4 = None;
        let mut port_v6 = None;
        let mut errors = Vec::new();
        if want_v4 {
            match bind(SocketAddr::new(IpAddr::V4(ip4), b.udp_port), false) {
                Ok(s) => {
                    port_v4 = Some(s.local_addr()?.port());
                    spawn(inner.clone(), s, false)?;
                }
                Err(e) => errors.push(format!("IPv4 {ip4}:{}: {e}", b.udp_port)),
            }
        }
        if want_v6 {
            // Same port number as IPv4 when it is free, so one number serves both families.
            let port = port_v4.unwrap_or(b.udp_port);
            let sock = bind(SocketAddr::new(IpAddr::V6(ip6), port), true)
                .or_else(|_| bind(SocketAddr::new(IpAddr::V6(ip6), b.udp_port), true));
            match sock {
                Ok(s) => {
                    port_v6 = Some(s.local_addr()?.port());
                    spawn(inner.clone(), s, true)?;
                }
                Err(e) => errors.push(format!("IPv6 [{ip6}]:{port}: {e}")),
            }
        }
        if port_v4.is_none() && port_v6.is_none() {
            return Err(ServiceError::ReflectorBind(errors.join("; ")));
        }
        Ok(Self { port_v4, port_v6 })
    }

    pub fn port(&self, v6: bool) -> Option<u16> {
        if v6 { self.port_v6 } else { self.port_v4 }
    }
}

fn bind(addr: SocketAddr, v6: bool) -> std::io::Result<UdpSocket> {
    let domain = if v6 {
        socket2::Domain::IPV6
    } else {
        socket2::Domain::IPV4
    };
    let s = socket2::Socket::new(domain, socket2::Type::DGRAM, Some(socket2::Protocol::UDP))?;
    if v6 {
        s.set_only_v6(true)?;
    }
    // The iperf3 server's UDP stream sockets share the port (they set it too, as iperf3 does).
    s.set_reuse_address(true)?;
    // Room for bursts of probes (and hellos) while the thread is busy; best effort.
    let _ = s.set_recv_buffer_size(RECV_BUFFER);
    s.bind(&addr.into())?;
    let s: UdpSocket = s.into();
    s.set_read_timeout(Some(Duration::from_millis(200)))?;
    so::enable_timestamps(&s)?;
    so::enable_recv_tos(&s, v6)?;
    // Bound to the wildcard: each reply leaves from the address its probe was sent to, or a
    // client that probes one of this host's other addresses (rtt_fair's hosts on one server,
    // a multi-homed WAN host) drops it on its connected socket.
    if addr.ip().is_unspecified() {
        so::enable_recv_dst(&s, v6)?;
    }
    crate::net::bpf::attach_port_filter(&s)?;
    Ok(s)
}

/// The reflector socket's receive buffer, bytes.
const RECV_BUFFER: usize = 1 << 20;

/// Datagrams one source address may make the reflector handle per second (and its burst):
/// four sessions' probe rate (the per-host session limit's default), so a flood of well-formed
/// probes from one address costs bounded work whatever their session ids.
const SOURCE_RATE: f64 = 4000.0;
const SOURCE_BURST: f64 = 800.0;
/// Source addresses with a budget of their own at most; beyond it, new ones share one.
const MAX_SOURCES: usize = 1024;

/// A token bucket per source address, bounded in size (the overflow shares one bucket).
pub(crate) struct SourceBudget {
    buckets: HashMap<Option<IpAddr>, (f64, Instant)>,
    pub dropped: u64,
}

impl SourceBudget {
    pub(crate) fn new() -> Self {
        SourceBudget {
            buckets: HashMap::new(),
            dropped: 0,
        }
    }

    /// Whether `ip` may have one more datagram handled now.
    pub(crate) fn admit(&mut self, ip: IpAddr, now: Instant) -> bool {
        let mut key = Some(crate::net::addr::canonical_ip(ip));
        if !self.buckets.contains_key(&key) && self.buckets.len() >= MAX_SOURCES {
            // Forget sources whose buckets are full again (idle for a while).
            self.buckets.retain(|_, (tokens, last)| {
                *tokens + now.duration_since(*last).as_secs_f64() * SOURCE_RATE < SOURCE_BURST
            });
            if self.buckets.len() >= MAX_SOURCES {
                key = None;
            }
        }
        let (tokens, last) = self.buckets.entry(key).or_insert((SOURCE_BURST, now));
        *tokens =
            (*tokens + now.duration_since(*last).as_secs_f64() * SOURCE_RATE).min(SOURCE_BURST);
        *last = now;
        if *tokens >= 1.0 {
            *tokens -= 1.0;
            true
        } else {
            self.dropped += 1;
            false
        }
    }
}

fn spawn(inner: Arc<Inner>, sock: UdpSocket, v6: bool) -> std::io::Result<()> {
    std::thread::Builder::new()
        .name(format!("rb-reflector{}", if v6 { "6" } else { "4" }))
        .spawn(move || run(inner, sock, v6))?;
    Ok(())
}

/// Longest datagram handed to the port's other user (iperf3's UDP hello is 4 bytes).
const MAX_FOREIGN_LEN: usize = 64;

fn hand_over(inner: &Inner, from: SocketAddr, payload: &[u8]) -> bool {
    let hook = inner.foreign.lock().ok().and_then(|h| h.clone());
    hook.is_some_and(|h| h(from, payload))
}

/// Why a datagram was not answered (counted, and logged on the 1st, 2nd, 4th, 8th… time).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
enum Drop {
    NotProbe,
    Truncated,
    TooLong,
    UnknownSession,
    WrongAddress,
    /// From the session's address but not the port its probe stream is bound to.
    WrongPort,
    BadStream,
    RateLimited,
    /// Over its source address's budget.
    SourceBudget,
}

fn run(inner: Arc<Inner>, sock: UdpSocket, v6: bool) {
    let mut buf = vec![0u8; rb::PROBE_MAX_LEN + 1];
    let mut drops: HashMap<Drop, u64> = HashMap::new();
    // Kernel send-timestamp ids count sends on this socket; map them back to (session, stream, seq).
    let mut next_tx_id: u32 = 0;
    let mut pending: HashMap<u32, (u64, u8, u32)> = HashMap::new();
    let mut current_tos: u8 = 0;
    let mut budget = SourceBudget::new();
    while !inner.shutdown.load(Ordering::SeqCst) {
        let r = match so::recv_timestamped(&sock, &mut buf) {
            Ok(r) => r,
            Err(e) if crate::net::is_timeout(&e) => {
                continue;
            }
            Err(e) => {
                inner.log(format!("reflector: receive failed: {e}"));
                std::thread::sleep(Duration::from_millis(50));
                continue;
            }
        };
        let Some(from) = r.from else { continue };
        let verdict = if budget.admit(from.ip(), Instant::now()) {
            check(&inner, &buf, r.len, r.truncated, from)
        } else {
            Err(Drop::SourceBudget)
        };
        let (session, stream, seq) = match verdict {
            Ok(v) => v,
            // iperf3's UDP hello (4 bytes) on a shared port: the iperf3 server may take it.
            Err(Drop::NotProbe | Drop::Truncated)
                if r.len <= MAX_FOREIGN_LEN && hand_over(&inner, from, &buf[..r.len]) =>
            {
                continue;
            }
            Err(d) => {
                let n = drops.entry(d).or_insert(0);
                *n += 1;
                if n.is_power_of_two() {
                    inner.log(format!(
                        "reflector: ignored a datagram from {from}: {d:?} ({n} so far)"
                    ));
                }
                continue;
            }
        };
        let prev_tx = inner.session(session).and_then(|s| {
            s.probes
                .lock()
                .ok()
                .and_then(|p| p.streams.get(&stream).and_then(|st| st.prev_tx))
        });
        let rx_ns = r.kernel_ns.unwrap_or(r.user_ns);
        let tos = r.tos.unwrap_or(0);
        if tos != current_tos && so::set_tos(&sock, tos, v6).is_ok() {
            current_tos = tos;
        }
        let Ok(mut pkt) = ProbePacket::new_checked(&mut buf[..r.len]) else {
            continue;
        };
        pkt.make_reply(rx_ns, r.kernel_ns.is_some(), so::realtime_ns(), prev_tx);
        if crate::net::timestamp::send_from(&sock, &buf[..r.len], from, r.dst).is_ok() {
            pending.insert(next_tx_id, (session, stream, seq));
            next_tx_id = next_tx_id.wrapping_add(1);
            if let Some(s) = inner.session(session) {
                if let Ok(mut p) = s.probes.lock() {
                    p.streams.entry(stream).or_default().reflected += 1;
                }
            }
        }
        for (id, ns) in so::read_tx_timestamps(&sock) {
            let Some((sess, stream, seq)) = pending.remove(&id) else {
                continue;
            };
            if let Some(s) = inner.session(sess) {
                if let Ok(mut p) = s.probes.lock() {
                    p.streams.entry(stream).or_default().prev_tx = Some((seq, ns));
                }
            }
        }
        if pending.len() > 4096 {
            // Stamps that never came (queue overflow): forget the oldest ids.
            let floor = next_tx_id.wrapping_sub(1024);
            pending.retain(|&id, _| id.wrapping_sub(floor) < 1024);
        }
    }
}

/// Validates one datagram; on success counts it as received and returns (session, stream, seq).
fn check(
    inner: &Inner,
    buf: &[u8],
    len: usize,
    truncated: bool,
    from: SocketAddr,
) -> Result<(u64, u8, u32), Drop> {
    if truncated || len > rb::PROBE_MAX_LEN {
        return Err(Drop::TooLong);
    }
    let pkt = match ProbePacket::new_checked(&buf[..len]) {
        Ok(p) => p,
        Err(rb::WireError::Truncated { .. }) => return Err(Drop::Truncated),
        Err(_) => return Err(Drop::NotProbe),
    };
    if pkt.kind() != rb::KIND_PROBE {
        return Err(Drop::NotProbe);
    }
    let session = inner.session(pkt.session()).ok_or(Drop::UnknownSession)?;
    if !so::same_ip(session.peer_ip, from.ip()) {
        return Err(Drop::WrongAddress);
    }
    let stream = pkt.stream();
    let mut p = session.probes.lock().map_err(|_| Drop::UnknownSession)?;
    match p.streams.get(&stream) {
        None if p.streams.len() >= MAX_STREAMS => return Err(Drop::BadStream),
        Some(st) if st.port.is_some_and(|port| port != from.port()) => {
            return Err(Drop::WrongPort);
        }
        _ => {}
    }
    let now = Instant::now();
    let b = &inner.bounds;
    let refill = now.duration_since(p.last_refill).as_secs_f64() * b.probe_rate as f64;
    p.tokens = (p.tokens + refill).min(b.probe_burst as f64);
    p.last_refill = now;
    p.streams.entry(stream).or_default().received += 1;
    if p.tokens < 1.0 {
        return Err(Drop::RateLimited);
    }
    p.tokens -= 1.0;
    // The stream is bound to the port of its first answered probe.
    if let Some(st) = p.streams.get_mut(&stream) {
        st.port.get_or_insert(from.port());
    }
    drop(p);
    // A session whose probes flow runs: its seats are no longer evictable.
    session.mark_running();
    Ok((pkt.session(), stream, pkt.seq()))
}
