//! nl80211 answers (one generic netlink payload: genl header + attributes) as the Wi-Fi reader
//! parses them: stations, interfaces, surveys, split wiphy parts; and the debugfs texts.
#![no_main]
use libfuzzer_sys::fuzz_target;
use routerbench::monitor::{nl80211, wifi_debugfs};

fuzz_target!(|data: &[u8]| {
    if let Some(s) = nl80211::parse_station(data) {
        for r in [&s.tx_rate, &s.rx_rate].into_iter().flatten() {
            let _ = (r.mbps(), r.describe());
        }
    }
    let _ = nl80211::parse_interface(data);
    let _ = nl80211::parse_survey(data);
    let mut wiphys = Vec::new();
    nl80211::merge_wiphy(data, &mut wiphys);
    for w in &wiphys {
        let _ = w.has_ext_feature(u32::from(data.first().copied().unwrap_or(0)) * 3);
    }
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = wifi_debugfs::parse_phy_aqm(text);
        let _ = wifi_debugfs::parse_aql_txq_limit(text);
        let _ = wifi_debugfs::parse_aql_pending(text);
        let mut d = routerbench::results::wifi::StationDebugfs::default();
        wifi_debugfs::parse_station_airtime(text, &mut d);
        wifi_debugfs::parse_station_aql(text, &mut d);
        wifi_debugfs::parse_station_codel(text, &mut d);
    }
});
