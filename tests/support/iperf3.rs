//! Helpers for the iperf3 integration tests: find Debian's iperf3, start processes whose PIDs
//! we own (killed on drop), wait for a listening port via /proc, bounded waits, JSON outputs.

use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

pub use super::ROUTERBENCH;

/// iperf3 3.21, the newest release (OAEP by default, one thread per stream), if it is here:
/// $IPERF3_NEW, else the peer next to the repository (`../shared/peers/iperf3-3.21`, which this
/// project's CI machines have). None when neither exists: callers say they skip.
pub fn iperf3_new() -> Option<PathBuf> {
    let from_env = std::env::var_os("IPERF3_NEW").map(PathBuf::from);
    let sibling = PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../shared/peers/iperf3-3.21"
    ));
    from_env.into_iter().chain([sibling]).find(|p| p.is_file())
}

/// The iperf3 binary, or a failure that says how to install it.
pub fn iperf3() -> PathBuf {
    for p in ["/usr/bin/iperf3", "/usr/local/bin/iperf3"] {
        if std::path::Path::new(p).exists() {
            return p.into();
        }
    }
    panic!("iperf3 is not installed: run `apt-get install iperf3` (CI installs it)");
}

/// A child process we started; killed (by its PID) and reaped on drop.
pub struct Proc {
    pub child: Child,
    pub stdout: PathBuf,
    pub stderr: PathBuf,
}

impl Proc {
    pub fn start(program: &std::path::Path, args: &[&str], tag: &str) -> Proc {
        // Unique per process and call: tests of several files share a binary, and two of them
        // may use the same tag at once.
        static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = std::env::temp_dir();
        let stdout = dir.join(format!("rb-{}-{n}-{tag}.out", std::process::id()));
        let stderr = dir.join(format!("rb-{}-{n}-{tag}.err", std::process::id()));
        let child = Command::new(program)
            .args(args)
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&stdout).expect("temp file"))
            .stderr(std::fs::File::create(&stderr).expect("temp file"))
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", program.display()));
        Proc {
            child,
            stdout,
            stderr,
        }
    }

    /// Waits at most `limit` for the process to exit.
    pub fn wait(&mut self, limit: Duration) -> Option<ExitStatus> {
        let end = Instant::now() + limit;
        while Instant::now() < end {
            if let Ok(Some(st)) = self.child.try_wait() {
                return Some(st);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        None
    }

    pub fn stdout_text(&self) -> String {
        std::fs::read_to_string(&self.stdout).unwrap_or_default()
    }

    pub fn stderr_text(&self) -> String {
        std::fs::read_to_string(&self.stderr).unwrap_or_default()
    }

    pub fn json(&self) -> serde_json::Value {
        let text = self.stdout_text();
        serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("not JSON ({e}):\n{text}\nstderr:\n{}", self.stderr_text()))
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
        let _ = std::fs::remove_file(&self.stdout);
        let _ = std::fs::remove_file(&self.stderr);
    }
}

/// Is some socket listening on TCP `port` (from /proc/net/tcp{,6}, no connection made)?
pub fn listening(port: u16) -> bool {
    let needle = format!(":{port:04X} ");
    ["/proc/net/tcp", "/proc/net/tcp6"].iter().any(|f| {
        std::fs::read_to_string(f)
            .unwrap_or_default()
            .lines()
            .any(|l| {
                let cols: Vec<&str> = l.split_whitespace().collect();
                cols.len() > 3 && format!("{} ", cols[1]).ends_with(&needle) && cols[3] == "0A"
            })
    })
}

/// Waits (at most 10 s) until `port` is listening.
pub fn wait_listening(port: u16) {
    let end = Instant::now() + Duration::from_secs(10);
    while Instant::now() < end {
        if listening(port) {
            return;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    panic!("nothing listens on port {port} after 10 s");
}

/// `end.<key>.bytes` of an iperf3 -J document.
pub fn end_bytes(doc: &serde_json::Value, key: &str) -> u64 {
    doc["end"][key]["bytes"]
        .as_u64()
        .unwrap_or_else(|| panic!("no end.{key}.bytes in {doc}"))
}
