//! Latency under load: the RRUL family of tests (rrul, rrul_be, tcp_nup, tcp_ndown, ping) over
//! routerbench's own protocol, with kernel-timestamped UDP probes, ICMP, per-flow DSCP and
//! congestion control, clock sync for one-way delays, and flent-compatible series.
//!
//! Client: `runner` (timeline) → `flows` (TCP load) + `probe` (UDP/ICMP) → `summary` (result).
//! Server: `server` (sessions, limits; hosted by the shared `crate::server`) + `reflector` (UDP).

pub mod conn;
pub mod flows;
pub mod icmp;
pub mod plan;
pub mod probe;
pub mod reflector;
pub mod runner;
pub mod server;
mod server_load;
pub mod stats;
pub mod summary;

pub use plan::TestKind;
pub use runner::{IpPref, LatencyError, TestConfig, run_test};
