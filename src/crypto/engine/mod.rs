//! Engines: who performs the operations. `rustcrypto` (pure Rust, always built) and `openssl`
//! (EVP on the system libcrypto, loaded at run time) run in this process; `openssl-speed` runs
//! the `openssl` program (`crate::crypto::program`). `auto` (the default) takes libcrypto when it
//! loads, else the openssl program when there is one, else pure Rust, and says why. Each thread builds its own operation state; one
//! call performs a batch of `n` operations so dispatch costs nothing per operation.

pub mod libcrypto;
pub mod rustcrypto;

use crate::results::crypto::{Algorithm, EngineInfo};

/// Which engine to measure with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum EngineKind {
    /// The system libcrypto if it can be loaded (the wiki-comparable row), else pure Rust.
    #[value(name = "auto")]
    Auto,
    /// Pure Rust (RustCrypto crates); works on every target.
    #[value(name = "rustcrypto")]
    RustCrypto,
    /// The system libcrypto through EVP, like `openssl speed` (libcrypto.so.3 or .so.1.1,
    /// loaded at run time; not in a static build).
    #[value(name = "openssl")]
    Openssl,
    /// The `openssl` program (`openssl speed`, found on PATH or named by ROUTERBENCH_OPENSSL),
    /// its output read like `--import`; what a static build on a router with openssl-util uses.
    #[value(name = "openssl-speed")]
    OpensslSpeed,
}

/// Why an engine cannot run an algorithm.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// The engine lacks the algorithm; the suite reports 0 with this note.
    #[error("{0}")]
    Unavailable(String),
    /// The engine cannot be used at all.
    #[error("{0}")]
    NotBuilt(String),
    /// An operation failed (a bug or a broken library).
    #[error("{0}")]
    Failed(String),
    /// The run was stopped (SIGINT/SIGTERM) before its time was up.
    #[error("interrupted")]
    Interrupted,
}

/// Hashes or encrypts one block size, `n` times.
pub trait BulkOp {
    /// Performs `n` operations on `len` bytes (`len` ≤ 16384, a multiple of 16).
    fn run(&mut self, len: usize, n: u64) -> Result<(), EngineError>;
}

/// RSA/DSA on the fixed key: `n` signatures or `n` verifications.
pub trait SignOp {
    fn sign(&mut self, n: u64) -> Result<(), EngineError>;
    fn verify(&mut self, n: u64) -> Result<(), EngineError>;
}

/// A crypto implementation. Shared between the measuring threads.
pub trait Engine: Sync {
    fn info(&self) -> EngineInfo;
    /// A fresh hash/cipher state for one thread.
    fn bulk(&self, alg: Algorithm) -> Result<Box<dyn BulkOp>, EngineError>;
    /// A fresh signer (with one valid signature made) for one thread.
    fn signer(&self, alg: Algorithm) -> Result<Box<dyn SignOp>, EngineError>;
}

/// The largest block `openssl speed` uses; buffers are allocated once at this size.
pub const MAX_BLOCK: usize = 16384;

/// Builds the engine; `algorithms` lets it load only what is needed (OpenSSL's legacy provider).
pub fn create(kind: EngineKind, algorithms: &[Algorithm]) -> Result<Box<dyn Engine>, EngineError> {
    create_with(kind, algorithms, libcrypto::system)
}

/// [`create`] with the libcrypto loader given, so the fallback path can be tested directly.
pub fn create_with(
    kind: EngineKind,
    algorithms: &[Algorithm],
    load: impl FnOnce() -> Result<&'static libcrypto::Api, libcrypto::LoadError>,
) -> Result<Box<dyn Engine>, EngineError> {
    match kind {
        EngineKind::RustCrypto => Ok(Box::new(rustcrypto::RustCryptoEngine::default())),
        EngineKind::Openssl => match load() {
            Ok(api) => Ok(Box::new(libcrypto::LibcryptoEngine::new(api, algorithms)?)),
            Err(e) => Err(EngineError::NotBuilt(format!(
                "--engine openssl: {e}; install libcrypto (Debian: libssl3, OpenWrt: \
                 libopenssl3), use a dynamically linked routerbench, or use --engine openssl-speed (the openssl program) or --engine rustcrypto"
            ))),
        },
        EngineKind::Auto => match load() {
            Ok(api) => Ok(Box::new(libcrypto::LibcryptoEngine::new(api, algorithms)?)),
            Err(e) => Ok(Box::new(rustcrypto::RustCryptoEngine {
                fallback: Some(e.short().to_string()),
            })),
        },
        EngineKind::OpensslSpeed => Err(EngineError::NotBuilt(
            "the openssl program is not an in-process engine (crypto::program)".into(),
        )),
    }
}

/// The deterministic plaintext every engine hashes and encrypts (content does not change speed).
pub fn test_buffer(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 7 + 3) as u8).collect()
}

/// The 36-byte message RSA signs (openssl speed signs 36 bytes: an MD5+SHA1 TLS digest's size).
pub const RSA_MESSAGE_LEN: usize = 36;
/// The 20-byte message DSA signs (openssl speed's dsa "digest").
pub const DSA_MESSAGE_LEN: usize = 20;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_falls_back_to_rustcrypto_and_says_why() {
        let missing = || {
            libcrypto::load(&["/nonexistent/libcrypto.so.3".to_string()]).map(|api| {
                let leaked: &'static libcrypto::Api = Box::leak(Box::new(api));
                leaked
            })
        };
        let e = create_with(EngineKind::Auto, &Algorithm::ALL, missing).unwrap();
        let info = e.info();
        assert_eq!(info.name, "rustcrypto");
        assert_eq!(info.version, "RustCrypto (no libcrypto found)");
        assert!(!info.wiki_comparable());
        let mut op = e.bulk(Algorithm::Sha256).unwrap();
        op.run(64, 1).unwrap();

        let static_build = || Err(libcrypto::LoadError::StaticBuild);
        let info = create_with(EngineKind::Auto, &[], static_build)
            .unwrap()
            .info();
        assert_eq!(info.version, "RustCrypto (static build)");
    }

    #[test]
    fn openssl_without_libcrypto_is_an_error_that_says_what_to_do() {
        let missing = || Err(libcrypto::LoadError::NotFound { tried: "x".into() });
        let err = create_with(EngineKind::Openssl, &[], missing)
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("no libcrypto found"), "{err}");
        assert!(err.contains("--engine rustcrypto"), "{err}");
    }

    #[test]
    fn auto_takes_libcrypto_when_it_loads() {
        if libcrypto::static_build() {
            return;
        }
        let info = create(EngineKind::Auto, &Algorithm::ALL).unwrap().info();
        assert_eq!(info.name, "openssl");
        assert!(info.version.starts_with("OpenSSL "), "{}", info.version);
        assert!(info.wiki_comparable());
    }
}
