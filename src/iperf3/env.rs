//! What a server-side session needs from the daemon that hosts it: the limits of one test
//! ([`SessionConfig`]), the cookie broker for TCP data connections ([`StreamBroker`]), the UDP
//! port's queue, the stop flag and the server-wide ledger ([`SessionEnv`]).

use super::IntervalSink;
use super::auth::ServerAuth;
use crate::results::throughput::ThroughputResult;
use crate::service::limits::Ledger;
use crate::wire::iperf3::{self as wire, Cookie};
use std::collections::BTreeSet;
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::AtomicBool;
use std::sync::mpsc::Receiver;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// Client results are one small object per stream (≤ 256 streams): 256 KiB is plenty.
pub const MAX_CLIENT_RESULTS_LEN: usize = 256 << 10;

/// Routes TCP data connections (by cookie) from the server's listener to their test.
pub trait StreamBroker: Send + Sync {
    /// Connections with this cookie go to the returned receiver until `running` or `close`,
    /// each with its accept sequence number: connections are handed over by parallel
    /// threads, and iperf3 pairs stream ids by the order the client opened them.
    fn open(&self, cookie: &Cookie) -> Receiver<(u64, TcpStream)>;
    /// All streams are in: further connections with this cookie are refused (ACCESS_DENIED).
    fn running(&self, cookie: &Cookie);
    /// The test is over.
    fn close(&self, cookie: &Cookie);
}

/// Server limits and timeouts for one test.
#[derive(Debug, Clone)]
pub struct SessionConfig {
    /// Longest test accepted, `time + omit` in seconds; bytes/blocks-based tests end by then.
    pub max_duration: u32,
    /// Most streams per direction.
    pub max_streams: u32,
    /// Extra time after `time + omit` before the watchdog ends the test (iperf3: 40 s).
    pub grace: Duration,
    pub control_timeout: Duration,
    /// Interval length for the server's own reports, seconds.
    pub interval: f64,
    /// A running test in which no byte moves for this long is ended (IENOMSG).
    pub idle_timeout: Duration,
    /// Most buffer memory one test may make the server allocate (streams × block size), so
    /// `-P 128 -l 1M --bidir` cannot exhaust a router's RAM.
    pub max_buffer_bytes: u64,
    /// Pin stream threads to this CPU unless the client asks for one (`-A n,m`).
    pub cpu: Option<usize>,
    /// All UDP hellos of a test must arrive within this after CREATE_STREAMS.
    pub udp_hello_timeout: Duration,
    /// Senders stop this long after `time + omit` even if the client never sends TEST_END.
    pub send_grace: Duration,
    /// Most the server sends over UDP per test, bit/s (a client's `-b 0` gets this).
    pub max_udp_rate: u64,
    /// `--server-bitrate-limit`: (bit/s, averaging window in s; 0 = whole test).
    pub bitrate_limit: Option<(u64, u32)>,
}

impl Default for SessionConfig {
    fn default() -> Self {
        SessionConfig {
            max_duration: 3600,
            max_streams: wire::MAX_STREAMS,
            grace: Duration::from_secs(40),
            control_timeout: super::CONTROL_TIMEOUT,
            interval: 1.0,
            max_buffer_bytes: 64 << 20,
            idle_timeout: Duration::from_secs(120),
            cpu: None,
            udp_hello_timeout: Duration::from_secs(3),
            send_grace: Duration::from_secs(2),
            max_udp_rate: 1_000_000_000,
            bitrate_limit: None,
        }
    }
}

/// What the server needs to run a session.
pub struct SessionEnv<'a> {
    pub cfg: &'a SessionConfig,
    pub broker: &'a dyn StreamBroker,
    pub udp: &'a UdpAcceptor,
    /// Set on SIGINT/SIGTERM: the test ends with SERVER_TERMINATE.
    pub stop: &'a AtomicBool,
    pub sink: &'a dyn IntervalSink,
    /// This side's result as text for `--get-server-output` (the daemon's observer renders
    /// it; `None`: no text).
    pub render_text: &'a (dyn Fn(&ThroughputResult) -> Option<String> + Sync),
    /// Global caps on streams, buffers and threads shared by every test.
    pub ledger: &'a Arc<Ledger>,
    /// Required authentication (`--rsa-private-key-path`), if any.
    pub auth: Option<&'a ServerAuth>,
}

/// UDP stream set-up on the server port: a FIFO of tests waiting for the unconnected socket.
#[derive(Debug)]
pub struct UdpAcceptor {
    /// The address the server listens on (UDP binds the same address and port).
    pub bind: SocketAddr,
    queue: Mutex<Tickets>,
    turn: Condvar,
    /// When the latency probe reflector owns the UDP port (it shares the iperf3 port), it
    /// hands over the source address of every datagram that is not a probe: an iperf3 UDP
    /// stream's hello. `None`: the test binds its own unconnected socket on the port.
    pub hellos: Option<Mutex<std::sync::mpsc::Receiver<SocketAddr>>>,
}

#[derive(Debug, Default)]
struct Tickets {
    next: u64,
    serving: u64,
    abandoned: BTreeSet<u64>,
}

impl Tickets {
    fn advance(&mut self) {
        self.serving += 1;
        while self.abandoned.remove(&self.serving) {
            self.serving += 1;
        }
    }
}

/// The turn of one test at the UDP port; the next test's turn comes when it drops.
pub struct UdpTurn<'a>(&'a UdpAcceptor);

impl Drop for UdpTurn<'_> {
    fn drop(&mut self) {
        if let Ok(mut q) = self.0.queue.lock() {
            q.advance();
        }
        self.0.turn.notify_all();
    }
}

impl UdpAcceptor {
    pub fn new(bind: SocketAddr) -> Self {
        UdpAcceptor {
            bind,
            queue: Mutex::new(Tickets::default()),
            turn: Condvar::new(),
            hellos: None,
        }
    }

    /// Waits in line for the port until `deadline`; None if the turn did not come in time.
    pub fn wait_turn(&self, deadline: Instant) -> Option<UdpTurn<'_>> {
        let mut q = self.queue.lock().ok()?;
        let ticket = q.next;
        q.next += 1;
        loop {
            if q.serving == ticket {
                return Some(UdpTurn(self));
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                q.abandoned.insert(ticket);
                return None;
            }
            q = self.turn.wait_timeout(q, left).ok()?.0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn udp_turns_are_first_come_first_served_and_skip_the_abandoned() {
        let a = UdpAcceptor::new("127.0.0.1:0".parse().unwrap());
        let first = a
            .wait_turn(Instant::now())
            .expect("free port: turn at once");
        // A second test gives up while the first holds the port.
        assert!(
            a.wait_turn(Instant::now() + Duration::from_millis(20))
                .is_none()
        );
        std::thread::scope(|s| {
            let waiter = s.spawn(|| {
                a.wait_turn(Instant::now() + Duration::from_secs(5))
                    .is_some()
            });
            std::thread::sleep(Duration::from_millis(50));
            drop(first);
            assert!(
                waiter.join().unwrap(),
                "the third gets the port after the first"
            );
        });
        assert!(a.wait_turn(Instant::now()).is_some());
    }
}
