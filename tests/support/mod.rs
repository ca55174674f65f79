//! What the integration-test binaries share (each binary's main.rs includes this tree with
//! `#[path = "../support/mod.rs"]`): running the routerbench binary, and the helpers of the
//! iperf3, server, lab, network-namespace, nginx and RPM tests.
//!
//! Tests of several areas now share one binary and run in its threads at once, so a helper
//! never uses a fixed temporary path, port or namespace name of its own (each is made unique
//! per process and call), and the tests that must not overlap one another take [`alone`].
#![allow(dead_code)]

#[cfg(feature = "lab")]
pub mod cdp;
pub mod iperf3;
#[cfg(feature = "lab")]
pub mod lab;
pub mod netns;
pub mod nginx;
pub mod rpm;
pub mod server;

use std::process::{Command, Output, Stdio};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// The routerbench binary cargo built for these tests.
pub const ROUTERBENCH: &str = env!("CARGO_BIN_EXE_routerbench");

/// A routerbench command with `args` and stdin from /dev/null, for the callers that add to it
/// (a working directory, an environment variable) before they run it.
pub fn rb_command(args: &[&str]) -> Command {
    let mut c = Command::new(ROUTERBENCH);
    c.args(args).stdin(Stdio::null());
    c
}

/// Headless Chromium as every test runs it (the report's page, the browser test): no sandbox
/// (root), no GPU, no QUIC, and none of its own traffic (sync, updates, background fetches).
pub const CHROMIUM_FLAGS: &[&str] = &[
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
];

/// Runs routerbench with `args` (stdin from /dev/null) to completion: its exit status, stdout
/// and stderr, which each caller reads as it needs ([`text`], [`streams`]).
pub fn rb(args: &[&str]) -> Output {
    rb_command(args).output().expect("run routerbench")
}

/// stdout then stderr of `o`, as text.
pub fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// (stdout, stderr) of `o`, as text.
pub fn streams(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// Held by the tests that must run alone among those that take it: the VM routers (each wants
/// both cores) and the lab and latency tests whose bounds assume an otherwise quiet machine.
/// When each was a binary of its own, cargo ran it after the others; in a shared binary they
/// would overlap. A test that fails while holding it does not stop the others (the poison is
/// ignored).
pub fn alone() -> MutexGuard<'static, ()> {
    static ALONE: Mutex<()> = Mutex::new(());
    ALONE.lock().unwrap_or_else(|e| e.into_inner())
}

/// `Command::output` with a time limit: a command that hangs is killed (its PID) and the test
/// fails (the VM tests' lab guard then removes the lab: qemu, wireguard-go and the namespaces'
/// other processes by PID, the taps with qemu, the namespaces by name).
pub trait Bounded {
    fn bounded(&mut self, limit: Duration) -> Output;
}

impl Bounded for Command {
    fn bounded(&mut self, limit: Duration) -> Output {
        let mut child = self
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let (mut out, mut err) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
        let o = std::thread::spawn(move || {
            let mut v = Vec::new();
            let _ = std::io::Read::read_to_end(&mut out, &mut v);
            v
        });
        let e = std::thread::spawn(move || {
            let mut v = Vec::new();
            let _ = std::io::Read::read_to_end(&mut err, &mut v);
            v
        });
        let t0 = Instant::now();
        let status = loop {
            if let Some(st) = child.try_wait().unwrap() {
                break st;
            }
            if t0.elapsed() > limit {
                let _ = child.kill();
                let _ = child.wait();
                panic!(
                    "{self:?} did not finish within {} s: killed",
                    limit.as_secs()
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        Output {
            status,
            stdout: o.join().unwrap(),
            stderr: e.join().unwrap(),
        }
    }
}
