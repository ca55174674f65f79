//! nl80211 answers built attribute by attribute as the kernel's `nl80211.c` sends them
//! (`nl80211_send_station`, `nl80211_send_iface`, `nl80211_send_wiphy`, `nl80211_send_survey`);
//! the captured dumps of the Wi-Fi VM router are in `nl80211_capture_tests.rs`.

use super::*;
use crate::net::netlink::{Msg, NLMSG_HDRLEN};

/// The payload (genl header + attributes) of a message built with `Msg`.
fn payload(m: Msg) -> Vec<u8> {
    m.finish(1)[NLMSG_HDRLEN..].to_vec()
}

fn station_msg() -> Vec<u8> {
    let mut m = Msg::genl(0x1c, 2, CMD_NEW_STATION, 1);
    m.u32_ne(ATTR_IFINDEX, 5);
    m.attr(ATTR_MAC, &[2, 0, 0, 0, 1, 0]);
    m.u32_ne(46, 9); // GENERATION
    m.nest(ATTR_STA_INFO);
    m.u32_ne(sta::INACTIVE_TIME, 120);
    m.u32_ne(sta::RX_BYTES, 4_000_000_000);
    m.u64_ne(sta::RX_BYTES64, 6_000_000_000);
    m.u32_ne(sta::TX_BYTES, 123);
    m.u64_ne(sta::TX_BYTES64, 123);
    m.u32_ne(sta::RX_PACKETS, 40_000);
    m.u32_ne(sta::TX_PACKETS, 90_000);
    m.u32_ne(sta::TX_RETRIES, 17);
    m.u32_ne(sta::TX_FAILED, 2);
    m.attr(sta::SIGNAL, &[(-47i8) as u8]);
    m.attr(sta::SIGNAL_AVG, &[(-49i8) as u8]);
    m.nest(sta::TX_BITRATE);
    m.u32_ne(rate::BITRATE32, 1500);
    m.attr(rate::BITRATE, &1500u16.to_ne_bytes());
    m.attr(rate::MCS, &[15]);
    m.flag(rate::WIDTH_40);
    m.flag(rate::SHORT_GI);
    m.end();
    m.nest(sta::RX_BITRATE);
    m.u32_ne(rate::BITRATE32, 8667);
    m.attr(rate::VHT_MCS, &[9]);
    m.attr(rate::VHT_NSS, &[2]);
    m.flag(rate::WIDTH_80);
    m.end();
    m.u32_ne(sta::CONNECTED_TIME, 3600);
    m.u32_ne(sta::EXPECTED_THROUGHPUT, 97_500);
    m.u64_ne(sta::RX_DURATION, 81_234);
    m.u64_ne(sta::TX_DURATION, 1_834_567);
    m.attr(sta::AIRTIME_WEIGHT, &256u16.to_ne_bytes());
    m.attr(99, &[1, 2, 3]); // an attribute this parser does not know
    m.nest(sta::TID_STATS);
    m.nest(1); // TID 0
    m.u64_ne(tid::RX_MSDU, 10);
    m.u64_ne(tid::TX_MSDU, 20);
    m.u64_ne(tid::TX_MSDU_RETRIES, 3);
    m.u64_ne(tid::TX_MSDU_FAILED, 1);
    m.nest(tid::TXQ_STATS);
    m.u32_ne(1, 30_280); // BACKLOG_BYTES
    m.u32_ne(2, 20); // BACKLOG_PACKETS
    m.u32_ne(3, 41); // FLOWS
    m.u32_ne(4, 6); // DROPS
    m.u32_ne(5, 11); // ECN_MARKS
    m.end();
    m.end();
    m.nest(17); // the non-QoS TID
    m.u64_ne(tid::RX_MSDU, 4);
    m.end();
    m.end();
    m.end();
    payload(m)
}

#[test]
fn station_from_the_kernels_attributes() {
    let s = parse_station(&station_msg()).unwrap();
    assert_eq!(s.ifindex, 5);
    assert_eq!(s.mac, [2, 0, 0, 0, 1, 0]);
    assert_eq!(s.rx_bytes, Some(6_000_000_000), "the 64-bit counter wins");
    assert_eq!(s.tx_bytes, Some(123));
    assert_eq!((s.rx_packets, s.tx_packets), (Some(40_000), Some(90_000)));
    assert_eq!((s.tx_retries, s.tx_failed), (Some(17), Some(2)));
    assert_eq!((s.signal_dbm, s.signal_avg_dbm), (Some(-47), Some(-49)));
    let tx = s.tx_rate.clone().unwrap();
    assert_eq!(tx.mbps(), Some(150.0));
    assert_eq!(tx.describe(), "HT MCS 15 40 MHz short GI");
    let rx = s.rx_rate.clone().unwrap();
    assert_eq!(rx.mbps(), Some(866.7));
    assert_eq!(rx.describe(), "VHT MCS 9 NSS 2 80 MHz");
    assert_eq!(s.expected_throughput_kbps, Some(97_500));
    assert_eq!(
        (s.rx_duration_us, s.tx_duration_us),
        (Some(81_234), Some(1_834_567))
    );
    assert_eq!(s.airtime_weight, Some(256));
    assert_eq!(s.connected_s, Some(3600));
    assert_eq!(s.inactive_ms, Some(120));
    assert_eq!(s.tids.len(), 2);
    assert_eq!(s.tids[0].tid, 0);
    let q = s.tids[0].txq.unwrap();
    assert_eq!(
        (q.backlog_bytes, q.backlog_packets, q.drops, q.ecn_marks),
        (Some(30_280), Some(20), Some(6), Some(11))
    );
    assert_eq!(q.overlimit, None, "not sent, not zero");
    assert_eq!(s.tids[1].tid, 16);
    assert_eq!(s.tids[1].rx_msdu, Some(4));
}

#[test]
fn a_station_without_optional_figures() {
    let mut m = Msg::genl(0x1c, 2, CMD_NEW_STATION, 1);
    m.u32_ne(ATTR_IFINDEX, 5);
    m.attr(ATTR_MAC, &[2, 0, 0, 0, 2, 0]);
    m.nest(ATTR_STA_INFO).u32_ne(sta::TX_BYTES, 77).end();
    let s = parse_station(&payload(m)).unwrap();
    assert_eq!(
        s.tx_bytes,
        Some(77),
        "the 32-bit counter when there is no 64-bit one"
    );
    assert_eq!(s.signal_dbm, None);
    assert_eq!(s.tx_duration_us, None);
    assert!(s.tids.is_empty());
    // No MAC: not a station. Another command: not a station.
    let mut m = Msg::genl(0x1c, 2, CMD_NEW_STATION, 1);
    m.u32_ne(ATTR_IFINDEX, 5);
    assert_eq!(parse_station(&payload(m)), None);
    let mut m = Msg::genl(0x1c, 2, CMD_NEW_INTERFACE, 1);
    m.attr(ATTR_MAC, &[2, 0, 0, 0, 2, 0]);
    assert_eq!(parse_station(&payload(m)), None);
}

#[test]
fn truncations_of_a_station_never_panic() {
    let full = station_msg();
    for n in 0..full.len() {
        let _ = parse_station(&full[..n]);
    }
    // A flipped length byte anywhere.
    for i in 0..full.len() {
        let mut b = full.clone();
        b[i] ^= 0xA5;
        let _ = parse_station(&b);
    }
}

#[test]
fn interface_and_channel() {
    let mut m = Msg::genl(0x1c, 2, CMD_NEW_INTERFACE, 1);
    m.u32_ne(ATTR_IFINDEX, 7);
    m.str(ATTR_IFNAME, "wlan0");
    m.u32_ne(ATTR_WIPHY, 0);
    m.u32_ne(ATTR_IFTYPE, 3);
    m.attr(ATTR_MAC, &[2, 0, 0, 0, 0, 0]);
    m.attr(ATTR_SSID, b"routerbench");
    m.u32_ne(ATTR_WIPHY_FREQ, 2412);
    m.u32_ne(ATTR_CHANNEL_WIDTH, 1);
    m.u32_ne(ATTR_CENTER_FREQ1, 2412);
    m.u32_ne(ATTR_WIPHY_TX_POWER_LEVEL, 2000);
    m.nest(ATTR_TXQ_STATS).u32_ne(1, 0).u32_ne(4, 3).end();
    let i = parse_interface(&payload(m)).unwrap();
    assert_eq!(i.name, "wlan0");
    assert_eq!(i.ifindex, 7);
    assert_eq!(i.iftype, Some(3));
    assert_eq!(iftype_name(3), "AP");
    assert_eq!(i.ssid.as_deref(), Some(&b"routerbench"[..]));
    assert_eq!(i.freq_mhz, Some(2412));
    assert_eq!(width_name(i.chan_width.unwrap()), "20 MHz");
    assert_eq!(i.txq_stats.unwrap().drops, Some(3));
    assert_eq!(channel_of(2412), (Some(1), "2.4 GHz"));
    assert_eq!(channel_of(2484), (Some(14), "2.4 GHz"));
    assert_eq!(channel_of(5180), (Some(36), "5 GHz"));
    assert_eq!(channel_of(5955), (Some(1), "6 GHz"));
    assert_eq!(channel_of(58_320), (Some(1), "60 GHz"));
    assert_eq!(channel_of(100), (None, "other"));
}

#[test]
fn split_wiphy_parts_merge() {
    // Part 1: name, bands; part 2: the extended features and TXQ figures (split dump).
    let mut a = Msg::genl(0x1c, 2, CMD_NEW_WIPHY, 1);
    a.u32_ne(ATTR_WIPHY, 2).str(ATTR_WIPHY_NAME, "phy2");
    a.nest(ATTR_WIPHY_BANDS).nest(0).nest(1).end().end().end();
    let mut b = Msg::genl(0x1c, 2, CMD_NEW_WIPHY, 1);
    b.u32_ne(ATTR_WIPHY, 2).str(ATTR_WIPHY_NAME, "phy2");
    b.nest(ATTR_WIPHY_BANDS).nest(1).end().end();
    let mut ext = [0u8; 8];
    ext[(EXT_FEATURE_TXQS / 8) as usize] |= 1 << (EXT_FEATURE_TXQS % 8);
    ext[(EXT_FEATURE_AQL / 8) as usize] |= 1 << (EXT_FEATURE_AQL % 8);
    b.attr(ATTR_EXT_FEATURES, &ext);
    b.u32_ne(ATTR_TXQ_LIMIT, 8192)
        .u32_ne(ATTR_TXQ_MEMORY_LIMIT, 16 << 20)
        .u32_ne(ATTR_TXQ_QUANTUM, 300);
    b.nest(ATTR_TXQ_STATS).u32_ne(1, 1514).end();
    let mut out = Vec::new();
    merge_wiphy(&payload(a), &mut out);
    merge_wiphy(&payload(b), &mut out);
    assert_eq!(out.len(), 1);
    let w = &out[0];
    assert_eq!((w.index, w.name.as_str()), (2, "phy2"));
    assert_eq!(w.bands, [0, 1]);
    assert!(w.has_ext_feature(EXT_FEATURE_TXQS));
    assert!(w.has_ext_feature(EXT_FEATURE_AQL));
    assert!(!w.has_ext_feature(EXT_FEATURE_AIRTIME_FAIRNESS));
    assert!(!w.has_ext_feature(10_000), "past the bitmap: not set");
    assert_eq!(
        (w.txq_limit, w.txq_memory_limit, w.txq_quantum),
        (Some(8192), Some(16 << 20), Some(300))
    );
    assert_eq!(w.txq_stats.unwrap().backlog_bytes, Some(1514));
    assert_eq!(band_name(w.bands[1]), "5 GHz");
}

#[test]
fn survey_of_a_channel() {
    let mut m = Msg::genl(0x1c, 2, CMD_NEW_SURVEY_RESULTS, 1);
    m.u32_ne(ATTR_IFINDEX, 7);
    m.nest(ATTR_SURVEY_INFO);
    m.u32_ne(survey::FREQUENCY, 2412);
    m.attr(survey::NOISE, &[(-92i8) as u8]);
    m.flag(survey::IN_USE);
    m.u64_ne(survey::TIME, 204);
    m.u64_ne(survey::TIME_BUSY, 25);
    m.u64_ne(survey::TIME_TX, 3);
    m.end();
    let s = parse_survey(&payload(m)).unwrap();
    assert_eq!(s.freq_mhz, Some(2412));
    assert_eq!(s.noise_dbm, Some(-92));
    assert!(s.in_use);
    assert_eq!(
        (s.time_ms, s.busy_ms, s.rx_ms, s.tx_ms),
        (Some(204), Some(25), None, Some(3))
    );
    // No SURVEY_INFO: nothing.
    let mut m = Msg::genl(0x1c, 2, CMD_NEW_SURVEY_RESULTS, 1);
    m.u32_ne(ATTR_IFINDEX, 7);
    assert_eq!(parse_survey(&payload(m)), None);
}
