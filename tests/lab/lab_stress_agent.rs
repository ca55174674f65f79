//! `routerbench stress` through the lab with the router's agent killed mid-run (root; ports
//! 27330–27331 inside the lab's namespaces): the agent (`server --monitor`) in the router
//! namespace, a server in the WAN host, `stress --net WAN --monitor ROUTER --for 25` in the LAN
//! host; the agent is killed 10 s in. The run must end with "router stopped answering at t = …"
//! near the kill, keep the router's samples up to then, and keep loading through the router
//! (its kernel still forwards) to the end. About 35 s.

#![cfg(feature = "lab")]

use crate::support::lab::{can_run, guard};
use routerbench::lab::{self, LabSpec};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_routerbench");
const TOKEN: &str = "rb23-stress-token";
const FOR_S: u64 = 25;
const KILL_AT_S: u64 = 10;

use crate::support::lab::{spawn_in, wait_reachable};

/// The number after `at t = ` in `line`.
fn t_of(line: &str) -> f64 {
    line.split("at t = ")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no time in {line:?}"))
}

#[test]
fn stress_through_the_lab_with_the_routers_agent_killed() {
    // It loads the machine or measures against theory: not at once with the others that do
    // (tests/support/mod.rs, alone).
    let _alone = crate::support::alone();
    if !can_run("lab_stress_agent", &["ip", "tc"]) {
        return;
    }
    let name = format!("rb23s{}", std::process::id());
    let _guard = guard(&name);
    let cfg = lab::up(&LabSpec {
        name: name.clone(),
        up_rate_bps: Some(20_000_000),
        down_rate_bps: Some(20_000_000),
        buffer_bytes: 64_000,
        ..LabSpec::default()
    })
    .unwrap();
    let mut agent = spawn_in(
        &cfg.ns_rtr,
        &[
            "server",
            "-p",
            "27330",
            "-q",
            "--monitor",
            "--monitor-token",
            TOKEN,
        ],
    );
    let _server = spawn_in(&cfg.ns_wan, &["server", "-p", "27331", "-q"]);
    let agent_addr = format!("{}:27330", cfg.rtr_lan_ip);
    wait_reachable(&cfg.ns_lan, agent_addr.parse().unwrap());
    wait_reachable(
        &cfg.ns_lan,
        format!("{}:27331", cfg.wan_ip).parse().unwrap(),
    );
    let dir = std::env::temp_dir().join(format!("rb23-stress-lab-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let mut stress = Command::new("ip")
        .args(["netns", "exec", &cfg.ns_lan, BIN, "stress"])
        .args([
            "--for",
            &FOR_S.to_string(),
            "--net",
            &cfg.wan_ip,
            "-p",
            "27331",
        ])
        .args(["--monitor", &agent_addr, "--monitor-token", TOKEN])
        .arg("--out-dir")
        .arg(&dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_secs(KILL_AT_S));
    agent.0.kill().unwrap();
    let _ = agent.0.wait();
    // Bounded wait for the end of the run (25 s, the segments' end, saving).
    let until = Instant::now() + Duration::from_secs(FOR_S + 60);
    while stress.try_wait().unwrap().is_none() {
        if Instant::now() > until {
            let _ = stress.kill();
            panic!("stress did not end");
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let out = stress.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    eprintln!("{stdout}\n{stderr}");
    assert!(out.status.success(), "stress failed: {stderr}");
    let last = stdout.lines().last().unwrap_or("");
    assert!(
        last.starts_with("router stopped answering at t = "),
        "the run must end with the router's silence: {last:?}"
    );
    let stopped = t_of(last);
    // Killed 10 s after the start of a process that subscribes and checks the server first:
    // t = 0 is a little after that, and the last sample is up to one interval before the kill.
    assert!((5.0..=11.0).contains(&stopped), "stopped at t = {stopped}");
    assert!(
        stderr.contains("the router's agent stopped answering"),
        "{stderr}"
    );

    let json = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|e| e == "json"))
        .expect("the result file");
    let run = routerbench::results::load(&json).unwrap();
    let s = run.stress.as_ref().expect("stress section");
    assert_eq!(s.observed, "router");
    let st = &s.analysis.stability;
    assert_eq!(st.stopped.len(), 1, "{st:?}");
    assert_eq!(st.stopped[0].who, "router");
    assert!(
        (st.stopped[0].last_answer_s - stopped).abs() < 0.051,
        "{st:?}"
    );
    let router = run.router.as_ref().expect("the router's samples are kept");
    assert!(
        router.samples.len() >= 4,
        "{} samples",
        router.samples.len()
    );
    assert!(router.samples.iter().all(|x| x.t_s <= stopped + 0.05));
    assert!(router.agent.is_some(), "the clock mapping is stated");
    assert_eq!(router.start_unix_s, Some(s.t0_unix_s), "one time axis");
    // The load went on through the router, whose kernel still forwards.
    assert!(
        s.net_series
            .iter()
            .any(|p| p.t_s > stopped + 8.0 && p.down_mbps > 1.0),
        "the load stopped with the agent"
    );
    assert!(
        run.monitor.as_ref().is_some_and(|m| m.samples.len() >= 15),
        "this machine recorded to the end"
    );

    // The analysis re-run on the saved file ends the same way, and writes nothing.
    let before: Vec<_> = std::fs::read_dir(&dir).unwrap().flatten().collect();
    let again = Command::new(BIN)
        .args(["stress", "--analyze"])
        .arg(&json)
        .output()
        .unwrap();
    assert!(again.status.success());
    let text = String::from_utf8_lossy(&again.stdout);
    assert_eq!(text.lines().last(), Some(last), "{text}");
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), before.len());
    let _ = std::fs::remove_dir_all(&dir);
}
