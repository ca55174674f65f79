//! iperf3-compatible throughput tests: the client and server sessions that speak
//! [`crate::wire::iperf3`], one thread per data stream, interval accounting, CPU use. (The
//! `-J` document of a result is written by `report::export::iperf3`; the in-process loopback test, which needs the daemon, is
//! `crate::server::loopback`.)
//!
//! Measuring code here never prints: live intervals go to an [`IntervalSink`], results come
//! back as [`crate::results::throughput::ThroughputResult`].

pub mod accept;
pub mod auth;
pub mod client;
pub mod control;
pub mod cpu;
pub mod env;
pub mod meter;
pub mod ratelimit;
pub(crate) mod running;
pub mod session;
pub mod stream;
pub mod summary;
pub mod udp_port;

use crate::results::throughput::Interval;
use crate::wire::iperf3::{Cookie, ErrorPayload, WireError};
use std::time::Duration;

/// How long any single control read may wait before the peer counts as silent.
pub const CONTROL_TIMEOUT: Duration = Duration::from_secs(10);

/// Everything that can end a test early, with the cause named.
#[derive(Debug, thiserror::Error)]
pub enum Iperf3Error {
    #[error("{context}: {source}")]
    Io {
        context: String,
        source: std::io::Error,
    },
    #[error(
        "{0}: not complete within {1:?} (the whole message must arrive by then): the peer \
         vanished, sends too slowly, or is not an iperf3 peer"
    )]
    Timeout(&'static str, Duration),
    #[error("{0}: the peer closed the connection")]
    Closed(&'static str),
    #[error("{context}: {source}")]
    Wire {
        context: &'static str,
        source: WireError,
    },
    #[error("the server refused the test: {}", .0.message())]
    ServerError(ErrorPayload),
    #[error("the server is busy running a test. try again later")]
    AccessDenied,
    #[error("the server has terminated")]
    ServerTerminated,
    #[error("the client has terminated")]
    ClientTerminated,
    #[error("interrupted")]
    Interrupted,
    #[error("protocol error: {0}")]
    Protocol(String),
    #[error("test refused: {message}")]
    Refused { i_errno: i32, message: String },
}

impl Iperf3Error {
    pub fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        Iperf3Error::Io {
            context: context.into(),
            source,
        }
    }

    /// The iperf3 `i_errno` a server reports for this error, if it maps to one.
    pub fn i_errno(&self) -> i32 {
        use crate::wire::iperf3::errors as e;
        match self {
            Iperf3Error::Refused { i_errno, .. } => *i_errno,
            Iperf3Error::Closed(_) => e::IECTRLCLOSE,
            Iperf3Error::Timeout(..) => e::IERECVMESSAGE,
            Iperf3Error::Wire { context, .. } if context.contains("param") => e::IERECVPARAMS,
            Iperf3Error::Wire { context, .. } if context.contains("result") => e::IERECVRESULTS,
            Iperf3Error::Wire { .. } => e::IEMESSAGE,
            Iperf3Error::ClientTerminated => e::IECLIENTTERM,
            Iperf3Error::Interrupted => e::IESERVERTERM,
            _ => e::IENEWTEST,
        }
    }
}

pub type Result<T> = std::result::Result<T, Iperf3Error>;

/// Receives each interval as it completes (the CLI renders it; tests ignore it).
pub trait IntervalSink: Send + Sync {
    /// The data streams are connected (before the first interval).
    fn started(&self, _connected: &[crate::results::throughput::Connected]) {}
    fn interval(&self, interval: &Interval);
    /// The server's result, once the client has it (before its IPERF_DONE is awaited, so that
    /// a server's summary is printed before the next test's first line, as iperf3's is).
    fn results(&self, _result: &crate::results::throughput::ThroughputResult) {}
}

/// Ignores intervals.
pub struct NoIntervals;

impl IntervalSink for NoIntervals {
    fn interval(&self, _: &Interval) {}
}

/// Fills `buf` with random bytes ([`crate::util::random`]; the cookie needs uniqueness, not
/// secrecy).
pub fn fill_random(buf: &mut [u8]) {
    crate::util::random::fill(buf);
}

/// This host's `uname -a`-like line (sysname, nodename, release, version, machine) for the
/// `-J` document's `start.system_info`; empty if uname fails.
pub fn system_info() -> String {
    let Ok(u) = nix::sys::utsname::uname() else {
        return String::new();
    };
    format!(
        "{} {} {} {} {}",
        u.sysname().to_string_lossy(),
        u.nodename().to_string_lossy(),
        u.release().to_string_lossy(),
        u.version().to_string_lossy(),
        u.machine().to_string_lossy()
    )
}

/// A fresh random cookie, as iperf3's `make_cookie`.
pub fn new_cookie() -> Cookie {
    let mut r = [0u8; 36];
    fill_random(&mut r);
    Cookie::from_random(&r)
}

/// Stream ids in creation order: 1, 3, 4, 5, … (iperf3's historical quirk, kept on the wire).
pub fn stream_id(index: usize) -> i32 {
    if index == 0 { 1 } else { index as i32 + 2 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stream_ids_skip_two() {
        let ids: Vec<i32> = (0..4).map(stream_id).collect();
        assert_eq!(ids, [1, 3, 4, 5]);
    }

    #[test]
    fn cookies_differ() {
        assert_ne!(new_cookie(), new_cookie());
    }
}
