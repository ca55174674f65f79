//! One test on the server side, from the cookie to IPERF_DONE (spec/iperf3.md §5): parameter
//! checks and limits, data streams (TCP through the server's [`StreamBroker`], UDP by the hello
//! dance), the running test with a watchdog, and the results exchange.

use super::control::Control;
use super::cpu::{CpuWindow, ThreadCpu};
use super::meter::{Meter, MeteredStream};
use super::stream::{self, Counters, DataSock, WorkerConfig};
use super::summary::{self, ResultParts};
use super::{IntervalSink, Iperf3Error, Result, stream_id};
use crate::results::throughput::{Role, ThroughputResult};
use crate::wire::iperf3::{self as wire, Cookie, Protocol, State, TestParams, TestResults, errors};
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
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

/// UDP stream set-up on the server port; one test at a time does the hello dance.
#[derive(Debug)]
pub struct UdpAcceptor {
    /// The address the server listens on (UDP binds the same address and port).
    pub bind: SocketAddr,
    pub lock: Mutex<()>,
    /// When the latency probe reflector owns the UDP port (it shares the iperf3 port), it
    /// hands over the source address of every datagram that is not a probe: an iperf3 UDP
    /// stream's hello. `None`: the test binds its own unconnected socket on the port.
    pub hellos: Option<Mutex<std::sync::mpsc::Receiver<SocketAddr>>>,
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
    /// Renders this side's result as text for `--get-server-output`.
    pub render_text: &'a (dyn Fn(&ThroughputResult) -> String + Sync),
}

fn refuse(ctl: &mut Control, i_errno: i32, message: String) -> Iperf3Error {
    let _ = ctl.send_error(i_errno, 0);
    Iperf3Error::Refused { i_errno, message }
}

/// Runs one test whose control connection sent `cookie`. Errors are reported to the client
/// (SERVER_ERROR with iperf3's code) where the protocol allows, and returned for the log.
pub fn serve(mut ctl: Control, cookie: Cookie, env: &SessionEnv<'_>) -> Result<ThroughputResult> {
    let r = serve_inner(&mut ctl, cookie, env);
    env.broker.close(&cookie);
    match &r {
        Err(Iperf3Error::Refused { .. }) | Ok(_) => {}
        Err(e @ (Iperf3Error::Wire { .. } | Iperf3Error::Timeout(..))) => {
            let _ = ctl.send_error(e.i_errno(), 0);
        }
        Err(_) => {}
    }
    ctl.close_gracefully(Duration::from_secs(2));
    r
}

fn serve_inner(
    ctl: &mut Control,
    cookie: Cookie,
    env: &SessionEnv<'_>,
) -> Result<ThroughputResult> {
    let cfg = env.cfg;
    let peer = ctl
        .stream()
        .peer_addr()
        .map_err(|e| Iperf3Error::io("control peer", e))?;
    let local = ctl
        .stream()
        .local_addr()
        .map_err(|e| Iperf3Error::io("control local", e))?;
    ctl.send_state(State::ParamExchange)?;
    let body = ctl.read_json(wire::MAX_PARAMS_LEN, "parameters")?;
    let params = TestParams::parse(&body).map_err(|source| Iperf3Error::Wire {
        context: "parameters",
        source,
    })?;
    check_limits(ctl, &params, cfg)?;
    // `-A n,m` from the client pins this end's streams to m, as iperf3's server pins itself.
    let cpu = match params.server_affinity {
        Some(m) => {
            let m = usize::try_from(m)
                .map_err(|_| format!("server CPU {m} is negative"))
                .and_then(|m| crate::util::affinity::check_cpu(m).map(|()| m))
                .map_err(|message| {
                    // EINVAL, as sched_setaffinity answers: iperf3 prints "unable to set CPU
                    // affinity: Invalid argument".
                    let _ = ctl.send_error(errors::IEAFFINITY, libc::EINVAL);
                    Iperf3Error::Refused {
                        i_errno: errors::IEAFFINITY,
                        message,
                    }
                })?;
            Some(m)
        }
        None => cfg.cpu,
    };
    let cpu_window = CpuWindow::new();
    let control_cpu = ThreadCpu::start();
    let udp = params.protocol == Protocol::Udp;
    let n = params.parallel as usize;
    let total = if params.bidirectional { 2 * n } else { n };
    let socks = if udp {
        accept_udp(ctl, env, peer.ip(), total)?
    } else {
        accept_tcp(ctl, env, &cookie, total)?
    };
    let mut warnings = Vec::new();
    for s in &socks {
        warnings.extend(
            stream::apply_options(s, &params).map_err(|(code, msg)| refuse(ctl, code, msg))?,
        );
    }
    warnings.dedup();
    // Accept order: receivers first, then senders (iperf3's rec_streams_accepted rule).
    let server_sends = |i: usize| {
        if params.bidirectional {
            i >= n
        } else {
            params.reverse
        }
    };
    let done = Arc::new(AtomicBool::new(false));
    let gate = Arc::new(stream::Gate::default());
    let mut metered = Vec::new();
    let mut workers = Vec::new();
    let mut wake = Vec::new();
    let mut connected = Vec::new();
    let congestion = socks.iter().find_map(|s| match s {
        DataSock::Tcp(t) => crate::net::sockopt::congestion(t).ok(),
        DataSock::Udp(_) => None,
    });
    let timesecs = unix_secs();
    ctl.send_state(State::TestStart)?;
    ctl.send_state(State::TestRunning)?;
    for (i, sock) in socks.into_iter().enumerate() {
        let id = stream_id(i);
        let sender = server_sends(i);
        let counters = Arc::new(Counters::default());
        let mut m = MeteredStream::new(id, sender, udp, counters.clone());
        if let DataSock::Tcp(t) = &sock {
            m.info = t.try_clone().ok();
        }
        connected.push(summary::connected(id, &sock));
        // Only senders are woken at the end; receivers drain what is in flight.
        if sender {
            if let Ok(w) = sock.try_clone() {
                wake.push(w);
            }
        }
        let wcfg = WorkerConfig {
            sender,
            len: params.block_len() as usize,
            rate: params.bandwidth,
            wide: params.udp_counters_64bit,
            repeating_payload: params.repeating_payload,
            budget: None,
            drain: true,
            cpu,
        };
        let h = stream::spawn(id, sock, wcfg, counters, done.clone(), gate.clone())
            .map_err(|e| Iperf3Error::io("spawn stream thread", e))?;
        metered.push(m);
        workers.push(h);
    }
    let main_sends = params.reverse && !params.bidirectional;
    let mut meter = Meter::new(metered, params.omit, cfg.interval, main_sends);
    env.sink.started(&connected);
    gate.open();
    let limit = if params.time > 0 {
        params.time + params.omit
    } else {
        cfg.max_duration
    };
    let watchdog = Duration::from_secs(limit as u64) + cfg.grace;
    let started = Instant::now();
    // No byte moved on any stream for `idle_timeout`: the client vanished (cable pulled,
    // Wi-Fi gone) and its FIN never came; free the slot (iperf3's --rcv-timeout, IENOMSG).
    let mut last_bytes = 0u64;
    let mut last_progress = Instant::now();
    let outcome = loop {
        let tick = meter.until_next().min(Duration::from_millis(250));
        match ctl.poll_state(tick) {
            Ok(Some(State::TestEnd)) => break Ok(()),
            Ok(Some(State::ClientTerminate)) => break Err(Iperf3Error::ClientTerminated),
            Ok(Some(State::TestStart)) | Ok(None) => {}
            Ok(Some(s)) => {
                break Err(Iperf3Error::Protocol(format!(
                    "unexpected state {s:?} during the test"
                )));
            }
            Err(e) => break Err(e),
        }
        if let Some(iv) = meter.tick() {
            env.sink.interval(iv);
        }
        if env.stop.load(Ordering::Relaxed) {
            let _ = ctl.send_state(State::ServerTerminate);
            let _ = ctl.read_state_within(Duration::from_secs(1));
            break Err(Iperf3Error::Interrupted);
        }
        let moved = meter.total_bytes(true) + meter.total_bytes(false);
        if moved != last_bytes {
            last_bytes = moved;
            last_progress = Instant::now();
        } else if last_progress.elapsed() > cfg.idle_timeout {
            let _ = ctl.send_error(errors::IENOMSG, 0);
            break Err(Iperf3Error::Refused {
                i_errno: errors::IENOMSG,
                message: format!(
                    "no data moved for {:?}: the client is gone",
                    cfg.idle_timeout
                ),
            });
        }
        if started.elapsed() > watchdog {
            let _ = ctl.send_error(errors::IESERVERTESTDURATIONEXPIRED, 0);
            break Err(Iperf3Error::Refused {
                i_errno: errors::IESERVERTESTDURATIONEXPIRED,
                message: format!("test still running after {watchdog:?}: ended by the watchdog"),
            });
        }
    };
    // Stop: senders at once (their sockets shut down), receivers after draining what the
    // client sent before TEST_END; then join every worker (each ends within DRAIN_MAX).
    let end_t = meter.elapsed();
    done.store(true, Ordering::Relaxed);
    for w in &wake {
        w.wake();
    }
    let mut cpu = cpu_window;
    for h in workers {
        if let Ok(end) = h.join() {
            cpu.add(end.cpu);
        }
    }
    let before = meter.intervals.len();
    let ends = meter.finish(end_t);
    if meter.intervals.len() > before {
        if let Some(last) = meter.intervals.last() {
            env.sink.interval(last);
        }
    }
    outcome?;
    ctl.send_state(State::ExchangeResults)?;
    let body = ctl.read_json(MAX_CLIENT_RESULTS_LEN, "client results")?;
    let client = TestResults::parse(&body).map_err(|source| Iperf3Error::Wire {
        context: "client results",
        source,
    })?;
    for e in &ends {
        if client.stream(e.id).is_none() {
            return Err(refuse(
                ctl,
                errors::IESTREAMID,
                format!("client results lack stream {}", e.id),
            ));
        }
    }
    cpu.add(control_cpu.stop());
    let cpu_util = cpu.util();
    let mut mine =
        summary::results_message(&ends, cpu_util, congestion.clone(), udp, Some(&client));
    let mut result = summary::build_result(ResultParts {
        role: Role::Server,
        peer_version: params.client_version.clone(),
        host: crate::net::sockopt::display_ip(peer.ip()),
        port: local.port(),
        cookie: cookie.text(),
        timesecs,
        setup: summary::setup_from(&params),
        tcp_mss_default: crate::net::sockopt::mss(ctl.stream()).ok(),
        buffers: (0, 0),
        connected,
        intervals: std::mem::take(&mut meter.intervals),
        ends: &ends,
        peer: &client,
        cpu_local: cpu_util,
        main_local_sends: main_sends,
        congestion,
    });
    result.notes = warnings;
    if params.get_server_output {
        mine.server_output_text = Some((env.render_text)(&result));
    }
    ctl.send_json(&mine.emit())?;
    ctl.send_state(State::DisplayResults)?;
    // IPERF_DONE (or a close) ends the session; either is fine once results are out.
    let _ = ctl.read_state_within(cfg.control_timeout.min(Duration::from_secs(5)));
    Ok(result)
}

fn check_limits(ctl: &mut Control, p: &TestParams, cfg: &SessionConfig) -> Result<()> {
    if p.protocol == Protocol::Sctp {
        return Err(refuse(
            ctl,
            errors::IEPROTOCOL,
            "SCTP is not supported".into(),
        ));
    }
    if p.parallel == 0 || p.parallel > cfg.max_streams.min(wire::MAX_STREAMS) {
        return Err(refuse(
            ctl,
            errors::IENUMSTREAMS,
            format!("{} streams asked, limit {}", p.parallel, cfg.max_streams),
        ));
    }
    if p.time as u64 + p.omit as u64 > cfg.max_duration as u64 {
        return Err(refuse(
            ctl,
            errors::IEMAXSERVERTESTDURATIONEXCEEDED,
            format!(
                "{} s asked (time {} + omit {}), limit {} s",
                p.time + p.omit,
                p.time,
                p.omit,
                cfg.max_duration
            ),
        ));
    }
    if let Err(e) = p.validate() {
        return Err(refuse(ctl, errors::IEBLOCKSIZE, e.to_string()));
    }
    let streams = p.parallel as u64 * if p.bidirectional { 2 } else { 1 };
    let per_stream = (p.block_len() as u64).max(65536);
    if streams * per_stream > cfg.max_buffer_bytes {
        return Err(refuse(
            ctl,
            errors::IEBLOCKSIZE,
            format!(
                "{streams} streams × {per_stream} B blocks exceed the server's {} MiB buffer limit",
                cfg.max_buffer_bytes >> 20
            ),
        ));
    }
    Ok(())
}

fn accept_tcp(
    ctl: &mut Control,
    env: &SessionEnv<'_>,
    cookie: &Cookie,
    total: usize,
) -> Result<Vec<DataSock>> {
    let rx = env.broker.open(cookie);
    ctl.send_state(State::CreateStreams)?;
    let deadline = Instant::now() + env.cfg.control_timeout;
    let mut socks: Vec<(u64, TcpStream)> = Vec::with_capacity(total);
    while socks.len() < total {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(s) => socks.push(s),
            Err(RecvTimeoutError::Timeout) | Err(RecvTimeoutError::Disconnected) => {
                return Err(refuse(
                    ctl,
                    errors::IESTREAMACCEPT,
                    format!(
                        "only {} of {total} data connections arrived within {:?}",
                        socks.len(),
                        env.cfg.control_timeout
                    ),
                ));
            }
        }
    }
    env.broker.running(cookie);
    // Accept order is the client's creation order (it connects one stream at a time).
    socks.sort_by_key(|(seq, _)| *seq);
    Ok(socks.into_iter().map(|(_, s)| DataSock::Tcp(s)).collect())
}

fn accept_udp(
    ctl: &mut Control,
    env: &SessionEnv<'_>,
    peer_ip: std::net::IpAddr,
    total: usize,
) -> Result<Vec<DataSock>> {
    let deadline = Instant::now() + env.cfg.control_timeout;
    // One test at a time owns the unconnected socket on the port.
    let _guard = loop {
        match env.udp.lock.try_lock() {
            Ok(g) => break g,
            Err(std::sync::TryLockError::Poisoned(p)) => break p.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(_) => {
                return Err(refuse(
                    ctl,
                    errors::IESTREAMLISTEN,
                    "UDP port busy with another test's set-up".into(),
                ));
            }
        }
    };
    if let Some(hellos) = &env.udp.hellos {
        return accept_udp_handed_over(ctl, env, hellos, peer_ip, total, deadline);
    }
    let mut listener =
        bind_udp(env.udp.bind).map_err(|e| refuse(ctl, errors::IESTREAMLISTEN, e.to_string()))?;
    ctl.send_state(State::CreateStreams)?;
    let mut socks = Vec::with_capacity(total);
    let same_host = |a: std::net::IpAddr, b: std::net::IpAddr| {
        crate::net::sockopt::display_ip(a) == crate::net::sockopt::display_ip(b)
    };
    while socks.len() < total {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(refuse(
                ctl,
                errors::IESTREAMACCEPT,
                format!(
                    "only {} of {total} UDP streams said hello in time",
                    socks.len()
                ),
            ));
        }
        let _ = listener.set_read_timeout(Some(left));
        let mut buf = [0u8; 64];
        let from = match listener.recv_from(&mut buf) {
            Ok((_, from)) if same_host(from.ip(), peer_ip) => from,
            Ok(_) => continue, // another host's datagram: not ours
            Err(e) if super::control::is_timeout(&e) => continue,
            Err(e) => return Err(Iperf3Error::io("UDP stream hello", e)),
        };
        listener
            .connect(from)
            .map_err(|e| Iperf3Error::io("UDP connect to client", e))?;
        let next = bind_udp(env.udp.bind)
            .map_err(|e| refuse(ctl, errors::IESTREAMLISTEN, e.to_string()))?;
        let stream = std::mem::replace(&mut listener, next);
        stream
            .send(&wire::UDP_CONNECT_REPLY)
            .map_err(|e| Iperf3Error::io("UDP hello reply", e))?;
        socks.push(DataSock::Udp(stream));
    }
    Ok(socks)
}

/// UDP streams whose hellos the probe reflector received on the shared port: each gets a
/// socket on the port connected to the client (a connected socket wins the kernel's lookup
/// over the reflector's unconnected one, so the stream's data comes here).
fn accept_udp_handed_over(
    ctl: &mut Control,
    env: &SessionEnv<'_>,
    hellos: &Mutex<std::sync::mpsc::Receiver<SocketAddr>>,
    peer_ip: std::net::IpAddr,
    total: usize,
    deadline: Instant,
) -> Result<Vec<DataSock>> {
    use std::sync::mpsc::RecvTimeoutError;
    let rx = hellos.lock().unwrap_or_else(|p| p.into_inner());
    // Hellos that arrived while no test was setting up belong to nobody.
    while rx.try_recv().is_ok() {}
    ctl.send_state(State::CreateStreams)?;
    let mut socks = Vec::with_capacity(total);
    let mut seen: Vec<SocketAddr> = Vec::with_capacity(total);
    while socks.len() < total {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(refuse(
                ctl,
                errors::IESTREAMACCEPT,
                format!(
                    "only {} of {total} UDP streams said hello in time",
                    socks.len()
                ),
            ));
        }
        let from = match rx.recv_timeout(left.min(Duration::from_millis(200))) {
            Ok(from) => from,
            Err(RecvTimeoutError::Timeout) => continue,
            Err(RecvTimeoutError::Disconnected) => {
                return Err(refuse(
                    ctl,
                    errors::IESTREAMLISTEN,
                    "the UDP port's reader (probe reflector) stopped".into(),
                ));
            }
        };
        let same_host =
            crate::net::sockopt::display_ip(from.ip()) == crate::net::sockopt::display_ip(peer_ip);
        if !same_host || seen.contains(&from) {
            continue; // another host's datagram, or a repeated hello
        }
        seen.push(from);
        let stream = bind_udp(env.udp.bind)
            .map_err(|e| refuse(ctl, errors::IESTREAMLISTEN, e.to_string()))?;
        stream
            .connect(from)
            .map_err(|e| Iperf3Error::io("UDP connect to client", e))?;
        stream
            .send(&wire::UDP_CONNECT_REPLY)
            .map_err(|e| Iperf3Error::io("UDP hello reply", e))?;
        socks.push(DataSock::Udp(stream));
    }
    Ok(socks)
}

/// An unconnected UDP socket on the server's address and port, SO_REUSEADDR (like iperf3), so
/// connected stream sockets and the next listener can share the port.
pub fn bind_udp(addr: SocketAddr) -> std::io::Result<UdpSocket> {
    use socket2::{Domain, Socket, Type};
    let s = Socket::new(Domain::for_address(addr), Type::DGRAM, None)?;
    s.set_reuse_address(true)?;
    if addr.is_ipv6() {
        let _ = s.set_only_v6(false);
    }
    s.bind(&addr.into())
        .map_err(|e| std::io::Error::new(e.kind(), format!("UDP bind {addr}: {e}")))?;
    Ok(s.into())
}

fn unix_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}
