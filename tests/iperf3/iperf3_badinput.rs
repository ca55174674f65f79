//! Hostile and broken peers against `routerbench server`: garbage, a 4 GiB JSON length,
//! invalid JSON, half-finished handshakes, silence, a late connection with a running test's
//! cookie, a busy server. Each is refused or timed out with a log line on stderr, while a real
//! iperf3 test on the same server at the same time still passes.

use crate::support::iperf3::*;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

fn connect(port: u16) -> TcpStream {
    let s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    s
}

/// Reads until EOF (bounded by the socket's read timeout); returns what came and how long.
fn read_to_close(mut s: TcpStream) -> (Vec<u8>, Duration) {
    let t = Instant::now();
    let mut out = Vec::new();
    let mut buf = [0u8; 256];
    loop {
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => break,
            Err(e) => panic!(
                "server never closed the connection: {e} after {:?}",
                t.elapsed()
            ),
        }
    }
    (out, t.elapsed())
}

const COOKIE: &[u8; 37] = b"badinputbadinputbadinputbadinput2345\0";

fn server_error(i_errno: u32) -> Vec<u8> {
    let mut v = vec![0x09, 0xfe];
    v.extend_from_slice(&i_errno.to_be_bytes());
    v.extend_from_slice(&0u32.to_be_bytes());
    v
}

#[test]
fn hostile_peers_are_refused_while_a_real_test_passes() {
    let ip3 = iperf3();
    let port = 25331u16;
    let p = port.to_string();
    let mut server = Proc::start(
        std::path::Path::new(ROUTERBENCH),
        &[
            "server",
            "-V",
            "-p",
            &p,
            "--handshake-timeout",
            "2",
            "--control-timeout",
            "2",
        ],
        "bad-srv",
    );
    wait_listening(port);
    let mut real = Proc::start(
        &ip3,
        &["-c", "127.0.0.1", "-p", &p, "-t", "4", "-J"],
        "bad-real",
    );

    let attacks = std::thread::spawn(move || {
        // No bytes at all: dropped after the 2 s handshake timeout.
        let silent = connect(port);
        // Half a cookie, then silence.
        let mut half = connect(port);
        half.write_all(&COOKIE[..20]).unwrap();
        // Garbage that is long enough to be a cookie: not the alphabet, closed at once. (An HTTP
        // request is no longer garbage here: the port serves the browser test and /metrics, so
        // this is the start of a TLS ClientHello, which no protocol of the port begins with.)
        let mut garbage = connect(port);
        let mut hello = vec![
            0x16, 0x03, 0x01, 0x00, 0xc8, 0x01, 0x00, 0x00, 0xc4, 0x03, 0x03,
        ];
        hello.extend([0x5a; 40]);
        garbage.write_all(&hello).unwrap();
        // A 4 GiB JSON length.
        let mut huge = connect(port);
        huge.write_all(COOKIE).unwrap();
        huge.write_all(&[0xff, 0xff, 0xff, 0xff]).unwrap();
        // Invalid JSON.
        let mut invalid = connect(port);
        let mut c2 = *COOKIE;
        c2[0] = b'z';
        invalid.write_all(&c2).unwrap();
        invalid.write_all(&[0, 0, 0, 5]).unwrap();
        invalid.write_all(b"{nope").unwrap();
        // Parameters announced but only partly sent.
        let mut partial = connect(port);
        let mut c3 = *COOKIE;
        c3[0] = b'y';
        partial.write_all(&c3).unwrap();
        partial.write_all(&[0, 0, 0, 100, b'{']).unwrap();

        let (b, t) = read_to_close(silent);
        assert!(
            b.is_empty() && t < Duration::from_secs(10),
            "silent: {b:?} after {t:?}"
        );
        let (b, t) = read_to_close(half);
        assert!(
            b.is_empty() && t < Duration::from_secs(10),
            "half cookie: {b:?} after {t:?}"
        );
        let (b, t) = read_to_close(garbage);
        assert!(
            b.is_empty() && t < Duration::from_secs(1),
            "garbage instead of a cookie is closed at once, no slot taken: {b:?} after {t:?}"
        );
        let (b, _) = read_to_close(huge);
        assert_eq!(b, server_error(114), "4 GiB length gets IERECVPARAMS");
        let (b, _) = read_to_close(invalid);
        assert_eq!(b, server_error(114), "invalid JSON gets IERECVPARAMS");
        let (b, t) = read_to_close(partial);
        assert_eq!(
            b,
            server_error(112),
            "half-sent parameters time out (IERECVMESSAGE)"
        );
        assert!(t < Duration::from_secs(10));
    });
    let st = real
        .wait(Duration::from_secs(30))
        .expect("real iperf3 test did not finish");
    assert!(
        st.success(),
        "real test failed: {}\n{}",
        real.stdout_text(),
        real.stderr_text()
    );
    let doc = real.json();
    assert!(end_bytes(&doc, "sum_received") > 0);
    attacks.join().expect("attack checks");
    // SIGTERM stops the server cleanly.
    // SAFETY: kill(2) on the PID of the child we started.
    unsafe { libc::kill(server.child.id() as i32, libc::SIGTERM) };
    let st = server
        .wait(Duration::from_secs(15))
        .expect("server did not stop on SIGTERM");
    assert!(st.success(), "server exit {st}");
    let log = server.stderr_text();
    for needle in [
        "no cookie",
        "incomplete cookie",
        "parameters",
        "server stopping",
    ] {
        assert!(
            log.contains(needle),
            "no log line with {needle:?} in:\n{log}"
        );
    }
}

#[test]
fn busy_server_answers_access_denied() {
    let ip3 = iperf3();
    let port = 25332u16;
    let p = port.to_string();
    let mut server = Proc::start(
        std::path::Path::new(ROUTERBENCH),
        &[
            "server",
            "-p",
            &p,
            "--max-concurrent",
            "1",
            "--max-tests",
            "2",
            "--max-streams",
            "2",
        ],
        "busy-srv",
    );
    wait_listening(port);
    let mut first = Proc::start(&ip3, &["-c", "127.0.0.1", "-p", &p, "-t", "3"], "busy-1");
    // Wait until the server has accepted the first test (bounded), then try a second one.
    let until = Instant::now() + Duration::from_secs(10);
    while !server.stdout_text().contains("Accepted connection") && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(300));
    let mut second = Proc::start(&ip3, &["-c", "127.0.0.1", "-p", &p, "-t", "1"], "busy-2");
    let st2 = second
        .wait(Duration::from_secs(20))
        .expect("second client hung");
    assert_eq!(st2.code(), Some(1));
    let text = second.stdout_text() + &second.stderr_text();
    assert!(
        text.contains("busy"),
        "iperf3 should print the busy message: {text}"
    );
    let st1 = first
        .wait(Duration::from_secs(20))
        .expect("first client hung");
    assert!(st1.success(), "{}", first.stderr_text());
    // The server frees the first test's slot just after it prints the test's summary and the
    // next banner: wait for that line (bounded), so the third client is not told "busy".
    let until = Instant::now() + Duration::from_secs(10);
    while !server.stdout_text().contains("(test #2)") && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(200));
    // A stream limit is refused with SERVER_ERROR and iperf3's code, which 3.12 prints.
    let mut third = Proc::start(
        &ip3,
        &["-c", "127.0.0.1", "-p", &p, "-P", "4", "-t", "1"],
        "busy-3",
    );
    let st3 = third
        .wait(Duration::from_secs(20))
        .expect("third client hung");
    assert_eq!(st3.code(), Some(1));
    let text = third.stdout_text() + &third.stderr_text();
    assert!(text.contains("parallel streams"), "{text}");
    let st = server
        .wait(Duration::from_secs(10))
        .expect("server ignores --max-tests");
    assert!(st.success());
}

#[test]
fn duplicate_cookie_of_a_running_test_is_denied() {
    // A raw client: handshake, one data stream, then a late connection with the same cookie.
    let port = 25333u16;
    let p = port.to_string();
    let mut server = Proc::start(
        std::path::Path::new(ROUTERBENCH),
        &["server", "-p", &p, "--max-tests", "1"],
        "dup-srv",
    );
    wait_listening(port);
    let cookie = b"duplicatecookieduplicatecookie234567\0";
    let mut ctl = connect(port);
    ctl.write_all(cookie).unwrap();
    let mut b = [0u8; 1];
    ctl.read_exact(&mut b).unwrap();
    assert_eq!(b[0], 9, "PARAM_EXCHANGE");
    let params = br#"{"tcp":true,"omit":0,"time":1,"num":0,"blockcount":0,"parallel":1,"len":131072,"pacing_timer":1000,"client_version":"3.12"}"#;
    ctl.write_all(&(params.len() as u32).to_be_bytes()).unwrap();
    ctl.write_all(params).unwrap();
    ctl.read_exact(&mut b).unwrap();
    assert_eq!(b[0], 10, "CREATE_STREAMS");
    let mut data = connect(port);
    data.write_all(cookie).unwrap();
    let mut two = [0u8; 2];
    ctl.read_exact(&mut two).unwrap();
    assert_eq!(two, [1, 2], "TEST_START, TEST_RUNNING");
    let mut late = connect(port);
    late.write_all(cookie).unwrap();
    let (got, _) = read_to_close(late);
    assert_eq!(got, [0xff], "late data connection gets ACCESS_DENIED");
    // Client vanishes: the server notices the closed control connection and exits (max-tests 1).
    drop(data);
    drop(ctl);
    let st = server
        .wait(Duration::from_secs(15))
        .expect("server stuck after the client vanished");
    assert!(st.success());
    assert!(
        server.stderr_text().contains("failed"),
        "{}",
        server.stderr_text()
    );
}

#[test]
fn silent_client_mid_test_is_ended_by_rcv_timeout() {
    // Handshake done, one data stream open, then nothing: no FIN ever comes (a pulled cable).
    let port = 25334u16;
    let p = port.to_string();
    let mut server = Proc::start(
        std::path::Path::new(ROUTERBENCH),
        &["server", "-p", &p, "--max-tests", "1", "--rcv-timeout", "2"],
        "idle-srv",
    );
    wait_listening(port);
    let cookie = b"silentclientsilentclientsilentclient\0";
    let mut ctl = connect(port);
    ctl.write_all(cookie).unwrap();
    let params = br#"{"tcp":true,"omit":0,"time":30,"num":0,"blockcount":0,"parallel":1,"len":131072,"pacing_timer":1000,"client_version":"3.12"}"#;
    let mut b = [0u8; 1];
    ctl.read_exact(&mut b).unwrap();
    ctl.write_all(&(params.len() as u32).to_be_bytes()).unwrap();
    ctl.write_all(params).unwrap();
    ctl.read_exact(&mut b).unwrap();
    assert_eq!(b[0], 10, "CREATE_STREAMS");
    let mut data = connect(port);
    data.write_all(cookie).unwrap();
    let t = Instant::now();
    let (got, _) = read_to_close(ctl);
    assert_eq!(got[..2], [1, 2], "TEST_START, TEST_RUNNING");
    assert_eq!(
        got[2..],
        [0xfe, 0, 0, 0, 144, 0, 0, 0, 0],
        "SERVER_ERROR IENOMSG"
    );
    assert!(
        t.elapsed() < Duration::from_secs(10),
        "ended after {:?}",
        t.elapsed()
    );
    let st = server.wait(Duration::from_secs(10)).expect("server stuck");
    assert!(st.success());
    assert!(
        server.stderr_text().contains("no data moved"),
        "{}",
        server.stderr_text()
    );
    drop(data);
}
