//! The monitor's queue readings in a real namespace: a private network namespace whose loopback
//! is shaped by tbf (10 Mbit/s, 100 kB limit), a UDP sender inside it for 2 s, and the Sampler
//! started from a thread that joined the namespace with setns (as `lab run` does). Its rtnetlink
//! readings must be the namespace's (only `lo`, a tbf) and see a backlog; BQL is skipped with a
//! note. Needs root and tc; skips with a reason otherwise. The namespace is deleted by a guard.

// Joins the namespace through the lab's setns helper.
#![cfg(feature = "lab")]

use crate::support::netns::run;
use routerbench::monitor::{Sampler, SamplerConfig};
use std::net::UdpSocket;
use std::process::Command;
use std::time::{Duration, Instant};

struct Netns(String);

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "del", &self.0]).status();
    }
}

/// Sends 1400-byte datagrams to a receiver on 127.0.0.1 for `len` (bounded by the deadline).
fn blast(len: Duration) -> std::io::Result<u64> {
    let rx = UdpSocket::bind("127.0.0.1:0")?;
    let tx = UdpSocket::bind("127.0.0.1:0")?;
    tx.set_write_timeout(Some(Duration::from_millis(50)))?;
    let dst = rx.local_addr()?;
    let buf = [0x5au8; 1400];
    let until = Instant::now() + len;
    let mut sent = 0u64;
    while Instant::now() < until {
        // A full send buffer or a full tbf is expected: keep offering more than 10 Mbit/s.
        if tx.send_to(&buf, dst).is_ok() {
            sent += 1;
        }
        // At most ~32 datagrams per ms (~360 Mbit/s offered): far above the tbf's rate without
        // spinning a core of this shared machine.
        if sent % 32 == 0 {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    Ok(sent)
}

/// htb (the lab's other shaper) over rtnetlink: the root is `htb`, the leaf's backlog shows at
/// the root, and no rate is claimed (htb's rate lives on its class, which is not read).
#[test]
fn sampler_in_a_namespace_reads_an_htb_tree() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 || routerbench::lab::sys::tool_path("tc").is_err() {
        eprintln!("skipping: needs root and tc");
        return;
    }
    let ns = Netns(format!("rbmh{}", std::process::id()));
    if let Err(e) = run(&["ip", "netns", "add", &ns.0]) {
        eprintln!("skipping: cannot create a network namespace ({e})");
        std::mem::forget(ns);
        return;
    }
    run(&["ip", "-n", &ns.0, "link", "set", "lo", "up", "mtu", "1500"]).unwrap();
    for args in [
        &[
            "qdisc", "add", "dev", "lo", "root", "handle", "1:", "htb", "default", "10",
        ][..],
        &[
            "class", "add", "dev", "lo", "parent", "1:", "classid", "1:10", "htb", "rate", "10mbit",
        ],
        &[
            "qdisc", "add", "dev", "lo", "parent", "1:10", "handle", "10:", "bfifo", "limit",
            "100000",
        ],
    ] {
        let mut v = vec!["tc", "-n", &ns.0];
        v.extend_from_slice(args);
        run(&v).unwrap();
    }
    let (result, _) = routerbench::lab::netns::run_in(&ns.0, || {
        let sampler = Sampler::start(SamplerConfig {
            interval: Duration::from_millis(200),
            queue_interval: Duration::from_millis(50),
            max_duration: Duration::from_secs(15),
            ..SamplerConfig::default()
        })?;
        let sent = blast(Duration::from_secs(2))?;
        Ok((sampler.stop(), sent))
    })
    .expect("sampler and sender in the namespace");
    let q = &result.summary.queues;
    assert_eq!(q.len(), 1, "{q:?}");
    assert_eq!(q[0].qdisc.as_deref(), Some("htb"));
    assert!(q[0].backlog_bytes_max.unwrap_or(0) >= 4 * 1400, "{q:?}");
    assert!(q[0].drops_total.unwrap_or(0) > 0, "{q:?}");
    assert_eq!(q[0].shaped_rate_bps, None, "{q:?}");
}

#[test]
fn sampler_in_a_namespace_sees_its_tbf_backlog() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipping: needs root to create a network namespace");
        return;
    }
    if routerbench::util::tool::tool_path("tc").is_err() {
        eprintln!("skipping: tc not installed (iproute2)");
        return;
    }
    let ns = Netns(format!("rbmq{}", std::process::id()));
    if let Err(e) = run(&["ip", "netns", "add", &ns.0]) {
        eprintln!("skipping: cannot create a network namespace ({e})");
        std::mem::forget(ns);
        return;
    }
    run(&["ip", "-n", &ns.0, "link", "set", "lo", "up", "mtu", "1500"]).unwrap();
    run(&[
        "tc", "-n", &ns.0, "qdisc", "add", "dev", "lo", "root", "handle", "1:", "tbf", "rate",
        "10mbit", "burst", "15000", "limit", "100000",
    ])
    .unwrap();
    let started = Instant::now();
    let (result, sent) = routerbench::lab::netns::run_in(&ns.0, || {
        let sampler = Sampler::start(SamplerConfig {
            interval: Duration::from_millis(200),
            queue_interval: Duration::from_millis(50),
            max_duration: Duration::from_secs(15),
            ..SamplerConfig::default()
        })?;
        let sent = blast(Duration::from_secs(2))?;
        Ok((sampler.stop(), sent))
    })
    .expect("sampler and sender in the namespace");
    assert!(started.elapsed() < Duration::from_secs(15));
    eprintln!(
        "sent {sent} datagrams; summary queues {:?}; notes {:?}",
        result.summary.queues, result.notes
    );
    assert!(sent > 0);
    assert!(
        !result.notes.iter().any(|n| n.starts_with("qdisc")),
        "{:?}",
        result.notes
    );
    assert!(
        result.notes.iter().any(|n| n.starts_with("BQL not read")),
        "a setns thread must not read the host's /sys/class/net: {:?}",
        result.notes
    );
    // Only the namespace's devices: its lo with the tbf (not the host's eth0).
    let q = &result.summary.queues;
    assert_eq!(q.len(), 1, "{q:?}");
    assert_eq!(q[0].dev, "lo");
    assert_eq!(q[0].qdisc.as_deref(), Some("tbf"));
    let backlog = q[0].backlog_bytes_max.unwrap_or(0);
    // 2 s of more than 10 Mbit/s into a 100 kB tbf: it held at least a few packets.
    assert!(backlog >= 4 * 1400, "backlog max {backlog}");
    assert!(backlog <= 100_000 + 65_536, "backlog max {backlog}");
    assert!(q[0].qlen_max.unwrap_or(0) >= 2, "{q:?}");
    // Offered far above 10 Mbit/s into a 100 kB limit for 2 s: the tbf dropped some.
    assert!(q[0].drops_total.unwrap_or(0) > 0, "{q:?}");
    assert!(q[0].bql_inflight_max_bytes.is_none());
    // The tbf's rate from its options, and the backlog in ms at that rate.
    assert_eq!(q[0].shaped_rate_bps, Some(10_000_000), "{q:?}");
    let ms = q[0].backlog_ms_max.unwrap_or(0.0);
    assert!(
        (ms - backlog as f64 * 8.0 / 1e4).abs() < 1e-6,
        "{ms} ms for {backlog} B"
    );
    assert!(
        result.samples.iter().any(|s| s
            .queues
            .iter()
            .any(|d| d.dev == "lo" && d.backlog_bytes_max > Some(0))),
        "some interval shows the backlog"
    );
    let text = routerbench::report::monitor::render_text(&result);
    assert!(
        text.contains("queues     lo qdisc tbf backlog max"),
        "{text}"
    );
}
