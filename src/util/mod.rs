//! Small helpers shared by every module: wall-clock timestamps, progress display, pipe-safe output,
//! the one random source.

pub mod affinity;
pub mod out;
pub mod progress;
pub mod random;
pub mod time;
pub mod tool;
pub mod uci;
pub mod units;
