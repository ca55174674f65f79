//! `routerbench monitor`: sample this machine's CPU, softirq, softnet, temperature and queues
//! (qdisc backlog, BQL) for a while and print what a router owner needs to see (run it on the
//! router during a test).

use clap::Args;
use std::time::Duration;

#[derive(Debug, Args)]
pub struct MonitorArgs {
    /// How long to sample, seconds.
    #[arg(short = 't', long, default_value_t = 10.0)]
    pub duration: f64,
    /// Sampling interval, seconds.
    #[arg(short, long, default_value_t = 0.5)]
    pub interval: f64,
    /// How often the queue gauges (qdisc backlog via tc, BQL inflight) are read, seconds
    /// (at most --interval; tc is also paced to a tenth of one core).
    #[arg(long, default_value_t = 0.1)]
    pub queue_interval: f64,
    /// Print the samples as JSON instead of the summary.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: MonitorArgs) -> anyhow::Result<i32> {
    if !(0.05..=86_400.0).contains(&args.duration)
        || !(0.01..=60.0).contains(&args.interval)
        || !(0.01..=60.0).contains(&args.queue_interval)
    {
        anyhow::bail!("--duration must be 0.05–86400 s, --interval and --queue-interval 0.01–60 s");
    }
    let sampler = crate::monitor::Sampler::start(crate::monitor::SamplerConfig {
        interval: Duration::from_secs_f64(args.interval),
        max_duration: Duration::from_secs_f64(args.duration + 1.0),
        queue_interval: Duration::from_secs_f64(args.queue_interval),
        ..Default::default()
    })?;
    // Ctrl-C ends the sampling early; what was sampled is still printed.
    crate::server::signals::install();
    let end = std::time::Instant::now() + Duration::from_secs_f64(args.duration);
    let mut interrupted = false;
    while let Some(left) = end.checked_duration_since(std::time::Instant::now()) {
        if crate::server::signals::signalled() {
            interrupted = true;
            break;
        }
        std::thread::sleep(left.min(Duration::from_millis(100)));
    }
    let mut result = sampler.stop();
    if interrupted {
        result
            .notes
            .push("interrupted (SIGINT/SIGTERM): sampled for less than --duration".into());
    }
    if args.json {
        crate::outln!("{}", serde_json::to_string_pretty(&result)?);
    } else {
        crate::out!("{}", crate::report::monitor::render_text(&result));
    }
    Ok(if interrupted { 1 } else { 0 })
}
