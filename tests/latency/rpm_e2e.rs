//! `routerbench rpm` end to end over loopback against the in-process server: a score with its
//! confidence, every interval and probe in the JSON, the draft's arithmetic reproducible from
//! the raw probe times; and the bad cases: a server without the RPM extension, something that
//! is not a routerbench server, a time limit too short to saturate (partial ramp, Low).

use routerbench::latency::server::Bounds;
use routerbench::server::latency_only::spawn_in_process;
use std::io::{Read, Write};
use std::process::Command;

fn rpm(args: &[&str], json: &std::path::Path) -> (std::process::ExitStatus, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_routerbench"))
        .arg("rpm")
        .args(args)
        .args(["-q", "--json"])
        .arg(json)
        .output()
        .unwrap();
    (
        out.status,
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn dir() -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("rb-rpm-e2e-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn rpm_over_loopback_scores_with_every_probe_kept() {
    let (addr, _service) =
        spawn_in_process("127.0.0.1:0".parse().unwrap(), Bounds::default()).unwrap();
    let json = dir().join("rpm.json");
    let port = addr.port().to_string();
    let (status, stdout, stderr) = rpm(
        &[
            "127.0.0.1",
            "-p",
            &port,
            "--interval",
            "0.5",
            "--max-time",
            "15",
        ],
        &json,
    );
    assert!(status.success(), "{stdout}\n{stderr}");
    println!("{stdout}");
    assert!(
        stdout.contains("download:") && stdout.contains("upload:"),
        "{stdout}"
    );
    assert!(
        stdout.contains("RPM") && stdout.contains("confidence"),
        "{stdout}"
    );
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let r = &doc["rpm"];
    assert_eq!(r["transport"], "routerbench TCP");
    assert_eq!(r["params"]["mad"], 4);
    let runs = r["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2, "sequential: download, then upload");
    for run in runs {
        let probes = run["probes"].as_array().unwrap();
        let foreign = probes.iter().filter(|p| p["kind"] == "foreign").count();
        let selfp = probes.iter().filter(|p| p["kind"] == "self").count();
        assert!(
            foreign >= 8 && selfp >= 8,
            "probes kept: {foreign} / {selfp}"
        );
        assert!(
            (foreign as i64 - selfp as i64).abs() <= 2,
            "as many foreign as self probes (§5.3)"
        );
        let rpm = run["score"]["rpm"].as_f64().unwrap();
        let again = crate::support::rpm::recompute(run, 4);
        assert!(
            (rpm - again).abs() / again < 1e-6,
            "{}: reported {rpm}, draft arithmetic {again}",
            run["direction"]
        );
        assert!(["Low", "Medium", "High"].contains(&run["rpm_confidence"].as_str().unwrap()));
        let iv = run["intervals"].as_array().unwrap();
        assert!(iv.len() >= 4);
        // Probe rate: never above MPS (100 probes/s = 50 pairs/s) in any interval.
        let per_iv = 0.5;
        for (k, i) in iv.iter().enumerate() {
            let launched = probes
                .iter()
                .filter(|p| p["interval"].as_u64() == Some(k as u64))
                .count();
            assert!(
                launched as f64 <= 100.0 * per_iv + 2.0,
                "interval {k}: {launched} probes"
            );
            assert!(i["probe_pairs_per_s"].as_f64().unwrap() <= 50.0);
        }
        let conns: Vec<u64> = iv
            .iter()
            .map(|i| i["connections"].as_u64().unwrap())
            .collect();
        assert!(
            conns.windows(2).all(|w| w[1] >= w[0] && w[1] <= w[0] + 1),
            "one connection added per interval at most: {conns:?}"
        );
    }
}

#[test]
fn too_short_a_time_limit_keeps_the_partial_ramp_at_low_confidence() {
    let (addr, _service) =
        spawn_in_process("127.0.0.1:0".parse().unwrap(), Bounds::default()).unwrap();
    let json = dir().join("short.json");
    let port = addr.port().to_string();
    let (status, stdout, _) = rpm(
        &[
            "127.0.0.1",
            "-p",
            &port,
            "--mode",
            "download",
            "--interval",
            "0.25",
            "--max-time",
            "0.75",
        ],
        &json,
    );
    println!("{stdout}");
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let run = &doc["rpm"]["runs"][0];
    assert_eq!(run["rpm_confidence"], "Low", "{run}");
    assert_eq!(run["goodput_confidence"], "Low");
    assert!(
        !run["intervals"].as_array().unwrap().is_empty(),
        "partial ramp kept"
    );
    assert!(stdout.contains("goodput never saturated"), "{stdout}");
    let _ = status;
}

/// A server that speaks version 1 of the protocol without the RPM extension: it answers an
/// unknown control message as an older routerbench does.
fn old_server() -> std::net::SocketAddr {
    use routerbench::wire::rb::{ErrorCode, Message};
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    std::thread::spawn(move || {
        for s in l.incoming().take(2) {
            let Ok(mut s) = s else { continue };
            let mut buf = [0u8; 13];
            if s.read_exact(&mut buf).is_err() {
                continue;
            }
            let w = Message::Welcome {
                version: 1,
                session: 7,
                udp_port: 9,
                max_duration_ms: 600_000,
                max_flows: 32,
            };
            let _ = s.write_all(&w.emit());
            let mut b = [0u8; 7];
            let _ = s.read_exact(&mut b);
            let e = Message::error(
                ErrorCode::BadRequest,
                "malformed message: unknown message type 0x05",
            );
            let _ = s.write_all(&e.emit());
        }
    });
    addr
}

#[test]
fn bad_servers_get_clear_messages() {
    let json = dir().join("bad.json");
    let addr = old_server();
    let (status, stdout, stderr) = rpm(&["127.0.0.1", "-p", &addr.port().to_string()], &json);
    assert!(!status.success(), "{stdout}");
    assert!(
        stderr.contains("does not speak the RPM extension") && stderr.contains("upgrade"),
        "{stderr}"
    );
    // Something that is not a routerbench server at all (closes at once).
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for s in l.incoming().take(1) {
            drop(s);
        }
    });
    let (status, _, stderr) = rpm(&["127.0.0.1", "-p", &port.to_string()], &json);
    assert!(!status.success());
    assert!(
        stderr.contains("refused the test") || stderr.contains("closed"),
        "{stderr}"
    );
    // --url without the feature, or bad settings: named.
    let (status, _, stderr) = rpm(&["127.0.0.1", "--interval", "0"], &json);
    assert!(
        !status.success() && stderr.contains("--interval"),
        "{stderr}"
    );
}
