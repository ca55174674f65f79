//! Fair shares under pressure (docs/throughput.md, "Fair shares"): ten attacking hosts
//! (127.0.0.2–.11) fill a cap with handshakes that never run, renewing each as soon as it is cut,
//! while an eleventh host (127.0.0.12) starts a real test. Its first attempt must start and
//! complete; the time it waited is printed (docs/throughput.md has the figures).

use crate::support::server::*;
use routerbench::wire::ROUTERBENCH_MAGIC;
use routerbench::wire::rb::{self, Message};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Whether the server closed `s` (EOF, reset, or the busy byte), without waiting.
fn gone(s: &mut TcpStream) -> bool {
    let _ = s.set_nonblocking(true);
    let mut b = [0u8; 64];
    let r = match s.read(&mut b) {
        Ok(0) => true,
        Ok(n) => b[..n].contains(&ACCESS_DENIED),
        Err(e) => e.kind() != std::io::ErrorKind::WouldBlock,
    };
    let _ = s.set_nonblocking(false);
    r
}

/// `per_host` connections from each of `hosts` attackers, each sending a cookie one byte a
/// second; a connection the server cuts is opened again at once. Runs until `stop`; returns
/// how many connections it opened.
pub(crate) fn trickle_cookies(port: u16, hosts: usize, per_host: usize, stop: &Stop) -> usize {
    let mut conns: Vec<(usize, Option<TcpStream>, usize)> = (0..hosts * per_host)
        .map(|i| (i % hosts, None, 0))
        .collect();
    let mut opened = 0;
    let mut n = 0u64;
    while !stop.set() {
        for (host, conn, sent) in conns.iter_mut() {
            if conn.as_mut().is_none_or(gone) {
                n += 1;
                *conn = connect_from(&attacker(*host), port).ok();
                *sent = 0;
                opened += 1;
            }
            if let Some(s) = conn.as_mut() {
                let c = cookie(n + *sent as u64 * 7919);
                if *sent < 36 && s.write_all(&c[*sent..*sent + 1]).is_ok() {
                    *sent += 1;
                }
            }
        }
        // One byte a second per connection, checked every 100 ms for cuts.
        for _ in 0..10 {
            if stop.set() {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
            for (host, conn, _) in conns.iter_mut() {
                if conn.as_mut().is_some_and(gone) {
                    *conn = connect_from(&attacker(*host), port).ok();
                    opened += 1;
                }
            }
        }
    }
    opened
}

#[test]
fn ten_hosts_filling_the_connection_cap_cannot_lock_out_an_eleventh() {
    // The issue's attack: 200 connections trickling cookies from 10 hosts against the default
    // 192-connection cap (48 per host).
    let (srv, port) = server_any(&[], "fair-conns");
    let stop = Stop::new();
    let mut waits = Vec::new();
    let (opened, outputs) = std::thread::scope(|sc| {
        let attack = sc.spawn(|| trickle_cookies(port, 10, 20, &stop));
        std::thread::sleep(Duration::from_secs(3));
        let mut outputs = Vec::new();
        let mut clients = vec![iperf3(), iperf3(), iperf3()];
        if let Some(new) = iperf3_321() {
            clients.push(new);
        }
        for (i, c) in clients.iter().enumerate() {
            let (ok, text, secs) = client_from(
                c,
                HONEST,
                port,
                &["-t", "1"],
                Duration::from_secs(25),
                &format!("fair-conns-{i}"),
            );
            waits.push(secs - 1.0);
            outputs.push((ok, text));
        }
        stop.raise();
        (attack.join().expect("attack"), outputs)
    });
    for (ok, text) in &outputs {
        assert!(
            ok,
            "the eleventh host's test must run beside the attack:\n{text}"
        );
    }
    eprintln!(
        "connection cap from 10 hosts: {opened} attack connections; the real clients waited \
         {waits:.2?} s beyond their 1 s test"
    );
    let log = srv.stderr_text();
    assert!(
        log.contains("connection slots full: took the slot of a connection of 127.0.0."),
        "the honest host took an attacker's pending slot:\n{log}"
    );
    assert!(opened >= 200, "{opened}");
}

/// One attacker thread: opens a control connection, sends a cookie and valid UDP-less TCP
/// parameters at once, then never opens its data streams (the test sits in CREATE_STREAMS
/// until the server's deadline or an eviction); again and again until `stop`.
pub(crate) fn hold_create_streams(port: u16, src: &str, id: u64, stop: &Stop, held: &AtomicUsize) {
    let params = r#"{"tcp":true,"omit":0,"time":30,"num":0,"blockcount":0,"parallel":1,"len":131072,"pacing_timer":1000,"client_version":"3.12"}"#;
    // Distinct cookies per thread: a repeated one would be taken as the data stream of the
    // test that sent it first (and run that test).
    let mut n = id << 32;
    while !stop.set() {
        n += 1;
        let Some(mut s) = control_with_params(src, port, n, params) else {
            std::thread::sleep(Duration::from_millis(20));
            continue;
        };
        if read_state(&mut s) == Some(CREATE_STREAMS) {
            held.fetch_add(1, Ordering::Relaxed);
        }
        // Held until the server cuts it.
        while !stop.set() && !closed_within(&mut s, Duration::from_millis(200)) {}
    }
}

/// One attacker thread: a routerbench session that says Hello and then nothing.
pub(crate) fn hold_session(port: u16, src: &str, stop: &Stop, held: &AtomicUsize) {
    let mut hello = ROUTERBENCH_MAGIC.to_vec();
    hello.extend_from_slice(
        &Message::Hello {
            version: rb::VERSION,
            token: String::new(),
        }
        .emit(),
    );
    while !stop.set() {
        let Ok(mut s) = connect_from(src, port) else {
            std::thread::sleep(Duration::from_millis(20));
            continue;
        };
        if s.write_all(&hello).is_err() {
            continue;
        }
        let mut h = [0u8; 1];
        if s.read_exact(&mut h).is_ok() && h[0] == 0x81 {
            held.fetch_add(1, Ordering::Relaxed);
        }
        while !stop.set() && !closed_within(&mut s, Duration::from_millis(200)) {}
    }
}

#[test]
fn ten_hosts_holding_every_test_and_session_slot_cannot_keep_an_eleventh_from_starting() {
    // Every iperf3 test slot (8) and routerbench session slot (8) held by handshakes that
    // never run, from 10 hosts, each renewed the moment it is cut.
    let (srv, port) = server_any(&[], "fair-slots");
    let stop = Stop::new();
    let tests_held = AtomicUsize::new(0);
    let sessions_held = AtomicUsize::new(0);
    let (runs, pings) = std::thread::scope(|sc| {
        for i in 0..10 {
            for j in 0..4 {
                let (stop, held) = (&stop, &tests_held);
                let id = (i * 4 + j + 1) as u64;
                sc.spawn(move || hold_create_streams(port, &attacker(i), id, stop, held));
                let held = &sessions_held;
                sc.spawn(move || hold_session(port, &attacker(i), stop, held));
            }
        }
        std::thread::sleep(Duration::from_secs(3));
        let mut runs = Vec::new();
        let mut clients = vec![iperf3(), iperf3()];
        if let Some(new) = iperf3_321() {
            clients.push(new);
        }
        for (i, c) in clients.iter().enumerate() {
            runs.push(client_from(
                c,
                HONEST,
                port,
                &["-t", "1"],
                Duration::from_secs(25),
                &format!("fair-slots-{i}"),
            ));
        }
        let p = port.to_string();
        let mut pings = Vec::new();
        for i in 0..2 {
            pings.push(routerbench(
                &["ping", "127.0.0.1", "-p", &p, "--length", "1", "-q"],
                Duration::from_secs(25),
                &format!("fair-ping-{i}"),
            ));
        }
        stop.raise();
        (runs, pings)
    });
    for (ok, text, _) in runs.iter().chain(pings.iter()) {
        let log = srv.stderr_text();
        let mine: Vec<&str> = log
            .lines()
            .filter(|l| l.contains(HONEST) || l.contains("127.0.0.1:"))
            .collect();
        assert!(
            ok,
            "the eleventh host's test must start and complete:\n{text}\nits log lines:\n{}",
            mine.join("\n")
        );
    }
    let waits: Vec<f64> = runs.iter().map(|r| r.2 - 1.0).collect();
    let ping_waits: Vec<f64> = pings.iter().map(|r| r.2).collect();
    eprintln!(
        "test and session slots from 10 hosts: {} set-ups and {} sessions held; iperf3 clients \
         waited {waits:.2?} s beyond their 1 s test, pings (1 s) took {ping_waits:.2?} s",
        tests_held.load(Ordering::Relaxed),
        sessions_held.load(Ordering::Relaxed)
    );
    assert!(tests_held.load(Ordering::Relaxed) >= 8);
    assert!(sessions_held.load(Ordering::Relaxed) >= 8);
    let log = srv.stderr_text();
    assert!(log.contains("test slots full: took the slot"), "{log}");
    assert!(log.contains("session slots full: took the slot"), "{log}");
}

#[test]
fn trickled_parameters_from_two_hosts_do_not_take_the_test_slots() {
    // The issue's attack: 8 connections from 2 hosts, each dribbling its parameters, against
    // 8 test slots. The whole message must arrive within the control timeout (3 s here).
    let (srv, port) = server_any(&["--control-timeout", "3"], "fair-params");
    let stop = Stop::new();
    let lifetimes = std::sync::Mutex::new(Vec::new());
    let outputs = std::thread::scope(|sc| {
        for i in 0..8 {
            let (stop, lifetimes) = (&stop, &lifetimes);
            sc.spawn(move || {
                let params = br#"{"tcp":true,"omit":0,"time":10,"num":0,"blockcount":0,"parallel":1,"len":131072,"pacing_timer":1000,"client_version":"3.12"}"#;
                let mut n = 1000 * i as u64;
                while !stop.set() {
                    n += 1;
                    let Ok(mut s) = connect_from(&attacker(i % 2), port) else {
                        continue;
                    };
                    let t = Instant::now();
                    if s.write_all(&cookie(n)).is_err() || read_state(&mut s) != Some(9) {
                        continue;
                    }
                    let mut framed = (params.len() as u32).to_be_bytes().to_vec();
                    framed.extend_from_slice(params);
                    // One byte every 300 ms: 144 bytes would take 43 s.
                    for b in framed {
                        if stop.set() || s.write_all(&[b]).is_err() || gone(&mut s) {
                            break;
                        }
                        std::thread::sleep(Duration::from_millis(300));
                    }
                    lifetimes.lock().unwrap().push(t.elapsed().as_secs_f64());
                }
            });
        }
        std::thread::sleep(Duration::from_secs(2));
        let mut outputs = Vec::new();
        for i in 0..2 {
            outputs.push(client_from(
                &iperf3(),
                HONEST,
                port,
                &["-t", "1"],
                Duration::from_secs(20),
                &format!("fair-params-{i}"),
            ));
        }
        // Let at least one trickle run into its deadline.
        std::thread::sleep(Duration::from_secs(3));
        stop.raise();
        outputs
    });
    for (ok, text, _) in &outputs {
        assert!(
            ok,
            "a real test runs beside the trickled parameters:\n{text}"
        );
    }
    let lifetimes = lifetimes.into_inner().unwrap();
    let cut: Vec<&f64> = lifetimes.iter().filter(|&&l| l < 40.0).collect();
    assert!(!cut.is_empty(), "no trickle ended: {lifetimes:?}");
    // Cut at the whole-message deadline (3 s after PARAM_EXCHANGE), not kept by its bytes.
    let longest = lifetimes.iter().copied().fold(0.0, f64::max);
    assert!(
        longest < 8.0,
        "a trickle lived {longest:.1} s against a 3 s deadline: {lifetimes:?}"
    );
    let log = srv.stderr_text();
    assert!(log.contains("not complete within 3s"), "{log}");
}
