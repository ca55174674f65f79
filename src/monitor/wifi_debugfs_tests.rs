//! The debugfs texts as the kernel's format strings print them (`net/mac80211/debugfs.c`,
//! `debugfs_sta.c`; docs/wifi.md), including the swapped `aqm` labels and both airtime formats.

use super::*;

/// `phyN/aqm` (debugfs.c `aqm_read`): the fourth and fifth values are printed from
/// `fq->overmemory, fq->overlimit` under the labels `fq_overlimit`, `fq_overmemory`. Here the
/// radio had 7 overlimit drops and 3 overmemory drops, so the file says overlimit 3.
const PHY_AQM: &str = "access name value\nR fq_flows_cnt 4096\nR fq_backlog 1514\nR fq_overlimit 3\nR fq_overmemory 7\nR fq_collisions 2\nR fq_memory_usage 12544\nRW fq_memory_limit 16777216\nRW fq_limit 8192\nRW fq_quantum 300\n";

#[test]
fn phy_aqm_labels_are_put_right() {
    let v = parse_phy_aqm(PHY_AQM);
    let get = |n: &str| v.iter().find(|(k, _)| k == n).map(|(_, x)| *x);
    assert_eq!(
        get("fq_overlimit"),
        Some(7),
        "the value printed as overmemory"
    );
    assert_eq!(
        get("fq_overmemory"),
        Some(3),
        "the value printed as overlimit"
    );
    assert_eq!(get("fq_backlog"), Some(1514));
    assert_eq!(get("fq_limit"), Some(8192));
    assert_eq!(get("fq_memory_limit"), Some(16_777_216));
    assert_eq!(v.len(), 9, "the header is not a value");
    // One label missing: nothing to swap, nothing invented.
    let v = parse_phy_aqm("access name value\nR fq_overlimit 3\n");
    assert_eq!(v, [("fq_overlimit".to_string(), 3)]);
}

#[test]
fn airtime_flags_and_aql_files() {
    assert_eq!(
        parse_airtime_flags("AIRTIME_TX\t(1)\nAIRTIME_RX\t(2)\n"),
        ["AIRTIME_TX", "AIRTIME_RX"]
    );
    assert!(parse_airtime_flags("").is_empty());
    // aql_txq_limit_read: "AC\tAQL limit low\tAQL limit high\n" "VO\t%u\t\t%u\n" …, and
    // OpenWrt's broadcast/multicast row.
    let t = "AC\tAQL limit low\tAQL limit high\nVO\t5000\t\t12000\nVI\t5000\t\t12000\nBE\t5000\t\t12000\nBK\t5000\t\t12000\nBC/MC\t50000\n";
    let l = parse_aql_txq_limit(t);
    assert_eq!(l.len(), 5);
    assert_eq!(
        l[2],
        AqlLimit {
            ac: "BE".into(),
            low_us: 5000,
            high_us: 12000
        }
    );
    assert_eq!((l[4].low_us, l[4].high_us), (50_000, 50_000));
    // aql_pending_read.
    let p = parse_aql_pending(
        "AC     AQL pending\nVO     0 us\nVI     120 us\nBE     8432 us\nBK     0 us\ntotal  8552 us\n",
    );
    assert_eq!(p.len(), 5);
    assert_eq!(p[4], ("total".to_string(), 8552));
    assert_eq!(p[2], ("BE".to_string(), 8432));
}

#[test]
fn station_airtime_deficit_and_virtual_time() {
    // 6.0+ (and up to 5.10): "Deficit: VO: %d us …" with a negative deficit.
    let mut d = StationDebugfs::default();
    parse_station_airtime(
        "RX: 81234 us\nTX: 1834567 us\nWeight: 256\nDeficit: VO: 256 us VI: 256 us BE: -1834 us BK: 256 us\n",
        &mut d,
    );
    assert_eq!(d.airtime_rx_us, Some(81_234));
    assert_eq!(d.airtime_tx_us, Some(1_834_567));
    assert_eq!(d.airtime_weight, Some(256));
    assert_eq!(d.airtime_scheduler.as_deref(), Some("deficit"));
    assert_eq!(d.airtime_per_ac_us[2], ("BE".to_string(), -1834));
    assert_eq!(d.airtime_per_ac_us.len(), 4);
    // 5.11–5.19: "Virt-T: VO: %lld us …".
    let mut v = StationDebugfs::default();
    parse_station_airtime(
        "RX: 0 us\nTX: 52 us\nWeight: 128\nVirt-T: VO: 0 us VI: 0 us BE: 1200000 us BK: 0 us\n",
        &mut v,
    );
    assert_eq!(v.airtime_scheduler.as_deref(), Some("virtual time"));
    assert_eq!(v.airtime_weight, Some(128));
    assert_eq!(v.airtime_per_ac_us[2].1, 1_200_000);
}

#[test]
fn station_aql_and_codel() {
    let mut d = StationDebugfs::default();
    parse_station_aql(
        "Q depth: VO: 0 us VI: 0 us BE: 4312 us BK: 0 us\nQ limit[low/high]: VO: 5000/12000 VI: 5000/12000 BE: 5000/12000 BK: 5000/12000\n",
        &mut d,
    );
    assert_eq!(d.aql_queued_us[2], ("BE".to_string(), 4312));
    assert_eq!(d.aql_limits_us.len(), 4);
    assert_eq!(d.aql_limits_us[0].high_us, 12_000);
    parse_station_codel(
        "target 20000us interval 100000us ecn yes\ntid ac backlog-bytes backlog-packets new-flows drops marks overlimit collisions tx-bytes tx-packets flags\n0 2 0 0 41 0 0 0 0 123456 98 0x0(RUN AMPDU)\n",
        &mut d,
    );
    assert_eq!(d.codel_target_us, Some(20_000));
    assert_eq!(d.codel_interval_us, Some(100_000));
    assert_eq!(d.codel_ecn, Some(true));
}

#[test]
fn garbage_never_panics() {
    let junk = [
        "",
        "\n\n",
        "R",
        "R fq_backlog",
        "RX:",
        "Deficit:",
        "Q depth: VO:",
        "VO -5 x",
        "Q limit[low/high]: VO: 5/",
        "target",
        "\u{fffd}\u{0}:",
    ];
    for j in junk {
        let _ = parse_phy_aqm(j);
        let _ = parse_aql_txq_limit(j);
        let _ = parse_aql_pending(j);
        let mut d = StationDebugfs::default();
        parse_station_airtime(j, &mut d);
        parse_station_aql(j, &mut d);
        parse_station_codel(j, &mut d);
    }
}

#[test]
fn reader_notes_what_is_missing() {
    let root = std::env::temp_dir().join(format!("rb-dbgfs-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(&root).unwrap();
    // No /sys/kernel/debug at all.
    let r = DebugfsReader::new(&root);
    assert!(
        r.missing.as_deref().unwrap().contains("no debugfs"),
        "{:?}",
        r.missing
    );
    assert!(r.radio("phy0").is_err());
    // Mounted but empty: not mounted.
    std::fs::create_dir_all(root.join(DEBUGFS)).unwrap();
    let r = DebugfsReader::new(&root);
    assert!(
        r.missing.as_deref().unwrap().contains("not mounted"),
        "{:?}",
        r.missing
    );
    // A radio without mac80211's files (Debian: only hwsim/).
    let phy = root.join(DEBUGFS).join("ieee80211/phy0");
    std::fs::create_dir_all(phy.join("hwsim")).unwrap();
    let r = DebugfsReader::new(&root);
    assert_eq!(r.missing, None);
    let e = r.radio("phy0").unwrap_err();
    assert!(e.contains("CONFIG_MAC80211_DEBUGFS"), "{e}");
    assert_eq!(r.station("phy0", "wlan0", "02:00:00:00:01:00"), None);
    // OpenWrt's files.
    std::fs::write(phy.join("aqm"), PHY_AQM).unwrap();
    std::fs::write(phy.join("aql_enable"), "1\n").unwrap();
    std::fs::write(phy.join("aql_threshold"), "24000\n").unwrap();
    std::fs::write(
        phy.join("aql_pending"),
        "AC     AQL pending\nVO     0 us\nVI     0 us\nBE     900 us\nBK     0 us\ntotal  900 us\n",
    )
    .unwrap();
    let d = r.radio("phy0").unwrap();
    assert_eq!(d.aql_enable, Some(true));
    assert_eq!(d.aql_threshold_us, Some(24_000));
    assert_eq!(d.airtime_flags, None, "no file, no flags");
    assert_eq!(r.aql_pending_total("phy0"), Some(900));
    let sta = phy.join("netdev:wlan0/stations/02:00:00:00:01:00");
    std::fs::create_dir_all(&sta).unwrap();
    std::fs::write(
        sta.join("airtime"),
        "RX: 1 us\nTX: 2 us\nWeight: 256\nDeficit: VO: 1 us VI: 2 us BE: 3 us BK: 4 us\n",
    )
    .unwrap();
    let s = r.station("phy0", "wlan0", "02:00:00:00:01:00").unwrap();
    assert_eq!(s.airtime_tx_us, Some(2));
    std::fs::remove_dir_all(&root).unwrap();
}
