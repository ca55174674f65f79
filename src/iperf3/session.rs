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
use std::net::TcpStream;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

pub use super::accept::{UdpAcceptor, bind_udp};
use super::accept::{accept_tcp, accept_udp};
use super::auth::ServerAuth;
use crate::server::limits::Ledger;

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
    /// Renders this side's result as text for `--get-server-output`.
    pub render_text: &'a (dyn Fn(&ThroughputResult) -> String + Sync),
    /// Global caps on streams, buffers and threads shared by every test.
    pub ledger: &'a Arc<Ledger>,
    /// Required authentication (`--rsa-private-key-path`), if any.
    pub auth: Option<&'a ServerAuth>,
}

pub(crate) fn refuse(ctl: &mut Control, i_errno: i32, message: String) -> Iperf3Error {
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
    if let Some(auth) = env.auth {
        authenticate(ctl, &params, auth)?;
    }
    check_limits(ctl, &params, cfg)?;
    let streams_asked = params.parallel as usize * if params.bidirectional { 2 } else { 1 };
    // Held until the test ends: the streams' share of the server-wide caps.
    let _reserved = env
        .ledger
        .streams(streams_asked, (params.block_len() as u64).max(65536))
        .map_err(|why| {
            // iperf3 prints "the server is busy running a test. try again later".
            let _ = ctl.send_state(State::AccessDenied);
            Iperf3Error::Refused {
                i_errno: errors::IEACCESSDENIED,
                message: format!("server full: {why}"),
            }
        })?;
    keepalive(ctl.stream(), cfg.idle_timeout);
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
    // Senders stop on their own flag at `time + omit + send_grace` even if TEST_END never comes.
    let senders_done = Arc::new(AtomicBool::new(false));
    let n_senders = (0..socks.len()).filter(|&i| server_sends(i)).count() as u64;
    let udp_cap = (cfg.max_udp_rate / n_senders.max(1)).max(1);
    let send_rate = if udp && (params.bandwidth == 0 || params.bandwidth > udp_cap) {
        if n_senders > 0 {
            warnings.push(format!(
                "server UDP sending capped at {:.1} Mbit/s per stream (server --max-udp-rate)",
                udp_cap as f64 / 1e6
            ));
        }
        udp_cap
    } else {
        params.bandwidth
    };
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
            rate: if sender { send_rate } else { params.bandwidth },
            wide: params.udp_counters_64bit,
            repeating_payload: params.repeating_payload,
            budget: None,
            drain: true,
            cpu,
        };
        let flag = if sender { &senders_done } else { &done };
        let h = stream::spawn(id, sock, wcfg, counters, flag.clone(), gate.clone())
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
    let send_until = Duration::from_secs(limit as u64) + cfg.send_grace;
    let mut rate_check = super::ratelimit::RateCheck::new(cfg.bitrate_limit);
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
        if let Err(message) = rate_check.sample(started.elapsed(), moved) {
            let _ = ctl.send_error(errors::IETOTALRATE, 0);
            break Err(Iperf3Error::Refused {
                i_errno: errors::IETOTALRATE,
                message,
            });
        }
        if started.elapsed() > send_until && !senders_done.load(Ordering::Relaxed) {
            // The client should have said TEST_END by now: stop sending, keep waiting for it
            // (up to the watchdog) so a late but honest client still gets its results.
            senders_done.store(true, Ordering::Relaxed);
            for w in &wake {
                w.wake();
            }
        }
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
    senders_done.store(true, Ordering::Relaxed);
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
        host: crate::net::addr::display_ip(peer.ip()),
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

/// iperf3's test_is_authorized: a missing or bad token ends the test with IEAUTHTEST (142).
fn authenticate(ctl: &mut Control, p: &TestParams, auth: &ServerAuth) -> Result<()> {
    let verdict = match &p.authtoken {
        None => Err("no credentials (client needs --username and --rsa-public-key-path)".into()),
        Some(t) => auth.check(t, super::auth::now_secs()),
    };
    verdict.map(|_user| ()).map_err(|why| {
        refuse(
            ctl,
            errors::IEAUTHTEST,
            format!("authentication failed: {why}"),
        )
    })
}

/// TCP keepalive on the control connection, so a client host that vanished (no ACK to the
/// probes) errors the socket within about `idle`, even while the server only sends (UDP -R).
fn keepalive(s: &TcpStream, idle: Duration) {
    let step = (idle / 4).max(Duration::from_secs(1));
    let ka = socket2::TcpKeepalive::new()
        .with_time(step)
        .with_interval(step)
        .with_retries(3);
    let sock = socket2::SockRef::from(s);
    let _ = sock.set_tcp_keepalive(&ka);
    let _ = sock.set_tcp_user_timeout(Some(idle));
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
    if let Some((limit, _)) = cfg.bitrate_limit {
        let streams = p.parallel as u64 * if p.bidirectional { 2 } else { 1 };
        if p.bandwidth.saturating_mul(streams) > limit {
            return Err(refuse(
                ctl,
                errors::IETOTALRATE,
                format!(
                    "{streams} streams × {} bit/s asked, server limit {limit} bit/s",
                    p.bandwidth
                ),
            ));
        }
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

fn unix_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}
