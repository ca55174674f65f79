//! The `--monitor HOST[:PORT]` options rrul, client and loopback share: subscribe to a
//! router's agent during the test, and put its samples on the test's time axis afterwards.

use crate::monitor::remote::{RemoteConfig, RemoteMonitor};
use crate::results::monitor::MonitorResult;
use clap::Args;
use std::time::Duration;

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
        crate::report::export::json::save(&run, path)
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
