//! iperf3's habits end to end: `server -s -D -I pidfile --logfile` serving a real iperf3
//! client, SIGHUP reopening the log file, `client … | head -1` ending quietly, a server
//! whose stdout reader went away, and our output's *shape* diffed against iperf3 3.12's.

use crate::support::iperf3::{Proc, ROUTERBENCH, iperf3, wait_listening};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn tmp(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("rb-cli-{}-{name}", std::process::id()))
}

fn wait_for(what: &str, limit: Duration, mut ok: impl FnMut() -> bool) {
    let end = Instant::now() + limit;
    while Instant::now() < end {
        if ok() {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("{what}: not within {limit:?}");
}

fn alive(pid: i32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
        && !std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .unwrap_or_default()
            .contains(") Z ")
}

fn iperf3_client(port: u16, extra: &[&str]) -> std::process::Output {
    let p = port.to_string();
    let mut args = vec!["-c", "127.0.0.1", "-p", &p, "-t", "1"];
    args.extend_from_slice(extra);
    Command::new(iperf3())
        .args(&args)
        .stdin(Stdio::null())
        .output()
        .expect("run iperf3")
}

/// Kills our daemon by the PID it wrote (a process we started) and waits for it to go.
struct Daemon(i32);

impl Drop for Daemon {
    fn drop(&mut self) {
        // SAFETY: kill(2) on the PID our own `server -D` wrote to its pid file.
        unsafe { libc::kill(self.0, libc::SIGTERM) };
        let end = Instant::now() + Duration::from_secs(15);
        while alive(self.0) && Instant::now() < end {
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

#[test]
fn daemon_with_pidfile_serves_iperf3_and_reopens_its_log_on_sighup() {
    let port = 27211u16;
    let pidfile = tmp("server.pid");
    let log = tmp("server.log");
    let rotated = tmp("server.log.1");
    for f in [&pidfile, &log, &rotated] {
        let _ = std::fs::remove_file(f);
    }
    let st = Command::new(ROUTERBENCH)
        .args(["server", "-s", "-D", "-p", &port.to_string(), "-I"])
        .arg(&pidfile)
        .arg("--logfile")
        .arg(&log)
        .stdin(Stdio::null())
        .status()
        .expect("start server -D");
    assert!(st.success(), "server -D exits 0 in the foreground: {st}");
    // The server writes the pid file whole (renamed into place); waiting for a number rather
    // than for the file also keeps an orphan daemon from outliving a failed parse.
    wait_for("pid file", Duration::from_secs(10), || {
        std::fs::read_to_string(&pidfile).is_ok_and(|t| t.trim().parse::<i32>().is_ok())
    });
    let pid: i32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .expect("pid file holds a number");
    let daemon = Daemon(pid);
    assert!(alive(pid), "pid file names a live process ({pid})");
    wait_listening(port);

    let out = iperf3_client(port, &[]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "iperf3 -c: {text}");
    assert!(text.contains("receiver"), "{text}");
    wait_for("the test in the log file", Duration::from_secs(10), || {
        std::fs::read_to_string(&log)
            .unwrap_or_default()
            .contains("receiver")
    });
    let first = std::fs::read_to_string(&log).unwrap();
    assert!(
        first.contains("Server listening on 27211 (test #1)"),
        "{first}"
    );
    assert!(first.contains("Accepted connection from"), "{first}");

    // logrotate: move the file away, SIGHUP, and the server writes a new one.
    std::fs::rename(&log, &rotated).unwrap();
    // SAFETY: kill(2) on our daemon's PID.
    unsafe { libc::kill(pid, libc::SIGHUP) };
    wait_for(
        "a new log file after SIGHUP",
        Duration::from_secs(10),
        || log.exists(),
    );
    let reopened = std::fs::read_to_string(&log).unwrap();
    assert!(reopened.contains("SIGHUP: reopened log"), "{reopened}");
    assert!(alive(pid), "SIGHUP must not end the server");
    let out = iperf3_client(port, &["-R"]);
    assert!(
        out.status.success(),
        "server still serves after SIGHUP: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    wait_for(
        "the second test in the new file",
        Duration::from_secs(10),
        || {
            std::fs::read_to_string(&log)
                .unwrap_or_default()
                .contains("sender")
        },
    );
    let old = std::fs::read_to_string(&rotated).unwrap();
    assert!(
        !old.contains("(test #3)"),
        "the old file got no new test: {old}"
    );

    drop(daemon);
    assert!(!alive(pid), "SIGTERM ends the daemon");
    assert!(!pidfile.exists(), "the pid file is removed on exit");
    for f in [&pidfile, &log, &rotated] {
        let _ = std::fs::remove_file(f);
    }
}

#[test]
fn client_into_a_closed_pipe_exits_quietly_and_the_server_survives_its_own() {
    let port = 27212u16;
    // The server's stdout is a pipe whose reader is gone at once.
    let mut server = Command::new(ROUTERBENCH)
        .args(["server", "-p", &port.to_string(), "--max-tests", "2"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start server");
    drop(server.stdout.take());
    wait_listening(port);

    // `routerbench client … | head -1`
    let mut client = Command::new(ROUTERBENCH)
        .args(["client", "127.0.0.1", "-p", &port.to_string(), "-t", "2"])
        .args(["-i", "0.5"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start client");
    let mut first = String::new();
    BufReader::new(client.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    // The reader (head) is gone now.
    assert!(first.starts_with("Connecting to host"), "{first}");
    let end = Instant::now() + Duration::from_secs(30);
    let st = loop {
        if let Some(st) = client.try_wait().unwrap() {
            break st;
        }
        assert!(Instant::now() < end, "client hung after its reader left");
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut err = String::new();
    let _ = std::io::Read::read_to_string(&mut client.stderr.take().unwrap(), &mut err);
    assert_eq!(st.code(), Some(0), "exit 0 like iperf3, stderr: {err}");
    assert!(!err.contains("panicked"), "{err}");

    // The server's first test wrote into the closed pipe; it still serves a second one.
    let out = iperf3_client(port, &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let end = Instant::now() + Duration::from_secs(20);
    let st = loop {
        if let Some(st) = server.try_wait().unwrap() {
            break st;
        }
        if Instant::now() > end {
            let _ = server.kill();
            panic!("server did not stop after --max-tests 2");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut err = String::new();
    let _ = std::io::Read::read_to_string(&mut server.stderr.take().unwrap(), &mut err);
    assert!(st.success(), "server exit {st}: {err}");
    assert!(!err.contains("panicked"), "{err}");
}

/// A line's shape: numbers, units and addresses masked, spaces collapsed.
fn shape(line: &str) -> String {
    let mut out = String::new();
    let mut chars = line.trim_end().chars().peekable();
    while let Some(c) = chars.next() {
        if c.is_ascii_digit() {
            while chars
                .peek()
                .is_some_and(|d| d.is_ascii_digit() || *d == '.' || *d == ':')
            {
                chars.next();
            }
            out.push('#');
        } else if c == ' ' {
            while chars.peek() == Some(&' ') {
                chars.next();
            }
            out.push(' ');
        } else {
            out.push(c);
        }
    }
    for unit in ["KBytes", "MBytes", "GBytes", "Kbits", "Mbits", "Gbits"] {
        out = out.replace(unit, "U");
    }
    out.replace("Bytes", "U")
        .replace("bits", "U")
        .replace("[ #]", "[#]")
        .replace("[ #][", "[#][")
}

/// The shapes of a text's lines, repeated runs of shapes (more or fewer intervals; with
/// `--bidir` an interval is a pair of lines) counted once.
fn shapes(text: &str) -> Vec<String> {
    let mut v: Vec<String> = text
        .lines()
        .map(shape)
        .filter(|s| !s.starts_with("iperf3: interrupt") && !s.is_empty())
        .collect();
    // Drop a run of k data lines that repeats the k lines before it, for k up to 4 (bounded:
    // each pass removes at least one line or ends). Headers and separators never collapse, so
    // a doubled `- - -` line still shows.
    let data = |l: &String| l.starts_with('[') && !l.starts_with("[ ID]");
    loop {
        let before = v.len();
        for k in 1..=4 {
            let mut i = 0;
            while i + 2 * k <= v.len() {
                if v[i..i + k] == v[i + k..i + 2 * k] && v[i..i + k].iter().all(data) {
                    v.drain(i + k..i + 2 * k);
                } else {
                    i += 1;
                }
            }
        }
        if v.len() == before {
            return v;
        }
    }
}

/// Runs the four tests against one server of each kind with each kind's client.
fn transcripts(ours: bool, port: u16) -> (Vec<String>, String) {
    let p = port.to_string();
    let (server, client): (&Path, Vec<&str>) = if ours {
        (Path::new(ROUTERBENCH), vec!["client", "-c"])
    } else {
        (Path::new("/usr/bin/iperf3"), vec!["-c"])
    };
    // iperf3's stdout into a file is block-buffered without --forceflush.
    let server_args: Vec<&str> = if ours {
        vec!["server", "-s", "--forceflush", "-p", &p]
    } else {
        vec!["-s", "--forceflush", "-p", &p]
    };
    let srv = Proc::start(
        server,
        &server_args,
        if ours { "shape-rb" } else { "shape-ip3" },
    );
    wait_listening(port);
    let mut clients = Vec::new();
    for mode in [&[][..], &["-R"], &["--bidir"], &["-u"]] {
        let mut args = client.clone();
        args.extend(["127.0.0.1", "-p", &p, "-t", "2"]);
        args.extend_from_slice(mode);
        let out = Command::new(server)
            .args(&args)
            .stdin(Stdio::null())
            .output()
            .expect("client");
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(out.status.success(), "{args:?}: {text}");
        clients.push(text);
    }
    // The server prints the next banner once a test is done: wait for the fifth.
    wait_for("server output", Duration::from_secs(10), || {
        srv.stdout_text().contains("(test #5)")
    });
    (clients, srv.stdout_text())
}

#[test]
fn output_has_the_shape_of_iperf3s() {
    let _ = iperf3();
    let (ref_clients, ref_server) = transcripts(false, 27213);
    let (our_clients, our_server) = transcripts(true, 27214);
    let modes = ["TCP", "-R", "--bidir", "-u"];
    let mut diffs = Vec::new();
    for (i, mode) in modes.iter().enumerate() {
        let (a, b) = (shapes(&ref_clients[i]), shapes(&our_clients[i]));
        if a != b {
            diffs.push(format!(
                "client {mode}:\n iperf3:\n  {}\n ours:\n  {}",
                a.join("\n  "),
                b.join("\n  ")
            ));
        }
    }
    let (a, b) = (shapes(&ref_server), shapes(&our_server));
    if a != b {
        diffs.push(format!(
            "server:\n iperf3:\n  {}\n ours:\n  {}",
            a.join("\n  "),
            b.join("\n  ")
        ));
    }
    assert!(diffs.is_empty(), "{}", diffs.join("\n\n"));
}

#[test]
fn shape_masks_numbers_and_units() {
    assert_eq!(
        shape("[  5]   0.00-1.00   sec  2.84 GBytes  24.4 Gbits/sec    3    767 KBytes   "),
        "[#] #-# sec # U # U/sec # # U"
    );
    assert_eq!(
        shape("Accepted connection from 127.0.0.1, port 35890"),
        "Accepted connection from #, port #"
    );
    assert_eq!(shapes("[a]\n[a]\nb\n\n[a]\n"), vec!["[a]", "b", "[a]"]);
    let bidir = "h\n[x]\n[y]\n[x]\n[y]\n[x]\n[y]\ns\n";
    assert_eq!(shapes(bidir), vec!["h", "[x]", "[y]", "s"]);
    let doubled = "[x]\n- - -\n- - -\n[ ID] a\n";
    assert_eq!(shapes(doubled), vec!["[x]", "- - -", "- - -", "[ ID] a"]);
}

/// Is some UDP socket bound to `port` (from /proc/net/udp{,6})?
fn udp_bound(port: u16) -> bool {
    let needle = format!(":{port:04X} ");
    ["/proc/net/udp", "/proc/net/udp6"].iter().any(|f| {
        std::fs::read_to_string(f)
            .unwrap_or_default()
            .lines()
            .any(|l| {
                l.split_whitespace()
                    .nth(1)
                    .is_some_and(|a| format!("{a} ").ends_with(&needle))
            })
    })
}

#[test]
fn udp_probe_port_is_the_server_port_and_iperf3_udp_still_works() {
    let port = 27215u16;
    let p = port.to_string();
    let server = Proc::start(
        Path::new(ROUTERBENCH),
        &["server", "-V", "-p", &p],
        "udp-share",
    );
    wait_listening(port);
    assert!(udp_bound(port), "the probe reflector listens on UDP {port}");
    // iperf3's UDP tests on the same port number: several streams, both directions.
    for extra in [&["-u", "-P", "2"][..], &["-u", "-R"]] {
        let out = iperf3_client(port, extra);
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "iperf3 {extra:?}: {text}");
        assert!(text.contains("receiver"), "{text}");
    }
    // And routerbench's UDP probes through the same port.
    let json = tmp("ping.json");
    let out = Command::new(ROUTERBENCH)
        .args([
            "ping",
            "127.0.0.1",
            "-p",
            &p,
            "--length",
            "1",
            "-q",
            "--json",
        ])
        .arg(&json)
        .output()
        .expect("ping");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let udp_answered: u64 = doc["latency"]["probes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["kind"] == "udp")
        .map(|p| p["received"].as_u64().unwrap_or(0))
        .sum();
    assert!(
        udp_answered > 0,
        "UDP probes answered: {}",
        doc["latency"]["probes"]
    );
    assert!(
        server
            .stderr_text()
            .contains(&format!("reflector (routerbench protocol) on port {port}")),
        "{}",
        server.stderr_text()
    );
    let _ = std::fs::remove_file(&json);
}

#[test]
fn client_logfile_timestamps_format_and_cport() {
    let port = 27216u16;
    let p = port.to_string();
    let _server = Proc::start(
        Path::new(ROUTERBENCH),
        &["server", "-1", "-p", &p],
        "client-flags",
    );
    wait_listening(port);
    let log = tmp("client.log");
    let _ = std::fs::remove_file(&log);
    let out = Command::new(ROUTERBENCH)
        .args(["client", "-c", "127.0.0.1", "-p", &p, "-t", "1", "-f", "k"])
        .args(["--cport", "27217", "--timestamps=%Y-%m-%d "])
        .arg("--logfile")
        .arg(&log)
        .output()
        .expect("client");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.stdout.is_empty(), "the output went to the log file");
    let text = std::fs::read_to_string(&log).unwrap();
    let year = format!("{} ", &text[..10]);
    assert!(text.lines().all(|l| l.starts_with(&year)), "{text}");
    assert!(text.contains("port 27217 connected to"), "--cport: {text}");
    let rates: Vec<&str> = text.lines().filter(|l| l.contains("/sec")).collect();
    assert!(!rates.is_empty(), "{text}");
    assert!(
        rates.iter().all(|l| l.contains("Kbits/sec")),
        "-f k fixes the unit: {text}"
    );
    assert!(text.contains("iperf Done."), "{text}");
    let _ = std::fs::remove_file(&log);
}
