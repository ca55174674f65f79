//! Shared helpers of the lab integration tests: root/tool checks that print why a test skips,
//! and unique lab names so parallel tests never collide.

use std::sync::atomic::{AtomicU32, Ordering};

/// True if the lab can run here; otherwise prints why the test skips.
pub fn can_run(test: &str, tools: &[&str]) -> bool {
    if !routerbench::lab::sys::is_root() {
        eprintln!("skip {test}: not root (the lab needs CAP_NET_ADMIN; CI runs as root)");
        return false;
    }
    for t in tools {
        if let Err(e) = routerbench::lab::sys::tool_path(t) {
            eprintln!("skip {test}: {e}");
            return false;
        }
    }
    true
}

/// A lab name unique to this process and call, e.g. `rbt4711a3`.
pub fn unique_name(tag: &str) -> String {
    static N: AtomicU32 = AtomicU32::new(0);
    format!(
        "rbt{}{}{}",
        std::process::id(),
        tag,
        N.fetch_add(1, Ordering::Relaxed)
    )
}

/// Interfaces of the root namespace, to prove the lab never adds any there.
pub fn root_links() -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir("/sys/class/net")
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// Deletes lab `name` when dropped, saying on stderr if that fails (the lab itself never prints).
pub fn guard(name: &str) -> routerbench::lab::LabGuard {
    routerbench::lab::LabGuard::with_events(
        name,
        std::sync::Arc::new(|e: &routerbench::lab::LabEvent| eprintln!("lab cleanup: {e:?}")),
    )
}

/// A routerbench process in a lab namespace, killed by PID when dropped.
pub struct NsProc(pub std::process::Child);

impl Drop for NsProc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `routerbench ARGS` inside namespace `ns`, output discarded.
pub fn spawn_in(ns: &str, args: &[&str]) -> NsProc {
    NsProc(
        std::process::Command::new("ip")
            .args(["netns", "exec", ns, env!("CARGO_BIN_EXE_routerbench")])
            .args(args)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    )
}

/// Waits (10 s at most) until `addr` accepts a TCP connection from inside `ns_lan`.
pub fn wait_reachable(ns_lan: &str, addr: std::net::SocketAddr) {
    use std::time::{Duration, Instant};
    let ok = routerbench::lab::netns::run_in(ns_lan, move || {
        let until = Instant::now() + Duration::from_secs(10);
        while Instant::now() < until {
            if std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
                return Ok(true);
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        Ok(false)
    })
    .unwrap();
    assert!(ok, "{addr} not reachable from the LAN host");
}
