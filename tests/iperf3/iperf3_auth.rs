//! iperf3's RSA authentication, interop with Debian's iperf3 3.12 both ways: right password,
//! wrong password, unknown user, no credentials, and a token whose timestamp is a minute old.
//! Keys are made at test time with the `openssl` CLI. Also the routerbench protocol's token.

use crate::support::server::*;
use routerbench::iperf3::auth::{Credentials, Padding, client_token, password_hash};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

const PORT_OURS: u16 = 27130;
const PORT_THEIRS: u16 = 27131;
const PORT_TOKEN: u16 = 27132;
const PORT_MANY: u16 = 27133;
const PORT_NEW: u16 = 27134;

struct Keys {
    dir: PathBuf,
}

impl Keys {
    /// A 2048-bit key pair (PKCS#8 private, SPKI public) and a users file with mario/rossi.
    fn make(tag: &str) -> Keys {
        let dir = std::env::temp_dir().join(format!("rb-auth-{}-{tag}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let run = |args: &[&str]| {
            let st = Command::new("openssl")
                .args(args)
                .current_dir(&dir)
                .output()
                .expect("openssl CLI (apt-get install openssl)");
            assert!(
                st.status.success(),
                "openssl {args:?}: {}",
                String::from_utf8_lossy(&st.stderr)
            );
        };
        run(&["genrsa", "-out", "private.pem", "2048"]);
        run(&["rsa", "-in", "private.pem", "-pubout", "-out", "public.pem"]);
        let users = format!(
            "# user,sha256(\"{{user}}password\")\nmario,{}\n",
            password_hash("mario", "rossi")
        );
        std::fs::write(dir.join("users.csv"), users).expect("users file");
        Keys { dir }
    }
    fn path(&self, f: &str) -> String {
        self.dir.join(f).display().to_string()
    }
}

impl Drop for Keys {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Runs `program args` with IPERF3_PASSWORD=`password`, killed after `limit`: (exit ok, output).
fn run_bounded(program: &Path, args: &[&str], password: &str, limit: Duration) -> (bool, String) {
    let mut child = Command::new(program)
        .args(args)
        .env("IPERF3_PASSWORD", password)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start client");
    let start = std::time::Instant::now();
    let ok = loop {
        match child.try_wait().expect("wait client") {
            Some(st) => break st.success(),
            None if start.elapsed() > limit => {
                let _ = child.kill();
                let _ = child.wait();
                break false;
            }
            None => std::thread::sleep(Duration::from_millis(5)),
        }
    };
    let out = child.wait_with_output().expect("client output");
    (
        ok,
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

/// iperf3's server closes its listening socket after each test and opens a new one; a client
/// that connects in between lands in the old socket's backlog and is dropped ("the peer closed
/// the connection", seen once in CI against 3.12). That is the peer's gap, not the client's, so
/// a run that ends that way is tried again, three times at most.
fn run_with_password(program: &Path, args: &[&str], password: Option<&str>) -> (bool, String) {
    let mut last = (false, String::new());
    for _ in 0..3 {
        last = run_once_with_password(program, args, password);
        if !last.1.contains("the peer closed the connection") {
            break;
        }
        std::thread::sleep(Duration::from_millis(300));
    }
    last
}

fn run_once_with_password(program: &Path, args: &[&str], password: Option<&str>) -> (bool, String) {
    let mut c = Command::new(program);
    c.args(args).env_remove("IPERF3_PASSWORD");
    if let Some(p) = password {
        c.env("IPERF3_PASSWORD", p);
    }
    let out = c.output().expect("start client");
    (
        out.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

/// Sends parameters carrying `token` (made by the library, a minute old) and returns the
/// server's answer bytes after PARAM_EXCHANGE.
fn stale_token_answer(port: u16, keys: &Keys) -> Vec<u8> {
    let pem = std::fs::read_to_string(keys.path("public.pem")).expect("public key");
    let creds = Credentials {
        user: "mario".into(),
        password: "rossi".into(),
        ts: routerbench::iperf3::auth::now_secs() - 60,
    };
    let token = client_token(&pem, &creds, Padding::Pkcs1).expect("token");
    let params = format!(
        r#"{{"tcp":true,"omit":0,"time":1,"num":0,"blockcount":0,"parallel":1,"len":131072,"pacing_timer":1000,"authtoken":"{token}","client_version":"3.12"}}"#
    );
    let mut s = control_with_params("127.0.0.4", port, 42, &params).expect("control");
    let mut answer = Vec::new();
    let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
    let _ = s.read_to_end(&mut answer);
    answer
}

#[test]
fn iperf3_client_against_our_server() {
    let keys = Keys::make("ours");
    let srv = server(
        PORT_OURS,
        &[
            "--rsa-private-key-path",
            &keys.path("private.pem"),
            "--authorized-users-path",
            &keys.path("users.csv"),
        ],
        "auth-ours",
    );
    let p = PORT_OURS.to_string();
    let pubkey = keys.path("public.pem");
    // Each failing case from an address of its own: a failed login makes its address wait
    // (1 s, 2 s, …) before the next is looked at.
    let client = |user: &str, pw: Option<&str>, from: &str| {
        run_with_password(
            &iperf3(),
            &[
                "-c",
                "127.0.0.1",
                "-B",
                from,
                "-p",
                &p,
                "-t",
                "1",
                "--username",
                user,
                "--rsa-public-key-path",
                &pubkey,
            ],
            pw,
        )
    };
    let (ok, text) = client("mario", Some("rossi"), "127.0.0.1");
    assert!(ok, "right password: {text}");
    for (user, pw, why, from) in [
        ("mario", "verdi", "wrong password", "127.0.0.2"),
        ("luigi", "rossi", "unknown user", "127.0.0.3"),
    ] {
        let (ok, text) = client(user, Some(pw), from);
        assert!(
            !ok && text.contains("test authorization failed"),
            "{why}: {text}"
        );
    }
    let (ok, text) = iperf3_client(
        PORT_OURS,
        &["-t", "1"],
        Duration::from_secs(10),
        "auth-none",
    );
    assert!(
        !ok && text.contains("test authorization failed"),
        "no credentials: {text}"
    );
    // A minute-old token: SERVER_ERROR with IEAUTHTEST (142).
    let answer = stale_token_answer(PORT_OURS, &keys);
    assert_eq!(
        answer.get(..5),
        Some(&[0xfe, 0, 0, 0, 142][..]),
        "{answer:02x?}"
    );
    // OAEP (iperf3 3.17+) is accepted too.
    let (ok, text) = run_with_password(
        Path::new(ROUTERBENCH),
        &[
            "client",
            "127.0.0.1",
            "-p",
            &p,
            "-t",
            "1",
            "--username",
            "mario",
            "--rsa-public-key-path",
            &pubkey,
            "--rsa-oaep",
        ],
        Some("rossi"),
    );
    assert!(ok, "OAEP token: {text}");
    let log = srv.stderr_text();
    assert!(
        log.contains("wrong password")
            && log.contains("unknown user")
            && log.contains("away from the server's clock"),
        "{log}"
    );
}

#[test]
fn our_client_against_iperf3_server() {
    let keys = Keys::make("theirs");
    let p = PORT_THEIRS.to_string();
    let (priv_key, users, pubkey) = (
        keys.path("private.pem"),
        keys.path("users.csv"),
        keys.path("public.pem"),
    );
    let start = || {
        let s = Proc::start(
            &iperf3(),
            &[
                "-s",
                "-p",
                &p,
                "--rsa-private-key-path",
                &priv_key,
                "--authorized-users-path",
                &users,
            ],
            "auth-theirs",
        );
        wait_listening(PORT_THEIRS);
        s
    };
    let _srv = start();
    let client = |pw: Option<&str>| {
        run_with_password(
            Path::new(ROUTERBENCH),
            &[
                "client",
                "127.0.0.1",
                "-p",
                &p,
                "-t",
                "1",
                "--username",
                "mario",
                "--rsa-public-key-path",
                &pubkey,
            ],
            pw,
        )
    };
    let (ok, text) = client(Some("rossi"));
    assert!(ok, "right password against iperf3 3.12: {text}");
    // 3.12 knows only PKCS#1 v1.5: the default (auto) tries OAEP first, then v1.5, and says so.
    assert!(text.contains("trying PKCS#1 v1.5"), "{text}");
    let (ok, text) = client(Some("verdi"));
    assert!(
        !ok && text.contains("test authorization failed"),
        "wrong password: {text}"
    );
    let (ok, text) = run_with_password(
        Path::new(ROUTERBENCH),
        &[
            "client",
            "127.0.0.1",
            "-p",
            &p,
            "-t",
            "1",
            "--username",
            "luigi",
            "--rsa-public-key-path",
            &pubkey,
        ],
        Some("rossi"),
    );
    assert!(
        !ok && text.contains("test authorization failed"),
        "unknown user: {text}"
    );
    let (ok, text) = client(None);
    assert!(
        !ok && text.contains("IPERF3_PASSWORD"),
        "no password: {text}"
    );
    // iperf3 3.12 checks our token's time: a minute-old one gets fe 0000008e.
    let answer = stale_token_answer(PORT_THEIRS, &keys);
    assert_eq!(
        answer.get(..5),
        Some(&[0xfe, 0, 0, 0, 142][..]),
        "{answer:02x?}"
    );
}

#[test]
fn routerbench_sessions_need_the_token() {
    let _srv = server(PORT_TOKEN, &["--token", "s3cret"], "token");
    let p = PORT_TOKEN.to_string();
    let ping = |token: Option<&str>| {
        let mut args = vec![
            "ping",
            "127.0.0.1",
            "-p",
            &p,
            "-l",
            "1",
            "--delay",
            "0",
            "-q",
        ];
        if let Some(t) = token {
            args.extend(["--token", t]);
        }
        run_with_password(Path::new(ROUTERBENCH), &args, None)
    };
    let (ok, text) = ping(None);
    assert!(!ok && text.contains("token"), "no token: {text}");
    let (ok, text) = ping(Some("guess"));
    assert!(!ok && text.contains("wrong token"), "wrong token: {text}");
    // A wrong token makes this address wait 1 s; a try before that is refused unread.
    let (ok, text) = ping(Some("s3cret"));
    assert!(!ok && text.contains("too many wrong tokens"), "{text}");
    std::thread::sleep(Duration::from_millis(1100));
    let (ok, text) = ping(Some("s3cret"));
    assert!(ok, "right token: {text}");
    // The magic and a Hello dribbled slower than the handshake deadline are also refused.
    let mut s = connect_from("127.0.0.1", PORT_TOKEN).expect("connect");
    let _ = s.write_all(b"\xffRBENCH\x00");
    assert!(
        closed_within(&mut s, Duration::from_secs(15)),
        "a silent session is closed"
    );
}

/// Hundreds of real logins of each padding against our server (auto padding): iperf3 3.12 (PKCS#1
/// v1.5), iperf3 3.21 (OAEP: its client has no other padding) where it is here,
/// and our own client with --rsa-oaep. None may be refused: a v1.5-first decrypt refused about
/// one OAEP login in 500. Bounded by count and by a deadline per client.
#[test]
fn hundreds_of_logins_of_each_padding_are_all_accepted() {
    let keys = Keys::make("many");
    let srv = server(
        PORT_MANY,
        &[
            "--rsa-private-key-path",
            &keys.path("private.pem"),
            "--authorized-users-path",
            &keys.path("users.csv"),
            // 4 clients at a time: a client may exit a moment before the server frees its
            // slot, so leave room above the default 4 tests per host (and the server-wide
            // cap, which a per-host cap may not exceed).
            "--max-concurrent",
            "16",
            "--max-tests-per-host",
            "16",
        ],
        "auth-many",
    );
    let p = PORT_MANY.to_string();
    let pubkey = keys.path("public.pem");
    // Logins per client (RB_AUTH_LOGINS overrides), 4 at a time: iperf3 3.21's client takes a
    // second per test whatever the server, so it gets fewer.
    let n = |default: usize| -> usize {
        std::env::var("RB_AUTH_LOGINS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    let auth = [
        "-c",
        "127.0.0.1",
        "-p",
        &p,
        "-n",
        "8K",
        "--username",
        "mario",
        "--rsa-public-key-path",
        &pubkey,
    ];
    let mut clients: Vec<(&str, std::path::PathBuf, Vec<&str>, usize)> =
        vec![("iperf3 3.12 (PKCS#1 v1.5)", iperf3(), auth.to_vec(), n(300))];
    match iperf3_new() {
        // 3.21's --use-pkcs1-padding is a server option: its client always uses OAEP.
        Some(new) => clients.push(("iperf3 3.21 (OAEP)", new, auth.to_vec(), n(200))),
        None => eprintln!(
            "iperf3 3.21 not found (set IPERF3_NEW or keep ../shared/peers/iperf3-3.21): \
             its OAEP logins are covered by our own client only"
        ),
    }
    let mut ours = vec!["client"];
    ours.extend_from_slice(&auth[1..]);
    ours.push("--rsa-oaep");
    clients.push(("routerbench --rsa-oaep", ROUTERBENCH.into(), ours, n(300)));
    for (name, program, args, n) in &clients {
        let next = std::sync::atomic::AtomicUsize::new(0);
        // Bounded: 1 s a login (4 at a time) plus set-up, far above what a login takes.
        let limit = Duration::from_secs(120 + *n as u64);
        let deadline = std::time::Instant::now() + limit;
        let refused: Vec<String> = std::thread::scope(|s| {
            let workers: Vec<_> = (0..4)
                .map(|_| {
                    s.spawn(|| {
                        let mut refused = Vec::new();
                        loop {
                            let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                            if i >= *n || std::time::Instant::now() > deadline {
                                return refused;
                            }
                            let (ok, text) =
                                run_bounded(program, args, "rossi", Duration::from_secs(20));
                            if !ok {
                                refused.push(format!("login {i}: {text}"));
                            }
                        }
                    })
                })
                .collect();
            workers
                .into_iter()
                .flat_map(|w| w.join().expect("login worker"))
                .collect()
        });
        let tried = next.load(std::sync::atomic::Ordering::Relaxed).min(*n);
        assert_eq!(
            tried, *n,
            "{name}: only {tried} of {n} logins within {limit:?}"
        );
        assert!(
            refused.is_empty(),
            "{name}: {} of {n} logins refused, e.g. {}\nserver log:\n{}",
            refused.len(),
            refused[0],
            srv.stderr_text()
        );
    }
    let log = srv.stderr_text();
    assert!(!log.contains("authentication failed"), "{log}");
}

/// Our client against iperf3 3.21's server, which decrypts with one padding only (OAEP, or v1.5
/// with --use-pkcs1-padding): auto logs in to both, the wrong fixed padding is refused.
#[test]
fn our_client_finds_the_padding_of_an_iperf3_3_21_server() {
    let Some(new) = iperf3_new() else {
        eprintln!("skipped: iperf3 3.21 not found (IPERF3_NEW or ../shared/peers/iperf3-3.21)");
        return;
    };
    let keys = Keys::make("new");
    let p = PORT_NEW.to_string();
    let (priv_key, users, pubkey) = (
        keys.path("private.pem"),
        keys.path("users.csv"),
        keys.path("public.pem"),
    );
    for server_pkcs1 in [false, true] {
        let mut args = vec![
            "-s",
            "-p",
            &p,
            "--rsa-private-key-path",
            &priv_key,
            "--authorized-users-path",
            &users,
        ];
        if server_pkcs1 {
            args.push("--use-pkcs1-padding");
        }
        let _srv = Proc::start(&new, &args, "auth-new");
        wait_listening(PORT_NEW);
        let client = |padding: &str| {
            run_bounded(
                Path::new(ROUTERBENCH),
                &[
                    "client",
                    "127.0.0.1",
                    "-p",
                    &p,
                    "-n",
                    "64K",
                    "--username",
                    "mario",
                    "--rsa-public-key-path",
                    &pubkey,
                    "--rsa-padding",
                    padding,
                ],
                "rossi",
                Duration::from_secs(20),
            )
        };
        let (ok, text) = client("auto");
        assert!(ok, "auto, 3.21 server (pkcs1 {server_pkcs1}): {text}");
        assert_eq!(text.contains("trying PKCS#1 v1.5"), server_pkcs1, "{text}");
        let wrong = if server_pkcs1 { "oaep" } else { "pkcs1" };
        let (ok, text) = client(wrong);
        // 3.21 drops the connection on a token it cannot decrypt (no SERVER_ERROR): the error
        // names that.
        assert!(
            !ok && text.contains("after the credentials"),
            "{wrong} against a 3.21 server (pkcs1 {server_pkcs1}): {text}"
        );
        drop(_srv);
    }
}
