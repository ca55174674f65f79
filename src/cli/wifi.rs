//! `routerbench wifi`: the router's view of its radios and stations, with a make-wifi-fast
//! verdict per radio (mac80211's fq_codel queues, airtime fairness, AQL).

use clap::Args;
use std::time::Duration;

#[derive(Debug, Args)]
pub struct WifiArgs {
    /// Seconds between the two readings that rates, channel use and hostapd's CPU come from.
    #[arg(short, long, default_value_t = 1.0)]
    pub interval: f64,
    /// The report as JSON (`--json [FILE|-]`, see `crate::cli::common::json_arg`).
    #[command(flatten)]
    pub json: crate::cli::common::json_arg::JsonArg,
}

pub fn run(args: WifiArgs) -> anyhow::Result<i32> {
    if !(0.1..=60.0).contains(&args.interval) {
        anyhow::bail!("--interval {}: use 0.1–60 s", args.interval);
    }
    args.json.check()?;
    let report = crate::monitor::wifi_report::report(
        std::path::Path::new("/"),
        Duration::from_secs_f64(args.interval),
    );
    if !args.json.on_stdout() {
        crate::out!("{}", crate::report::wifi::render_report(&report));
    }
    if let Some(path) = args.json.write(&report)? {
        crate::outln!("saved {}", path.display());
    }
    Ok(0)
}
