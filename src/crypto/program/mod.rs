//! The `openssl` program as an engine (docs/crypto.md, "The openssl program"): where libcrypto
//! cannot be loaded (a static build), the router's own `openssl speed` gives the wiki's row all
//! the same. The commands come from [`plan`]; each runs bounded ([`child`]); its stdout is read
//! by the importer that reads saved `openssl speed` output, and checked: the version it names is
//! the program's, every requested algorithm is there at every requested size, `-multi` summed as
//! many processes as asked. Anything else is an error, so a broken, hung or impostor `openssl`
//! never gives a row (`--engine auto` then falls back to RustCrypto and says why).

pub mod child;
pub mod plan;

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::crypto::SuiteConfig;
use crate::crypto::import::{self, ImportError};
use crate::results::crypto::{
    Algorithm, AlgorithmKind, BulkResult, CryptoResult, CryptoSource, EngineInfo, PublicKeyResult,
    TimeBase,
};
use crate::util::progress::Progress;
use child::ChildError;
use plan::{Command, Version};

/// Names the `openssl` program to run (a path, or a name looked up in PATH); `none`: never run
/// one.
pub const ENV_OPENSSL: &str = "ROUTERBENCH_OPENSSL";
/// Seconds one `openssl speed` command may run before it is killed, instead of the default
/// (twice its expected time plus [`DEADLINE_SLACK`]); for very slow routers, and for tests.
pub const ENV_TIMEOUT: &str = "ROUTERBENCH_OPENSSL_TIMEOUT";
/// Start-up allowance on top of twice the expected time: loading keys, and RSA key generation
/// of 3.5's KEM table, which takes seconds per key on a MIPS router.
pub const DEADLINE_SLACK: Duration = Duration::from_secs(60);
/// `openssl version` and `openssl list` answer at once; this only bounds a hung one.
const PROBE_LIMIT: Duration = Duration::from_secs(15);

/// An `openssl` program that answered `openssl version`.
#[derive(Debug, Clone)]
pub struct Program {
    pub path: PathBuf,
    pub version: Version,
}

/// Why the openssl program gave no row. Each message names the command and what to do.
#[derive(Debug, thiserror::Error)]
pub enum ProgramError {
    #[error(
        "no `openssl` program on PATH (OpenWrt: `opkg install openssl-util` or `apk add \
         openssl-util`; Debian: `apt-get install openssl`)"
    )]
    NotFound,
    #[error("the openssl program is switched off by {ENV_OPENSSL}=none")]
    Disabled,
    #[error("{ENV_OPENSSL}={0}: no such executable")]
    BadPath(String),
    #[error("`{command}` {problem}")]
    Probe { command: String, problem: String },
    #[error("`{command}` {cause}")]
    Child { command: String, cause: ChildError },
    #[error("`{command}` exited with {status}{detail}")]
    Failed {
        command: String,
        status: String,
        detail: String,
    },
    #[error("`{command}` printed something that is not openssl speed's output: {cause}")]
    Garbage {
        command: String,
        cause: Box<ImportError>,
    },
    #[error("`{command}`: {problem}")]
    Incomplete { command: String, problem: String },
}

impl ProgramError {
    /// True when the run was stopped by Ctrl-C (no fallback then: the user asked to stop).
    pub fn is_interrupt(&self) -> bool {
        matches!(
            self,
            ProgramError::Child {
                cause: ChildError::Interrupted,
                ..
            }
        )
    }
}

/// The `openssl` to run: `$ROUTERBENCH_OPENSSL`, else the first on PATH; checked with
/// `openssl version`.
pub fn find() -> Result<Program, ProgramError> {
    let wanted = std::env::var(ENV_OPENSSL).unwrap_or_default();
    let wanted = wanted.trim();
    let path = match wanted {
        "none" => return Err(ProgramError::Disabled),
        "" => search_path("openssl").ok_or(ProgramError::NotFound)?,
        w if w.contains('/') => {
            let p = PathBuf::from(w);
            if !is_executable(&p) {
                return Err(ProgramError::BadPath(w.to_string()));
            }
            p
        }
        w => search_path(w).ok_or_else(|| ProgramError::BadPath(w.to_string()))?,
    };
    probe(&path)
}

/// Runs `PATH version` and parses its first line.
pub fn probe(path: &Path) -> Result<Program, ProgramError> {
    let command = format!("{} version", path.display());
    let out =
        child::run(path, &["version".into()], PROBE_LIMIT, &mut |_| {}, None).map_err(|cause| {
            ProgramError::Child {
                command: command.clone(),
                cause,
            }
        })?;
    let text = String::from_utf8_lossy(&out.stdout);
    let first = text.lines().next().unwrap_or("").trim();
    if !out.status.success() {
        return Err(ProgramError::Failed {
            command,
            status: out.status.to_string(),
            detail: detail(&out.stderr_tail),
        });
    }
    match Version::parse(first) {
        Some(version) => Ok(Program {
            path: path.to_path_buf(),
            version,
        }),
        None => Err(ProgramError::Probe {
            command,
            problem: format!(
                "printed `{}`, not an OpenSSL version: not the openssl program (set \
                 {ENV_OPENSSL}=/path/to/openssl)",
                import::tokens::excerpt(first)
            ),
        }),
    }
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

fn search_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| is_executable(p))
}

fn detail(tail: &[String]) -> String {
    match tail.last() {
        Some(_) => format!(": {}", tail.join(" / ")),
        None => String::new(),
    }
}

/// Whether OpenSSL 3's legacy provider loads (single DES): `openssl list -provider legacy …`.
fn legacy_loads(prog: &Program) -> bool {
    let args = [
        "list",
        "-provider",
        "legacy",
        "-provider",
        "default",
        "-providers",
    ]
    .map(String::from);
    child::run(&prog.path, &args, PROBE_LIMIT, &mut |_| {}, None).is_ok_and(|o| o.status.success())
}

/// The deadline of one command: `$ROUTERBENCH_OPENSSL_TIMEOUT`, else twice its expected time
/// plus [`DEADLINE_SLACK`].
pub fn deadline(cmd: &Command) -> Duration {
    let env = std::env::var(ENV_TIMEOUT)
        .ok()
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s > 0.0 && *s < 1e6);
    match env {
        Some(s) => Duration::from_secs_f64(s),
        None => Duration::from_secs_f64(2.0 * cmd.expected_secs.min(1e6)) + DEADLINE_SLACK,
    }
}

/// Runs the suite through `prog`. Progress goes to `progress`; nothing is printed.
pub fn run(
    prog: &Program,
    cfg: &SuiteConfig,
    algorithms: &[Algorithm],
    progress: &dyn Progress,
) -> Result<CryptoResult, ProgramError> {
    let legacy = prog.version.has_providers()
        && algorithms.contains(&Algorithm::DesCbc)
        && legacy_loads(prog);
    let plan = plan::plan(&prog.version, cfg, algorithms, legacy);
    let total: u32 = plan.commands.iter().map(|c| c.tests).sum();
    progress.phase("crypto", u64::from(total));
    let mut acc = Merged::default();
    let mut done = 0u32;
    let interrupt = cfg.interrupt.as_deref();
    for cmd in &plan.commands {
        let start = done;
        let mut events = 0u32;
        let threads = cfg.threads.max(1);
        let mut on_test = |t: &str| {
            events += 1;
            let now = (start + (events - 1) / threads).min(start + cmd.tests);
            progress.step(u64::from(now), &format!("openssl speed: {t}"));
        };
        let outcome = run_one(prog, cmd, cfg, &mut on_test, interrupt);
        done = start + cmd.tests;
        match outcome {
            Ok(r) => acc.add(cmd, r),
            Err(e) if cmd.optional && !e.is_interrupt() => acc.unavailable(cmd, &e),
            Err(e) => {
                progress.finish();
                return Err(e);
            }
        }
    }
    progress.step(u64::from(total), "done");
    progress.finish();
    Ok(acc.finish(prog, cfg, algorithms, plan))
}

/// One command: run, check the exit status, import, check what it printed.
fn run_one(
    prog: &Program,
    cmd: &Command,
    cfg: &SuiteConfig,
    on_test: &mut dyn FnMut(&str),
    interrupt: Option<&std::sync::atomic::AtomicBool>,
) -> Result<CryptoResult, ProgramError> {
    let command = cmd.display();
    let out =
        child::run(&prog.path, &cmd.args, deadline(cmd), on_test, interrupt).map_err(|cause| {
            ProgramError::Child {
                command: command.clone(),
                cause,
            }
        })?;
    if !out.status.success() {
        return Err(ProgramError::Failed {
            command,
            status: out.status.to_string(),
            detail: detail(&out.stderr_tail),
        });
    }
    let r = import::parse(&out.stdout, &command).map_err(|cause| ProgramError::Garbage {
        command: command.clone(),
        cause: Box::new(cause),
    })?;
    check(prog, cmd, cfg, &r).map_err(|problem| ProgramError::Incomplete { command, problem })?;
    Ok(r)
}

/// The output must be this program's and hold every algorithm the command asked for.
fn check(prog: &Program, cmd: &Command, cfg: &SuiteConfig, r: &CryptoResult) -> Result<(), String> {
    let says = &r.engine.version;
    if says != "OpenSSL unknown" && says != &prog.version.short {
        return Err(format!(
            "the output says {says}, but `openssl version` said {}: not this program's output",
            prog.version.short
        ));
    }
    if cfg.threads > 1 && r.threads != cfg.threads {
        return Err(format!(
            "-multi {} was asked, but the output sums {} process(es)",
            cfg.threads, r.threads
        ));
    }
    let mut missing = Vec::new();
    for &alg in &cmd.algorithms {
        let present = match alg.kind() {
            AlgorithmKind::PublicKey => r.public_key(alg).is_some(),
            _ => match &cmd.sizes {
                Some(sizes) => sizes.iter().all(|&s| r.rate(alg, s).is_some()),
                None => r
                    .bulk
                    .iter()
                    .find(|b| b.algorithm == alg)
                    .is_some_and(|b| !b.bytes_per_sec.is_empty()),
            },
        };
        if !present {
            missing.push(alg.cli_name());
        }
    }
    if missing.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "its output has no {} (truncated?)",
            missing.join(", ")
        ))
    }
}

/// The rows of every command, put together.
#[derive(Debug, Default)]
struct Merged {
    /// (algorithm, size, bytes/s)
    bulk: Vec<(Algorithm, u32, f64)>,
    /// Algorithms whose optional command failed: 0 with this note.
    unavailable: Vec<(Algorithm, String)>,
    public_key: Vec<PublicKeyResult>,
    notes: Vec<String>,
    commands: Vec<String>,
}

impl Merged {
    fn add(&mut self, cmd: &Command, r: CryptoResult) {
        self.commands.push(cmd.display());
        for &alg in &cmd.algorithms {
            if let Some(p) = r.public_key(alg) {
                self.public_key.push(p.clone());
                continue;
            }
            let Some(b) = r.bulk.iter().find(|b| b.algorithm == alg) else {
                continue;
            };
            for (i, &size) in r.block_sizes.iter().enumerate() {
                let wanted = cmd.sizes.as_ref().is_none_or(|s| s.contains(&size));
                if let (true, Some(Some(v))) = (wanted, b.bytes_per_sec.get(i)) {
                    self.bulk.push((alg, size, *v));
                }
            }
        }
        // The importer's notes about these algorithms (a 0.00 row, openssl's error lines).
        for n in r.notes {
            let ours = cmd
                .algorithms
                .iter()
                .any(|a| n.starts_with(&format!("{}:", a.cli_name())));
            if (ours || n.starts_with("openssl reported an error")) && !self.notes.contains(&n) {
                self.notes.push(n);
            }
        }
    }

    fn unavailable(&mut self, cmd: &Command, e: &ProgramError) {
        self.commands.push(cmd.display());
        for &alg in &cmd.algorithms {
            self.unavailable.push((
                alg,
                format!("reported as 0: the openssl program could not run it ({e})"),
            ));
        }
    }

    fn finish(
        mut self,
        prog: &Program,
        cfg: &SuiteConfig,
        algorithms: &[Algorithm],
        plan: plan::Plan,
    ) -> CryptoResult {
        let mut sizes: Vec<u32> = self.bulk.iter().map(|&(_, s, _)| s).collect();
        for (alg, _) in &self.unavailable {
            sizes.extend(alg.row_block(cfg_block(cfg)));
        }
        sizes.sort();
        sizes.dedup();
        let mut bulk = Vec::new();
        for &alg in algorithms
            .iter()
            .filter(|a| a.kind() != AlgorithmKind::PublicKey)
        {
            let mut values: Vec<Option<f64>> = vec![None; sizes.len()];
            let mut note = None;
            for &(a, s, v) in &self.bulk {
                if let (true, Some(col)) = (a == alg, sizes.iter().position(|&x| x == s)) {
                    values[col] = Some(v);
                }
            }
            if let Some((_, why)) = self.unavailable.iter().find(|(a, _)| *a == alg) {
                if let Some(col) = alg
                    .row_block(cfg_block(cfg))
                    .and_then(|b| sizes.iter().position(|&x| x == b))
                {
                    values[col] = Some(0.0);
                }
                note = Some(why.clone());
                self.notes.push(format!("{}: {why}", alg.cli_name()));
            }
            if values.iter().any(Option::is_some) {
                bulk.push(BulkResult {
                    algorithm: alg,
                    bytes_per_sec: values,
                    note,
                });
            }
        }
        let mut notes = plan.notes;
        notes.push(format!(
            "measured by the openssl program ({}, {}), read as saved openssl speed output",
            prog.path.display(),
            prog.version.short
        ));
        if cfg.threads > 1 {
            notes.push(format!(
                "openssl speed -multi {}: {} processes at once, rates summed, per wall-clock second",
                cfg.threads, cfg.threads
            ));
        }
        notes.extend(self.notes);
        CryptoResult {
            engine: EngineInfo {
                name: "openssl-speed".into(),
                version: format!("{} (openssl speed)", prog.version.short),
            },
            source: CryptoSource::Measured {
                seconds_bulk: cfg.seconds_bulk,
                seconds_pkey: cfg.seconds_pkey,
                commands: self.commands,
            },
            time_base: if cfg.threads > 1 || cfg.elapsed {
                TimeBase::Elapsed
            } else {
                TimeBase::UserCpu
            },
            threads: cfg.threads,
            block_sizes: sizes,
            bulk,
            public_key: self.public_key,
            notes,
        }
    }
}

fn cfg_block(cfg: &SuiteConfig) -> u32 {
    match cfg.sizes {
        crate::crypto::SizePlan::RowOnly { cipher_block } => cipher_block,
        crate::crypto::SizePlan::All => crate::results::crypto::ROW_CIPHER_BLOCK,
    }
}
