//! Wi-Fi radios and stations (the model of `results::wifi`, read over nl80211 by
//! `monitor::wifi`) as `routerbench_wifi_*` families. Stations carry the labels of the Lua
//! exporter's `wifi_stations` collector (`ifname`, `mac`), so fleet dashboards join them;
//! counters are totals since the station associated, gauges are now.

use crate::results::metrics::{Family, MetricType};
use crate::results::wifi::WifiReport;

/// Every radio and station family of one reading.
pub fn families(report: &WifiReport) -> Vec<Family> {
    let g = MetricType::Gauge;
    let c = MetricType::Counter;
    let mut radio_info = Family::new(
        "routerbench_wifi_radio_info",
        g,
        "A radio: its driver, channel and the make-wifi-fast features it has (labels); value 1.",
    );
    let mut busy = Family::new(
        "routerbench_wifi_radio_channel_busy_ratio",
        g,
        "Share of time the radio's channel was busy (nl80211 survey) since the previous reading.",
    );
    let mut noise = Family::new(
        "routerbench_wifi_radio_noise_dbm",
        g,
        "Noise floor of the radio's channel, dBm.",
    );
    let mut txq_backlog = Family::new(
        "routerbench_wifi_radio_txq_backlog_bytes",
        g,
        "Bytes queued in the radio's mac80211 TXQs (fq_codel per station and TID) now.",
    );
    let mut txq_drops = Family::new(
        "routerbench_wifi_radio_txq_drops_packets",
        c,
        "Packets the radio's mac80211 TXQs dropped.",
    );
    let mut stations = Family::new(
        "routerbench_wifi_stations",
        g,
        "Stations associated with an interface now.",
    );
    let mut signal = Family::new(
        "routerbench_wifi_station_signal_dbm",
        g,
        "Signal of the station's last packets, dBm.",
    );
    let mut tx_rate = Family::new(
        "routerbench_wifi_station_transmit_rate_bits_per_second",
        g,
        "PHY rate of the last frame sent to the station, bit/s.",
    );
    let mut rx_rate = Family::new(
        "routerbench_wifi_station_receive_rate_bits_per_second",
        g,
        "PHY rate of the last frame received from the station, bit/s.",
    );
    let mut expected = Family::new(
        "routerbench_wifi_station_expected_throughput_bits_per_second",
        g,
        "The rate control's expected throughput to the station, bit/s.",
    );
    let mut inactive = Family::new(
        "routerbench_wifi_station_inactive_seconds",
        g,
        "Time since the station was last active, seconds.",
    );
    let mut tx_bytes = Family::new(
        "routerbench_wifi_station_transmit_bytes",
        c,
        "Bytes sent to the station.",
    );
    let mut rx_bytes = Family::new(
        "routerbench_wifi_station_receive_bytes",
        c,
        "Bytes received from the station.",
    );
    let mut tx_packets = Family::new(
        "routerbench_wifi_station_transmit_packets",
        c,
        "Packets sent to the station.",
    );
    let mut rx_packets = Family::new(
        "routerbench_wifi_station_receive_packets",
        c,
        "Packets received from the station.",
    );
    let mut retries = Family::new(
        "routerbench_wifi_station_transmit_retries",
        c,
        "Retransmissions to the station.",
    );
    let mut failed = Family::new(
        "routerbench_wifi_station_transmit_failed",
        c,
        "Frames to the station that failed after every retry.",
    );
    let mut tx_air = Family::new(
        "routerbench_wifi_station_transmit_airtime_seconds",
        c,
        "Airtime spent sending to the station (where the driver reports it), seconds.",
    );
    let mut rx_air = Family::new(
        "routerbench_wifi_station_receive_airtime_seconds",
        c,
        "Airtime spent receiving from the station (where the driver reports it), seconds.",
    );
    for r in &report.radios {
        let phy = || ("phy", r.phy.clone());
        let yes = |b: bool| if b { "1" } else { "0" }.to_string();
        radio_info.push(
            vec![
                phy(),
                ("driver", r.driver.clone().unwrap_or_default()),
                (
                    "band",
                    r.channel
                        .as_ref()
                        .map(|c| c.band.clone())
                        .unwrap_or_default(),
                ),
                (
                    "channel",
                    r.channel
                        .as_ref()
                        .and_then(|c| c.number)
                        .map(|n| n.to_string())
                        .unwrap_or_default(),
                ),
                ("txqs", yes(r.features.txqs)),
                ("airtime_fairness", yes(r.features.airtime_fairness)),
                ("aql", yes(r.features.aql)),
            ],
            1.0,
        );
        if let Some(s) = &r.survey {
            if let Some(b) = s.busy_pct {
                busy.push(vec![phy()], b / 100.0);
            }
            if let Some(n) = s.noise_dbm {
                noise.push(vec![phy()], f64::from(n));
            }
        }
        if let Some(q) = &r.txq {
            if let Some(b) = q.backlog_bytes {
                txq_backlog.push(vec![phy()], b as f64);
            }
            if let Some(d) = q.drops {
                txq_drops.push(vec![phy()], d as f64);
            }
        }
        for i in &r.interfaces {
            let n = r.stations.iter().filter(|s| s.dev == i.name).count();
            if i.iftype == "AP" || n > 0 {
                stations.push(
                    vec![
                        phy(),
                        ("ifname", i.name.clone()),
                        ("ssid", i.ssid.clone().unwrap_or_default()),
                    ],
                    n as f64,
                );
            }
        }
        for s in &r.stations {
            let l = || vec![("ifname", s.dev.clone()), ("mac", s.mac.clone())];
            let opt = |f: &mut Family, v: Option<f64>| {
                if let Some(v) = v {
                    f.push(l(), v);
                }
            };
            opt(&mut signal, s.signal_dbm.map(f64::from));
            opt(
                &mut tx_rate,
                s.tx_rate.as_ref().and_then(|r| r.mbps).map(|m| m * 1e6),
            );
            opt(
                &mut rx_rate,
                s.rx_rate.as_ref().and_then(|r| r.mbps).map(|m| m * 1e6),
            );
            opt(&mut expected, s.expected_mbps.map(|m| m * 1e6));
            opt(&mut inactive, s.inactive_ms.map(|m| m as f64 / 1e3));
            opt(&mut tx_bytes, s.tx_bytes.map(|v| v as f64));
            opt(&mut rx_bytes, s.rx_bytes.map(|v| v as f64));
            opt(&mut tx_packets, s.tx_packets.map(|v| v as f64));
            opt(&mut rx_packets, s.rx_packets.map(|v| v as f64));
            opt(&mut retries, s.tx_retries.map(|v| v as f64));
            opt(&mut failed, s.tx_failed.map(|v| v as f64));
            opt(&mut tx_air, s.tx_airtime_us.map(|v| v as f64 / 1e6));
            opt(&mut rx_air, s.rx_airtime_us.map(|v| v as f64 / 1e6));
        }
    }
    vec![
        radio_info,
        busy,
        noise,
        txq_backlog,
        txq_drops,
        stations,
        signal,
        tx_rate,
        rx_rate,
        expected,
        inactive,
        tx_bytes,
        rx_bytes,
        tx_packets,
        rx_packets,
        retries,
        failed,
        tx_air,
        rx_air,
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::wifi::{Radio, Station, WifiInterface, WifiRate};

    #[test]
    fn stations_and_radios() {
        let report = WifiReport {
            radios: vec![Radio {
                phy: "phy0".into(),
                driver: Some("ath9k".into()),
                interfaces: vec![WifiInterface {
                    name: "wlan0".into(),
                    iftype: "AP".into(),
                    ssid: Some("lab \"5G\"".into()),
                    ..Default::default()
                }],
                stations: vec![Station {
                    mac: "02:00:00:00:01:00".into(),
                    dev: "wlan0".into(),
                    signal_dbm: Some(-41),
                    tx_rate: Some(WifiRate {
                        mbps: Some(144.4),
                        desc: String::new(),
                    }),
                    tx_bytes: Some(123_456),
                    tx_airtime_us: None,
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        };
        let f = families(&report);
        let get = |n: &str| f.iter().find(|x| x.name == n).unwrap();
        assert_eq!(get("routerbench_wifi_stations").samples[0].value, 1.0);
        assert!(
            get("routerbench_wifi_stations").samples[0]
                .labels
                .contains(&("ssid", "lab \"5G\"".to_string()))
        );
        let sig = &get("routerbench_wifi_station_signal_dbm").samples[0];
        assert_eq!(sig.value, -41.0);
        assert_eq!(
            sig.labels,
            vec![
                ("ifname", "wlan0".to_string()),
                ("mac", "02:00:00:00:01:00".to_string())
            ]
        );
        assert!(
            (get("routerbench_wifi_station_transmit_rate_bits_per_second").samples[0].value
                - 144.4e6)
                .abs()
                < 1.0
        );
        assert!(
            get("routerbench_wifi_station_transmit_airtime_seconds")
                .samples
                .is_empty()
        );
    }
}
