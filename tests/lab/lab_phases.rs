//! `routerbench lab run phases` end to end, as root, through a 20 Mbit/s × 64000 B FIFO (theory
//! 25.6 ms per direction): a summary per phase in the result and a line per phase beside its
//! theory. Each phase's own loaded direction queues (one-way median 0.5–1.10 × theory), the idle
//! one does not (< 5 ms), the "both" phase's round trip is checked against both queues' sum,
//! and the phases' goodput is in the direction they load, within 0.85–1.05 × 1448/1514 × rate.

#![cfg(feature = "lab")]

use crate::support::lab::{can_run, guard, unique_name};
use crate::support::{rb, streams};

#[test]
fn phases_through_the_lab_give_a_line_per_phase_beside_theory() {
    let _alone = crate::support::alone();
    if !can_run(
        "phases_through_the_lab_give_a_line_per_phase_beside_theory",
        &["ip", "tc"],
    ) {
        return;
    }
    let name = unique_name("ph");
    let _guard = guard(&name);
    let o = rb(&[
        "lab", "up", "--name", &name, "--rate", "20mbit", "--buffer", "64000",
    ]);
    assert!(o.status.success(), "{:?}", streams(&o));
    let json = std::env::temp_dir().join(format!("rb-phases-{}.json", std::process::id()));
    let o = rb(&[
        "lab",
        "run",
        "phases",
        "--name",
        &name,
        "-l",
        "6",
        "--delay",
        "1",
        "-n",
        "4",
        "-q",
        "--json",
        json.to_str().unwrap(),
    ]);
    let (out, err) = streams(&o);
    assert!(o.status.success(), "{out}\n{err}");
    eprintln!("{out}");
    let lines: Vec<&str> = out
        .lines()
        .skip_while(|l| !l.starts_with("Per phase against theory"))
        .skip(1)
        .take(3)
        .collect();
    assert_eq!(lines.len(), 3, "{out}");
    for (line, phase) in lines.iter().zip(["download", "upload", "both"]) {
        assert!(
            line.trim_start().starts_with(phase) && line.contains("theory"),
            "{line}"
        );
    }
    assert!(
        lines[2].contains("theory 51.2 ms (up 25.6 + down 25.6)"),
        "{out}"
    );
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let _ = std::fs::remove_file(&json);
    let phases = doc["latency"]["phases"].as_array().unwrap();
    let names: Vec<&str> = phases.iter().filter_map(|p| p["phase"].as_str()).collect();
    assert_eq!(names, ["download", "upload", "both"]);
    let goodput = 20.0 * 1448.0 / 1514.0;
    let mbps = |p: &serde_json::Value, k: &str| p[k].as_f64();
    let within = |v: Option<f64>, lo: f64, hi: f64, what: &str| {
        let x = v.unwrap_or_else(|| panic!("{what}: none"));
        assert!((lo..=hi).contains(&x), "{what} = {x}, want {lo}..={hi}");
    };
    within(
        mbps(&phases[0], "download_mbps").map(|m| m / goodput),
        0.85,
        1.05,
        "download phase goodput",
    );
    assert!(
        phases[0]["upload_mbps"].is_null(),
        "the download phase uploads nothing"
    );
    within(
        mbps(&phases[1], "upload_mbps").map(|m| m / goodput),
        0.85,
        1.05,
        "upload phase goodput",
    );
    within(
        phases[0]["owd_up_increase_ms"].as_f64(),
        -1.0,
        5.0,
        "download phase, the idle up queue",
    );
    let checks = doc["lab"]["checks"].as_array().unwrap();
    let one_way = |phase: &str, dir: &str| {
        checks
            .iter()
            .find(|c| {
                c["phase"] == phase && c["direction"] == dir && c["metric"] == "UDP one-way delay"
            })
            .and_then(|c| c["median_ratio"].as_f64())
    };
    within(
        one_way("download", "down"),
        0.5,
        1.10,
        "download: down/theory",
    );
    within(one_way("upload", "up"), 0.5, 1.10, "upload: up/theory");
    assert!(
        one_way("download", "up").is_none(),
        "no up check in the download phase"
    );
    within(one_way("both", "up"), 0.15, 1.10, "both: up/theory");
    within(one_way("both", "down"), 0.15, 1.10, "both: down/theory");
}
