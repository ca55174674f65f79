//! One test on the server side, from the cookie to IPERF_DONE (docs/protocols/iperf3.md §5): parameter
//! checks and limits, data streams (TCP through the server's [`StreamBroker`], UDP by the hello
//! dance, both in `accept.rs`), the running test with a watchdog, and the results exchange.

use super::accept::{accept_tcp, accept_udp};
use super::auth::ServerAuth;
use super::control::{Control, refuse};
use super::cpu::{CpuWindow, ThreadCpu};
use super::running::{Ended, Running, SideInfo, StreamPlan, unix_secs};
use super::stream::{self, DataSock};
use super::{Iperf3Error, Result};
use crate::results::throughput::{Role, ThroughputResult};
use crate::service::limits::StreamGuard;
use crate::wire::iperf3::{self as wire, Cookie, Protocol, State, TestParams, errors};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

pub use super::env::{
    MAX_CLIENT_RESULTS_LEN, SessionConfig, SessionEnv, StreamBroker, UdpAcceptor,
};
pub use super::udp_port::bind_udp;

/// Runs one test whose control connection sent `cookie`. Errors are reported to the client
/// (SERVER_ERROR with iperf3's code) where the protocol allows, and returned for the log.
pub fn serve(mut ctl: Control, cookie: Cookie, env: &SessionEnv<'_>) -> Result<ThroughputResult> {
    let mut r = serve_inner(&mut ctl, cookie, env);
    env.broker.close(&cookie);
    // Evicted while reading (its read side was shut): the error is the eviction, and the
    // client hears "busy" rather than a bare close.
    if env.evicted() && !matches!(r, Ok(_) | Err(Iperf3Error::Refused { .. })) {
        r = Err(super::accept::evicted(&mut ctl));
    }
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

/// The phases of one test: parameters, the streams' share of the server, the streams, the
/// running test, the end, the results exchange.
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
    let params = read_params(ctl, env)?;
    env.progress();
    // Held until the test ends: the streams' share of the server-wide caps.
    let _reserved = reserve(ctl, env, &params)?;
    keepalive(ctl.stream(), cfg.idle_timeout);
    let cpu = stream_cpu(ctl, &params, cfg)?;
    let cpu_window = CpuWindow::new();
    let control_cpu = ThreadCpu::start();
    let (socks, mut warnings) = open_streams(ctl, env, &cookie, peer, &params)?;
    // Accept order: receivers first, then senders (iperf3's rec_streams_accepted rule).
    let n = params.parallel as usize;
    let server_sends = |i: usize| {
        if params.bidirectional {
            i >= n
        } else {
            params.reverse
        }
    };
    let n_senders = (0..socks.len()).filter(|&i| server_sends(i)).count() as u64;
    let send_rate = send_rate(cfg, &params, n_senders, &mut warnings);
    let timesecs = unix_secs();
    if env.evicted() {
        return Err(super::accept::evicted(ctl));
    }
    // From here the test runs: its seat is never taken.
    if let Some(seat) = env.seat {
        seat.running();
    }
    ctl.send_state(State::TestStart)?;
    ctl.send_state(State::TestRunning)?;
    let main_sends = params.reverse && !params.bidirectional;
    let plan = StreamPlan {
        params: &params,
        sends: &server_sends,
        send_rate,
        budget: None,
        cpu,
        interval: cfg.interval,
        main_sends,
        wake_senders: true,
    };
    let mut running = Running::start(socks, &plan, cpu_window, control_cpu)?;
    running.go(env.sink);
    let outcome = supervise(ctl, env, &params, &mut running);
    // Stop: senders at once (their sockets shut down), receivers after draining what the
    // client sent before TEST_END; then join every worker (each ends within DRAIN_MAX).
    let end_t = running.meter.elapsed();
    running.stop_all();
    let ended = running.finish(end_t, env.sink);
    outcome?;
    let side = SideInfo {
        role: Role::Server,
        peer_version: params.client_version.clone(),
        host: crate::net::addr::display_ip(peer.ip()),
        port: local.port(),
        tcp_mss_default: crate::net::sockopt::mss(ctl.stream()).ok(),
        buffers: (0, 0),
        cookie: cookie.text(),
        timesecs,
    };
    exchange_results(ctl, env, &params, ended, side, warnings)
}

/// PARAM_EXCHANGE: the client's parameters, authenticated and within the server's limits.
fn read_params(ctl: &mut Control, env: &SessionEnv<'_>) -> Result<TestParams> {
    ctl.send_state(State::ParamExchange)?;
    let body = ctl.read_json(wire::MAX_PARAMS_LEN, "parameters")?;
    let params = TestParams::parse(&body).map_err(|source| Iperf3Error::Wire {
        context: "parameters",
        source,
    })?;
    if let Some(auth) = env.auth {
        let ip = ctl
            .stream()
            .peer_addr()
            .map_err(|e| Iperf3Error::io("control peer", e))?
            .ip();
        authenticate(ctl, &params, auth, ip)?;
    }
    check_limits(ctl, &params, env.cfg)?;
    Ok(params)
}

/// The test's streams and buffers from the server-wide caps, or ACCESS_DENIED.
fn reserve(ctl: &mut Control, env: &SessionEnv<'_>, params: &TestParams) -> Result<StreamGuard> {
    let streams_asked = params.parallel as usize * if params.bidirectional { 2 } else { 1 };
    env.ledger
        .streams(streams_asked, (params.block_len() as u64).max(65536))
        .map_err(|why| {
            // iperf3 prints "the server is busy running a test. try again later".
            let _ = ctl.send_state(State::AccessDenied);
            Iperf3Error::Refused {
                i_errno: errors::IEACCESSDENIED,
                message: format!("server full: {why}"),
            }
        })
}

/// The CPU this end's stream threads run on: `-A n,m` from the client pins them to m, as
/// iperf3's server pins itself; otherwise the server's own `-A`.
fn stream_cpu(
    ctl: &mut Control,
    params: &TestParams,
    cfg: &SessionConfig,
) -> Result<Option<usize>> {
    let Some(m) = params.server_affinity else {
        return Ok(cfg.cpu);
    };
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
    Ok(Some(m))
}

/// CREATE_STREAMS: the test's data sockets with the client's options applied, and the
/// warnings the options gave.
fn open_streams(
    ctl: &mut Control,
    env: &SessionEnv<'_>,
    cookie: &Cookie,
    peer: SocketAddr,
    params: &TestParams,
) -> Result<(Vec<DataSock>, Vec<String>)> {
    let n = params.parallel as usize;
    let total = if params.bidirectional { 2 * n } else { n };
    let socks = if params.protocol == Protocol::Udp {
        accept_udp(ctl, env, peer.ip(), total)?
    } else {
        accept_tcp(ctl, env, cookie, total)?
    };
    let mut warnings = Vec::new();
    for s in &socks {
        warnings.extend(
            stream::apply_options(s, params).map_err(|(code, msg)| refuse(ctl, code, msg))?,
        );
    }
    warnings.dedup();
    Ok((socks, warnings))
}

/// The rate of the server's sending streams: the client's, within `--max-udp-rate` for UDP
/// (a `-b 0` gets the cap), with a warning when capped.
fn send_rate(
    cfg: &SessionConfig,
    params: &TestParams,
    n_senders: u64,
    warnings: &mut Vec<String>,
) -> u64 {
    let udp = params.protocol == Protocol::Udp;
    let udp_cap = (cfg.max_udp_rate / n_senders.max(1)).max(1);
    if udp && (params.bandwidth == 0 || params.bandwidth > udp_cap) {
        if n_senders > 0 {
            warnings.push(format!(
                "server UDP sending capped at {:.1} Mbit/s per stream (server --max-udp-rate)",
                udp_cap as f64 / 1e6
            ));
        }
        udp_cap
    } else {
        params.bandwidth
    }
}

/// The running test: intervals, and the client's TEST_END, or the end of the test by a stop
/// request, the bitrate limit, an idle client or the watchdog.
fn supervise(
    ctl: &mut Control,
    env: &SessionEnv<'_>,
    params: &TestParams,
    running: &mut Running,
) -> Result<()> {
    let cfg = env.cfg;
    let limit = if params.time > 0 {
        u64::from(params.time) + u64::from(params.omit)
    } else {
        u64::from(cfg.max_duration)
    };
    let watchdog = Duration::from_secs(limit) + cfg.grace;
    // Senders stop on their own flag at `time + omit + send_grace` even if TEST_END never comes.
    let send_until = Duration::from_secs(limit) + cfg.send_grace;
    let mut rate_check = super::ratelimit::RateCheck::new(cfg.bitrate_limit);
    let started = Instant::now();
    // No byte moved on any stream for `idle_timeout`: the client vanished (cable pulled,
    // Wi-Fi gone) and its FIN never came; free the slot (iperf3's --rcv-timeout, IENOMSG).
    let mut last_bytes = 0u64;
    let mut last_progress = Instant::now();
    loop {
        let tick = running.meter.until_next().min(Duration::from_millis(250));
        match ctl.poll_state(tick)? {
            Some(State::TestEnd) => return Ok(()),
            Some(State::ClientTerminate) => return Err(Iperf3Error::ClientTerminated),
            Some(State::TestStart) | None => {}
            Some(s) => {
                return Err(Iperf3Error::Protocol(format!(
                    "unexpected state {s:?} during the test"
                )));
            }
        }
        if let Some(iv) = running.meter.tick() {
            env.sink.interval(iv);
        }
        if env.stop.load(Ordering::Relaxed) {
            let _ = ctl.send_state(State::ServerTerminate);
            let _ = ctl.read_state_within(Duration::from_secs(1));
            return Err(Iperf3Error::Interrupted);
        }
        let moved = running.meter.total_bytes(true) + running.meter.total_bytes(false);
        if let Err(message) = rate_check.sample(started.elapsed(), moved) {
            return Err(refuse(ctl, errors::IETOTALRATE, message));
        }
        if started.elapsed() > send_until && !running.senders_stopped() {
            // The client should have said TEST_END by now: stop sending, keep waiting for it
            // (up to the watchdog) so a late but honest client still gets its results.
            running.wake_senders();
        }
        if moved != last_bytes {
            last_bytes = moved;
            last_progress = Instant::now();
        } else if last_progress.elapsed() > cfg.idle_timeout {
            return Err(refuse(
                ctl,
                errors::IENOMSG,
                format!(
                    "no data moved for {:?}: the client is gone",
                    cfg.idle_timeout
                ),
            ));
        }
        if started.elapsed() > watchdog {
            return Err(refuse(
                ctl,
                errors::IESERVERTESTDURATIONEXPIRED,
                format!("test still running after {watchdog:?}: ended by the watchdog"),
            ));
        }
    }
}

/// EXCHANGE_RESULTS: the client's results first (every stream must be there), then ours,
/// DISPLAY_RESULTS, and IPERF_DONE (or a close) ends the session.
fn exchange_results(
    ctl: &mut Control,
    env: &SessionEnv<'_>,
    params: &TestParams,
    mut ended: Ended,
    side: SideInfo,
    warnings: Vec<String>,
) -> Result<ThroughputResult> {
    ctl.send_state(State::ExchangeResults)?;
    let client = ctl.read_results(MAX_CLIENT_RESULTS_LEN, "client results")?;
    if let Some(e) = ended.ends.iter().find(|e| client.stream(e.id).is_none()) {
        return Err(refuse(
            ctl,
            errors::IESTREAMID,
            format!("client results lack stream {}", e.id),
        ));
    }
    let cpu = ended.cpu_util();
    let mut mine = ended.results_message(cpu, Some(&client));
    let result = ended.summarise(side, params, &client, cpu, warnings);
    if params.get_server_output {
        mine.server_output_text = (env.render_text)(&result);
    }
    ctl.send_json(&mine.emit())?;
    ctl.send_state(State::DisplayResults)?;
    env.sink.results(&result);
    // IPERF_DONE (or a close) ends the session; either is fine once results are out.
    let _ = ctl.read_state_within(env.cfg.control_timeout.min(Duration::from_secs(5)));
    Ok(result)
}

/// iperf3's test_is_authorized: a missing or bad token ends the test with IEAUTHTEST (142).
fn authenticate(
    ctl: &mut Control,
    p: &TestParams,
    auth: &ServerAuth,
    ip: std::net::IpAddr,
) -> Result<()> {
    let verdict = match &p.authtoken {
        None => Err("no credentials (client needs --username and --rsa-public-key-path)".into()),
        Some(t) => auth.check_from(ip, t, super::auth::now_secs()),
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
    // Both come from the peer: summed in u64, so `time` and `omit` near u32::MAX cannot
    // overflow.
    let asked = u64::from(p.time) + u64::from(p.omit);
    if asked > u64::from(cfg.max_duration) {
        return Err(refuse(
            ctl,
            errors::IEMAXSERVERTESTDURATIONEXCEEDED,
            format!(
                "{asked} s asked (time {} + omit {}), limit {} s",
                p.time, p.omit, cfg.max_duration
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
