//! `routerbench wifi`: the router's view of its radios and stations, with a make-wifi-fast
//! verdict per radio (mac80211's fq_codel queues, airtime fairness, AQL).

use clap::Args;
use std::time::Duration;

#[derive(Debug, Args)]
pub struct WifiArgs {
    /// Seconds between the two readings that rates, channel use and hostapd's CPU come from.
    #[arg(short, long, default_value_t = 1.0)]
    pub interval: f64,
    /// Also print every nl80211 answer of the second reading as a line `DUMP HEX` (the generic
    /// netlink payload): what a bug report about a driver's figures needs.
    #[arg(long)]
    pub nl80211_hex: bool,
    /// The report as JSON (`--json [FILE|-]`, see `crate::cli::common::json_arg`).
    #[command(flatten)]
    pub json: crate::cli::common::json_arg::JsonArg,
}

pub fn run(args: WifiArgs) -> anyhow::Result<i32> {
    if !(0.1..=60.0).contains(&args.interval) {
        anyhow::bail!("--interval {}: use 0.1–60 s", args.interval);
    }
    args.json.check()?;
    let (report, raw) = crate::monitor::wifi_report::report_recording(
        std::path::Path::new("/"),
        Duration::from_secs_f64(args.interval),
        args.nl80211_hex,
    );
    for (what, payload) in &raw {
        let hex: String = payload.iter().map(|b| format!("{b:02x}")).collect();
        if args.json.on_stdout() {
            crate::errln!("nl80211 {what} {hex}");
        } else {
            crate::outln!("nl80211 {what} {hex}");
        }
    }
    if !args.json.on_stdout() {
        crate::out!("{}", crate::report::wifi::render_report(&report));
    }
    if let Some(path) = args.json.write(&report)? {
        crate::outln!("saved {}", path.display());
    }
    Ok(0)
}
