//! `routerbench rrul | rrul_be | tcp_nup | tcp_ndown | ping HOST` and `routerbench
//! latency-server`: the latency-under-load tests and a standalone server for them.

use crate::latency::{IpPref, TestConfig, TestKind};
use crate::report::export::{Exporter, flent::Flent};
use clap::Args;
use std::path::PathBuf;
use std::time::Duration;

/// Options shared by every latency test.
#[derive(Debug, Args)]
pub struct LatencyArgs {
    /// Server running `routerbench latency-server` (or the shared server).
    pub host: String,
    /// Server port.
    #[arg(short, long, default_value_t = 5201, value_parser = clap::value_parser!(u16).range(1..))]
    pub port: u16,
    /// Load length in seconds (flent -l).
    #[arg(allow_negative_numbers = true, short, long, default_value_t = 60.0)]
    pub length: f64,
    /// Sampling step in seconds (flent -s).
    #[arg(allow_negative_numbers = true, short, long, default_value_t = 0.2)]
    pub step: f64,
    /// Idle time before and after the load, seconds (flent --delay).
    #[arg(allow_negative_numbers = true, long, default_value_t = 5.0)]
    pub delay: f64,
    /// Probe interval in seconds (default: the step, as flent; down to 0.005).
    #[arg(allow_negative_numbers = true, long)]
    pub interval: Option<f64>,
    /// UDP probe size in bytes (56–1200).
    #[arg(long, default_value_t = 64)]
    pub probe_size: usize,
    /// TCP congestion control for every flow, set at both ends (cubic, reno, bbr, …).
    #[arg(long)]
    pub cc: Option<String>,
    /// Use IPv4 only.
    #[arg(short = '4', conflicts_with = "ipv6")]
    pub ipv4: bool,
    /// Use IPv6 only.
    #[arg(short = '6')]
    pub ipv6: bool,
    /// The result (routerbench JSON): `--json [FILE|-]`, see `crate::cli::common::json_arg`; on standard
    /// output it replaces the text summary. Give HOST first when --json has no FILE.
    #[command(flatten)]
    pub json: crate::cli::common::json_arg::JsonArg,
    /// Write flent's data format (version 4) to FILE.flent.gz.
    #[arg(long, value_name = "FILE")]
    pub flent: Option<PathBuf>,
    /// Write a self-contained HTML report of this test (plots inline) to FILE.html.
    #[cfg(feature = "plots")]
    #[arg(long, value_name = "FILE.html")]
    pub report: Option<PathBuf>,
    /// Title stored in the flent file.
    #[arg(long, default_value = "")]
    pub title: String,
    /// Shared secret of a server started with `--token` (default: $ROUTERBENCH_TOKEN).
    #[arg(long, value_name = "TOKEN")]
    pub token: Option<String>,
    /// No progress line.
    #[arg(short, long)]
    pub quiet: bool,
    #[command(flatten)]
    pub router: crate::cli::common::router::RouterArgs,
    /// Seconds a download flow keeps reading after the load until the server closes (what
    /// was in flight and buffered; not counted in the goodput, counted in `bytes_all`).
    #[arg(long, default_value_t = 3.0, hide = true)]
    pub drain: f64,
}

/// `tcp_nup` / `tcp_ndown`: the shared options plus N.
#[derive(Debug, Args)]
pub struct NflowArgs {
    /// Number of TCP flows (rrul_var: bidirectional streams, at most 16).
    #[arg(short = 'n', long, visible_alias = "flows", default_value_t = 1)]
    pub streams: u8,
    #[command(flatten)]
    pub common: LatencyArgs,
}

/// `rtt_fair` and `rrul46`: the shared options plus the other hosts.
#[derive(Debug, Args)]
pub struct RttFairArgs {
    /// Another host running `routerbench latency-server`. rtt_fair: repeat, up to three more;
    /// the four streams go to HOST, the --also hosts, HOST, … in turn, as flent's rtt_fair.
    /// rrul46: the IPv6 host, when HOST's name has no IPv6 address.
    #[arg(long = "also", value_name = "HOST")]
    pub also: Vec<String>,
    #[command(flatten)]
    pub common: LatencyArgs,
}

/// `routerbench rtt_fair HOST [--also HOST]…`, `routerbench rrul46 HOST [--also HOST6]`.
pub fn run_hosts(kind: TestKind, a: RttFairArgs) -> anyhow::Result<i32> {
    let more = a.also.clone();
    run_with(kind, 1, a.common, more)
}

/// `routerbench latency-server`.
#[derive(Debug, Args)]
pub struct ServerArgs {
    /// Address to listen on (TCP) and to bind the UDP reflector to.
    #[arg(long, default_value = "127.0.0.1")]
    pub bind: std::net::IpAddr,
    /// TCP port.
    #[arg(short, long, default_value_t = 5201)]
    pub port: u16,
    /// UDP port of the probe reflector (default: the TCP port's number, so a firewall opens
    /// one number; 0 = ephemeral).
    #[arg(long, value_name = "PORT")]
    pub udp_port: Option<u16>,
    /// Concurrent sessions.
    #[arg(long, default_value_t = 16)]
    pub max_sessions: usize,
    /// Longest load phase a client may ask for, seconds.
    #[arg(long, default_value_t = 600)]
    pub max_duration: u64,
    /// Require this shared secret in every session's Hello (default: $ROUTERBENCH_TOKEN).
    #[arg(long, value_name = "TOKEN")]
    pub token: Option<String>,
}

fn secs(v: f64, what: &str) -> anyhow::Result<Duration> {
    if v < 0.0 {
        anyhow::bail!("{what} must be positive (seconds), got {v}");
    }
    Duration::try_from_secs_f64(v)
        .map_err(|_| anyhow::anyhow!("{what} must be a number of seconds, got {v}"))
}

/// Seconds that must be more than zero.
fn positive_secs(v: f64, what: &str) -> anyhow::Result<Duration> {
    let d = secs(v, what)?;
    if d.is_zero() {
        anyhow::bail!("{what} must be positive (seconds), got {v}");
    }
    Ok(d)
}

fn config(kind: TestKind, streams: u8, a: &LatencyArgs) -> anyhow::Result<TestConfig> {
    let step = positive_secs(a.step, "--step")?;
    if matches!(kind, TestKind::RrulVar | TestKind::Phases) && streams > 16 {
        anyhow::bail!(
            "--flows must be at most 16 here (rrul_var: one UDP probe stream each; phases: 2N flows in its last phase)"
        );
    }
    // flent's voip: G.711-like, one 172-byte packet every 20 ms (irtt -i 0.02s -l 172).
    let voip = kind == TestKind::Voip;
    let probe_size = if voip && a.probe_size == 64 {
        172
    } else {
        a.probe_size
    };
    let voip_interval = voip.then_some(0.02);
    Ok(TestConfig {
        kind,
        host: a.host.clone(),
        port: a.port,
        streams,
        length: positive_secs(a.length, "--length")?,
        delay: secs(a.delay, "--delay")?,
        step,
        probe_interval: a
            .interval
            .or(voip_interval)
            .map(|i| positive_secs(i, "--interval"))
            .transpose()?
            .unwrap_or(step),
        probe_size,
        cc: a.cc.clone(),
        ip: if a.ipv4 {
            IpPref::V4
        } else if a.ipv6 {
            IpPref::V6
        } else {
            IpPref::Any
        },
        token: crate::cli::common::token::token_arg(&a.token)?.unwrap_or_default(),
        drain: {
            let d = secs(a.drain, "--drain")?;
            if d > Duration::from_secs(60) {
                anyhow::bail!("--drain must be at most 60 s, got {}", a.drain);
            }
            d
        },
        ..TestConfig::default()
    })
}

/// Runs one latency test and writes its outputs. SIGINT/SIGTERM ends it early: what was
/// measured is printed and saved, marked interrupted, and the exit status is 1.
pub fn run(kind: TestKind, streams: u8, a: LatencyArgs) -> anyhow::Result<i32> {
    run_with(kind, streams, a, Vec::new())
}

fn run_with(
    kind: TestKind,
    streams: u8,
    a: LatencyArgs,
    more_hosts: Vec<String>,
) -> anyhow::Result<i32> {
    let mut cfg = config(kind, streams, &a)?;
    cfg.more_hosts = more_hosts;
    a.json.check()?;
    if let Some(p) = &a.flent {
        super::check_output_file(p, "--flent")?;
    }
    crate::util::signals::install();
    let signal = crate::cli::common::signal_flag::SignalFlag::default();
    cfg.interrupt = Some(signal.0.clone());
    let progress: Box<dyn crate::util::progress::Progress> = if a.quiet {
        Box::new(crate::util::progress::NoProgress)
    } else {
        Box::new(crate::util::progress::BarProgress::new())
    };
    let total = crate::latency::plan::Plan::new(cfg.kind, cfg.streams)
        .windows(cfg.delay, cfg.length)
        .1;
    let remote = crate::cli::common::router::start_router(&a.router, total)?;
    let result = crate::latency::run_test(&cfg, progress.as_ref())?;
    let mut notes = Vec::new();
    let load = (!matches!(cfg.kind, TestKind::Ping | TestKind::Voip))
        .then_some((result.delay_s, result.delay_s + result.length_s));
    let router =
        crate::cli::common::router::finish_router(remote, result.t0_unix, load, &mut notes);
    if !a.json.on_stdout() {
        crate::out!("{}", crate::report::latency::render_text(&result));
        if let Some(r) = &router {
            crate::outln!(
                "\nRouter (agent {}):",
                a.router.monitor.as_deref().unwrap_or("?")
            );
            crate::out!("{}", crate::report::monitor::render_text(r));
        }
    }
    for n in &notes {
        crate::errln!("routerbench: {n}");
    }
    let mut run = crate::results::RunResult::new(result.started_at.clone());
    run.finished_at = crate::util::time::now_rfc3339();
    run.device = Some(crate::device::detect());
    run.latency = Some(result.clone());
    // The router's view also goes into the flent file (its access point's stations).
    let router_for_flent = router.clone();
    run.router = router;
    run.notes.extend(notes);
    if let Some(path) = a.json.write(&run)? {
        a.json.say(&format!("saved {}", path.display()));
    }
    #[cfg(feature = "plots")]
    if let Some(path) = &a.report {
        let name = a.json.file().map_or_else(
            || format!("{} to {}", kind.flent_name(), a.host),
            |p| p.display().to_string(),
        );
        crate::cli::report::write_report(&[(run, name)], &[], path)?;
        a.json.say(&format!("saved {}", path.display()));
    }
    if let Some(path) = &a.flent {
        let title = if result.interrupted {
            format!("{} (interrupted)", a.title)
                .trim_start()
                .to_string()
        } else {
            a.title.clone()
        };
        let agent = a.router.monitor.as_deref().unwrap_or("router");
        Flent::new(&title)
            .with_router(router_for_flent.as_ref().map(|m| (agent, m)))
            .write_to_file(&result, path)?;
        a.json.say(&format!(
            "saved {} (plot: flent -i {} -p {} -o plot.png)",
            path.display(),
            path.display(),
            kind.flent_default_plot()
        ));
    }
    if result.interrupted {
        crate::errln!("routerbench: interrupted: the result above and the files are partial");
        return Ok(1);
    }
    Ok(0)
}

/// Runs the shared server with the routerbench protocol alone (no iperf3) until killed.
pub fn serve(a: ServerArgs) -> anyhow::Result<i32> {
    if a.max_sessions == 0 || a.max_duration == 0 {
        anyhow::bail!(
            "--max-sessions and --max-duration must be at least 1 (0 would refuse every client)"
        );
    }
    let bounds = crate::latency::server::Bounds {
        max_sessions: a.max_sessions,
        max_duration: Duration::from_secs(a.max_duration),
        udp_port: a.udp_port.unwrap_or(a.port),
        udp_bind: Some(a.bind),
        token: crate::cli::common::token::token_arg(&a.token)?,
        ..Default::default()
    };
    let addr = std::net::SocketAddr::new(a.bind, a.port);
    // The TCP port is bound first: with `-p 0` the reflector takes the same port number, and
    // the line below names the real one.
    let (server, service) =
        crate::server::latency_only::bind_with_service(addr, bounds, a.udp_port.is_none())?;
    service.set_log(std::sync::Arc::new(|m: &str| {
        crate::errln!("routerbench latency-server: {m}")
    }));
    crate::errln!(
        "routerbench latency-server: listening on {}, UDP reflector on port {}",
        server.local_addr()?,
        service.udp_port(a.bind.is_ipv6()).unwrap_or(0)
    );
    server.run()?;
    Ok(0)
}
