//! The lab's own round-trip probe: a UDP echo server thread in one namespace and a prober thread
//! in another. Used by `lab status` (reachability) and `lab measure` (queue delay next to bulk
//! TCP). Both threads are bounded in time; sockets have timeouts.

use anyhow::{Context, Result};
use std::net::{Ipv4Addr, SocketAddrV4, UdpSocket};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// First bytes of every probe; anything else that arrives is ignored.
const MAGIC: &[u8; 8] = b"RBLABPRB";
/// Probe size on the wire (IP payload): small, like ping's 64 bytes.
const PROBE_LEN: usize = 64;

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
        let (ready_tx, ready_rx) = std::sync::mpsc::channel::<Result<()>>();
        let handle = super::netns::spawn_in(ns, move || {
            let sock = match UdpSocket::bind(SocketAddrV4::new(ip, port)) {
                Ok(s) => s,
                Err(e) => {
                    let err = anyhow::anyhow!("probe echo server cannot bind {ip}:{port}: {e}");
                    let _ = ready_tx.send(Err(anyhow::anyhow!("{err}")));
                    return Err(err);
                }
            };
            sock.set_read_timeout(Some(Duration::from_millis(100)))?;
            sock.set_write_timeout(Some(Duration::from_millis(500)))?;
            let _ = ready_tx.send(Ok(()));
            let start = Instant::now();
            let mut echoed = 0u64;
            let mut buf = [0u8; 2048];
            while !stop2.load(Ordering::Relaxed) && start.elapsed() < max_life {
                match sock.recv_from(&mut buf) {
                    Ok((n, peer)) if n >= MAGIC.len() && &buf[..MAGIC.len()] == MAGIC => {
                        if sock.send_to(&buf[..n], peer).is_ok() {
                            echoed += 1;
                        }
                    }
                    Ok(_) => {}
                    Err(e)
                        if matches!(
                            e.kind(),
                            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                        ) => {}
                    Err(e) => return Err(e).context("probe echo server receive failed"),
                }
            }
            Ok(echoed)
        })?;
        let ready = ready_rx
            .recv_timeout(Duration::from_secs(5))
            .context("probe echo server did not start within 5 s")?;
        ready?;
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
    super::netns::run_in(ns, move || probe_here(target, plan))
}

fn probe_here(target: SocketAddrV4, plan: ProbePlan) -> Result<(u32, Vec<f64>)> {
    let sock = UdpSocket::bind(SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, 0))
        .context("probe socket bind failed")?;
    sock.connect(target)
        .with_context(|| format!("probe socket cannot connect to {target}"))?;
    sock.set_write_timeout(Some(Duration::from_millis(500)))?;
    let count = plan.count.min(100_000);
    let mut sent_at: Vec<Option<Instant>> = vec![None; count as usize];
    let mut rtts = Vec::with_capacity(count as usize);
    let mut buf = [0u8; 2048];
    let mut pkt = [0u8; PROBE_LEN];
    pkt[..8].copy_from_slice(MAGIC);
    let start = Instant::now();
    let deadline_of = |i: u32| start + plan.interval * i;
    for seq in 0..count {
        pkt[8..12].copy_from_slice(&seq.to_be_bytes());
        sent_at[seq as usize] = Some(Instant::now());
        // A send error (e.g. ICMP unreachable reported back) counts as a lost probe.
        let _ = sock.send(&pkt);
        let until = if seq + 1 == count {
            Instant::now() + plan.timeout
        } else {
            deadline_of(seq + 1)
        };
        receive_until(
            &sock,
            until,
            &mut buf,
            &mut sent_at,
            &mut rtts,
            plan.timeout,
        );
    }
    Ok((count, rtts))
}

fn receive_until(
    sock: &UdpSocket,
    until: Instant,
    buf: &mut [u8],
    sent_at: &mut [Option<Instant>],
    rtts: &mut Vec<f64>,
    timeout: Duration,
) {
    loop {
        let now = Instant::now();
        if now >= until {
            return;
        }
        let wait = (until - now).max(Duration::from_micros(100));
        if sock.set_read_timeout(Some(wait)).is_err() {
            return;
        }
        match sock.recv(buf) {
            Ok(n) if n >= 12 && &buf[..8] == MAGIC => {
                let rx = Instant::now();
                let seq = u32::from_be_bytes([buf[8], buf[9], buf[10], buf[11]]) as usize;
                if let Some(slot) = sent_at.get_mut(seq)
                    && let Some(tx) = slot.take()
                {
                    let rtt = rx - tx;
                    if rtt <= timeout {
                        rtts.push(rtt.as_secs_f64() * 1000.0);
                    }
                }
            }
            Ok(_) => {}
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                return;
            }
            // ECONNREFUSED from an ICMP error: nothing listens; keep the series' pace.
            Err(_) => {
                std::thread::sleep(until.saturating_duration_since(Instant::now()));
                return;
            }
        }
    }
}
