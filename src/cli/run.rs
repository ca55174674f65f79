//! `routerbench run`: the full local suite, no external server needed: identity, a quick crypto
//! pass (the OpenWrt row's columns), the in-device loopback throughput test and a short RRUL over
//! loopback, with the machine's own view sampled during the network tests. Printed as a summary
//! and the row, saved as JSON under `./routerbench-results/`.

use crate::cli::common::signal_flag::SignalFlag;
use crate::crypto::{self, SuiteConfig};
use crate::report::export::{Exporter, flent::Flent};
use crate::results::RunResult;
use crate::util::progress::{BarProgress, NoProgress, Progress};
use clap::Args;
use std::io::IsTerminal;

#[derive(Debug, Args)]
pub struct RunArgs {
    /// Directory for the JSON result (`run-<time>.json`, and `latest.json`).
    #[arg(long, default_value = "routerbench-results")]
    pub out_dir: std::path::PathBuf,
    /// Engine: `auto` (the system libcrypto when it loads at run time, else the `openssl`
    /// program on PATH, else pure Rust; the row's Engine cell says which), `openssl` (libcrypto
    /// or fail), `openssl-speed` (the openssl program or fail) or `rustcrypto`. Only OpenSSL
    /// rows compare with the OpenWrt wiki's rows.
    #[arg(long, value_enum, default_value_t = crypto::engine::EngineKind::Auto)]
    pub engine: crypto::engine::EngineKind,
    /// Seconds per crypto column.
    #[arg(long, default_value_t = 1.0)]
    pub crypto_seconds: f64,
    /// Parts to skip: comma list of crypto, throughput, latency, sqm.
    #[arg(long, value_delimiter = ',')]
    pub skip: Vec<Part>,
    /// A short run for smoke tests: 0.2 s per crypto column, 3 s loopback, 8 s RRUL.
    #[arg(long)]
    pub quick: bool,
    /// Seconds of the loopback throughput test (the seed's `iperf3 -c 127.0.0.1` is 10 s).
    #[arg(long, default_value_t = 10)]
    pub loopback_seconds: u32,
    /// TCP congestion control of the loopback test and the RRUL (iperf3's `-C`; default: the
    /// system's, e.g. cubic on OpenWrt).
    #[arg(short = 'C', long = "congestion", value_name = "ALGO")]
    pub congestion: Option<String>,
    /// Wait up to SECS for the machine to be idle before measuring (other processes under
    /// 10 % of a CPU); then measure anyway, and the validity verdict says how busy it was.
    #[arg(long, value_name = "SECS", default_value_t = 3.0, value_parser = crate::cli::common::parse_idle_wait)]
    pub idle_wait: f64,
    /// No progress bar.
    #[arg(short, long)]
    pub quiet: bool,
}

/// A part of the suite that `--skip` can leave out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Part {
    Crypto,
    Throughput,
    Latency,
    /// The SQM capacity search in the netns lab (root; about 1-2 minutes).
    Sqm,
}

pub fn run(args: RunArgs) -> anyhow::Result<i32> {
    check(&args)?;
    // Ctrl-C ends the current test early; what was measured is printed and saved.
    crate::util::signals::install();
    let signal = SignalFlag::default();
    let progress: Box<dyn Progress> = if args.quiet || !std::io::stderr().is_terminal() {
        Box::new(NoProgress)
    } else {
        Box::new(BarProgress::new())
    };
    let started_unix = crate::util::time::unix_now_f64() as i64;
    let mut result = RunResult::new(crate::util::time::rfc3339_utc(started_unix));
    result.device = Some(crate::device::detect());
    // The radios' make-wifi-fast verdicts, where there are radios (half a second's reading;
    // without radios the monitor's note says so).
    let wifi = crate::monitor::wifi_report::report(
        std::path::Path::new("/"),
        std::time::Duration::from_millis(500),
    );
    result.wifi = (!wifi.radios.is_empty()).then_some(wifi);

    // The validity checks: an idle wait, then a window per crypto column and per part.
    let watch = crate::monitor::validity::Watch::begin(
        std::path::Path::new("/"),
        std::time::Duration::from_secs_f64(args.idle_wait),
        Some(&signal.0),
    );
    let watched = crate::monitor::validity::WatchedProgress::new(progress.as_ref(), watch);
    measure_crypto(&args, &signal, &watched, &mut result);
    let mut watch = watched.into_watch();
    let want_tp = !args.skip.contains(&Part::Throughput);
    let want_lat = !args.skip.contains(&Part::Latency);
    // The machine's own view during the network tests.
    let sampler = (want_tp || want_lat)
        .then(|| start_sampler(&mut result))
        .flatten();
    // The network parts' windows are recorded, not judged: their own softirq work and kernel
    // threads count as others' in /proc/stat.
    if want_tp && !signal.stopped() {
        watch.skip();
        measure_throughput(&args, &signal, progress.as_ref(), &mut result);
        watch.mark("throughput", false);
    }
    if want_lat && !signal.stopped() {
        watch.skip();
        measure_latency(&args, &signal, progress.as_ref(), &mut result);
        watch.mark("latency", false);
    }
    result.validity = Some(watch.finish());
    if let Some(s) = sampler {
        attach_monitor(s, &mut result);
    }
    if !args.skip.contains(&Part::Sqm) {
        measure_sqm(&args, &mut result);
    }

    close(&mut result, signal.stopped());
    progress.finish();
    print_summary(&result);
    save_files(&args, &result, started_unix)?;
    if result.interrupted {
        crate::errln!("routerbench: interrupted: the summary and the files are partial");
        return Ok(1);
    }
    Ok(0)
}

/// The flags, and the output directory before any measuring: a run that cannot be saved is a
/// run lost.
fn check(args: &RunArgs) -> anyhow::Result<()> {
    if !(0.01..=60.0).contains(&args.crypto_seconds) {
        anyhow::bail!("--crypto-seconds must be between 0.01 and 60");
    }
    if args.loopback_seconds == 0 {
        anyhow::bail!("--loopback-seconds must be positive");
    }
    super::check_output_dir(&args.out_dir, "--out-dir")
}

/// The OpenWrt row's crypto columns (a failure is a note).
fn measure_crypto(
    args: &RunArgs,
    signal: &SignalFlag,
    progress: &dyn Progress,
    result: &mut RunResult,
) {
    if args.skip.contains(&Part::Crypto) {
        return;
    }
    let seconds = if args.quick { 0.2 } else { args.crypto_seconds };
    let mut cfg = SuiteConfig::row_only(args.engine, seconds);
    cfg.interrupt = Some(signal.0.clone());
    match crypto::run_suite(&cfg, progress) {
        Ok(c) => result.crypto = Some(c),
        Err(e) => result.notes.push(format!("crypto skipped: {e}")),
    }
}

/// The machine's sampler for the network tests (None, with a note, if it cannot start).
fn start_sampler(result: &mut RunResult) -> Option<crate::monitor::Sampler> {
    match crate::monitor::Sampler::start(crate::monitor::SamplerConfig::default()) {
        Ok(s) => Some(s),
        Err(e) => {
            result.notes.push(format!("monitor not started: {e}"));
            None
        }
    }
}

/// The in-device loopback throughput test.
fn measure_throughput(
    args: &RunArgs,
    signal: &SignalFlag,
    progress: &dyn Progress,
    result: &mut RunResult,
) {
    let cfg = crate::server::loopback::LoopbackConfig {
        time: if args.quick { 3 } else { args.loopback_seconds },
        congestion: args.congestion.clone(),
        ..Default::default()
    };
    match super::loopback::run_with_progress(&cfg, progress, &crate::iperf3::NoIntervals, &signal.0)
    {
        Ok(t) => result.throughput = Some(t),
        Err(e) => result
            .notes
            .push(format!("loopback throughput test failed: {e}")),
    }
    progress.finish();
}

/// The short RRUL over loopback.
fn measure_latency(
    args: &RunArgs,
    signal: &SignalFlag,
    progress: &dyn Progress,
    result: &mut RunResult,
) {
    match loopback_rrul(args, progress, &signal.0) {
        Ok(l) => result.latency = Some(l),
        Err(e) => result.notes.push(format!("loopback RRUL failed: {e:#}")),
    }
    progress.finish();
}

/// Stops the sampler and keeps its samples, with the RRUL's load summarised against its own
/// idle lead-in, on the monitor's axis.
fn attach_monitor(sampler: crate::monitor::Sampler, result: &mut RunResult) {
    let mut m = sampler.stop();
    if let (Some(l), Some(start)) = (&result.latency, m.start_unix_s) {
        let from = l.t0_unix + l.delay_s - start;
        m.summary.under_load = Some(crate::monitor::summary::load_summary_with_idle(
            &m,
            (from, from + l.length_s),
            (from - l.delay_s, from),
        ));
    }
    result.monitor = Some(m);
}

/// The SQM capacity search (a failure is a note).
fn measure_sqm(args: &RunArgs, result: &mut RunResult) {
    match sqm_capacity(args.quick) {
        Ok(c) => result.sqm_capacity = Some(c),
        Err(e) => result
            .notes
            .push(format!("SQM capacity not measured: {e:#}")),
    }
}

/// The end time, and whether a signal cut the run short.
fn close(result: &mut RunResult, interrupted: bool) {
    result.finished_at = crate::util::time::now_rfc3339();
    result.interrupted = interrupted;
    if result.interrupted {
        result.notes.push(
            "interrupted (SIGINT/SIGTERM): the parts above are what was measured until then".into(),
        );
    }
}

/// The summary, the comparability warning and the SQM capacity.
fn print_summary(result: &RunResult) {
    crate::out!("{}", crate::report::summary::render_run(result));
    if let Some(v) = &result.validity {
        crate::outln!("{}", crate::report::validity::verdict_line(v));
    }
    if let Some(w) = result
        .crypto
        .as_ref()
        .and_then(crate::report::crypto::comparability_warning)
    {
        eprintln!("routerbench: warning: {w}");
    }
    #[cfg(feature = "lab")]
    if let Some(c) = &result.sqm_capacity {
        crate::out!("{}", crate::report::lab::sqm_capacity(c));
    }
}

/// `run-<time>.json` and `latest.json` (errors), the RRUL's `.flent.gz`, the HTML report and
/// the row's standing (notes on stderr).
fn save_files(args: &RunArgs, result: &RunResult, started_unix: i64) -> anyhow::Result<()> {
    let stamp = crate::util::time::file_stamp(started_unix);
    let path = args.out_dir.join(format!("run-{stamp}.json"));
    crate::report::export::json::save(result, &path).map_err(|e| {
        anyhow::anyhow!(
            "cannot save {}: {e} (choose another --out-dir)",
            path.display()
        )
    })?;
    crate::report::export::json::save(result, &args.out_dir.join("latest.json")).map_err(|e| {
        anyhow::anyhow!("cannot save latest.json in {}: {e}", args.out_dir.display())
    })?;
    crate::outln!("\nsaved {}", path.display());
    if let Some(lat) = &result.latency {
        let flent = args.out_dir.join(format!("rrul-{stamp}.flent.gz"));
        match Flent::new("routerbench run").write_to_file(lat, &flent) {
            Ok(()) => crate::outln!("saved {} (flent -i FILE -p all_scaled)", flent.display()),
            Err(e) => crate::errln!("routerbench: cannot write {}: {e:#}", flent.display()),
        }
    }
    #[cfg(feature = "plots")]
    extras(
        result,
        &path,
        &args.out_dir.join(format!("report-{stamp}.html")),
    );
    Ok(())
}

/// The HTML report next to the JSON, and where the crypto row stands among the reference rows.
#[cfg(feature = "plots")]
fn extras(result: &RunResult, json: &std::path::Path, html: &std::path::Path) {
    let runs = [(result.clone(), json.display().to_string())];
    match crate::cli::report::write_report(&runs, &[], html) {
        Ok(()) => crate::outln!(
            "saved {} (the report: open it in a browser)",
            html.display()
        ),
        Err(e) => crate::errln!("routerbench: {e:#}"),
    }
    let row = crate::report::rows::Row::from_result(
        result,
        &json.display().to_string(),
        crate::results::crypto::ROW_CIPHER_BLOCK,
    );
    if let (Some(row), Ok(refs)) = (row, crate::report::reference::builtin()) {
        let st = crate::report::reference::standing(&row, &refs);
        crate::outln!();
        crate::out!("{}", crate::report::reference::render_standing(&row, &st));
    }
}

/// Without the `lab` feature (the router's minimal build) there is no lab to measure SQM in.
#[cfg(not(feature = "lab"))]
fn sqm_capacity(_quick: bool) -> anyhow::Result<crate::results::lab::SqmCapacity> {
    anyhow::bail!(
        "this routerbench was built without the `lab` feature, which the SQM capacity needs"
    )
}

/// The SQM capacity of this CPU with cake (the kernel's if it has sch_cake, else routerbench's
/// userspace one), from a throwaway lab: coarse (doubling from 100 Mbit/s until a rate fails,
/// one bisection step, at most ~2 minutes). Skipped by --quick and without root.
#[cfg(feature = "lab")]
fn sqm_capacity(quick: bool) -> anyhow::Result<crate::results::lab::SqmCapacity> {
    use crate::lab;
    if quick {
        anyhow::bail!("skipped by --quick");
    }
    lab::sys::require_root()?;
    lab::sys::require_tools(&["ip", "tc"])?;
    let name = format!("rbsqm{}", std::process::id());
    let mut plan = lab::sqm_capacity::SqmPlan::new(
        &name,
        aqm::QdiscKind::Cake,
        lab::aqm_forwarder::routerbench_exe()?,
    );
    plan.seconds = 5;
    plan.refine_steps = 1;
    // No fixed ceiling: doubling goes on until a rate fails (what the path and the forwarder
    // can carry) or the budget is spent; then the report says "at least".
    plan.max_bps = lab::sqm_capacity::NO_CEILING_BPS;
    plan.budget = std::time::Duration::from_secs(75);
    let _guard = super::lab::guard(&name);
    Ok(lab::sqm_capacity::search(
        &plan,
        std::sync::Arc::new(lab::native_load::NativeIperf3),
        &mut |_| {},
    )?)
}

/// A short RRUL over loopback against the shared server (iperf3 and routerbench protocols on one
/// port, as `routerbench server` runs it), started in this process on an ephemeral port.
fn loopback_rrul(
    args: &RunArgs,
    progress: &dyn Progress,
    interrupt: &std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> anyhow::Result<crate::results::latency::LatencyResult> {
    use crate::server::{Quiet, Server, ServerConfig};
    use std::sync::Arc;
    use std::sync::atomic::Ordering;
    let bind: std::net::SocketAddr = "127.0.0.1:0".parse()?;
    let service = crate::latency::server::Service::new(crate::latency::server::Bounds {
        udp_bind: Some(bind.ip()),
        ..Default::default()
    })?;
    let server = Server::bind(ServerConfig::new(bind), Arc::new(Quiet))
        .map_err(|e| anyhow::anyhow!("cannot start the loopback server: {e}"))?
        .with_handler(Arc::new(service.clone()));
    let port = server.local_addr()?.port();
    let stop = server.stop_flag();
    let thread = std::thread::Builder::new()
        .name("rb-run-server".into())
        .spawn(move || server.run())?;
    let mut cfg = crate::latency::TestConfig {
        host: "127.0.0.1".into(),
        port,
        ..crate::latency::TestConfig::quick_loopback()
    };
    if !args.quick {
        cfg.length = std::time::Duration::from_secs(10);
    }
    cfg.cc = args.congestion.clone();
    cfg.interrupt = Some(interrupt.clone());
    let outcome = crate::latency::run_test(&cfg, progress);
    stop.store(true, Ordering::SeqCst);
    service.shutdown();
    let _ = thread.join();
    Ok(outcome?)
}
