//! Bounded sending: the server caps UDP it sends (`--max-udp-rate`), stops sending when the
//! client stops talking (no TEST_END by time + grace), and enforces `--server-bitrate-limit`
//! as iperf3 does (refused up front, or ended with "total required bandwidth is larger than
//! server limit"). Each runs beside a real client whose test completes.

use crate::support::server::*;
use std::io::Write;
use std::net::UdpSocket;
use std::time::{Duration, Instant};

const PORT_UDP_CAP: u16 = 27120;
const PORT_SILENT: u16 = 27121;
const PORT_BITRATE: u16 = 27122;

#[test]
fn udp_reverse_at_unlimited_rate_is_capped() {
    let srv = server(PORT_UDP_CAP, &["--max-udp-rate", "200M"], "udpcap");
    let (blast, real) = std::thread::scope(|sc| {
        let blast = sc.spawn(|| {
            iperf3_client(
                PORT_UDP_CAP,
                &["-u", "-R", "-b", "0", "-t", "3", "-J"],
                Duration::from_secs(20),
                "cap-blast",
            )
        });
        std::thread::sleep(Duration::from_millis(300));
        let real = iperf3_client(
            PORT_UDP_CAP,
            &["-t", "2"],
            Duration::from_secs(20),
            "cap-real",
        );
        (blast.join().expect("blast"), real)
    });
    assert!(real.0, "the real TCP test completes:\n{}", real.1);
    assert!(
        blast.0,
        "the -b 0 test runs (capped, not refused):\n{}",
        blast.1
    );
    let doc: serde_json::Value =
        serde_json::from_str(&blast.1[..blast.1.rfind('}').map_or(0, |i| i + 1)])
            .unwrap_or_else(|e| panic!("{e}: {}", blast.1));
    let sent_bps = doc["end"]["sum"]["bits_per_second"]
        .as_f64()
        .expect("sum bps");
    // The client's view of what the server sent: at most the cap plus 10 % for timing.
    assert!(
        sent_bps <= 220e6,
        "server sent {:.0} Mbit/s, cap 200",
        sent_bps / 1e6
    );
    assert!(
        sent_bps >= 20e6,
        "server sent only {:.1} Mbit/s",
        sent_bps / 1e6
    );
    drop(srv);
}

/// The issue's "receiver goes silent": a scripted UDP -R client that says hello, then never
/// sends TEST_END. The server must stop sending within time + 2 s (+ slack), not the 40 s
/// watchdog; a real client's test beside it completes.
#[test]
fn sending_stops_when_the_client_goes_silent() {
    let srv = server(PORT_SILENT, &[], "silent");
    let params = r#"{"udp":true,"omit":0,"time":1,"num":0,"blockcount":0,"parallel":1,"reverse":true,"len":1400,"bandwidth":20000000,"pacing_timer":1000,"client_version":"3.12"}"#;
    let mut ctl = control_with_params(ATTACKER, PORT_SILENT, 7, params).expect("control");
    assert_eq!(read_state(&mut ctl), Some(CREATE_STREAMS));
    let udp = UdpSocket::bind(format!("{ATTACKER}:0")).expect("udp");
    udp.connect(format!("127.0.0.1:{PORT_SILENT}"))
        .expect("connect");
    udp.send(b"9876").expect("hello"); // iperf3's UDP_CONNECT_MSG as x86 writes it
    udp.set_read_timeout(Some(Duration::from_millis(200)))
        .expect("timeout");
    let mut buf = [0u8; 2048];
    let _ = udp.recv(&mut buf); // the server's "6789" reply
    assert_eq!(read_state(&mut ctl), Some(TEST_START));
    assert_eq!(read_state(&mut ctl), Some(TEST_RUNNING));
    let t0 = Instant::now();
    let real = std::thread::scope(|sc| {
        let real = sc.spawn(|| {
            iperf3_client(
                PORT_SILENT,
                &["-t", "2"],
                Duration::from_secs(20),
                "silent-real",
            )
        });
        // Count what arrives per 500 ms; the client never says TEST_END.
        let mut last_data = t0;
        while t0.elapsed() < Duration::from_secs(8) {
            if let Ok(n) = udp.recv(&mut buf) {
                if n > 4 {
                    last_data = Instant::now();
                }
            }
        }
        (real.join().expect("real"), last_data - t0)
    });
    let (real, last) = real;
    assert!(real.0, "the real test completes:\n{}", real.1);
    assert!(
        last < Duration::from_millis(4500),
        "the server kept sending {last:?} into a 1 s test (limit time + 2 s grace)"
    );
    assert!(
        last > Duration::from_millis(700),
        "it did send during the test ({last:?})"
    );
    let _ = ctl.write_all(&[4]); // TEST_END, late: the server may still answer or have closed
    drop(srv);
}

#[test]
fn server_bitrate_limit_refuses_and_ends_tests_like_iperf3() {
    let srv = server(PORT_BITRATE, &["--server-bitrate-limit", "50M"], "bitrate");
    // Asking more than the limit up front: refused with iperf3's message.
    let (ok, text) = iperf3_client(
        PORT_BITRATE,
        &["-t", "2", "-b", "100M"],
        Duration::from_secs(15),
        "rate-ask",
    );
    assert!(
        !ok && text.contains("total required bandwidth is larger than server limit"),
        "{text}"
    );
    // An unlimited TCP test goes over it: ended within a few seconds with the same message,
    // while a test at 10 Mbit/s beside it completes.
    let (over, under) = std::thread::scope(|sc| {
        let over = sc.spawn(|| {
            iperf3_client(
                PORT_BITRATE,
                &["-t", "10"],
                Duration::from_secs(20),
                "rate-over",
            )
        });
        let under = iperf3_client(
            PORT_BITRATE,
            &["-t", "3", "-b", "10M"],
            Duration::from_secs(20),
            "rate-under",
        );
        (over.join().expect("over"), under)
    });
    assert!(under.0, "a test under the limit completes:\n{}", under.1);
    assert!(!over.0, "an unlimited test must be ended:\n{}", over.1);
    assert!(
        over.1
            .contains("total required bandwidth is larger than server limit"),
        "{}",
        over.1
    );
    assert!(srv.stderr_text().contains("--server-bitrate-limit"));
}
