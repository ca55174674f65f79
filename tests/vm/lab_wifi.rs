//! The Wi-Fi VM router (`lab up --router vm --wifi 2`): bookworm-backports' 6.12 armmp kernel
//! with mac80211_hwsim (three radios), hostapd (Debian's armhf build, with its libraries, in the
//! image) as the access point, two stations each in its own namespace inside the VM. Then
//! `routerbench wifi` inside the VM (two stations with their addresses, hwsim's verdict with
//! mac80211's TXQs), an RRUL from station 1 (its series in the JSON, the flent file and the
//! HTML report; the AP's counters against the test's own bytes within 2 %; the emulation
//! note), a short rtt_fair over both stations (one result each, Jain's index), and `lab down`.
//! It took 37–47 s here (up in 18–24 s on this shared 2-core host), plus ≈ 60 s the first time the
//! packages are fetched into ~/.cache/routerbench/vm.

use crate::support::Bounded;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

fn bounded(c: &mut Command, limit: Duration) -> Output {
    c.bounded(limit)
}

fn ok(o: &Output, what: &str) -> String {
    assert!(
        o.status.success(),
        "{what} failed: {}\n{}",
        String::from_utf8_lossy(&o.stderr),
        String::from_utf8_lossy(&o.stdout)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn json(path: &std::path::Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn wifi_vm_router_two_stations_rrul_and_rtt_fair() {
    let test = "wifi_vm_router_two_stations_rrul_and_rtt_fair";
    let ci =
        std::env::var_os("CI").is_some() || std::env::var_os("ROUTERBENCH_REQUIRE_VM").is_some();
    let missing = if routerbench::lab::sys::is_root() {
        routerbench::lab::vm::preflight()
            .and_then(|_| routerbench::lab::vm::assets::router_binary(None))
            .err()
            .map(|e| e.to_string())
    } else {
        Some("not root".into())
    };
    if let Some(why) = missing {
        assert!(!ci, "CI must run {test}: {why}");
        eprintln!("skip {test}: {why}");
        return;
    }
    let t0 = Instant::now();
    let lab = format!("rbwf{}", std::process::id());
    let _one_vm = crate::support::alone();
    let _guard = crate::support::lab::guard(&lab);
    let rb = env!("CARGO_BIN_EXE_routerbench");
    let dir = std::env::temp_dir().join(&lab);
    std::fs::create_dir_all(&dir).unwrap();

    let up = dir.join("up.json");
    let o = bounded(
        Command::new(rb)
            .args([
                "lab", "up", "--router", "vm", "--wifi", "2", "--name", &lab, "--json",
            ])
            .arg(&up),
        Duration::from_secs(400),
    );
    ok(&o, "lab up --wifi 2");
    let up = json(&up);
    let vm = &up["config"]["router_vm"];
    assert_eq!(vm["kernel_suite"], "backports", "{vm}");
    assert!(vm["kernel"].as_str().unwrap().starts_with("6.12"), "{vm}");
    let pk: Vec<&str> = vm["packages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["package"].as_str().unwrap())
        .collect();
    for want in ["hostapd", "iw", "libc6", "libnl-genl-3-200", "libssl3"] {
        assert!(pk.contains(&want), "{want} not among {pk:?}");
    }
    let stations = vm["wifi"]["stations"].as_array().unwrap();
    assert_eq!(stations.len(), 2, "{vm}");
    assert_eq!(stations[0]["ip"], "10.201.3.11");
    assert_eq!(stations[1]["ip"], "10.201.3.12");
    assert!(
        vm["wifi"]["emulation"]
            .as_str()
            .unwrap()
            .contains("emulated")
    );
    let boot_s = t0.elapsed().as_secs_f64();

    // routerbench wifi on the router (the AP's namespace): both stations with their addresses,
    // hwsim's verdict with mac80211's fq_codel TXQs on 6.12.
    let w = ok(
        &bounded(
            Command::new(rb).args(["lab", "exec", "--name", &lab, "--", "wifi", "--json", "-"]),
            Duration::from_secs(120),
        ),
        "wifi in the VM",
    );
    let w: serde_json::Value = serde_json::from_str(&w).unwrap();
    let radio = &w["radios"][0];
    assert_eq!(radio["driver"], "mac80211_hwsim", "{w}");
    assert_eq!(radio["features"]["txqs"], true, "{w}");
    assert!(
        radio["verdict"]
            .as_str()
            .unwrap()
            .contains("fq_codel queues"),
        "{w}"
    );
    let ips: Vec<&str> = radio["stations"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s["ip"].as_str())
        .collect();
    assert_eq!(ips.len(), 2, "{w}");
    assert!(
        ips.contains(&"10.201.3.11") && ips.contains(&"10.201.3.12"),
        "{w}"
    );
    // A station sees its own radio only (its own /sys in its own namespaces).
    let s1 = ok(
        &bounded(
            Command::new(rb).args([
                "lab",
                "exec",
                "--name",
                &lab,
                "--station",
                "1",
                "--",
                "wifi",
                "--json",
                "-",
            ]),
            Duration::from_secs(120),
        ),
        "wifi in station 1",
    );
    let s1: serde_json::Value = serde_json::from_str(&s1).unwrap();
    assert_eq!(s1["radios"].as_array().unwrap().len(), 1, "{s1}");
    assert_eq!(s1["radios"][0]["phy"], "phy1", "{s1}");

    // An RRUL from station 1.
    let (rj, rf, rh) = (
        dir.join("rrul.json"),
        dir.join("rrul.flent.gz"),
        dir.join("rrul.html"),
    );
    let o = bounded(
        Command::new(rb)
            .args([
                "lab",
                "run",
                "rrul",
                "--name",
                &lab,
                "--station",
                "1",
                "-l",
                "5",
                "--delay",
                "1",
                "-q",
                "--json",
            ])
            .arg(&rj)
            .arg("--flent")
            .arg(&rf),
        Duration::from_secs(300),
    );
    let text = ok(&o, "lab run rrul --station 1");
    assert!(
        text.contains("AP bytes for station 1 (download) match"),
        "{text}"
    );
    assert!(
        text.contains("AP bytes for station 1 (upload) match"),
        "{text}"
    );
    let r = json(&rj);
    assert_eq!(r["lab"]["station"], 1, "{}", r["lab"]);
    let st = &r["lab"]["stations"][0];
    assert_eq!(st["mac"], "02:00:00:00:01:00");
    assert!(st["download_mbps"].as_f64().unwrap() > 0.0, "{st}");
    assert!(st["upload_mbps"].as_f64().unwrap() > 0.0, "{st}");
    let checks = st["bytes_check"].as_array().unwrap();
    assert_eq!(checks.len(), 2, "{st}");
    for c in checks {
        let ratio = c["ratio"].as_f64().unwrap();
        assert!((ratio - 1.0).abs() <= 0.02, "AP vs test bytes: {c}");
    }
    assert!(
        r["lab"]["wifi_emulated"]
            .as_str()
            .unwrap()
            .contains("perfect medium")
    );
    assert!(
        r["notes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n.as_str().unwrap().contains("emulated")),
        "{}",
        r["notes"]
    );
    // Station 1's series from the agent in the VM (the router's samples).
    let wifi = &r["router"]["summary"]["wifi"];
    assert!(
        wifi["stations"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["mac"] == "02:00:00:00:01:00" && s["tx_bytes"].as_u64().unwrap() > 0),
        "{wifi}"
    );
    let mut flent = String::new();
    std::io::Read::read_to_string(
        &mut flate2::read::GzDecoder::new(std::fs::File::open(&rf).unwrap()),
        &mut flent,
    )
    .unwrap();
    assert!(
        flent.contains("02:00:00:00:01:00"),
        "no station series in the flent file"
    );
    ok(
        &bounded(
            Command::new(rb).arg("report").arg(&rj).arg("-o").arg(&rh),
            Duration::from_secs(120),
        ),
        "report",
    );
    let html = std::fs::read_to_string(&rh).unwrap();
    assert!(
        html.contains("02:00:00:00:01:00"),
        "no station in the HTML report"
    );

    // rtt_fair over both stations at once.
    let fj = dir.join("rtt_fair.json");
    let o = bounded(
        Command::new(rb)
            .args([
                "lab", "run", "rtt_fair", "--name", &lab, "-l", "4", "--delay", "1", "-q", "--json",
            ])
            .arg(&fj)
            .arg("--flent")
            .arg(dir.join("rtt_fair.flent.gz")),
        Duration::from_secs(300),
    );
    let text = ok(&o, "lab run rtt_fair");
    assert!(text.contains("Jain's fairness index"), "{text}");
    let f = json(&fj);
    assert_eq!(f["lab"]["test"], "rtt_fair");
    let per = f["lab"]["stations"].as_array().unwrap();
    assert_eq!(per.len(), 2, "{}", f["lab"]);
    for (k, s) in per.iter().enumerate() {
        assert_eq!(s["station"], k as u64 + 1);
        assert!(s["download_mbps"].as_f64().unwrap() > 0.0, "{s}");
        assert!(s["upload_mbps"].as_f64().unwrap() > 0.0, "{s}");
        assert!(s["loaded_ms"].as_f64().unwrap() > 0.0, "{s}");
        assert!(s["latency"]["flows"].as_array().unwrap().len() >= 2, "{s}");
    }
    let j = f["lab"]["throughput_jain"].as_f64().unwrap();
    assert!((0.5..=1.0).contains(&j), "Jain's index {j}");
    // One flent file per station; the saved result's report shows the stations side by side.
    for k in 1..=2 {
        let p = dir.join(format!("rtt_fair-station{k}.flent.gz"));
        assert!(p.is_file(), "no {}", p.display());
    }
    let fh = dir.join("rtt_fair.html");
    let o = bounded(
        Command::new(rb).arg("report").arg(&fj).arg("-o").arg(&fh),
        Duration::from_secs(120),
    );
    ok(&o, "report rtt_fair");
    let html = std::fs::read_to_string(&fh).unwrap();
    for want in [
        "rtt_fair from Wi-Fi station(s)",
        "Wi-Fi stations side by side",
    ] {
        assert!(html.contains(want), "no {want:?} in the rtt_fair report");
    }

    let o = bounded(
        Command::new(rb).args(["lab", "down", "--name", &lab]),
        Duration::from_secs(60),
    );
    ok(&o, "lab down");
    let _ = std::fs::remove_dir_all(&dir);
    eprintln!(
        "{test}: up in {boot_s:.0} s, all in {:.0} s",
        t0.elapsed().as_secs_f64()
    );
}
