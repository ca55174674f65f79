//! The OpenWrt package (openwrt/routerbench/), as far as it can be checked off the SDK: the
//! procd init script is valid sh, and the shipped /etc/config/routerbench starts the real server
//! (`routerbench server --config FILE`, the command the init script runs), which then serves a
//! Debian iperf3 client. A broken config is refused with the file and line named.

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const PKG: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/openwrt/routerbench");
/// This helper's port range (27000-27099).
const PORT: u16 = 27021;

#[test]
fn init_script_is_valid_sh() {
    let init = format!("{PKG}/files/routerbench.init");
    let out = Command::new("sh")
        .args(["-n", &init])
        .output()
        .expect("run sh");
    assert!(
        out.status.success(),
        "sh -n {init}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&init).unwrap();
    assert!(
        text.contains("server --config \"$CONF\""),
        "the init script runs the file"
    );
    assert!(text.contains("USE_PROCD=1"));
    let makefile = std::fs::read_to_string(format!("{PKG}/Makefile")).unwrap();
    for needle in [
        "rust-package.mk",
        "PKG_NAME:=routerbench",
        "DEPENDS:=",
        "/etc/config/routerbench",
    ] {
        assert!(makefile.contains(needle), "Makefile lacks {needle}");
    }
}

#[test]
fn shipped_config_starts_a_server_that_serves_iperf3() {
    if Command::new("iperf3").arg("--version").output().is_err() {
        eprintln!("skipped: iperf3 not installed (apt-get install iperf3)");
        return;
    }
    let config = format!("{PKG}/files/routerbench.config");
    let port = PORT.to_string();
    let mut server = Command::new(env!("CARGO_BIN_EXE_routerbench"))
        .args([
            "server",
            "--config",
            &config,
            "-p",
            &port,
            "--bind",
            "127.0.0.1",
            "-1",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start routerbench server");
    // Bounded: the server binds within a few seconds even on a loaded machine.
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut client = None;
    while Instant::now() < deadline {
        let out = Command::new("iperf3")
            .args(["-c", "127.0.0.1", "-p", &port, "-t", "1"])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        if out.status.success() || !text.contains("Connection refused") {
            client = Some((out.status.success(), text));
            break;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    // -1: the server exits after its one test; kill it if it did not.
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(s) = server.try_wait().unwrap() {
            break Some(s);
        }
        if Instant::now() > deadline {
            let _ = server.kill();
            let _ = server.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let mut log = String::new();
    let _ = server.stderr.take().unwrap().read_to_string(&mut log);
    let (ok, text) = client.expect("iperf3 never reached the server");
    assert!(
        ok,
        "iperf3 against the configured server failed: {text}\nserver: {log}"
    );
    assert!(status.is_some_and(|s| s.success()), "server: {log}");
}

#[test]
fn broken_config_is_refused_with_file_and_line() {
    let dir = std::env::temp_dir().join(format!("rb-openwrt-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("routerbench");
    std::fs::write(&path, "config routerbench 'server'\n\toption port 'http'\n").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_routerbench"))
        .args(["server", "--config"])
        .arg(&path)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "a bad value is a usage error");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("'http'") && err.contains("--port"), "{err}");
    std::fs::write(&path, "config routerbench 'server'\n\toption porrt '1'\n").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_routerbench"))
        .args(["server", "--config"])
        .arg(&path)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("line 2") && err.contains("`porrt`"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}
