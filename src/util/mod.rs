//! Small helpers shared by every module: wall-clock timestamps, progress display, pipe-safe output,
//! the one random source, the shared error pieces (`BoxError`, `chain`), the SIGINT/SIGTERM/SIGHUP
//! flags every measuring command and the daemon poll, the one file writer (`fs`).

pub mod affinity;
pub mod error;
pub mod fs;
pub mod json;
pub mod out;
pub mod progress;
pub mod random;
pub mod signals;
pub mod time;
pub mod tool;
pub mod uci;
pub mod units;
