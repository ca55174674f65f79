//! The output and log sink of the server, client and loopback commands: iperf3-style test
//! output on stdout, log lines on stderr, or both into one `--logfile` (reopened on SIGHUP,
//! logrotate's habit), with iperf3's `--timestamps` prefix and `--forceflush`.
//!
//! Writes never fail the server: a closed stdout pipe or a full disk drops the text, never a
//! test (iperf3 behaves the same).

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// iperf3's default `--timestamps` format (`strftime`'s `%c` and a space).
pub const DEFAULT_TIMESTAMP_FORMAT: &str = "%c ";

/// Where the server's text goes.
pub struct LogSink {
    file: Option<(PathBuf, Mutex<BufWriter<File>>)>,
    timestamps: Option<String>,
    forceflush: bool,
    verbose: bool,
    /// A client's output: a closed stdout ends the process quietly (there is no one left to
    /// tell); a server's output is dropped instead and the server keeps serving.
    exit_on_closed_stdout: bool,
}

impl LogSink {
    /// Stdout for output, stderr for logs; or `logfile` (appended) for both.
    pub fn open(
        logfile: Option<&Path>,
        timestamps: Option<String>,
        forceflush: bool,
        verbose: bool,
    ) -> anyhow::Result<LogSink> {
        let file = match logfile {
            Some(p) => Some((p.to_path_buf(), Mutex::new(BufWriter::new(open_append(p)?)))),
            None => None,
        };
        Ok(LogSink {
            file,
            timestamps,
            forceflush,
            verbose,
            exit_on_closed_stdout: false,
        })
    }

    /// A client's sink: like [`LogSink::open`], but a closed stdout ends the process (exit 0).
    pub fn for_client(
        logfile: Option<&Path>,
        timestamps: Option<String>,
        forceflush: bool,
        verbose: bool,
    ) -> anyhow::Result<LogSink> {
        let mut s = Self::open(logfile, timestamps, forceflush, verbose)?;
        s.exit_on_closed_stdout = true;
        Ok(s)
    }

    /// Whether log lines (not test output) are written at all (`-V`/`-v`, or a log file).
    pub fn verbose(&self) -> bool {
        self.verbose || self.file.is_some()
    }

    /// Test output (what iperf3's server prints on stdout): stdout, or the log file.
    pub fn output(&self, text: &str) {
        self.write(text, false);
    }

    /// A log line: stderr (only when verbose), or the log file.
    pub fn log(&self, line: &str) {
        if self.verbose() {
            self.write(&format!("{line}\n"), true);
        }
    }

    /// An error line: written even without `-V`.
    pub fn error(&self, line: &str) {
        self.write(&format!("{line}\n"), true);
    }

    /// Closes and reopens the log file by name (after logrotate moved it); no-op without one.
    pub fn reopen(&self) -> anyhow::Result<()> {
        let Some((path, w)) = &self.file else {
            return Ok(());
        };
        let fresh = BufWriter::new(open_append(path)?);
        if let Ok(mut w) = w.lock() {
            let _ = w.flush();
            *w = fresh;
        }
        Ok(())
    }

    /// The log file, if any.
    pub fn logfile(&self) -> Option<&Path> {
        self.file.as_ref().map(|(p, _)| p.as_path())
    }

    /// Flushes buffered file output (end of a test, shutdown).
    pub fn flush(&self) {
        if let Some((_, w)) = &self.file {
            if let Ok(mut w) = w.lock() {
                let _ = w.flush();
            }
        }
    }

    fn write(&self, text: &str, is_log: bool) {
        let text = match &self.timestamps {
            Some(fmt) => prefix_lines(text, &strftime_now(fmt)),
            None => text.to_string(),
        };
        match &self.file {
            Some((_, w)) => {
                if let Ok(mut w) = w.lock() {
                    let _ = w.write_all(text.as_bytes());
                    if self.forceflush || is_log {
                        let _ = w.flush();
                    }
                }
            }
            None if is_log => {
                let mut e = std::io::stderr().lock();
                let _ = e.write_all(text.as_bytes()).and_then(|()| e.flush());
            }
            None if self.exit_on_closed_stdout => crate::util::out::stdout(format_args!("{text}")),
            None => {
                // A closed stdout drops the text; the server keeps serving.
                let mut o = std::io::stdout().lock();
                let _ = o.write_all(text.as_bytes());
                let _ = o.flush();
            }
        }
    }
}

fn open_append(p: &Path) -> anyhow::Result<File> {
    OpenOptions::new()
        .create(true)
        .append(true)
        .open(p)
        .map_err(|e| {
            anyhow::anyhow!(
                "cannot open log file {}: {e} (check the directory exists and is writable)",
                p.display()
            )
        })
}

/// Puts `prefix` in front of every line of `text`.
pub fn prefix_lines(text: &str, prefix: &str) -> String {
    let mut out = String::with_capacity(text.len() + prefix.len() * 4);
    for line in text.split_inclusive('\n') {
        out.push_str(prefix);
        out.push_str(line);
    }
    out
}

/// The local time formatted with `strftime(3)` (as iperf3's `--timestamps` does).
pub fn strftime_now(fmt: &str) -> String {
    let Ok(cfmt) = std::ffi::CString::new(fmt) else {
        return String::new();
    };
    let mut buf = [0u8; 256];
    // SAFETY: time/localtime_r fill the tm we own; strftime writes at most buf.len() bytes.
    let n = unsafe {
        let t = libc::time(std::ptr::null_mut());
        let mut tm: libc::tm = std::mem::zeroed();
        if libc::localtime_r(&t, &mut tm).is_null() {
            return String::new();
        }
        libc::strftime(buf.as_mut_ptr().cast(), buf.len(), cfmt.as_ptr(), &tm)
    };
    String::from_utf8_lossy(&buf[..n]).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_prefix_every_line() {
        assert_eq!(prefix_lines("a\nb\n", "T "), "T a\nT b\n");
        assert_eq!(prefix_lines("a", "T "), "T a");
        let year = strftime_now("%Y");
        assert_eq!(year.len(), 4, "{year:?}");
        assert!(year.starts_with("20"));
    }

    #[test]
    fn log_file_is_reopened_by_name() {
        let dir = std::env::temp_dir().join(format!("rb-log-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        let path = dir.join("server.log");
        let sink = LogSink::open(Some(&path), None, false, false).unwrap();
        assert!(sink.verbose(), "a log file gets the log lines");
        sink.log("first");
        let rotated = dir.join("server.log.1");
        std::fs::rename(&path, &rotated).unwrap();
        sink.log("still old file");
        sink.reopen().unwrap();
        sink.log("second");
        sink.output("output\n");
        sink.flush();
        let old = std::fs::read_to_string(&rotated).unwrap();
        let new = std::fs::read_to_string(&path).unwrap();
        assert_eq!(old, "first\nstill old file\n");
        assert_eq!(new, "second\noutput\n");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn quiet_without_verbose_or_file() {
        let sink = LogSink::open(None, None, false, false).unwrap();
        assert!(!sink.verbose());
        let sink = LogSink::open(None, None, false, true).unwrap();
        assert!(sink.verbose());
    }
}
