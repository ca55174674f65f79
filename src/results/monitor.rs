//! The router's own view during a test: CPU and softirq load per core, NET_RX/NET_TX softirq
//! rates, softnet drops and time_squeeze, temperatures, and the busiest processes.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct MonitorResult {
    /// Sampling interval, seconds.
    pub interval_s: f64,
    /// CPU ids, the order of every per-CPU vector below.
    pub cpus: Vec<u32>,
    pub samples: Vec<MonitorSample>,
    /// Processes by CPU use over the whole window, busiest first (at most 8).
    pub top_processes: Vec<ProcessCpu>,
    pub summary: MonitorSummary,
    /// Sources that were missing (OpenWrt strips /proc files on small images).
    #[serde(default)]
    pub notes: Vec<String>,
}

/// One interval's rates and gauges; `t_s` is the interval's end, seconds since the start.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct MonitorSample {
    pub t_s: f64,
    /// 100 − idle − iowait, per CPU, percent of the interval.
    pub cpu_busy_pct: Vec<f64>,
    /// softirq share per CPU, percent.
    pub cpu_softirq_pct: Vec<f64>,
    /// NET_RX softirq handler runs per second, per CPU (empty when /proc/softirqs is missing).
    pub net_rx_per_s: Vec<f64>,
    pub net_tx_per_s: Vec<f64>,
    /// Packets dropped because a CPU's backlog was full, in this interval, all CPUs.
    pub softnet_dropped: Option<u64>,
    /// Times net_rx_action ran out of budget with work left, in this interval, all CPUs.
    pub softnet_time_squeeze: Option<u64>,
    /// Hottest sensor, °C.
    pub temperature_max_c: Option<f64>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct ProcessCpu {
    pub pid: u32,
    pub comm: String,
    /// Percent of one CPU over the window.
    pub cpu_pct: f64,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct MonitorSummary {
    /// Highest busy % any single CPU reached in any interval (the "no spare CPU" figure).
    pub busiest_cpu_max_pct: Option<f64>,
    /// Mean busy % over all CPUs and intervals.
    pub cpu_mean_pct: Option<f64>,
    /// Highest softirq % of any CPU in any interval.
    pub softirq_max_pct: Option<f64>,
    pub softnet_dropped_total: Option<u64>,
    pub softnet_time_squeeze_total: Option<u64>,
    pub temperature_max_c: Option<f64>,
}
