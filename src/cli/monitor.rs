//! `routerbench monitor`: sample this machine's CPU, softirq, softnet, temperature and queues
//! (qdisc backlog over rtnetlink, BQL) for a while, one line per interval while it runs, and
//! the summary at the end; `--remote HOST` shows a router's agent live instead. Also the
//! `--monitor HOST[:PORT]` options the test commands share to record the router's view.

use crate::monitor::remote::{RemoteConfig, RemoteMonitor};
use crate::results::monitor::{MonitorResult, MonitorSample};
use clap::Args;
use std::time::{Duration, Instant};

#[derive(Debug, Args)]
pub struct MonitorArgs {
    /// How long to sample, seconds.
    #[arg(short = 't', long, default_value_t = 10.0)]
    pub duration: f64,
    /// Sampling interval, seconds.
    #[arg(short, long, default_value_t = 0.5)]
    pub interval: f64,
    /// How often the queue gauges (qdisc backlog over rtnetlink, BQL inflight) are read,
    /// seconds (at most --interval; the dump is also paced to a tenth of one core).
    #[arg(long, default_value_t = 0.1)]
    pub queue_interval: f64,
    /// The result as JSON (series with an absolute start time): `--json [FILE|-]`, see
    /// `super::json_arg`; on standard output it replaces the lines.
    #[command(flatten)]
    pub json: super::json_arg::JsonArg,
    /// Show a router's agent (`routerbench server --monitor` there) instead of this machine.
    #[arg(long, value_name = "HOST[:PORT]")]
    pub remote: Option<String>,
    /// The agent's token (`--monitor-token` of its server).
    #[arg(long, value_name = "T")]
    pub monitor_token: Option<String>,
    /// No line per interval, only the summary.
    #[arg(short, long)]
    pub quiet: bool,
}

/// `--monitor` options of rrul, client and loopback: record a router's view during the test.
#[derive(Debug, Args, Clone, Default)]
pub struct RouterArgs {
    /// Pull the router's samples from its agent (`routerbench server --monitor` on the router)
    /// during the test and store them on the test's time axis.
    #[arg(long = "monitor", value_name = "HOST[:PORT]")]
    pub monitor: Option<String>,
    /// Token of the agent (its server's `--monitor-token`).
    #[arg(long = "monitor-token", value_name = "T")]
    pub monitor_token: Option<String>,
    /// Sampling interval on the router, seconds.
    #[arg(long = "monitor-interval", default_value_t = 0.2)]
    pub monitor_interval: f64,
    /// client/loopback: write the result with the router's samples (routerbench JSON) to FILE
    /// (their -J output keeps iperf3's schema).
    #[arg(long = "monitor-save", value_name = "FILE")]
    pub monitor_save: Option<std::path::PathBuf>,
}

/// client/loopback: the router's view after a throughput test that loaded `[0, seconds)` from
/// `t0_unix`: its summary on stdout (stderr with -J), and `--monitor-save` if asked.
pub fn finish_throughput(
    a: &RouterArgs,
    remote: Option<RemoteMonitor>,
    t0_unix: f64,
    seconds: f64,
    json: bool,
    throughput: Option<&crate::results::throughput::ThroughputResult>,
) -> anyhow::Result<()> {
    if remote.is_none() {
        return Ok(());
    }
    let mut notes = Vec::new();
    let router = finish_router(remote, t0_unix, Some((0.0, seconds)), &mut notes);
    let text = router.as_ref().map(|r| {
        format!(
            "\nRouter (agent {}):\n{}",
            a.monitor.as_deref().unwrap_or("?"),
            crate::report::monitor::render_text(r)
        )
    });
    match (text, json) {
        (Some(t), false) => crate::out!("{t}"),
        (Some(t), true) => crate::err!("{t}"),
        (None, _) => {}
    }
    for n in &notes {
        crate::errln!("routerbench: {n}");
    }
    if let Some(path) = &a.monitor_save {
        let start = crate::util::time::rfc3339_utc(t0_unix as i64);
        let mut run = crate::results::RunResult::new(start);
        run.finished_at = crate::util::time::now_rfc3339();
        run.device = Some(crate::device::detect());
        run.throughput = throughput.cloned();
        run.router = router;
        run.notes = notes;
        crate::results::save(&run, path)
            .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))?;
    }
    Ok(())
}

/// Subscribes to the agent named by `--monitor` (refusals are errors before the test starts).
pub fn start_router(
    a: &RouterArgs,
    test_length: Duration,
) -> anyhow::Result<Option<RemoteMonitor>> {
    let Some(addr) = &a.monitor else {
        return Ok(None);
    };
    if !(0.05..=10.0).contains(&a.monitor_interval) {
        anyhow::bail!(
            "--monitor-interval must be 0.05–10 s, got {}",
            a.monitor_interval
        );
    }
    let cfg = RemoteConfig::new(
        addr,
        a.monitor_token.clone(),
        Duration::from_secs_f64(a.monitor_interval),
        test_length + Duration::from_secs(120),
    );
    Ok(RemoteMonitor::start(&cfg, None).map(Some)?)
}

/// Ends the subscription, puts the samples on the test's axis (`t0_unix`) and summarises the
/// load window `[from, to)` against the idle lead-in. A failure is a note, not a lost test.
pub fn finish_router(
    remote: Option<RemoteMonitor>,
    t0_unix: f64,
    load: Option<(f64, f64)>,
    notes: &mut Vec<String>,
) -> Option<MonitorResult> {
    match crate::monitor::remote::finish(remote?, t0_unix, load) {
        Ok(m) => Some(m),
        Err(e) => {
            // Through anyhow for the cause chain ("…: cannot resolve: <why>").
            notes.push(format!("router samples lost: {:#}", anyhow::Error::from(e)));
            None
        }
    }
}

fn check(args: &MonitorArgs) -> anyhow::Result<()> {
    if !(0.05..=86_400.0).contains(&args.duration)
        || !(0.01..=60.0).contains(&args.interval)
        || !(0.01..=60.0).contains(&args.queue_interval)
    {
        anyhow::bail!("--duration must be 0.05–86400 s, --interval and --queue-interval 0.01–60 s");
    }
    Ok(())
}

/// Prints each sample as it arrives until `until`, returns when the channel closes or time is
/// up; true if SIGINT/SIGTERM ended it early.
fn print_live(rx: &std::sync::mpsc::Receiver<MonitorSample>, until: Instant, quiet: bool) -> bool {
    let mut top = None;
    while Instant::now() < until {
        if crate::server::signals::signalled() {
            return true;
        }
        let left = until.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left.min(Duration::from_millis(200))) {
            Ok(s) => {
                if s.top_process.is_some() {
                    top = s.top_process.clone();
                }
                if !quiet {
                    crate::outln!("{}", crate::report::monitor::render_live(&s, top.as_ref()));
                }
            }
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
        }
    }
    false
}

pub fn run(args: MonitorArgs) -> anyhow::Result<i32> {
    check(&args)?;
    args.json.check()?;
    // Ctrl-C ends the sampling early; what was sampled is still printed.
    crate::server::signals::install();
    let (tx, rx) = std::sync::mpsc::sync_channel(256);
    let quiet = args.quiet || args.json.on_stdout();
    let until = Instant::now() + Duration::from_secs_f64(args.duration);
    let (mut result, interrupted) = if let Some(addr) = &args.remote {
        let cfg = RemoteConfig::new(
            addr,
            args.monitor_token.clone(),
            Duration::from_secs_f64(args.interval),
            Duration::from_secs_f64(args.duration + 1.0),
        );
        let remote = RemoteMonitor::start(&cfg, Some(tx))?;
        let interrupted = print_live(&rx, until, quiet);
        (remote.stop()?, interrupted)
    } else {
        let sampler = crate::monitor::Sampler::start(crate::monitor::SamplerConfig {
            interval: Duration::from_secs_f64(args.interval),
            max_duration: Duration::from_secs_f64(args.duration + 1.0),
            queue_interval: Duration::from_secs_f64(args.queue_interval),
            live: Some(tx),
            ..Default::default()
        })?;
        let interrupted = print_live(&rx, until, quiet);
        (sampler.stop(), interrupted)
    };
    if interrupted {
        result
            .notes
            .push("interrupted (SIGINT/SIGTERM): sampled for less than --duration".into());
    }
    if !args.json.on_stdout() {
        crate::out!("{}", crate::report::monitor::render_text(&result));
    }
    if let Some(path) = args.json.write(&result)? {
        crate::outln!("saved {}", path.display());
    }
    Ok(if interrupted { 1 } else { 0 })
}
