//! End-to-end: `routerbench run --quick`, the main job, on this machine: every part lands in the
//! saved JSON and the summary prints the OpenWrt row.

use std::process::Command;

#[test]
fn run_quick_saves_every_part() {
    // It loads the machine or measures against theory: not at once with the others that do
    // (tests/support/mod.rs, alone).
    let _alone = crate::support::alone();
    let dir = std::env::temp_dir().join(format!("rb-run-e2e-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let out = Command::new(env!("CARGO_BIN_EXE_routerbench"))
        .args(["run", "--quick", "--quiet", "--out-dir"])
        .arg(&dir)
        .output()
        .expect("run routerbench");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // The row: identity cells, engine, then 13 numbers.
    let row = stdout
        .lines()
        .skip_while(|l| !l.starts_with("OpenWrt table row"))
        .nth(2)
        .expect("a row after the header");
    let cells: Vec<&str> = row.trim_matches('|').split('|').map(str::trim).collect();
    assert!(cells.len() >= 15, "{row}");
    for c in &cells[cells.len() - 13..] {
        assert!(c.parse::<f64>().is_ok(), "non-numeric cell {c:?} in {row}");
    }

    let json = std::fs::read_to_string(dir.join("latest.json")).expect("latest.json written");
    let v: serde_json::Value = serde_json::from_str(&json).expect("valid JSON");
    assert_eq!(v["schema"], "routerbench.run/2");
    assert!(v["device"]["kernel"].is_string());
    assert_eq!(v["crypto"]["public_key"].as_array().map(Vec::len), Some(2));
    // The default engine is auto: this machine has libcrypto, so the row is OpenSSL's.
    let engine = v["crypto"]["engine"]["version"].as_str().unwrap_or("");
    assert!(engine.starts_with("OpenSSL "), "engine {engine}");
    assert!(!String::from_utf8_lossy(&out.stderr).contains("warning: this row"));
    let bytes = v["throughput"]["sum_received"]["bytes"]
        .as_u64()
        .unwrap_or(0);
    assert!(bytes > 0, "loopback moved no bytes: {}", v["throughput"]);
    let flows = v["latency"]["flows"].as_array().expect("latency flows");
    assert_eq!(flows.len(), 8, "RRUL has 4 up + 4 down flows");
    assert!(
        flows.iter().all(|f| f["bytes"].as_u64().unwrap_or(0) > 0),
        "a flow moved nothing"
    );
    let probes = v["latency"]["probes"].as_array().expect("latency probes");
    assert!(probes.len() >= 3);
    assert!(v["latency"]["summary"]["grade"].is_string());
    assert!(
        !v["monitor"]["samples"]
            .as_array()
            .expect("monitor samples")
            .is_empty()
    );
    // One timestamped file besides latest.json.
    let runs = std::fs::read_dir(&dir)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .is_ok_and(|e| e.file_name().to_string_lossy().starts_with("run-"))
        })
        .count();
    assert_eq!(runs, 1);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn run_rejects_bad_crypto_seconds() {
    let out = Command::new(env!("CARGO_BIN_EXE_routerbench"))
        .args(["run", "--crypto-seconds", "0", "--quiet"])
        .output()
        .expect("run routerbench");
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--crypto-seconds"));
}

/// Without libcrypto the row comes from RustCrypto, and `run` says in one line that it is not
/// comparable with the wiki's OpenSSL rows.
#[test]
fn run_warns_when_the_row_is_not_openssl() {
    let dir = std::env::temp_dir().join(format!("rb-run-warn-{}", std::process::id()));
    let out = Command::new(env!("CARGO_BIN_EXE_routerbench"))
        .args([
            "run",
            "--quick",
            "--quiet",
            "--skip",
            "throughput,latency",
            "--out-dir",
        ])
        .arg(&dir)
        .env("ROUTERBENCH_LIBCRYPTO", "/nonexistent/libcrypto.so.3")
        // Nor the openssl program (its fallback is tests/crypto/crypto_program.rs).
        .env("ROUTERBENCH_OPENSSL", "none")
        .output()
        .expect("run routerbench");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("RustCrypto (no libcrypto found)"),
        "{stdout}"
    );
    let warnings: Vec<&str> = stderr.lines().filter(|l| l.contains("warning:")).collect();
    assert_eq!(warnings.len(), 1, "{stderr}");
    assert!(warnings[0].contains("not OpenSSL"), "{stderr}");
    let _ = std::fs::remove_dir_all(&dir);
}
