//! `routerbench monitor`: sample this machine's CPU, softirq, softnet, temperature and queues
//! (qdisc backlog over rtnetlink, BQL) for a while, one line per interval while it runs, and
//! the summary at the end; `--remote HOST` shows a router's agent live instead.

use crate::monitor::remote::{RemoteConfig, RemoteMonitor};
use crate::results::monitor::MonitorSample;
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
    /// `crate::cli::common::json_arg`; on standard output it replaces the lines.
    #[command(flatten)]
    pub json: crate::cli::common::json_arg::JsonArg,
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
        if crate::util::signals::signalled() {
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
    crate::util::signals::install();
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
