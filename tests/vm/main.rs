//! Integration tests of the VM router (qemu): one VM at a time; a binary of its own so no other
//! test shares the machine with a booting VM.
//!
//! One test binary with a module per former binary (`cargo test --test vm MODULE::` runs one),
//! to link once instead of once per file; the shared helpers are in tests/support/.

// Tests may unwrap, expect and panic; clippy.toml's in-tests allowance does not reach an
// integration test's helper functions (rust-clippy #13981), so the crate root says it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

// The crate root of each binary is its own directory; tests/support/ is beside them.
#[path = "../support/mod.rs"]
mod support;

#[cfg(feature = "lab")]
mod lab_vm;
#[cfg(feature = "lab")]
mod lab_wifi;
