//! The router's view: samples /proc and /sys counters on a thread of its own while a test runs,
//! and turns counter deltas into rates per interval. Every source is optional.

pub mod agent;
pub mod bql;
pub mod error;
pub mod health;
pub mod metrics;
pub mod netlink;
pub mod nl80211;
pub mod processes;
pub mod procfs;
pub mod qdisc;
pub mod queues;
pub mod remote;
pub mod sampler;
pub mod sources;
pub mod summary;
pub mod tc_stats;
pub mod thermal;
pub mod wifi;
pub mod wifi_debugfs;
pub mod wifi_derive;
pub mod wifi_report;

pub use error::MonitorError;
pub use sampler::{Sampler, SamplerConfig};
