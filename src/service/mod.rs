//! What a protocol hosted on the shared port needs from the daemon, without depending on it:
//! the [`ProtocolHandler`] trait the daemon hands connections to, the [`limits::Ledger`] of what
//! every client holds, and the [`logcap::LogCap`] on log lines. `iperf3`, `latency` and
//! `monitor::agent` use these; `server` (the daemon) composes them.

pub mod limits;
pub mod logcap;

use std::net::TcpStream;

/// A protocol served on the shared port besides iperf3 (routerbench's own protocol).
/// The server calls `handle` on a thread of its own after the first bytes identified the
/// protocol; `prefix` holds the bytes the server already read (the full magic).
pub trait ProtocolHandler: Send + Sync {
    fn handle(&self, stream: TcpStream, prefix: &[u8]) -> anyhow::Result<()>;
}
