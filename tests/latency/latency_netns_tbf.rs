//! A real queue: server and `rrul` inside a private network namespace whose loopback is shaped
//! by tbf (50 Mbit/s, 300 kB buffer → 48 ms per traversal, `buffer·8/rate`). The kernel-stamped
//! RTT must see the queue (send stamps at qdisc entry), split it between up and down, and agree
//! with the user-space RTT. Needs root; skips with a reason otherwise. The namespace is deleted.

use crate::support::netns::run;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

struct Netns {
    name: String,
    server: Option<Child>,
}

impl Drop for Netns {
    fn drop(&mut self) {
        if let Some(mut c) = self.server.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
        let _ = Command::new("ip")
            .args(["netns", "del", &self.name])
            .status();
    }
}

#[test]
fn kernel_rtt_sees_a_tbf_queue_and_splits_it() {
    // It loads the machine or measures against theory: not at once with the others that do
    // (tests/support/mod.rs, alone).
    let _alone = crate::support::alone();
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipping: needs root to create a network namespace");
        return;
    }
    let mut ns = Netns {
        name: format!("rbtbf{}", std::process::id()),
        server: None,
    };
    if let Err(e) = run(&["ip", "netns", "add", &ns.name]) {
        eprintln!("skipping: cannot create a network namespace ({e})");
        std::mem::forget(ns);
        return;
    }
    run(&[
        "ip", "-n", &ns.name, "link", "set", "lo", "up", "mtu", "1500",
    ])
    .unwrap();
    let tbf = [
        "tc", "-n", &ns.name, "qdisc", "replace", "dev", "lo", "root", "tbf", "rate", "50mbit",
        "burst", "15k", "limit", "300000",
    ];
    if let Err(e) = run(&tbf) {
        eprintln!("skipping: no tbf qdisc here ({e})");
        return;
    }
    let bin = env!("CARGO_BIN_EXE_routerbench");
    ns.server = Some(
        Command::new("ip")
            .args([
                "netns",
                "exec",
                &ns.name,
                bin,
                "latency-server",
                "-p",
                "5201",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    // Wait (at most 10 s) until the server listens: /proc/<pid>/net/tcp shows the sockets of
    // the process's namespace; port 5201 is 0x1451, state 0A is LISTEN.
    let pid = ns.server.as_ref().map(|c| c.id()).expect("server started");
    let until = std::time::Instant::now() + Duration::from_secs(10);
    let listening = || {
        std::fs::read_to_string(format!("/proc/{pid}/net/tcp"))
            .unwrap_or_default()
            .lines()
            .any(|l| l.contains(":1451 ") && l.split_whitespace().nth(3) == Some("0A"))
    };
    while !listening() && std::time::Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        listening(),
        "latency-server did not listen on 5201 within 10 s"
    );
    let json = std::env::temp_dir().join(format!("{}.json", ns.name));
    let out = Command::new("ip")
        .args([
            "netns",
            "exec",
            &ns.name,
            bin,
            "rrul",
            "127.0.0.1",
            "--length",
            "4",
            "--delay",
            "2",
            // Loss-based, so the flows fill the queue (this kernel's default, bbr, keeps it short).
            "--cc",
            "cubic",
            "-q",
            "--json",
        ])
        .arg(&json)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    println!("{text}");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let _ = std::fs::remove_file(&json);
    let s = &v["latency"]["summary"];
    let get = |a: &str, b: &str| s[a][b].as_f64().unwrap_or(f64::NAN);
    let queue_ms = 300_000.0 * 8.0 / 50e6 * 1e3; // 48 ms per traversal
    // Idle: no queue. Loaded: the queue shows in kernel-stamped RTTs, bounded by two traversals.
    assert!(
        get("idle_rtt_ms", "median") < 2.0,
        "idle median {}",
        get("idle_rtt_ms", "median")
    );
    assert!(
        get("loaded_rtt_ms", "median") > 10.0,
        "loaded median {} ms: queue not seen",
        get("loaded_rtt_ms", "median")
    );
    assert!(
        get("loaded_rtt_ms", "p99") < 2.0 * queue_ms * 1.5,
        "loaded p99 {} beyond the buffer",
        get("loaded_rtt_ms", "p99")
    );
    // Kernel and user-space RTTs agree on a real queue (user space only adds scheduling).
    let (k, u) = (
        get("loaded_rtt_ms", "median"),
        get("loaded_rtt_user_ms", "median"),
    );
    assert!(
        k > 0.8 * u && k <= u + 0.01,
        "kernel median {k} ms vs user-space {u} ms"
    );
    // Both directions cross the same shaped loopback: each one-way delay carries part of it.
    assert!(
        get("loaded_owd_up_ms", "median") > 3.0 && get("loaded_owd_down_ms", "median") > 3.0,
        "{s}"
    );
    assert_ne!(s["grade"], "A+", "a 48 ms buffer cannot grade A+");
    // The 50 Mbit/s shaper carries both directions.
    let total = s["upload_mbps"].as_f64().unwrap() + s["download_mbps"].as_f64().unwrap();
    assert!(
        total > 20.0 && total < 55.0,
        "{total} Mbit/s through a 50 Mbit/s shaper"
    );
}
