//! Rendering of the result model: text summaries, tables, rows, and every output format written
//! to a file (`export/`: iperf3 -J, flent, routerbench's JSON, HTML). Nothing here measures.

#[cfg(feature = "plots")]
pub mod compare;
pub mod crypto;
pub mod device;
pub mod export;
pub mod iperf3;
#[cfg(feature = "lab")]
pub mod lab;
#[cfg(feature = "lab")]
pub mod lab_checks;
pub mod latency;
pub mod monitor;
#[cfg(feature = "plots")]
pub mod plot;
#[cfg(feature = "plots")]
pub mod reference;
#[cfg(feature = "plots")]
pub mod rows;
pub mod rpm;
pub mod stress;
pub mod summary;
pub mod validity;
pub mod wifi;
