//! The iperf3 client (docs/protocols/iperf3.md §5): connects to any iperf3 3.x server (or ours), sends
//! the parameters, opens the data streams in iperf3's order, owns the test clock (time, `-n`
//! bytes or `-k` blocks), and merges both sides' results.

use super::control::Control;
use super::cpu::{CpuWindow, ThreadCpu};
use super::running::{Ended, Running, SideInfo, StreamPlan, unix_secs};
use super::stream::{self, Budget, DataSock};
use super::{IntervalSink, Iperf3Error, Result};
use crate::results::throughput::{CpuUtil, Role, ThroughputResult};
use crate::wire::iperf3::{self as wire, Cookie, Protocol, State, TestParams, TestResults};
use portable_atomic::AtomicU64;
use std::io::Write;
use std::net::{SocketAddr, TcpStream, ToSocketAddrs, UdpSocket};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Which address family to use for the server's name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Family {
    #[default]
    Any,
    V4,
    V6,
}

/// A client test.
#[derive(Debug, Clone)]
pub struct ClientConfig {
    pub host: String,
    pub port: u16,
    pub family: Family,
    /// The test; `len` None picks iperf3's default (TCP 128 KiB, UDP the control MSS).
    pub params: TestParams,
    /// Seconds between interval reports (0 = none).
    pub interval: f64,
    pub connect_timeout: Duration,
    pub control_timeout: Duration,
    /// Pin this end's stream threads to this CPU (`-A n`; the server's CPU travels in
    /// `params.server_affinity`).
    pub cpu: Option<usize>,
    /// Local port of the first data stream (iperf3's `--cport`); stream i uses port + i.
    pub cport: Option<u16>,
}

impl ClientConfig {
    pub fn new(host: &str, port: u16) -> Self {
        ClientConfig {
            host: host.to_string(),
            port,
            family: Family::Any,
            params: TestParams {
                pacing_timer: Some(1000),
                client_version: Some(format!("routerbench-{}", env!("CARGO_PKG_VERSION"))),
                ..TestParams::default()
            },
            interval: 1.0,
            connect_timeout: Duration::from_secs(10),
            control_timeout: super::CONTROL_TIMEOUT,
            cpu: None,
            cport: None,
        }
    }
}

fn resolve(cfg: &ClientConfig) -> Result<SocketAddr> {
    let addrs = (cfg.host.as_str(), cfg.port)
        .to_socket_addrs()
        .map_err(|e| Iperf3Error::io(format!("cannot resolve {}", cfg.host), e))?;
    addrs
        .into_iter()
        .find(|a| match cfg.family {
            Family::Any => true,
            Family::V4 => a.is_ipv4(),
            Family::V6 => a.is_ipv6(),
        })
        .ok_or_else(|| {
            Iperf3Error::Protocol(format!("{} has no address of the asked family", cfg.host))
        })
}

/// The context of a control connection closed right after the credentials were sent.
pub const CLOSED_AFTER_TOKEN: &str = "after the credentials (an iperf3 3.17+ server closes the connection on a token it cannot decrypt)";

/// Reads the next state, turning ACCESS_DENIED / SERVER_ERROR / SERVER_TERMINATE into errors.
fn expect_state(ctl: &mut Control, want: State) -> Result<()> {
    let s = ctl.read_state()?;
    match s {
        s if s == want => Ok(()),
        State::AccessDenied => Err(Iperf3Error::AccessDenied),
        State::ServerError => Err(Iperf3Error::ServerError(ctl.read_error_payload())),
        State::ServerTerminate => {
            let _ = ctl.send_state(State::IperfDone);
            Err(Iperf3Error::ServerTerminated)
        }
        other => Err(Iperf3Error::Protocol(format!(
            "expected {want:?}, the server sent {other:?}"
        ))),
    }
}

/// Runs one test against `cfg.host`. `stop` (SIGINT) ends it early: TEST_END as if its time
/// were up, and the results exchange within [`INTERRUPTED_EXCHANGE`], so the result holds what
/// both ends measured (`interrupted` set). Only if the server does not answer in time is it
/// this side's counters alone, after CLIENT_TERMINATE's place in the protocol has passed.
pub fn run(
    cfg: &ClientConfig,
    sink: &dyn IntervalSink,
    stop: &AtomicBool,
) -> Result<ThroughputResult> {
    // Refuse bad parameters before touching the server (a one-off iperf3 server would spend
    // its only test on our aborted connection).
    let mut pre = cfg.params.clone();
    if pre.protocol == Protocol::Udp && pre.len.is_none() {
        pre.len = Some(wire::params::DEFAULT_UDP_LEN);
    }
    pre.validate()
        .map_err(|e| Iperf3Error::Protocol(format!("bad test parameters: {e}")))?;
    let addr = resolve(cfg)?;
    let cpu_window = CpuWindow::new();
    let control_cpu = ThreadCpu::start();
    let tcp = TcpStream::connect_timeout(&addr, cfg.connect_timeout).map_err(|e| {
        Iperf3Error::io(
            format!("cannot connect to {addr}: is an iperf3 server running there (iperf3 -s / routerbench server)?"),
            e,
        )
    })?;
    let mut ctl = Control::new(tcp, cfg.control_timeout)?;
    let cookie = super::new_cookie();
    ctl.stream()
        .write_all(cookie.as_bytes())
        .map_err(|e| Iperf3Error::io("send cookie", e))?;
    let test = Test {
        cfg,
        addr,
        cookie: &cookie,
        sink,
        stop,
    };
    let r = run_test(&test, &mut ctl, cpu_window, control_cpu);
    ctl.close_gracefully(Duration::from_secs(1));
    r
}

/// How long an interrupted client waits for the server's results (a second Ctrl-C does not
/// wait longer: the flag is already set).
pub const INTERRUPTED_EXCHANGE: Duration = Duration::from_secs(2);

/// One test in progress: what every phase needs.
struct Test<'a> {
    cfg: &'a ClientConfig,
    addr: SocketAddr,
    cookie: &'a Cookie,
    sink: &'a dyn IntervalSink,
    stop: &'a AtomicBool,
}

/// The phases of one test: parameters, streams, the running test, its end, the results.
fn run_test(
    t: &Test<'_>,
    ctl: &mut Control,
    cpu: CpuWindow,
    control_cpu: ThreadCpu,
) -> Result<ThroughputResult> {
    let ctl_mss = crate::net::sockopt::mss(ctl.stream()).ok();
    let params = effective_params(&t.cfg.params, ctl_mss)?;
    expect_state(ctl, State::ParamExchange)?;
    ctl.send_json(&params.emit())?;
    expect_state(ctl, State::CreateStreams).map_err(|e| match e {
        // iperf3 3.21's server drops the connection, with no SERVER_ERROR, when the token
        // does not decrypt with its padding: say so, so the caller can try the other padding.
        Iperf3Error::Closed(_) if params.authtoken.is_some() => {
            Iperf3Error::Closed(CLOSED_AFTER_TOKEN)
        }
        e => e,
    })?;
    let (socks, roles, mut notes) = open_streams(t, &params)?;
    let buffers = match socks.first() {
        Some(DataSock::Tcp(t)) => crate::net::sockopt::buffer_sizes(t).unwrap_or((0, 0)),
        Some(DataSock::Udp(u)) => crate::net::sockopt::buffer_sizes(u).unwrap_or((0, 0)),
        None => (0, 0),
    };
    expect_state(ctl, State::TestStart)?;
    let timesecs = unix_secs();
    expect_state(ctl, State::TestRunning)?;
    let len = params.block_len() as u64;
    let budget = (params.num > 0 || params.blockcount > 0).then(|| {
        Arc::new(Budget {
            claimed: AtomicU64::new(0),
            limit: if params.num > 0 {
                params.num
            } else {
                params.blockcount * len
            },
        })
    });
    let client_sends = !params.reverse || params.bidirectional;
    let plan = StreamPlan {
        params: &params,
        sends: &|i| roles[i],
        send_rate: params.bandwidth,
        budget: budget.clone(),
        cpu: t.cfg.cpu,
        interval: t.cfg.interval,
        main_sends: client_sends,
        wake_senders: false,
    };
    let mut running = Running::start(socks, &plan, cpu, control_cpu)?;
    running.go(t.sink);
    let interrupted = drive(t, ctl, &params, &mut running, budget.is_some())?;
    // The client stops and joins its senders before TEST_END (as iperf3); its receivers
    // then drain what the server sent until it closes the streams.
    let end_t = running.meter.elapsed();
    running.stop_senders();
    // Interrupted (SIGINT): the test ends now, as if its time were up, so both ends' figures
    // (the bytes the server received) are exchanged; within a short deadline, else this side's
    // counters alone.
    if interrupted {
        ctl.set_timeout(ctl.timeout().min(INTERRUPTED_EXCHANGE));
    }
    ctl.send_state(State::TestEnd)?;
    running.stop_receivers();
    let mut ended = running.finish(end_t, t.sink);
    let (server, cpu) = if interrupted {
        match exchange_results(ctl, &mut ended) {
            Ok(x) => x,
            Err(e) => {
                notes.push(format!(
                    "interrupted: the server's figures did not arrive ({e}); receiver figures \
                     are this side's only"
                ));
                (TestResults::default(), ended.cpu_util())
            }
        }
    } else {
        exchange_results(ctl, &mut ended)?
    };
    let side = SideInfo {
        role: Role::Client,
        peer_version: None,
        host: t.cfg.host.clone(),
        port: t.cfg.port,
        tcp_mss_default: ctl_mss,
        buffers: (buffers.0 as u64, buffers.1 as u64),
        cookie: t.cookie.text(),
        timesecs,
    };
    notes.append(&mut ended.notes);
    notes.dedup();
    let mut result = ended.summarise(side, &params, &server, cpu, notes);
    result.interrupted = interrupted;
    Ok(result)
}

/// The parameters sent: iperf3's defaults filled in (block size: 128 KiB for TCP, the control
/// connection's MSS for UDP; UDP at 1 Mbit/s), `-n`/`-k` instead of a time, validated.
fn effective_params(asked: &TestParams, ctl_mss: Option<u32>) -> Result<TestParams> {
    let mut params = asked.clone();
    if params.protocol == Protocol::Udp {
        if params.len.is_none() {
            params.len = Some(ctl_mss.unwrap_or(wire::params::DEFAULT_UDP_LEN));
        }
        if params.bandwidth == 0 {
            params.bandwidth = 1 << 20; // iperf3's UDP default: 1 Mbit/s
        }
        // `--gsro`: the sizes 3.21 sends (GSO buffers of whole datagrams, 64 KiB GRO buffers).
        let len = params.len.unwrap_or(wire::params::DEFAULT_UDP_LEN);
        if let Some(g) = params.gso.as_mut().filter(|g| g.on) {
            g.dg_size = len;
            g.bf_size = (crate::net::udp_batch::gso_segments(len as usize) as u32) * len;
        }
        if let Some(g) = params.gro.as_mut().filter(|g| g.on) {
            g.bf_size = crate::net::udp_batch::MAX_UDP_PAYLOAD as u32;
        }
    } else if params.len.is_none() {
        params.len = Some(wire::params::DEFAULT_TCP_LEN);
    }
    if params.protocol != Protocol::Udp {
        params.gso = None;
        params.gro = None;
    }
    if params.num > 0 || params.blockcount > 0 {
        params.time = 0;
    }
    params
        .validate()
        .map_err(|e| Iperf3Error::Protocol(format!("bad test parameters: {e}")))?;
    Ok(params)
}

/// Connects the data streams in iperf3's creation order: senders first (normal, bidir), then
/// receivers (-R, bidir). Returns the sockets, whether each sends, and the options' notes.
fn open_streams(
    t: &Test<'_>,
    params: &TestParams,
) -> Result<(Vec<DataSock>, Vec<bool>, Vec<String>)> {
    let n = params.parallel as usize;
    let mut roles: Vec<bool> = Vec::new();
    if params.bidirectional {
        roles.extend(std::iter::repeat_n(true, n));
        roles.extend(std::iter::repeat_n(false, n));
    } else {
        roles.extend(std::iter::repeat_n(!params.reverse, n));
    }
    let udp = params.protocol == Protocol::Udp;
    let mut socks = Vec::with_capacity(roles.len());
    let mut notes = Vec::new();
    for i in 0..roles.len() {
        let local_port = match t.cfg.cport {
            Some(p) => Some(p.checked_add(i as u16).ok_or_else(|| {
                Iperf3Error::Protocol(format!("--cport {p} + {i} streams passes port 65535"))
            })?),
            None => None,
        };
        let s = if udp {
            connect_udp(
                t.addr,
                local_port,
                params,
                t.cfg.control_timeout,
                &mut notes,
            )?
        } else {
            connect_tcp(
                t.addr,
                local_port,
                t.cookie,
                params,
                t.cfg.connect_timeout,
                &mut notes,
            )?
        };
        socks.push(s);
    }
    Ok((socks, roles, notes))
}

/// The running test: intervals, until the time, the bytes or the blocks are done, or `stop`.
/// Returns whether `stop` ended it; the server's errors end it with an error.
fn drive(
    t: &Test<'_>,
    ctl: &mut Control,
    params: &TestParams,
    running: &mut Running,
    budgeted: bool,
) -> Result<bool> {
    let test_len = Duration::from_secs(u64::from(params.time) + u64::from(params.omit));
    let started = Instant::now();
    let client_sends = !params.reverse || params.bidirectional;
    loop {
        let mut tick = running.meter.until_next().min(Duration::from_millis(100));
        if params.time > 0 {
            tick = tick.min(test_len.saturating_sub(started.elapsed()));
        }
        match ctl.poll_state(tick.max(Duration::from_millis(1)))? {
            None => {}
            Some(State::ServerError) => {
                return Err(Iperf3Error::ServerError(ctl.read_error_payload()));
            }
            Some(State::ServerTerminate) => {
                let _ = ctl.send_state(State::IperfDone);
                return Err(Iperf3Error::ServerTerminated);
            }
            Some(State::AccessDenied) => return Err(Iperf3Error::AccessDenied),
            Some(s) => {
                return Err(Iperf3Error::Protocol(format!(
                    "unexpected {s:?} during the test"
                )));
            }
        }
        if let Some(iv) = running.meter.tick() {
            t.sink.interval(iv);
        }
        if t.stop.load(Ordering::Relaxed) {
            return Ok(true);
        }
        if running.meter.omitting() {
            continue;
        }
        let m = &running.meter;
        let (bytes, blocks) = (m.total_bytes(client_sends), m.total_blocks(client_sends));
        let time_up = params.time > 0 && started.elapsed() >= test_len;
        let bytes_up = params.num > 0 && bytes >= params.num;
        let blocks_up = params.blockcount > 0 && blocks >= params.blockcount;
        if time_up || bytes_up || blocks_up || (budgeted && running.senders_finished()) {
            return Ok(false);
        }
    }
}

/// EXCHANGE_RESULTS: ours first, then the server's, DISPLAY_RESULTS, IPERF_DONE. Returns the
/// server's results and this side's CPU use.
fn exchange_results(ctl: &mut Control, ended: &mut Ended) -> Result<(TestResults, CpuUtil)> {
    expect_state(ctl, State::ExchangeResults)?;
    let cpu = ended.cpu_util();
    ctl.send_json(&ended.results_message(cpu, None).emit())?;
    let server = ctl.read_results(wire::MAX_RESULTS_LEN, "server results")?;
    expect_state(ctl, State::DisplayResults)?;
    let _ = ctl.send_state(State::IperfDone);
    Ok((server, cpu))
}

/// The wildcard address of `addr`'s family with `port`.
fn local_any(addr: SocketAddr, port: u16) -> SocketAddr {
    if addr.is_ipv6() {
        (std::net::Ipv6Addr::UNSPECIFIED, port).into()
    } else {
        (std::net::Ipv4Addr::UNSPECIFIED, port).into()
    }
}

fn connect_tcp(
    addr: SocketAddr,
    local_port: Option<u16>,
    cookie: &Cookie,
    p: &TestParams,
    timeout: Duration,
    notes: &mut Vec<String>,
) -> Result<DataSock> {
    let mut s = match local_port {
        None => TcpStream::connect_timeout(&addr, timeout)
            .map_err(|e| Iperf3Error::io(format!("data connection to {addr}"), e))?,
        Some(port) => {
            use socket2::{Domain, Socket, Type};
            let local = local_any(addr, port);
            let bound = Socket::new(Domain::for_address(addr), Type::STREAM, None)
                .and_then(|sk| sk.set_reuse_address(true).map(|()| sk))
                .and_then(|sk| sk.bind(&local.into()).map(|()| sk))
                .map_err(|e| Iperf3Error::io(format!("--cport: cannot bind {local}"), e))?;
            bound
                .connect_timeout(&addr.into(), timeout)
                .map_err(|e| Iperf3Error::io(format!("data connection to {addr}"), e))?;
            bound.into()
        }
    };
    if let Some(mss) = p.mss {
        let _ = crate::net::sockopt::set_mss(&s, mss);
    }
    s.write_all(cookie.as_bytes())
        .map_err(|e| Iperf3Error::io("send cookie on data connection", e))?;
    let sock = DataSock::Tcp(s);
    notes.extend(stream::apply_options(&sock, p).map_err(|(_, m)| Iperf3Error::Protocol(m))?);
    Ok(sock)
}

fn connect_udp(
    addr: SocketAddr,
    local_port: Option<u16>,
    p: &TestParams,
    timeout: Duration,
    notes: &mut Vec<String>,
) -> Result<DataSock> {
    let bind = local_any(addr, local_port.unwrap_or(0));
    let s = UdpSocket::bind(bind).map_err(|e| Iperf3Error::io(format!("UDP bind {bind}"), e))?;
    s.connect(addr)
        .map_err(|e| Iperf3Error::io(format!("UDP connect {addr}"), e))?;
    // Options go on before the hello (a dup of the fd is the same socket).
    let clone = s
        .try_clone()
        .map_err(|e| Iperf3Error::io("UDP socket", e))?;
    notes.extend(
        stream::apply_options(&DataSock::Udp(clone), p)
            .map_err(|(_, m)| Iperf3Error::Protocol(m))?,
    );
    s.send(&wire::UDP_CONNECT_MSG)
        .map_err(|e| Iperf3Error::io("UDP stream hello", e))?;
    // Wait for "6789"; under -R data may come first (iperf3 tolerates 4 + 2·len bytes of it).
    let deadline = Instant::now() + timeout;
    let mut buf = vec![0u8; 65536];
    let mut tolerated = 4 + 2 * p.block_len() as usize;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(Iperf3Error::Timeout("UDP hello reply", timeout));
        }
        s.set_read_timeout(Some(left))
            .map_err(|e| Iperf3Error::io("UDP timeout", e))?;
        match s.recv(&mut buf) {
            Ok(4) if wire::udp::is_connect_reply(&buf[..4]) => return Ok(DataSock::Udp(s)),
            Ok(n) if n <= tolerated => tolerated -= n,
            Ok(_) => {
                return Err(Iperf3Error::Protocol(
                    "no UDP hello reply from the server".into(),
                ));
            }
            Err(e) if super::control::is_timeout(&e) => {}
            Err(e) => return Err(Iperf3Error::io("UDP hello reply", e)),
        }
    }
}
