//! The lab's own round-trip probe: a UDP echo server thread in one namespace and a prober thread
//! in another. Used by `lab status` (reachability) and `lab measure` (queue delay next to bulk
//! TCP). Both threads are bounded in time; sockets have timeouts.
//!
//! Receive times are kernel timestamps (SO_TIMESTAMPNS) on both ends, and the echo carries how
//! long the server held the probe (its kernel receive time to its send), which the prober
//! subtracts: a thread woken late on a busy 2-core VM does not add false queue delay. All lab
//! namespaces share one CLOCK_REALTIME, so the two ends' stamps are comparable.

use super::error::{BoxError, Context, IoContext, LabError, Result};
use crate::net::is_timeout;
use nix::sys::socket::{
    ControlMessageOwned, MsgFlags, SockaddrIn, recvmsg, setsockopt, sockopt::ReceiveTimestampns,
};
use std::io::IoSliceMut;
use std::net::{Ipv4Addr, SocketAddrV4, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// First bytes of every probe; anything else that arrives is ignored.
const MAGIC: &[u8; 8] = b"RBLABPRB";
/// Probe size on the wire (IP payload): small, like ping's 64 bytes.
const PROBE_LEN: usize = 64;
/// Layout: magic[0..8], seq u32 [8..12], server hold time ns u64 [12..20].
const HOLD_AT: usize = 12;

/// CLOCK_REALTIME now, ns (the clock SO_TIMESTAMPNS uses).
fn realtime_ns() -> i128 {
    nix::time::clock_gettime(nix::time::ClockId::CLOCK_REALTIME)
        .map(|t| i128::from(t.tv_sec()) * 1_000_000_000 + i128::from(t.tv_nsec()))
        .unwrap_or(0)
}

/// One datagram with its kernel receive time (falls back to "now" if the kernel gave none).
struct Received {
    len: usize,
    from: Option<SocketAddrV4>,
    rx_ns: i128,
}

fn recv_stamped(sock: &UdpSocket, buf: &mut [u8]) -> std::io::Result<Received> {
    let mut cmsg = nix::cmsg_space!(nix::sys::time::TimeSpec);
    let mut iov = [IoSliceMut::new(buf)];
    let msg = loop {
        match recvmsg::<SockaddrIn>(
            sock.as_raw_fd(),
            &mut iov,
            Some(&mut cmsg),
            MsgFlags::empty(),
        ) {
            Ok(m) => break m,
            Err(nix::errno::Errno::EINTR) => continue,
            Err(e) => return Err(std::io::Error::from(e)),
        }
    };
    let mut rx_ns = None;
    if let Ok(cmsgs) = msg.cmsgs() {
        for c in cmsgs {
            if let ControlMessageOwned::ScmTimestampns(ts) = c {
                rx_ns = Some(i128::from(ts.tv_sec()) * 1_000_000_000 + i128::from(ts.tv_nsec()));
            }
        }
    }
    Ok(Received {
        len: msg.bytes,
        from: msg.address.map(|a| SocketAddrV4::new(a.ip(), a.port())),
        rx_ns: rx_ns.unwrap_or_else(realtime_ns),
    })
}

/// A running UDP echo server; stops when dropped or at its deadline.
pub struct EchoServer {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<Result<u64>>>,
}

impl EchoServer {
    /// Starts an echo server on `ip:port` inside `ns` that runs at most `max_life`.
    pub fn start(ns: &str, ip: Ipv4Addr, port: u16, max_life: Duration) -> Result<Self> {
        let stop = Arc::new(AtomicBool::new(false));
        let stop2 = stop.clone();
        let (ready_tx, ready_rx) = std::sync::mpsc::channel::<std::result::Result<(), String>>();
        let handle = super::netns::spawn_in(ns, move || {
            let setup = || -> Result<UdpSocket> {
                let sock = UdpSocket::bind(SocketAddrV4::new(ip, port))
                    .io_context(|| format!("probe echo server cannot bind {ip}:{port}"))?;
                let timeouts = || "timeouts on the probe echo server".to_string();
                sock.set_read_timeout(Some(Duration::from_millis(100)))
                    .io_context(timeouts)?;
                sock.set_write_timeout(Some(Duration::from_millis(500)))
                    .io_context(timeouts)?;
                setsockopt(&sock, ReceiveTimestampns, &true)
                    .context("SO_TIMESTAMPNS on the probe echo server")?;
                Ok(sock)
            };
            let sock = match setup() {
                Ok(s) => s,
                Err(e) => {
                    let _ = ready_tx.send(Err(super::error::chain(&e)));
                    return Err(BoxError::from(e));
                }
            };
            let _ = ready_tx.send(Ok(()));
            let start = Instant::now();
            let mut echoed = 0u64;
            let mut buf = [0u8; 2048];
            while !stop2.load(Ordering::Relaxed) && start.elapsed() < max_life {
                match recv_stamped(&sock, &mut buf) {
                    Ok(r) if r.len >= HOLD_AT + 8 && &buf[..MAGIC.len()] == MAGIC => {
                        let Some(peer) = r.from else { continue };
                        let hold = (realtime_ns() - r.rx_ns).max(0) as u64;
                        buf[HOLD_AT..HOLD_AT + 8].copy_from_slice(&hold.to_be_bytes());
                        if sock.send_to(&buf[..r.len], peer).is_ok() {
                            echoed += 1;
                        }
                    }
                    Ok(_) => {}
                    Err(e) if is_timeout(&e) => {}
                    Err(source) => {
                        let what = "probe echo server receive failed".into();
                        return Err(LabError::Io { what, source }.into());
                    }
                }
            }
            Ok(echoed)
        })?;
        let ready = ready_rx
            .recv_timeout(Duration::from_secs(5))
            .context("probe echo server did not start within 5 s")?;
        ready.map_err(LabError::State)?;
        Ok(Self {
            stop,
            handle: Some(handle),
        })
    }

    /// Stops the server and returns how many probes it echoed.
    pub fn stop(mut self) -> Result<u64> {
        self.stop.store(true, Ordering::Relaxed);
        match self.handle.take() {
            Some(h) => super::netns::join(h),
            None => Ok(0),
        }
    }
}

impl Drop for EchoServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

/// How to send a probe series.
#[derive(Debug, Clone, Copy)]
pub struct ProbePlan {
    pub count: u32,
    pub interval: Duration,
    /// A reply later than this counts as lost.
    pub timeout: Duration,
}

/// Sends `plan.count` probes from inside `ns` to `target` and returns (sent, RTTs in ms).
///
/// Sending and receiving run in one thread: after each send it waits for replies until the next
/// send time, so late replies of earlier probes are still matched by sequence number.
pub fn probe(ns: &str, target: SocketAddrV4, plan: ProbePlan) -> Result<(u32, Vec<f64>)> {
    super::netns::run_in(ns, move || Ok(probe_here(target, plan)?))
}

struct Series {
    sent_ns: Vec<Option<i128>>,
    rtts_ms: Vec<f64>,
    timeout_ns: i128,
}

fn probe_here(target: SocketAddrV4, plan: ProbePlan) -> Result<(u32, Vec<f64>)> {
    let sock = UdpSocket::bind(SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, 0))
        .io_context(|| "probe socket bind failed".into())?;
    sock.connect(target)
        .io_context(|| format!("probe socket cannot connect to {target}"))?;
    sock.set_write_timeout(Some(Duration::from_millis(500)))
        .io_context(|| "send timeout on the probe socket".into())?;
    setsockopt(&sock, ReceiveTimestampns, &true).context("SO_TIMESTAMPNS on the probe socket")?;
    let count = plan.count.min(100_000);
    let mut series = Series {
        sent_ns: vec![None; count as usize],
        rtts_ms: Vec::with_capacity(count as usize),
        timeout_ns: plan.timeout.as_nanos() as i128,
    };
    let mut buf = [0u8; 2048];
    let mut pkt = [0u8; PROBE_LEN];
    pkt[..8].copy_from_slice(MAGIC);
    let start = Instant::now();
    for seq in 0..count {
        pkt[8..12].copy_from_slice(&seq.to_be_bytes());
        series.sent_ns[seq as usize] = Some(realtime_ns());
        // A send error (e.g. ICMP unreachable reported back) counts as a lost probe.
        let _ = sock.send(&pkt);
        let until = if seq + 1 == count {
            Instant::now() + plan.timeout
        } else {
            start + plan.interval * (seq + 1)
        };
        receive_until(&sock, until, &mut buf, &mut series);
    }
    Ok((count, series.rtts_ms))
}

fn receive_until(sock: &UdpSocket, until: Instant, buf: &mut [u8], series: &mut Series) {
    loop {
        let now = Instant::now();
        if now >= until {
            return;
        }
        let wait = (until - now).max(Duration::from_micros(100));
        if sock.set_read_timeout(Some(wait)).is_err() {
            return;
        }
        match recv_stamped(sock, buf) {
            Ok(r) if r.len >= HOLD_AT + 8 && &buf[..8] == MAGIC => {
                let seq = u32::from_be_bytes([buf[8], buf[9], buf[10], buf[11]]) as usize;
                let mut hold = [0u8; 8];
                hold.copy_from_slice(&buf[HOLD_AT..HOLD_AT + 8]);
                let hold = i128::from(u64::from_be_bytes(hold));
                if let Some(tx) = series.sent_ns.get_mut(seq).and_then(Option::take) {
                    let rtt = r.rx_ns - tx - hold;
                    if (0..=series.timeout_ns).contains(&rtt) {
                        series.rtts_ms.push(rtt as f64 / 1e6);
                    }
                }
            }
            Ok(_) => {}
            Err(e) if is_timeout(&e) => return,
            // ECONNREFUSED from an ICMP error: nothing listens; keep the series' pace.
            Err(_) => {
                std::thread::sleep(until.saturating_duration_since(Instant::now()));
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_echo_subtracts_hold_time() {
        // Both ends on 127.0.0.1 in this process's namespace (no root needed).
        let server = UdpSocket::bind("127.0.0.1:0").unwrap();
        let addr = match server.local_addr().unwrap() {
            std::net::SocketAddr::V4(a) => a,
            _ => unreachable!(),
        };
        setsockopt(&server, ReceiveTimestampns, &true).unwrap();
        server
            .set_read_timeout(Some(Duration::from_secs(2)))
            .unwrap();
        let t = std::thread::spawn(move || {
            let mut buf = [0u8; 2048];
            for _ in 0..3 {
                let r = recv_stamped(&server, &mut buf).unwrap();
                // Hold each probe 30 ms: the prober must not count it.
                std::thread::sleep(Duration::from_millis(30));
                let hold = (realtime_ns() - r.rx_ns) as u64;
                buf[HOLD_AT..HOLD_AT + 8].copy_from_slice(&hold.to_be_bytes());
                server.send_to(&buf[..r.len], r.from.unwrap()).unwrap();
            }
        });
        let plan = ProbePlan {
            count: 3,
            interval: Duration::from_millis(50),
            timeout: Duration::from_secs(1),
        };
        let (sent, rtts) = probe_here(addr, plan).unwrap();
        t.join().unwrap();
        assert_eq!(sent, 3);
        assert_eq!(rtts.len(), 3, "{rtts:?}");
        assert!(
            rtts.iter().all(|&r| r < 20.0),
            "hold time not subtracted: {rtts:?}"
        );
    }
}
