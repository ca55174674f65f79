//! What a server-side session needs from the daemon that hosts it: the limits of one test
//! ([`SessionConfig`]), the cookie broker for TCP data connections ([`StreamBroker`]), the UDP
//! port's hello table (`udp_port.rs`), the stop flag, the server-wide ledger and the test's seat
//! in the server's test pool ([`SessionEnv`]).

use super::IntervalSink;
use super::auth::ServerAuth;
use crate::results::throughput::ThroughputResult;
use crate::service::fair::Seat;
use crate::service::limits::Ledger;
use crate::wire::iperf3::{self as wire, Cookie};
use std::net::TcpStream;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::sync::mpsc::Receiver;
use std::time::Duration;

pub use super::udp_port::UdpAcceptor;

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
    /// The test's seat in the server's test pool: pending (evictable by a lighter host) until
    /// the test runs; the session marks its progress and checks whether it was taken.
    pub seat: Option<&'a Seat>,
}

impl SessionEnv<'_> {
    /// Whether the test's seat was taken by a newcomer from a lighter host.
    pub fn evicted(&self) -> bool {
        self.seat.is_some_and(Seat::is_evicted)
    }

    /// A step of the set-up completed (parameters, a stream).
    pub fn progress(&self) {
        if let Some(s) = self.seat {
            s.progress();
        }
    }
}
