//! Latency under load: the RRUL family of tests (rrul, rrul_be, tcp_nup, tcp_ndown, ping) over
//! routerbench's own protocol, with kernel-timestamped UDP probes, ICMP, per-flow DSCP and
//! congestion control, clock sync for one-way delays, and flent-compatible series.
//!
//! Client: `runner` (set-up, timeline, collection) with `control` (handshake, step reports) →
//! `flows` (TCP load) + `probe` (UDP/ICMP) → `summary` (result, figures from `figures` and
//! `crate::stats`). Server: `server` (sessions, limits; hosted by the shared
//! `crate::server`) + `server_load` (load flows) and
//! `reflector` (UDP); both sides use `state`, the reflector never the server. It never prints: log
//! lines go to the `LogSink` its host sets. Errors: `error`.

pub mod conn;
mod control;
pub mod error;
pub mod figures;
pub mod flows;
pub mod icmp;
pub mod phases;
pub mod plan;
pub mod probe;
pub mod reflector;
pub mod rpm;
pub mod runner;
pub mod server;
mod server_load;
mod server_rpm;
mod session;
mod state;
pub mod summary;

pub use error::{LatencyError, ServiceError};
pub use plan::TestKind;
pub use runner::{IpPref, TestConfig, run_test};
