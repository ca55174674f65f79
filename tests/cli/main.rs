//! Integration tests of the command line: device, inputs refused, outputs written, run, interrupts
//! that save, stress, the results schema.
//!
//! One test binary with a module per former binary (`cargo test --test cli MODULE::` runs one),
//! to link once instead of once per file; the shared helpers are in tests/support/.

// Tests may unwrap, expect and panic; clippy.toml's in-tests allowance does not reach an
// integration test's helper functions (rust-clippy #13981), so the crate root says it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

// The crate root of each binary is its own directory; tests/support/ is beside them.
#[path = "../support/mod.rs"]
mod support;

mod cli_device;
mod cli_inputs;
mod cli_outputs;
mod cli_run;
mod cli_wifi;
mod interrupt_saves;
mod results_schema;
mod stress_cli;
