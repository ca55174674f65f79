//! Integration tests of the latency tests, flent's new tests and RPM (over our protocol and over
//! HTTP/2 with nginx).
//!
//! One test binary with a module per former binary (`cargo test --test latency MODULE::` runs one),
//! to link once instead of once per file; the shared helpers are in tests/support/.

// Tests may unwrap, expect and panic; clippy.toml's in-tests allowance does not reach an
// integration test's helper functions (rust-clippy #13981), so the crate root says it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

// The crate root of each binary is its own directory; tests/support/ is beside them.
#[path = "../support/mod.rs"]
mod support;

mod flent_new_tests;
mod latency_bad_input;
mod latency_cpu_load;
mod latency_netns_tbf;
mod latency_rrul_e2e;
mod rpm_e2e;
mod rpm_https;
