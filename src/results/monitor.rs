//! The router's own view during a test: CPU and softirq load per core, NET_RX/NET_TX softirq
//! rates, softnet drops and time_squeeze, temperatures, the busiest processes, and the queues:
//! each device's root qdisc backlog and drops and its BQL bytes in flight.

pub use super::ProcessCpu;
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
    /// Absolute time of `t_s = 0`, Unix seconds (the sampler's start, or the test's t0 once
    /// the samples were put on a test's time axis).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_unix_s: Option<f64>,
    /// Where the samples came from when not this machine: the agent's address
    /// (`routerbench server --monitor`), and how its clock was mapped onto ours.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<AgentClock>,
}

/// A remote agent's clock against the client's: `t_client = t_agent − offset_ms`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct AgentClock {
    /// `host:port` of the agent.
    pub address: String,
    /// agent clock − client clock, ms (lowest third of the exchanges by RTT, as the probes).
    pub offset_ms: f64,
    /// Round trip of the exchanges the estimate used (mean), ms: the offset's uncertainty is
    /// at most half of it.
    pub rtt_ms: f64,
    /// Request/response exchanges made.
    pub exchanges: usize,
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
    /// Device interrupts (numbered rows of /proc/interrupts) per second, per CPU.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub irq_per_s: Vec<f64>,
    /// `scaling_cur_freq` per CPU, MHz (empty without cpufreq: a fixed clock).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cpu_freq_mhz: Vec<f64>,
    /// `MemAvailable` from /proc/meminfo, KiB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mem_available_kib: Option<u64>,
    /// The busiest thread since the previous process scan (about once a second).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_process: Option<ProcessCpu>,
    /// Wireless interfaces from /proc/net/wireless (link quality, signal dBm), where present.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub wireless: Vec<WirelessSample>,
    /// Wi-Fi stations associated to this machine's access points (nl80211), this interval.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stations: Vec<super::wifi::StationSample>,
    /// Its radios, this interval.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub radios: Vec<super::wifi::RadioSample>,
    /// Every temperature sensor (thermal zones and hwmon inputs), in a stable order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub temperatures: Vec<ZoneTemperature>,
    /// Seconds since boot (/proc/uptime): going back means the device rebooted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uptime_s: Option<f64>,
    /// Processes the kernel's OOM killer killed since boot (/proc/vmstat `oom_kill`, ≥ 4.13).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oom_kills: Option<u64>,
    /// Receive + transmit errors of every device but `lo` in this interval (/proc/net/dev).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub netdev_errors: Option<u64>,
    /// Receive + transmit drops of every device but `lo` in this interval (/proc/net/dev).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub netdev_dropped: Option<u64>,
    /// Kernel log lines since the previous sample that are warnings or worse, or name an OOM
    /// kill, an oops, a lockup or throttling (/dev/kmsg, where readable: root).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kernel_log: Vec<String>,
}

/// One temperature sensor's reading.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct ZoneTemperature {
    /// `x86_pkg_temp (thermal_zone0)`, `k10temp Tctl (hwmon1)`: the sensor's type or chip and
    /// label, and where it is.
    pub zone: String,
    pub c: f64,
}

/// One line of /proc/net/wireless.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct WirelessSample {
    pub dev: String,
    pub link_quality: f64,
    pub signal_dbm: f64,
    /// Discarded packets (nwid + crypt + frag + retry + misc), cumulative.
    pub discarded_packets: u64,
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
    /// The lowest rate a tbf or CAKE qdisc of the device shapes to, bit/s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shaped_rate_bps: Option<u64>,
    /// `backlog_bytes_max` at `shaped_rate_bps`: the queue delay a packet arriving then sees, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backlog_ms_max: Option<f64>,
    /// CAKE: highest per-tin peak sojourn delay (the kernel's EWMA), ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cake_peak_delay_ms_max: Option<f64>,
    /// fq_codel / CAKE: packets ECN-marked in this interval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ecn_marks: Option<u64>,
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
    /// The router under load against idle, when the samples lie on a test's time axis.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub under_load: Option<LoadSummary>,
    /// The Wi-Fi stations and radios over the window, when this machine has an AP.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wifi: Option<super::wifi::WifiSummary>,
}

/// What the seed asks of the router during a test: CPU headroom, softirq share, which queue
/// filled and how far, drops and time_squeeze under load vs idle, heat, the busiest processes.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct LoadSummary {
    /// The load window on the samples' time axis, s.
    pub load_from_s: f64,
    pub load_to_s: f64,
    /// 100 − the busiest core's busy % at the 95th percentile of the load's intervals.
    pub cpu_headroom_pct: Option<f64>,
    /// Busiest core's busy %, 95th percentile under load.
    pub busiest_cpu_p95_pct: Option<f64>,
    /// softirq share of all CPU time under load, percent.
    pub softirq_share_pct: Option<f64>,
    /// The device whose root queue held the most (ms where its rate is known, else bytes).
    pub fullest_queue_dev: Option<String>,
    /// Which queue of that device: absent for its qdisc, `Wi-Fi TXQs` for mac80211's
    /// per-station queues of an access point.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fullest_queue_kind: Option<String>,
    pub fullest_queue_peak_bytes: Option<u64>,
    pub fullest_queue_p95_bytes: Option<u64>,
    pub fullest_queue_peak_ms: Option<f64>,
    pub fullest_queue_p95_ms: Option<f64>,
    /// The same device's root qdisc backlog at the 95th percentile of the idle intervals, bytes.
    pub fullest_queue_idle_p95_bytes: Option<u64>,
    /// Qdisc drops (all devices), softnet drops and time_squeeze, per second, load vs idle.
    pub qdisc_drops_load_per_s: Option<f64>,
    pub qdisc_drops_idle_per_s: Option<f64>,
    pub softnet_dropped_load_per_s: Option<f64>,
    pub softnet_dropped_idle_per_s: Option<f64>,
    pub time_squeeze_load_per_s: Option<f64>,
    pub time_squeeze_idle_per_s: Option<f64>,
    /// Highest temperature under load minus the idle mean, °C.
    pub temperature_rise_c: Option<f64>,
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
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shaped_rate_bps: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backlog_ms_max: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cake_peak_delay_ms_max: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ecn_marks_total: Option<u64>,
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
