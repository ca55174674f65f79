//! The router's view: samples /proc and /sys counters on a thread of its own while a test runs,
//! and turns counter deltas into rates per interval. Every source is optional.

pub mod bql;
pub mod procfs;
pub mod qdisc;
pub mod queues;
pub mod sampler;

pub use sampler::{Sampler, SamplerConfig};
