//! `routerbench server`: serves iperf3 3.x clients (and routerbench's own protocol) on one
//! port, several tests at once, with limits; iperf3's output on stdout (or `--logfile`), log
//! lines with `-V`; `-D`, `-I` and SIGHUP as iperf3 users expect.

pub mod config_file;
pub mod log;
pub mod metrics;

use crate::cli::common::iperf3_opts::OutputOpts;
use crate::cli::common::log_sink::LogSink;
use crate::server::{Server, ServerConfig};
use clap::Args;
use log::{Log, spawn_reopen_on_hangup};
use portable_atomic::AtomicU64;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

#[derive(Debug, Args)]
pub struct ServerArgs {
    /// Server mode (iperf3's `-s`; `routerbench server` always serves, so this is optional).
    #[arg(short = 's', long = "server")]
    pub server_mode: bool,
    /// Run in the background (iperf3's -D): detach after the port is bound.
    #[arg(short = 'D', long = "daemon")]
    pub daemon: bool,
    /// Write the server's process id to FILE (removed on exit), iperf3's -I.
    #[arg(short = 'I', long = "pidfile", value_name = "FILE")]
    pub pidfile: Option<std::path::PathBuf>,
    #[command(flatten)]
    pub output: OutputOpts,
    /// Seconds between the server's interval lines (0 = none).
    #[arg(
        short = 'i',
        long = "interval",
        default_value_t = 1.0,
        allow_negative_numbers = true
    )]
    pub interval: f64,
    /// Port to listen on (TCP, and UDP for UDP tests).
    #[arg(short = 'p', long = "port", default_value_t = crate::wire::iperf3::DEFAULT_PORT)]
    pub port: u16,
    /// Address to bind (default: all, IPv4 and IPv6).
    #[arg(short = 'B', long = "bind")]
    pub bind: Option<IpAddr>,
    /// Serve one test, then exit (iperf3's -1).
    #[arg(short = '1', long = "one-off")]
    pub one_off: bool,
    /// Exit after this many tests.
    #[arg(long = "max-tests")]
    pub max_tests: Option<u64>,
    /// Tests running at once; more clients are told the server is busy.
    #[arg(long = "max-concurrent", default_value_t = 8)]
    pub max_concurrent: usize,
    /// Longest test accepted in seconds (time + omit); bytes-based tests end by then.
    #[arg(long = "max-duration", default_value_t = 3600)]
    pub max_duration: u32,
    /// Most parallel streams per test (iperf3 allows 128).
    #[arg(long = "max-streams", default_value_t = 128)]
    pub max_streams: u32,
    /// Most buffer memory per test in MiB (streams × block size); bigger tests are refused.
    #[arg(long = "max-buffer-mib", default_value_t = 32)]
    pub max_buffer_mib: u64,
    /// Seconds without any data moving (or, while the server only sends, without the client's
    /// host answering TCP keepalives) before a running test is ended (iperf3's --rcv-timeout).
    #[arg(
        long = "rcv-timeout",
        visible_alias = "idle-timeout",
        default_value_t = 60
    )]
    pub rcv_timeout: u64,
    /// Connections open at once over all clients (threads: one each).
    #[arg(long = "max-connections", default_value_t = 192)]
    pub max_connections: usize,
    /// Connections one client address may have open at once (handshakes and routerbench
    /// sessions with their load flows); default a quarter of --max-connections (48).
    #[arg(long = "max-conns-per-host")]
    pub max_conns_per_host: Option<usize>,
    /// iperf3 tests (and routerbench sessions) one client address may run at once; default
    /// half of --max-concurrent (4).
    #[arg(long = "max-tests-per-host")]
    pub max_tests_per_host: Option<usize>,
    /// Data streams (TCP and UDP, both directions) over all running tests.
    #[arg(long = "max-total-streams", default_value_t = 96)]
    pub max_total_streams: usize,
    /// Stream buffer memory over all running tests, MiB.
    #[arg(long = "max-total-buffer-mib", default_value_t = 48)]
    pub max_total_buffer_mib: u64,
    /// Threads of the whole server; no connection or test starts above it.
    #[arg(long = "max-threads", default_value_t = 256)]
    pub max_threads: usize,
    /// Most the server sends over UDP per test (-u -R, --bidir), bit/s with K/M/G; a client's
    /// `-b 0` or higher rate gets this.
    #[arg(long = "max-udp-rate", default_value = "1G", value_parser = parse_rate)]
    pub max_udp_rate: u64,
    /// End a test whose total rate (both directions) averaged over SECS (default: the whole
    /// test) exceeds RATE; tests asking more than RATE up front are refused (iperf3's option).
    #[arg(long = "server-bitrate-limit", value_name = "RATE[/SECS]",
          value_parser = crate::iperf3::ratelimit::parse_limit)]
    pub server_bitrate_limit: Option<(u64, u32)>,
    /// Seconds a UDP test's client has to send all its stream hellos.
    #[arg(long = "udp-hello-timeout", default_value_t = 3)]
    pub udp_hello_timeout: u64,
    /// Require iperf3 RSA authentication: the server's private key (PEM, unencrypted).
    #[arg(
        long = "rsa-private-key-path",
        requires = "authorized_users_path",
        value_name = "FILE"
    )]
    pub rsa_private_key_path: Option<std::path::PathBuf>,
    /// Authorised users, lines `user,sha256("{user}password")` as iperf3's.
    #[arg(
        long = "authorized-users-path",
        requires = "rsa_private_key_path",
        value_name = "FILE"
    )]
    pub authorized_users_path: Option<std::path::PathBuf>,
    /// Which RSA padding the credentials may use: auto (either: iperf3 3.12's PKCS#1 v1.5 and
    /// 3.17+'s OAEP alike, told apart by the plaintext), pkcs1 or oaep (only that one, as an
    /// iperf3 server does).
    #[arg(
        long = "rsa-padding",
        value_name = "auto|pkcs1|oaep",
        default_value = "auto"
    )]
    pub rsa_padding: crate::iperf3::auth::ServerPadding,
    /// iperf3 3.17+'s spelling of `--rsa-padding pkcs1`.
    #[arg(long = "use-pkcs1-padding", conflicts_with = "rsa_padding")]
    pub use_pkcs1_padding: bool,
    /// Largest difference between the client's token time and this clock, seconds.
    #[arg(long = "time-skew-threshold", default_value_t = crate::iperf3::auth::DEFAULT_SKEW)]
    pub time_skew_threshold: u64,
    /// Require this shared secret from routerbench-protocol clients (their --token); default
    /// $ROUTERBENCH_TOKEN.
    #[arg(long = "token", value_name = "TOKEN")]
    pub token: Option<String>,
    /// routerbench-protocol sessions (RRUL and friends) at once.
    #[arg(long = "max-rb-sessions", default_value_t = 8)]
    pub max_rb_sessions: usize,
    /// Load flows per routerbench-protocol session.
    #[arg(long = "max-rb-flows", default_value_t = 32)]
    pub max_rb_flows: u8,
    /// Longest load phase a routerbench-protocol client may ask for, seconds.
    #[arg(long = "max-rb-duration", default_value_t = 600)]
    pub max_rb_duration: u64,
    /// Seconds a silent client may wait between control messages.
    #[arg(long = "control-timeout", default_value_t = 10)]
    pub control_timeout: u64,
    /// Seconds a new connection may take to send its cookie (or routerbench magic).
    #[arg(long = "handshake-timeout", default_value_t = 10)]
    pub handshake_timeout: u64,
    /// UDP port of the latency probe reflector (default: the server's port, shared with
    /// iperf3's UDP tests, so a firewall opens one number for TCP and UDP; 0 = ephemeral).
    #[arg(long = "latency-udp-port", value_name = "PORT")]
    pub latency_udp_port: Option<u16>,
    /// Pin every test's stream threads to this CPU (iperf3's server `-A n`); a client's
    /// `-A n,m` overrides it for its test.
    #[arg(short = 'A', long = "affinity", value_name = "N")]
    pub affinity: Option<usize>,
    /// Read settings from a UCI file (the OpenWrt package's /etc/config/routerbench, section
    /// `config routerbench`); flags after it override the file.
    #[arg(long, value_name = "FILE")]
    pub config: Option<std::path::PathBuf>,
    /// Each finished test as iperf3 -J JSON: `-J, --json [FILE|-]`, see `crate::cli::common::json_arg`; on
    /// standard output (or --logfile) it replaces the text, a FILE gets one document per test
    /// appended.
    #[command(flatten)]
    pub json: crate::cli::common::json_arg::JsonArg,
    /// No output at all, only errors.
    #[arg(short = 'q', long = "quiet", conflicts_with = "verbose")]
    pub quiet: bool,
    /// Also serve this machine's monitor samples (the agent) to `--monitor` clients on the
    /// same port.
    #[arg(long = "monitor")]
    pub monitor: bool,
    /// Token a monitor client (and a `/metrics` scraper) must present; required when
    /// listening beyond loopback.
    #[arg(long = "monitor-token", value_name = "T")]
    pub monitor_token: Option<String>,
    /// Serve Prometheus metrics at `GET /metrics` on the server's port (also with --monitor):
    /// this machine's CPU, softirq, softnet, qdisc, BQL, thermal and Wi-Fi counters and the last
    /// results (docs/metrics.md). Behind --monitor-token or --token (bearer or `?token=`).
    #[arg(long = "metrics")]
    pub metrics: bool,
    /// Also write the metrics to FILE (Prometheus text, replaced atomically) every
    /// --metrics-interval seconds, for an exporter's textfile collector.
    #[arg(long = "metrics-file", value_name = "FILE.prom")]
    pub metrics_file: Option<std::path::PathBuf>,
    /// Seconds between --metrics-file writes.
    #[arg(long = "metrics-interval", default_value_t = 15, value_name = "SECS")]
    pub metrics_interval: u64,
    /// Which families --metrics-file writes: gaps (routerbench_* and the softnet, softirq and
    /// qdisc families OpenWrt's exporters lack), routerbench (beside the Go node_exporter), all.
    #[arg(long = "metrics-file-families", value_enum, default_value = "gaps")]
    pub metrics_file_families: metrics::FileFamilies,
    /// Where this machine's result files are (`routerbench run --out-dir`, or `--json FILE`s):
    /// the metrics export the newest latency, RPM, SQM capacity and crypto results found there.
    #[arg(long = "results-dir", value_name = "DIR")]
    pub results_dir: Option<std::path::PathBuf>,
    /// Monitor subscriptions served at once.
    #[arg(long = "max-monitors", default_value_t = 4, requires = "monitor")]
    pub max_monitors: usize,
    /// The browser test at http://HOST:PORT/ (docs/web.md): `on` (default) or `off`.
    #[arg(long = "web", value_name = "on|off", default_value = "on", value_parser = parse_on_off,
          action = clap::ArgAction::Set)]
    pub web: bool,
    /// Highest rate one browser test may move per direction, bit/s with K/M/G (default: none).
    #[arg(long = "web-max-rate", value_name = "RATE", value_parser = parse_rate)]
    pub web_max_rate: Option<u64>,
}

fn parse_on_off(s: &str) -> Result<bool, String> {
    match s {
        "on" | "1" | "yes" | "true" => Ok(true),
        "off" | "0" | "no" | "false" => Ok(false),
        _ => Err(format!("`{s}`: give on or off")),
    }
}

/// The token of the agent and of `/metrics` (`--monitor-token`, else `--token` or
/// $ROUTERBENCH_TOKEN), or why they cannot run as asked: beyond loopback one is required.
fn monitor_token(args: &ServerArgs) -> anyhow::Result<Option<String>> {
    let serving = args.monitor || args.metrics;
    if !serving {
        if args.monitor_token.is_some() {
            anyhow::bail!("--monitor-token guards --monitor and --metrics: give one of them too");
        }
        return Ok(None);
    }
    let loopback_only = args.bind.is_some_and(|b| b.is_loopback());
    // One shared secret can guard both: --token (or $ROUTERBENCH_TOKEN) also guards the agent
    // unless --monitor-token names another.
    let token = match &args.monitor_token {
        Some(t) => Some(t.clone()),
        None => crate::cli::common::token::token_arg(&args.token)?,
    };
    if !loopback_only && token.as_deref().unwrap_or("").is_empty() {
        anyhow::bail!(
            "{} on {}: anyone who reaches this port could read this machine's processes \
             and load; give --monitor-token T or --token T (or -B 127.0.0.1 to serve this host only)",
            if args.monitor {
                "--monitor"
            } else {
                "--metrics"
            },
            args.bind
                .map_or("all addresses".to_string(), |b| b.to_string())
        );
    }
    if token
        .as_ref()
        .is_some_and(|t| t.len() > crate::wire::rb_agent::MAX_TOKEN_LEN)
    {
        anyhow::bail!(
            "--monitor-token is longer than {} bytes",
            crate::wire::rb_agent::MAX_TOKEN_LEN
        );
    }
    Ok(token)
}

/// The agent for `--monitor`, or why it cannot run as asked.
pub fn agent(args: &ServerArgs) -> anyhow::Result<Option<crate::monitor::agent::Agent>> {
    let token = monitor_token(args)?;
    if !args.monitor {
        return Ok(None);
    }
    Ok(Some(crate::monitor::agent::Agent::new(
        crate::monitor::agent::AgentConfig {
            token,
            max_subscriptions: args.max_monitors.clamp(1, 64),
            // Below the server-wide cap, so one host cannot hold every subscription.
            max_per_host: args.max_monitors.clamp(2, 64) - 1,
            max_duration: std::time::Duration::from_secs(u64::from(args.max_duration).max(1)),
            handshake_timeout: std::time::Duration::from_secs(args.handshake_timeout.max(1)),
            ..Default::default()
        },
    )))
}

pub fn config(args: &ServerArgs) -> ServerConfig {
    let ip = args
        .bind
        .unwrap_or(IpAddr::V6(std::net::Ipv6Addr::UNSPECIFIED));
    let mut cfg = ServerConfig::new(SocketAddr::new(ip, args.port));
    cfg.max_tests = if args.one_off {
        Some(1)
    } else {
        args.max_tests
    };
    // `check` refused zeros and out-of-range values; the `max`/`clamp` below only keep a
    // caller that skipped it (tests) safe.
    cfg.max_concurrent_tests = args.max_concurrent.max(1);
    cfg.session.cpu = args.affinity;
    cfg.session.max_duration = args.max_duration;
    cfg.session.max_streams = args.max_streams.clamp(1, 128);
    cfg.session.max_buffer_bytes = args.max_buffer_mib.max(1) << 20;
    cfg.session.idle_timeout = Duration::from_secs(args.rcv_timeout.max(1));
    cfg.session.interval = if args.quiet && !args.json.is_set() {
        0.0
    } else {
        args.interval
    };
    cfg.session.control_timeout = Duration::from_secs(args.control_timeout.max(1));
    cfg.first_bytes_timeout = Duration::from_secs(args.handshake_timeout.max(1));
    cfg.max_connections = args.max_connections.max(1);
    cfg.caps = crate::service::limits::Caps {
        conns_per_host: args.conns_per_host().max(1),
        tests_per_host: args.tests_per_host().max(1),
        total_streams: args.max_total_streams.max(1),
        total_buffer_bytes: args.max_total_buffer_mib.max(1) << 20,
        max_threads: args.max_threads.max(MIN_THREADS),
    };
    cfg.session.max_udp_rate = args.max_udp_rate.max(1);
    cfg.session.bitrate_limit = args.server_bitrate_limit;
    cfg.session.udp_hello_timeout = Duration::from_secs(args.udp_hello_timeout.max(1));
    cfg.handle_signals = true;
    cfg
}

fn parse_rate(s: &str) -> Result<u64, String> {
    crate::iperf3::ratelimit::parse_limit(s)
        .map(|(r, _)| r)
        .map_err(|e| e.replace("--server-bitrate-limit", "rate"))
}

/// The start-up warning when the server is reachable beyond this host without authentication.
fn open_warning(bind: SocketAddr, rsa: bool, token: bool) -> Option<String> {
    if loopback_only(bind.ip()) || (rsa && token) {
        return None;
    }
    let open: Vec<&str> = [
        (!rsa).then_some("iperf3 tests (--rsa-private-key-path)"),
        (!token).then_some("routerbench sessions (--token)"),
    ]
    .into_iter()
    .flatten()
    .collect();
    Some(format!(
        "warning: listening on {bind} without authentication for {}: anyone who can reach this port can run tests",
        open.join(" and ")
    ))
}

/// Whether `ip` is reachable only from this host.
fn loopback_only(ip: IpAddr) -> bool {
    crate::net::addr::canonical_ip(ip).is_loopback()
}

impl ServerArgs {
    /// `--max-conns-per-host`, or its default: a quarter of `--max-connections`, so four
    /// hosts cannot fill the server's connections alone (and eviction has lighter hosts).
    pub fn conns_per_host(&self) -> usize {
        self.max_conns_per_host
            .unwrap_or((self.max_connections / 4).max(1))
    }

    /// `--max-tests-per-host`, or its default: half of `--max-concurrent`.
    pub fn tests_per_host(&self) -> usize {
        self.max_tests_per_host
            .unwrap_or((self.max_concurrent / 2).max(1))
    }
}

/// Threads the server needs for itself (accept loop, reflectors, signal and log watchers)
/// before it can serve anyone: a `--max-threads` below it could serve nothing.
pub const MIN_THREADS: usize = 16;

/// Checks the options before anything is bound or detached: a limit that would refuse every
/// client, or that the server would have to raise silently, is an error with the reason.
pub fn check(args: &ServerArgs) -> anyhow::Result<()> {
    if let Some(c) = args.affinity {
        crate::util::affinity::check_cpu(c).map_err(|e| anyhow::anyhow!("-A: {e}"))?;
    }
    if !(args.interval == 0.0 || (0.1..=60.0).contains(&args.interval)) {
        anyhow::bail!(
            "-i must be 0 (no intervals) or between 0.1 and 60 seconds, got {}",
            args.interval
        );
    }
    let refuses_everyone = |name: &str| {
        anyhow::anyhow!(
            "{name} 0 would refuse every client: give at least 1 (or leave it out for the default)"
        )
    };
    for (v, name) in [
        (args.max_concurrent as u64, "--max-concurrent"),
        (args.max_duration as u64, "--max-duration"),
        (args.max_streams as u64, "--max-streams"),
        (args.max_buffer_mib, "--max-buffer-mib"),
        (args.max_connections as u64, "--max-connections"),
        (args.conns_per_host() as u64, "--max-conns-per-host"),
        (args.tests_per_host() as u64, "--max-tests-per-host"),
        (args.max_total_streams as u64, "--max-total-streams"),
        (args.max_total_buffer_mib, "--max-total-buffer-mib"),
        (args.max_udp_rate, "--max-udp-rate"),
        (args.max_rb_sessions as u64, "--max-rb-sessions"),
        (u64::from(args.max_rb_flows), "--max-rb-flows"),
        (args.max_rb_duration, "--max-rb-duration"),
        (args.max_monitors as u64, "--max-monitors"),
        (args.metrics_interval, "--metrics-interval"),
    ] {
        if v == 0 {
            return Err(refuses_everyone(name));
        }
    }
    for (v, name) in [
        (args.rcv_timeout, "--rcv-timeout"),
        (args.control_timeout, "--control-timeout"),
        (args.handshake_timeout, "--handshake-timeout"),
        (args.udp_hello_timeout, "--udp-hello-timeout"),
    ] {
        if v == 0 {
            anyhow::bail!("{name} 0 would end every test at once: give at least 1 second");
        }
    }
    if args.max_streams > crate::wire::iperf3::MAX_STREAMS {
        anyhow::bail!(
            "--max-streams {} is above iperf3's own limit of {} streams per test",
            args.max_streams,
            crate::wire::iperf3::MAX_STREAMS
        );
    }
    if args.max_threads < MIN_THREADS {
        anyhow::bail!(
            "--max-threads {} is below the {MIN_THREADS} threads the server needs for itself \
             (accept loop, probe reflector, signal and log watchers): give at least {MIN_THREADS}",
            args.max_threads
        );
    }
    if args.max_monitors > 64 {
        anyhow::bail!(
            "--max-monitors {} is above 64 (each subscription samples this machine on its own)",
            args.max_monitors
        );
    }
    Ok(())
}

/// Checks the options that bound each other (a per-host cap above its server-wide one).
pub fn check_relations(args: &ServerArgs) -> anyhow::Result<()> {
    for (per_host, host_name, all, all_name) in [
        (
            args.max_conns_per_host,
            "--max-conns-per-host",
            args.max_connections,
            "--max-connections",
        ),
        (
            args.max_tests_per_host,
            "--max-tests-per-host",
            args.max_concurrent,
            "--max-concurrent",
        ),
    ] {
        let Some(per_host) = per_host else { continue };
        if per_host > all {
            anyhow::bail!(
                "{host_name} {per_host} is above {all_name} {all}: a host can never hold more \
                 than all; make it smaller (below {all_name}, so one host cannot take every slot)"
            );
        }
    }
    Ok(())
}

pub fn run(args: ServerArgs) -> anyhow::Result<i32> {
    check(&args)?;
    check_relations(&args)?;
    args.json.check()?;
    let agent = agent(&args)?;
    if let Some(f) = args.output.format {
        crate::report::iperf3::set_format(f).map_err(|e| anyhow::anyhow!("-f: {e}"))?;
    }
    let pidfile = args
        .pidfile
        .as_deref()
        .map(crate::server::daemon::PidFile::check)
        .transpose()?;
    let sink = open_sink(&args)?;
    prepare_process();
    let mut cfg = config(&args);
    if let (Some(key), Some(users)) = (&args.rsa_private_key_path, &args.authorized_users_path) {
        let mut auth = crate::iperf3::auth::ServerAuth::load(key, users)
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        auth.skew = args.time_skew_threshold;
        auth.padding = if args.use_pkcs1_padding {
            crate::iperf3::auth::ServerPadding::Only(crate::iperf3::auth::Padding::Pkcs1)
        } else {
            args.rsa_padding
        };
        cfg.auth = Some(Arc::new(auth));
    }
    let token = crate::cli::common::token::token_arg(&args.token)?;
    let latency_token = token.is_some();
    if let Some(w) = open_warning(cfg.bind, cfg.auth.is_some(), token.is_some()) {
        // One line, also with -q: the operator should know who can use the server.
        sink.error(&w);
    }
    let metrics = metrics_source(&args)?;
    let http = http_config(&args, token.clone(), metrics.as_ref())?;
    let metrics_file = match &args.metrics_file {
        Some(p) if p.is_relative() => Some(std::env::current_dir()?.join(p)),
        other => other.clone(),
    };
    let observer = Arc::new(observer(&args, sink.clone(), metrics.clone()));
    // Bound before detaching, so "port in use" reaches the terminal; no thread runs yet.
    let mut server = Server::bind(cfg, observer.clone())?;
    let port = server.local_addr()?.port();
    observer.port.store(port, Ordering::Relaxed);
    if args.daemon {
        crate::server::daemon::detach()?;
    }
    let _pid = pidfile
        .map(crate::server::daemon::PidFile::write)
        .transpose()?;
    let latency = start_latency(&args, &mut server, &sink, port, token);
    let handler = routerbench_handler(&args, latency.as_ref(), agent, latency_token, &sink);
    if !args.json.on_stdout() {
        observer.banner();
    }
    let hup = spawn_reopen_on_hangup(sink.clone());
    let server = server.with_handler(handler).with_http(http);
    let file_writer = match (&metrics, metrics_file) {
        (Some(m), Some(path)) => {
            let log_sink = sink.clone();
            Some(metrics::spawn_file_writer(
                m.clone(),
                path,
                args.metrics_file_families,
                Duration::from_secs(args.metrics_interval.max(1)),
                server.stop_flag(),
                Box::new(move |m: &str| log_sink.error(&format!("routerbench: {m}"))),
            )?)
        }
        _ => None,
    };
    if args.monitor || args.metrics {
        sink.log("metrics: GET /metrics on the server's port (Prometheus text or OpenMetrics)");
    }
    let summary = server.run();
    if let Some(w) = file_writer {
        let _ = w.join();
    }
    if let Some(latency) = &latency {
        latency.shutdown();
    }
    hup.store(true, Ordering::Relaxed);
    let summary = summary?;
    sink.log(&format!(
        "server done: {} tests, {} failed, {} connections refused",
        summary.tests_done, summary.tests_failed, summary.refused
    ));
    sink.flush();
    Ok(0)
}

/// The observer rendering the server's events with these arguments, writing to `sink`.
fn observer(args: &ServerArgs, sink: Arc<LogSink>, metrics: Option<Arc<metrics::Metrics>>) -> Log {
    Log {
        metrics,
        json: args.json.clone(),
        verbose: args.output.verbose,
        quiet: args.quiet && !args.json.on_stdout(),
        sink,
        port: args.port.into(),
        tests: AtomicU64::new(0),
        max_tests: if args.one_off {
            Some(1)
        } else {
            args.max_tests
        },
        system_info: crate::iperf3::system_info(),
    }
}

/// The HTTP side of the port: the server's token for its routes, the monitor's for `/metrics`
/// (served with --monitor or --metrics), and the browser test unless `--web off`.
fn http_config(
    args: &ServerArgs,
    token: Option<String>,
    metrics: Option<&Arc<metrics::Metrics>>,
) -> anyhow::Result<crate::server::http::HttpConfig> {
    let serve_metrics = args.monitor || args.metrics;
    let mut http = crate::server::http::HttpConfig {
        token,
        monitor_token: monitor_token(args)?,
        metrics: metrics
            .filter(|_| serve_metrics)
            .map(|m| m.clone() as Arc<dyn crate::server::http::metrics::Exposition>),
        ..Default::default()
    };
    if args.web {
        // The browser test's upload and result bodies (each route bounds its own, and they are
        // read only for a client with a test running: server/http/web.rs).
        http.limits.max_body = http
            .limits
            .max_body
            .max(crate::server::web::MAX_RESULT_BODY as usize);
        http.web = Some(Arc::new(crate::server::web::Web::new(
            crate::server::web::WebConfig {
                max_rate_bps: args.web_max_rate,
                ..Default::default()
            },
            web_result_json,
        )));
    }
    Ok(http)
}

/// The browser test's result document: pretty JSON, as `routerbench run` saves a result (the
/// page parses it and offers it for download).
fn web_result_json(result: &crate::results::RunResult) -> Vec<u8> {
    use crate::report::export::Exporter;
    crate::report::export::json::Json
        .serialize(result)
        .unwrap_or_default()
}

/// The metrics source, when anything exports metrics (`/metrics` or `--metrics-file`).
fn metrics_source(args: &ServerArgs) -> anyhow::Result<Option<Arc<metrics::Metrics>>> {
    if !(args.monitor || args.metrics || args.metrics_file.is_some()) {
        return Ok(None);
    }
    // Relative paths stay where the user meant after -D changes to /.
    let here = std::env::current_dir()?;
    Ok(Some(metrics::Metrics::new(
        crate::monitor::metrics::MetricsConfig {
            results_dir: args.results_dir.as_ref().map(|d| here.join(d)),
            ..Default::default()
        },
    )))
}

/// The output and log sink (`--logfile`, `--timestamps`, `--forceflush`, `-V`).
fn open_sink(args: &ServerArgs) -> anyhow::Result<Arc<LogSink>> {
    // A relative --logfile stays where the user meant after -D changes to /.
    let logfile = match &args.output.logfile {
        Some(p) if p.is_relative() => Some(std::env::current_dir()?.join(p)),
        other => other.clone(),
    };
    Ok(Arc::new(LogSink::open(
        logfile.as_deref(),
        args.output.timestamps.clone(),
        args.output.forceflush,
        args.output.verbose,
    )?))
}

/// Signal handlers and the allocator's set-up, before any server thread starts.
fn prepare_process() {
    crate::util::signals::install();
    crate::util::signals::install_hangup();
    // glibc gives each busy thread its own malloc arena (up to 8 per core) and keeps their
    // memory after the threads end: the soak saw RSS creep wave after wave. Two arenas keep a
    // long-running server's RSS flat. (musl, OpenWrt's libc, has a single heap.)
    #[cfg(target_env = "gnu")]
    // SAFETY: mallopt only sets an allocator parameter; called before any server thread.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 2);
    }
}

/// routerbench's own protocol (RRUL and friends) on the same port; its UDP probe reflector
/// listens on the same UDP port number too (clients learn it in the handshake) and hands
/// iperf3's UDP hellos to the iperf3 tests. Where kernel timestamps are missing (qemu-user
/// has no SO_TIMESTAMPNS) the latency tests cannot run, but iperf3 can: serve it and say why
/// latency clients will be refused (`None`).
fn start_latency(
    args: &ServerArgs,
    server: &mut Server,
    sink: &Arc<LogSink>,
    port: u16,
    token: Option<String>,
) -> Option<crate::latency::server::Service> {
    let udp_port = args.latency_udp_port.unwrap_or(port);
    let latency = match crate::latency::server::Service::new(crate::latency::server::Bounds {
        udp_bind: args.bind,
        udp_port,
        max_sessions: args.max_rb_sessions.max(1),
        max_flows: args.max_rb_flows.max(1),
        max_duration: Duration::from_secs(args.max_rb_duration.max(1)),
        max_sessions_per_host: args.tests_per_host().max(1),
        handshake_timeout: Duration::from_secs(args.handshake_timeout.max(1)),
        token,
        ..Default::default()
    }) {
        Ok(latency) => latency,
        Err(e) => {
            sink.error(&format!(
                "routerbench: warning: latency tests unavailable ({e:#}; UDP port {udp_port} in \
                 use by another program? pick one with --latency-udp-port); serving iperf3 only"
            ));
            return None;
        }
    };
    if udp_port == port {
        if let Some(table) = server.share_udp_port() {
            latency.set_foreign(Arc::new(move |from, payload: &[u8]| {
                table.offer(from, payload) == crate::iperf3::udp_port::Offer::Taken
            }));
        }
    }
    let log_sink = sink.clone();
    latency.set_log(Arc::new(move |m: &str| log_sink.log(m)));
    sink.log(&format!(
        "UDP probe reflector (routerbench protocol) on port {}; iperf3 UDP tests on port {port}",
        latency
            .udp_port(args.bind.is_some_and(|b| b.is_ipv6()))
            .or(latency.udp_port(false))
            .unwrap_or(0)
    ));
    Some(latency)
}

/// What serves routerbench-protocol connections: the latency service (or, without it, a
/// refusal naming why), behind the monitor agent with `--monitor`.
fn routerbench_handler(
    args: &ServerArgs,
    latency: Option<&crate::latency::server::Service>,
    agent: Option<crate::monitor::agent::Agent>,
    latency_token: bool,
    sink: &LogSink,
) -> Arc<dyn crate::service::ProtocolHandler> {
    let routerbench_protocol: Arc<dyn crate::service::ProtocolHandler> = match latency {
        Some(latency) => Arc::new(latency.clone()),
        None => Arc::new(LatencyUnavailable),
    };
    let Some(agent) = agent else {
        return routerbench_protocol;
    };
    sink.log(&format!(
        "monitor agent: on (token {})",
        if args.monitor_token.is_some() || latency_token {
            "required"
        } else {
            "not required: loopback only"
        }
    ));
    Arc::new(crate::monitor::agent::Dispatch {
        agent,
        inner: routerbench_protocol,
    })
}

/// Answers routerbench-protocol latency clients when the service could not start.
struct LatencyUnavailable;

impl crate::service::ProtocolHandler for LatencyUnavailable {
    fn handle(&self, _conn: crate::service::Handoff) -> Result<(), crate::service::HandlerError> {
        Err(
            "latency tests are unavailable on this server: its latency service did not start \
             (see the server's log; no kernel receive timestamps under qemu-user)"
                .into(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warns_only_when_reachable_from_outside_without_auth() {
        let any: SocketAddr = "[::]:5201".parse().unwrap();
        let lan: SocketAddr = "192.168.1.1:5201".parse().unwrap();
        for lo in ["127.0.0.1:5201", "[::1]:5201", "[::ffff:127.0.0.1]:5201"] {
            assert_eq!(
                open_warning(lo.parse().unwrap(), false, false),
                None,
                "{lo}"
            );
        }
        let w = open_warning(any, false, false).unwrap();
        assert!(
            w.contains("iperf3 tests") && w.contains("routerbench sessions"),
            "{w}"
        );
        let w = open_warning(lan, true, false).unwrap();
        assert!(!w.contains("iperf3 tests") && w.contains("--token"), "{w}");
        assert_eq!(open_warning(lan, true, true), None);
    }
}
