//! routerbench as a library: measure → result → render.
//!
//! Measuring modules (`crypto`, `iperf3`, `latency`, `monitor`, `lab`) return values of the
//! result model (`results`); `report` renders them; `cli` glues the command line to both.

pub mod cli;
pub mod crypto;
pub mod device;
pub mod iperf3;
#[cfg(feature = "lab")]
pub mod lab;
pub mod latency;
pub mod monitor;
pub mod net;
pub mod report;
pub mod results;
pub mod server;
pub mod service;
pub mod stats;
pub mod stress;
pub mod util;
pub mod wire;
