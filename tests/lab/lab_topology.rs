//! The lab's structure, as root: up/reconfigure/down, NAT really translating, congestion control
//! per namespace, threads in different namespaces talking to each other, and the CLI end to end.

#![cfg(feature = "lab")]

use crate::support::lab::{can_run, guard, root_links, unique_name};
use routerbench::lab::{self, LabGuard, LabSpec, netns};
use routerbench::results::lab::Shaper;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::Duration;

/// Accepts one TCP connection on the WAN host and returns the peer address it saw.
fn peer_seen_by_wan(cfg: &routerbench::results::lab::LabConfig) -> SocketAddr {
    let wan_ip = cfg.wan_ip.clone();
    let (tx, rx) = std::sync::mpsc::channel();
    let server = netns::spawn_in(&cfg.ns_wan, move || {
        let l = TcpListener::bind((wan_ip.as_str(), 9100))?;
        l.set_nonblocking(false)?;
        tx.send(()).ok();
        let (mut s, peer) = l.accept()?;
        s.set_read_timeout(Some(Duration::from_secs(5)))?;
        let mut b = [0u8; 4];
        s.read_exact(&mut b)?;
        s.write_all(&b)?;
        Ok(peer)
    })
    .unwrap();
    rx.recv_timeout(Duration::from_secs(5)).unwrap();
    let target: SocketAddr = format!("{}:9100", cfg.wan_ip).parse().unwrap();
    let echoed = netns::run_in(&cfg.ns_lan, move || {
        let mut s = TcpStream::connect_timeout(&target, Duration::from_secs(5))?;
        s.set_read_timeout(Some(Duration::from_secs(5)))?;
        s.write_all(b"ping")?;
        let mut b = [0u8; 4];
        s.read_exact(&mut b)?;
        Ok(b)
    })
    .unwrap();
    assert_eq!(&echoed, b"ping");
    netns::join(server).unwrap()
}

#[test]
fn up_reconfigure_nat_and_down() {
    if !can_run("up_reconfigure_nat_and_down", &["ip", "tc", "nft"]) {
        return;
    }
    let before = root_links();
    let name = unique_name("t");
    let _guard = guard(&name);
    let spec = LabSpec {
        name: name.clone(),
        up_rate_bps: Some(20_000_000),
        down_rate_bps: Some(30_000_000),
        buffer_bytes: 64_000,
        ..LabSpec::default()
    };
    let cfg = lab::up(&spec).unwrap();
    assert!(netns::exists(&cfg.ns_lan) && netns::exists(&cfg.ns_rtr) && netns::exists(&cfg.ns_wan));
    let st = lab::status(&name).unwrap();
    assert!(st.up);
    assert_eq!(st.reachable, Some(true));
    let kinds: Vec<_> = st
        .qdiscs
        .iter()
        .map(|q| (q.dev.as_str(), q.kind.as_str()))
        .collect();
    assert!(
        kinds.contains(&("rtr-wan", "tbf")) && kinds.contains(&("rtr-lan", "tbf")),
        "{kinds:?}"
    );
    assert_eq!(
        netns::sysctl_read(&cfg.ns_rtr, "net.ipv4.ip_forward").unwrap(),
        "1"
    );
    for ns in [&cfg.ns_lan, &cfg.ns_rtr, &cfg.ns_wan] {
        assert_eq!(
            netns::sysctl_read(ns, "net.ipv4.tcp_congestion_control").unwrap(),
            cfg.ns_cc
        );
    }
    let pgr = netns::sysctl_read(&cfg.ns_lan, "net.ipv4.ping_group_range").unwrap();
    assert_eq!(
        pgr.split_whitespace().collect::<Vec<_>>(),
        ["0", "2147483647"]
    );
    // Without NAT the WAN host sees the LAN host's own address.
    assert_eq!(peer_seen_by_wan(&cfg).ip().to_string(), cfg.lan_ip);

    // Re-running `up` reconfigures in place: NAT on, htb, offloads on.
    let spec2 = LabSpec {
        nat: true,
        shaper: Shaper::Htb,
        offloads: true,
        ..spec.clone()
    };
    let cfg2 = lab::up(&spec2).unwrap();
    let st2 = lab::status(&name).unwrap();
    assert!(st2.qdiscs.iter().any(|q| q.kind == "htb"));
    assert!(st2.qdiscs.iter().any(|q| q.kind == "bfifo"));
    assert!(st2.qdiscs.iter().all(|q| q.kind != "tbf"));
    assert!(
        st2.offloads
            .iter()
            .all(|o| o.contains("gso=on tso=on gro=off")),
        "{:?}",
        st2.offloads
    );
    assert!(
        st2.nft_ruleset
            .as_deref()
            .unwrap_or("")
            .contains("masquerade")
    );
    // With NAT the WAN host sees the router's WAN address and has no route back to the LAN.
    assert_eq!(peer_seen_by_wan(&cfg2).ip().to_string(), cfg2.rtr_wan_ip);
    let wan = st2
        .namespaces
        .iter()
        .find(|n| n.name == cfg2.ns_wan)
        .unwrap();
    assert!(
        wan.routes.iter().all(|r| !r.starts_with("10.201.1.0/24")),
        "{:?}",
        wan.routes
    );

    // Back to no NAT, unshaped.
    let spec3 = LabSpec {
        up_rate_bps: None,
        down_rate_bps: None,
        ..spec.clone()
    };
    lab::up(&spec3).unwrap();
    let st3 = lab::status(&name).unwrap();
    assert!(
        st3.qdiscs.iter().all(|q| q.kind == "noqueue"),
        "{:?}",
        st3.qdiscs
    );
    assert!(
        !st3.nft_ruleset
            .as_deref()
            .unwrap_or("")
            .contains("masquerade")
    );
    assert_eq!(peer_seen_by_wan(&cfg).ip().to_string(), cfg.lan_ip);

    assert_eq!(
        root_links(),
        before,
        "the lab must not add links to the root namespace"
    );
    let r = lab::down(&name).unwrap();
    assert_eq!(r.removed.len(), 3);
    assert!(!netns::exists(&cfg.ns_lan));
    assert!(!lab::status(&name).unwrap().up);
    // Twice is fine.
    assert!(lab::down(&name).unwrap().removed.is_empty());
    assert!(lab::load_config(&name).is_err());
}

#[test]
fn parallel_labs_do_not_collide() {
    if !can_run("parallel_labs_do_not_collide", &["ip", "tc"]) {
        return;
    }
    let names: Vec<String> = (0..2).map(|_| unique_name("p")).collect();
    let _guards: Vec<LabGuard> = names.iter().map(|n| guard(n)).collect();
    let handles: Vec<_> = names
        .iter()
        .map(|n| {
            let spec = LabSpec {
                name: n.clone(),
                ..LabSpec::default()
            };
            std::thread::spawn(move || lab::up(&spec))
        })
        .collect();
    for h in handles {
        h.join().unwrap().unwrap();
    }
    for n in &names {
        let st = lab::status(n).unwrap();
        assert!(st.up && st.reachable == Some(true), "{n}: {st:?}");
    }
}

#[test]
fn bad_input_is_refused_clearly() {
    if !can_run("bad_input_is_refused_clearly", &["ip", "tc"]) {
        return;
    }
    let bad_name = LabSpec {
        name: "../evil".into(),
        ..LabSpec::default()
    };
    assert!(
        lab::up(&bad_name)
            .unwrap_err()
            .to_string()
            .contains("bad namespace name")
    );
    let tiny = LabSpec {
        name: unique_name("b"),
        buffer_bytes: 100,
        ..LabSpec::default()
    };
    assert!(lab::up(&tiny).unwrap_err().to_string().contains("1514"));
    let cc = LabSpec {
        name: unique_name("b"),
        cc: "nosuchcc".into(),
        ..LabSpec::default()
    };
    assert!(
        lab::up(&cc)
            .unwrap_err()
            .to_string()
            .contains("not available")
    );
    assert!(!netns::exists(&format!("{}-lan", tiny.name)));
    assert!(lab::load_config("rbt-never-built").is_err());
}

#[test]
fn cli_up_status_down() {
    if !can_run("cli_up_status_down", &["ip", "tc", "nft"]) {
        return;
    }
    let bin = env!("CARGO_BIN_EXE_routerbench");
    let name = unique_name("c");
    let _guard = guard(&name);
    let run = |args: &[&str]| {
        std::process::Command::new(bin)
            .args(args)
            .output()
            .expect("run routerbench")
    };
    let up = run(&[
        "lab", "up", "--name", &name, "--rate", "20mbit", "--buffer", "64000", "--nat",
    ]);
    let text = String::from_utf8_lossy(&up.stdout);
    assert!(
        up.status.success(),
        "{text} {}",
        String::from_utf8_lossy(&up.stderr)
    );
    assert!(text.contains("full queue adds 25.6 ms"), "{text}");
    let st = run(&["lab", "status", "--name", &name, "--json"]);
    assert!(st.status.success());
    let v: serde_json::Value = serde_json::from_slice(&st.stdout).unwrap();
    assert_eq!(v["up"], true);
    assert_eq!(v["config"]["nat"], true);
    assert_eq!(v["config"]["up_rate_bps"], 20_000_000);
    assert_eq!(v["theory"]["up_queue_delay_ms"], 25.6, "{v}");
    // `up --json` (reconfiguring in place): one object with named parts.
    let up = run(&[
        "lab", "up", "--name", &name, "--rate", "20mbit", "--buffer", "64000", "--nat", "--json",
    ]);
    assert!(up.status.success());
    let v: serde_json::Value = serde_json::from_slice(&up.stdout).unwrap();
    assert_eq!(v["config"]["name"], name.as_str(), "{v}");
    assert_eq!(v["config"]["devices"]["rtr_wan"], "rtr-wan", "{v}");
    assert_eq!(v["theory"]["up_queue_delay_ms"], 25.6, "{v}");
    assert!(v["aqm"].is_null(), "{v}");
    assert!(run(&["lab", "down", "--name", &name]).status.success());
    let st = run(&["lab", "status", "--name", &name]);
    assert_eq!(st.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&st.stdout).contains("DOWN"));
    let bad = run(&["lab", "up", "--name", &name, "--rate", "fast"]);
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("bad rate"));
}

#[test]
fn guard_removes_the_lab_when_a_test_panics() {
    if !can_run("guard_removes_the_lab_when_a_test_panics", &["ip", "tc"]) {
        return;
    }
    let name = unique_name("g");
    let n2 = name.clone();
    let outcome = std::thread::spawn(move || {
        let _guard = guard(&n2);
        lab::up(&LabSpec {
            name: n2.clone(),
            ..LabSpec::default()
        })
        .unwrap();
        assert!(netns::exists(&format!("{n2}-rtr")));
        panic!("a failing lab test");
    })
    .join();
    assert!(outcome.is_err(), "the thread should have panicked");
    for suffix in ["lan", "rtr", "wan"] {
        assert!(
            !netns::exists(&format!("{name}-{suffix}")),
            "{name}-{suffix} left behind"
        );
    }
    assert!(lab::load_config(&name).is_err());
}

#[test]
fn down_stops_processes_inside_the_lab() {
    if !can_run(
        "down_stops_processes_inside_the_lab",
        &["ip", "tc", "sleep"],
    ) {
        return;
    }
    let name = unique_name("d");
    let _guard = guard(&name);
    let cfg = lab::up(&LabSpec {
        name: name.clone(),
        ..LabSpec::default()
    })
    .unwrap();
    let mut child = netns::command_in(&cfg.ns_wan, "sleep")
        .unwrap()
        .arg("30")
        .spawn()
        .unwrap();
    let pid = child.id() as i32;
    // `ip netns exec` execs sleep, so the PID shows up in the namespace once exec is done.
    let mut listed = false;
    // At most 5 s: other lab tests in this binary spawn ip/tc/nft at the same time.
    for _ in 0..250 {
        if netns::pids(&cfg.ns_wan).unwrap().contains(&pid) {
            listed = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(listed, "pid {pid} not listed in {}", cfg.ns_wan);
    let report = lab::down(&name).unwrap();
    assert!(report.killed.contains(&pid), "{report:?}");
    // `lab down` waits for what it stopped (so a qemu leaves no zombie); run in this process, it
    // may reap our own child first, and then there is nothing left to wait for.
    match routerbench::lab::sys::wait_deadline(&mut child, Duration::from_secs(5)) {
        Ok(status) => assert!(
            !status
                .expect("sleep should have been stopped by down")
                .success()
        ),
        Err(e) => {
            assert!(format!("{e:?}").contains("No child processes"), "{e:?}");
            assert!(
                !std::path::Path::new(&format!("/proc/{pid}")).exists(),
                "pid {pid} still there"
            );
        }
    }
}
