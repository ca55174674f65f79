//! Integration tests of the crypto benchmark: its command line, importing other tools' results, the
//! program engine.
//!
//! One test binary with a module per former binary (`cargo test --test crypto MODULE::` runs one),
//! to link once instead of once per file; the shared helpers are in tests/support/.

// Tests may unwrap, expect and panic; clippy.toml's in-tests allowance does not reach an
// integration test's helper functions (rust-clippy #13981), so the crate root says it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod crypto_cli;
mod crypto_import;
mod crypto_program;
mod crypto_validity;
