//! `routerbench stress [--for 30m] [--cpu] [--crypto ALG] [--net loopback|HOST] [--monitor
//! HOST[:PORT]] [--ambient 44]`: a full workload for a set time with the machine (or the
//! router's agent) recorded on one time axis, then the seed's answer in a few lines; saved as
//! `stress-<stamp>.json` and `.html` in `--out-dir`, or (`--json [FILE|-]`, as every measuring
//! command) to FILE or standard output, and in `--out-dir` only when it is given too.
//! `stress --analyze FILE` re-runs the detectors on a saved file (and with `--json`, writes
//! the result with the new analysis).

use crate::crypto::engine::EngineKind;
use crate::results::RunResult;
use crate::results::stress::StressEvent;
use crate::stress::net::{NetConfig, Target};
use crate::stress::observe::AgentTarget;
use crate::stress::{StressConfig, StressEvents};
use crate::util::progress::{BarProgress, NoProgress, Progress};
use clap::Args;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{Duration, Instant};

#[derive(Debug, Args)]
pub struct StressArgs {
    /// How long: `90s`, `30m`, `1h`, or seconds (at least 10 s; heat needs minutes).
    #[arg(long = "for", value_name = "TIME", default_value = "30m", value_parser = parse_duration)]
    pub duration: Duration,
    /// Crypto on every core (the default algorithm, aes-128-cbc). Without --cpu, --crypto and
    /// --net both loads run, the network one over loopback.
    #[arg(long)]
    pub cpu: bool,
    /// Crypto on every core with this algorithm (md5 … dsa2048, or WireGuard's
    /// chacha20-poly1305 / aes-128-gcm on 1456-byte packets; implies --cpu).
    #[arg(long, value_name = "ALG")]
    pub crypto: Option<String>,
    /// The crypto engine (as `crypto --engine`).
    #[arg(long, value_enum, default_value_t = EngineKind::Auto)]
    pub engine: EngineKind,
    /// Crypto threads (default: one per core, each pinned to its core).
    #[arg(long, value_name = "N")]
    pub threads: Option<u32>,
    /// RRUL load, back to back: `loopback` (a server in this process: the in-device test) or
    /// the host of a `routerbench server` (through the router).
    #[arg(long, value_name = "loopback|HOST")]
    pub net: Option<String>,
    /// The server's port for --net HOST.
    #[arg(short, long, default_value_t = 5201, value_parser = clap::value_parser!(u16).range(1..))]
    pub port: u16,
    /// The server's `--token` (default: $ROUTERBENCH_TOKEN).
    #[arg(long, value_name = "TOKEN")]
    pub token: Option<String>,
    /// TCP congestion control of the load flows, both ends.
    #[arg(long)]
    pub cc: Option<String>,
    /// Watch the router through its agent (`routerbench server --monitor` there) instead of
    /// this machine (this machine is recorded too).
    #[arg(long = "monitor", value_name = "HOST[:PORT]")]
    pub monitor: Option<String>,
    #[arg(long = "monitor-token", value_name = "T")]
    pub monitor_token: Option<String>,
    /// Sampling interval of this machine and of the agent, seconds.
    #[arg(long = "monitor-interval", default_value_t = 1.0)]
    pub monitor_interval: f64,
    /// The room's temperature, °C (the summary gives the peak over it).
    #[arg(long, value_name = "°C", allow_negative_numbers = true)]
    pub ambient: Option<f64>,
    /// A frequency this many percent below the start's is a drop (default 5).
    #[arg(long, value_name = "PCT")]
    pub freq_drop: Option<f64>,
    /// A throughput this many percent below the start's is a sag (default 10).
    #[arg(long, value_name = "PCT")]
    pub throughput_drop: Option<f64>,
    /// Where the result goes: `stress-<stamp>.json` and `stress-<stamp>.html` (default
    /// `routerbench-results`, unless --json says where the JSON goes).
    #[arg(long, value_name = "DIR")]
    pub out_dir: Option<PathBuf>,
    /// The result (RunResult JSON: device, stress, monitor, router): `--json [FILE|-]`, see
    /// `crate::cli::common::json_arg`; on standard output it replaces the summary.
    #[command(flatten)]
    pub json: crate::cli::common::json_arg::JsonArg,
    /// Re-run the analysis on a saved stress result and print the summary (writes nothing).
    #[arg(long, value_name = "FILE.json")]
    pub analyze: Option<PathBuf>,
    /// No progress line.
    #[arg(short, long)]
    pub quiet: bool,
}

/// `90`, `90s`, `30m`, `1h`, `1h30m`.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    if let Ok(s) = t.parse::<f64>() {
        return Duration::try_from_secs_f64(s).map_err(|_| format!("`{text}`: not a duration"));
    }
    let (mut total, mut num) = (0.0f64, String::new());
    for c in t.chars() {
        if c.is_ascii_digit() || c == '.' {
            num.push(c);
            continue;
        }
        let unit = match c {
            'h' => 3600.0,
            'm' => 60.0,
            's' => 1.0,
            _ => return Err(format!("`{text}`: use 90s, 30m, 1h or seconds")),
        };
        let v: f64 = num
            .parse()
            .map_err(|_| format!("`{text}`: use 90s, 30m, 1h or seconds"))?;
        total += v * unit;
        num.clear();
    }
    if !num.is_empty() {
        return Err(format!("`{text}`: a number without its unit (s, m, h)"));
    }
    Duration::try_from_secs_f64(total).map_err(|_| format!("`{text}`: not a duration"))
}

/// Off a terminal (a log, CI): the progress line every 10 s on stderr.
struct LineProgress {
    last: Mutex<Option<Instant>>,
}

impl Progress for LineProgress {
    fn phase(&self, _: &str, _: u64) {}
    fn step(&self, _: u64, message: &str) {
        let Ok(mut last) = self.last.lock() else {
            return;
        };
        if last.is_none_or(|t| t.elapsed() >= Duration::from_secs(10)) {
            *last = Some(Instant::now());
            crate::errln!("routerbench stress: {message}");
        }
    }
    fn finish(&self) {}
}

/// Events as they happen, on stderr.
struct PrintEvents;

impl StressEvents for PrintEvents {
    fn event(&self, e: &StressEvent) {
        crate::errln!("routerbench stress: t = {:.1} s: {}", e.t_s, e.message);
    }
}

fn config(a: &StressArgs) -> anyhow::Result<StressConfig> {
    let algorithm = match &a.crypto {
        Some(list) => {
            let algs = crate::crypto::parse_algorithms(list)?;
            match algs.as_slice() {
                [one] => Some(*one),
                _ => anyhow::bail!("--crypto takes one algorithm, got `{list}`"),
            }
        }
        None => None,
    };
    let want_cpu = a.cpu || algorithm.is_some();
    let (cpu, net) = match (want_cpu, a.net.as_deref()) {
        (false, None) => (true, Some("loopback")),
        (c, n) => (c, n),
    };
    let mut thresholds = crate::results::stress::Thresholds::default();
    if let Some(p) = a.freq_drop {
        thresholds.freq_drop_pct = check_pct(p, "--freq-drop")?;
    }
    if let Some(p) = a.throughput_drop {
        thresholds.throughput_drop_pct = check_pct(p, "--throughput-drop")?;
    }
    if !(0.05..=60.0).contains(&a.monitor_interval) {
        anyhow::bail!("--monitor-interval must be 0.05–60 s");
    }
    let interval = Duration::from_secs_f64(a.monitor_interval);
    Ok(StressConfig {
        duration: a.duration,
        cpu: cpu.then(|| {
            use crate::results::crypto::{Algorithm, AlgorithmKind, WIREGUARD_BLOCK};
            let algorithm = algorithm.unwrap_or(Algorithm::Aes128Cbc);
            let defaults = crate::crypto::load::LoadConfig::default();
            crate::crypto::load::LoadConfig {
                engine: a.engine,
                algorithm,
                threads: a.threads.unwrap_or(0),
                // The AEADs run on WireGuard packets, as the crypto row measures them.
                block: match algorithm.kind() {
                    AlgorithmKind::Aead => WIREGUARD_BLOCK as usize,
                    _ => defaults.block,
                },
                ..defaults
            }
        }),
        net: net
            .map(|n| -> anyhow::Result<NetConfig> {
                Ok(NetConfig {
                    target: if n.eq_ignore_ascii_case("loopback") {
                        Target::Loopback
                    } else {
                        Target::Host(n.to_string())
                    },
                    port: a.port,
                    cc: a.cc.clone(),
                    token: crate::cli::common::token::token_arg(&a.token)?.unwrap_or_default(),
                    ..Default::default()
                })
            })
            .transpose()?,
        agent: a.monitor.as_ref().map(|m| AgentTarget {
            address: m.clone(),
            token: a.monitor_token.clone(),
            interval,
        }),
        monitor_interval: interval,
        ambient_c: a.ambient,
        thresholds,
        ..Default::default()
    })
}

fn check_pct(p: f64, what: &str) -> anyhow::Result<f64> {
    if !(0.5..=90.0).contains(&p) {
        anyhow::bail!("{what} must be 0.5–90 (percent), got {p}");
    }
    Ok(p)
}

/// The directory of `stress-<stamp>.json/.html`: `--out-dir`, else the default unless `--json`
/// says where the result goes.
fn out_dir(a: &StressArgs) -> Option<PathBuf> {
    match (&a.out_dir, a.json.is_set()) {
        (Some(d), _) => Some(d.clone()),
        (None, false) => Some(PathBuf::from("routerbench-results")),
        (None, true) => None,
    }
}

pub fn run(a: StressArgs) -> anyhow::Result<i32> {
    a.json.check()?;
    if let Some(file) = &a.analyze {
        return analyze(&a, file);
    }
    let mut cfg = config(&a)?;
    // Before any measuring: a run that cannot be saved is a run lost. A run refused before it
    // starts (bad input, no server, no agent) leaves no empty directory behind.
    let dir = out_dir(&a);
    let existed = dir.as_ref().is_none_or(|d| d.exists());
    if let Some(d) = &dir {
        super::check_output_dir(d, "--out-dir")?;
    }
    crate::util::signals::install();
    let signal = crate::cli::common::signal_flag::SignalFlag::default();
    cfg.interrupt = Some(signal.0.clone());
    let progress: Box<dyn Progress> = if a.quiet {
        Box::new(NoProgress)
    } else if std::io::stderr().is_terminal() {
        Box::new(BarProgress::new())
    } else {
        Box::new(LineProgress {
            last: Mutex::new(None),
        })
    };
    let started_unix = crate::util::time::unix_now_f64() as i64;
    let outcome = match crate::stress::run(&cfg, progress.as_ref(), &PrintEvents) {
        Ok(o) => o,
        Err(e) => {
            if let (false, Some(d)) = (existed, &dir) {
                let _ = std::fs::remove_dir(d);
            }
            return Err(e.into());
        }
    };
    let mut run = RunResult::new(crate::util::time::rfc3339_utc(started_unix));
    run.finished_at = crate::util::time::now_rfc3339();
    run.device = Some(crate::device::detect());
    run.interrupted = outcome
        .stress
        .events
        .iter()
        .any(|e| e.kind == crate::results::stress::EventKind::Interrupted);
    run.monitor = outcome.monitor;
    run.router = outcome.router;
    run.stress = Some(outcome.stress);
    if let Some(d) = &dir {
        match save_in(d, &run, started_unix, &a.json) {
            Err(e) if !a.json.is_set() => return Err(e),
            Err(e) => crate::errln!("routerbench: {e:#}"),
            Ok(()) => {}
        }
    }
    if let Some(path) = a.json.write(&run)? {
        a.json.say(&format!("saved {}", path.display()));
    }
    if let (Some(s), false) = (&run.stress, a.json.on_stdout()) {
        crate::outln!("\n== Stress");
        crate::out!("{}", crate::report::stress::render_summary(s));
    }
    // The access point's stations over the run (this machine's radios, or the router's).
    for m in run.monitor.iter().chain(run.router.iter()) {
        if let Some(w) = &m.summary.wifi {
            crate::out!("{}", crate::report::wifi::render_summary(w));
        }
    }
    if run.interrupted {
        return Ok(1);
    }
    Ok(0)
}

/// `stress-<stamp>.json` and (with `plots`) `stress-<stamp>.html` in `dir`. The JSON not
/// saved is an error; the page not written, a line on standard error.
fn save_in(
    dir: &std::path::Path,
    run: &RunResult,
    started_unix: i64,
    json: &crate::cli::common::json_arg::JsonArg,
) -> anyhow::Result<()> {
    let stamp = crate::util::time::file_stamp(started_unix);
    let path = dir.join(format!("stress-{stamp}.json"));
    crate::report::export::json::save(run, &path).map_err(|e| {
        anyhow::anyhow!(
            "cannot save {}: {e} (choose another --out-dir)",
            path.display()
        )
    })?;
    json.say(&format!("saved {}", path.display()));
    #[cfg(feature = "plots")]
    {
        let html = dir.join(format!("stress-{stamp}.html"));
        match super::report::write_report(&[(run.clone(), path.display().to_string())], &[], &html)
        {
            Ok(()) => json.say(&format!(
                "saved {} (the report: open it in a browser)",
                html.display()
            )),
            Err(e) => crate::errln!("routerbench: {e:#}"),
        }
    }
    Ok(())
}

/// `--analyze FILE` in a build without `plots` (the router's minimal build): reading a saved
/// result back compiles a deserializer for every result type (393 kB of the mipsel minimal
/// build, docs/cross-build.md), so the minimal build leaves it to a host build, like `report`,
/// `plot` and `compare`.
#[cfg(not(feature = "plots"))]
fn analyze(_a: &StressArgs, file: &std::path::Path) -> anyhow::Result<i32> {
    anyhow::bail!(
        "stress --analyze {}: this routerbench is the minimal build (no `plots` feature), which \
         does not read saved results back; copy the file to a host and run `routerbench stress \
         --analyze` there (a default build)",
        file.display()
    )
}

/// `--analyze FILE`: the detectors again on the saved series (with this run's thresholds and
/// --ambient where given), the summary printed, nothing written.
#[cfg(feature = "plots")]
fn analyze(a: &StressArgs, file: &std::path::Path) -> anyhow::Result<i32> {
    let run = crate::results::load(file)?;
    let Some(mut s) = run.stress.clone() else {
        anyhow::bail!(
            "{} has no stress result (it was not written by `routerbench stress`)",
            file.display()
        );
    };
    if let Some(p) = a.freq_drop {
        s.thresholds.freq_drop_pct = check_pct(p, "--freq-drop")?;
    }
    if let Some(p) = a.throughput_drop {
        s.thresholds.throughput_drop_pct = check_pct(p, "--throughput-drop")?;
    }
    if a.ambient.is_some() {
        s.ambient_c = a.ambient;
    }
    let dut = if s.observed == "router" {
        run.router.as_ref()
    } else {
        run.monitor.as_ref()
    };
    s.analysis = crate::stress::detect::analyze(&s, dut);
    if !a.json.on_stdout() {
        crate::outln!("== Stress (analysis re-run on {})", file.display());
        crate::out!("{}", crate::report::stress::render_summary(&s));
    }
    if a.json.is_set() {
        let mut run = run;
        run.stress = Some(s);
        if let Some(path) = a.json.write(&run)? {
            a.json.say(&format!("saved {}", path.display()));
        }
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("90").unwrap(), Duration::from_secs(90));
        assert_eq!(parse_duration("90s").unwrap(), Duration::from_secs(90));
        assert_eq!(parse_duration("30m").unwrap(), Duration::from_secs(1800));
        assert_eq!(parse_duration("1h30m").unwrap(), Duration::from_secs(5400));
        assert_eq!(parse_duration("2.5m").unwrap(), Duration::from_secs(150));
        assert!(parse_duration("30x").is_err());
        assert!(parse_duration("30m5").is_err());
        assert!(parse_duration("-5").is_err());
    }

    fn args(line: &[&str]) -> StressArgs {
        use clap::Parser;
        match crate::cli::Cli::try_parse_from(line).unwrap().command {
            crate::cli::Command::Stress(a) => a,
            _ => unreachable!(),
        }
    }

    #[test]
    fn the_aeads_run_on_wireguard_packets_and_the_rest_on_full_blocks() {
        let c = config(&args(&["rb", "stress", "--crypto", "chacha20-poly1305"])).unwrap();
        let cpu = c.cpu.unwrap();
        assert_eq!(
            cpu.algorithm,
            crate::results::crypto::Algorithm::Chacha20Poly1305
        );
        assert_eq!(cpu.block, 1456);
        assert!(c.net.is_none(), "--crypto alone is the CPU load alone");
        let c = config(&args(&["rb", "stress", "--crypto", "sha256"])).unwrap();
        assert_eq!(c.cpu.unwrap().block, crate::crypto::engine::MAX_BLOCK);
        // Neither load named: both, the network one over loopback.
        let c = config(&args(&["rb", "stress"])).unwrap();
        assert!(c.cpu.is_some());
        assert!(matches!(c.net.unwrap().target, Target::Loopback));
    }

    #[test]
    fn json_decides_where_the_result_goes_unless_out_dir_is_given() {
        let dir = |line: &[&str]| out_dir(&args(line));
        assert_eq!(
            dir(&["rb", "stress"]),
            Some(PathBuf::from("routerbench-results"))
        );
        assert_eq!(dir(&["rb", "stress", "--json", "s.json"]), None);
        assert_eq!(dir(&["rb", "stress", "--json"]), None);
        assert_eq!(
            dir(&["rb", "stress", "--json", "s.json", "--out-dir", "d"]),
            Some(PathBuf::from("d"))
        );
        assert!(args(&["rb", "stress", "-J"]).json.on_stdout());
    }
}
