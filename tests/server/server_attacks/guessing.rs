//! Guessing is slow: wrong routerbench `--token`s and agent tokens make their address wait
//! (1 s, then 2 s, 4 s …) and tries during the wait are refused unread; a captured iperf3
//! authtoken is accepted once only. A real client with the right secret passes beside each.

use crate::support::server::*;
use routerbench::wire::ROUTERBENCH_MAGIC;
use routerbench::wire::rb::{self, Message};
use routerbench::wire::rb_agent::{self, AgentMessage};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// Reads one frame (type, payload) within 3 s.
fn frame(s: &mut TcpStream) -> Option<(u8, Vec<u8>)> {
    s.set_read_timeout(Some(Duration::from_secs(3))).ok()?;
    let mut h = [0u8; 3];
    s.read_exact(&mut h).ok()?;
    let len = rb::frame_payload_len(&h).ok()?;
    let mut p = vec![0u8; len];
    s.read_exact(&mut p).ok()?;
    Some((h[0], p))
}

/// Guesses with `first_frame(guess)` from 127.0.0.2 for `secs`, as fast as answers come:
/// (answers that compared the token, answers refused during the wait, total tries).
fn guess(port: u16, secs: f64, first_frame: impl Fn(&str) -> Vec<u8>) -> (usize, usize, usize) {
    let (mut compared, mut waited, mut tries) = (0, 0, 0);
    let end = Instant::now() + Duration::from_secs_f64(secs);
    while Instant::now() < end && tries < 100_000 {
        let Ok(mut s) = connect_from(&attacker(0), port) else {
            continue;
        };
        let mut bytes = ROUTERBENCH_MAGIC.to_vec();
        bytes.extend_from_slice(&first_frame(&format!("guess{tries}")));
        tries += 1;
        if s.write_all(&bytes).is_err() {
            continue;
        }
        let text = frame(&mut s)
            .map(|(_, p)| String::from_utf8_lossy(&p).into_owned())
            .unwrap_or_default();
        if text.contains("too many wrong") {
            waited += 1;
        } else if text.contains("wrong") {
            compared += 1;
        }
    }
    (compared, waited, tries)
}

#[test]
fn a_token_guesser_gets_one_try_per_wait_while_the_right_token_works() {
    let (srv, port) = server_any(&["--token", "s3cret", "--monitor"], "guess-token");
    let p = port.to_string();
    let ((compared, waited, tries), ping) = std::thread::scope(|sc| {
        let g = sc.spawn(|| {
            guess(port, 3.5, |t| {
                Message::Hello {
                    version: rb::VERSION,
                    token: t.into(),
                }
                .emit()
            })
        });
        std::thread::sleep(Duration::from_millis(500));
        let ping = routerbench(
            &[
                "ping",
                "127.0.0.1",
                "-p",
                &p,
                "--length",
                "1",
                "-q",
                "--token",
                "s3cret",
            ],
            Duration::from_secs(20),
            "guess-ping",
        );
        (g.join().expect("guesser"), ping)
    });
    eprintln!(
        "token guessing: {tries} tries in 3.5 s, {compared} compared, {waited} refused unread"
    );
    // Waits of 1 s and 2 s after the first two failures: at most 3 guesses in 3.5 s.
    assert!((1..=3).contains(&compared), "{compared} tokens compared");
    assert!(waited >= 1, "tries during the wait are refused ({waited})");
    assert!(
        ping.0,
        "the right token from another host works:\n{}",
        ping.1
    );
    let log = srv.stderr_text();
    assert!(
        log.contains("127.0.0.2") && log.contains("wrong token"),
        "failures are logged with the source:\n{log}"
    );
}

#[test]
fn an_agent_token_guesser_gets_one_try_per_wait_while_the_right_token_works() {
    let (srv, port) = server_any(&["--monitor", "--monitor-token", "m0nitor"], "guess-agent");
    let addr = format!("127.0.0.1:{port}");
    let ((compared, waited, tries), remote) = std::thread::scope(|sc| {
        let g = sc.spawn(|| {
            guess(port, 3.5, |t| {
                AgentMessage::Hello {
                    version: rb_agent::AGENT_VERSION,
                    interval_ms: 100,
                    duration_ms: 1000,
                    token: t.into(),
                }
                .emit()
            })
        });
        std::thread::sleep(Duration::from_millis(500));
        let remote = routerbench(
            &[
                "monitor",
                "--remote",
                &addr,
                "-t",
                "1",
                "--monitor-token",
                "m0nitor",
                "-q",
            ],
            Duration::from_secs(20),
            "guess-remote",
        );
        (g.join().expect("guesser"), remote)
    });
    eprintln!(
        "agent token guessing: {tries} tries in 3.5 s, {compared} compared, {waited} refused \
         unread"
    );
    assert!((1..=3).contains(&compared), "{compared} tokens compared");
    assert!(waited >= 1, "tries during the wait are refused ({waited})");
    assert!(remote.0, "the right token works:\n{}", remote.1);
    let log = srv.stderr_text();
    assert!(
        log.contains("127.0.0.2") && log.contains("wrong monitor token"),
        "failures are logged with the source:\n{log}"
    );
}

/// A key pair and users file (mario/rossi), made with the openssl CLI.
struct Keys(PathBuf);

impl Keys {
    fn make() -> Keys {
        let dir = std::env::temp_dir().join(format!("rb-replay-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        for args in [
            &["genrsa", "-out", "private.pem", "2048"][..],
            &["rsa", "-in", "private.pem", "-pubout", "-out", "public.pem"],
        ] {
            let o = Command::new("openssl")
                .args(args)
                .current_dir(&dir)
                .output()
                .expect("openssl CLI (apt-get install openssl)");
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        }
        let hash = routerbench::iperf3::auth::password_hash("mario", "rossi");
        std::fs::write(dir.join("users.csv"), format!("mario,{hash}\n")).expect("users");
        Keys(dir)
    }
    fn path(&self, f: &str) -> String {
        self.0.join(f).display().to_string()
    }
}

impl Drop for Keys {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A TCP relay from `l` to `port` that records what the first connection's client sent (the
/// control connection: cookie, length, parameters). Relays until `stop`.
fn relay(l: TcpListener, port: u16, stop: &Stop, first: &std::sync::Mutex<Vec<u8>>) {
    l.set_nonblocking(true).expect("nonblocking");
    std::thread::scope(|sc| {
        let mut n = 0;
        while !stop.set() {
            let Ok((c, _)) = l.accept() else {
                std::thread::sleep(Duration::from_millis(5));
                continue;
            };
            let _ = c.set_nonblocking(false);
            let Ok(s) = TcpStream::connect(("127.0.0.1", port)) else {
                continue;
            };
            n += 1;
            let record = n == 1;
            let pipe = |mut from: TcpStream, mut to: TcpStream, keep: bool| {
                let _ = from.set_read_timeout(Some(Duration::from_millis(200)));
                let mut buf = [0u8; 65536];
                while !stop.set() {
                    match from.read(&mut buf) {
                        Ok(0) => break,
                        Ok(k) => {
                            if keep {
                                first.lock().unwrap().extend_from_slice(&buf[..k]);
                            }
                            if to.write_all(&buf[..k]).is_err() {
                                break;
                            }
                        }
                        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                        Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {}
                        Err(_) => break,
                    }
                }
                let _ = to.shutdown(std::net::Shutdown::Write);
            };
            let (c2, s2) = (c.try_clone().expect("clone"), s.try_clone().expect("clone"));
            sc.spawn(move || pipe(c, s, record));
            sc.spawn(move || pipe(s2, c2, false));
        }
    });
}

#[test]
fn a_captured_authtoken_is_accepted_once_only() {
    let keys = Keys::make();
    let (srv, port) = server_any(
        &[
            "--rsa-private-key-path",
            &keys.path("private.pem"),
            "--authorized-users-path",
            &keys.path("users.csv"),
        ],
        "replay",
    );
    let stop = Stop::new();
    let captured = std::sync::Mutex::new(Vec::new());
    let l = TcpListener::bind("127.0.0.1:0").expect("relay");
    let relay_port = l.local_addr().expect("relay address").port();
    std::thread::scope(|sc| {
        sc.spawn(|| relay(l, port, &stop, &captured));
        // The real client logs in through the relay, which captures its parameters.
        let (ok, text) = run_with_password(
            &iperf3(),
            &[
                "-c",
                "127.0.0.1",
                "-p",
                &relay_port.to_string(),
                "-t",
                "1",
                "--username",
                "mario",
                "--rsa-public-key-path",
                &keys.path("public.pem"),
            ],
        );
        stop.raise();
        assert!(ok, "the real authenticated test passes:\n{text}");
    });
    let bytes = captured.into_inner().unwrap();
    assert!(bytes.len() > 41, "captured {} bytes", bytes.len());
    let len = u32::from_be_bytes([bytes[37], bytes[38], bytes[39], bytes[40]]) as usize;
    let params = String::from_utf8_lossy(&bytes[41..41 + len]).into_owned();
    assert!(params.contains("authtoken"), "{params}");
    // Replayed from another host at once, twice, within the token's 10 s window.
    for n in 0..2 {
        let mut s = control_with_params(&attacker(3), port, 90 + n, &params)
            .expect("the server answers PARAM_EXCHANGE");
        let mut answer = Vec::new();
        let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
        let _ = s.read_to_end(&mut answer);
        assert_eq!(
            answer.get(..5),
            Some(&[SERVER_ERROR, 0, 0, 0, 142][..]),
            "replay {n}: {answer:02x?}"
        );
    }
    let log = srv.stderr_text();
    assert!(log.contains("a replay"), "{log}");
    drop(keys);
}

/// `program args` with IPERF3_PASSWORD=rossi, bounded at 20 s: (exit ok, output).
fn run_with_password(program: &Path, args: &[&str]) -> (bool, String) {
    let mut child = Command::new(program)
        .args(args)
        .env("IPERF3_PASSWORD", "rossi")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start client");
    let end = Instant::now() + Duration::from_secs(20);
    let ok = loop {
        match child.try_wait().expect("wait") {
            Some(st) => break st.success(),
            None if Instant::now() > end => {
                let _ = child.kill();
                let _ = child.wait();
                break false;
            }
            None => std::thread::sleep(Duration::from_millis(20)),
        }
    };
    let mut text = String::new();
    if let Some(mut o) = child.stdout.take() {
        let _ = o.read_to_string(&mut text);
    }
    if let Some(mut e) = child.stderr.take() {
        let _ = e.read_to_string(&mut text);
    }
    (ok, text)
}
