//! Small helpers shared by every module: wall-clock timestamps, progress display, pipe-safe output,
//! the one random source, the shared error pieces (`BoxError`, `chain`).

pub mod affinity;
pub mod error;
pub mod out;
pub mod progress;
pub mod random;
pub mod time;
pub mod tool;
pub mod uci;
pub mod units;
