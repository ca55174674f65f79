//! The crypto speed suite (docs/crypto.md): the `openssl speed` methodology on two in-process
//! engines (pure-Rust RustCrypto, and the system libcrypto loaded at run time) and on the
//! `openssl` program itself, the timing loop, and the import of saved `openssl speed` output.
//! Measuring code here never prints.

pub mod engine;
pub mod import;
pub mod keys;
pub mod load;
pub mod program;
pub mod timing;

use crate::results::crypto::{
    Algorithm, AlgorithmKind, BulkResult, CryptoResult, CryptoSource, EngineInfo, PublicKeyResult,
    ROW_CIPHER_BLOCK, TimeBase, WIREGUARD_BLOCK,
};
use crate::util::progress::Progress;
use engine::{Engine, EngineError, EngineKind};

/// `openssl speed`'s block sizes (`lengths[]` in apps/speed.c).
pub const BLOCK_SIZES: [u32; 6] = [16, 64, 256, 1024, 8192, 16384];
/// openssl speed's default seconds per block size (`SECONDS`).
pub const DEFAULT_SECONDS_BULK: f64 = 3.0;
/// openssl speed's default seconds per RSA/DSA sign or verify run (`PKEY_SECONDS`).
pub const DEFAULT_SECONDS_PKEY: f64 = 10.0;
/// The longest run per test accepted (one hour).
pub const MAX_SECONDS: f64 = 3600.0;

/// Which block sizes a run measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SizePlan {
    /// All six sizes, like `openssl speed` (16 … 16384 bytes).
    All,
    /// Only what the OpenWrt row shows: hashes at 1024 bytes, ciphers at `cipher_block`.
    RowOnly { cipher_block: u32 },
}

/// What to measure and how.
#[derive(Debug, Clone)]
pub struct SuiteConfig {
    pub engine: EngineKind,
    /// In any order; measured in the table's order.
    pub algorithms: Vec<Algorithm>,
    /// Seconds per block size of a hash/cipher.
    pub seconds_bulk: f64,
    /// Seconds per RSA/DSA sign run and per verify run.
    pub seconds_pkey: f64,
    pub sizes: SizePlan,
    /// Threads run at once per test; their rates are summed (implies wall-clock time base).
    pub threads: u32,
    /// Divide by wall-clock time instead of the thread's user CPU time.
    pub elapsed: bool,
    /// Set (by SIGINT/SIGTERM) to stop after the algorithm being measured; the result keeps
    /// the algorithms done so far and says so in its notes.
    pub interrupt: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>,
}

impl Default for SuiteConfig {
    fn default() -> Self {
        Self {
            engine: EngineKind::Auto,
            algorithms: Algorithm::EVERY.to_vec(),
            seconds_bulk: DEFAULT_SECONDS_BULK,
            seconds_pkey: DEFAULT_SECONDS_PKEY,
            sizes: SizePlan::All,
            threads: 1,
            elapsed: false,
            interrupt: None,
        }
    }
}

impl SuiteConfig {
    /// What `routerbench run` uses: every algorithm (the row's and WireGuard's), only the row's
    /// columns, `seconds` each.
    pub fn row_only(engine: EngineKind, seconds: f64) -> Self {
        Self {
            engine,
            seconds_bulk: seconds,
            seconds_pkey: seconds,
            sizes: SizePlan::RowOnly {
                cipher_block: ROW_CIPHER_BLOCK,
            },
            ..Self::default()
        }
    }
}

/// Why a crypto run or import failed.
#[derive(Debug, thiserror::Error)]
pub enum CryptoError {
    #[error("unknown algorithm `{given}`: valid algorithms are {valid}")]
    UnknownAlgorithm { given: String, valid: String },
    #[error("{0}")]
    Config(String),
    #[error(transparent)]
    Engine(#[from] EngineError),
    #[error(transparent)]
    Import(#[from] import::ImportError),
    #[error("--engine openssl-speed: {0}")]
    Program(program::ProgramError),
}

/// Parses a comma list such as `md5,aes-128-cbc,rsa2048` (also `des-cbc`, `des-ede3-cbc`, `rsa`,
/// `dsa`, and the groups `all` (all thirteen), `table` (the wiki row's eleven) and `wireguard`
/// (chacha20-poly1305, aes-128-gcm)). An unknown name is an error listing the valid ones.
pub fn parse_algorithms(list: &str) -> Result<Vec<Algorithm>, CryptoError> {
    let mut out = Vec::new();
    for raw in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let name = raw.to_ascii_lowercase();
        match name.as_str() {
            "all" => {
                out.extend(Algorithm::EVERY);
                continue;
            }
            "table" | "wiki" => {
                out.extend(Algorithm::ALL);
                continue;
            }
            "wireguard" => {
                out.extend(Algorithm::WIREGUARD);
                continue;
            }
            _ => {}
        }
        let alg = Algorithm::EVERY
            .into_iter()
            .find(|a| a.cli_name() == name || a.label_v3() == name)
            .or(match name.as_str() {
                "des-ede3-cbc" | "3des" => Some(Algorithm::DesEde3),
                "chacha20poly1305" | "chacha" => Some(Algorithm::Chacha20Poly1305),
                _ => None,
            });
        match alg {
            Some(a) => out.push(a),
            None => {
                return Err(CryptoError::UnknownAlgorithm {
                    given: raw.to_string(),
                    valid: valid_algorithm_list(),
                });
            }
        }
    }
    if out.is_empty() {
        return Err(CryptoError::UnknownAlgorithm {
            given: list.to_string(),
            valid: valid_algorithm_list(),
        });
    }
    out.sort();
    out.dedup();
    Ok(out)
}

/// `md5, sha1, …, aes-128-gcm` (and the groups) for error messages and help.
pub fn valid_algorithm_list() -> String {
    let names: Vec<&str> = Algorithm::EVERY.iter().map(|a| a.cli_name()).collect();
    format!("{} (groups: all, table, wireguard)", names.join(", "))
}

/// Runs the suite: every requested algorithm at the planned sizes, `threads` at once, on the
/// engine `cfg.engine` picks (see [`engine`]). Progress goes to `progress`; nothing is printed.
pub fn run_suite(cfg: &SuiteConfig, progress: &dyn Progress) -> Result<CryptoResult, CryptoError> {
    run_suite_with(cfg, progress, engine::libcrypto::system, program::find)
}

/// [`run_suite`] with the libcrypto loader and the openssl program finder given, so that every
/// way `auto` can go is testable.
pub fn run_suite_with(
    cfg: &SuiteConfig,
    progress: &dyn Progress,
    load: impl FnOnce() -> Result<&'static engine::libcrypto::Api, engine::libcrypto::LoadError>,
    find: impl FnOnce() -> Result<program::Program, program::ProgramError>,
) -> Result<CryptoResult, CryptoError> {
    check_config(cfg)?;
    let mut algorithms = cfg.algorithms.clone();
    algorithms.sort();
    algorithms.dedup();
    match cfg.engine {
        EngineKind::OpensslSpeed => {
            let prog = find().map_err(CryptoError::Program)?;
            program_run(&prog, cfg, &algorithms, progress).map_err(CryptoError::Program)
        }
        EngineKind::Auto => match load() {
            Ok(api) => {
                let e = engine::libcrypto::LibcryptoEngine::new(api, &algorithms)?;
                measure_in_process(&e, cfg, &algorithms, progress)
            }
            Err(load_err) => auto_without_libcrypto(cfg, &algorithms, progress, &load_err, find),
        },
        kind => {
            let e = engine::create_with(kind, &algorithms, load)?;
            measure_in_process(e.as_ref(), cfg, &algorithms, progress)
        }
    }
}

/// `auto` where libcrypto cannot be loaded: the openssl program if there is one and it gives a
/// complete row, else RustCrypto with the reasons in the Engine cell and the notes.
fn auto_without_libcrypto(
    cfg: &SuiteConfig,
    algorithms: &[Algorithm],
    progress: &dyn Progress,
    load_err: &engine::libcrypto::LoadError,
    find: impl FnOnce() -> Result<program::Program, program::ProgramError>,
) -> Result<CryptoResult, CryptoError> {
    let (fallback, note) = match find() {
        Ok(prog) => match program_run(&prog, cfg, algorithms, progress) {
            Ok(r) => return Ok(r),
            Err(e) => (
                format!("{}, openssl speed failed", load_err.short()),
                format!("the openssl program gave no usable row, so RustCrypto measured: {e}"),
            ),
        },
        Err(e @ (program::ProgramError::NotFound | program::ProgramError::Disabled)) => (
            load_err.short().to_string(),
            format!("{load_err}, and {e}: RustCrypto measured"),
        ),
        Err(e) => (
            format!("{}, openssl speed failed", load_err.short()),
            format!("the openssl program is unusable, so RustCrypto measured: {e}"),
        ),
    };
    let e = engine::rustcrypto::RustCryptoEngine {
        fallback: Some(fallback),
    };
    let mut r = measure_in_process(&e, cfg, algorithms, progress)?;
    r.notes.insert(0, note);
    Ok(r)
}

/// The openssl program; Ctrl-C during it keeps an (empty) result that says so.
fn program_run(
    prog: &program::Program,
    cfg: &SuiteConfig,
    algorithms: &[Algorithm],
    progress: &dyn Progress,
) -> Result<CryptoResult, program::ProgramError> {
    match program::run(prog, cfg, algorithms, progress) {
        Err(e) if e.is_interrupt() => {
            let info = EngineInfo {
                name: "openssl-speed".into(),
                version: format!("{} (openssl speed)", prog.version.short),
            };
            let base = if cfg.threads > 1 || cfg.elapsed {
                TimeBase::Elapsed
            } else {
                TimeBase::UserCpu
            };
            let mut r = empty_result(cfg, info, base, algorithms);
            r.block_sizes.clear();
            r.notes.push(format!(
                "interrupted (SIGINT/SIGTERM) while openssl speed ran: nothing measured ({e})"
            ));
            Ok(r)
        }
        other => other,
    }
}

/// Measures every algorithm on an in-process engine.
fn measure_in_process(
    engine: &dyn Engine,
    cfg: &SuiteConfig,
    algorithms: &[Algorithm],
    progress: &dyn Progress,
) -> Result<CryptoResult, CryptoError> {
    let base = if cfg.elapsed || cfg.threads > 1 {
        TimeBase::Elapsed
    } else {
        TimeBase::UserCpu
    };
    let mut result = empty_result(cfg, engine.info(), base, algorithms);
    let total = algorithms.len() as u64;
    progress.phase("crypto", total);
    let mut coarse_clock = false;
    for (i, &alg) in algorithms.iter().enumerate() {
        if cfg
            .interrupt
            .as_ref()
            .is_some_and(|f| f.load(std::sync::atomic::Ordering::Relaxed))
        {
            result.notes.push(format!(
                "interrupted (SIGINT/SIGTERM) after {i} of {total} algorithms: the rest are missing"
            ));
            break;
        }
        progress.step(i as u64, alg.cli_name());
        let measured = measure_one(engine, alg, &mut result, cfg, base);
        match measured {
            Ok(coarse) => coarse_clock |= coarse,
            Err(CryptoError::Engine(EngineError::Interrupted)) => {
                result.notes.push(format!(
                    "interrupted (SIGINT/SIGTERM) during {} ({i} of {total} algorithms done): \
                     it and the rest are missing",
                    alg.cli_name()
                ));
                break;
            }
            Err(e) => return Err(e),
        }
    }
    progress.step(total, "done");
    progress.finish();
    if coarse_clock {
        result.notes.push(
            "some runs used less than 1 ms of CPU time; their rates are per wall-clock second"
                .into(),
        );
    }
    Ok(result)
}

/// Measures one algorithm into `result`; whether a run's clock was coarse.
fn measure_one(
    engine: &dyn engine::Engine,
    alg: Algorithm,
    result: &mut CryptoResult,
    cfg: &SuiteConfig,
    base: TimeBase,
) -> Result<bool, CryptoError> {
    let mut coarse_clock = false;
    {
        match alg.kind() {
            AlgorithmKind::Hash | AlgorithmKind::Cipher | AlgorithmKind::Aead => {
                let (bulk, coarse) =
                    measure_bulk_sizes(engine, alg, &result.block_sizes, cfg, base)?;
                coarse_clock |= coarse;
                if let Some(n) = &bulk.note {
                    result.notes.push(format!("{}: {n}", alg.cli_name()));
                }
                result.bulk.push(bulk);
            }
            AlgorithmKind::PublicKey => {
                let (sign, verify) = timing::measure_pkey(engine, alg, cfg, base)?;
                coarse_clock |= sign.coarse_clock || verify.coarse_clock;
                result.public_key.push(PublicKeyResult {
                    algorithm: alg,
                    bits: alg.bits(),
                    sign_per_sec: sign.per_sec,
                    verify_per_sec: verify.per_sec,
                    note: None,
                });
            }
        }
    }
    Ok(coarse_clock)
}

/// The run's bounds: seconds (so the timing loop's Duration conversion can never overflow)
/// and threads.
pub fn check_config(cfg: &SuiteConfig) -> Result<(), CryptoError> {
    let positive = |s: f64| s.is_finite() && s > 0.0 && s <= MAX_SECONDS;
    if !positive(cfg.seconds_bulk) || !positive(cfg.seconds_pkey) {
        return Err(CryptoError::Config(format!(
            "seconds must be a positive number up to {MAX_SECONDS}, got {} / {}",
            cfg.seconds_bulk, cfg.seconds_pkey
        )));
    }
    if cfg.threads == 0 || cfg.threads > 1024 {
        return Err(CryptoError::Config(format!(
            "--multi must be between 1 and 1024, got {}",
            cfg.threads
        )));
    }
    Ok(())
}

/// The result before any measurement: engine, time base, the block sizes of the plan (only
/// those some requested algorithm is measured at), and the note `--multi` needs.
fn empty_result(
    cfg: &SuiteConfig,
    engine: EngineInfo,
    base: TimeBase,
    algorithms: &[Algorithm],
) -> CryptoResult {
    let mut block_sizes: Vec<u32> = BLOCK_SIZES
        .iter()
        .copied()
        .chain([WIREGUARD_BLOCK])
        .filter(|&s| algorithms.iter().any(|&a| wanted_size(cfg.sizes, a, s)))
        .collect();
    block_sizes.sort();
    block_sizes.dedup();
    let mut notes = Vec::new();
    if cfg.threads > 1 {
        notes.push(format!(
            "{} threads at once, rates summed, per wall-clock second (like openssl speed -multi)",
            cfg.threads
        ));
    }
    CryptoResult {
        engine,
        source: CryptoSource::Measured {
            seconds_bulk: cfg.seconds_bulk,
            seconds_pkey: cfg.seconds_pkey,
            commands: Vec::new(),
        },
        time_base: base,
        threads: cfg.threads,
        block_sizes,
        bulk: Vec::new(),
        public_key: Vec::new(),
        notes,
    }
}

/// Whether the plan measures `alg` at block size `size`: an AEAD only at [`WIREGUARD_BLOCK`]
/// (one WireGuard packet), the others at openssl's six sizes, or only at the row's one.
fn wanted_size(plan: SizePlan, alg: Algorithm, size: u32) -> bool {
    match (alg.kind(), plan) {
        (AlgorithmKind::PublicKey, _) => false,
        (AlgorithmKind::Aead, _) => size == WIREGUARD_BLOCK,
        (_, SizePlan::All) => BLOCK_SIZES.contains(&size),
        (_, SizePlan::RowOnly { cipher_block }) => Some(size) == alg.row_block(cipher_block),
    }
}

/// One hash or cipher at each of `block_sizes` the plan measures (the others stay `None`);
/// an engine without the algorithm gives 0 and a note. Also says whether a run fell back to
/// wall time.
fn measure_bulk_sizes(
    engine: &dyn Engine,
    alg: Algorithm,
    block_sizes: &[u32],
    cfg: &SuiteConfig,
    base: TimeBase,
) -> Result<(BulkResult, bool), CryptoError> {
    let wanted = |s: u32| wanted_size(cfg.sizes, alg, s);
    let mut rates = Vec::with_capacity(block_sizes.len());
    let mut note = None;
    let mut coarse_clock = false;
    for &size in block_sizes {
        if !wanted(size) {
            rates.push(None);
            continue;
        }
        match timing::measure_bulk(engine, alg, size as usize, cfg, base) {
            Ok(m) => {
                coarse_clock |= m.coarse_clock;
                rates.push(Some(m.per_sec * size as f64));
            }
            Err(EngineError::Unavailable(why)) => {
                rates.push(Some(0.0));
                note = Some(why);
            }
            Err(e) => return Err(e.into()),
        }
    }
    let bulk = BulkResult {
        algorithm: alg,
        bytes_per_sec: rates,
        note,
    };
    Ok((bulk, coarse_clock))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_lists_and_aliases() {
        let a = parse_algorithms("rsa2048, md5,des,des-ede3-cbc,md5").unwrap();
        assert_eq!(
            a,
            vec![
                Algorithm::Md5,
                Algorithm::DesCbc,
                Algorithm::DesEde3,
                Algorithm::Rsa2048
            ]
        );
        assert_eq!(parse_algorithms("all").unwrap().len(), 13);
        assert_eq!(parse_algorithms("table").unwrap().len(), 11);
        assert_eq!(
            parse_algorithms("wireguard,AES-128-GCM").unwrap(),
            vec![Algorithm::Chacha20Poly1305, Algorithm::Aes128Gcm]
        );
        assert_eq!(
            parse_algorithms("DES-CBC").unwrap(),
            vec![Algorithm::DesCbc]
        );
    }

    #[test]
    fn unknown_algorithm_lists_the_valid_ones() {
        let e = parse_algorithms("md5,aes-256-gcm").unwrap_err().to_string();
        assert!(e.contains("`aes-256-gcm`"), "{e}");
        assert!(e.contains("chacha20-poly1305, aes-128-gcm"), "{e}");
        assert!(
            e.contains("md5, sha1, sha256, sha512, des, des-ede3"),
            "{e}"
        );
        assert!(e.contains("dsa2048"), "{e}");
        assert!(parse_algorithms(" , ").is_err());
    }

    #[test]
    fn rejects_bad_seconds_and_threads() {
        let cfg = SuiteConfig {
            seconds_bulk: 0.0,
            ..SuiteConfig::default()
        };
        let noop = crate::util::progress::NoProgress;
        assert!(run_suite(&cfg, &noop).is_err());
        for bad in [f64::NAN, f64::INFINITY, -1.0, 1e30] {
            let cfg = SuiteConfig {
                seconds_pkey: bad,
                ..SuiteConfig::default()
            };
            assert!(run_suite(&cfg, &noop).is_err(), "{bad}");
        }
        let cfg = SuiteConfig {
            threads: 0,
            ..SuiteConfig::default()
        };
        assert!(run_suite(&cfg, &noop).is_err());
    }
}
