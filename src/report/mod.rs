//! Rendering of the result model: text summaries, tables, rows. Nothing here measures.

pub mod device;
pub mod lab;
pub mod monitor;
