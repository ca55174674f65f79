//! Runs one `openssl speed` command with a deadline, in its own process group (so `-multi`'s
//! children die with it), stdin closed, stdout kept up to a cap, and stderr scanned for the
//! `Doing …` / `+DT:` lines that start each test (progress). Nothing waits unboundedly: the
//! readers are plain threads whose results arrive over a channel, so a descendant that keeps a
//! pipe open cannot hold the caller up.

use std::io::Read;
use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// More than this on stdout is not `openssl speed` (a few KiB): the command is killed.
pub const MAX_STDOUT: usize = 4 * 1024 * 1024;
/// stderr lines kept for error messages (the last ones).
const TAIL_LINES: usize = 8;
/// After the process ends, how long the pipes may take to report end-of-file.
const DRAIN: Duration = Duration::from_secs(2);

/// What a finished command left.
#[derive(Debug)]
pub struct Finished {
    pub status: ExitStatus,
    pub stdout: Vec<u8>,
    /// The last stderr lines that were not progress lines.
    pub stderr_tail: Vec<String>,
}

/// Why a command gave no output to read.
#[derive(Debug, thiserror::Error)]
pub enum ChildError {
    #[error("cannot start {program}: {cause}")]
    Start {
        program: String,
        cause: std::io::Error,
    },
    #[error("did not finish within {0:.0} s (killed)")]
    TimedOut(f64),
    #[error("printed more than {} MiB on stdout, which is not openssl speed output (killed)", MAX_STDOUT >> 20)]
    TooMuchOutput,
    #[error("interrupted (killed)")]
    Interrupted,
    #[error("waiting for it failed: {0}")]
    Wait(std::io::Error),
}

enum Event {
    /// A test started: the text after `Doing ` / `+DT:` (shortened).
    Test(String),
    Stdout(Vec<u8>, bool),
    Stderr(Vec<String>),
}

/// Runs `program args` for at most `limit`; `on_test` is called on this thread for every test
/// openssl starts; `interrupt` (Ctrl-C) kills it.
pub fn run(
    program: &Path,
    args: &[String],
    limit: Duration,
    on_test: &mut dyn FnMut(&str),
    interrupt: Option<&AtomicBool>,
) -> Result<Finished, ChildError> {
    use std::os::unix::process::CommandExt;
    let mut child = Command::new(program)
        .args(args)
        .env("LC_ALL", "C")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .map_err(|cause| ChildError::Start {
            program: program.display().to_string(),
            cause,
        })?;
    let (tx, rx) = mpsc::channel::<Event>();
    let overflow = std::sync::Arc::new(AtomicBool::new(false));
    if let Some(out) = child.stdout.take() {
        let tx = tx.clone();
        let overflow = overflow.clone();
        std::thread::spawn(move || read_stdout(out, &tx, &overflow));
    }
    if let Some(err) = child.stderr.take() {
        let tx = tx.clone();
        std::thread::spawn(move || read_stderr(err, &tx));
    }
    drop(tx);
    let start = Instant::now();
    let mut stdout = None;
    let mut stderr = None;
    let status = loop {
        match rx.recv_timeout(Duration::from_millis(50)) {
            Ok(Event::Test(t)) => on_test(&t),
            Ok(Event::Stdout(b, over)) => stdout = Some((b, over)),
            Ok(Event::Stderr(t)) => stderr = Some(t),
            Err(_) => {}
        }
        let failure = if overflow.load(Ordering::Relaxed) {
            Some(ChildError::TooMuchOutput)
        } else if interrupt.is_some_and(|f| f.load(Ordering::Relaxed)) {
            Some(ChildError::Interrupted)
        } else if start.elapsed() >= limit {
            Some(ChildError::TimedOut(limit.as_secs_f64()))
        } else {
            None
        };
        if let Some(e) = failure {
            kill_group(&mut child);
            return Err(e);
        }
        match child.try_wait() {
            Ok(Some(st)) => break st,
            Ok(None) => {}
            Err(e) => {
                kill_group(&mut child);
                return Err(ChildError::Wait(e));
            }
        }
    };
    // `-multi` children share the pipes; they are done when the parent is. Anything still
    // holding a pipe after the drain time is killed with the group.
    let drain_until = Instant::now() + DRAIN;
    while (stdout.is_none() || stderr.is_none()) && Instant::now() < drain_until {
        match rx.recv_timeout(Duration::from_millis(20)) {
            Ok(Event::Test(t)) => on_test(&t),
            Ok(Event::Stdout(b, over)) => stdout = Some((b, over)),
            Ok(Event::Stderr(t)) => stderr = Some(t),
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
    }
    kill_group(&mut child);
    let (stdout, over) = stdout.unwrap_or_default();
    if over {
        return Err(ChildError::TooMuchOutput);
    }
    Ok(Finished {
        status,
        stdout,
        stderr_tail: stderr.unwrap_or_default(),
    })
}

/// Kills the command's process group (its own `-multi` children included) and reaps it.
fn kill_group(child: &mut std::process::Child) {
    if let Ok(pid) = i32::try_from(child.id()) {
        // The group id is the child's pid (process_group(0)); only our own command is in it.
        let _ = nix::sys::signal::killpg(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
    let _ = child.kill();
    let _ = child.wait();
}

fn read_stdout(mut out: impl Read, tx: &mpsc::Sender<Event>, overflow: &AtomicBool) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    let mut over = false;
    loop {
        match out.read(&mut chunk) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                if buf.len() + n > MAX_STDOUT {
                    over = true;
                    overflow.store(true, Ordering::Relaxed);
                    break;
                }
                buf.extend_from_slice(&chunk[..n]);
            }
        }
    }
    let _ = tx.send(Event::Stdout(buf, over));
}

/// Splits stderr into lines; a line (or the unfinished `Doing … blocks: ` that openssl flushes
/// before the test runs) that starts a test is an event, the rest is kept for messages.
fn read_stderr(mut err: impl Read, tx: &mpsc::Sender<Event>) {
    let mut scan = StderrScan::default();
    let mut chunk = [0u8; 4096];
    loop {
        match err.read(&mut chunk) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                for t in scan.push(&chunk[..n]) {
                    let _ = tx.send(Event::Test(t));
                }
            }
        }
    }
    let _ = tx.send(Event::Stderr(scan.finish()));
}

/// The incremental scanner behind [`read_stderr`].
#[derive(Debug, Default)]
pub struct StderrScan {
    line: Vec<u8>,
    reported: bool,
    tail: std::collections::VecDeque<String>,
}

/// A line longer than this is cut (stderr of a hostile program stays bounded in memory).
const MAX_LINE: usize = 4096;

impl StderrScan {
    /// Feeds bytes; returns the tests that started.
    pub fn push(&mut self, bytes: &[u8]) -> Vec<String> {
        let mut started = Vec::new();
        for &b in bytes {
            if b == b'\n' {
                let line = String::from_utf8_lossy(&self.line).trim().to_string();
                match test_of(&line) {
                    Some(t) if !self.reported => started.push(t),
                    Some(_) => {}
                    None if !line.is_empty() && !is_progress(&line) => {
                        if self.tail.len() == TAIL_LINES {
                            self.tail.pop_front();
                        }
                        self.tail.push_back(line.chars().take(300).collect());
                    }
                    None => {}
                }
                self.line.clear();
                self.reported = false;
            } else if self.line.len() < MAX_LINE {
                self.line.push(b);
            }
        }
        // openssl prints `Doing md5 for 3s on 16 size blocks: ` and flushes before timing.
        if !self.reported && self.line.ends_with(b": ") {
            if let Some(t) = test_of(String::from_utf8_lossy(&self.line).trim()) {
                started.push(t);
                self.reported = true;
            }
        }
        started
    }

    /// The last non-progress lines.
    pub fn finish(self) -> Vec<String> {
        self.tail.into_iter().collect()
    }
}

/// `Doing md5 for 3s on 16 size blocks: …` → `md5 16 B`; `+DT:md5:3:16` → `md5 16 B`;
/// `+DTP:2048:private:rsa:10` → `rsa 2048 private`; `Doing 2048 bits private rsa's …` likewise.
fn test_of(line: &str) -> Option<String> {
    if let Some(rest) = line.strip_prefix("+DT:") {
        let f: Vec<&str> = rest.split(':').collect();
        return Some(format!("{} {} B", f.first()?, f.get(2)?));
    }
    if let Some(rest) = line.strip_prefix("+DTP:") {
        let f: Vec<&str> = rest.split(':').collect();
        return Some(format!("{} {} {}", f.get(2)?, f.first()?, f.get(1)?));
    }
    let rest = line.strip_prefix("Doing ")?;
    let words: Vec<&str> = rest.split_whitespace().collect();
    if words.get(1) == Some(&"bits") {
        // `Doing 2048 bits private rsa's for 10s: …`
        let alg = words.get(3)?.trim_end_matches("'s");
        return Some(format!("{alg} {} {}", words[0], words.get(2)?));
    }
    let size = words
        .iter()
        .position(|w| *w == "on")
        .and_then(|i| words.get(i + 1))?;
    Some(format!("{} {size} B", words.first()?))
}

/// `1234 md5's in 3.00s` (the second half of a `Doing` line on its own) and `+R…` lines.
fn is_progress(line: &str) -> bool {
    line.starts_with("+R")
        || line.starts_with("+DT")
        || line.ends_with('s') && line.contains(" in ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scans_tests_of_every_format() {
        let mut s = StderrScan::default();
        let mut got = s.push(b"Doing md5 for 1s on 16 size blocks: ");
        assert_eq!(got, vec!["md5 16 B"]);
        got = s.push(b"123 md5's in 1.00s\nDoing md5 for 1s on 64 size blocks: 4 md5's in 1s\n");
        assert_eq!(got, vec!["md5 64 B"]);
        got = s.push(b"+DT:sha1:1:1024\n+DTP:2048:private:rsa:1\n+R:1:sha1:1.0\n");
        assert_eq!(got, vec!["sha1 1024 B", "rsa 2048 private"]);
        got = s.push(b"Doing 2048 bits public rsa's for 10s: 5 2048 bits public RSA's in 9.9s\n");
        assert_eq!(got, vec!["rsa 2048 public"]);
        s.push(b"4007:error:12800067:DSO support routines:could not load\nspeed: bad\n");
        let tail = s.finish();
        assert_eq!(tail.len(), 2, "{tail:?}");
        assert!(tail[0].contains(":error:"));
    }

    #[test]
    fn long_and_binary_stderr_stays_bounded() {
        let mut s = StderrScan::default();
        for _ in 0..100 {
            s.push(&[0xffu8; 10_000]);
            s.push(b"\n");
        }
        let tail = s.finish();
        assert_eq!(tail.len(), TAIL_LINES);
        assert!(tail.iter().all(|l| l.chars().count() <= 300));
    }

    fn sh(script: &str, limit: f64) -> Result<Finished, ChildError> {
        let args = vec!["-c".to_string(), script.to_string()];
        run(
            Path::new("/bin/sh"),
            &args,
            Duration::from_secs_f64(limit),
            &mut |_| {},
            None,
        )
    }

    #[test]
    fn a_hung_command_is_killed_at_the_deadline_with_its_children() {
        let t0 = Instant::now();
        let e = sh("sleep 30 & sleep 30; wait", 0.5).unwrap_err();
        assert!(matches!(e, ChildError::TimedOut(_)), "{e}");
        assert!(t0.elapsed() < Duration::from_secs(10));
    }

    #[test]
    fn endless_output_is_cut() {
        let e = sh("yes garbage", 30.0).unwrap_err();
        assert!(matches!(e, ChildError::TooMuchOutput), "{e}");
    }

    #[test]
    fn output_and_status_come_back() {
        let f = sh("echo out; echo 'speed: oops' >&2; exit 3", 10.0).unwrap();
        assert_eq!(f.status.code(), Some(3));
        assert_eq!(f.stdout, b"out\n");
        assert_eq!(f.stderr_tail, vec!["speed: oops"]);
        let e = run(
            Path::new("/nonexistent/openssl"),
            &[],
            Duration::from_secs(1),
            &mut |_| {},
            None,
        )
        .unwrap_err();
        assert!(e.to_string().contains("/nonexistent/openssl"), "{e}");
    }

    #[test]
    fn interrupt_kills() {
        let flag = AtomicBool::new(true);
        let e = run(
            Path::new("/bin/sh"),
            &["-c".into(), "sleep 30".into()],
            Duration::from_secs(20),
            &mut |_| {},
            Some(&flag),
        )
        .unwrap_err();
        assert!(matches!(e, ChildError::Interrupted));
    }
}
