//! The one daemon: accept on one port, look at the first bytes, hand the connection to an iperf3
//! session, a routerbench-protocol session or the HTTP routes; limits and timeouts for all.
//!
//! Unlike iperf3 (one test at a time), several tests run at once, each on its own threads and
//! bounded by [`ServerConfig`]: concurrent tests, streams, duration, pending handshakes. A
//! connection that sends nothing is dropped after `first_bytes_timeout`.
//!
//! The server composes what `iperf3` and `service` provide; it never prints: events and results
//! go to a [`ServerObserver`] (the CLI renders them). A connection whose first byte starts an
//! HTTP method is served by `http` (the route table: `/metrics`, …). This accept loop is the only one:
//! `loopback.rs` runs it for the in-process loopback test, `latency_only.rs` for the latency
//! protocol alone; `conn.rs` handles each accepted connection.

pub mod broker;
mod conn;
pub mod daemon;
pub mod http;
pub mod latency_only;
pub mod loopback;
pub mod web;

pub use crate::service::ProtocolHandler;

use crate::iperf3::Iperf3Error;
use crate::iperf3::auth::ServerAuth;
use crate::iperf3::session::{SessionConfig, UdpAcceptor};
use crate::results::throughput::ThroughputResult;
use crate::service::fair::{self, FairPool};
use crate::service::limits::{Caps, Ledger};
use crate::service::logcap::LogCap;
use broker::Broker;
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use portable_atomic::AtomicU64;
use std::net::{SocketAddr, TcpListener};
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What can stop the daemon or its set-up (the per-test errors are [`Iperf3Error`]s).
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error("{context}: {source}")]
    Io {
        context: String,
        source: std::io::Error,
    },
    #[error("cannot run in the background (-D): {0}")]
    Detach(std::io::Error),
    #[error(
        "pid file {path} names a running process ({pid}): another server? stop it or use \
         another -I file"
    )]
    PidFileLive { path: String, pid: i32 },
    #[error("pid file {path}: directory {dir} does not exist")]
    PidFileDir { path: String, dir: String },
    #[error("cannot write pid file {path}: {source}")]
    PidFileWrite {
        path: String,
        source: std::io::Error,
    },
    /// The hosted latency service did not start (its error, as text).
    #[error("{0}")]
    Service(String),
}

impl ServerError {
    pub fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        ServerError::Io {
            context: context.into(),
            source,
        }
    }
}

/// Server settings.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Address to listen on (TCP, and UDP for UDP tests). `[::]` is dual-stack.
    pub bind: SocketAddr,
    pub session: SessionConfig,
    /// Tests at once (in their set-up or running); more get ACCESS_DENIED ("server is busy"),
    /// unless a test still in its set-up from a heavier host can be evicted (`service::fair`).
    pub max_concurrent_tests: usize,
    /// Stop after this many tests (finished or failed); `None` runs until a signal.
    pub max_tests: Option<u64>,
    /// Connections still in their first bytes, or serving a routerbench session, at once;
    /// more are refused with a busy byte (`0xff`), unless one still in its handshake from a
    /// heavier host can be evicted (`service::fair`).
    pub max_connections: usize,
    /// A new connection must send its whole cookie or magic within this time (a deadline,
    /// not a per-read timeout: dribbling bytes does not extend it).
    pub first_bytes_timeout: Duration,
    /// Per-host and server-wide caps (connections, tests, streams, buffers, threads).
    pub caps: Caps,
    /// iperf3 RSA authentication required of every test, if set.
    pub auth: Option<Arc<ServerAuth>>,
    /// Stop on SIGINT/SIGTERM (the CLI installs the handler).
    pub handle_signals: bool,
    /// Serve iperf3 tests. Off: only the routerbench protocol (the whole magic is read before
    /// the hand-off, anything else is refused), as `routerbench latency-server` serves it.
    pub iperf3: bool,
}

impl ServerConfig {
    pub fn new(bind: SocketAddr) -> Self {
        ServerConfig {
            bind,
            session: SessionConfig::default(),
            max_concurrent_tests: 8,
            max_tests: None,
            max_connections: 192,
            first_bytes_timeout: Duration::from_secs(10),
            caps: Caps::default(),
            auth: None,
            handle_signals: false,
            iperf3: true,
        }
    }

    /// A private server for one in-process test (loopback, lab): one test of any size the
    /// per-test limits allow, and no cap on UDP sending (the point is to find the ceiling).
    pub fn private(bind: SocketAddr) -> Self {
        let mut c = ServerConfig::new(bind);
        c.max_tests = Some(1);
        c.caps = Caps {
            total_streams: 2 * crate::wire::iperf3::MAX_STREAMS as usize,
            total_buffer_bytes: c.session.max_buffer_bytes,
            max_threads: 4096,
            ..Caps::default()
        };
        c.session.max_udp_rate = u64::MAX;
        c
    }
}

/// What the server reports while it runs (the CLI prints these to stderr).
#[derive(Debug)]
pub enum ServerEvent<'a> {
    Listening(SocketAddr),
    TestStarted {
        peer: SocketAddr,
    },
    /// A test's data streams are connected (iperf3's `[  5] local … connected to …` lines).
    StreamsConnected {
        peer: SocketAddr,
        connected: &'a [crate::results::throughput::Connected],
    },
    /// One interval of a running test, as the server measured it.
    Interval {
        peer: SocketAddr,
        interval: &'a crate::results::throughput::Interval,
        first: bool,
        parallel: usize,
    },
    TestDone {
        peer: SocketAddr,
        result: &'a ThroughputResult,
    },
    TestFailed {
        peer: SocketAddr,
        error: &'a Iperf3Error,
    },
    /// A connection refused or dropped, with the reason.
    Refused {
        peer: SocketAddr,
        reason: String,
    },
    /// A routerbench-protocol connection handed to the handler (or its error).
    Handoff {
        peer: SocketAddr,
        error: Option<String>,
    },
    Stopping {
        reason: &'static str,
    },
}

/// Receives server events (the CLI renders them).
pub trait ServerObserver: Send + Sync {
    fn event(&self, event: &ServerEvent<'_>);

    /// The text a client asking `--get-server-output` receives: this server's own output for
    /// the test, as the observer renders it. `None` (the default): no text.
    fn server_output(&self, _result: &ThroughputResult) -> Option<String> {
        None
    }
}

/// Ignores events (tests, loopback).
pub struct Quiet;

impl ServerObserver for Quiet {
    fn event(&self, _: &ServerEvent<'_>) {}
}

/// Counters after the server stopped.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ServerSummary {
    pub tests_done: u64,
    pub tests_failed: u64,
    pub refused: u64,
}

/// A condition that stops the server when it turns true (polled by the accept loop).
pub type StopWhen = Arc<dyn Fn() -> bool + Send + Sync>;

/// The server's state, shared with its connection threads (`conn.rs`).
struct Shared {
    cfg: ServerConfig,
    broker: Broker,
    udp: UdpAcceptor,
    stop: Arc<AtomicBool>,
    stop_when: Option<StopWhen>,
    observer: Arc<dyn ServerObserver>,
    handler: Option<Arc<dyn ProtocolHandler>>,
    /// HTTP requests on the port (`/metrics` and the other routes of `http::ROUTES`).
    http: http::HttpConfig,
    ledger: Arc<Ledger>,
    /// Connections in their handshake (and routerbench sessions with their flows).
    conns: Arc<FairPool>,
    /// iperf3 tests, from the cookie to the end.
    tests: Arc<FairPool>,
    logcap: LogCap,
    active_tests: AtomicUsize,
    started_tests: AtomicU64,
    accepted: AtomicU64,
    done: AtomicU64,
    failed: AtomicU64,
    refused: AtomicU64,
    results: Mutex<Vec<ThroughputResult>>,
    keep_results: bool,
}

/// A bound server, not yet running.
pub struct Server {
    listener: TcpListener,
    shared: Arc<Shared>,
}

impl Server {
    /// Binds the TCP listener (SO_REUSEADDR; `[::]` dual-stack).
    pub fn bind(cfg: ServerConfig, observer: Arc<dyn ServerObserver>) -> std::io::Result<Server> {
        use socket2::{Domain, Socket, Type};
        let s = Socket::new(Domain::for_address(cfg.bind), Type::STREAM, None)?;
        s.set_reuse_address(true)?;
        if cfg.bind.is_ipv6() {
            let _ = s.set_only_v6(false);
        }
        s.bind(&cfg.bind.into()).map_err(|e| {
            std::io::Error::new(
                e.kind(),
                format!(
                    "cannot listen on {}: {e} (another server on this port? use -p)",
                    cfg.bind
                ),
            )
        })?;
        s.listen(128)?;
        let listener: TcpListener = s.into();
        let bind = listener.local_addr()?;
        Ok(Server {
            listener,
            shared: Arc::new(Shared {
                udp: UdpAcceptor::new(bind),
                ledger: Arc::new(Ledger::new(cfg.caps.clone())),
                conns: FairPool::new(
                    "connections",
                    cfg.max_connections,
                    cfg.caps.conns_per_host,
                    cfg.first_bytes_timeout,
                ),
                tests: FairPool::new(
                    "iperf3 tests",
                    cfg.max_concurrent_tests,
                    cfg.caps.tests_per_host,
                    cfg.first_bytes_timeout,
                ),
                logcap: LogCap::new(20),
                cfg,
                broker: Broker::default(),
                stop: Arc::new(AtomicBool::new(false)),
                stop_when: None,
                observer,
                handler: None,
                http: http::HttpConfig::default(),
                active_tests: AtomicUsize::new(0),
                started_tests: AtomicU64::new(0),
                accepted: AtomicU64::new(0),
                done: AtomicU64::new(0),
                failed: AtomicU64::new(0),
                refused: AtomicU64::new(0),
                results: Mutex::new(Vec::new()),
                keep_results: false,
            }),
        })
    }

    /// Serves routerbench-protocol connections (first byte 0xFF) with `handler`.
    pub fn with_handler(mut self, handler: Arc<dyn ProtocolHandler>) -> Self {
        if let Some(s) = Arc::get_mut(&mut self.shared) {
            s.handler = Some(handler);
        }
        self
    }

    /// Serves HTTP requests with these tokens, limits and sources (without it: the route
    /// table with no token and no metrics source).
    pub fn with_http(mut self, http: http::HttpConfig) -> Self {
        if let Some(s) = Arc::get_mut(&mut self.shared) {
            s.http = http;
        }
        self
    }

    /// Lets another reader of the UDP port (the latency probe reflector on the same port
    /// number) offer iperf3 UDP hellos to the tests: pass each datagram that is not a probe to
    /// the returned table's `offer`. Call before `run`; `None` if already running.
    pub fn share_udp_port(&mut self) -> Option<Arc<crate::iperf3::udp_port::HelloTable>> {
        let s = Arc::get_mut(&mut self.shared)?;
        Some(s.udp.share())
    }

    /// Stops the server (as its stop flag does) once `when` returns true; call before `run`.
    pub fn stop_when(mut self, when: StopWhen) -> Self {
        if let Some(s) = Arc::get_mut(&mut self.shared) {
            s.stop_when = Some(when);
        }
        self
    }

    /// Keeps every finished test's result (loopback reads them back).
    pub fn keep_results(mut self) -> Self {
        if let Some(s) = Arc::get_mut(&mut self.shared) {
            s.keep_results = true;
        }
        self
    }

    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// A flag that stops the server (and its running tests) when set.
    pub fn stop_flag(&self) -> Arc<AtomicBool> {
        self.shared.stop.clone()
    }

    /// Results kept with [`Server::keep_results`].
    pub fn take_results(&self) -> Vec<ThroughputResult> {
        self.shared
            .results
            .lock()
            .map(|mut r| std::mem::take(&mut *r))
            .unwrap_or_default()
    }

    /// Accepts until stopped (flag, signal, or `max_tests` reached), then waits up to 10 s
    /// for running tests to end.
    pub fn run(&self) -> std::io::Result<ServerSummary> {
        let sh = &self.shared;
        sh.observer
            .event(&ServerEvent::Listening(self.listener.local_addr()?));
        self.listener.set_nonblocking(true)?;
        let reason = loop {
            if (sh.cfg.handle_signals && crate::util::signals::signalled())
                || sh.stop_when.as_ref().is_some_and(|when| when())
            {
                sh.stop.store(true, Ordering::Relaxed);
            }
            if sh.stop.load(Ordering::Relaxed) {
                break "stop requested";
            }
            let ended = sh.done.load(Ordering::Relaxed) + sh.failed.load(Ordering::Relaxed);
            if sh.cfg.max_tests.is_some_and(|max| ended >= max)
                && sh.active_tests.load(Ordering::Relaxed) == 0
            {
                break "test limit reached";
            }
            if let Some(n) = sh.logcap.flush() {
                sh.observer.event(&ServerEvent::Refused {
                    peer: self.listener.local_addr()?,
                    reason: format!("{n} more refusals not logged (at most 20 lines a second)"),
                });
            }
            if !wait_readable(&self.listener, 200) {
                continue;
            }
            let (stream, peer) = match self.listener.accept() {
                Ok(x) => x,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    // EMFILE and friends: back off instead of spinning.
                    log_refusal(
                        sh,
                        self.listener.local_addr()?,
                        format!("accept failed: {e}"),
                    );
                    std::thread::sleep(Duration::from_millis(100));
                    continue;
                }
            };
            let accepted_at = Instant::now();
            let admission = if !sh.ledger.thread_room() {
                Err(format!(
                    "{} threads running: limit reached",
                    sh.cfg.caps.max_threads
                ))
            } else {
                sh.conns
                    .acquire(peer.ip(), fair::shut_reader(&stream, None))
            };
            let seat = match admission {
                Ok(a) => {
                    if let Some(ip) = a.evicted {
                        log_refusal(
                            sh,
                            peer,
                            format!(
                                "connection slots full: took the slot of a connection of {} \
                                 still in its handshake (that host holds the most)",
                                crate::net::addr::display_ip(ip)
                            ),
                        );
                    }
                    a.seat
                }
                Err(reason) => {
                    sh.refused.fetch_add(1, Ordering::Relaxed);
                    conn::refuse_at_accept(stream);
                    log_refusal(sh, peer, format!("busy: {reason}"));
                    continue;
                }
            };
            let seq = sh.accepted.fetch_add(1, Ordering::Relaxed);
            let shared = sh.clone();
            let _ = std::thread::Builder::new()
                .name("rb-conn".into())
                .spawn(move || {
                    conn::handle_connection(&shared, stream, peer, seq, seat, accepted_at);
                });
        };
        sh.observer.event(&ServerEvent::Stopping { reason });
        sh.stop.store(true, Ordering::Relaxed);
        let deadline = Instant::now() + Duration::from_secs(10);
        while sh.active_tests.load(Ordering::Relaxed) > 0 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(ServerSummary {
            tests_done: sh.done.load(Ordering::Relaxed),
            tests_failed: sh.failed.load(Ordering::Relaxed),
            refused: sh.refused.load(Ordering::Relaxed),
        })
    }
}

/// One refusal line, within the log's budget (a flood is summarised by the accept loop).
fn log_refusal(sh: &Shared, peer: SocketAddr, reason: String) {
    if sh.logcap.admit() {
        sh.observer.event(&ServerEvent::Refused { peer, reason });
    }
}

/// Whether a connection waits on the listener within `ms` milliseconds.
fn wait_readable(l: &TcpListener, ms: u16) -> bool {
    let mut fds = [PollFd::new(l.as_fd(), PollFlags::POLLIN)];
    poll(&mut fds, PollTimeout::from(ms)).is_ok_and(|n| n > 0)
}
