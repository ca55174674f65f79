//! Small helpers shared by every module: wall-clock timestamps, progress display.

pub mod affinity;
pub mod progress;
pub mod time;
pub mod tool;
pub mod uci;
