//! Rendering of the result model: text summaries, tables, rows. Nothing here measures.

pub mod crypto;
pub mod device;
pub mod iperf3;
#[cfg(feature = "lab")]
pub mod lab;
pub mod latency;
pub mod monitor;
pub mod summary;
