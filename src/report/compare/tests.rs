//! The comparison's tests: the seed's own comparison from the two EA7500 reference rows, every
//! figure group from real result sections, a missing figure, methods that differ, and ten
//! devices in one table.

use super::model::{Unit, Value};
use super::*;
use crate::report::reference::builtin;
use crate::results::RunResult;

fn seed() -> Comparison {
    let refs = builtin().unwrap();
    let get = |id: &str| refs.iter().find(|r| r.id == id).unwrap().clone();
    let devices = vec![
        device_of_reference(&get("ea7500-v1"), "ref:ea7500-v1"),
        device_of_reference(&get("ea7500-v2"), "ref:ea7500-v2"),
    ];
    Comparison::new(devices)
}

fn ratio(c: &Comparison, key: &str) -> f64 {
    let l = c.lines.iter().find(|l| l.key == key).unwrap();
    l.cells[1].ratio.unwrap()
}

#[test]
fn the_seeds_comparison_v2_over_v1() {
    let c = seed();
    assert_eq!(c.devices[0].label, "Linksys EA7500 v1 · IPQ8064");
    assert_eq!(c.devices[1].label, "Linksys EA7500 v2 · MT7621AT");
    // The seed: 6.20 Gbit/s against 611 Mbit/s, SHA-512 46.2 against 6.5 MB/s, RSA 111.9/10.5.
    assert!((ratio(&c, "loopback.tcp") - 611.0 / 6200.0).abs() < 1e-9);
    assert!((ratio(&c, "crypto.sha-512") - 6513660.0 / 46162600.0).abs() < 1e-9);
    assert!((ratio(&c, "crypto.rsa-sign") - 10.5 / 111.9).abs() < 1e-9);
    let des = c.lines.iter().find(|l| l.key == "crypto.des").unwrap();
    assert!(matches!(des.cells[1].value, Some(Value::NotMeasured(_))));
    assert_eq!(
        des.cells[1].ratio, None,
        "0.00 is not measured, never a ratio"
    );
    let text = render(&c, Format::Text, Layout::Auto);
    let row = |start: &str| {
        text.lines()
            .find(|l| l.trim_start().starts_with(start))
            .unwrap_or_else(|| panic!("no {start} in\n{text}"))
            .to_string()
    };
    assert!(row("TCP").contains("6.20 Gbit/s") && row("TCP").contains("611 Mbit/s"));
    assert!(row("TCP").trim_end().ends_with("0.10×"), "{text}");
    assert!(row("SHA-512").trim_end().ends_with("0.14×"), "{text}");
    assert!(row("RSA Sign").trim_end().ends_with("0.09×"), "{text}");
    assert_eq!(row("DES").matches("not measured").count(), 2);
    assert!(
        !text.contains('⚠'),
        "same methods, nothing flagged:\n{text}"
    );
    assert!(
        text.contains("B/A, an order of magnitude or more: loopback TCP 0.10×"),
        "{text}"
    );
    assert!(text.contains("better on 0, worse on 13"), "{text}");
    assert!(
        text.lines().all(|l| l.chars().count() <= text::WIDTH),
        "{text}"
    );
}

/// A result with every section, from real captures where the tree has them: the OpenSSL
/// 3.0.19 speed run imported, iperf3's -J of a TCP test over loopback, an RRUL through the lab.
fn full(engine: &str, cc: &str, length: u32, scale: f64) -> RunResult {
    let mut run = RunResult::new("2026-12-06T00:00:00Z".into());
    run.device = Some(crate::results::device::DeviceInfo {
        soc: Some("MediaTek MT7621 ver:1 eco:3".into()),
        model: Some("Linksys EA7500 v2".into()),
        hostname: Some("OpenWrt".into()),
        cores: Some(4),
        bogomips: Some("586.13".into()),
        openwrt_release: Some("24.10.0".into()),
        revision: Some("r28427".into()),
        kernel: Some("6.6.73".into()),
        ..Default::default()
    });
    // `crypto --import tests/fixtures/openssl/openssl-3.0.19-stdout.txt --json` (a real capture).
    let saved: RunResult = serde_json::from_str(include_str!(
        "../../../tests/fixtures/results/crypto-openssl-3.0.19.json"
    ))
    .unwrap();
    let mut crypto = saved.crypto.unwrap();
    crypto.engine.version = engine.into();
    for b in &mut crypto.bulk {
        for v in b.bytes_per_sec.iter_mut().flatten() {
            *v *= scale;
        }
    }
    run.crypto = Some(crypto);
    let doc: serde_json::Value = serde_json::from_str(include_str!(
        "../../../tests/fixtures/iperf3/iperf3-tcp.json"
    ))
    .unwrap();
    let mut t = crate::results::iperf3_doc::from_iperf3_json(&doc).unwrap();
    t.role = crate::results::throughput::Role::Loopback;
    t.sender_tcp_congestion = Some(cc.into());
    t.setup.duration = length;
    t.sum_received.bits_per_second *= scale;
    run.throughput = Some(t);
    let mut lat: crate::results::latency::LatencyResult = serde_json::from_str(include_str!(
        "../../../tests/fixtures/lab/rrul-20mbit-64000.json"
    ))
    .unwrap();
    lat.congestion_control = Some(cc.into());
    run.latency = Some(lat);
    run.rpm = Some(
        serde_json::from_value(serde_json::json!({
            "target": "127.0.0.1:5201", "transport": "routerbench TCP", "mode": "download",
            "started_at": "", "t0_unix_s": 0.0,
            "params": {"mad": 4, "interval_s": 1.0, "trimmed_mean_percent": 95.0, "sdt": 0.05,
                "initial_connections": 1, "connections_per_interval": 1, "max_connections": 16,
                "max_probes_per_second": 100.0, "probe_capacity_share": 0.05, "time_limit_s": 20.0},
            "runs": [{"direction": "download", "intervals": [], "probes": [],
                "score": {"window_start_s": 0.0, "window_end_s": 4.0, "rpm": 1841.0 * scale,
                    "foreign_probes": 10, "self_probes": 10},
                "goodput_confidence": "High", "rpm_confidence": "High",
                "connections": 4, "end": "stable"}],
            "idle_latency_ms": 0.2
        }))
        .unwrap(),
    );
    run.sqm_capacity = Some(crate::results::lab::SqmCapacity {
        qdisc: "cake".into(),
        place: "userspace".into(),
        capacity_bps: Some((3e9 * scale) as u64),
        stopped_by: Some(crate::results::lab::SearchStop::Bracketed),
        method: "4 flows, 5 s per rate".into(),
        ..Default::default()
    });
    let mut stress = crate::results::stress::StressResult {
        measured_s: 120.0,
        ..Default::default()
    };
    stress.analysis.stability.stable = true;
    stress.analysis.drift.crypto_change_pct = Some(-1.5);
    run.stress = Some(stress);
    run
}

#[test]
fn every_figure_group_is_compared_and_methods_that_differ_are_flagged() {
    let opts = Options::default();
    let a = device_of_result(&full("OpenSSL 3.0.19", "bbr", 10, 1.0), "a.json", &opts);
    let b = device_of_result(
        &full("RustCrypto (no libcrypto found)", "reno", 3, 0.5),
        "b.json",
        &opts,
    );
    assert_eq!(
        a.label, "Linksys EA7500 v2 · MT7621",
        "OpenWrt is no hostname"
    );
    let mut devices = vec![a, b];
    unique_labels(&mut devices);
    assert_eq!(devices[0].label, "Linksys EA7500 v2 · MT7621 (a)");
    let mut twins = vec![devices[0].clone(), devices[0].clone(), devices[0].clone()];
    for (d, input) in twins
        .iter_mut()
        .zip(["x/latest.json", "y/latest.json", "y/latest.json"])
    {
        d.label = "vm".into();
        d.input = input.into();
    }
    unique_labels(&mut twins);
    let labels: Vec<&str> = twins.iter().map(|d| d.label.as_str()).collect();
    assert_eq!(labels, ["vm (x/latest)", "vm #2", "vm #3"]);
    let c = Comparison::new(devices);
    for g in [
        "identity",
        "loopback",
        "crypto",
        "wireguard",
        "rrul",
        "rpm",
        "sqm",
        "stress",
    ] {
        if g == "wireguard" {
            continue; // the 3.0.19 capture has no AEAD rows
        }
        assert!(c.lines.iter().any(|l| l.group == g), "no {g} line");
    }
    let line = |key: &str| c.lines.iter().find(|l| l.key == key).unwrap();
    assert!((line("loopback.tcp").cells[1].ratio.unwrap() - 0.5).abs() < 1e-9);
    assert!((line("rpm.rpm-download").cells[1].ratio.unwrap() - 0.5).abs() < 1e-9);
    assert!((line("sqm.cake").cells[1].ratio.unwrap() - 0.5).abs() < 1e-9);
    let lo = &line("loopback.tcp").cells[1].flags;
    assert!(
        lo.contains(&"congestion control bbr (A) vs reno (B)".to_string()),
        "{lo:?}"
    );
    assert!(
        lo.contains(&"length 10 s (A) vs 3 s (B)".to_string()),
        "{lo:?}"
    );
    let md5 = &line("crypto.md5").cells[1].flags;
    assert_eq!(md5, &["engine OpenSSL (A) vs RustCrypto (B)"]);
    let rrul = &line("rrul.loaded-latency").cells[1].flags;
    assert_eq!(rrul, &["congestion control bbr (A) vs reno (B)"]);
    assert!(line("stress.stability").cells[1].flags.is_empty());
    assert_eq!(
        line("identity.openwrt").cells[0].value,
        Some(Value::Text("24.10.0 r28427".into()))
    );
    let text = render(&c, Format::Text, Layout::Auto);
    assert!(
        text.contains(" engine OpenSSL (A) vs RustCrypto (B)\n"),
        "{text}"
    );
    assert!(
        text.contains("0.50× ⚠1,2"),
        "loopback: cc and length differ\n{text}"
    );
    assert!(
        text.lines().all(|l| l.chars().count() <= text::WIDTH),
        "{text}"
    );
    let json: serde_json::Value =
        serde_json::from_str(&render(&c, Format::Json, Layout::Auto)).unwrap();
    assert_eq!(json["comparison"]["devices"].as_array().unwrap().len(), 2);
    let csv = render(&c, Format::Csv, Layout::Auto);
    assert!(
        csv.starts_with("device,label,input,source,identity.soc (text)"),
        "{csv}"
    );
    assert_eq!(csv.lines().count(), 3);
}

/// A lab with a forwarding capacity (NAT off and on, 4 flows) and a phases test.
fn lab_and_phases(goodput: f64, rtt: f64) -> RunResult {
    use crate::results::lab::{CapacityPoint, CapacityResult, LabConfig, LabResult, LabTheory};
    use crate::results::latency::{LatencyResult, PhaseSummary, SeriesStats};
    let cfg: LabConfig = serde_json::from_value(serde_json::json!({
        "name": "rblab", "ns_lan": "rblab-lan", "ns_rtr": "rblab-rtr", "ns_wan": "rblab-wan",
        "lan_ip": "10.201.1.2", "rtr_lan_ip": "10.201.1.1", "rtr_wan_ip": "10.201.2.1",
        "wan_ip": "10.201.2.2", "up_rate_bps": 18000000, "down_rate_bps": 18000000,
        "buffer_bytes": 90000, "burst_bytes": 15360, "shaper": "tbf", "nat": false,
        "offloads": false, "cc": "reno", "ns_cc": "reno"
    }))
    .unwrap();
    let theory = LabTheory {
        up_queue_delay_ms: Some(40.0),
        down_queue_delay_ms: Some(40.0),
        goodput_ratio: 1448.0 / 1514.0,
        up_goodput_bps: None,
        down_goodput_bps: None,
    };
    let mut lab = LabResult::new(cfg, theory);
    lab.capacity = Some(CapacityResult {
        generator: "routerbench".into(),
        points: [false, true]
            .iter()
            .map(|&nat| CapacityPoint {
                nat,
                flows: 4,
                offloads: false,
                goodput_bps: if nat { goodput / 2.0 } else { goodput },
                seconds: 5.0,
                retransmits: None,
            })
            .collect(),
        ..Default::default()
    });
    let mut run = RunResult::new("2026-12-06T00:00:00Z".into());
    run.lab = Some(lab);
    let mut lat: LatencyResult = serde_json::from_str(include_str!(
        "../../../tests/fixtures/lab/rrul-20mbit-64000.json"
    ))
    .unwrap();
    lat.test = "phases".into();
    let stats = |m: f64| SeriesStats {
        n: 10,
        median: Some(m),
        ..Default::default()
    };
    lat.phases = ["download", "upload", "both"]
        .iter()
        .map(|p| PhaseSummary {
            phase: p.to_string(),
            load_start_s: 0.0,
            load_end_s: 10.0,
            from_s: 2.0,
            to_s: 10.0,
            download_mbps: (*p != "upload").then_some(17.0),
            upload_mbps: (*p != "download").then_some(16.0),
            rtt_ms: stats(rtt),
            rtt_increase_ms: Some(rtt - 0.1),
            owd_up_ms: stats(rtt / 2.0),
            owd_down_ms: stats(rtt / 2.0),
            owd_up_increase_ms: Some(rtt / 2.0),
            owd_down_increase_ms: Some(rtt / 2.0),
            probes_sent: 80,
            probes_lost: 0,
        })
        .collect();
    run.latency = Some(lat);
    run
}

#[test]
fn phases_and_forwarding_are_compared_per_phase_and_per_point() {
    let opts = Options::default();
    let c = Comparison::new(vec![
        device_of_result(&lab_and_phases(2e9, 36.0), "a.json", &opts),
        device_of_result(&lab_and_phases(1e9, 52.0), "b.json", &opts),
    ]);
    let line = |key: &str| {
        c.lines.iter().find(|l| l.key == key).unwrap_or_else(|| {
            panic!(
                "no {key}: {:?}",
                c.lines.iter().map(|l| &l.key).collect::<Vec<_>>()
            )
        })
    };
    assert!((line("forwarding.4-flows").cells[1].ratio.unwrap() - 0.5).abs() < 1e-9);
    assert!(line("forwarding.4-flows-nat").cells[0].value.is_some());
    assert!((line("phases.download-rtt").cells[1].ratio.unwrap() - 52.0 / 36.0).abs() < 1e-9);
    assert_eq!(
        line("phases.download-rtt").cells[0].rank,
        Some(1),
        "lower is better"
    );
    assert!(c.lines.iter().any(|l| l.key == "phases.both-up-delay"));
    assert!(
        c.lines.iter().all(|l| l.key != "phases.download-up"),
        "the download phase uploads nothing"
    );
    assert!(
        c.lines.iter().all(|l| l.group != "rrul"),
        "no pooled figures for phases"
    );
}

#[test]
fn a_figure_one_device_lacks_is_missing_never_zero() {
    let opts = Options::default();
    let mut b = full("OpenSSL 3.0.19", "bbr", 10, 1.0);
    b.throughput = None;
    b.stress = None;
    let c = Comparison::new(vec![
        device_of_result(&full("OpenSSL 3.0.19", "bbr", 10, 1.0), "a.json", &opts),
        device_of_result(&b, "b.json", &opts),
    ]);
    let lo = c.lines.iter().find(|l| l.key == "loopback.tcp").unwrap();
    assert_eq!(lo.cells[1].value, None);
    assert_eq!((lo.cells[1].ratio, lo.cells[1].rank), (None, None));
    assert_eq!(lo.cells[0].rank, Some(1));
    for (format, missing) in [(Format::Text, "missing"), (Format::Markdown, "missing")] {
        let out = render(&c, format, Layout::Side);
        let row = out.lines().find(|l| l.contains("TCP")).unwrap();
        assert!(row.contains(missing) && !row.contains(" 0 "), "{row}");
    }
    let csv = render(&c, Format::Csv, Layout::Auto);
    let col = csv
        .lines()
        .next()
        .unwrap()
        .split(',')
        .position(|h| h.starts_with("loopback.tcp"))
        .unwrap();
    assert_eq!(csv.lines().nth(2).unwrap().split(',').nth(col), Some(""));
}

#[test]
fn ten_devices_make_one_table_with_ranks_that_fits_and_sorts() {
    let refs = builtin().unwrap();
    let mut devices: Vec<Device> = refs
        .iter()
        .take(10)
        .map(|r| device_of_reference(r, &format!("ref:{}", r.id)))
        .collect();
    assert_eq!(devices.len(), 10);
    unique_labels(&mut devices);
    let labels: std::collections::BTreeSet<&str> =
        devices.iter().map(|d| d.label.as_str()).collect();
    assert_eq!(labels.len(), 10, "labels are unique");
    let c = Comparison::new(devices);
    assert_eq!(Layout::Auto.resolve(10), Layout::Table);
    let text = render(&c, Format::Text, Layout::Auto);
    assert!(
        text.lines().all(|l| l.chars().count() <= text::WIDTH),
        "{text}"
    );
    // A line per device in the first crypto table, each with its rank.
    let md5 = c.lines.iter().find(|l| l.key == "crypto.md5").unwrap();
    let ranks: Vec<usize> = md5.cells.iter().filter_map(|x| x.rank).collect();
    assert_eq!(ranks.len(), 10);
    assert!(ranks.contains(&1) && ranks.iter().all(|r| *r <= 10));
    let best = md5.cells.iter().position(|x| x.rank == Some(1)).unwrap();
    assert!(text.contains(" #1"), "{text}");
    // Sorted by MD5: the fastest first, and ranks stay with their devices.
    let line = c.find("md5").unwrap().clone();
    let sorted = c.clone().reordered(&c.order_by(&line));
    assert_eq!(sorted.devices[0].label, c.devices[best].label);
    let m = sorted.lines.iter().find(|l| l.key == "crypto.md5").unwrap();
    assert_eq!(m.cells[0].rank, Some(1));
    assert!(c.find("loopback").is_some() && c.find("no-such").is_none());
    let md = render(&c, Format::Markdown, Layout::Auto);
    assert_eq!(
        md.lines().filter(|l| l.starts_with("| ")).count(),
        11,
        "{md}"
    );
}

#[test]
fn units_and_labels() {
    assert_eq!(short_soc("Qualcomm Atheros QCA9558 ver 1 rev 0"), "QCA9558");
    assert_eq!(short_soc("Intel(R) Xeon(R) Processor"), "Xeon");
    assert_eq!(short_soc("MediaTek MT7621 ver:1 eco:3"), "MT7621");
    assert_eq!(cut("abcdef", 4), "abc…");
    let c = seed();
    let l = c.lines.iter().find(|l| l.key == "identity.cpus").unwrap();
    assert_eq!(l.unit, Unit::Count);
    assert_eq!(l.cells[1].rank, None, "CPUs are not a score");
}

/// A result with one radio, as `run` keeps `routerbench wifi`'s report.
fn with_radio(driver: &str, txqs: bool, af: bool, aql: bool, reported: Option<bool>) -> RunResult {
    use crate::results::wifi::{Radio, WifiChannel, WifiFeatures, WifiReport};
    let mut r = RunResult::new("2026-12-06T00:00:00Z".into());
    r.wifi = Some(WifiReport {
        interval_s: 0.5,
        radios: vec![Radio {
            phy: "phy0".into(),
            driver: Some(driver.into()),
            bands: vec!["2.4 GHz".into()],
            channel: Some(WifiChannel {
                freq_mhz: 2412,
                number: Some(1),
                band: "2.4 GHz".into(),
                ..Default::default()
            }),
            features: WifiFeatures {
                txqs,
                airtime_fairness: af,
                aql,
            },
            airtime_reported: reported,
            ..Default::default()
        }],
        ..Default::default()
    });
    r
}

#[test]
fn wifi_features_side_by_side_per_band() {
    let a = with_radio("ath9k", true, true, false, Some(true));
    let b = with_radio("ath10k_pci", true, false, true, None);
    let opts = Options::default();
    let c = Comparison::new(vec![
        device_of_result(&a, "c7v2.json", &opts),
        device_of_result(&b, "r7800.json", &opts),
    ]);
    let text = render(&c, Format::Text, Layout::Auto);
    let row = |start: &str| {
        text.lines()
            .find(|l| l.trim_start().starts_with(start))
            .unwrap_or_else(|| panic!("no {start} in\n{text}"))
            .to_string()
    };
    assert!(
        text.contains("Wi-Fi per band: fq_codel queues, airtime fairness"),
        "{text}"
    );
    assert!(row("2.4 GHz driver").contains("ath10k_pci"), "{text}");
    let af = row("2.4 GHz fairness");
    assert!(af.contains("yes") && af.contains("no"), "{af}");
    // Not known on one side: missing, not "no".
    assert!(row("2.4 GHz airtime").contains("missing"), "{text}");
    assert!(row("2.4 GHz AQL").contains("no") && row("2.4 GHz AQL").contains("yes"));
    assert!(
        text.lines().all(|l| l.chars().count() <= text::WIDTH),
        "{text}"
    );
}

/// A run that checked itself and failed is marked: its verdict in the identity lines, its
/// measured cells flagged beside a clean run's, and a line under the table.
#[test]
fn a_row_whose_validity_failed_is_marked() {
    use crate::results::validity::{ClockCheck, IdleCheck, Validity, Verdict};
    let check = |verdict: Verdict, problems: &[&str]| Validity {
        verdict,
        problems: problems.iter().map(|p| p.to_string()).collect(),
        idle: IdleCheck {
            limit_s: 3.0,
            waited_s: 3.0,
            idle: verdict == Verdict::Pass,
            others_pct: Some(1.0),
        },
        windows: Vec::new(),
        whole: None,
        cpufreq: Vec::new(),
        temp_before_c: None,
        temp_after_c: None,
        clock: ClockCheck::default(),
        notes: Vec::new(),
    };
    let mut clean = full("OpenSSL 3.0.19", "cubic", 10, 1.0);
    clean.validity = Some(check(Verdict::Pass, &[]));
    let mut busy = full("OpenSSL 3.0.19", "cubic", 10, 0.5);
    busy.device.as_mut().unwrap().hostname = Some("busy".into());
    busy.validity = Some(check(
        Verdict::Fail,
        &["background load: other processes used 98 % of a CPU on average while measuring"],
    ));
    let opts = Options::default();
    let c = Comparison::new(vec![
        device_of_result(&clean, "clean.json", &opts),
        device_of_result(&busy, "busy.json", &opts),
    ]);
    let v = c
        .lines
        .iter()
        .find(|l| l.key == "identity.validity")
        .unwrap();
    assert_eq!(v.cells[0].value, Some(Value::Text("pass".into())));
    assert_eq!(
        v.cells[1].value,
        Some(Value::Text("FAIL: background load".into()))
    );
    let md5 = c.lines.iter().find(|l| l.key == "crypto.md5").unwrap();
    assert_eq!(
        md5.cells[1].flags,
        ["validity passed (A) vs failed (B)"],
        "{:?}",
        md5.cells[1]
    );
    let text = render(&c, Format::Text, Layout::Auto);
    assert!(
        text.contains("✗ B (busy · MT7621) failed its validity checks (background load)"),
        "{text}"
    );
    assert!(text.contains("validity passed (A) vs failed (B)"), "{text}");
    // Two clean runs: nothing marked.
    let c = Comparison::new(vec![
        device_of_result(&clean, "a.json", &opts),
        device_of_result(&clean, "b.json", &opts),
    ]);
    let text = render(&c, Format::Text, Layout::Auto);
    assert!(
        !text.contains('✗') && !text.contains("validity failed"),
        "{text}"
    );
}
