//! End-to-end: the real binary's `device` command.

use std::process::Command;

fn routerbench() -> Command {
    Command::new(env!("CARGO_BIN_EXE_routerbench"))
}

#[test]
fn device_prints_identity_and_json() {
    let out = routerbench()
        .arg("device")
        .output()
        .expect("run routerbench");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("Kernel"), "{text}");
    assert!(text.contains("Cores"), "{text}");

    let out = routerbench()
        .args(["device", "--json"])
        .output()
        .expect("run routerbench");
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("valid JSON");
    assert!(v["kernel"].is_string(), "{v}");
    assert!(v["cores"].as_u64().unwrap_or(0) >= 1, "{v}");
}

#[test]
fn unknown_subcommand_is_a_usage_error() {
    let out = routerbench()
        .arg("no-such-command")
        .output()
        .expect("run routerbench");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no-such-command"));
}

/// The one `--json [FILE|-]` convention (src/cli/common/json_arg.rs), end to end on the fastest command.
#[test]
fn json_flag_takes_a_file_or_dash() {
    let dir = std::env::temp_dir().join(format!("rb-device-json-{}", std::process::id()));
    let path = dir.join("sub").join("device.json");
    // A missing directory is never created for the user: refused before measuring, naming it.
    let out = routerbench()
        .args(["device", "--json"])
        .arg(&path)
        .output()
        .expect("run routerbench");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("does not exist") && err.contains("mkdir -p"),
        "{err}"
    );
    assert!(!dir.exists(), "no directory was created");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let out = routerbench()
        .args(["device", "--json"])
        .arg(&path)
        .output()
        .expect("run routerbench");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("Kernel"), "the text stays on stdout: {text}");
    let saved: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).expect("the file")).expect("JSON");
    assert!(saved["kernel"].is_string(), "{saved}");
    for form in [&["device", "--json", "-"][..], &["device", "-J"][..]] {
        let out = routerbench().args(form).output().expect("run routerbench");
        assert!(out.status.success(), "{form:?}");
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("only JSON");
        assert_eq!(v["kernel"], saved["kernel"], "{form:?}");
    }
    let out = routerbench()
        .args(["device", "--json="])
        .output()
        .expect("run routerbench");
    assert_eq!(out.status.code(), Some(2), "an empty FILE is a usage error");
    std::fs::remove_dir_all(&dir).unwrap();
}
