//! Whole-message deadlines of the routerbench protocol (docs/latency.md): the magic and the
//! Hello share one deadline from the accept; a later message, once begun, must be whole within
//! the handshake timeout; refusals at the connection limit say "busy" to both protocols.

use crate::support::server::*;
use routerbench::wire::ROUTERBENCH_MAGIC;
use routerbench::wire::rb::{self, Message};
use std::io::{Read, Write};
use std::time::{Duration, Instant};

/// Seconds until the server closes `s` (at most `limit`).
fn closed_after(s: &mut std::net::TcpStream, since: Instant, limit: Duration) -> Option<f64> {
    closed_within(s, limit.saturating_sub(since.elapsed())).then(|| since.elapsed().as_secs_f64())
}

#[test]
fn magic_and_hello_share_one_deadline_and_a_begun_message_has_its_own() {
    let (srv, port) = server_any(&["--handshake-timeout", "2"], "deadline");
    let p = port.to_string();
    // The magic dribbled over 1.5 s, then silence: cut at 2 s from the connect, not 2 s after
    // the magic (the issue saw 19 s against a 10 s deadline).
    let t = Instant::now();
    let mut s = connect_from(&attacker(0), port).expect("connect");
    for b in ROUTERBENCH_MAGIC {
        s.write_all(&[b]).expect("magic byte");
        std::thread::sleep(Duration::from_millis(190));
    }
    let cut = closed_after(&mut s, t, Duration::from_secs(6)).expect("closed by the deadline");
    assert!(
        cut < 3.5,
        "magic + silence lived {cut:.1} s against a 2 s deadline"
    );
    // A session whose Start is dribbled one byte every 400 ms: cut 2 s after its first byte,
    // although the idle timeout (90 s) is far away.
    let mut s = connect_from(&attacker(1), port).expect("connect");
    let mut hello = ROUTERBENCH_MAGIC.to_vec();
    hello.extend_from_slice(
        &Message::Hello {
            version: rb::VERSION,
            token: String::new(),
        }
        .emit(),
    );
    s.write_all(&hello).expect("hello");
    let mut first = [0u8; 1];
    s.read_exact(&mut first).expect("Welcome");
    assert_eq!(first[0], 0x81, "Welcome");
    let start = Message::Start {
        start_in_us: 0,
        duration_ms: 1000,
        step_ms: 100,
    }
    .emit();
    let t = Instant::now();
    let mut cut_at = None;
    for b in start {
        if s.write_all(&[b]).is_err() || closed_within(&mut s, Duration::from_millis(400)) {
            cut_at = Some(t.elapsed().as_secs_f64());
            break;
        }
    }
    let cut = cut_at
        .or_else(|| closed_after(&mut s, t, Duration::from_secs(8)))
        .expect("the dribbled Start is cut");
    assert!(cut < 4.0, "a dribbled Start lived {cut:.1} s against 2 s");
    // A real test runs after both.
    let (ok, text, _) = routerbench(
        &["ping", "127.0.0.1", "-p", &p, "--length", "1", "-q"],
        Duration::from_secs(20),
        "deadline-ping",
    );
    assert!(ok, "{text}");
    let log = srv.stderr_text();
    assert!(log.contains("handshake"), "{log}");
}

#[test]
fn clients_refused_at_the_connection_limit_are_told_busy() {
    // Four connections of this host itself hold its whole share: the next one, of either
    // protocol, is refused at the accept with the busy byte, and the client says so.
    let (_srv, port) = server_any(
        &["--max-connections", "8", "--max-conns-per-host", "4"],
        "busy",
    );
    let p = port.to_string();
    let held: Vec<_> = (0..4)
        .map(|_| connect_from("127.0.0.1", port).expect("connect"))
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    let (ok, text) = iperf3_client(port, &["-t", "1"], Duration::from_secs(15), "busy-iperf3");
    assert!(!ok, "{text}");
    assert!(
        text.contains("the server is busy"),
        "iperf3 is told busy:\n{text}"
    );
    let (ok, text, _) = routerbench(
        &["ping", "127.0.0.1", "-p", &p, "--length", "1", "-q"],
        Duration::from_secs(15),
        "busy-ping",
    );
    assert!(!ok, "{text}");
    assert!(
        text.contains("server busy") && !text.contains("iperf3-only"),
        "routerbench is told busy, not 'an iperf3-only server':\n{text}"
    );
    drop(held);
    // Once they go, a test runs.
    std::thread::sleep(Duration::from_millis(300));
    let (ok, text) = iperf3_client(port, &["-t", "1"], Duration::from_secs(15), "busy-after");
    assert!(ok, "{text}");
}
