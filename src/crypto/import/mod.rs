//! Import of saved `openssl speed` output.

#[derive(Debug, thiserror::Error)]
#[error("x")]
pub struct ImportError;
