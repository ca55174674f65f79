//! Rendering of the result model: text summaries, tables, rows. Nothing here measures.

pub mod crypto;
pub mod device;
pub mod iperf3;
pub mod lab;
pub mod latency;
pub mod monitor;
pub mod summary;
#[cfg(feature = "plots")]
pub mod compare;
#[cfg(feature = "plots")]
pub mod html;
#[cfg(feature = "plots")]
pub mod plot;
#[cfg(feature = "plots")]
pub mod reference;
#[cfg(feature = "plots")]
pub mod rows;
