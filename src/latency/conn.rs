//! Frame I/O for the routerbench protocol over a TCP stream, and the random payload of load
//! flows. The byte format lives in `wire::rb`; this only reads and writes it.

use crate::net::deadline::DeadlineReader;
use crate::wire::rb::{self, Message, WireError};
use std::io::{self, Read, Write};

/// Why a control frame could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ConnError {
    #[error("peer closed the connection")]
    Closed,
    #[error("no message within the timeout")]
    Timeout,
    #[error("{0}")]
    Io(io::Error),
    #[error("malformed message: {0}")]
    Wire(#[from] WireError),
}

impl From<io::Error> for ConnError {
    fn from(e: io::Error) -> Self {
        match e.kind() {
            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => Self::Timeout,
            io::ErrorKind::UnexpectedEof
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::BrokenPipe
            | io::ErrorKind::ConnectionAborted => Self::Closed,
            _ => Self::Io(e),
        }
    }
}

/// Reads one frame, all of it before `deadline` (see [`DeadlineReader`]).
pub fn read_msg_by(
    stream: &mut std::net::TcpStream,
    deadline: std::time::Instant,
) -> Result<Message, ConnError> {
    read_msg(&mut DeadlineReader { stream, deadline })
}

/// Waits until `idle_until` for a frame to begin, then reads all of it within `msg_time` of
/// its first byte: a session may be silent up to its idle timeout, but a message once begun
/// must be whole within the message deadline, however slowly it is dribbled.
pub fn read_msg_idle(
    stream: &mut std::net::TcpStream,
    idle_until: std::time::Instant,
    msg_time: std::time::Duration,
) -> Result<Message, ConnError> {
    use std::os::fd::AsFd;
    loop {
        let left = idle_until.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            return Err(ConnError::Timeout);
        }
        let mut fds = [nix::poll::PollFd::new(
            stream.as_fd(),
            nix::poll::PollFlags::POLLIN,
        )];
        let wait = nix::poll::PollTimeout::try_from(left.min(std::time::Duration::from_secs(1)))
            .unwrap_or(nix::poll::PollTimeout::MAX);
        match nix::poll::poll(&mut fds, wait) {
            Ok(n) if n > 0 => break,
            Ok(_) | Err(nix::errno::Errno::EINTR) => {}
            Err(e) => return Err(ConnError::Io(e.into())),
        }
    }
    read_msg_by(stream, std::time::Instant::now() + msg_time)
}

/// Reads one frame. The stream's read timeout bounds the wait; a frame cut short is an error.
pub fn read_msg(r: &mut impl Read) -> Result<Message, ConnError> {
    let mut header = [0u8; rb::FRAME_HEADER_LEN];
    r.read_exact(&mut header)?;
    let len = rb::frame_payload_len(&header)?;
    let mut payload = vec![0u8; len];
    r.read_exact(&mut payload)
        .map_err(|e| match ConnError::from(e) {
            ConnError::Closed => ConnError::Wire(WireError::Truncated {
                needed: rb::FRAME_HEADER_LEN + len,
                got: rb::FRAME_HEADER_LEN,
            }),
            other => other,
        })?;
    Ok(Message::parse(header[0], &payload)?)
}

/// Writes one frame.
pub fn write_msg(w: &mut impl Write, m: &Message) -> io::Result<()> {
    w.write_all(&m.emit())
}

/// 128 KiB of pseudo-random bytes (xorshift64*), so compression on the path gains nothing.
pub fn random_payload(seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    let mut out = Vec::with_capacity(128 * 1024);
    while out.len() < 128 * 1024 {
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        out.extend_from_slice(&x.wrapping_mul(0x2545_F491_4F6C_DD1D).to_le_bytes());
    }
    out
}

/// A seed that differs between calls and processes ([`crate::util::random`]).
pub fn random_u64() -> u64 {
    crate::util::random::u64()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_msg_roundtrip_and_truncation() {
        let bytes = Message::Start {
            start_in_us: 1,
            duration_ms: 2,
            step_ms: 3,
        }
        .emit();
        let mut cur = io::Cursor::new(bytes.clone());
        assert_eq!(
            read_msg(&mut cur).unwrap(),
            Message::Start {
                start_in_us: 1,
                duration_ms: 2,
                step_ms: 3
            }
        );
        assert!(matches!(read_msg(&mut cur), Err(ConnError::Closed)));
        let mut cut = io::Cursor::new(bytes[..7].to_vec());
        assert!(matches!(
            read_msg(&mut cut),
            Err(ConnError::Wire(WireError::Truncated { .. }))
        ));
    }

    #[test]
    fn a_message_begun_must_be_whole_within_its_deadline() {
        use std::io::Write;
        use std::time::{Duration, Instant};
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let mut c = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (mut s, _) = l.accept().unwrap();
        // Silence up to the idle deadline is a timeout.
        let t = Instant::now();
        let r = read_msg_idle(
            &mut s,
            t + Duration::from_millis(150),
            Duration::from_secs(5),
        );
        assert!(matches!(r, Err(ConnError::Timeout)));
        assert!(t.elapsed() < Duration::from_secs(1));
        // A whole frame after some silence is read.
        let bytes = Message::Finish.emit();
        c.write_all(&bytes).unwrap();
        let r = read_msg_idle(
            &mut s,
            Instant::now() + Duration::from_secs(5),
            Duration::from_secs(1),
        );
        assert_eq!(r.unwrap(), Message::Finish);
        // A frame dribbled one byte per 120 ms: cut 300 ms after its first byte, although the
        // idle deadline is far away.
        let start = Message::Start {
            start_in_us: 1,
            duration_ms: 2,
            step_ms: 5,
        }
        .emit();
        let w = std::thread::spawn(move || {
            for b in start {
                if c.write_all(&[b]).is_err() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(120));
            }
        });
        let t = Instant::now();
        let r = read_msg_idle(
            &mut s,
            t + Duration::from_secs(30),
            Duration::from_millis(300),
        );
        assert!(matches!(r, Err(ConnError::Timeout)), "{r:?}");
        assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
        drop(s);
        w.join().unwrap();
    }

    #[test]
    fn payload_is_not_compressible_and_seeds_differ() {
        let p = random_payload(7);
        let distinct: std::collections::HashSet<&[u8]> = p.chunks(8).collect();
        assert!(distinct.len() > p.len() / 8 - 8);
        assert_ne!(random_u64(), random_u64());
    }
}
