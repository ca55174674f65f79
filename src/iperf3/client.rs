//! The iperf3 client (spec/iperf3.md §5): connects to any iperf3 3.x server (or ours), sends
//! the parameters, opens the data streams in iperf3's order, owns the test clock (time, `-n`
//! bytes or `-k` blocks), and merges both sides' results.

use super::control::Control;
use super::cpu::{CpuWindow, ThreadCpu};
use super::meter::{Meter, MeteredStream};
use super::stream::{self, Budget, Counters, DataSock, WorkerConfig};
use super::summary::{self, ResultParts};
use super::{IntervalSink, Iperf3Error, Result, stream_id};
use crate::results::throughput::{Role, ThroughputResult};
use crate::wire::iperf3::{self as wire, Cookie, Protocol, State, TestParams, TestResults};
use std::io::Write;
use std::net::{SocketAddr, TcpStream, ToSocketAddrs, UdpSocket};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
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

/// Runs one test against `cfg.host`. `stop` (SIGINT) ends it with CLIENT_TERMINATE and a
/// partial result from this side's counters (`interrupted` set, the peer's side empty).
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
    let r = run_test(
        cfg,
        &mut ctl,
        addr,
        &cookie,
        sink,
        stop,
        cpu_window,
        control_cpu,
    );
    ctl.close_gracefully(Duration::from_secs(1));
    r
}

#[allow(clippy::too_many_arguments)]
fn run_test(
    cfg: &ClientConfig,
    ctl: &mut Control,
    addr: SocketAddr,
    cookie: &Cookie,
    sink: &dyn IntervalSink,
    stop: &AtomicBool,
    mut cpu: CpuWindow,
    control_cpu: ThreadCpu,
) -> Result<ThroughputResult> {
    let ctl_mss = crate::net::sockopt::mss(ctl.stream()).ok();
    let mut params = cfg.params.clone();
    if params.protocol == Protocol::Udp {
        if params.len.is_none() {
            params.len = Some(ctl_mss.unwrap_or(wire::params::DEFAULT_UDP_LEN));
        }
        if params.bandwidth == 0 {
            params.bandwidth = 1 << 20; // iperf3's UDP default: 1 Mbit/s
        }
    } else if params.len.is_none() {
        params.len = Some(wire::params::DEFAULT_TCP_LEN);
    }
    if params.num > 0 || params.blockcount > 0 {
        params.time = 0;
    }
    params
        .validate()
        .map_err(|e| Iperf3Error::Protocol(format!("bad test parameters: {e}")))?;
    expect_state(ctl, State::ParamExchange)?;
    ctl.send_json(&params.emit())?;
    expect_state(ctl, State::CreateStreams)?;
    let n = params.parallel as usize;
    let udp = params.protocol == Protocol::Udp;
    // Creation order: senders first (normal, bidir), then receivers (-R, bidir).
    let mut roles: Vec<bool> = Vec::new();
    if params.bidirectional {
        roles.extend(std::iter::repeat_n(true, n));
        roles.extend(std::iter::repeat_n(false, n));
    } else {
        roles.extend(std::iter::repeat_n(!params.reverse, n));
    }
    let mut socks = Vec::with_capacity(roles.len());
    let mut notes = Vec::new();
    for i in 0..roles.len() {
        let local_port = match cfg.cport {
            Some(p) => Some(p.checked_add(i as u16).ok_or_else(|| {
                Iperf3Error::Protocol(format!("--cport {p} + {i} streams passes port 65535"))
            })?),
            None => None,
        };
        let s = if udp {
            connect_udp(addr, local_port, &params, cfg.control_timeout, &mut notes)?
        } else {
            connect_tcp(
                addr,
                local_port,
                cookie,
                &params,
                cfg.connect_timeout,
                &mut notes,
            )?
        };
        socks.push(s);
    }
    let buffers = match socks.first() {
        Some(DataSock::Tcp(t)) => crate::net::sockopt::buffer_sizes(t).unwrap_or((0, 0)),
        Some(DataSock::Udp(u)) => crate::net::sockopt::buffer_sizes(u).unwrap_or((0, 0)),
        None => (0, 0),
    };
    let congestion = socks.iter().find_map(|s| match s {
        DataSock::Tcp(t) => crate::net::sockopt::congestion(t).ok(),
        DataSock::Udp(_) => None,
    });
    expect_state(ctl, State::TestStart)?;
    let timesecs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
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
    let done_send = Arc::new(AtomicBool::new(false));
    let gate = Arc::new(stream::Gate::default());
    let done_recv = Arc::new(AtomicBool::new(false));
    let mut metered = Vec::new();
    let mut senders = Vec::new();
    let mut receivers = Vec::new();
    let mut connected = Vec::new();
    for (i, (sock, &sender)) in socks.into_iter().zip(&roles).enumerate() {
        let id = stream_id(i);
        let counters = Arc::new(Counters::default());
        let mut m = MeteredStream::new(id, sender, udp, counters.clone());
        if let DataSock::Tcp(t) = &sock {
            m.info = t.try_clone().ok();
        }
        connected.push(summary::connected(id, &sock));
        let wcfg = WorkerConfig {
            sender,
            len: len as usize,
            rate: params.bandwidth,
            wide: params.udp_counters_64bit,
            repeating_payload: params.repeating_payload,
            budget: if sender { budget.clone() } else { None },
            drain: true,
            cpu: cfg.cpu,
        };
        let done = if sender { &done_send } else { &done_recv };
        let h = stream::spawn(id, sock, wcfg, counters, done.clone(), gate.clone())
            .map_err(|e| Iperf3Error::io("spawn stream thread", e))?;
        metered.push(m);
        if sender {
            senders.push(h);
        } else {
            receivers.push(h);
        }
    }
    sink.started(&connected);
    let main_sends = !params.reverse || params.bidirectional;
    let mut meter = Meter::new(metered, params.omit, cfg.interval, main_sends);
    gate.open();
    let test_len = Duration::from_secs(params.time as u64 + params.omit as u64);
    let started = Instant::now();
    let client_sends = !params.reverse || params.bidirectional;
    let mut interrupted = false;
    loop {
        let mut tick = meter.until_next().min(Duration::from_millis(100));
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
        if let Some(iv) = meter.tick() {
            sink.interval(iv);
        }
        if stop.load(Ordering::Relaxed) {
            interrupted = true;
            break;
        }
        if meter.omitting() {
            continue;
        }
        let (bytes, blocks) = if client_sends {
            (meter.total_bytes(true), meter.total_blocks(true))
        } else {
            (meter.total_bytes(false), meter.total_blocks(false))
        };
        let time_up = params.time > 0 && started.elapsed() >= test_len;
        let bytes_up = params.num > 0 && bytes >= params.num;
        let blocks_up = params.blockcount > 0 && blocks >= params.blockcount;
        let senders_done = !senders.is_empty() && senders.iter().all(|h| h.is_finished());
        if time_up || bytes_up || blocks_up || (budget.is_some() && senders_done) {
            break;
        }
    }
    // The client stops and joins its senders before TEST_END (as iperf3); its receivers
    // then drain what the server sent until it closes the streams.
    let end_t = meter.elapsed();
    done_send.store(true, Ordering::Relaxed);
    for h in senders {
        if let Ok(end) = h.join() {
            cpu.add(end.cpu);
        }
    }
    // Interrupted (SIGINT): CLIENT_TERMINATE instead of TEST_END, and a partial summary from
    // this side's counters only, as iperf3 prints one.
    ctl.send_state(if interrupted {
        State::ClientTerminate
    } else {
        State::TestEnd
    })?;
    done_recv.store(true, Ordering::Relaxed);
    for h in receivers {
        if let Ok(end) = h.join() {
            cpu.add(end.cpu);
        }
    }
    let before = meter.intervals.len();
    let ends = meter.finish(end_t);
    if meter.intervals.len() > before {
        if let Some(last) = meter.intervals.last() {
            sink.interval(last);
        }
    }
    let server = if interrupted {
        cpu.add(control_cpu.stop());
        TestResults::default()
    } else {
        expect_state(ctl, State::ExchangeResults)?;
        cpu.add(control_cpu.stop());
        let mine = summary::results_message(&ends, cpu.util(), congestion.clone(), udp, None);
        ctl.send_json(&mine.emit())?;
        let body = ctl.read_json(wire::MAX_RESULTS_LEN, "server results")?;
        let server = TestResults::parse(&body).map_err(|source| Iperf3Error::Wire {
            context: "server results",
            source,
        })?;
        expect_state(ctl, State::DisplayResults)?;
        let _ = ctl.send_state(State::IperfDone);
        server
    };
    let cpu_util = cpu.util();
    let mut result = summary::build_result(ResultParts {
        role: Role::Client,
        peer_version: None,
        host: cfg.host.clone(),
        port: cfg.port,
        cookie: cookie.text(),
        timesecs,
        setup: summary::setup_from(&params),
        tcp_mss_default: ctl_mss,
        buffers: (buffers.0 as u64, buffers.1 as u64),
        connected,
        intervals: std::mem::take(&mut meter.intervals),
        ends: &ends,
        peer: &server,
        cpu_local: cpu_util,
        main_local_sends: main_sends,
        congestion,
    });
    notes.dedup();
    result.notes = notes;
    result.interrupted = interrupted;
    Ok(result)
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
