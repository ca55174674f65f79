//! The access point's stations in a flent data file, as flent's own `wifi_stats` runner stores
//! them (`flent/runners.py` WifiStatsRunner, `tests/wifi_stats.inc`): a raw series
//! `wifi_stats_HOST` of `{t, stations: {MAC: {airtime_rx, airtime_tx}}}` per interval, the
//! per-station series `wifi_stats_HOST::airtime_rx::MAC` (and `airtime_tx`) on the grid, and the
//! test parameters `wifi_stats_hosts`, `wifi_stats_interfaces` and `wifi_stats_stations` that
//! make `flent -i FILE -p airtime` find them. Airtime the driver does not report is null,
//! never 0. routerbench adds each station's bytes, retries, TXQ backlog and signal to the raw
//! entries and as `wifi_stats_HOST::tx_mbps::MAC` and `::rx_mbps::` series.

use crate::results::monitor::MonitorResult;
use serde_json::{Map, Value, json};

/// flent's grid interpolation (`flent::interpolate`), passed in as `flent_voip` takes it.
pub type Interpolate = fn(&[(f64, f64)], &[f64]) -> Vec<Option<f64>>;

/// Adds the Wi-Fi stations of `router` (the agent at `host`) to the flent document `doc`.
pub fn add_wifi(doc: &mut Value, router: &MonitorResult, host: &str, interpolate: Interpolate) {
    let mut stations: Vec<(String, String)> = Vec::new();
    for s in &router.samples {
        for st in &s.stations {
            if !stations.iter().any(|(_, m)| m == &st.mac) {
                stations.push((st.dev.clone(), st.mac.clone()));
            }
        }
    }
    if stations.is_empty() {
        return;
    }
    let grid: Vec<f64> = doc["x_values"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_f64).collect())
        .unwrap_or_default();
    // `10.201.3.1:5201` → `10.201.3.1` (flent's host names carry no port).
    let host = host
        .rsplit_once(':')
        .filter(|(h, p)| !h.contains(':') && p.parse::<u16>().is_ok())
        .map_or(host, |(h, _)| h);
    let t0 = router.start_unix_s.unwrap_or(0.0);
    let iv = router.interval_s.max(1e-3);
    let name = format!("wifi_stats_{host}");
    let mut raw = Vec::new();
    for s in &router.samples {
        let mut per = Map::new();
        for st in &s.stations {
            per.insert(
                st.mac.clone(),
                json!({
                    "airtime_rx": st.rx_airtime_us.map(|v| v as f64),
                    "airtime_tx": st.tx_airtime_us.map(|v| v as f64),
                    "tx_bytes": st.tx_bytes,
                    "rx_bytes": st.rx_bytes,
                    "tx_retries": st.tx_retries,
                    "txq_backlog_bytes": st.txq_backlog_bytes,
                    "signal": st.signal_dbm,
                }),
            );
        }
        raw.push(json!({"t": t0 + s.t_s, "stations": per}));
    }
    let series = |mac: &str, f: &dyn Fn(&crate::results::wifi::StationSample) -> Option<f64>| {
        let pts: Vec<(f64, f64)> = router
            .samples
            .iter()
            .filter_map(|s| {
                let st = s.stations.iter().find(|st| st.mac == mac)?;
                Some((s.t_s, f(st)?))
            })
            .collect();
        interpolate(&pts, &grid)
    };
    let mut results = Vec::new();
    for (_, mac) in &stations {
        type Pick = fn(&crate::results::wifi::StationSample) -> Option<f64>;
        let picks: [(&str, &str, Pick); 2] = [
            ("airtime_rx", "us", |st| st.rx_airtime_us.map(|v| v as f64)),
            ("airtime_tx", "us", |st| st.tx_airtime_us.map(|v| v as f64)),
        ];
        for (key, units, f) in picks {
            results.push((format!("{name}::{key}::{mac}"), units, series(mac, &f)));
        }
        results.push((
            format!("{name}::tx_mbps::{mac}"),
            "Mbits/s",
            series(mac, &|st| Some(st.tx_bytes as f64 * 8.0 / iv / 1e6)),
        ));
        results.push((
            format!("{name}::rx_mbps::{mac}"),
            "Mbits/s",
            series(mac, &|st| Some(st.rx_bytes as f64 * 8.0 / iv / 1e6)),
        ));
    }
    if let Some(r) = doc["raw_values"].as_object_mut() {
        r.insert(name.clone(), json!(raw));
        for (n, _, _) in &results {
            r.insert(n.clone(), json!([]));
        }
    }
    if let Some(m) = doc["metadata"]["SERIES_META"].as_object_mut() {
        m.insert(
            name.clone(),
            json!({"UNITS": "misc", "RUNNER": "WifiStatsRunner", "IDX": 0}),
        );
        for (n, units, _) in &results {
            m.insert(n.clone(), json!({"UNITS": units, "RUNNER": "NullRunner"}));
        }
    }
    if let Some(r) = doc["results"].as_object_mut() {
        for (n, _, v) in results {
            r.insert(n, json!(v));
        }
    }
    if let Some(p) = doc["metadata"]["TEST_PARAMETERS"].as_object_mut() {
        let devs: Vec<&str> = stations.iter().map(|(d, _)| d.as_str()).collect();
        let macs: Vec<&str> = stations.iter().map(|(_, m)| m.as_str()).collect();
        p.insert("wifi_stats_hosts".into(), json!(host));
        p.insert(
            "wifi_stats_interfaces".into(),
            json!(devs.first().copied().unwrap_or("")),
        );
        p.insert("wifi_stats_stations".into(), json!(macs.join(",")));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::monitor::MonitorSample;
    use crate::results::wifi::StationSample;

    #[test]
    fn stations_in_flents_wifi_stats_form() {
        let mut doc = json!({
            "x_values": [0.0, 0.5, 1.0],
            "results": {}, "raw_values": {},
            "metadata": {"SERIES_META": {}, "TEST_PARAMETERS": {}}
        });
        let st = |t: u64| StationSample {
            mac: "02:00:00:00:01:00".into(),
            dev: "wlan0".into(),
            phy: "phy0".into(),
            tx_bytes: 62_500 * t,
            ..Default::default()
        };
        let m = MonitorResult {
            interval_s: 0.5,
            start_unix_s: Some(1_000.0),
            samples: vec![
                MonitorSample {
                    t_s: 0.5,
                    stations: vec![st(1)],
                    ..Default::default()
                },
                MonitorSample {
                    t_s: 1.0,
                    stations: vec![st(2)],
                    ..Default::default()
                },
            ],
            ..Default::default()
        };
        add_wifi(
            &mut doc,
            &m,
            "10.201.3.1:5201",
            crate::report::export::flent::interpolate,
        );
        let name = "wifi_stats_10.201.3.1";
        assert_eq!(doc["raw_values"][name][1]["t"], 1001.0);
        let s = &doc["raw_values"][name][0]["stations"]["02:00:00:00:01:00"];
        assert!(s["airtime_tx"].is_null(), "not reported: null, not 0");
        assert_eq!(s["tx_bytes"], 62_500);
        let tx = &doc["results"][format!("{name}::tx_mbps::02:00:00:00:01:00")];
        assert_eq!(tx[0], Value::Null, "before the first sample");
        assert_eq!(tx[1], 1.0);
        assert_eq!(tx[2], 2.0);
        assert!(doc["results"][format!("{name}::airtime_tx::02:00:00:00:01:00")][1].is_null());
        let p = &doc["metadata"]["TEST_PARAMETERS"];
        assert_eq!(p["wifi_stats_stations"], "02:00:00:00:01:00");
        assert_eq!(p["wifi_stats_interfaces"], "wlan0");
        // No stations: the document is left as it was.
        let mut plain = json!({"x_values": [], "results": {}});
        add_wifi(&mut plain, &MonitorResult::default(), "x", |_, _| {
            Vec::new()
        });
        assert_eq!(plain, json!({"x_values": [], "results": {}}));
    }
}
