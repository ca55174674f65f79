//! `routerbench rpm HOST` (routerbench's own protocol) and `routerbench rpm --url
//! https://HOST/.well-known/nq` (HTTP/2 over TLS, cargo feature `https`): responsiveness under
//! working conditions as draft-ietf-ippm-responsiveness-09 defines it (docs/rpm.md).

use crate::latency::rpm::{self, Mode, Params};
use clap::{Args, ValueEnum};
use std::net::ToSocketAddrs;
use std::time::Duration;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ModeArg {
    /// Download then upload, one score each (the draft's option for diagnosis).
    Sequential,
    /// Both directions at once, one score (as Apple's networkQuality by default).
    Concurrent,
    Download,
    Upload,
}

/// `routerbench rpm`.
#[derive(Debug, Args)]
pub struct RpmArgs {
    /// A routerbench server (`routerbench server` or `latency-server`).
    #[arg(required_unless_present = "url", conflicts_with = "url")]
    pub host: Option<String>,
    /// A draft-conforming responsiveness server instead: its configuration URL
    /// (`https://HOST/.well-known/nq`); HTTP/2 over TLS (needs the `https` build feature).
    #[arg(long, value_name = "URL")]
    pub url: Option<String>,
    /// With --url: accept any server certificate (a self-signed test server).
    #[arg(long, requires = "url", conflicts_with = "ca")]
    pub insecure: bool,
    /// With --url: trust the CA (or self-signed) certificates in this PEM file.
    #[arg(long, value_name = "FILE", requires = "url")]
    pub ca: Option<std::path::PathBuf>,
    /// Server port (routerbench's protocol).
    #[arg(short, long, default_value_t = 5201, value_parser = clap::value_parser!(u16).range(1..))]
    pub port: u16,
    /// Directions: sequential (down, then up), concurrent, download or upload.
    #[arg(long, value_enum, default_value_t = ModeArg::Sequential)]
    pub mode: ModeArg,
    /// ID, the interval at which stability is re-evaluated, s (the draft's -09 default: 5).
    #[arg(long, default_value_t = 5.0)]
    pub interval: f64,
    /// Time limit of each run (one direction, or both at once), s.
    #[arg(long, default_value_t = 90.0)]
    pub max_time: f64,
    /// MAD, the moving-average distance in intervals.
    #[arg(long, default_value_t = 4)]
    pub mad: usize,
    /// MNP, the most load-generating connections per direction.
    #[arg(long, default_value_t = 16)]
    pub max_connections: usize,
    /// MPS, the most probes per second (foreign and self together).
    #[arg(long, default_value_t = 100.0)]
    pub max_probes_per_second: f64,
    /// PTC, the share of the measured capacity probes may use (0.05 = 5 %).
    #[arg(long, default_value_t = 0.05)]
    pub probe_share: f64,
    /// TCP congestion control of the load connections (routerbench's protocol; this end).
    #[arg(long)]
    pub cc: Option<String>,
    /// Shared secret of a server started with `--token` (default: $ROUTERBENCH_TOKEN).
    #[arg(long, value_name = "TOKEN")]
    pub token: Option<String>,
    /// The result, with every interval and probe: `--json [FILE|-]`.
    #[command(flatten)]
    pub json: crate::cli::common::json_arg::JsonArg,
    /// Write a self-contained HTML report to FILE.html.
    #[cfg(feature = "plots")]
    #[arg(long, value_name = "FILE.html")]
    pub report: Option<std::path::PathBuf>,
    /// No progress line.
    #[arg(short, long)]
    pub quiet: bool,
}

fn params(a: &RpmArgs) -> anyhow::Result<Params> {
    let secs = |v: f64, what: &str| {
        Duration::try_from_secs_f64(v)
            .map_err(|_| anyhow::anyhow!("{what} must be a positive number of seconds, got {v}"))
    };
    let p = Params {
        mad: a.mad,
        interval: secs(a.interval, "--interval")?,
        mnp: a.max_connections,
        mps: a.max_probes_per_second,
        ptc: a.probe_share,
        time_limit: secs(a.max_time, "--max-time")?,
        ..Params::default()
    };
    p.validate().map_err(|e| anyhow::anyhow!(e))?;
    Ok(p)
}

/// Runs the test, prints the summary, writes the files. Exit 1 when a run had no score.
pub fn run(a: RpmArgs) -> anyhow::Result<i32> {
    let params = params(&a)?;
    a.json.check()?;
    crate::util::signals::install();
    let signal = crate::cli::common::signal_flag::SignalFlag::default();
    let progress: Box<dyn crate::util::progress::Progress> = if a.quiet {
        Box::new(crate::util::progress::NoProgress)
    } else {
        Box::new(crate::util::progress::BarProgress::new())
    };
    let mode = match a.mode {
        ModeArg::Sequential => Mode::Sequential,
        ModeArg::Concurrent => Mode::Concurrent,
        ModeArg::Download => Mode::Download,
        ModeArg::Upload => Mode::Upload,
    };
    let result = match &a.url {
        Some(url) => over_https(&a, url, mode, &params, progress.as_ref(), &signal)?,
        None => over_rb(&a, mode, &params, progress.as_ref(), &signal)?,
    };
    if !a.json.on_stdout() {
        crate::out!("{}", crate::report::rpm::render_text(&result));
    }
    let mut run = crate::results::RunResult::new(result.started_at.clone());
    run.finished_at = crate::util::time::now_rfc3339();
    run.device = Some(crate::device::detect());
    run.interrupted = result.interrupted;
    run.rpm = Some(result.clone());
    if let Some(path) = a.json.write(&run)? {
        a.json.say(&format!("saved {}", path.display()));
    }
    #[cfg(feature = "plots")]
    if let Some(path) = &a.report {
        let name = format!("rpm to {}", result.target);
        crate::cli::report::write_report(&[(run, name)], &[], path)?;
        a.json.say(&format!("saved {}", path.display()));
    }
    let scored = result.runs.iter().all(|r| r.score.rpm.is_some());
    Ok(if result.interrupted || !scored { 1 } else { 0 })
}

/// Against a routerbench server (its RPM extension of the protocol).
fn over_rb(
    a: &RpmArgs,
    mode: Mode,
    params: &Params,
    progress: &dyn crate::util::progress::Progress,
    signal: &crate::cli::common::signal_flag::SignalFlag,
) -> anyhow::Result<crate::results::rpm::RpmResult> {
    let runs = mode.runs().len() as u32;
    let whole = params.time_limit * runs + Duration::from_secs(30);
    let host = a.host.clone().unwrap_or_default();
    let addr = (host.as_str(), a.port)
        .to_socket_addrs()
        .map_err(|e| anyhow::anyhow!("cannot resolve {host}: {e}"))?
        .next()
        .ok_or_else(|| anyhow::anyhow!("{host} has no address"))?;
    let token = crate::cli::common::token::token_arg(&a.token)?.unwrap_or_default();
    let t =
        rpm::rb::RbTransport::connect(addr, &token, Duration::from_secs(5), whole, a.cc.clone())?;
    let per_run = if mode == Mode::Concurrent { 2 } else { 1 };
    if t.max_connections < params.mnp * per_run {
        anyhow::bail!(
            "this server takes at most {} connections per session: use --max-connections {}",
            t.max_connections,
            t.max_connections / per_run
        );
    }
    let mut r = rpm::run(
        &t,
        format!("{host}:{}", a.port),
        mode,
        params,
        progress,
        Some(signal.0.clone()),
    );
    if let Some(n) = t.finish() {
        r.notes.push(n);
    }
    Ok(r)
}

/// Against a draft-conforming HTTP/2 server (its configuration at `url`).
#[cfg(feature = "https")]
fn over_https(
    a: &RpmArgs,
    url: &str,
    mode: Mode,
    params: &Params,
    progress: &dyn crate::util::progress::Progress,
    signal: &crate::cli::common::signal_flag::SignalFlag,
) -> anyhow::Result<crate::results::rpm::RpmResult> {
    use crate::latency::rpm::https::{HttpsTransport, Trust};
    let trust = match (&a.ca, a.insecure) {
        (Some(f), _) => Trust::CaFile(f.clone()),
        (None, true) => Trust::Insecure,
        (None, false) => Trust::System,
    };
    let t = HttpsTransport::connect(url, &trust, Duration::from_secs(5), a.cc.clone())
        .map_err(|e| anyhow::anyhow!(e))?;
    let mut r = rpm::run(
        &t,
        url.to_string(),
        mode,
        params,
        progress,
        Some(signal.0.clone()),
    );
    if a.insecure {
        r.notes
            .push("--insecure: the server's certificate was not checked".into());
    }
    Ok(r)
}

#[cfg(not(feature = "https"))]
fn over_https(
    _a: &RpmArgs,
    _url: &str,
    _mode: Mode,
    _params: &Params,
    _progress: &dyn crate::util::progress::Progress,
    _signal: &crate::cli::common::signal_flag::SignalFlag,
) -> anyhow::Result<crate::results::rpm::RpmResult> {
    anyhow::bail!(
        "rpm --url needs HTTP/2 and TLS, which this build leaves out: build with the `https` \
         feature (cargo build --release --features https); `rpm HOST` against a routerbench \
         server needs no TLS"
    )
}
