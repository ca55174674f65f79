//! `routerbench stress` end to end, no root needed: bad input says so before anything runs; a
//! 12 s `--cpu --net loopback` run writes only its two files in `--out-dir`, records every
//! series this machine has on one axis and says which it lacks; `--analyze` re-runs the
//! detectors on the saved file to the same answer; `report` renders it; Ctrl-C keeps what was
//! measured. About 25 s.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::support::{ROUTERBENCH as BIN, rb_command};

/// routerbench with `args`, run in `dir`.
fn rb_in(dir: &Path, args: &[&str]) -> Output {
    rb_command(args).current_dir(dir).output().unwrap()
}

fn tmp(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("rb23-stress-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn files(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

#[test]
fn bad_input_says_what_is_wrong_before_running() {
    let dir = tmp("bad");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
        .to_string();
    let cases: [(&[&str], &str); 7] = [
        (&["stress", "--for", "5s"], "too short to conclude anything"),
        (&["stress", "--for", "10x"], "use 90s, 30m, 1h"),
        (
            &["stress", "--for", "20", "--crypto", "rot13"],
            "valid algorithms are",
        ),
        (
            &["stress", "--for", "20", "--net", "127.0.0.1", "-p", &port],
            "start `routerbench server` there",
        ),
        (
            &["stress", "--for", "20", "--ambient", "500"],
            "not a room's temperature",
        ),
        (
            &[
                "stress",
                "--for",
                "20",
                "--monitor",
                &format!("127.0.0.1:{port}"),
            ],
            "cannot connect",
        ),
        (
            &[
                "stress",
                "--for",
                "20",
                "--cpu",
                "--engine",
                "openssl-speed",
            ],
            "reports only when it ends",
        ),
    ];
    for (args, want) in cases {
        let o = rb_in(&dir, args);
        let t = text(&o);
        assert!(!o.status.success(), "{args:?} succeeded: {t}");
        assert!(t.contains(want), "{args:?}: {t}");
        // Refused before it ran: no progress line, nothing written.
        assert!(!t.contains("elapsed"), "{args:?} ran: {t}");
        assert!(files(&dir).is_empty(), "{args:?} wrote {:?}", files(&dir));
    }
    let o = rb_in(
        &dir,
        &["stress", "--for", "20", "--out-dir", "/proc/rb23-no"],
    );
    assert!(text(&o).contains("--out-dir"), "{}", text(&o));
    std::fs::write(dir.join("not-stress.json"), "{\"schema\":\"routerbench.run/2\",\"tool\":{\"name\":\"routerbench\",\"version\":\"0\"},\"started_at\":\"a\",\"finished_at\":\"b\",\"device\":null}").unwrap();
    let o = rb_in(&dir, &["stress", "--analyze", "not-stress.json"]);
    assert!(text(&o).contains("has no stress result"), "{}", text(&o));
    assert_eq!(files(&dir), ["not-stress.json"], "nothing written");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_short_loopback_run_records_one_axis_and_is_reanalysed_to_the_same_answer() {
    // It loads the machine or measures against theory: not at once with the others that do
    // (tests/support/mod.rs, alone).
    let _alone = crate::support::alone();
    let dir = tmp("run");
    let o = rb_in(
        &dir,
        &[
            "stress",
            "--for",
            "12",
            "--cpu",
            "--net",
            "loopback",
            "--out-dir",
            "out",
        ],
    );
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    eprintln!("{t}");
    // Only the results directory in the working directory, and only the two files in it.
    assert_eq!(files(&dir), ["out"]);
    let out = files(&dir.join("out"));
    assert_eq!(out.len(), 2, "{out:?}");
    assert!(
        out[0].starts_with("stress-") && out[0].ends_with(".html"),
        "{out:?}"
    );
    assert!(out[1].ends_with(".json"), "{out:?}");
    let json = dir.join("out").join(&out[1]);
    let run = routerbench::results::load(&json).unwrap();
    let s = run.stress.as_ref().unwrap();
    assert_eq!(s.observed, "local");
    assert!((11.0..=13.0).contains(&s.measured_s), "{}", s.measured_s);
    assert!(
        s.cpu_series.len() >= 10,
        "{} crypto points",
        s.cpu_series.len()
    );
    assert!(
        s.cpu_series
            .iter()
            .skip(1)
            .all(|p| p.bytes_per_s.unwrap_or(0.0) > 0.0)
    );
    assert!(
        s.net_series.len() >= 8,
        "{} network steps",
        s.net_series.len()
    );
    assert!(
        s.net_series
            .iter()
            .any(|p| p.down_mbps > 0.0 && p.latency_ms.is_some())
    );
    assert!(!s.analysis.conclusive, "12 s is too short to conclude");
    let m = run.monitor.as_ref().unwrap();
    assert_eq!(m.start_unix_s, Some(s.t0_unix_s), "one time axis");
    assert!(m.samples.len() >= 10);
    // What every Linux has: load, memory, uptime, device counters.
    let last = m.samples.last().unwrap();
    assert!(!last.cpu_busy_pct.is_empty() && last.uptime_s.is_some());
    assert!(last.mem_available_kib.is_some() && last.netdev_errors.is_some());
    let summary = String::from_utf8_lossy(&o.stdout);
    let has_zone = std::fs::read_dir("/sys/class/thermal")
        .map(|d| {
            d.flatten()
                .any(|e| e.file_name().to_string_lossy().starts_with("thermal_zone"))
        })
        .unwrap_or(false);
    if !has_zone {
        assert!(summary.contains("Heat        not measured"), "{summary}");
        assert!(
            s.analysis
                .missing
                .iter()
                .any(|m| m.starts_with("temperature"))
        );
    }
    let stability = summary.lines().last().unwrap().to_string();
    assert!(stability.starts_with("Stability"), "{summary}");

    let again = rb_in(&dir, &["stress", "--analyze", json.to_str().unwrap()]);
    assert!(again.status.success(), "{}", text(&again));
    let a = String::from_utf8_lossy(&again.stdout);
    assert_eq!(a.lines().last(), Some(stability.as_str()), "{a}");
    assert!(a.contains("Throttling  not concluded"), "{a}");
    assert_eq!(files(&dir.join("out")).len(), 2, "--analyze writes nothing");

    let r = rb_in(
        &dir,
        &["report", json.to_str().unwrap(), "-o", "out/r.html"],
    );
    assert!(r.status.success(), "{}", text(&r));
    let page = std::fs::read_to_string(dir.join("out/r.html")).unwrap();
    assert!(page.contains("Stress: can it crash, overheat or throttle?"));
    assert!(
        page.contains("Temperature of every zone") && page.contains("CPU frequency of every core")
    );
    assert!(page.contains("Crypto load: aes-128-cbc") && page.contains("Latency under the load"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn ctrl_c_keeps_what_was_measured() {
    // It loads the machine or measures against theory: not at once with the others that do
    // (tests/support/mod.rs, alone).
    let _alone = crate::support::alone();
    let dir = tmp("int");
    let mut child = Command::new(BIN)
        .current_dir(&dir)
        .args(["stress", "--for", "60", "--cpu", "--out-dir", "out", "-q"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_secs(6));
    // SAFETY: signalling the child this test started, by its PID.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let until = Instant::now() + Duration::from_secs(20);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > until {
            let _ = child.kill();
            panic!("stress did not stop on SIGINT");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let out = files(&dir.join("out"));
    let json = out.iter().find(|f| f.ends_with(".json")).expect("saved");
    let run = routerbench::results::load(&dir.join("out").join(json)).unwrap();
    assert!(run.interrupted);
    let s = run.stress.unwrap();
    assert!(
        s.measured_s < 20.0 && s.measured_s > 3.0,
        "{}",
        s.measured_s
    );
    assert!(s.cpu_series.len() >= 3);
    assert!(
        s.events
            .iter()
            .any(|e| e.kind == routerbench::results::stress::EventKind::Interrupted)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn json_on_standard_output_replaces_the_summary_and_writes_no_file() {
    let _alone = crate::support::alone();
    let dir = tmp("json");
    let o = rb_in(
        &dir,
        &[
            "stress",
            "--for",
            "10",
            "--crypto",
            "md5",
            "--threads",
            "1",
            "--json",
            "-",
            "-q",
        ],
    );
    assert!(o.status.success(), "{}", text(&o));
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("stdout is one JSON document: {e}\n{}", text(&o)));
    assert_eq!(doc["schema"], "routerbench.run/2");
    assert!(doc["stress"]["analysis"]["stability"]["stable"].is_boolean());
    assert!(
        files(&dir).is_empty(),
        "--json alone writes no file: {:?}",
        files(&dir)
    );
    // --analyze with --json FILE: the summary, and the result with the analysis re-run.
    let saved = dir.join("s.json");
    std::fs::write(&saved, &o.stdout).unwrap();
    let again = rb_in(
        &dir,
        &["stress", "--analyze", "s.json", "--json", "again.json"],
    );
    assert!(again.status.success(), "{}", text(&again));
    assert!(String::from_utf8_lossy(&again.stdout).contains("Stability"));
    let back = routerbench::results::load(&dir.join("again.json")).unwrap();
    assert!(back.stress.is_some());
    let _ = std::fs::remove_dir_all(&dir);
}
