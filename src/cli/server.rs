//! `routerbench server`: serves iperf3 3.x clients (and routerbench's own protocol) on one
//! port, several tests at once, with limits; logs to stderr, test summaries to stdout.

use crate::server::{Quiet, Server, ServerConfig, ServerEvent, ServerObserver};
use clap::Args;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

#[derive(Debug, Args)]
pub struct ServerArgs {
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
    #[arg(long = "max-buffer-mib", default_value_t = 64)]
    pub max_buffer_mib: u64,
    /// Seconds without any data moving before a running test is ended (iperf3's --rcv-timeout).
    #[arg(long = "rcv-timeout", default_value_t = 120)]
    pub rcv_timeout: u64,
    /// Seconds a silent client may wait between control messages.
    #[arg(long = "control-timeout", default_value_t = 10)]
    pub control_timeout: u64,
    /// Seconds a new connection may take to send its cookie (or routerbench magic).
    #[arg(long = "handshake-timeout", default_value_t = 10)]
    pub handshake_timeout: u64,
    /// UDP port of the latency probe reflector (0 = ephemeral; never the iperf3 port).
    #[arg(long = "latency-udp-port", default_value_t = 0)]
    pub latency_udp_port: u16,
    /// Pin every test's stream threads to this CPU (iperf3's server `-A n`); a client's
    /// `-A n,m` overrides it for its test.
    #[arg(short = 'A', long = "affinity", value_name = "N")]
    pub affinity: Option<usize>,
    /// Print each finished test as iperf3 -J JSON on stdout.
    #[arg(short = 'J', long = "json")]
    pub json: bool,
    /// No log lines on stderr.
    #[arg(short = 'q', long = "quiet")]
    pub quiet: bool,
}

/// Prints server events: log lines to stderr, results to stdout.
pub struct Log {
    pub json: bool,
}

impl ServerObserver for Log {
    fn event(&self, e: &ServerEvent<'_>) {
        match e {
            ServerEvent::Listening(a) => {
                crate::errln!("-----------------------------------------------------------");
                crate::errln!("Server listening on {a} (iperf3 and routerbench protocols)");
                crate::errln!("-----------------------------------------------------------");
            }
            ServerEvent::TestStarted { peer } => {
                crate::errln!(
                    "Accepted connection from {}, port {}",
                    crate::net::sockopt::display_ip(peer.ip()),
                    peer.port()
                )
            }
            ServerEvent::TestDone { peer, result } => {
                if self.json {
                    crate::outln!("{}", crate::iperf3::json::render(result));
                } else {
                    crate::outln!(
                        "Test from {} (client version {}):",
                        show(peer),
                        result.peer_version.as_deref().unwrap_or("unknown")
                    );
                    crate::out!(
                        "{}",
                        crate::report::iperf3::render_connected(&result.connected)
                    );
                    crate::out!("{}", crate::report::iperf3::render_final(result));
                }
            }
            ServerEvent::TestFailed { peer, error } => {
                crate::errln!("test from {} failed: {error}", show(peer))
            }
            ServerEvent::Refused { peer, reason } => {
                crate::errln!("refused {}: {reason}", show(peer))
            }
            ServerEvent::Handoff { peer, error: None } => {
                crate::errln!("routerbench session from {peer} done")
            }
            ServerEvent::Handoff {
                peer,
                error: Some(e),
            } => crate::errln!("routerbench session from {peer}: {e}"),
            ServerEvent::Stopping { reason } => crate::errln!("server stopping: {reason}"),
        }
    }
}

fn show(peer: &SocketAddr) -> String {
    format!(
        "{} port {}",
        crate::net::sockopt::display_ip(peer.ip()),
        peer.port()
    )
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
    cfg.max_concurrent_tests = args.max_concurrent.max(1);
    cfg.session.cpu = args.affinity;
    cfg.session.max_duration = args.max_duration;
    cfg.session.max_streams = args.max_streams.clamp(1, 128);
    cfg.session.max_buffer_bytes = args.max_buffer_mib.max(1) << 20;
    cfg.session.idle_timeout = Duration::from_secs(args.rcv_timeout.max(1));
    // Intervals are only shown in -J output; without it the server keeps none.
    cfg.session.interval = if args.json { 1.0 } else { 0.0 };
    cfg.session.control_timeout = Duration::from_secs(args.control_timeout.max(1));
    cfg.first_bytes_timeout = Duration::from_secs(args.handshake_timeout.max(1));
    cfg.handle_signals = true;
    cfg
}

pub fn run(args: ServerArgs) -> anyhow::Result<i32> {
    if let Some(c) = args.affinity {
        crate::util::affinity::check_cpu(c).map_err(|e| anyhow::anyhow!("-A: {e}"))?;
    }
    crate::server::signals::install();
    let observer: Arc<dyn ServerObserver> = if args.quiet && !args.json {
        Arc::new(Quiet)
    } else {
        Arc::new(Log { json: args.json })
    };
    // routerbench's own protocol (RRUL and friends) on the same port; its UDP reflector binds
    // a port of its own (never the iperf3 UDP port), which clients learn in the handshake.
    let latency = crate::latency::server::Service::new(crate::latency::server::Bounds {
        udp_bind: args.bind,
        udp_port: args.latency_udp_port,
        ..Default::default()
    })?;
    if !args.quiet {
        crate::errln!(
            "routerbench protocol: UDP probe reflector on port {}",
            latency
                .udp_port(args.bind.is_some_and(|b| b.is_ipv6()))
                .or(latency.udp_port(false))
                .unwrap_or(0)
        );
    }
    let server = Server::bind(config(&args), observer)?.with_handler(Arc::new(latency.clone()));
    let summary = server.run();
    latency.shutdown();
    let summary = summary?;
    if !args.quiet {
        crate::errln!(
            "server done: {} tests, {} failed, {} connections refused",
            summary.tests_done,
            summary.tests_failed,
            summary.refused
        );
    }
    Ok(0)
}
