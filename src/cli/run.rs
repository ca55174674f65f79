//! `routerbench run`: the full local suite, no external server needed: identity, a quick crypto
//! pass (the OpenWrt row's columns), the in-device loopback throughput test and a short RRUL over
//! loopback, with the machine's own view sampled during the network tests. Printed as a summary
//! and the row, saved as JSON under `./routerbench-results/`.

use crate::crypto::{self, SuiteConfig};
use crate::results::RunResult;
use crate::util::progress::{BarProgress, NoProgress, Progress};
use clap::Args;
use std::io::IsTerminal;

#[derive(Debug, Args)]
pub struct RunArgs {
    /// Directory for the JSON result (`run-<time>.json`, and `latest.json`).
    #[arg(long, default_value = "routerbench-results")]
    pub out_dir: std::path::PathBuf,
    /// Crypto engine for the row: `rustcrypto` (built in) or `openssl` (needs the feature).
    #[arg(long, value_enum, default_value_t = crypto::engine::EngineKind::RustCrypto)]
    pub engine: crypto::engine::EngineKind,
    /// Seconds per crypto column.
    #[arg(long, default_value_t = 1.0)]
    pub crypto_seconds: f64,
    /// Parts to skip: comma list of crypto, throughput, latency.
    #[arg(long, value_delimiter = ',')]
    pub skip: Vec<Part>,
    /// A short run for smoke tests: 0.2 s per crypto column, 3 s loopback, 8 s RRUL.
    #[arg(long)]
    pub quick: bool,
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
}

pub fn run(args: RunArgs) -> anyhow::Result<i32> {
    if !(0.01..=60.0).contains(&args.crypto_seconds) {
        anyhow::bail!("--crypto-seconds must be between 0.01 and 60");
    }
    let progress: Box<dyn Progress> = if args.quiet || !std::io::stderr().is_terminal() {
        Box::new(NoProgress)
    } else {
        Box::new(BarProgress::new())
    };
    let started_unix = crate::util::time::unix_now_f64() as i64;
    let mut result = RunResult::new(crate::util::time::rfc3339_utc(started_unix));
    result.device = Some(crate::device::detect());

    if !args.skip.contains(&Part::Crypto) {
        let seconds = if args.quick { 0.2 } else { args.crypto_seconds };
        let cfg = SuiteConfig::row_only(args.engine, seconds);
        match crypto::run_suite(&cfg, progress.as_ref()) {
            Ok(c) => result.crypto = Some(c),
            Err(e) => result.notes.push(format!("crypto skipped: {e}")),
        }
    }

    result.finished_at = crate::util::time::now_rfc3339();
    progress.finish();
    print!("{}", crate::report::summary::render_run(&result));

    let stamp = crate::util::time::file_stamp(started_unix);
    let path = args.out_dir.join(format!("run-{stamp}.json"));
    crate::results::save(&result, &path).map_err(|e| {
        anyhow::anyhow!(
            "cannot save {}: {e} (choose another --out-dir)",
            path.display()
        )
    })?;
    crate::results::save(&result, &args.out_dir.join("latest.json")).map_err(|e| {
        anyhow::anyhow!("cannot save latest.json in {}: {e}", args.out_dir.display())
    })?;
    println!("\nsaved {}", path.display());
    Ok(0)
}
