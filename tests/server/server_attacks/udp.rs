//! The shared UDP port under attack: a spoofed stream hello from the victim's own address (the
//! hijack), and a flood of garbage datagrams; real iperf3 UDP tests and routerbench probes run
//! beside each.

use crate::support::server::*;
use std::net::UdpSocket;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

#[test]
fn a_spoofed_hello_from_the_victims_address_gets_nothing_and_the_victim_completes() {
    let (srv, port) = server_any(&[], "udp-hijack");
    // The attacker shares the victim's address (127.0.0.1) from another port, and says hello
    // every 5 ms from before the victim's test until after it.
    let spoof = UdpSocket::bind("127.0.0.1:0").expect("attacker socket");
    spoof
        .connect(("127.0.0.1", port))
        .expect("attacker connect");
    spoof
        .set_read_timeout(Some(Duration::from_millis(5)))
        .expect("timeout");
    let stop = Stop::new();
    let stolen = AtomicU64::new(0);
    let runs = std::thread::scope(|sc| {
        sc.spawn(|| {
            let mut buf = [0u8; 65536];
            while !stop.set() {
                let _ = spoof.send(b"9876");
                while let Ok(n) = spoof.recv(&mut buf) {
                    stolen.fetch_add(n as u64, Ordering::Relaxed);
                }
            }
        });
        std::thread::sleep(Duration::from_millis(300));
        let mut runs = Vec::new();
        let mut clients = vec![("3.12", iperf3())];
        if let Some(new) = iperf3_321() {
            clients.push(("3.21", new));
        }
        for (name, c) in &clients {
            for (mode, args) in [
                ("-R", &["-u", "-R", "-t", "2", "-b", "20M", "-J"][..]),
                ("send", &["-u", "-t", "2", "-b", "20M", "-J"][..]),
            ] {
                let (ok, text, _) = client_from(
                    c,
                    "127.0.0.1",
                    port,
                    args,
                    Duration::from_secs(20),
                    &format!("udp-hijack-{name}-{mode}"),
                );
                runs.push((format!("{name} {mode}"), ok, text));
            }
        }
        std::thread::sleep(Duration::from_millis(300));
        stop.raise();
        runs
    });
    for (what, ok, text) in &runs {
        assert!(ok, "{what}: the victim's test must complete:\n{text}");
        let doc: serde_json::Value = serde_json::from_str(text.trim()).unwrap_or_else(|e| {
            panic!("{what}: not JSON ({e}):\n{text}");
        });
        let got = doc["end"]["sum"]["bytes"].as_u64().unwrap_or(0);
        assert!(
            got > 1_000_000,
            "{what}: the victim received its data ({got} bytes)"
        );
    }
    assert_eq!(
        stolen.load(Ordering::Relaxed),
        0,
        "the spoofed source got no reply and no data"
    );
    let log = srv.stderr_text();
    assert!(
        !log.contains("said hello within"),
        "no victim stream was lost:\n{log}"
    );
}

/// Random datagrams (20–1400 bytes) from `src` to the port as fast as it can, until `stop`:
/// the count sent.
pub(crate) fn flood(src: &str, port: u16, stop: &Stop, seed: u64) -> u64 {
    let Ok(s) = UdpSocket::bind((src, 0)) else {
        return 0;
    };
    if s.connect(("127.0.0.1", port)).is_err() {
        return 0;
    }
    let mut x = seed | 1;
    let mut buf = [0u8; 1400];
    let mut sent = 0u64;
    while !stop.set() {
        for _ in 0..256 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let len = 20 + (x % 1380) as usize;
            for (i, b) in buf[..len].iter_mut().enumerate() {
                *b = (x >> (i % 8 * 8)) as u8 ^ i as u8;
            }
            if s.send(&buf[..len]).is_ok() {
                sent += 1;
            }
        }
    }
    sent
}

#[test]
fn a_udp_flood_leaves_the_probe_reflector_and_iperf3_udp_working() {
    let (srv, port) = server_any(&[], "udp-flood");
    let pid = srv.child.id();
    let stop = Stop::new();
    let p = port.to_string();
    let (sent, cpu, wall, runs, ping) = std::thread::scope(|sc| {
        let flooders: Vec<_> = (0..3)
            .map(|i| {
                let stop = &stop;
                sc.spawn(move || flood(&attacker(i), port, stop, 0x9e37_79b9 + i as u64))
            })
            .collect();
        std::thread::sleep(Duration::from_millis(500));
        let (cpu0, t0) = (cpu_seconds(pid), Instant::now());
        let mut runs = Vec::new();
        for i in 0..2 {
            runs.push(client_from(
                &iperf3(),
                HONEST,
                port,
                &["-u", "-t", "2", "-b", "10M"],
                Duration::from_secs(20),
                &format!("udp-flood-{i}"),
            ));
        }
        let ping = routerbench(
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
            Duration::from_secs(25),
            "udp-flood-ping",
        );
        let (cpu, wall) = (cpu_seconds(pid) - cpu0, t0.elapsed().as_secs_f64());
        stop.raise();
        let sent: u64 = flooders.into_iter().map(|f| f.join().unwrap_or(0)).sum();
        (sent, cpu, wall, runs, ping)
    });
    for (ok, text, _) in &runs {
        assert!(ok, "iperf3 -u must complete under the flood:\n{text}");
    }
    assert!(ping.0, "ping must complete under the flood:\n{}", ping.1);
    let json_start = ping.1.find('{').unwrap_or(0);
    let doc: serde_json::Value = serde_json::Deserializer::from_str(&ping.1[json_start..])
        .into_iter()
        .next()
        .and_then(Result::ok)
        .unwrap_or_else(|| panic!("ping --json output:\n{}", ping.1));
    let mut worst = 0.0f64;
    for s in doc["latency"]["probes"].as_array().into_iter().flatten() {
        if s["kind"] == "udp" {
            let sent_n = s["sent"].as_f64().unwrap_or(0.0);
            let got = s["received"].as_f64().unwrap_or(0.0);
            assert!(sent_n > 50.0, "{s}");
            worst = worst.max((sent_n - got) / sent_n);
        }
    }
    eprintln!(
        "UDP flood: {sent} datagrams from 3 hosts; server CPU {:.0} % of a core over {wall:.1} s; \
         worst UDP probe loss {:.1} %",
        100.0 * cpu / wall,
        100.0 * worst
    );
    assert!(sent > 10_000, "the flood ran ({sent} datagrams)");
    assert!(
        worst < 0.05,
        "probe loss {:.1} % under the flood",
        100.0 * worst
    );
    // The garbage never reached the reflector's thread (the socket filter dropped it).
    let log = srv.stderr_text();
    assert!(!log.contains("ignored a datagram"), "{log}");
}
