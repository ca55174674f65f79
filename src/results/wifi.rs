//! The router's view of its radios and stations (`routerbench wifi`, and the Wi-Fi series of
//! every monitored test): per radio its driver, channel, mac80211's make-wifi-fast features
//! (fq_codel TXQs, airtime fairness, AQL) with their queue figures, the channel's use, its AP
//! interfaces and hostapd; per station its signal, rates, counters, airtime and per-TID queues.
//! A figure the driver does not report is `None` ("not reported by the driver"), never 0.
//! docs/wifi.md says where each figure comes from.

use super::ProcessCpu;
use serde::{Deserialize, Serialize};

/// `routerbench wifi`: every radio of this machine, read twice `interval_s` apart.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct WifiReport {
    /// Time between the two readings the rates and the channel's use come from, seconds.
    pub interval_s: f64,
    pub radios: Vec<Radio>,
    /// hostapd (or OpenWrt's wpad) processes and their CPU over the interval.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hostapd: Vec<ProcessCpu>,
    /// What could not be read, and why (no radio, no debugfs, no permission, …).
    #[serde(default)]
    pub notes: Vec<String>,
}

/// mac80211's make-wifi-fast features as the driver advertises them (nl80211 extended
/// features).
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct WifiFeatures {
    /// `NL80211_EXT_FEATURE_TXQS`: mac80211's per-station, per-TID fq_codel queues.
    pub txqs: bool,
    /// `NL80211_EXT_FEATURE_AIRTIME_FAIRNESS`: the airtime deficit scheduler across stations.
    pub airtime_fairness: bool,
    /// `NL80211_EXT_FEATURE_AQL`: Airtime Queue Limits below mac80211.
    pub aql: bool,
}

/// fq_codel statistics of a mac80211 TXQ (nl80211 `TXQ_STATS`): a radio's, an interface's
/// multicast queue, or one station TID's. Backlogs are gauges, the rest counters since the
/// queue was made.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct TxqStats {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backlog_bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backlog_packets: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flows: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drops: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ecn_marks: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overlimit: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overmemory: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub collisions: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tx_bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tx_packets: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_flows: Option<u64>,
}

/// The channel an interface of the radio is on.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct WifiChannel {
    pub freq_mhz: u32,
    /// The IEEE channel number of `freq_mhz`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub number: Option<u32>,
    /// `2.4 GHz`, `5 GHz`, `6 GHz`, `60 GHz`.
    pub band: String,
    /// `20 MHz`, `40 MHz`, `80 MHz`, `160 MHz`, `80+80 MHz`, `20 MHz (no HT)`, ….
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub width: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub center_freq1_mhz: Option<u32>,
}

/// The channel's use from the driver's survey counters, over the report's interval.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct ChannelSurvey {
    pub freq_mhz: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub noise_dbm: Option<i32>,
    /// Time the channel was busy (any transmitter, or energy above the threshold), percent of
    /// the time the radio spent on it during the interval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub busy_pct: Option<f64>,
    /// Time this radio received / transmitted, percent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rx_pct: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tx_pct: Option<f64>,
    /// The channel time the percentages are of, ms (the survey's own clock).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_ms: Option<u64>,
}

/// One interface of a radio.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct WifiInterface {
    pub name: String,
    pub ifindex: u32,
    /// `AP`, `station`, `mesh point`, `monitor`, `AP VLAN`, ….
    pub iftype: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mac: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ssid: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channel: Option<WifiChannel>,
    /// The interface's multicast/broadcast TXQ (AP interfaces).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub multicast_txq: Option<TxqStats>,
}

/// A rate as nl80211 reports it.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct WifiRate {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mbps: Option<f64>,
    /// `HT MCS 7`, `VHT MCS 9 NSS 2`, `HE MCS 11 NSS 2`, with the width and short GI; empty
    /// for a legacy rate.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub desc: String,
}

/// One TID's statistics of a station (nl80211 `TID_STATS`). TID 16 is the non-QoS queue.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct TidStats {
    pub tid: u16,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rx_msdu: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tx_msdu: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tx_msdu_retries: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tx_msdu_failed: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub txq: Option<TxqStats>,
}

/// One associated station, from the AP's side: "tx" is from the AP to the station (the
/// station's download), "rx" from the station (its upload).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Station {
    pub mac: String,
    /// The AP interface it is associated to.
    pub dev: String,
    /// Its IPv4 address from the neighbour table, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ip: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal_dbm: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal_avg_dbm: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tx_rate: Option<WifiRate>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rx_rate: Option<WifiRate>,
    /// Rate control's estimate of the throughput to the station, Mbit/s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_mbps: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tx_bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rx_bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tx_packets: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rx_packets: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tx_retries: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tx_failed: Option<u64>,
    /// Airtime the driver registered, µs since association; None when it registers none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tx_airtime_us: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rx_airtime_us: Option<u64>,
    /// The airtime scheduler's weight (256 = the default share).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub airtime_weight: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inactive_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connected_s: Option<u64>,
    /// Throughput over the report's interval, to and from the station, Mbit/s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tx_mbps: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rx_mbps: Option<f64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tids: Vec<TidStats>,
    /// Its debugfs files (`stations/MAC/airtime`, `aql`), where the kernel has them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub debugfs: Option<StationDebugfs>,
}

/// A station's mac80211 debugfs figures (`CONFIG_MAC80211_DEBUGFS`: OpenWrt has it).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct StationDebugfs {
    /// `airtime`: RX and TX µs, the weight, and per access category the scheduler's
    /// deficit (`Deficit:`, kernels ≤ 5.10 and ≥ 6.0) or virtual time (`Virt-T:`, 5.11–5.19).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub airtime_rx_us: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub airtime_tx_us: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub airtime_weight: Option<u32>,
    /// `deficit` or `virtual time`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub airtime_scheduler: Option<String>,
    /// (AC, µs) per access category, VO VI BE BK.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub airtime_per_ac_us: Vec<(String, i64)>,
    /// `aql`: queued airtime per AC, µs, and the per-AC low/high limits.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub aql_queued_us: Vec<(String, u64)>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub aql_limits_us: Vec<AqlLimit>,
    /// `aqm`: the station's CoDel parameters (mac80211 picks them by the station's rate).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub codel_target_us: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub codel_interval_us: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub codel_ecn: Option<bool>,
}

/// One access category's AQL limits, µs.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct AqlLimit {
    pub ac: String,
    pub low_us: u64,
    pub high_us: u64,
}

/// A radio's mac80211 debugfs figures (`/sys/kernel/debug/ieee80211/phyN/`).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct RadioDebugfs {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aql_enable: Option<bool>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub aql_txq_limit: Vec<AqlLimit>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aql_threshold_us: Option<u64>,
    /// Airtime queued below mac80211 per AC and in total, µs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub aql_pending_us: Vec<(String, u64)>,
    /// `AIRTIME_TX`, `AIRTIME_RX`: what the scheduler accounts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub airtime_flags: Option<Vec<String>>,
    /// `aqm`: the radio's fq figures by name (`fq_backlog`, `fq_overlimit`, …), with the
    /// kernel's swapped `fq_overlimit`/`fq_overmemory` labels put right.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub aqm: Vec<(String, u64)>,
}

/// One radio (a wiphy, `phyN`).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Radio {
    pub phy: String,
    pub wiphy: u32,
    /// The kernel driver (`ath9k`, `ath10k_pci`, `mt7915e`, `mac80211_hwsim`), from sysfs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub driver: Option<String>,
    /// The bands it supports.
    #[serde(default)]
    pub bands: Vec<String>,
    /// The channel its first interface with one is on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channel: Option<WifiChannel>,
    pub features: WifiFeatures,
    /// The TXQs' limits (packets, bytes, bytes per round).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub txq_limit_packets: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub txq_memory_limit_bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub txq_quantum_bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub txq: Option<TxqStats>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub survey: Option<ChannelSurvey>,
    #[serde(default)]
    pub interfaces: Vec<WifiInterface>,
    #[serde(default)]
    pub stations: Vec<Station>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub debugfs: Option<RadioDebugfs>,
    /// Whether the driver registers airtime (stations' durations move while bytes do): None
    /// when no station moved any bytes to tell.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub airtime_reported: Option<bool>,
    /// The make-wifi-fast verdict in the field's words, e.g. "ath9k: fq_codel queues,
    /// airtime fairness on driver-measured airtime, no AQL".
    pub verdict: String,
}

/// One station over one monitor interval, from the AP's side (tx = to the station).
/// Counters are the interval's deltas; gauges its last reading.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct StationSample {
    pub mac: String,
    pub dev: String,
    pub phy: String,
    pub tx_bytes: u64,
    pub rx_bytes: u64,
    pub tx_packets: u64,
    pub rx_packets: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tx_retries: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tx_failed: Option<u64>,
    /// Airtime in the interval, µs; None when the driver registers none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tx_airtime_us: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rx_airtime_us: Option<u64>,
    /// This station's share of all stations' airtime on its radio in the interval, percent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub airtime_share_pct: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal_dbm: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tx_rate_mbps: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rx_rate_mbps: Option<f64>,
    /// Its TXQs' backlog (all TIDs) at the reading, bytes and packets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub txq_backlog_bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub txq_backlog_packets: Option<u64>,
    /// Packets its TXQs dropped / ECN-marked in the interval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub txq_drops: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub txq_ecn_marks: Option<u64>,
}

/// One radio over one monitor interval.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct RadioSample {
    pub phy: String,
    /// The channel's busy time in the interval, percent (survey).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channel_busy_pct: Option<f64>,
    /// Jain's fairness index over the stations' airtime in the interval (1 = equal shares);
    /// None when the driver reports no airtime or fewer than two stations used any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub airtime_jain: Option<f64>,
    /// Airtime queued below mac80211 (debugfs `aql_pending` total), µs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aql_pending_us: Option<u64>,
}

/// The stations and radios over a whole monitored window.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct WifiSummary {
    pub stations: Vec<StationSummary>,
    pub radios: Vec<RadioSummary>,
    /// Stations that joined or left during the window, and other remarks.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// One radio over a whole monitored window.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct RadioSummary {
    pub phy: String,
    /// Jain's fairness index over its stations' airtime over the window; None where airtime
    /// is not reported or fewer than two stations used any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub airtime_jain: Option<f64>,
    /// Whether the driver reported airtime (any station's airtime moved).
    pub airtime_reported: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channel_busy_max_pct: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aql_pending_max_us: Option<u64>,
}

/// One station over a whole monitored window.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct StationSummary {
    pub mac: String,
    pub dev: String,
    pub phy: String,
    /// The window's seconds it was associated (first and last sample that had it).
    pub from_s: f64,
    pub to_s: f64,
    pub tx_bytes: u64,
    pub rx_bytes: u64,
    pub tx_packets: u64,
    pub rx_packets: u64,
    /// Mean throughput while associated, to / from the station, Mbit/s.
    pub tx_mbps: f64,
    pub rx_mbps: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retries_per_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tx_failed: Option<u64>,
    /// Its share of all stations' airtime over the window, percent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub airtime_share_pct: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal_min_dbm: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub txq_backlog_max_bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub txq_drops: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub txq_ecn_marks: Option<u64>,
}

/// The most the AP's counters for a station may differ from the test's bytes, percent.
pub const BYTES_TOLERANCE_PCT: f64 = 2.0;

/// One direction of one station: the AP's counters against the test's flows.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct StationBytesCheck {
    pub mac: String,
    /// `download` (AP → station: the AP's tx counters) or `upload` (its rx counters).
    pub direction: String,
    pub ap_bytes: u64,
    pub ap_packets: u64,
    /// `ap_bytes − 86 × ap_packets`: the TCP payload the AP carried.
    pub ap_payload_bytes: u64,
    /// The test's flows in this direction: bytes delivered to their receivers.
    pub test_bytes: u64,
    /// ap_payload_bytes / test_bytes.
    pub ratio: Option<f64>,
}

impl StationBytesCheck {
    /// How far the AP's payload is from the test's bytes, percent (None: nothing to compare).
    pub fn delta_pct(&self) -> Option<f64> {
        self.ratio.map(|r| (r - 1.0) * 100.0)
    }

    /// Whether they agree within [`BYTES_TOLERANCE_PCT`] (None: nothing to compare).
    pub fn matches(&self) -> Option<bool> {
        self.delta_pct().map(|d| d.abs() <= BYTES_TOLERANCE_PCT)
    }
}

/// Jain's fairness index of `x`: (Σx)² / (n·Σx²), 1 when all are equal, 1/n when one has all.
/// None for fewer than two values or an all-zero set.
pub fn jain_index(x: &[f64]) -> Option<f64> {
    if x.len() < 2 {
        return None;
    }
    let sum: f64 = x.iter().sum();
    let sq: f64 = x.iter().map(|v| v * v).sum();
    (sq > 0.0).then(|| sum * sum / (x.len() as f64 * sq))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jain() {
        assert_eq!(jain_index(&[1.0, 1.0, 1.0]), Some(1.0));
        let one_has_all = jain_index(&[5.0, 0.0, 0.0, 0.0]).unwrap();
        assert!((one_has_all - 0.25).abs() < 1e-12);
        // Two stations with 40 % of the airtime each and one with 20 %.
        let j = jain_index(&[0.4, 0.4, 0.2]).unwrap();
        assert!((j - 1.0 / (3.0 * 0.36)).abs() < 1e-12, "{j}");
        assert_eq!(jain_index(&[3.0]), None);
        assert_eq!(jain_index(&[0.0, 0.0]), None);
    }

    #[test]
    fn unreported_figures_are_not_written() {
        let s = Station {
            mac: "02:00:00:00:01:00".into(),
            dev: "wlan0".into(),
            tx_bytes: Some(10),
            ..Default::default()
        };
        let t = serde_json::to_string(&s).unwrap();
        assert_eq!(
            t,
            r#"{"mac":"02:00:00:00:01:00","dev":"wlan0","tx_bytes":10}"#
        );
        assert_eq!(serde_json::from_str::<Station>(&t).unwrap(), s);
    }
}
