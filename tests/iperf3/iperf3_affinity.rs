//! CPU affinity, iperf3's `-A n,m`, both ways: iperf3's client asks our server to pin its
//! streams (the `server_affinity` parameter), our client pins its own streams and asks
//! iperf3's server to pin itself, and a CPU the server cannot use is refused with iperf3's
//! error 132. Checked from outside, in /proc, while the test runs.

use crate::support::iperf3::*;
use std::time::{Duration, Instant};

/// First and last CPU this process may use (the same one on a single-CPU machine).
fn two_cpus() -> (usize, usize) {
    let cpus = routerbench::util::affinity::allowed_cpus().expect("affinity mask");
    (cpus[0], *cpus.last().expect("a CPU"))
}

/// `Cpus_allowed_list` of the threads of `pid` whose name starts with `prefix` (all threads
/// when the prefix is empty).
fn thread_cpus(pid: u32, prefix: &str) -> Vec<String> {
    let mut out = Vec::new();
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return out;
    };
    for t in tasks.flatten() {
        let comm = std::fs::read_to_string(t.path().join("comm")).unwrap_or_default();
        if !comm.trim_end().starts_with(prefix) {
            continue;
        }
        let status = std::fs::read_to_string(t.path().join("status")).unwrap_or_default();
        if let Some(l) = status.lines().find(|l| l.starts_with("Cpus_allowed_list:")) {
            out.push(l["Cpus_allowed_list:".len()..].trim().to_string());
        }
    }
    out
}

/// Polls (at most 5 s) until `count` threads named `prefix` exist in `pid`, all allowed only
/// on `cpu`; returns what it saw last. Threads are spawned one by one and each pins itself
/// after it starts, so an early look can see fewer, or one not yet pinned.
fn wait_threads(pid: u32, prefix: &str, count: usize, cpu: usize) -> Vec<String> {
    let want = cpu.to_string();
    let end = Instant::now() + Duration::from_secs(5);
    let mut found = Vec::new();
    while Instant::now() < end {
        found = thread_cpus(pid, prefix);
        if found.len() == count && found.iter().all(|c| c == &want) {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    found
}

#[test]
fn iperf3_client_pins_our_server_streams() {
    let (n, m) = two_cpus();
    let port = 25321u16;
    let p = port.to_string();
    let rb = std::path::Path::new(ROUTERBENCH);
    let mut server = Proc::start(rb, &["server", "-p", &p, "-1", "-q"], "aff-srv");
    wait_listening(port);
    let a = format!("{n},{m}");
    let mut client = Proc::start(
        &iperf3(),
        &["-c", "127.0.0.1", "-p", &p, "-t", "2", "-P", "2", "-A", &a],
        "aff-cli",
    );
    let cpus = wait_threads(server.child.id(), "iperf3-stream", 2, m);
    let cst = client.wait(Duration::from_secs(30)).expect("client ends");
    let sst = server.wait(Duration::from_secs(20)).expect("server ends");
    assert!(cst.success(), "iperf3 client: {}", client.stderr_text());
    assert!(sst.success(), "server: {}", server.stderr_text());
    assert_eq!(cpus.len(), 2, "two stream threads seen: {cpus:?}");
    for c in &cpus {
        assert_eq!(c, &m.to_string(), "server stream thread pinned to CPU {m}");
    }
}

#[test]
fn our_client_pins_its_streams_and_asks_iperf3_server() {
    let (n, m) = two_cpus();
    let port = 25322u16;
    let p = port.to_string();
    let mut server = Proc::start(&iperf3(), &["-s", "-p", &p, "-1"], "aff-srv2");
    wait_listening(port);
    let a = format!("{m},{n}");
    let mut client = Proc::start(
        std::path::Path::new(ROUTERBENCH),
        &["client", "127.0.0.1", "-p", &p, "-t", "2", "-A", &a],
        "aff-cli2",
    );
    let ours = wait_threads(client.child.id(), "iperf3-stream", 1, m);
    // iperf3 pins its whole process once the parameters arrive.
    let end = Instant::now() + Duration::from_secs(5);
    let mut theirs = Vec::new();
    while Instant::now() < end {
        theirs = thread_cpus(server.child.id(), "");
        if theirs.iter().all(|c| c == &n.to_string()) && !theirs.is_empty() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let cst = client.wait(Duration::from_secs(30)).expect("client ends");
    let sst = server.wait(Duration::from_secs(20)).expect("server ends");
    assert!(cst.success(), "our client: {}", client.stderr_text());
    assert!(sst.success(), "iperf3 server: {}", server.stderr_text());
    assert_eq!(ours, vec![m.to_string()], "our stream thread on CPU {m}");
    assert!(
        !theirs.is_empty() && theirs.iter().all(|c| c == &n.to_string()),
        "iperf3 server pinned to CPU {n}: {theirs:?}"
    );
}

#[test]
fn a_cpu_the_server_cannot_use_is_refused_with_error_132() {
    let rb = std::path::Path::new(ROUTERBENCH);
    let port = 25323u16;
    let p = port.to_string();
    // Our own client checks its CPU before connecting.
    let out = std::process::Command::new(rb)
        .args(["client", "127.0.0.1", "-p", &p, "-A", "4000"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let msg = String::from_utf8_lossy(&out.stderr);
    assert!(msg.contains("CPU 4000 is not available"), "{msg}");

    // iperf3's client checks the server CPU against the machine's CPUs itself, so the server
    // runs confined to one CPU (taskset) and the client asks for another that exists.
    let (n, m) = two_cpus();
    if n == m {
        println!("skipped the iperf3 half: one CPU only");
        return;
    }
    let taskset = std::path::Path::new("/usr/bin/taskset");
    assert!(taskset.exists(), "taskset (util-linux) is missing");
    let only = n.to_string();
    let mut server = Proc::start(
        taskset,
        &["-c", &only, ROUTERBENCH, "server", "-p", &p, "-1"],
        "aff-srv3",
    );
    wait_listening(port);
    let a = format!("{n},{m}");
    let mut client = Proc::start(
        &iperf3(),
        &["-c", "127.0.0.1", "-p", &p, "-t", "2", "-A", &a],
        "aff-cli3",
    );
    let cst = client.wait(Duration::from_secs(30)).expect("client ends");
    let sst = server
        .wait(Duration::from_secs(20))
        .expect("one-off server ends");
    assert!(!cst.success(), "iperf3 client must fail");
    let err = client.stderr_text() + &client.stdout_text();
    assert!(
        err.contains("unable to set CPU affinity: Invalid argument"),
        "iperf3 names the cause: {err}"
    );
    let log = server.stderr_text();
    assert!(
        log.contains(&format!("CPU {m} is not available")),
        "server log names the CPU: {log}"
    );
    assert!(
        sst.success(),
        "server exits cleanly after the refusal: {log}"
    );
}
