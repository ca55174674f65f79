//! What a protocol hosted on the shared port needs from the daemon, without depending on it:
//! the [`ProtocolHandler`] trait the daemon hands connections to, the [`limits::Ledger`] of what
//! every client holds, the [`fair::FairPool`]s that share capped slots between hosts, the
//! [`logcap::LogCap`] on log lines, [`backoff::Backoff`] (slow guessing of secrets) and
//! [`same_token`] (the one token comparison of the routerbench protocol and the agent).
//! `iperf3`, `latency` and `monitor::agent` use these; `server` (the daemon) composes them.

pub mod backoff;
pub mod fair;
pub mod limits;
pub mod logcap;

use crate::util::error::{BoxError, chain};
use std::net::TcpStream;
use std::time::Instant;

/// A connection handed to a hosted protocol once its first bytes identified it.
#[derive(Debug)]
pub struct Handoff {
    pub stream: TcpStream,
    /// The bytes the server already read (the full magic).
    pub prefix: Vec<u8>,
    /// The handshake deadline, counted from the accept: the protocol's first message must be
    /// complete by then (the magic and the Hello share one deadline, however they are dribbled).
    pub deadline: Instant,
    /// The connection's seat in the server's connection pool: pending (a newcomer from a
    /// lighter host may take it) until the protocol marks it running.
    pub seat: Option<fair::Seat>,
}

impl Handoff {
    /// A hand-off with no seat and `wait` from now (tests, and servers without a pool).
    pub fn new(stream: TcpStream, prefix: &[u8], wait: std::time::Duration) -> Self {
        Handoff {
            stream,
            prefix: prefix.to_vec(),
            deadline: Instant::now() + wait,
            seat: None,
        }
    }
}

/// A protocol served on the shared port besides iperf3 (routerbench's own protocol).
/// The server calls `handle` on a thread of its own after the first bytes identified the
/// protocol.
pub trait ProtocolHandler: Send + Sync {
    fn handle(&self, conn: Handoff) -> Result<(), HandlerError>;
}

/// Why a hosted protocol's connection ended in an error: that protocol's own typed error
/// (latency's `ServiceError`, the agent's `MonitorError`, an `io::Error`, …) carried unchanged,
/// so one trait object serves every protocol. `Display` shows it with its causes; `?` converts
/// any error (and a `&str`/`String` message) into it.
#[derive(Debug)]
pub struct HandlerError(BoxError);

impl<E: Into<BoxError>> From<E> for HandlerError {
    fn from(e: E) -> Self {
        HandlerError(e.into())
    }
}

impl std::fmt::Display for HandlerError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&chain(&*self.0))
    }
}

/// Compares a client's token with the expected one over the whole length, whatever the first
/// difference (no early exit whose timing tells how much of a guess was right).
pub fn same_token(want: &str, got: &str) -> bool {
    let (a, b) = (want.as_bytes(), got.as_bytes());
    let mut diff = a.len() ^ b.len();
    for (i, x) in a.iter().enumerate() {
        diff |= usize::from(x ^ b.get(i).copied().unwrap_or(!x));
    }
    diff == 0
}

impl HandlerError {
    /// The protocol's error itself (to downcast or inspect).
    pub fn inner(&self) -> &(dyn std::error::Error + Send + Sync + 'static) {
        &*self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_compare_whole() {
        assert!(same_token("abc", "abc"));
        assert!(!same_token("abc", "abd"));
        assert!(!same_token("abc", "ab"));
        assert!(!same_token("ab", "abc"));
        assert!(!same_token("", "a"));
        assert!(same_token("", ""));
    }
}
