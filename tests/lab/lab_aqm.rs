//! The lab's userspace AQM end to end, as root, through the real binary:
//!
//! - `lab up --qdisc fq_codel` on this kernel (no sch_fq_codel) starts `routerbench shape`;
//!   status says userspace, kernel forwarding of rtr-lan/rtr-wan is off, the path works.
//! - the forwarder survives malformed frames and a 64-byte UDP flood over its 10 Mbit/s rate
//!   (still the same worker, still forwarding, the excess dropped by the qdisc).
//! - SIGKILL of the forwarder's worker mid-load: kernel forwarding comes back within seconds and
//!   the path works again; `lab down` leaves nothing.
//! - under 4 bulk TCP uploads at 50 Mbit/s with a 300 KB buffer, fq_codel's p99 latency
//!   increase is a fraction of the FIFO's (which sits near buffer·8/rate = 48 ms), with goodput
//!   within 10 % of the FIFO's (one re-measure on a miss).

#![cfg(feature = "lab")]

use crate::support::lab::{can_run, guard, unique_name};
use crate::support::{rb, text};
use routerbench::lab::{self, aqm_forwarder::afpacket::PacketSocket, netns};
use serde_json::Value;
use std::time::{Duration, Instant};

fn status(name: &str) -> Value {
    let out = text(&rb(&["lab", "status", "--name", name, "--json"]));
    let start = out.find('{').unwrap_or(0);
    serde_json::from_str(&out[start..]).unwrap_or(Value::Null)
}

fn mac(ns: &str, dev: &str) -> [u8; 6] {
    let out = lab::sys::run_tool("ip", &["-n", ns, "-j", "link", "show", "dev", dev]).unwrap();
    let v: Value = serde_json::from_str(&out).unwrap();
    let s = v[0]["address"].as_str().unwrap().to_string();
    let mut m = [0u8; 6];
    for (i, p) in s.split(':').enumerate() {
        m[i] = u8::from_str_radix(p, 16).unwrap();
    }
    m
}

/// Frames a broken or hostile LAN host could send to the router's MAC.
fn malformed_frames(dst: [u8; 6], src: [u8; 6]) -> Vec<Vec<u8>> {
    let eth = |ethertype: [u8; 2], payload: &[u8]| {
        let mut f = Vec::new();
        f.extend_from_slice(&dst);
        f.extend_from_slice(&src);
        f.extend_from_slice(&ethertype);
        f.extend_from_slice(payload);
        f
    };
    let mut ip = vec![
        0x45u8, 0, 0, 28, 0, 0, 0, 0, 64, 17, 0, 0, 10, 201, 1, 2, 10, 201, 2, 2,
    ];
    ip.extend_from_slice(&[0x6b, 0x6c, 0x6b, 0x6c, 0, 8, 0, 0]);
    let mut v = vec![
        eth([0x08, 0x00], &ip[..10]),   // truncated IP header
        eth([0x08, 0x00], &[0x4f; 30]), // IHL 15 > frame
        eth([0x08, 0x00], &[0x65; 40]), // version 6 in an IPv4 frame
        eth([0x86, 0xdd], &[0x60; 20]), // truncated IPv6
        eth([0x81, 0x00], &[0x00]),     // truncated VLAN tag
        eth([0x88, 0x64], &[0x11, 0, 0, 1, 0, 2, 0, 0x21]), // PPPoE without IP
        eth([0x12, 0x34], &[0xaa; 46]), // unknown ethertype
    ];
    let mut big_len = ip.clone();
    big_len[2..4].copy_from_slice(&1400u16.to_be_bytes()); // total length past the frame
    v.push(eth([0x08, 0x00], &big_len));
    let mut ttl1 = ip.clone();
    ttl1[8] = 1;
    v.push(eth([0x08, 0x00], &ttl1));
    let mut x = 0x2545_f491u32;
    for len in [0usize, 1, 13, 14, 15, 33, 60, 200, 1500] {
        v.push(
            (0..len)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 17;
                    x ^= x << 5;
                    x as u8
                })
                .collect(),
        );
    }
    v
}

fn worker_pid(st: &Value) -> Option<i32> {
    st["aqm"]["worker_pid"].as_i64().map(|p| p as i32)
}

#[test]
fn userspace_forwarder_survives_bad_frames_flood_and_kill() {
    if !can_run("lab_aqm", &["ip", "tc"]) {
        return;
    }
    let name = unique_name("q");
    let _guard = guard(&name);
    // 10 Mbit/s: the 64-byte flood (tens of Mbit/s from one sender thread) overflows it.
    let o = rb(&[
        "lab", "up", "--name", &name, "--rate", "10mbit", "--qdisc", "fq_codel",
    ]);
    let (ok, out) = (o.status.success(), text(&o));
    assert!(ok, "{out}");
    assert!(out.contains("userspace") || out.contains("kernel"), "{out}");
    let st = status(&name);
    if st["aqm"]["place"] == "kernel" {
        eprintln!("skip lab_aqm: this kernel has sch_fq_codel, the lab uses it");
        return;
    }
    assert_eq!(st["aqm"]["place"], "userspace", "{st}");
    assert_eq!(st["aqm"]["kernel_forwarding"], false, "{st}");
    assert_eq!(st["reachable"], true, "{st}");
    let worker = worker_pid(&st).expect("worker pid");

    // Malformed frames, 20 rounds, then a 64-byte UDP flood for 2 s (bounded count).
    let (ns_lan, ns_rtr) = (format!("{name}-lan"), format!("{name}-rtr"));
    let rtr_mac = mac(&ns_rtr, lab::DEV_RTR_LAN);
    let lan_mac = mac(&ns_lan, lab::DEV_LAN);
    let frames = malformed_frames(rtr_mac, lan_mac);
    let sent = netns::run_in(&ns_lan, move || {
        let s = PacketSocket::open(lab::DEV_LAN, false)?;
        let mut n = 0;
        for _ in 0..20 {
            for f in &frames {
                n += usize::from(s.send(f));
            }
        }
        Ok(n)
    })
    .unwrap();
    assert!(sent > 100, "sent {sent} malformed frames");
    let flooded = netns::run_in(&ns_lan, || {
        let s = std::net::UdpSocket::bind("10.201.1.2:27510")?;
        s.set_write_timeout(Some(Duration::from_millis(100)))?;
        let t0 = Instant::now();
        let mut n = 0u64;
        while t0.elapsed() < Duration::from_secs(2) && n < 3_000_000 {
            if s.send_to(&[0u8; 18], "10.201.2.2:27511").is_ok() {
                n += 1;
            }
        }
        Ok(n)
    })
    .unwrap();
    assert!(flooded > 10_000, "flood sent only {flooded}");
    std::thread::sleep(Duration::from_millis(500));
    let st = status(&name);
    assert_eq!(worker_pid(&st), Some(worker), "forwarder died: {st}");
    assert_eq!(st["reachable"], true, "after flood: {st}");
    let stats: Value = serde_json::from_str(
        &std::fs::read_to_string(lab::aqm_forwarder::stats_path(&name)).unwrap_or_default(),
    )
    .unwrap_or(Value::Null);
    assert!(
        stats["up"]["malformed"].as_u64().unwrap_or(0) > 50,
        "{stats}"
    );
    assert!(
        stats["up"]["qdisc_drops"].as_u64().unwrap_or(0) > 1000,
        "{stats}"
    );

    // SIGKILL the worker under load: kernel forwarding must come back.
    let load = std::thread::spawn({
        let ns_lan = ns_lan.clone();
        move || {
            netns::run_in(&ns_lan, || {
                let s = std::net::UdpSocket::bind("10.201.1.2:27512")?;
                let t0 = Instant::now();
                while t0.elapsed() < Duration::from_secs(3) {
                    let _ = s.send_to(&[0u8; 1200], "10.201.2.2:27513");
                    std::thread::sleep(Duration::from_micros(200));
                }
                Ok(())
            })
        }
    });
    std::thread::sleep(Duration::from_millis(500));
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(worker),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    let t0 = Instant::now();
    let mut back = false;
    while t0.elapsed() < Duration::from_secs(5) {
        if lab::aqm_forwarder::kernel_forwarding(&ns_rtr) == Some(true) {
            back = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = load.join();
    assert!(
        back,
        "kernel forwarding not restored after the worker was killed"
    );
    let st = status(&name);
    assert_eq!(st["reachable"], true, "after kill: {st}");
    assert!(worker_pid(&st).is_none(), "{st}");

    let o = rb(&["lab", "down", "--name", &name]);
    let (ok, out) = (o.status.success(), text(&o));
    assert!(ok, "{out}");
    assert!(!netns::exists(&ns_rtr));
}

fn measure(name: &str) -> Option<(f64, f64)> {
    let o = rb(&[
        "lab", "measure", "--name", name, "--dir", "up", "--flows", "4", "--length", "8", "--json",
    ]);
    let (ok, out) = (o.status.success(), text(&o));
    assert!(ok, "{out}");
    let v: Value = serde_json::from_str(&out[out.find('{')?..]).ok()?;
    let p = &v["lab"]["accuracy"][0];
    Some((p["p99_increase_ms"].as_f64()?, p["goodput_bps"].as_f64()?))
}

#[test]
fn fq_codel_cuts_the_fifo_bloat() {
    // It loads the machine or measures against theory: not at once with the others that do
    // (tests/support/mod.rs, alone).
    let _alone = crate::support::alone();
    if !can_run("lab_aqm", &["ip", "tc"]) {
        return;
    }
    let name = unique_name("f");
    let _guard = guard(&name);
    let mut last = String::new();
    for attempt in 0..2 {
        let o = rb(&[
            "lab", "up", "--name", &name, "--rate", "50mbit", "--buffer", "300000",
        ]);
        let (ok, out) = (o.status.success(), text(&o));
        assert!(ok, "{out}");
        let (fifo_p99, fifo_gp) = measure(&name).expect("fifo measure");
        let o = rb(&["lab", "up", "--name", &name, "--qdisc", "fq_codel"]);
        let (ok, out) = (o.status.success(), text(&o));
        assert!(ok, "{out}");
        let (fq_p99, fq_gp) = measure(&name).expect("fq_codel measure");
        last = format!(
            "fifo p99 +{fifo_p99:.1} ms {:.1} Mbit/s; fq_codel p99 +{fq_p99:.1} ms {:.1} Mbit/s",
            fifo_gp / 1e6,
            fq_gp / 1e6
        );
        eprintln!("attempt {attempt}: {last}");
        if fifo_p99 > 35.0 && fq_p99 < 15.0 && fq_gp > 0.9 * fifo_gp {
            return;
        }
    }
    panic!("{last}");
}

/// The SQM capacity search end to end, capped at one 50 Mbit/s point (the full search takes
/// minutes: docs/benchmarks.md has its figures): cake, kernel or userspace, passes at 50 Mbit/s.
#[test]
fn sqm_capacity_search_runs_one_point() {
    // It loads the machine or measures against theory: not at once with the others that do
    // (tests/support/mod.rs, alone).
    let _alone = crate::support::alone();
    if !can_run("lab_aqm", &["ip", "tc"]) {
        return;
    }
    let name = unique_name("c");
    let _guard = guard(&name);
    let mut last = String::new();
    for _ in 0..2 {
        let o = rb(&[
            "lab",
            "capacity",
            "--name",
            &name,
            "--qdisc",
            "cake",
            "--max-rate",
            "50mbit",
            "--length",
            "5",
            "--budget",
            "10",
            "--json",
        ]);
        let (ok, out) = (o.status.success(), text(&o));
        assert!(ok, "{out}");
        let v: Value =
            serde_json::from_str(&out[out.find('{').unwrap_or(0)..]).unwrap_or(Value::Null);
        let c = &v["sqm_capacity"];
        assert_eq!(c["qdisc"], "cake", "{out}");
        assert!(c["place"] == "userspace" || c["place"] == "kernel", "{out}");
        assert_eq!(c["points"].as_array().map(|p| p.len()), Some(1), "{out}");
        if c["capacity_bps"] == 50_000_000 {
            assert!(!netns::exists(&format!("{name}-rtr")), "lab not removed");
            return;
        }
        last = out;
    }
    panic!("cake did not pass at 50 Mbit/s twice: {last}");
}
