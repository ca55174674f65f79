//! `routerbench crypto`: the `openssl speed` suite behind the OpenWrt benchmark table, measured
//! here (`--engine auto|openssl|rustcrypto`) or imported from saved `openssl speed` output (`--import`).

use std::io::Read;

use clap::{Args, ValueEnum};

use crate::crypto::engine::EngineKind;
use crate::crypto::{self, SizePlan, SuiteConfig};
use crate::report::crypto as render;
use crate::results::crypto::CryptoResult;
use crate::results::device::DeviceInfo;

/// What to print on standard output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    /// A readable table (MB/s per block size, sign/s, verify/s) and the OpenWrt row.
    Table,
    /// Only the OpenWrt wiki table row.
    Openwrt,
    /// `openssl speed`'s own summary text, for existing scripts (the wiki awk).
    Openssl,
}

#[derive(Debug, Args)]
pub struct CryptoArgs {
    /// Engine: `auto` (the system libcrypto when it loads at run time, else the `openssl`
    /// program on PATH, else pure Rust; the row's Engine cell says which), `openssl` (libcrypto
    /// or fail), `openssl-speed` (the openssl program or fail) or `rustcrypto`. Only OpenSSL
    /// rows compare with the OpenWrt wiki's rows.
    #[arg(long, value_enum, default_value_t = EngineKind::Auto)]
    pub engine: EngineKind,
    /// Seconds per block size and per sign/verify run (fractions allowed). Default: openssl
    /// speed's 3 s per block size and 10 s per RSA/DSA run.
    #[arg(long, value_name = "SECONDS", conflicts_with = "import")]
    pub seconds: Option<f64>,
    /// Comma list of algorithms (default: `all`, the table's eleven and WireGuard's two): md5,
    /// sha1, sha256, sha512, des, des-ede3, aes-128-cbc, aes-192-cbc, aes-256-cbc, rsa2048,
    /// dsa2048, chacha20-poly1305, aes-128-gcm; groups `table`, `wireguard`.
    #[arg(long, value_name = "LIST", conflicts_with = "import")]
    pub algorithms: Option<String>,
    /// Run N threads at once per test and sum their rates (per wall-clock second, like
    /// `openssl speed -multi N`; the openssl-speed engine passes `-multi N` itself).
    #[arg(long, value_name = "N", default_value_t = 1, conflicts_with = "import")]
    pub multi: u32,
    /// Measure only the row's columns (hashes at 1024 B, ciphers at --cipher-block) instead of
    /// all six block sizes: a quicker row.
    #[arg(long, conflicts_with = "import")]
    pub row_only: bool,
    /// Rates per wall-clock second instead of per user-CPU second.
    #[arg(long, conflicts_with = "import")]
    pub elapsed: bool,
    /// Output format.
    #[arg(long, value_enum, default_value_t = OutputFormat::Table)]
    pub format: OutputFormat,
    /// Block size of the cipher columns of the row: 8192 (as OpenSSL 3.x rows read) or 1024
    /// (as the older 1.1.1 rows read). Hash columns are always 1024.
    #[arg(long, value_name = "BYTES", default_value_t = 8192, value_parser = parse_cipher_block)]
    pub cipher_block: u32,
    /// The result (RunResult JSON with device and crypto): `--json [FILE|-]`, see
    /// `crate::cli::common::json_arg`; on standard output it replaces the table.
    #[command(flatten)]
    pub json: crate::cli::common::json_arg::JsonArg,
    /// Read saved `openssl speed` output from FILE (`-` for standard input) instead of
    /// measuring. Identity cells are this machine's unless --no-identity/--revision/--cpu-field.
    #[arg(long, value_name = "FILE")]
    pub import: Option<String>,
    /// Leave the identity cells (revision, cpuinfo fields) out of the row.
    #[arg(long)]
    pub no_identity: bool,
    /// Revision cell of the row (e.g. `r23633`), instead of this machine's.
    #[arg(long, value_name = "REV")]
    pub revision: Option<String>,
    /// A cpuinfo cell of the row (repeat for several), instead of this machine's.
    #[arg(long = "cpu-field", value_name = "TEXT")]
    pub cpu_fields: Vec<String>,
    /// Wait up to SECS for the machine to be idle before measuring (other processes under
    /// 10 % of a CPU); then measure anyway, and the validity verdict says how busy it was.
    #[arg(long, value_name = "SECS", default_value_t = 3.0, value_parser = crate::cli::common::parse_idle_wait)]
    pub idle_wait: f64,
    /// No progress bar.
    #[arg(long, short)]
    pub quiet: bool,
}

pub fn run(args: CryptoArgs) -> anyhow::Result<i32> {
    let started = crate::util::time::now_rfc3339();
    args.json.check()?;
    // Ctrl-C stops after the algorithm being measured; the rest of the row stays empty.
    crate::util::signals::install();
    let signal = crate::cli::common::signal_flag::SignalFlag::default();
    let (result, validity) = match &args.import {
        Some(file) => (import(file)?, None),
        None => {
            let (r, v) = measure(&args, &signal.0)?;
            (r, Some(v))
        }
    };
    let interrupted = signal.0.load(std::sync::atomic::Ordering::Relaxed);
    let device = crate::device::detect();
    let identity = identity_for(&args, &device);
    let labels = crate::report::device::row_identity_labels(&device, &identity);
    if args.import.is_some()
        && !args.no_identity
        && args.revision.is_none()
        && args.cpu_fields.is_empty()
        && !args.quiet
    {
        crate::errln!(
            "routerbench: note: the row's identity cells are this machine's; if the file comes \
             from another device use --revision/--cpu-field or --no-identity"
        );
    }
    let mut envelope = crate::results::RunResult::new(started);
    envelope.device = Some(device);
    envelope.crypto = Some(result.clone());
    envelope.validity = validity.clone();
    envelope.finished_at = crate::util::time::now_rfc3339();

    let json_to_stdout = args.json.on_stdout();
    // Written first, reported last: a failed write (its document kept elsewhere) must not
    // swallow the table.
    let saved = if args.json.file().is_some() {
        args.json.write(&envelope).map(|_| ())
    } else {
        Ok(())
    };
    if !json_to_stdout && args.format != OutputFormat::Table && !args.quiet {
        for note in &result.notes {
            crate::errln!("routerbench: note: {note}");
        }
    }
    if args.import.is_none() && !args.quiet {
        if let Some(w) = render::comparability_warning(&result) {
            eprintln!("routerbench: warning: {w}");
        }
    }
    if json_to_stdout {
        args.json.write(&envelope)?;
    } else {
        crate::out!(
            "{}",
            render_output(&result, &identity, &labels, args.format, args.cipher_block)
        );
        // One verdict line: under the table, or on stderr where stdout is a row for scripts.
        if let Some(v) = &validity {
            let line = crate::report::validity::verdict_line(v);
            if args.format == OutputFormat::Table {
                crate::outln!("{line}");
            } else if !args.quiet {
                crate::errln!("routerbench: {line}");
            }
        }
    }
    saved?;
    if interrupted {
        crate::errln!("routerbench: interrupted: the row is partial");
        return Ok(1);
    }
    Ok(0)
}

/// The text for `--format`.
pub fn render_output(
    result: &CryptoResult,
    identity: &[String],
    labels: &[String],
    format: OutputFormat,
    cipher_block: u32,
) -> String {
    match format {
        OutputFormat::Openwrt => render::openwrt_row(result, identity, cipher_block) + "\n",
        OutputFormat::Openssl => render::render_openssl(result, cipher_block),
        OutputFormat::Table => format!(
            "{}\nOpenWrt table row (hashes at 1024 B, ciphers at {cipher_block} B, bytes/s; \
             RSA/DSA per s):\n{}\n{}\n",
            render::render_table(result),
            render::openwrt_header(labels),
            render::openwrt_row(result, identity, cipher_block)
        ),
    }
}

fn parse_cipher_block(s: &str) -> Result<u32, String> {
    match s {
        "1024" => Ok(1024),
        "8192" => Ok(8192),
        _ => Err(format!("`{s}` is not 1024 or 8192")),
    }
}

fn identity_for(args: &CryptoArgs, device: &DeviceInfo) -> Vec<String> {
    if args.no_identity {
        return Vec::new();
    }
    let mut info = device.clone();
    if let Some(rev) = &args.revision {
        info.revision = Some(rev.clone());
    }
    if !args.cpu_fields.is_empty() {
        info.wiki_cpu_fields = args.cpu_fields.clone();
    }
    render::identity_cells(&info)
}

fn measure(
    args: &CryptoArgs,
    interrupt: &std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> anyhow::Result<(CryptoResult, crate::results::validity::Validity)> {
    let algorithms = match &args.algorithms {
        Some(list) => crypto::parse_algorithms(list)?,
        None => crate::results::crypto::Algorithm::EVERY.to_vec(),
    };
    let mut cfg = SuiteConfig {
        engine: args.engine,
        algorithms,
        sizes: if args.row_only {
            SizePlan::RowOnly {
                cipher_block: args.cipher_block,
            }
        } else {
            SizePlan::All
        },
        threads: args.multi,
        elapsed: args.elapsed,
        interrupt: Some(interrupt.clone()),
        ..SuiteConfig::default()
    };
    if let Some(s) = args.seconds {
        cfg.seconds_bulk = s;
        cfg.seconds_pkey = s;
    }
    crypto::check_config(&cfg)?;
    // Idle wait and the "before" readings, a window per column, the "after" readings.
    let watch = crate::monitor::validity::Watch::begin(
        std::path::Path::new("/"),
        std::time::Duration::from_secs_f64(args.idle_wait),
        Some(interrupt),
    );
    let bar: Box<dyn crate::util::progress::Progress> = if args.quiet {
        Box::new(crate::util::progress::NoProgress)
    } else {
        Box::new(crate::util::progress::BarProgress::new())
    };
    let watched = crate::monitor::validity::WatchedProgress::new(bar.as_ref(), watch);
    let result = crypto::run_suite(&cfg, &watched)?;
    Ok((result, watched.into_watch().finish()))
}

/// Limit on an imported file: openssl speed output is a few KiB; this stops a wrong file early.
const MAX_IMPORT_BYTES: u64 = 16 * 1024 * 1024;

fn import(file: &str) -> anyhow::Result<CryptoResult> {
    let mut bytes = Vec::new();
    if file == "-" {
        std::io::stdin()
            .lock()
            .take(MAX_IMPORT_BYTES + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| anyhow::anyhow!("cannot read standard input: {e}"))?;
    } else {
        std::fs::File::open(file)
            .and_then(|f| f.take(MAX_IMPORT_BYTES + 1).read_to_end(&mut bytes))
            .map_err(|e| anyhow::anyhow!("cannot read {file}: {e}"))?;
    }
    if bytes.len() as u64 > MAX_IMPORT_BYTES {
        anyhow::bail!(
            "{file} is larger than 16 MiB: not the output of openssl speed (a few KiB); check \
             the file name"
        );
    }
    Ok(crypto::import::parse(&bytes, file)?)
}
