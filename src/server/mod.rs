//! The one daemon: accept on one port, look at the first bytes, hand the connection to an iperf3
//! session or a routerbench-protocol session; limits and timeouts for both.
//!
//! Unlike iperf3 (one test at a time), several tests run at once, each on its own threads and
//! bounded by [`ServerConfig`]: concurrent tests, streams, duration, pending handshakes. A
//! connection that sends nothing is dropped after `first_bytes_timeout`.

pub mod broker;
pub mod daemon;
pub mod limits;
pub mod log;
pub mod logcap;
pub mod signals;

use crate::iperf3::Iperf3Error;
use crate::iperf3::auth::ServerAuth;
use crate::iperf3::session::{self, SessionConfig, SessionEnv, StreamBroker, UdpAcceptor};
use crate::results::throughput::ThroughputResult;
use crate::wire::iperf3::{COOKIE_SIZE, Cookie, State};
use broker::{Broker, Route};
use limits::{Caps, ConnGuard, Ledger};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A protocol served on the shared port besides iperf3 (routerbench's own protocol).
/// The server calls `handle` on a thread of its own after the first bytes identified the
/// protocol; `prefix` holds the bytes the server already read (the full magic).
pub trait ProtocolHandler: Send + Sync {
    fn handle(&self, stream: TcpStream, prefix: &[u8]) -> anyhow::Result<()>;
}

/// Server settings.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Address to listen on (TCP, and UDP for UDP tests). `[::]` is dual-stack.
    pub bind: SocketAddr,
    pub session: SessionConfig,
    /// Tests running at once; more get ACCESS_DENIED ("server is busy").
    pub max_concurrent_tests: usize,
    /// Stop after this many tests (finished or failed); `None` runs until a signal.
    pub max_tests: Option<u64>,
    /// Connections still in their first bytes, or open, at once; more are closed at once.
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

/// Receives server events.
pub trait ServerObserver: Send + Sync {
    fn event(&self, event: &ServerEvent<'_>);
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

struct Shared {
    cfg: ServerConfig,
    broker: Broker,
    udp: UdpAcceptor,
    stop: Arc<AtomicBool>,
    observer: Arc<dyn ServerObserver>,
    handler: Option<Arc<dyn ProtocolHandler>>,
    ledger: Arc<Ledger>,
    logcap: logcap::LogCap,
    active_tests: AtomicUsize,
    connections: AtomicUsize,
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
                logcap: logcap::LogCap::new(20),
                cfg,
                broker: Broker::default(),
                stop: Arc::new(AtomicBool::new(false)),
                observer,
                handler: None,
                active_tests: AtomicUsize::new(0),
                connections: AtomicUsize::new(0),
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

    /// Lets another reader of the UDP port (the latency probe reflector on the same port
    /// number) hand iperf3 UDP hellos to the tests: send each non-probe datagram's source
    /// address to the returned sender. Call before `run`; `None` if already running.
    pub fn share_udp_port(&mut self) -> Option<std::sync::mpsc::SyncSender<SocketAddr>> {
        let s = Arc::get_mut(&mut self.shared)?;
        let (tx, rx) = std::sync::mpsc::sync_channel(256);
        s.udp.hellos = Some(Mutex::new(rx));
        Some(tx)
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
            if sh.cfg.handle_signals && signals::signalled() {
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
            let limit = if sh.connections.load(Ordering::Relaxed) >= sh.cfg.max_connections {
                Err(format!(
                    "{} connections open: limit reached",
                    sh.cfg.max_connections
                ))
            } else if !sh.ledger.thread_room() {
                Err(format!(
                    "{} threads running: limit reached",
                    sh.cfg.caps.max_threads
                ))
            } else {
                sh.ledger.connection(peer.ip())
            };
            let guard = match limit {
                Ok(g) => g,
                Err(reason) => {
                    sh.refused.fetch_add(1, Ordering::Relaxed);
                    log_refusal(sh, peer, reason);
                    continue;
                }
            };
            sh.connections.fetch_add(1, Ordering::Relaxed);
            let seq = sh.accepted.fetch_add(1, Ordering::Relaxed);
            let shared = sh.clone();
            let spawned = std::thread::Builder::new()
                .name("rb-conn".into())
                .spawn(move || {
                    handle_connection(&shared, stream, peer, seq, guard);
                    shared.connections.fetch_sub(1, Ordering::Relaxed);
                });
            if spawned.is_err() {
                sh.connections.fetch_sub(1, Ordering::Relaxed);
            }
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

fn wait_readable(l: &TcpListener, ms: i32) -> bool {
    let mut pfd = libc::pollfd {
        fd: l.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd.
    unsafe { libc::poll(&mut pfd, 1, ms) > 0 }
}

fn read_prefix(stream: &mut TcpStream, buf: &mut [u8], deadline: Instant) -> Result<(), String> {
    let mut got = 0;
    while got < buf.len() {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(format!(
                "sent {got} of {} first bytes, then nothing: timed out",
                buf.len()
            ));
        }
        let _ = stream.set_read_timeout(Some(left));
        match stream.read(&mut buf[got..]) {
            Ok(0) => return Err(format!("closed after {got} bytes")),
            Ok(n) => got += n,
            Err(e) if crate::iperf3::control::is_timeout(&e) => {}
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(format!("read error: {e}")),
        }
    }
    Ok(())
}

fn deny(sh: &Shared, mut stream: TcpStream, peer: SocketAddr, reason: String) {
    let _ = stream.write_all(&[State::AccessDenied.to_byte()]);
    sh.refused.fetch_add(1, Ordering::Relaxed);
    log_refusal(sh, peer, reason);
}

fn handle_connection(
    sh: &Arc<Shared>,
    mut stream: TcpStream,
    peer: SocketAddr,
    seq: u64,
    guard: ConnGuard,
) {
    let _ = stream.set_nonblocking(false);
    let deadline = Instant::now() + sh.cfg.first_bytes_timeout;
    let mut first = [0u8; 1];
    if let Err(why) = read_prefix(&mut stream, &mut first, deadline) {
        sh.refused.fetch_add(1, Ordering::Relaxed);
        log_refusal(sh, peer, format!("no cookie: {why}"));
        return;
    }
    if Cookie::is_routerbench(first[0]) {
        let magic = crate::wire::ROUTERBENCH_MAGIC;
        let mut rest = vec![0u8; magic.len() - 1];
        let r = read_prefix(&mut stream, &mut rest, deadline);
        let mut prefix = first.to_vec();
        prefix.extend_from_slice(&rest);
        let error = match (r, &sh.handler) {
            (Err(why), _) => Some(format!("routerbench magic: {why}")),
            (Ok(()), _) if prefix != magic => {
                Some("first byte 0xFF but not the routerbench magic".into())
            }
            (Ok(()), None) => Some("routerbench protocol not enabled on this server".into()),
            (Ok(()), Some(h)) => {
                let _ = stream.set_read_timeout(None);
                h.handle(stream, &prefix).err().map(|e| format!("{e:#}"))
            }
        };
        // Failed handoffs are refusals too: within the log's budget.
        if error.is_none() || sh.logcap.admit() {
            sh.observer.event(&ServerEvent::Handoff { peer, error });
        }
        return;
    }
    let mut cookie_buf = [0u8; COOKIE_SIZE];
    cookie_buf[0] = first[0];
    if let Err(why) = read_prefix(&mut stream, &mut cookie_buf[1..], deadline) {
        sh.refused.fetch_add(1, Ordering::Relaxed);
        log_refusal(sh, peer, format!("incomplete cookie: {why}"));
        return;
    }
    let cookie = Cookie(cookie_buf);
    if !cookie.is_plausible() {
        // Not an iperf3 client: close at once, one log line, no slot taken.
        sh.refused.fetch_add(1, Ordering::Relaxed);
        log_refusal(
            sh,
            peer,
            "garbage instead of an iperf3 cookie: closed".into(),
        );
        return;
    }
    // Classified: a data stream or a test holds no half-open slot of its host any more
    // (routerbench sessions keep theirs, above, for their whole life).
    drop(guard);
    match sh.broker.route(&cookie) {
        Route::Stream(tx) => {
            if let Err(e) = tx.send((seq, stream)) {
                deny(
                    sh,
                    (e.0).1,
                    peer,
                    "data stream for a test that stopped accepting".into(),
                );
            }
        }
        Route::Deny => deny(
            sh,
            stream,
            peer,
            "data connection for a running test (or a duplicate cookie)".into(),
        ),
        Route::NewTest => run_test(sh, stream, peer, cookie),
    }
}

/// Hands a test's streams and intervals to the observer (the server's interval lines).
struct ObserverIntervals<'a> {
    observer: &'a dyn ServerObserver,
    peer: SocketAddr,
    first: AtomicBool,
    parallel: AtomicUsize,
}

impl crate::iperf3::IntervalSink for ObserverIntervals<'_> {
    fn started(&self, connected: &[crate::results::throughput::Connected]) {
        // Bidir connects 2·P streams; `interval` halves it.
        self.parallel.store(connected.len(), Ordering::Relaxed);
        self.observer.event(&ServerEvent::StreamsConnected {
            peer: self.peer,
            connected,
        });
    }
    fn interval(&self, interval: &crate::results::throughput::Interval) {
        let bidir = interval.sum_bidir_reverse.is_some();
        let n = self.parallel.load(Ordering::Relaxed);
        self.observer.event(&ServerEvent::Interval {
            peer: self.peer,
            interval,
            first: self.first.swap(false, Ordering::Relaxed),
            parallel: if bidir { n / 2 } else { n },
        });
    }
}

fn run_test(sh: &Arc<Shared>, stream: TcpStream, peer: SocketAddr, cookie: Cookie) {
    let started = sh.started_tests.load(Ordering::Relaxed);
    if sh.cfg.max_tests.is_some_and(|m| started >= m) || sh.stop.load(Ordering::Relaxed) {
        return deny(
            sh,
            stream,
            peer,
            "server is stopping (test limit reached)".into(),
        );
    }
    let _host_slot = match sh.ledger.test(peer.ip()) {
        Ok(g) => g,
        Err(why) => return deny(sh, stream, peer, format!("busy: {why}")),
    };
    let active = sh.active_tests.fetch_add(1, Ordering::Relaxed);
    if active >= sh.cfg.max_concurrent_tests {
        sh.active_tests.fetch_sub(1, Ordering::Relaxed);
        return deny(
            sh,
            stream,
            peer,
            format!(
                "busy: {active} tests running (limit {})",
                sh.cfg.max_concurrent_tests
            ),
        );
    }
    if !sh.broker.claim(&cookie) {
        sh.active_tests.fetch_sub(1, Ordering::Relaxed);
        return deny(sh, stream, peer, "duplicate cookie".into());
    }
    sh.started_tests.fetch_add(1, Ordering::Relaxed);
    sh.observer.event(&ServerEvent::TestStarted { peer });
    let render = |r: &ThroughputResult| crate::report::iperf3::render_final(r);
    let sink = ObserverIntervals {
        observer: sh.observer.as_ref(),
        peer,
        first: AtomicBool::new(true),
        parallel: AtomicUsize::new(1),
    };
    let env = SessionEnv {
        cfg: &sh.cfg.session,
        broker: &sh.broker,
        udp: &sh.udp,
        stop: &sh.stop,
        sink: &sink,
        render_text: &render,
        ledger: &sh.ledger,
        auth: sh.cfg.auth.as_deref(),
    };
    let outcome = crate::iperf3::control::Control::new(stream, sh.cfg.session.control_timeout)
        .and_then(|ctl| session::serve(ctl, cookie, &env));
    match outcome {
        Ok(result) => {
            sh.done.fetch_add(1, Ordering::Relaxed);
            sh.observer.event(&ServerEvent::TestDone {
                peer,
                result: &result,
            });
            if sh.keep_results {
                if let Ok(mut r) = sh.results.lock() {
                    r.push(result);
                }
            }
        }
        Err(error) => {
            sh.broker.close(&cookie);
            sh.failed.fetch_add(1, Ordering::Relaxed);
            sh.observer.event(&ServerEvent::TestFailed {
                peer,
                error: &error,
            });
        }
    }
    sh.active_tests.fetch_sub(1, Ordering::Relaxed);
}
