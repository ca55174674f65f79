//! Ctrl-C keeps what was measured: SIGINT halfway through `rrul --flent F --json J` leaves a
//! .flent.gz that flent loads and a JSON file, both marked interrupted, a printed partial
//! summary, and a non-zero exit.

use crate::support::iperf3::{Proc, ROUTERBENCH, wait_listening};
use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[test]
fn sigint_halfway_through_rrul_saves_a_partial_flent_file() {
    // It loads the machine or measures against theory: not at once with the others that do
    // (tests/support/mod.rs, alone).
    let _alone = crate::support::alone();
    let port = 27221u16;
    let p = port.to_string();
    let _server = Proc::start(
        std::path::Path::new(ROUTERBENCH),
        &["server", "-p", &p],
        "intr-srv",
    );
    wait_listening(port);
    let dir = std::env::temp_dir().join(format!("rb-intr-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let flent = dir.join("partial.flent.gz");
    let json = dir.join("partial.json");
    // 1 s idle + 6 s load + 1 s idle = 8 s; SIGINT at 4 s, halfway.
    let mut child = Command::new(ROUTERBENCH)
        .args([
            "rrul",
            "127.0.0.1",
            "-p",
            &p,
            "--length",
            "6",
            "--delay",
            "1",
            "-q",
        ])
        .arg("--flent")
        .arg(&flent)
        .arg("--json")
        .arg(&json)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_secs(4));
    // SAFETY: kill(2) on the PID of the child we started.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let end = Instant::now() + Duration::from_secs(20);
    let st = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if Instant::now() > end {
            let _ = child.kill();
            panic!("rrul did not end after SIGINT");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let (mut out, mut err) = (String::new(), String::new());
    let _ = child.stdout.take().unwrap().read_to_string(&mut out);
    let _ = child.stderr.take().unwrap().read_to_string(&mut err);
    assert_eq!(
        st.code(),
        Some(1),
        "non-zero exit; stdout {out}\nstderr {err}"
    );
    assert!(
        out.contains("grade"),
        "the partial summary is printed: {out}"
    );
    assert!(out.contains("interrupted after"), "{out}");
    assert!(err.contains("interrupted"), "{err}");

    let run: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("JSON saved")).unwrap();
    let r = &run["latency"];
    assert_eq!(r["interrupted"], true, "{r}");
    let length = r["length_s"].as_f64().unwrap();
    assert!(
        (1.0..6.0).contains(&length),
        "LENGTH is the measured part of the 6 s load: {length}"
    );

    let doc: serde_json::Value = {
        let f = std::fs::File::open(&flent).expect(".flent.gz saved");
        let mut text = String::new();
        flate2::read::GzDecoder::new(f)
            .read_to_string(&mut text)
            .unwrap();
        serde_json::from_str(&text).unwrap()
    };
    assert_eq!(doc["metadata"]["INTERRUPTED"], true);
    assert!(
        doc["metadata"]["TITLE"]
            .as_str()
            .unwrap()
            .contains("interrupted")
    );
    assert!(!doc["x_values"].as_array().unwrap().is_empty());

    let loaded = Command::new("flent")
        .arg("-i")
        .arg(&flent)
        .args(["-f", "summary"])
        .output()
        .expect("flent is installed (CI installs it)");
    let text = String::from_utf8_lossy(&loaded.stdout);
    assert!(
        loaded.status.success(),
        "flent could not load the partial file: {}",
        String::from_utf8_lossy(&loaded.stderr)
    );
    assert!(text.contains("TCP upload BE"), "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}
