//! Data streams: one thread per stream (so `-P` scales with cores), TCP and UDP, send and
//! receive, with iperf3's UDP loss/jitter arithmetic (docs/protocols/iperf3.md §8) and average-rate
//! pacing for `-b` (§7.4). Workers only count; the meter samples their counters.

use super::control::{is_reset, is_timeout};
use super::cpu::ThreadCpu;
use crate::net::zerocopy::ZeroCopySender;
use nix::sys::time::TimeSpec;
use nix::time::{ClockId, clock_gettime};
use portable_atomic::AtomicU64;
use std::io::Write;
use std::net::{TcpStream, UdpSocket};

#[path = "stream_udp.rs"]
mod udp;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How often a blocked worker wakes to look at the stop flag.
pub const WORKER_TICK: Duration = Duration::from_millis(200);
/// How long a TCP read waits to fill its block before returning what it has.
pub const RECV_WAIT: Duration = Duration::from_millis(20);

/// A data socket.
#[derive(Debug)]
pub enum DataSock {
    Tcp(TcpStream),
    Udp(UdpSocket),
}

impl DataSock {
    pub fn try_clone(&self) -> std::io::Result<DataSock> {
        Ok(match self {
            DataSock::Tcp(s) => DataSock::Tcp(s.try_clone()?),
            DataSock::Udp(s) => DataSock::Udp(s.try_clone()?),
        })
    }

    pub fn local_addr(&self) -> std::io::Result<std::net::SocketAddr> {
        match self {
            DataSock::Tcp(s) => s.local_addr(),
            DataSock::Udp(s) => s.local_addr(),
        }
    }

    pub fn peer_addr(&self) -> std::io::Result<std::net::SocketAddr> {
        match self {
            DataSock::Tcp(s) => s.peer_addr(),
            DataSock::Udp(s) => s.peer_addr(),
        }
    }

    /// Wakes a worker blocked on this socket (TCP: shutdown both ways; UDP relies on the tick).
    pub fn wake(&self) {
        if let DataSock::Tcp(s) = self {
            let _ = s.shutdown(std::net::Shutdown::Both);
        }
    }
}

/// A UDP receiver's state (iperf_udp_recv).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct UdpRecvStats {
    /// Highest sequence number seen (iperf3's receiver `packets`).
    pub packet_count: i64,
    /// Datagrams inferred lost from gaps, repaid by late arrivals.
    pub cnt_error: i64,
    pub outoforder: i64,
    /// RFC 1889 jitter EWMA in seconds.
    pub jitter: f64,
    prev_transit: Option<f64>,
}

impl UdpRecvStats {
    /// Accounts one datagram with sequence `pcount` sent at `sent` (sender's monotonic seconds)
    /// and received at `arrival` (our monotonic seconds).
    pub fn on_datagram(&mut self, pcount: i64, sent: f64, arrival: f64) {
        if pcount > self.packet_count {
            if pcount > self.packet_count + 1 {
                self.cnt_error += (pcount - 1) - self.packet_count;
            }
            self.packet_count = pcount;
        } else {
            self.outoforder += 1;
            if self.cnt_error > 0 {
                self.cnt_error -= 1;
            }
        }
        let transit = (arrival - sent).abs();
        let prev = self.prev_transit.unwrap_or(transit);
        let d = (transit - prev).abs();
        self.prev_transit = Some(transit);
        self.jitter += (d - self.jitter) / 16.0;
    }

    /// The omit period ended: jitter restarts from 0 (iperf3 resets it).
    pub fn reset_jitter(&mut self) {
        self.jitter = 0.0;
    }
}

/// Counters a worker updates and the meter reads.
#[derive(Debug, Default)]
pub struct Counters {
    pub bytes: AtomicU64,
    /// TCP: writes or reads completed; UDP: datagrams sent or received.
    pub blocks: AtomicU64,
    pub udp_rx: Mutex<UdpRecvStats>,
    /// Set by the meter when the omit period ends: the UDP receiver restarts its jitter.
    pub reset_jitter: AtomicBool,
}

impl Counters {
    pub fn udp_snapshot(&self) -> UdpRecvStats {
        self.udp_rx.lock().map(|g| *g).unwrap_or_default()
    }
}

/// A shared byte budget for `-n`/`-k` on sending streams: each block is claimed before it is
/// written, so the test sends at least `limit` and at most one block more per stream.
#[derive(Debug)]
pub struct Budget {
    pub claimed: AtomicU64,
    pub limit: u64,
}

impl Budget {
    fn claim(&self, n: u64) -> bool {
        self.claimed.fetch_add(n, Ordering::Relaxed) < self.limit
    }
}

/// How a worker runs.
#[derive(Debug, Clone)]
pub struct WorkerConfig {
    pub sender: bool,
    /// Block (TCP write/read size) or datagram size.
    pub len: usize,
    /// bit/s, 0 = unlimited.
    pub rate: u64,
    /// UDP 64-bit sequence numbers.
    pub wide: bool,
    pub repeating_payload: bool,
    pub budget: Option<Arc<Budget>>,
    /// Receiver: after the stop flag, keep reading (and counting) what is already in flight
    /// until the socket is idle for [`DRAIN_IDLE`] or closed, at most [`DRAIN_MAX`]. Then
    /// receiver and sender agree on the bytes (iperf3 drops them: issue #382).
    pub drain: bool,
    /// Pin the worker thread to this CPU (`-A`, or the loopback placement).
    pub cpu: Option<usize>,
    /// TCP sender: `-Z` (MSG_ZEROCOPY, or sendfile where the kernel copies anyway).
    pub zerocopy: bool,
    /// TCP receiver: `--skip-rx-copy` (the kernel discards the bytes, MSG_TRUNC).
    pub skip_rx_copy: bool,
    /// UDP: batch with GSO/GRO where the kernel has them (else sendmmsg/recvmmsg).
    pub udp_offload: bool,
    /// TCP receiver: `SO_RCVLOWAT`, the bytes queued before the kernel wakes the reader
    /// ([`receive_lowat`]); None leaves the kernel's 1.
    pub rcvlowat: Option<usize>,
}

/// The smallest and largest wake-up size of a TCP receiver ([`receive_lowat`]), and what the
/// receivers of one test may hold back in all before they are woken.
const LOWAT_MIN: usize = 64 << 10;
const LOWAT_FLOOR: usize = 512 << 10;
const LOWAT_MAX: usize = 1 << 20;
const LOWAT_BUDGET: usize = 2 << 20;

/// `loopback --rcvlowat BYTES` (a hidden knob for measuring): every TCP receiver of this
/// process wakes per BYTES instead of [`receive_lowat`]'s choice; 1 leaves the kernel's
/// default; 0 (unset) keeps the choice.
pub static RCVLOWAT_OVERRIDE: std::sync::atomic::AtomicUsize =
    std::sync::atomic::AtomicUsize::new(0);

/// How much a TCP receiver lets the kernel queue before it is woken (`SO_RCVLOWAT`), for
/// blocks of `len` bytes on one of `streams` streams, with `-w window` if given.
///
/// Without it the kernel wakes the reader for every segment that arrives, and on loopback
/// each wake-up of a thread on the other CPU is paid by the sender, whose CPU runs the
/// receive path: iperf3 3.21's `-Z` into our server (which then woke ~11,000 times per GB)
/// cost ~25 % more receiver CPU and ~40 % more sender CPU per GB than into iperf3's, and ran
/// 0.79x (docs/benchmarks.md, "Throughput", 2026-12-05). Woken per 512 KiB, the same pair
/// slept 160–600 times per GB and ran 47–76 Gbit/s against iperf3's own 18–32 under bbr; under
/// cubic, where the CPUs rather than the ACK clock are the limit, it measured within the
/// spread. So: the block, at least 512 KiB (iperf3 clients send 128 KiB), at most 1 MiB, and
/// at most 2 MiB over all the test's streams (memory a router's kernel must hold per test:
/// `-P 4` gets 512 KiB, `-P 32` 64 KiB; fewer than 64 KiB each is not worth it and is left
/// alone). With `-w` the buffer is fixed, and waiting for half of it (the kernel's own cap)
/// would stall the sender a round trip per wake-up, so a quarter of it at most. A slow stream
/// is read when its receive timeout ([`RECV_WAIT`]) ends, so intervals lag by no more than
/// before; the drain at the end sets it back to 1.
pub fn receive_lowat(len: usize, streams: usize, window: Option<u32>) -> Option<usize> {
    match RCVLOWAT_OVERRIDE.load(std::sync::atomic::Ordering::Relaxed) {
        0 => {}
        1 => return None,
        v => return Some(v),
    }
    let mut v = len
        .clamp(LOWAT_FLOOR, LOWAT_MAX)
        .min(LOWAT_BUDGET / streams.max(1));
    if let Some(w) = window {
        v = v.min(w as usize / 4);
    }
    (v >= LOWAT_MIN).then_some(v)
}

/// A draining receiver stops after this long without data (above the 200 ms minimum TCP RTO,
/// so a segment retransmitted at the very end is still counted).
pub const DRAIN_IDLE: Duration = Duration::from_millis(250);
/// A draining receiver stops after this long in any case.
pub const DRAIN_MAX: Duration = Duration::from_secs(2);

/// The receive loop's view of the stop flag: running, draining, or finished.
pub(super) struct StopState {
    pub drain_until: Option<Instant>,
}

impl StopState {
    /// Returns false when the loop must end; switches `set_idle` on when draining starts.
    pub fn keep_going(&mut self, done: &AtomicBool, drain: bool, set_idle: impl FnOnce()) -> bool {
        if !done.load(Ordering::Relaxed) {
            return true;
        }
        if !drain {
            return false;
        }
        match self.drain_until {
            None => {
                self.drain_until = Some(Instant::now() + DRAIN_MAX);
                set_idle();
                true
            }
            Some(t) => Instant::now() < t,
        }
    }

    pub fn draining(&self) -> bool {
        self.drain_until.is_some()
    }
}

/// What a worker hands back when it ends.
#[derive(Debug)]
pub struct WorkerEnd {
    /// (user, system) CPU seconds of the worker thread.
    pub cpu: (f64, f64),
    /// Set if the stream failed while the test was still running.
    pub error: Option<std::io::Error>,
    /// How the stream moved its data, when that is worth a line in the result (`-Z`, GSO).
    pub note: Option<String>,
}

/// Opens when all of a test's workers exist: with `-P 128` the first workers would otherwise
/// starve the thread still spawning the others, and the clock would start late.
#[derive(Debug, Default)]
pub struct Gate(AtomicBool);

impl Gate {
    pub fn open(&self) {
        self.0.store(true, Ordering::Release);
    }

    /// Waits (sleeping) until open; false if `done` was set first.
    fn wait(&self, done: &AtomicBool) -> bool {
        while !self.0.load(Ordering::Acquire) {
            if done.load(Ordering::Relaxed) {
                return false;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        true
    }
}

/// Starts a worker thread for one stream; it moves data once `gate` opens.
pub fn spawn(
    id: i32,
    sock: DataSock,
    cfg: WorkerConfig,
    counters: Arc<Counters>,
    done: Arc<AtomicBool>,
    gate: Arc<Gate>,
) -> std::io::Result<JoinHandle<WorkerEnd>> {
    std::thread::Builder::new()
        .name(format!("iperf3-stream-{id}"))
        .spawn(move || {
            let pinned = cfg
                .cpu
                .map(|c| (c, crate::util::affinity::pin_current_thread(c)));
            if let Some((c, Err(e))) = pinned {
                return WorkerEnd {
                    cpu: (0.0, 0.0),
                    error: Some(std::io::Error::new(
                        e.kind(),
                        format!("cannot pin stream {id} to CPU {c}: {e}"),
                    )),
                    note: None,
                };
            }
            let cpu = ThreadCpu::start();
            if !gate.wait(&done) {
                return WorkerEnd {
                    cpu: cpu.stop(),
                    error: None,
                    note: None,
                };
            }
            let r = match (sock, cfg.sender) {
                (DataSock::Tcp(s), true) => tcp_send(s, &cfg, &counters, &done),
                (DataSock::Tcp(s), false) => tcp_recv(s, &cfg, &counters, &done).map(|()| None),
                (DataSock::Udp(s), true) => udp::udp_send(s, &cfg, &counters, &done),
                (DataSock::Udp(s), false) => udp::udp_recv(s, &cfg, &counters, &done),
            };
            let (note, error) = match r {
                Ok(note) => (note, None),
                Err(e) => (None, Some(e).filter(|_| !done.load(Ordering::Relaxed))),
            };
            WorkerEnd {
                cpu: cpu.stop(),
                error,
                note,
            }
        })
}

/// The payload iperf3 sends: random bytes, or "0123456789" repeated.
pub fn payload(len: usize, repeating: bool) -> Vec<u8> {
    let mut buf = vec![0u8; len];
    if repeating {
        for (i, b) in buf.iter_mut().enumerate() {
            *b = b'0' + (i % 10) as u8;
        }
    } else {
        super::fill_random(&mut buf);
    }
    buf
}

/// Sleeps so that `bytes` sent since `start` stay at or below `rate` bit/s on average.
pub(super) fn pace(rate: u64, bytes: u64, start: Instant, done: &AtomicBool) {
    if rate == 0 {
        return;
    }
    let due = Duration::from_secs_f64(bytes as f64 * 8.0 / rate as f64);
    let elapsed = start.elapsed();
    if due > elapsed {
        // Sleep in slices so a stop is noticed within a tick.
        let wait = (due - elapsed).min(WORKER_TICK);
        if !done.load(Ordering::Relaxed) {
            std::thread::sleep(wait);
        }
    }
}

fn tcp_send(
    mut s: TcpStream,
    cfg: &WorkerConfig,
    c: &Counters,
    done: &AtomicBool,
) -> std::io::Result<Option<String>> {
    s.set_write_timeout(Some(WORKER_TICK))?;
    let buf = payload(cfg.len, cfg.repeating_payload);
    let mut zc = if cfg.zerocopy {
        Some(ZeroCopySender::new(&s, &buf)?)
    } else {
        None
    };
    let start = Instant::now();
    let mut tally = Tally::new(c);
    while !done.load(Ordering::Relaxed) {
        if cfg
            .budget
            .as_ref()
            .is_some_and(|b| !b.claim(cfg.len as u64))
        {
            break;
        }
        let r = match zc.as_mut() {
            Some(z) => z.send(&s, &buf),
            None => s.write(&buf),
        };
        match r {
            Ok(n) => {
                tally.add(n as u64, 1);
            }
            Err(e) if is_timeout(&e) || e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
        pace(cfg.rate, tally.bytes, start, done);
    }
    Ok(zc.as_ref().map(ZeroCopySender::note))
}

/// A worker's own byte and block counts, added to the shared [`Counters`] every
/// [`Tally::EVERY`] blocks or [`Tally::PERIOD`], and when dropped: the hot loop does not write
/// a shared cache line (or, on 32-bit MIPS, take the lock of an emulated 64-bit atomic) per
/// block, and the meter's view lags by at most the period.
pub(super) struct Tally<'a> {
    c: &'a Counters,
    pub bytes: u64,
    pub blocks: u64,
    published: (u64, u64),
    last: Instant,
}

impl<'a> Tally<'a> {
    const EVERY: u64 = 64;
    const PERIOD: Duration = Duration::from_millis(5);

    pub fn new(c: &'a Counters) -> Self {
        Tally {
            c,
            bytes: 0,
            blocks: 0,
            published: (0, 0),
            last: Instant::now(),
        }
    }

    /// Counts; returns whether this call published (state kept beside the counts, such as a
    /// UDP receiver's loss figures, is published with them).
    pub fn add(&mut self, bytes: u64, blocks: u64) -> bool {
        self.bytes += bytes;
        self.blocks += blocks;
        let due =
            self.blocks - self.published.1 >= Self::EVERY || self.last.elapsed() >= Self::PERIOD;
        if due {
            self.flush();
        }
        due
    }

    /// Adds what was counted since the last flush to the shared counters.
    pub fn flush(&mut self) {
        self.c
            .bytes
            .fetch_add(self.bytes - self.published.0, Ordering::Relaxed);
        self.c
            .blocks
            .fetch_add(self.blocks - self.published.1, Ordering::Relaxed);
        self.published = (self.bytes, self.blocks);
        self.last = Instant::now();
    }
}

impl Drop for Tally<'_> {
    fn drop(&mut self) {
        self.flush();
    }
}

/// The most one `--skip-rx-copy` receive discards, whatever the block: the kernel frees the
/// skipped data as each call returns, and over loopback 128 KiB discards beat the block's size
/// when the sender writes bigger blocks. One stream, 4 s, sender 1 MiB (2026-12-04): 119–130
/// Gbit/s discarding 128 KiB against 116 discarding 1 MiB with cubic, 69–77 against 65–70 with
/// bbr (docs/benchmarks.md). Copying receives keep the block: there 1 MiB reads of 1 MiB
/// blocks measured best (92–96 against 74–80 Gbit/s at 128–256 KiB, cubic).
const SKIP_RX_LEN: usize = 128 << 10;

fn tcp_recv(
    s: TcpStream,
    cfg: &WorkerConfig,
    c: &Counters,
    done: &AtomicBool,
) -> std::io::Result<()> {
    // Reads wait for a whole block (MSG_WAITALL): one call per block instead of one per few
    // segments. Over loopback this took the receiver from ~85 % of a core to ~36 % and -P 1
    // from 0.9x to 1.27x iperf3 (docs/benchmarks.md). A slow stream's partial block comes back
    // after RECV_WAIT, so interval counts lag the wire by at most that much data.
    s.set_read_timeout(Some(RECV_WAIT))?;
    // Inside that call the kernel still wakes us per arriving segment unless SO_RCVLOWAT says
    // otherwise (receive_lowat); a kernel that refuses it wakes us per segment as before.
    if let Some(v) = cfg.rcvlowat {
        let _ = crate::net::sockopt::set_recv_lowat(&s, v);
    }
    // One block per read, as iperf3: a cache-sized buffer (1 MiB reads measured slower).
    let mut buf = vec![0u8; if cfg.skip_rx_copy { 0 } else { cfg.len.max(1) }];
    let mut stop = StopState { drain_until: None };
    let mut tally = Tally::new(c);
    while stop.keep_going(done, cfg.drain, || {
        let _ = s.set_read_timeout(Some(DRAIN_IDLE));
        // What is left comes back as soon as it is there, not at the idle timeout.
        if cfg.rcvlowat.is_some() {
            let _ = crate::net::sockopt::set_recv_lowat(&s, 1);
        }
    }) {
        let r = if cfg.skip_rx_copy {
            crate::net::zerocopy::recv_discard(&s, cfg.len.clamp(1, SKIP_RX_LEN))
        } else {
            crate::net::sockopt::recv_waitall(&s, &mut buf)
        };
        match r {
            Ok(0) => return Ok(()),
            Ok(n) => {
                tally.add(n as u64, 1);
            }
            Err(e) if is_timeout(&e) && stop.draining() => return Ok(()),
            Err(e) if is_timeout(&e) || e.kind() == std::io::ErrorKind::Interrupted => {
                tally.flush();
            }
            Err(e) if is_reset(&e) => return Ok(()),
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// CLOCK_MONOTONIC now, as (seconds, microseconds) and as f64 seconds.
pub fn monotonic_now() -> (u32, u32, f64) {
    // CLOCK_MONOTONIC always exists on Linux; a failure would read as the clock's origin.
    let ts = clock_gettime(ClockId::CLOCK_MONOTONIC).unwrap_or(TimeSpec::new(0, 0));
    let usec = (ts.tv_nsec() / 1000) as u32;
    (
        ts.tv_sec() as u32,
        usec,
        ts.tv_sec() as f64 + usec as f64 * 1e-6,
    )
}

/// Receive buffer asked for on UDP data sockets when the client gave no `-w`.
pub const UDP_RCVBUF: usize = 4 << 20;

/// Applies the test's socket options to a data socket, as iperf3 does on both ends: TOS,
/// TCP_CONGESTION, window (SO_SNDBUF/SO_RCVBUF, checked), TCP_NODELAY, SO_MAX_PACING_RATE,
/// DF. Returns warnings for options that only degrade (an unknown congestion algorithm);
/// errors name the option that failed.
pub fn apply_options(
    sock: &DataSock,
    p: &crate::wire::iperf3::TestParams,
) -> Result<Vec<String>, (i32, String)> {
    use crate::net::sockopt;
    let mut warnings = Vec::new();
    let ipv6 = sock.local_addr().map(|a| a.is_ipv6()).unwrap_or(false);
    let fail = |code: i32, what: &str, e: std::io::Error| (code, format!("{what}: {e}"));
    match sock {
        DataSock::Tcp(s) => {
            if let Some(tos) = p.tos {
                sockopt::set_tos(s, tos, ipv6).map_err(|e| fail(125, "IP_TOS", e))?;
            }
            if let Some(cc) = &p.congestion {
                match sockopt::set_congestion(s, cc) {
                    Ok(()) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => warnings.push(format!(
                        "congestion control {cc:?} is not available here; using the default"
                    )),
                    Err(e) => return Err(fail(134, "TCP_CONGESTION", e)),
                }
            }
            if let Some(w) = p.window {
                sockopt::set_buffers(s, w as usize).map_err(|e| fail(141, "socket buffer", e))?;
            }
            if p.nodelay {
                s.set_nodelay(true)
                    .map_err(|e| fail(122, "TCP_NODELAY", e))?;
            }
            if p.fqrate > 0 {
                sockopt::set_max_pacing_rate(s, p.fqrate / 8)
                    .map_err(|e| fail(140, "SO_MAX_PACING_RATE", e))?;
            }
        }
        DataSock::Udp(s) => {
            if let Some(tos) = p.tos {
                sockopt::set_tos(s, tos, ipv6).map_err(|e| fail(125, "IP_TOS", e))?;
            }
            if let Some(w) = p.window {
                sockopt::set_buffers(s, w as usize).map_err(|e| fail(141, "socket buffer", e))?;
            } else {
                // Best effort: a 4 MiB receive buffer (8 MiB of truesize once the kernel
                // doubles it) rides out ~30 ms scheduling hiccups at 2 Gbit/s on a busy
                // box, so the loss we report is the network's (iperf3 keeps the default).
                let _ = socket2::SockRef::from(s).set_recv_buffer_size(UDP_RCVBUF);
            }
            if p.fqrate > 0 {
                sockopt::set_max_pacing_rate(s, p.fqrate / 8)
                    .map_err(|e| fail(140, "SO_MAX_PACING_RATE", e))?;
            }
            if p.dont_fragment && !ipv6 {
                sockopt::set_dont_fragment(s).map_err(|e| fail(145, "IP_MTU_DISCOVER", e))?;
            }
        }
    }
    Ok(warnings)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn udp_loss_and_reorder_like_iperf3() {
        let mut st = UdpRecvStats::default();
        for seq in [1, 2, 5, 3, 6] {
            st.on_datagram(seq, 100.0, 100.001);
        }
        // Gap 3..4 counted as 2 lost, the late 3 repays one.
        assert_eq!((st.packet_count, st.cnt_error, st.outoforder), (6, 1, 1));
        assert_eq!(st.jitter, 0.0, "constant transit gives zero jitter");
        st.on_datagram(7, 100.0, 100.017);
        assert!((st.jitter - 0.016 / 16.0).abs() < 1e-9);
    }

    #[test]
    fn payload_repeats_digits() {
        assert_eq!(&payload(12, true), b"012345678901");
        assert_eq!(payload(100, false).len(), 100);
    }

    #[test]
    fn tcp_stream_counts_and_stops() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let a = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (b, _) = l.accept().unwrap();
        let done = Arc::new(AtomicBool::new(false));
        let budget = Arc::new(Budget {
            claimed: AtomicU64::new(0),
            limit: 1_000_000,
        });
        let cfg = WorkerConfig {
            sender: true,
            len: 65536,
            rate: 0,
            wide: false,
            repeating_payload: false,
            budget: Some(budget),
            drain: true,
            cpu: None,
            zerocopy: false,
            skip_rx_copy: false,
            udp_offload: true,
            rcvlowat: None,
        };
        let tx = Arc::new(Counters::default());
        let rx = Arc::new(Counters::default());
        let gate = Arc::new(Gate::default());
        gate.open();
        let h1 = spawn(
            1,
            DataSock::Tcp(a),
            cfg.clone(),
            tx.clone(),
            done.clone(),
            gate.clone(),
        )
        .unwrap();
        // The receiver waits for 512 KiB per wake-up: the last 512 KiB still arrive (at the FIN).
        let rcfg = WorkerConfig {
            sender: false,
            budget: None,
            rcvlowat: receive_lowat(65536, 1, None),
            ..cfg
        };
        assert_eq!(rcfg.rcvlowat, Some(512 << 10));
        let h2 = spawn(1, DataSock::Tcp(b), rcfg, rx.clone(), done.clone(), gate).unwrap();
        let end = h1.join().unwrap();
        assert!(end.error.is_none());
        let sent = tx.bytes.load(Ordering::Relaxed);
        assert_eq!(sent, 16 * 65536, "budget rounds up to whole blocks");
        let _ = h2.join().unwrap();
        assert_eq!(rx.bytes.load(Ordering::Relaxed), sent);
    }

    #[test]
    fn the_receive_low_water_mark_follows_the_block_the_streams_and_the_window() {
        const K: usize = 1024;
        // iperf3's 128 KiB blocks: woken per 512 KiB; our 1 MiB blocks: per block; never more.
        assert_eq!(receive_lowat(128 * K, 1, None), Some(512 * K));
        assert_eq!(receive_lowat(1024 * K, 1, None), Some(1024 * K));
        assert_eq!(receive_lowat(16 * 1024 * K, 1, None), Some(1024 * K));
        assert_eq!(receive_lowat(1, 1, None), Some(512 * K));
        // 2 MiB over the test's streams, and nothing below 64 KiB each.
        assert_eq!(receive_lowat(512 * K, 4, None), Some(512 * K));
        assert_eq!(receive_lowat(512 * K, 8, None), Some(256 * K));
        assert_eq!(receive_lowat(128 * K, 32, None), Some(64 * K));
        assert_eq!(receive_lowat(128 * K, 33, None), None);
        assert_eq!(receive_lowat(128 * K, 0, None), Some(512 * K));
        // A fixed buffer (-w): a quarter of it at most.
        assert_eq!(receive_lowat(128 * K, 1, Some(1024 * 1024)), Some(256 * K));
        assert_eq!(receive_lowat(128 * K, 1, Some(128 * 1024)), None);
    }

    #[test]
    fn a_trickle_below_the_low_water_mark_is_counted_at_the_receive_timeout() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let mut a = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (b, _) = l.accept().unwrap();
        let done = Arc::new(AtomicBool::new(false));
        let rx = Arc::new(Counters::default());
        let gate = Arc::new(Gate::default());
        gate.open();
        let cfg = WorkerConfig {
            sender: false,
            len: 128 << 10,
            rate: 0,
            wide: false,
            repeating_payload: false,
            budget: None,
            drain: true,
            cpu: None,
            zerocopy: false,
            skip_rx_copy: false,
            udp_offload: true,
            rcvlowat: Some(1 << 20),
        };
        let h = spawn(1, DataSock::Tcp(b), cfg, rx.clone(), done.clone(), gate).unwrap();
        // 3 small writes, far below the 1 MiB mark, and the socket stays open: each must be
        // counted within a few receive timeouts (20 ms), not held until 1 MiB or the end.
        for i in 1..=3u64 {
            std::io::Write::write_all(&mut a, &[7u8; 1000]).unwrap();
            let mut seen = 0;
            for _ in 0..200 {
                seen = rx.bytes.load(Ordering::Relaxed);
                if seen == 1000 * i {
                    break;
                }
                std::thread::sleep(Duration::from_millis(5));
            }
            assert_eq!(seen, 1000 * i, "write {i} not counted within 1 s");
        }
        done.store(true, Ordering::Relaxed);
        drop(a);
        let end = h.join().unwrap();
        assert!(end.error.is_none());
        assert_eq!(rx.bytes.load(Ordering::Relaxed), 3000);
    }
}
