//! Socket helpers both ends of an RPM load connection use (routerbench's protocol): whole
//! records written across write timeouts, the sender's queue kept short, the data filler.

use crate::wire::rb::rpm as rec;
use std::io::{self, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};

/// TCP_NOTSENT_LOWAT of every sending socket of an RPM load connection, and the payload of one
/// Data record: a self probe waits behind at most about this much of its own connection's
/// unsent data (docs/rpm.md has the measurement behind the choice).
pub const NOTSENT_LOWAT: u32 = 4096;
pub const DATA_RECORD: usize = 4096;
/// Write timeout of a sending load socket, and the longest wait for it to poll writable. A
/// blocked write is retried at this period: with TCP_NOTSENT_LOWAT the kernel's wake-up of a
/// writer blocked in `write()` was seen to come only at the timeout (250 ms then), which put up
/// to 250 ms of false delay in every self probe (docs/rpm.md).
pub const WRITE_POLL: std::time::Duration = std::time::Duration::from_millis(2);

/// Writes all of `buf` (the socket has a write timeout; timeouts retry) unless `stop` is set.
/// A record is never left half written when this returns Ok. Each write waits until the socket
/// polls writable first: that is when TCP_NOTSENT_LOWAT holds (a blocking write alone let up to
/// 64 KiB wait unsent ahead of every self probe; docs/rpm.md, "The self-probe gap").
pub fn write_all_until(s: &mut TcpStream, mut buf: &[u8], stop: &AtomicBool) -> io::Result<()> {
    use std::os::fd::AsFd;
    while !buf.is_empty() {
        if stop.load(Ordering::Relaxed) {
            return Err(io::Error::new(io::ErrorKind::Interrupted, "stopped"));
        }
        if !crate::net::poll::wait_writable(s.as_fd(), WRITE_POLL.as_millis() as u16)? {
            continue;
        }
        match s.write(buf) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => buf = &buf[n..],
            Err(e) if crate::net::is_timeout(&e) || e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// One Data record: header and random filler (incompressible).
pub fn data_record() -> Vec<u8> {
    let mut v = rec::data_header(DATA_RECORD).to_vec();
    let fill = crate::latency::conn::random_payload(crate::latency::conn::random_u64());
    v.extend_from_slice(&fill[..DATA_RECORD]);
    v
}

/// The socket's unsent bytes (TCP_INFO), 0 when unknown.
pub fn unsent(s: &TcpStream) -> u32 {
    crate::net::tcp_info::tcp_info(s)
        .map(|i| i.notsent_bytes)
        .unwrap_or(0)
}
