//! The parser on real answers: dumps captured inside the Wi-Fi VM router (Debian's
//! 6.12.95+deb12-armmp kernel, mac80211_hwsim, hostapd with two stations associated; converted
//! from `iw --debug`, tests/fixtures/nl80211/), each checked against what `iw` printed from the
//! same messages.

use super::*;

/// The answers of one fixture file: (dump, generic netlink payload).
fn answers(text: &str) -> Vec<(String, Vec<u8>)> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let (kind, hex) = l.split_once(' ').expect("DUMP HEX");
            let bytes = (0..hex.len())
                .step_by(2)
                .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).expect("hex"))
                .collect();
            (kind.to_string(), bytes)
        })
        .collect()
}

const STATIONS: &str = include_str!("../../tests/fixtures/nl80211/ap-station-dump.txt");
const WIPHYS: &str = include_str!("../../tests/fixtures/nl80211/wiphy-split-dump.txt");
const SURVEY: &str = include_str!("../../tests/fixtures/nl80211/station1-survey-dump.txt");

#[test]
fn the_aps_station_dump_as_iw_printed_it() {
    let st: Vec<StationInfo> = answers(STATIONS)
        .iter()
        .map(|(k, p)| {
            assert_eq!(k, "station");
            parse_station(p).expect("a station")
        })
        .collect();
    assert_eq!(st.len(), 2);
    // iw: Station 02:00:00:00:01:00 (on wlan0): rx bytes 441231, rx packets 379, tx bytes
    // 402509, tx packets 280, tx retries 0, tx failed 1, rx drop misc 0, signal -30 dBm,
    // signal avg -30 dBm, tx bitrate 13.0 MBit/s MCS 8, tx duration 0 us, rx bitrate 13.0
    // MBit/s MCS 8, rx duration 0 us, expected throughput 9.704Mbps, connected time 24 s.
    let a = &st[0];
    assert_eq!(a.mac, [2, 0, 0, 0, 1, 0]);
    assert_eq!(a.ifindex, 2);
    assert_eq!((a.rx_bytes, a.rx_packets), (Some(441_231), Some(379)));
    assert_eq!((a.tx_bytes, a.tx_packets), (Some(402_509), Some(280)));
    assert_eq!((a.tx_retries, a.tx_failed), (Some(0), Some(1)));
    assert_eq!(a.rx_drop_misc, Some(0));
    assert_eq!((a.signal_dbm, a.signal_avg_dbm), (Some(-30), Some(-30)));
    let tx = a.tx_rate.clone().unwrap();
    assert_eq!(
        (tx.mbps(), tx.describe().as_str()),
        (Some(13.0), "HT MCS 8")
    );
    assert_eq!(a.rx_rate.as_ref().unwrap().mbps(), Some(13.0));
    // hwsim registers no airtime: mac80211 sends the durations, as 0.
    assert_eq!((a.tx_duration_us, a.rx_duration_us), (Some(0), Some(0)));
    // The kernel sends 9937 (kbps, by nl80211.h); iw prints it ×1000/1024 as "9.704Mbps".
    assert_eq!(a.expected_throughput_kbps, Some(9937));
    assert_eq!(a.connected_s, Some(24));
    // MSDU: TID 0 rx 308 tx 277; TID 16 (non-QoS) tx 3. TXQs: TID 0 flows 217, tx-bytes
    // 402174, tx-packets 277, everything else 0.
    let t0 = a.tids.iter().find(|t| t.tid == 0).unwrap();
    assert_eq!((t0.rx_msdu, t0.tx_msdu), (Some(308), Some(277)));
    let q = t0.txq.unwrap();
    assert_eq!(
        (q.flows, q.tx_bytes, q.tx_packets),
        (Some(217), Some(402_174), Some(277))
    );
    assert_eq!(
        (q.backlog_bytes, q.drops, q.ecn_marks),
        (Some(0), Some(0), Some(0))
    );
    assert_eq!(
        a.tids.iter().find(|t| t.tid == 16).unwrap().tx_msdu,
        Some(3)
    );
    assert_eq!(a.tids.len(), 17, "TIDs 0-15 and the non-QoS one");
    // The second: tx bitrate 11.0 MBit/s (legacy CCK), rx drop misc 1, expected 6.316 Mbps.
    let b = &st[1];
    assert_eq!(b.mac, [2, 0, 0, 0, 2, 0]);
    let tx = b.tx_rate.clone().unwrap();
    assert_eq!((tx.mbps(), tx.describe().as_str()), (Some(11.0), ""));
    assert_eq!(b.rx_drop_misc, Some(1));
    assert_eq!(
        b.expected_throughput_kbps.map(|k| k * 1000 / 1024),
        Some(6316)
    );
    assert_eq!((b.tx_bytes, b.rx_bytes), (Some(106_559), Some(107_310)));
}

#[test]
fn the_split_wiphy_dump_of_phy0() {
    let mut w = Vec::new();
    for (k, p) in answers(WIPHYS) {
        assert_eq!(k, "wiphy");
        merge_wiphy(&p, &mut w);
    }
    let phy0 = w.iter().find(|w| w.name == "phy0").expect("phy0");
    assert_eq!(phy0.index, 0);
    // iw: "[ TXQS ]: FQ-CoDel-enabled intermediate TXQs", no AIRTIME_FAIRNESS, no AQL.
    assert!(phy0.has_ext_feature(EXT_FEATURE_TXQS));
    assert!(!phy0.has_ext_feature(EXT_FEATURE_AIRTIME_FAIRNESS));
    assert!(!phy0.has_ext_feature(EXT_FEATURE_AQL));
    // iw's Band 1, 2, 4, 5: 2.4 GHz, 5 GHz, 6 GHz, S1G.
    assert_eq!(phy0.bands, [0, 1, 3, 4]);
}

#[test]
fn a_stations_survey_after_its_scan() {
    let s: Vec<SurveyInfo> = answers(SURVEY)
        .iter()
        .map(|(_, p)| parse_survey(p).expect("a survey entry"))
        .collect();
    // iw: 2412 MHz, noise -92 dBm, active 204 ms, busy 25 ms; 2417 MHz 64/8 ms (hwsim reports
    // a made-up 12.5 % of the channel time as busy).
    assert_eq!(s[0].freq_mhz, Some(2412));
    assert_eq!(s[0].noise_dbm, Some(-92));
    assert_eq!((s[0].time_ms, s[0].busy_ms), (Some(204), Some(25)));
    assert_eq!(
        (s[1].freq_mhz, s[1].time_ms, s[1].busy_ms),
        (Some(2417), Some(64), Some(8))
    );
    assert!(s.iter().all(|x| x.rx_ms.is_none() && x.tx_ms.is_none()));
}
