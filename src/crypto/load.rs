//! Crypto as a load: one algorithm on N threads (one per core, pinned) until told to stop, with
//! a counter of the work done that the caller reads as often as it likes, for `routerbench
//! stress`. The same engines and operations as the speed suite; the rate is per wall-clock
//! second (a throttled core does less work per second, which is what a stress test watches).

use super::CryptoError;
use super::engine::{self, EngineError, EngineKind};
use crate::results::crypto::{Algorithm, AlgorithmKind, EngineInfo};
use portable_atomic::AtomicU64;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// What to run.
#[derive(Debug, Clone)]
pub struct LoadConfig {
    pub engine: EngineKind,
    pub algorithm: Algorithm,
    /// Threads; 0 = one per CPU this process may use.
    pub threads: u32,
    /// Pin thread i to the i-th allowed CPU.
    pub pin: bool,
    /// Block size of a hash or cipher, bytes (a multiple of 16, at most 16384).
    pub block: usize,
}

impl Default for LoadConfig {
    fn default() -> Self {
        Self {
            engine: EngineKind::Auto,
            algorithm: Algorithm::Aes128Cbc,
            threads: 0,
            pin: true,
            block: engine::MAX_BLOCK,
        }
    }
}

/// A running load.
pub struct CryptoLoad {
    stop: Arc<AtomicBool>,
    done: Arc<Vec<AtomicU64>>,
    handle: Option<JoinHandle<Result<(), EngineError>>>,
    /// The engine that runs (its Engine cell).
    pub info: EngineInfo,
    pub threads: u32,
    /// True if every thread was pinned to a core of its own.
    pub pinned: bool,
    /// Bytes per unit of work (`Some(block)` for hashes and ciphers; `None`: signatures).
    pub block_bytes: Option<u32>,
}

/// A batch grows until it takes this long, so the counter moves smoothly.
const BATCH: Duration = Duration::from_millis(5);

impl CryptoLoad {
    /// Builds the engine, checks the algorithm on it, then starts the threads. Errors (no
    /// libcrypto for `--engine openssl`, an algorithm the engine lacks) come before any thread.
    pub fn start(cfg: &LoadConfig) -> Result<Self, CryptoError> {
        if cfg.block == 0 || cfg.block % 16 != 0 || cfg.block > engine::MAX_BLOCK {
            return Err(CryptoError::Config(format!(
                "block size must be a multiple of 16 up to {}, got {}",
                engine::MAX_BLOCK,
                cfg.block
            )));
        }
        if cfg.engine == EngineKind::OpensslSpeed {
            // `openssl speed` reports once, when it ends: a load needs a count that moves.
            return Err(CryptoError::Config(
                "--engine openssl-speed runs the openssl program, which reports only when it \
                 ends, so its rate cannot be followed during a stress run; use --engine openssl \
                 (libcrypto, the same code in this process), auto or rustcrypto"
                    .into(),
            ));
        }
        let cpus = crate::util::affinity::allowed_cpus().unwrap_or_default();
        let threads = match cfg.threads {
            0 => cpus.len().max(1) as u32,
            n => n.min(1024),
        };
        let pkey = cfg.algorithm.kind() == AlgorithmKind::PublicKey;
        let stop = Arc::new(AtomicBool::new(false));
        let done: Arc<Vec<AtomicU64>> = Arc::new((0..threads).map(|_| AtomicU64::new(0)).collect());
        // The engine is built (and checked) on the thread that owns it; the answer comes back
        // before the workers start.
        let (tx, rx) = std::sync::mpsc::sync_channel::<Result<(EngineInfo, bool), EngineError>>(1);
        let (cfg2, stop2, done2) = (cfg.clone(), stop.clone(), done.clone());
        let handle = std::thread::Builder::new()
            .name("rb-crypto-load".into())
            .spawn(move || run(&cfg2, threads, &cpus, &stop2, &done2, &tx))
            .map_err(|e| CryptoError::Config(format!("cannot start the crypto load: {e}")))?;
        match rx.recv() {
            Ok(Ok((info, pinned))) => Ok(Self {
                stop,
                done,
                handle: Some(handle),
                info,
                threads,
                pinned,
                block_bytes: (!pkey).then_some(cfg.block as u32),
            }),
            Ok(Err(e)) => {
                let _ = handle.join();
                Err(e.into())
            }
            Err(_) => Err(match handle.join() {
                Ok(Err(e)) => e.into(),
                _ => CryptoError::Config("the crypto load thread failed".into()),
            }),
        }
    }

    /// Work done so far over all threads: bytes (hashes, ciphers) or signatures.
    pub fn done(&self) -> u64 {
        self.done.iter().map(|c| c.load(Ordering::Relaxed)).sum()
    }

    /// True if the threads ended by themselves (an operation failed; `stop` says why).
    pub fn failed(&self) -> bool {
        self.handle.as_ref().is_some_and(JoinHandle::is_finished)
    }

    /// Stops the threads; the first error a thread met, if any.
    pub fn stop(mut self) -> Result<(), EngineError> {
        self.stop.store(true, Ordering::Relaxed);
        match self.handle.take().map(JoinHandle::join) {
            Some(Ok(r)) => r,
            Some(Err(_)) => Err(EngineError::Failed(
                "a crypto load thread panicked; please report this as a bug".into(),
            )),
            None => Ok(()),
        }
    }
}

impl Drop for CryptoLoad {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// The owner thread: engine, check, workers until `stop`.
fn run(
    cfg: &LoadConfig,
    threads: u32,
    cpus: &[usize],
    stop: &AtomicBool,
    done: &[AtomicU64],
    ready: &std::sync::mpsc::SyncSender<Result<(EngineInfo, bool), EngineError>>,
) -> Result<(), EngineError> {
    let alg = cfg.algorithm;
    let checked = engine::create(cfg.engine, &[alg]).and_then(|e| {
        // One operation here, so an algorithm the engine lacks fails before the workers.
        if alg.kind() == AlgorithmKind::PublicKey {
            e.signer(alg)?.sign(1)?;
        } else {
            e.bulk(alg)?.run(cfg.block, 1)?;
        }
        Ok(e)
    });
    let engine = match checked {
        Ok(e) => e,
        Err(e) => {
            let _ = ready.send(Err(EngineError::Failed(e.to_string())));
            return Err(e);
        }
    };
    let pinned = cfg.pin && cpus.len() >= threads as usize;
    let _ = ready.send(Ok((engine.info(), pinned)));
    let engine = engine.as_ref();
    let results: Vec<Result<(), EngineError>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads as usize)
            .map(|i| {
                let counter = &done[i];
                let cpu = cpus.get(i).copied().filter(|_| pinned);
                std::thread::Builder::new()
                    .name(format!("rb-crypto{i}"))
                    .spawn_scoped(scope, move || {
                        if let Some(c) = cpu {
                            let _ = crate::util::affinity::pin_current_thread(c);
                        }
                        worker(engine, alg, cfg.block, counter, stop)
                    })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| match h {
                Ok(h) => h.join().unwrap_or_else(|_| {
                    Err(EngineError::Failed("a crypto load thread panicked".into()))
                }),
                Err(e) => Err(EngineError::Failed(format!(
                    "cannot start a crypto load thread: {e}"
                ))),
            })
            .collect()
    });
    // One failed worker ends them all (a half load would look like throttling).
    results.into_iter().find(Result::is_err).unwrap_or(Ok(()))
}

/// One thread: batches of operations until `stop`, adding the work done to `counter`.
fn worker(
    engine: &dyn engine::Engine,
    alg: Algorithm,
    block: usize,
    counter: &AtomicU64,
    stop: &AtomicBool,
) -> Result<(), EngineError> {
    let pkey = alg.kind() == AlgorithmKind::PublicKey;
    let mut bulk = if pkey { None } else { Some(engine.bulk(alg)?) };
    let mut signer = if pkey {
        Some(engine.signer(alg)?)
    } else {
        None
    };
    let mut n = 1u64;
    while !stop.load(Ordering::Relaxed) {
        let t = Instant::now();
        let r = match (&mut bulk, &mut signer) {
            (Some(op), _) => op.run(block, n),
            (_, Some(op)) => op.sign(n),
            _ => Ok(()),
        };
        if let Err(e) = r {
            stop.store(true, Ordering::Relaxed);
            return Err(e);
        }
        let unit = if pkey { 1 } else { block as u64 };
        counter.fetch_add(n * unit, Ordering::Relaxed);
        if t.elapsed() < BATCH && n < (1 << 20) {
            n *= 2;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_on_every_thread_until_stopped_and_counts_bytes() {
        let load = CryptoLoad::start(&LoadConfig {
            engine: EngineKind::RustCrypto,
            algorithm: Algorithm::Sha256,
            threads: 2,
            block: 1024,
            ..LoadConfig::default()
        })
        .unwrap();
        assert_eq!(load.threads, 2);
        assert_eq!(load.block_bytes, Some(1024));
        assert_eq!(load.info.name, "rustcrypto");
        let until = Instant::now() + Duration::from_secs(5);
        while load.done() < 1 << 20 && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(20));
        }
        let a = load.done();
        assert!(a >= 1 << 20, "{a} bytes in 5 s");
        assert_eq!(a % 1024, 0, "whole blocks");
        assert!(!load.failed());
        load.stop().unwrap();
    }

    #[test]
    fn signatures_are_counted_as_operations() {
        let load = CryptoLoad::start(&LoadConfig {
            engine: EngineKind::RustCrypto,
            algorithm: Algorithm::Dsa2048,
            threads: 1,
            pin: false,
            ..LoadConfig::default()
        })
        .unwrap();
        assert_eq!(load.block_bytes, None);
        let until = Instant::now() + Duration::from_secs(10);
        while load.done() < 2 && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(load.done() >= 2);
        load.stop().unwrap();
    }

    #[test]
    fn bad_block_and_missing_engine_fail_before_any_thread() {
        let e = CryptoLoad::start(&LoadConfig {
            block: 100,
            ..LoadConfig::default()
        })
        .err()
        .unwrap();
        assert!(e.to_string().contains("multiple of 16"), "{e}");
        let e = CryptoLoad::start(&LoadConfig {
            engine: EngineKind::OpensslSpeed,
            ..LoadConfig::default()
        })
        .err()
        .unwrap();
        assert!(e.to_string().contains("--engine openssl"), "{e}");
        if crate::crypto::engine::libcrypto::static_build() {
            let e = CryptoLoad::start(&LoadConfig {
                engine: EngineKind::Openssl,
                ..LoadConfig::default()
            })
            .err()
            .unwrap();
            assert!(e.to_string().contains("--engine rustcrypto"), "{e}");
        }
    }
}
