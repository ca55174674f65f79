//! The one daemon: accept on one port, look at the first bytes, hand the connection to an iperf3
//! session or a routerbench-protocol session; limits and timeouts for both.

use std::net::TcpStream;

/// A protocol served on the shared port besides iperf3 (routerbench's own protocol).
/// The server calls `handle` on a thread of its own after the first bytes identified the
/// protocol; `prefix` holds the bytes the server already read (the full magic).
pub trait ProtocolHandler: Send + Sync {
    fn handle(&self, stream: TcpStream, prefix: &[u8]) -> anyhow::Result<()>;
}
