//! Integration tests of the server under hostile clients and while sending.
//!
//! One test binary with a module per former binary (`cargo test --test server MODULE::` runs one),
//! to link once instead of once per file; the shared helpers are in tests/support/.

// Tests may unwrap, expect and panic; clippy.toml's in-tests allowance does not reach an
// integration test's helper functions (rust-clippy #13981), so the crate root says it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

// The crate root of each binary is its own directory; tests/support/ is beside them.
#[path = "../support/mod.rs"]
mod support;

mod server_attacks;
mod server_http;
mod server_sending;
mod server_web;
