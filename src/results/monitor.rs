//! The router's own view during a test: CPU and softirq load per core, NET_RX/NET_TX softirq
//! rates, softnet drops and time_squeeze, temperatures, the busiest processes, and the queues:
//! each device's root qdisc backlog and drops and its BQL bytes in flight.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct MonitorResult {
    /// Sampling interval, seconds.
    pub interval_s: f64,
    /// How often the queue gauges (qdisc backlog, BQL inflight) were read, seconds; absent
    /// in results from before queues were sampled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue_interval_s: Option<f64>,
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
    /// Devices whose queues held or dropped anything in this interval (all-zero devices are
    /// left out; a device absent here was idle or not measured, see the summary).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub queues: Vec<QueueSample>,
}

/// One device's queues over one interval. Gauges are read several times per interval
/// (`queue_interval_s`) and their maximum kept; `None` = that source gave nothing for it.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct QueueSample {
    pub dev: String,
    /// Root qdisc kind (`fq_codel`, `cake`, `mq`, `pfifo_fast`, ...), from `tc -s -j qdisc show`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub qdisc: Option<String>,
    /// Highest root qdisc backlog, bytes (for `mq` the sum of its per-queue children).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backlog_bytes_max: Option<u64>,
    /// Highest root qdisc queue length, packets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub qlen_max: Option<u64>,
    /// Packets the root qdisc (or a qdisc below it) dropped in this interval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drops: Option<u64>,
    /// Highest BQL `inflight` summed over the device's TX queues, bytes (TX ring occupancy).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bql_inflight_max_bytes: Option<u64>,
    /// BQL `limit` summed over the TX queues, at the interval's last reading, bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bql_limit_bytes: Option<u64>,
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
    /// Every device with a root qdisc (other than lo's `noqueue`) or BQL, over the whole window.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub queues: Vec<QueueSummary>,
}

/// One device's queues over the whole window.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct QueueSummary {
    pub dev: String,
    /// Root qdisc kind at the last reading.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub qdisc: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backlog_bytes_max: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub qlen_max: Option<u64>,
    /// Root qdisc drops over the window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drops_total: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bql_inflight_max_bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bql_limit_max_bytes: Option<u64>,
    /// TX queues with BQL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bql_tx_queues: Option<u32>,
}

impl QueueSummary {
    /// True if the device's queues held or dropped anything.
    pub fn had_anything(&self) -> bool {
        [
            self.backlog_bytes_max,
            self.qlen_max,
            self.drops_total,
            self.bql_inflight_max_bytes,
        ]
        .iter()
        .any(|v| v.unwrap_or(0) > 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_without_queues_still_parses_and_empty_queues_are_not_written() {
        // A monitor result as written before queues were sampled.
        let old = r#"{"interval_s":0.5,"cpus":[0],"samples":[{"t_s":0.5,"cpu_busy_pct":[3.0],"cpu_softirq_pct":[0.0],"net_rx_per_s":[],"net_tx_per_s":[],"softnet_dropped":0,"softnet_time_squeeze":0,"temperature_max_c":null}],"top_processes":[],"summary":{"busiest_cpu_max_pct":3.0,"cpu_mean_pct":3.0,"softirq_max_pct":0.0,"softnet_dropped_total":0,"softnet_time_squeeze_total":0,"temperature_max_c":null},"notes":[]}"#;
        let m: MonitorResult = serde_json::from_str(old).unwrap();
        assert!(m.samples[0].queues.is_empty());
        assert!(m.summary.queues.is_empty());
        assert_eq!(m.queue_interval_s, None);
        let back = serde_json::to_string(&m).unwrap();
        assert_eq!(back, old, "nothing new is written when there are no queues");
    }

    #[test]
    fn queue_fields_round_trip() {
        let q = QueueSummary {
            dev: "eth0".into(),
            qdisc: Some("fq_codel".into()),
            backlog_bytes_max: Some(45_200),
            drops_total: Some(12),
            ..Default::default()
        };
        let t = serde_json::to_string(&q).unwrap();
        assert_eq!(
            t,
            r#"{"dev":"eth0","qdisc":"fq_codel","backlog_bytes_max":45200,"drops_total":12}"#
        );
        assert_eq!(serde_json::from_str::<QueueSummary>(&t).unwrap(), q);
        assert!(q.had_anything());
        assert!(
            !QueueSummary {
                bql_limit_max_bytes: Some(2465),
                ..Default::default()
            }
            .had_anything()
        );
    }
}
