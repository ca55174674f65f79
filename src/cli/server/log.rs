//! How `routerbench server` shows what its server does: iperf3's output (banner, accepted
//! connection, interval lines, the summary or `-J`) and the log lines (refusals, failed
//! hand-offs, shutdown), rendered from the server's events; the log file's reopen on SIGHUP.

use crate::cli::common::log_sink::LogSink;
use crate::report::export::iperf3::Iperf3Json;
use crate::results::throughput::ThroughputResult;
use crate::server::{ServerEvent, ServerObserver};
use portable_atomic::AtomicU64;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

/// Renders server events the way iperf3's server does: the banner, the accepted connection,
/// interval lines and the test's summary as output (stdout or `--logfile`); refusals, protocol
/// sessions and shutdown as log lines (stderr with `-V`, or the log file).
pub struct Log {
    pub json: crate::cli::common::json_arg::JsonArg,
    pub verbose: bool,
    /// No output at all (`-q`), only errors.
    pub quiet: bool,
    pub sink: Arc<LogSink>,
    /// The port shown in the banner (the bound one, also with `-p 0`).
    pub port: std::sync::atomic::AtomicU16,
    /// Tests started so far (the banner's "test #N").
    pub tests: AtomicU64,
    /// `-1` / `--max-tests`: no banner after the last test.
    pub max_tests: Option<u64>,
    /// This host's `uname -a` line for the `-J` documents (taken at start).
    pub system_info: String,
    /// The metrics, told each test served (`routerbench_iperf3_served_*`).
    pub metrics: Option<Arc<super::metrics::Metrics>>,
}

impl Log {
    /// iperf3's banner before each test ("Server listening on …").
    pub fn banner(&self) {
        let n = self.tests.load(Ordering::Relaxed) + 1;
        if self.max_tests.is_some_and(|m| n > m) {
            return;
        }
        self.output(&format!(
            "-----------------------------------------------------------\n\
             Server listening on {} (test #{n})\n\
             -----------------------------------------------------------\n",
            self.port.load(Ordering::Relaxed)
        ));
    }

    fn output(&self, text: &str) {
        if !self.quiet {
            self.sink.output(text);
        }
    }

    /// Text output is iperf3's shape; with -J only the JSON.
    fn text(&self, text: &str) {
        if !self.json.on_stdout() {
            self.output(text);
        }
    }
}

impl ServerObserver for Log {
    fn event(&self, e: &ServerEvent<'_>) {
        match e {
            // The banner (with the test number) is printed by `run` and after each test.
            ServerEvent::Listening(_) => {}
            ServerEvent::TestStarted { peer } => {
                self.tests.fetch_add(1, Ordering::Relaxed);
                self.text(&format!(
                    "Accepted connection from {}, port {}\n",
                    crate::net::addr::display_ip(peer.ip()),
                    peer.port()
                ))
            }
            ServerEvent::StreamsConnected { connected, .. } => {
                self.text(&crate::report::iperf3::render_connected(connected))
            }
            ServerEvent::Interval {
                interval,
                first,
                parallel,
                ..
            } => self.text(&crate::report::iperf3::render_interval_block(
                interval, *first, *parallel, true,
            )),
            ServerEvent::TestDone { peer, result } => {
                if let Some(m) = &self.metrics {
                    m.served(result);
                }
                if self.json.is_set() {
                    let doc = Iperf3Json::new(&self.system_info).text(result);
                    if let Err(e) = self.json.append_text(&doc, |d| self.output(d)) {
                        self.sink.error(&format!("routerbench: {e:#}"));
                    }
                }
                if self.json.on_stdout() {
                    // The JSON above is the test's output.
                } else if self.verbose {
                    self.output(&crate::report::iperf3::render_final_verbose(result));
                } else {
                    self.output(&crate::report::iperf3::render_final(result));
                }
                if self.sink.verbose() {
                    self.sink.log(&format!(
                        "test from {} done (client version {})",
                        show(peer),
                        result.peer_version.as_deref().unwrap_or("unknown")
                    ));
                }
                if !self.json.on_stdout() {
                    self.banner();
                }
                self.sink.flush();
            }
            ServerEvent::TestFailed { peer, error } => {
                self.sink.error(&format!(
                    "routerbench: test from {} failed: {error}",
                    show(peer)
                ));
                if !self.json.on_stdout() {
                    self.banner();
                }
                self.sink.flush();
            }
            ServerEvent::Refused { peer, reason } => {
                self.sink.log(&format!("refused {}: {reason}", show(peer)))
            }
            // A routerbench-protocol connection (an RRUL opens nine): its session logs one
            // line when it ends; a connection only logs its error.
            ServerEvent::Handoff { error: None, .. } => {}
            ServerEvent::Handoff {
                peer,
                error: Some(e),
            } => self
                .sink
                .log(&format!("routerbench connection from {}: {e}", show(peer))),
            ServerEvent::Stopping { reason } => {
                self.sink.log(&format!("server stopping: {reason}"))
            }
        }
    }

    /// `--get-server-output`: the test's summary as this server prints it.
    fn server_output(&self, result: &ThroughputResult) -> Option<String> {
        Some(crate::report::iperf3::render_final(result))
    }
}

fn show(peer: &SocketAddr) -> String {
    format!(
        "{} port {}",
        crate::net::addr::display_ip(peer.ip()),
        peer.port()
    )
}

/// Reopens the log file on SIGHUP (logrotate's habit) and says so in the new file; a
/// failed reopen keeps the old file and says why on it. Returns the thread's stop flag.
pub fn spawn_reopen_on_hangup(sink: Arc<LogSink>) -> Arc<std::sync::atomic::AtomicBool> {
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = stop.clone();
    let _ = std::thread::Builder::new()
        .name("rb-sighup".into())
        .spawn(move || {
            while !flag.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(100));
                if !crate::util::signals::take_hangup() {
                    continue;
                }
                let line = match (sink.logfile(), sink.reopen()) {
                    (None, _) => "SIGHUP: no --logfile to reopen; still serving".to_string(),
                    (Some(p), Ok(())) => format!("SIGHUP: reopened log {}", p.display()),
                    (Some(_), Err(e)) => format!("SIGHUP: {e:#}; still writing the old file"),
                };
                sink.error(&format!("routerbench server: {line}"));
            }
        });
    stop
}
