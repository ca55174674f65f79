//! The crypto benchmark's results: byte rates per algorithm and block size, public-key ops/s.
//! (Filled in by the crypto work; see spec/crypto.md.)

use serde::{Deserialize, Serialize};

/// Placeholder shape, replaced by the crypto implementation.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CryptoResult {
    pub engine: String,
}
