//! The figures of docs/throughput.md ("Under attack: measured"), as ignored tests that print
//! a table: run them against this build and an older one, alternated, with
//!
//! ```sh
//! RB_SERVERS=/tmp/old-routerbench:target/release/routerbench RB_ROUNDS=3 \
//!   cargo test --release --test server server_attacks::figures -- --ignored --nocapture --test-threads 1
//! ```
//!
//! (`RB_SERVERS` defaults to this build.) Nothing here asserts: the cases in the other files do.

use crate::support::server::*;
use std::path::PathBuf;
use std::sync::atomic::AtomicUsize;
use std::time::{Duration, Instant};

fn servers() -> Vec<PathBuf> {
    match std::env::var("RB_SERVERS") {
        Ok(list) => list.split(':').map(PathBuf::from).collect(),
        Err(_) => vec![PathBuf::from(ROUTERBENCH)],
    }
}

fn rounds() -> usize {
    std::env::var("RB_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(3)
        .clamp(1, 20)
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}

/// One `iperf3 -t 1` from the honest host: (exit ok, seconds it took).
fn real_test(port: u16, tag: &str) -> (bool, f64) {
    let (ok, _, secs) = client_from(
        &iperf3(),
        HONEST,
        port,
        &["-t", "1"],
        Duration::from_secs(40),
        tag,
    );
    (ok, secs)
}

#[test]
#[ignore]
fn figures_real_client_wait_under_the_slot_attacks() {
    eprintln!("load average {}", load());
    eprintln!(
        "| build | round | idle: iperf3 -t 1 (s) | 200 trickled cookies from 10 hosts | 8 test + 8 session slots held from 10 hosts |"
    );
    eprintln!("|---|---|---|---|---|");
    for round in 0..rounds() {
        for bin in servers() {
            let name = bin.display().to_string();
            let (_srv, port) = server_any_with(&bin, &[], "fig-wait-idle");
            let idle = real_test(port, "fig-idle");
            drop(_srv);
            let (_srv, port) = server_any_with(&bin, &[], "fig-wait-conns");
            let stop = Stop::new();
            let conns = std::thread::scope(|sc| {
                sc.spawn(|| super::fairness::trickle_cookies(port, 10, 20, &stop));
                std::thread::sleep(Duration::from_secs(3));
                let r = real_test(port, "fig-conns");
                stop.raise();
                r
            });
            drop(_srv);
            let (_srv, port) = server_any_with(&bin, &[], "fig-wait-slots");
            let stop = Stop::new();
            let held = AtomicUsize::new(0);
            let slots = std::thread::scope(|sc| {
                for i in 0..10 {
                    for j in 0..4 {
                        let (stop, held) = (&stop, &held);
                        let id = (i * 4 + j + 1) as u64;
                        sc.spawn(move || {
                            super::fairness::hold_create_streams(port, &attacker(i), id, stop, held)
                        });
                        sc.spawn(move || {
                            super::fairness::hold_session(port, &attacker(i), stop, held)
                        });
                    }
                }
                std::thread::sleep(Duration::from_secs(3));
                let r = real_test(port, "fig-slots");
                stop.raise();
                r
            });
            let show = |(ok, s): (bool, f64)| {
                if ok {
                    format!("passed, {s:.2}")
                } else {
                    format!("**failed** after {s:.2}")
                }
            };
            eprintln!(
                "| {name} | {round} | {:.2} | {} | {} |",
                idle.1,
                show(conns),
                show(slots)
            );
        }
    }
    eprintln!("load average {}", load());
}

#[test]
#[ignore]
fn figures_server_cpu_under_a_udp_flood() {
    eprintln!("load average {}", load());
    eprintln!(
        "| build | round | datagrams sent | server CPU % of a core | iperf3 -u -t 2 | worst UDP probe loss |"
    );
    eprintln!("|---|---|---|---|---|---|");
    let mut cpu_by: std::collections::BTreeMap<String, Vec<f64>> = Default::default();
    for round in 0..rounds() {
        for bin in servers() {
            let name = bin.display().to_string();
            let (srv, port) = server_any_with(&bin, &[], "fig-flood");
            let pid = srv.child.id();
            let stop = Stop::new();
            let p = port.to_string();
            let (sent, cpu, udp_ok, loss) = std::thread::scope(|sc| {
                let floods: Vec<_> = (0..3)
                    .map(|i| {
                        let stop = &stop;
                        sc.spawn(move || super::udp::flood(&attacker(i), port, stop, 77 + i as u64))
                    })
                    .collect();
                std::thread::sleep(Duration::from_millis(500));
                let (c0, t0) = (cpu_seconds(pid), Instant::now());
                let (udp_ok, _, _) = client_from(
                    &iperf3(),
                    HONEST,
                    port,
                    &["-u", "-t", "2", "-b", "10M"],
                    Duration::from_secs(40),
                    "fig-flood-udp",
                );
                let (_, out, _) = routerbench(
                    &[
                        "ping",
                        "127.0.0.1",
                        "-p",
                        &p,
                        "--length",
                        "3",
                        "--interval",
                        "0.02",
                        "--json",
                    ],
                    Duration::from_secs(30),
                    "fig-flood-ping",
                );
                let cpu = 100.0 * (cpu_seconds(pid) - c0) / t0.elapsed().as_secs_f64();
                stop.raise();
                let sent: u64 = floods.into_iter().map(|f| f.join().unwrap_or(0)).sum();
                let start = out.find('{').unwrap_or(0);
                let doc: serde_json::Value = serde_json::Deserializer::from_str(&out[start..])
                    .into_iter()
                    .next()
                    .and_then(Result::ok)
                    .unwrap_or_default();
                let mut loss = f64::NAN;
                for s in doc["latency"]["probes"].as_array().into_iter().flatten() {
                    if s["kind"] == "udp" {
                        let n = s["sent"].as_f64().unwrap_or(0.0).max(1.0);
                        let l = (n - s["received"].as_f64().unwrap_or(0.0)) / n;
                        loss = if loss.is_nan() { l } else { loss.max(l) };
                    }
                }
                (sent, cpu, udp_ok, loss)
            });
            cpu_by.entry(name.clone()).or_default().push(cpu);
            eprintln!(
                "| {name} | {round} | {sent} | {cpu:.1} | {} | {:.1} % |",
                if udp_ok { "passed" } else { "**failed**" },
                100.0 * loss
            );
        }
    }
    for (name, mut v) in cpu_by {
        eprintln!("median server CPU {name}: {:.1} %", median(&mut v));
    }
    eprintln!("load average {}", load());
}
