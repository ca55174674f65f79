//! The derivations on readings built by hand: rates and survey over an interval, the verdicts
//! in the field's words, airtime "not reported" rather than 0, Jain's index, and stations that
//! join, leave or re-associate.

use super::*;
use crate::monitor::nl80211::{InterfaceInfo, SurveyInfo};
use crate::results::wifi::{TidStats, TxqStats};
use std::time::{Duration, Instant};

fn wiphy(bits: &[u32]) -> WiphyInfo {
    let mut ext = vec![0u8; 8];
    for b in bits {
        ext[(*b / 8) as usize] |= 1 << (b % 8);
    }
    WiphyInfo {
        index: 0,
        name: "phy0".into(),
        ext_features: ext,
        bands: vec![0],
        ..Default::default()
    }
}

fn sta(mac_last: u8, tx: u64, rx: u64, airtime: u64, connected: u64, backlog: u64) -> StationInfo {
    StationInfo {
        ifindex: 7,
        mac: [2, 0, 0, 0, mac_last, 0],
        tx_bytes: Some(tx),
        rx_bytes: Some(rx),
        tx_packets: Some(tx / 1500),
        rx_packets: Some(rx / 1500),
        tx_retries: Some(tx / 100_000),
        tx_failed: Some(0),
        tx_duration_us: Some(airtime),
        rx_duration_us: Some(0),
        signal_dbm: Some(-40 - i32::from(mac_last)),
        connected_s: Some(connected),
        tids: vec![TidStats {
            tid: 0,
            txq: Some(TxqStats {
                backlog_bytes: Some(backlog),
                backlog_packets: Some(backlog / 1500),
                drops: Some(tx / 1_000_000),
                ecn_marks: Some(0),
                ..Default::default()
            }),
            ..Default::default()
        }],
        ..Default::default()
    }
}

fn reading(
    at: Instant,
    stations: Vec<StationInfo>,
    busy: u64,
    time: u64,
    bits: &[u32],
) -> WifiReading {
    WifiReading {
        at,
        radios: vec![RadioReading {
            wiphy: wiphy(bits),
            driver: Some("ath9k".into()),
            interfaces: vec![InterfaceInfo {
                ifindex: 7,
                name: "wlan0".into(),
                wiphy: Some(0),
                iftype: Some(3),
                ssid: Some(b"lab".to_vec()),
                freq_mhz: Some(2412),
                chan_width: Some(1),
                ..Default::default()
            }],
            stations: stations
                .into_iter()
                .map(|s| ("wlan0".to_string(), s))
                .collect(),
            survey: Some(SurveyInfo {
                ifindex: 7,
                freq_mhz: Some(2412),
                in_use: true,
                time_ms: Some(time),
                busy_ms: Some(busy),
                ..Default::default()
            }),
            aql_pending_us: None,
        }],
        neighbours: [("02:00:00:00:01:00".to_string(), "10.201.3.11".to_string())].into(),
        errors: Vec::new(),
    }
}

const ALL: [u32; 3] = [
    nl80211::EXT_FEATURE_TXQS,
    nl80211::EXT_FEATURE_AIRTIME_FAIRNESS,
    nl80211::EXT_FEATURE_AQL,
];

#[test]
fn verdicts_in_the_fields_words() {
    let f = |t, a, q| WifiFeatures {
        txqs: t,
        airtime_fairness: a,
        aql: q,
    };
    assert_eq!(
        verdict(Some("ath9k"), f(true, true, false), Some(true)),
        "ath9k: fq_codel queues, airtime fairness on driver-measured airtime, no AQL"
    );
    assert_eq!(
        verdict(Some("ath10k_pci"), f(true, false, true), Some(true)),
        "ath10k_pci: fq_codel queues, no airtime fairness, AQL on host-estimated airtime"
    );
    assert_eq!(
        verdict(Some("mt7915e"), f(true, true, true), Some(true)),
        "mt7915e: fq_codel queues, airtime fairness on driver-reported airtime, AQL"
    );
    assert_eq!(
        verdict(Some("mac80211_hwsim"), f(true, false, false), Some(false)),
        "mac80211_hwsim: fq_codel queues, no airtime fairness, no AQL; airtime not reported by the driver"
    );
    let old = verdict(Some("mac80211_hwsim"), f(false, false, false), None);
    assert!(old.contains("no mac80211 fq_codel queues"), "{old}");
    assert!(
        verdict(None, f(true, true, true), Some(false))
            .contains("no airtime reported by the driver")
    );
}

#[test]
fn report_rates_survey_and_neighbours() {
    let t0 = Instant::now();
    let t1 = t0 + Duration::from_secs(2);
    let a = reading(
        t0,
        vec![sta(1, 1_000_000, 50_000, 10_000, 30, 0)],
        100,
        1000,
        &ALL,
    );
    let b = reading(
        t1,
        vec![sta(1, 6_000_000, 150_000, 60_000, 32, 30_000)],
        600,
        3000,
        &ALL,
    );
    let r = build_report(&a, &b, Extras::default());
    assert!((r.interval_s - 2.0).abs() < 1e-6);
    let radio = &r.radios[0];
    assert_eq!(
        radio.verdict,
        "ath9k: fq_codel queues, airtime fairness on driver-measured airtime, AQL"
    );
    assert_eq!(radio.channel.as_ref().unwrap().number, Some(1));
    assert_eq!(radio.bands, ["2.4 GHz"]);
    let s = radio.survey.as_ref().unwrap();
    assert_eq!(s.busy_pct, Some(25.0), "500 ms busy of 2000 ms");
    assert_eq!(s.rx_pct, None, "not reported, not 0");
    let st = &radio.stations[0];
    assert_eq!(st.ip.as_deref(), Some("10.201.3.11"));
    assert!(
        (st.tx_mbps.unwrap() - 20.0).abs() < 1e-9,
        "{:?}",
        st.tx_mbps
    );
    assert!((st.rx_mbps.unwrap() - 0.4).abs() < 1e-9);
    assert_eq!(st.tx_airtime_us, Some(60_000));
    assert_eq!(radio.airtime_reported, Some(true));
    assert_eq!(radio.interfaces[0].iftype, "AP");
    assert_eq!(radio.interfaces[0].ssid.as_deref(), Some("lab"));
}

#[test]
fn zero_airtime_while_bytes_flow_is_not_reported() {
    let t0 = Instant::now();
    let a = reading(
        t0,
        vec![sta(1, 0, 0, 0, 1, 0)],
        0,
        0,
        &[nl80211::EXT_FEATURE_TXQS],
    );
    let b = reading(
        t0 + Duration::from_secs(1),
        vec![sta(1, 5_000_000, 100_000, 0, 2, 0)],
        0,
        0,
        &[nl80211::EXT_FEATURE_TXQS],
    );
    let r = build_report(&a, &b, Extras::default());
    let st = &r.radios[0].stations[0];
    assert_eq!(st.tx_airtime_us, None);
    assert_eq!(st.rx_airtime_us, None);
    assert_eq!(r.radios[0].airtime_reported, Some(false));
    assert!(
        r.radios[0]
            .verdict
            .ends_with("airtime not reported by the driver")
    );
    assert_eq!(
        r.radios[0].survey.as_ref().unwrap().busy_pct,
        None,
        "no channel time: none"
    );
    let (ss, rs) = interval_samples(&a, &b);
    assert_eq!(ss[0].tx_airtime_us, None);
    assert_eq!(ss[0].airtime_share_pct, None);
    assert_eq!(rs[0].airtime_jain, None);
    assert_eq!(ss[0].tx_bytes, 5_000_000);
}

#[test]
fn samples_shares_and_jain() {
    let t0 = Instant::now();
    let a = reading(
        t0,
        vec![sta(1, 0, 0, 0, 10, 0), sta(2, 0, 0, 0, 10, 0)],
        0,
        0,
        &ALL,
    );
    let b = reading(
        t0 + Duration::from_millis(500),
        vec![
            sta(1, 1_000_000, 0, 75_000, 10, 4_500),
            sta(2, 200_000, 0, 25_000, 10, 0),
        ],
        0,
        0,
        &ALL,
    );
    let (ss, rs) = interval_samples(&a, &b);
    assert_eq!(ss.len(), 2);
    assert_eq!(ss[0].airtime_share_pct, Some(75.0));
    assert_eq!(ss[1].airtime_share_pct, Some(25.0));
    // (75+25)² / (2·(75²+25²)) = 0.8
    assert!((rs[0].airtime_jain.unwrap() - 0.8).abs() < 1e-12);
    assert_eq!(ss[0].txq_backlog_bytes, Some(4_500));
    assert_eq!(ss[0].txq_backlog_packets, Some(3));
    assert_eq!(ss[0].tx_retries, Some(10));
    assert_eq!(ss[0].txq_drops, Some(1));
}

#[test]
fn join_leave_and_reassociation() {
    let t0 = Instant::now();
    let dt = Duration::from_millis(500);
    // Station 1 there from the start with 9 MB since association; station 2 joins in the
    // second interval; station 1 re-associates (its counters start again) in the third and
    // is gone in the fourth.
    let r0 = reading(t0, vec![sta(1, 9_000_000, 0, 0, 100, 0)], 0, 0, &ALL);
    let r1 = reading(t0 + dt, vec![sta(1, 9_500_000, 0, 0, 100, 0)], 0, 0, &ALL);
    let r2 = reading(
        t0 + dt * 2,
        vec![
            sta(1, 10_000_000, 0, 0, 101, 0),
            sta(2, 300_000, 0, 0, 0, 0),
        ],
        0,
        0,
        &ALL,
    );
    let r3 = reading(
        t0 + dt * 3,
        vec![sta(1, 200_000, 0, 0, 0, 0), sta(2, 600_000, 0, 0, 1, 0)],
        0,
        0,
        &ALL,
    );
    let r4 = reading(t0 + dt * 4, vec![sta(2, 900_000, 0, 0, 1, 0)], 0, 0, &ALL);
    let mut samples = Vec::new();
    for (i, (p, c)) in [(&r0, &r1), (&r1, &r2), (&r2, &r3), (&r3, &r4)]
        .into_iter()
        .enumerate()
    {
        let (stations, radios) = interval_samples(p, c);
        samples.push(MonitorSample {
            t_s: 0.5 * (i + 1) as f64,
            stations,
            radios,
            ..Default::default()
        });
    }
    assert_eq!(samples[0].stations[0].tx_bytes, 500_000);
    assert_eq!(
        samples[1].stations[1].tx_bytes, 300_000,
        "a fresh station counts from 0"
    );
    assert_eq!(
        samples[2].stations[0].tx_bytes, 200_000,
        "re-associated: all of it is new"
    );
    let w = summarize(&samples, 0.5).unwrap();
    assert_eq!(w.stations.len(), 2);
    let s1 = &w.stations[0];
    assert_eq!(s1.tx_bytes, 500_000 + 500_000 + 200_000);
    assert!((s1.from_s - 0.0).abs() < 1e-9 && (s1.to_s - 1.5).abs() < 1e-9);
    assert!((s1.tx_mbps - 1_200_000.0 * 8.0 / 1.5 / 1e6).abs() < 1e-9);
    assert!(
        w.notes
            .iter()
            .any(|n| n.contains("02:00:00:00:02:00 joined wlan0 at 0.5 s")),
        "{:?}",
        w.notes
    );
    assert!(
        w.notes
            .iter()
            .any(|n| n.contains("02:00:00:00:01:00 left wlan0 at 1.5 s")),
        "{:?}",
        w.notes
    );
    assert_eq!(w.radios.len(), 1);
    assert!(!w.radios[0].airtime_reported);
    assert_eq!(w.radios[0].airtime_jain, None);
    assert_eq!(summarize(&[MonitorSample::default()], 0.5), None);
}

#[test]
fn a_station_there_before_sampling_starts_its_series_at_zero() {
    let t0 = Instant::now();
    let a = reading(t0, vec![], 0, 0, &ALL);
    let b = reading(
        t0 + Duration::from_millis(500),
        vec![sta(3, 50_000_000, 0, 0, 3600, 0)],
        0,
        0,
        &ALL,
    );
    let (ss, _) = interval_samples(&a, &b);
    assert_eq!(
        ss[0].tx_bytes, 0,
        "an hour's counters are not this interval's"
    );
}
