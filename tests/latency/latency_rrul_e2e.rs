//! End to end: a routerbench-protocol server on loopback, the real binary running
//! `rrul --length 6`, and checks on its JSON and `.flent.gz` (read back by flent when installed).

use routerbench::latency::server::Bounds;
use routerbench::server::latency_only::spawn_in_process;
use std::process::Command;

fn flent_available() -> bool {
    Command::new("flent")
        .arg("--version")
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

#[test]
fn rrul_over_loopback_writes_json_and_flent() {
    let (addr, service) =
        spawn_in_process("127.0.0.1:0".parse().unwrap(), Bounds::default()).unwrap();
    let dir = std::env::temp_dir().join(format!("rb-rrul-e2e-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let json = dir.join("rrul.json");
    let flent = dir.join("rrul.flent.gz");
    // reno: allowed for every user and not this machine's default (bbr), so a read-back of
    // "reno" on both ends proves --cc reached both sockets.
    let out = Command::new(env!("CARGO_BIN_EXE_routerbench"))
        .args([
            "rrul",
            "127.0.0.1",
            "-p",
            &addr.port().to_string(),
            "--length",
            "6",
            "--cc",
            "reno",
            "-q",
        ])
        .arg("--json")
        .arg(&json)
        .arg("--flent")
        .arg(&flent)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "rrul failed: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    println!("{stdout}");
    assert!(stdout.contains("grade"), "summary printed: {stdout}");

    let run: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let r = &run["latency"];
    assert_eq!(r["test"], "rrul");
    assert_eq!(r["length_s"], 6.0);
    assert_eq!(r["total_length_s"], 16.0);
    let flows = r["flows"].as_array().unwrap();
    let names: Vec<&str> = flows.iter().map(|f| f["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "TCP upload BE",
            "TCP upload BK",
            "TCP upload CS5",
            "TCP upload EF",
            "TCP download BE",
            "TCP download BK",
            "TCP download CS5",
            "TCP download EF"
        ]
    );
    for f in flows {
        let samples = f["samples"].as_array().unwrap();
        assert_eq!(samples.len(), 30, "{}: 6 s / 0.2 s steps", f["name"]);
        let nonzero = samples
            .iter()
            .filter(|s| s["mbps"].as_f64().unwrap() > 0.0)
            .count();
        assert!(
            nonzero >= 20,
            "{}: only {nonzero} of 30 steps moved data",
            f["name"]
        );
        assert!(f["bytes"].as_u64().unwrap() > 0);
        // DSCP and congestion control read back from the sockets on both ends.
        assert_eq!(f["tos_client"], f["tos"], "{}", f["name"]);
        assert_eq!(f["tos_server"], f["tos"], "{}", f["name"]);
        assert_eq!(f["cc_client"], "reno", "{}", f["name"]);
        assert_eq!(f["cc_server"], "reno", "{}", f["name"]);
    }
    let tos: Vec<u64> = flows.iter().map(|f| f["tos"].as_u64().unwrap()).collect();
    assert_eq!(tos, [0x00, 0x20, 0xA0, 0xB8, 0x00, 0x20, 0xA0, 0xB8]);
    let probes = r["probes"].as_array().unwrap();
    let pnames: Vec<&str> = probes.iter().map(|p| p["name"].as_str().unwrap()).collect();
    assert_eq!(
        pnames,
        [
            "Ping (ms) UDP EF",
            "Ping (ms) UDP BK",
            "Ping (ms) UDP BE",
            "Ping (ms) ICMP"
        ]
    );
    for p in probes {
        let name = p["name"].as_str().unwrap();
        if name.contains("ICMP") && p["received"] == 0 {
            // Only acceptable when the note explains why ICMP could not run.
            let note = p["note"].as_str().unwrap_or("");
            assert!(
                note.contains("ping_group_range"),
                "ICMP silent without a reason: {note}"
            );
            eprintln!("ICMP probe unavailable here: {note}");
            continue;
        }
        let received = p["received"].as_u64().unwrap();
        assert!(received >= 70, "{name}: {received} of ~80 probes answered");
        assert!(p["rtt_ms"]["median"].as_f64().unwrap() >= 0.0);
        assert!(
            p["loaded_rtt_ms"]["n"].as_u64().unwrap() > 0,
            "{name}: no loaded samples"
        );
        if name.contains("UDP") {
            assert_eq!(
                p["lost_up"].as_u64().unwrap() + p["lost_down"].as_u64().unwrap(),
                p["sent"].as_u64().unwrap() - received
            );
        }
    }
    let s = &r["summary"];
    assert!(s["upload_mbps"].as_f64().unwrap() > 0.0);
    assert!(s["download_mbps"].as_f64().unwrap() > 0.0);
    assert!(s["grade"].is_string());
    assert!(s["round_trips_per_minute_loaded"].as_f64().unwrap() > 0.0);
    // Same clock on both ends: the estimated offset must be tiny (well under a millisecond).
    assert!(
        r["clock"]["offset_ms"].as_f64().unwrap().abs() < 1.0,
        "{}",
        r["clock"]
    );

    // The .flent.gz: gzip JSON, version 4, grid over 16 s.
    let gz = std::fs::File::open(&flent).unwrap();
    let doc: serde_json::Value = serde_json::from_reader(flate2::read::GzDecoder::new(gz)).unwrap();
    assert_eq!(doc["version"], 4);
    assert_eq!(doc["x_values"].as_array().unwrap().len(), 81);
    for series in [
        "TCP upload BE",
        "TCP download EF",
        "TCP totals",
        "Ping (ms) UDP EF",
        "Ping (ms) avg",
    ] {
        let vals = doc["results"][series]
            .as_array()
            .unwrap_or_else(|| panic!("{series} missing"));
        assert!(vals.iter().any(|v| v.is_number()), "{series} has no values");
    }
    assert_eq!(doc["metadata"]["NAME"], "rrul");
    // Sender TCP RTT rides in the raw values under flent's `tcp_rtt` key (its tcp_rtt plots).
    let raw = doc["raw_values"]["TCP upload EF"].as_array().unwrap();
    assert!(
        raw.iter().any(|p| p["tcp_rtt"].is_number()),
        "no tcp_rtt in raw values"
    );
    assert_eq!(
        doc["metadata"]["TEST_PARAMETERS"]["tcp_cong_control"],
        "reno"
    );

    if flent_available() {
        let out = Command::new("flent")
            .arg("-i")
            .arg(&flent)
            .args(["-f", "summary"])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "flent could not read the file: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        for series in [
            "TCP upload BE",
            "TCP download CS5",
            "Ping (ms) UDP BK",
            "Ping (ms) ICMP",
        ] {
            assert!(
                text.contains(series),
                "flent summary lacks {series}:\n{text}"
            );
        }
        let png = dir.join("plot.png");
        let plot = Command::new("flent")
            .arg("-i")
            .arg(&flent)
            .args(["-p", "all_scaled", "-o"])
            .arg(&png)
            .env("QT_QPA_PLATFORM", "offscreen")
            .env("MPLBACKEND", "Agg")
            .output()
            .unwrap();
        if plot.status.success() && png.exists() {
            assert!(
                std::fs::metadata(&png).unwrap().len() > 10_000,
                "plot is empty"
            );
        } else {
            eprintln!(
                "flent read the file but could not plot (matplotlib missing?): {}",
                String::from_utf8_lossy(&plot.stderr)
            );
        }
    } else {
        eprintln!("skipping the flent read-back: flent is not installed (apt-get install flent)");
    }
    service.shutdown();
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn tcp_ndown_over_ipv6_with_cubic() {
    let Ok((addr, service)) = spawn_in_process("[::1]:0".parse().unwrap(), Bounds::default())
    else {
        eprintln!("skipping: no IPv6 loopback here");
        return;
    };
    let cfg = routerbench::latency::TestConfig {
        kind: routerbench::latency::TestKind::TcpNdown,
        host: "::1".into(),
        port: addr.port(),
        streams: 3,
        length: std::time::Duration::from_secs(1),
        delay: std::time::Duration::from_millis(600),
        cc: Some("cubic".into()),
        ..Default::default()
    };
    let r = match routerbench::latency::run_test(&cfg, &routerbench::util::progress::NoProgress) {
        Ok(r) => r,
        Err(e) if e.to_string().contains("congestion control") => {
            eprintln!("skipping: cubic not allowed here ({e})");
            return;
        }
        Err(e) => panic!("{e}"),
    };
    assert_eq!(r.ip_version, 6);
    assert_eq!(r.flows.len(), 3);
    for f in &r.flows {
        assert_eq!(f.direction, "download");
        assert!(f.bytes > 0, "{} moved no data", f.name);
        assert_eq!(f.cc_client.as_deref(), Some("cubic"));
        assert_eq!(f.cc_server.as_deref(), Some("cubic"));
        assert!(
            f.tcp_rtt_ms.n > 0,
            "server-side TCP RTT reported for downloads"
        );
    }
    assert_eq!(r.flows[2].name, "TCP download::3");
    assert_eq!(r.probes[0].name, "Ping (ms) ICMP");
    assert!(r.summary.download_mbps.unwrap() > 0.0);
    assert_eq!(r.summary.upload_mbps, None);
    service.shutdown();
}
