//! Integration tests of iperf3 compatibility: the client and server against Debian's iperf3,
//! authentication, bad input, affinity, JSON schema, loopback.
//!
//! One test binary with a module per former binary (`cargo test --test iperf3 MODULE::` runs one),
//! to link once instead of once per file; the shared helpers are in tests/support/.

// Tests may unwrap, expect and panic; clippy.toml's in-tests allowance does not reach an
// integration test's helper functions (rust-clippy #13981), so the crate root says it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

// The crate root of each binary is its own directory; tests/support/ is beside them.
#[path = "../support/mod.rs"]
mod support;

mod iperf3_affinity;
mod iperf3_auth;
mod iperf3_badinput;
mod iperf3_cli;
mod iperf3_interop;
mod iperf3_json_schema;
mod iperf3_loopback;
