//! Integration tests of the crypto benchmark: its command line, importing other tools' results, the
//! program engine.
//!
//! One test binary with a module per former binary (`cargo test --test crypto MODULE::` runs one),
//! to link once instead of once per file; the shared helpers are in tests/support/.

mod crypto_cli;
mod crypto_import;
mod crypto_program;
