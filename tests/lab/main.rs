//! Integration tests of the network-namespace lab (root, iproute2 and nft; each test says why it
//! skips otherwise).
//!
//! One test binary with a module per former binary (`cargo test --test lab MODULE::` runs one),
//! to link once instead of once per file; the shared helpers are in tests/support/.

// Tests may unwrap, expect and panic; clippy.toml's in-tests allowance does not reach an
// integration test's helper functions (rust-clippy #13981), so the crate root says it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

// The crate root of each binary is its own directory; tests/support/ is beside them.
#[path = "../support/mod.rs"]
mod support;

mod lab_aqm;
mod lab_capacity;
mod lab_inputs;
mod lab_measure;
mod lab_monitor_agent;
mod lab_phases;
mod lab_prometheus;
#[cfg(feature = "lab")]
mod lab_rpm;
mod lab_rrul;
mod lab_stress_agent;
mod lab_topology;
mod lab_web;
