//! Engines: who performs the operations. `rustcrypto` (pure Rust, always built) and `openssl`
//! (EVP on the system libcrypto, cargo feature `openssl`). Each thread builds its own operation
//! state; one call performs a batch of `n` operations so dispatch costs nothing per operation.

pub mod rustcrypto;

#[cfg(feature = "openssl")]
pub mod openssl;

use crate::results::crypto::{Algorithm, EngineInfo};

/// Which engine to measure with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum EngineKind {
    /// Pure Rust (RustCrypto crates); works on every target.
    #[value(name = "rustcrypto")]
    RustCrypto,
    /// The system libcrypto through EVP, like `openssl speed` (needs the `openssl` feature).
    #[value(name = "openssl")]
    Openssl,
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
    match kind {
        EngineKind::RustCrypto => {
            let _ = algorithms;
            Ok(Box::new(rustcrypto::RustCryptoEngine))
        }
        #[cfg(feature = "openssl")]
        EngineKind::Openssl => Ok(Box::new(openssl::OpensslEngine::new(algorithms)?)),
        #[cfg(not(feature = "openssl"))]
        EngineKind::Openssl => Err(EngineError::NotBuilt(
            "this routerbench was built without the `openssl` engine: rebuild with \
             `cargo build --release --features openssl` (needs libssl-dev), or use \
             `--engine rustcrypto`"
                .into(),
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
