//! `routerbench server --metrics` on loopback: `GET /metrics` in text 0.0.4 passes `promtool
//! check metrics` (Debian's `prometheus` package; the test says so and skips the check without
//! it), every family has HELP and TYPE, OpenMetrics when `Accept` asks (`# EOF`, counters named
//! without `_total`), HEAD, the last results of `--results-dir` (the crypto fixture), and
//! `--metrics-file` written atomically with the families a textfile collector can add. About 3 s.

use crate::support::server::server_any;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn request(port: u16, req: &str) -> (String, String) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.write_all(req.as_bytes()).unwrap();
    let mut buf = Vec::new();
    s.read_to_end(&mut buf).unwrap();
    let text = String::from_utf8(buf).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    (head.to_string(), body.to_string())
}

/// `promtool check metrics` on `text`: `None` without promtool, else its verdict and output.
fn promtool(text: &str) -> Option<(bool, String)> {
    let mut child = match Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
    {
        Ok(c) => c,
        Err(_) => {
            eprintln!("promtool not installed (apt-get install prometheus): check skipped");
            return None;
        }
    };
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    Some((
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr),
    ))
}

/// Every `# TYPE` has a `# HELP`, before the family's first sample, and no family twice.
fn check_families(text: &str) {
    let mut seen = std::collections::HashSet::new();
    let lines: Vec<&str> = text.lines().collect();
    for (i, l) in lines.iter().enumerate() {
        if let Some(rest) = l.strip_prefix("# TYPE ") {
            let name = rest.split(' ').next().unwrap();
            assert!(seen.insert(name.to_string()), "{name} twice");
            let help = lines[i + 1..]
                .iter()
                .take_while(|l| l.starts_with('#'))
                .any(|l| l.starts_with(&format!("# HELP {name} ")));
            assert!(help, "{name} has no HELP before its samples");
        }
    }
    assert!(seen.len() >= 10, "{} families", seen.len());
}

#[test]
fn metrics_pass_promtool_in_both_formats_and_the_file_is_written() {
    let dir = std::env::temp_dir().join(format!("rb-metrics-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("routerbench.prom");
    let results = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/results");
    let (srv, port) = server_any(
        &[
            "--metrics",
            "--results-dir",
            results,
            "--metrics-file",
            file.to_str().unwrap(),
            "--metrics-interval",
            "1",
        ],
        "metrics",
    );
    let (head, text) = request(
        port,
        "GET /metrics HTTP/1.1\r\nHost: r\r\nConnection: close\r\n\r\n",
    );
    assert!(head.starts_with("HTTP/1.1 200 "), "{head}");
    assert!(
        head.contains("Content-Type: text/plain; version=0.0.4; charset=utf-8"),
        "{head}"
    );
    assert!(text.ends_with('\n'));
    check_families(&text);
    for family in [
        "# TYPE node_cpu_seconds_total counter",
        "# TYPE node_softirqs_functions_total counter",
        "# TYPE node_network_receive_bytes_total counter",
        "# TYPE routerbench_crypto_bytes_per_second gauge",
        "# TYPE routerbench_crypto_timestamp_seconds gauge",
    ] {
        assert!(text.contains(family), "{family} missing:\n{text}");
    }
    // The fixture's AES-128-CBC at 8192 bytes, from OpenSSL 3.0.19.
    assert!(
        text.lines()
            .any(|l| l.starts_with("routerbench_crypto_bytes_per_second{")
                && l.contains("algorithm=\"aes-128-cbc\",block_bytes=\"8192\"")),
        "{text}"
    );
    if std::path::Path::new("/proc/net/softnet_stat").exists() {
        assert!(
            text.contains("node_softnet_processed_total{cpu=\"0\"}"),
            "{text}"
        );
    }
    if let Some((ok, out)) = promtool(&text) {
        assert!(ok, "promtool check metrics:\n{out}\n{text}");
    }

    let (head, om) = request(
        port,
        "GET /metrics HTTP/1.1\r\nHost: r\r\nAccept: application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5\r\nConnection: close\r\n\r\n",
    );
    assert!(
        head.contains("Content-Type: application/openmetrics-text; version=1.0.0; charset=utf-8"),
        "{head}"
    );
    assert!(om.ends_with("\n# EOF\n"), "{om}");
    assert!(om.contains("# TYPE node_cpu_seconds counter\n# UNIT node_cpu_seconds seconds\n"));
    assert!(om.contains("\nnode_cpu_seconds_total{cpu=\"0\",mode=\"idle\"} "));

    let (head, body) = request(
        port,
        "HEAD /metrics HTTP/1.1\r\nHost: r\r\nConnection: close\r\n\r\n",
    );
    assert!(head.starts_with("HTTP/1.1 200 "), "{head}");
    assert!(body.is_empty(), "HEAD has no body");

    // The file: written within the interval, the gap families only, valid for promtool.
    let until = Instant::now() + Duration::from_secs(5);
    while !file.exists() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(100));
    }
    let written = std::fs::read_to_string(&file).unwrap();
    assert!(
        written.contains("# TYPE routerbench_build_info gauge"),
        "{written}"
    );
    assert!(
        !written.contains("node_cpu_seconds_total"),
        "the file must not repeat what the host's exporter serves:\n{written}"
    );
    if let Some((ok, out)) = promtool(&written) {
        assert!(ok, "promtool check metrics on the file:\n{out}");
    }
    // No temporary file is left beside it.
    let left: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(left.len(), 1, "{left:?}");
    drop(srv);
    std::fs::remove_dir_all(&dir).unwrap();
}
