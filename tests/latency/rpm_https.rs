//! `routerbench rpm --url` (feature `https`) against a server no one here wrote: Debian's nginx
//! with HTTP/2, a certificate from a CA the test makes with `openssl`, and the draft's four
//! endpoints (tests/support/nginx.rs). Over loopback: a score per direction whose RPM is the
//! draft's TLS arithmetic recomputed from the raw probes in the JSON, with tcp_f, tls_f
//! (normalised by its round trips) and http_f on every foreign probe; and the bad cases: an
//! untrusted certificate, a TLS server without HTTP/2, a URL that is not a configuration
//! document or answers 404, an upload URL that refuses bodies, something that is not TLS at
//! all, plain HTTP, a silent listener and a server that stalls after the handshake. Skips
//! (passing) without nginx or openssl. Through the lab's bottleneck: tests/lab/lab_rpm.rs.
#![cfg(feature = "https")]

use std::process::Command;

fn rpm(args: &[&str], json: &std::path::Path) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_routerbench"))
        .arg("rpm")
        .args(args)
        .args(["-q", "--json"])
        .arg(json)
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn load(json: &std::path::Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap()
}

#[test]
fn rpm_against_nginx_over_loopback_follows_the_drafts_arithmetic() {
    if !crate::support::nginx::available("rpm_https") {
        return;
    }
    let ng = crate::support::nginx::Nginx::start("ok", "127.0.0.1", None);
    let dir = ng.dir.clone();
    let json = dir.join("rpm.json");
    let url = ng.url("/.well-known/nq");
    let ca = ng.ca().display().to_string();
    let (ok, stdout, stderr) = rpm(
        &[
            "--url",
            &url,
            "--ca",
            &ca,
            "--interval",
            "0.5",
            "--max-time",
            "10",
        ],
        &json,
    );
    println!("{stdout}");
    assert!(ok, "{stdout}\n{stderr}\nnginx: {}", ng.error_log());
    let doc = load(&json);
    let r = &doc["rpm"];
    let transport = r["transport"].as_str().unwrap();
    assert!(
        transport.contains("HTTP/2 over TLS 1.3") && transport.contains("nginx"),
        "{transport}"
    );
    let runs = r["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2, "sequential: download, then upload");
    for run in runs {
        let dirn = run["direction"].as_str().unwrap();
        assert!(
            !run["end"].as_str().unwrap().starts_with("error"),
            "{dirn}: {}",
            run["end"]
        );
        let rpm = run["score"]["rpm"].as_f64().unwrap();
        let again = crate::support::rpm::recompute_tls(run, 4);
        assert!(
            (rpm - again).abs() / again < 1e-9,
            "{dirn}: reported {rpm}, the draft's arithmetic {again}"
        );
        let probes = run["probes"].as_array().unwrap();
        let done: Vec<&serde_json::Value> = probes
            .iter()
            .filter(|p| p["kind"] == "foreign" && p.get("error").is_none())
            .collect();
        assert!(done.len() >= 8, "{dirn}: {} foreign probes", done.len());
        for p in &done {
            assert_eq!(p["tls_round_trips"], 1, "TLS 1.3: one round trip: {p}");
            assert!(p["tcp_ms"].as_f64().unwrap() > 0.0 && p["tls_ms"].as_f64().unwrap() > 0.0);
        }
        let selfp = probes
            .iter()
            .filter(|p| p["kind"] == "self" && p.get("error").is_none())
            .count();
        assert!(selfp >= 8, "{dirn}: {selfp} self probes");
        let mbps = run[format!("{dirn}_mbps")].as_f64().unwrap();
        assert!(mbps > 10.0, "{dirn}: goodput {mbps} Mbit/s");
    }
    // --insecure: no CA needed, and the result says the certificate was not checked.
    let (_, stdout, stderr) = rpm(
        &[
            "--url",
            &url,
            "--insecure",
            "--mode",
            "download",
            "--interval",
            "0.25",
            "--max-time",
            "1",
        ],
        &json,
    );
    let doc = load(&json);
    assert!(
        !doc["rpm"]["runs"][0]["intervals"]
            .as_array()
            .unwrap()
            .is_empty(),
        "{stdout}\n{stderr}"
    );
    assert!(
        doc["rpm"]["notes"].to_string().contains("--insecure"),
        "{}",
        doc["rpm"]["notes"]
    );
}

#[test]
fn bad_servers_and_tls_failures_get_clear_messages() {
    if !crate::support::nginx::available("rpm_https") {
        return;
    }
    let ng = crate::support::nginx::Nginx::start("bad", "127.0.0.1", None);
    let json = ng.dir.join("bad.json");
    let ca = ng.ca().display().to_string();
    let short = [
        "--mode",
        "download",
        "--interval",
        "0.25",
        "--max-time",
        "1",
    ];
    let expect = |args: &[&str], want: &[&str]| {
        let mut a = args.to_vec();
        a.extend_from_slice(&short);
        let (ok, stdout, stderr) = rpm(&a, &json);
        assert!(!ok, "{args:?} should fail: {stdout}");
        let all = format!("{stdout}\n{stderr}");
        for w in want {
            assert!(all.contains(w), "{args:?}: wanted {w:?} in {all}");
        }
    };
    // Untrusted certificate (no --ca, no --insecure): says what to do.
    expect(
        &["--url", &ng.url("/.well-known/nq")],
        &["certificate was refused", "--ca"],
    );
    // TLS without HTTP/2.
    let h1 = format!("https://127.0.0.1:{}/.well-known/nq", ng.port_h1);
    expect(&["--url", &h1, "--ca", &ca], &["HTTP/2"]);
    // A URL that does not serve the configuration document.
    expect(
        &["--url", &ng.url("/small"), "--ca", &ca],
        &["not a responsiveness configuration"],
    );
    // No configuration document there (404), named as such.
    expect(
        &["--url", &ng.url("/.well-known/missing"), "--ca", &ca],
        &["404", "not draft-conforming"],
    );
    // Plain HTTP/1.1 on the port (no TLS): said so, not a parser error.
    let plain = format!("https://127.0.0.1:{}/.well-known/nq", ng.port_plain);
    expect(&["--url", &plain, "--ca", &ca], &["not TLS", "plain http"]);
    // A server that accepts, handshakes, and never answers the GET: a bounded wait (the 5 s
    // request limit), then the reason. The bound is not asserted as a time (no wall-clock
    // limits in tests); the message says which limit ended it.
    expect(
        &["--url", &ng.url("/.well-known/nq-stalled"), "--ca", &ca],
        &[
            "GET of the configuration",
            "no answer within 5 s",
            "stalled",
        ],
    );
    // A silent TCP listener (connects, never a TLS byte): the handshake limit.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let sp = silent.local_addr().unwrap().port();
    expect(
        &[
            "--url",
            &format!("https://127.0.0.1:{sp}/.well-known/nq"),
            "--insecure",
        ],
        &["TLS: no handshake within 5 s"],
    );
    drop(silent);
    // An upload URL that refuses bodies: the run stops with the reason, partial, Low.
    let (ok, stdout, _) = rpm(
        &[
            "--url",
            &ng.url("/.well-known/nq-limited"),
            "--ca",
            &ca,
            "--mode",
            "upload",
            "--interval",
            "0.25",
            "--max-time",
            "3",
        ],
        &json,
    );
    assert!(!ok, "{stdout}");
    assert!(stdout.contains("413"), "{stdout}");
    let doc = load(&json);
    assert_eq!(doc["rpm"]["runs"][0]["rpm_confidence"], "Low");
    // Not TLS at all: a listener that closes at once.
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for s in l.incoming().take(1) {
            drop(s);
        }
    });
    expect(
        &[
            "--url",
            &format!("https://127.0.0.1:{port}/.well-known/nq"),
            "--insecure",
        ],
        &["closed the connection during the handshake"],
    );
    // Plain http:// is named.
    expect(
        &["--url", "http://127.0.0.1:1/.well-known/nq"],
        &["plain http://"],
    );
}
