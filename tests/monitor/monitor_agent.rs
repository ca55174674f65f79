//! The monitor agent end to end, on loopback (ports 27310–27319), with the real binary:
//! `server --monitor --monitor-token T`, then
//! - a hostile client: no token and a wrong token get a clear refusal; 50 subscriptions at once
//!   are bounded (at most `--max-monitors` get a Welcome, the rest "busy"), and the agent
//!   serves again afterwards, with its thread count bounded throughout;
//! - `monitor --remote` with the token: live lines, a JSON result with an absolute start, the
//!   clock offset stated;
//! - `rrul --monitor`: the router's samples in the result, on the test's time axis;
//! - `server --monitor` beyond loopback without a token does not start.

use routerbench::wire::ROUTERBENCH_MAGIC;
use routerbench::wire::rb_agent::AgentMessage;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_routerbench");
const TOKEN: &str = "t0ken-27310";

/// Kills the server it started (by PID) when the test ends, however it ends.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start_server(port: u16, extra: &[&str]) -> Server {
    let child = Command::new(BIN)
        .args([
            "server",
            "-B",
            "127.0.0.1",
            "-p",
            &port.to_string(),
            "--monitor",
        ])
        .args(extra)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let until = Instant::now() + Duration::from_secs(10);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < until, "server on {port} did not come up");
        std::thread::sleep(Duration::from_millis(50));
    }
    Server(child)
}

fn read_reply(s: &mut TcpStream) -> std::io::Result<AgentMessage> {
    let mut h = [0u8; 3];
    s.read_exact(&mut h)?;
    let mut p = vec![0u8; u16::from_be_bytes([h[1], h[2]]) as usize];
    s.read_exact(&mut p)?;
    AgentMessage::parse(h[0], &p).map_err(|e| std::io::Error::other(e.to_string()))
}

/// Connects and sends a MonitorHello; returns the stream and the agent's first reply.
fn hello(port: u16, token: &str) -> (TcpStream, std::io::Result<AgentMessage>) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut out = ROUTERBENCH_MAGIC.to_vec();
    out.extend(
        AgentMessage::Hello {
            version: 1,
            interval_ms: 200,
            duration_ms: 5000,
            token: token.into(),
        }
        .emit(),
    );
    s.write_all(&out).unwrap();
    let r = read_reply(&mut s);
    (s, r)
}

fn threads(pid: u32) -> usize {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|t| {
            t.lines()
                .find_map(|l| l.strip_prefix("Threads:"))
                .and_then(|v| v.trim().parse().ok())
        })
        .unwrap_or(0)
}

#[test]
fn hostile_clients_are_refused_and_bounded() {
    let port = 27310;
    let srv = start_server(port, &["--monitor-token", TOKEN, "--max-monitors", "4"]);
    // No token: a clear refusal, through the real client.
    let out = Command::new(BIN)
        .args([
            "monitor",
            "--remote",
            &format!("127.0.0.1:{port}"),
            "-t",
            "1",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("refused (code 6)") && err.contains("--monitor-token"),
        "{err}"
    );
    // A wrong token: refused, and this address waits 1 s before its next try (even a right
    // token is refused unread until then), so guessing is slow.
    match hello(port, "guess").1 {
        Ok(AgentMessage::Error { code: 6, message }) => assert!(
            message.starts_with("wrong monitor token") && message.contains("next try"),
            "{message}"
        ),
        other => panic!("wrong token: {other:?}"),
    }
    match hello(port, TOKEN).1 {
        Ok(AgentMessage::Error { code: 6, message }) => {
            assert!(
                message.contains("too many wrong monitor tokens"),
                "{message}"
            )
        }
        other => panic!("a try during the wait: {other:?}"),
    }
    std::thread::sleep(Duration::from_millis(1100));
    // 50 subscriptions at once, all with the token, from one host: its share is 3 of the 4.
    let handles: Vec<_> = (0..50)
        .map(|_| std::thread::spawn(move || hello(port, TOKEN)))
        .collect();
    let mut held = Vec::new();
    let (mut welcomed, mut busy) = (0, 0);
    for h in handles {
        let (s, r) = h.join().unwrap();
        match r {
            Ok(AgentMessage::Welcome { .. }) => welcomed += 1,
            Ok(AgentMessage::Error { code: 2, message }) => {
                assert!(
                    message.contains("busy") && message.contains("limit 3 per host"),
                    "{message}"
                );
                busy += 1;
            }
            other => panic!("unexpected reply: {other:?}"),
        }
        held.push(s);
    }
    assert_eq!((welcomed, busy), (3, 47));
    let t = threads(srv.0.id());
    assert!(t < 40, "server threads with 50 subscribers: {t}");
    drop(held);
    // The slots come back: a real subscription works.
    std::thread::sleep(Duration::from_millis(300));
    let out = Command::new(BIN)
        .args([
            "monitor",
            "--remote",
            &format!("127.0.0.1:{port}"),
            "-t",
            "1.2",
            "-i",
            "0.2",
        ])
        .args(["--monitor-token", TOKEN, "--json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let m: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(m["samples"].as_array().unwrap().len() >= 3, "{m}");
    assert!(m["start_unix_s"].as_f64().unwrap() > 1.7e9);
    // The agent keeps no samples; the summary is recomputed from the ones received.
    assert!(
        m["summary"]["busiest_cpu_max_pct"].as_f64().is_some(),
        "{m}"
    );
    let off = m["agent"]["offset_ms"].as_f64().unwrap();
    assert!(off.abs() < 5.0, "same host, offset {off} ms");
    assert_eq!(m["agent"]["exchanges"], 16);
}

#[test]
fn rrul_with_monitor_stores_router_samples_on_the_test_axis() {
    let port = 27312;
    let _srv = start_server(port, &[]);
    let json = std::env::temp_dir().join(format!("rb-agent-rrul-{}.json", std::process::id()));
    let out = Command::new(BIN)
        .args([
            "rrul",
            "127.0.0.1",
            "-p",
            &port.to_string(),
            "-l",
            "2",
            "--delay",
            "1",
        ])
        .args(["-q", "--monitor", &format!("127.0.0.1:{port}"), "--json"])
        .arg(&json)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("Router (agent 127.0.0.1:27312)"),
        "{stdout}"
    );
    assert!(stdout.contains("CPU headroom"), "{stdout}");
    let run: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let _ = std::fs::remove_file(&json);
    let r = &run["router"];
    let t0 = run["latency"]["t0_unix_s"].as_f64().unwrap();
    assert!((r["start_unix_s"].as_f64().unwrap() - t0).abs() < 1e-6);
    let ts: Vec<f64> = r["samples"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["t_s"].as_f64().unwrap())
        .collect();
    // 4 s of test at 0.2 s: samples from the idle lead-in to the tail, on the test's axis.
    assert!(ts.len() >= 12, "{ts:?}");
    assert!(ts[0] >= 0.0 && ts[0] < 1.0, "{ts:?}");
    assert!(
        *ts.last().unwrap() > 3.0 && *ts.last().unwrap() < 6.0,
        "{ts:?}"
    );
    let l = &r["summary"]["under_load"];
    assert_eq!(l["load_from_s"], 1.0);
    assert!(l["cpu_headroom_pct"].as_f64().is_some(), "{l}");
}

#[test]
fn monitor_beyond_loopback_needs_a_token() {
    let out = Command::new(BIN)
        .args(["server", "-p", "27314", "--monitor"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--monitor-token"), "{err}");
}
