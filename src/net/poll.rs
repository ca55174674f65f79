//! Waiting on several sockets at once: `poll(2)` through nix, for the probe loop that reads
//! receive data and send timestamps (the error queue) of all its streams from one thread.

use std::io;
use std::os::fd::BorrowedFd;

use nix::poll::{PollFd, PollFlags, PollTimeout, poll};

/// Waits up to `timeout_ms` (-1: no limit) until one of `fds` is readable or has an
/// error-queue entry. Returns the revents bits per fd, as `libc::POLL*` (0 if nothing
/// happened, and all 0 if a signal interrupted the wait).
pub fn poll_readable(fds: &[BorrowedFd<'_>], timeout_ms: i32) -> io::Result<Vec<i16>> {
    let timeout = PollTimeout::try_from(timeout_ms).map_err(|e| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("poll timeout {timeout_ms} ms: {e}"),
        )
    })?;
    let mut pfds: Vec<PollFd> = fds
        .iter()
        .map(|&fd| PollFd::new(fd, PollFlags::POLLIN | PollFlags::POLLERR))
        .collect();
    match poll(&mut pfds, timeout) {
        Ok(_) => Ok(pfds
            .iter()
            .map(|p| p.revents().map_or(0, |f| f.bits()))
            .collect()),
        Err(nix::errno::Errno::EINTR) => Ok(vec![0; fds.len()]),
        Err(e) => Err(e.into()),
    }
}

/// Waits up to `timeout_ms` until `fd` is writable (POLLOUT). With TCP_NOTSENT_LOWAT set, a TCP
/// socket polls writable only while fewer than half the low-water mark of written bytes are
/// unsent, which is how the option limits a sender's backlog: a blocking `write()` checks it
/// only when it starts a new buffer, and TCP (always GSO) fills a buffer up to 64 KiB, so a
/// writer that does not poll first can keep ~64 KiB unsent whatever the option says
/// (docs/rpm.md). True if writable (or in error: the write will tell).
pub fn wait_writable(fd: BorrowedFd<'_>, timeout_ms: u16) -> io::Result<bool> {
    let mut pfds = [PollFd::new(fd, PollFlags::POLLOUT)];
    match poll(&mut pfds, PollTimeout::from(timeout_ms)) {
        Ok(0) => Ok(false),
        Ok(_) => Ok(true),
        Err(nix::errno::Errno::EINTR) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::UdpSocket;
    use std::os::fd::AsFd;

    #[test]
    fn reports_the_readable_socket_only() {
        let a = UdpSocket::bind("127.0.0.1:0").unwrap();
        let b = UdpSocket::bind("127.0.0.1:0").unwrap();
        let idle = poll_readable(&[a.as_fd(), b.as_fd()], 0).unwrap();
        assert_eq!(idle, vec![0, 0]);
        a.send_to(b"x", b.local_addr().unwrap()).unwrap();
        let ev = poll_readable(&[a.as_fd(), b.as_fd()], 2000).unwrap();
        assert_eq!(ev[0], 0);
        assert_ne!(ev[1] & libc::POLLIN, 0, "{ev:?}");
    }
}
