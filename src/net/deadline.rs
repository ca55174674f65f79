//! A reader bounded by a deadline for the whole message, not per read: handshakes of the
//! routerbench protocol and the monitor agent use it.

use std::io::{self, Read};
use std::net::TcpStream;
use std::time::Instant;

/// A reader that fails with `TimedOut` once `deadline` has passed, however slowly the peer
/// dribbles bytes: each read waits at most the time left. Handshakes use it so that a client
/// sending one byte every few seconds cannot hold a connection (and its thread) for ever.
pub struct DeadlineReader<'a> {
    pub stream: &'a mut TcpStream,
    pub deadline: Instant,
}

impl Read for DeadlineReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let left = self.deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(io::Error::new(io::ErrorKind::TimedOut, "deadline passed"));
        }
        self.stream.set_read_timeout(Some(left))?;
        self.stream.read(buf)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::time::Duration;

    #[test]
    fn a_dribbling_peer_hits_the_deadline() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let writer = std::thread::spawn(move || {
            let mut c = TcpStream::connect(addr).unwrap();
            // One byte every 50 ms, 20 times: 1 s in all, past the 200 ms deadline.
            for _ in 0..20 {
                if c.write_all(b"x").is_err() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        });
        let (mut s, _) = l.accept().unwrap();
        let started = Instant::now();
        let mut buf = [0u8; 20];
        let r = DeadlineReader {
            stream: &mut s,
            deadline: started + Duration::from_millis(200),
        }
        .read_exact(&mut buf);
        let e = r.unwrap_err();
        assert!(crate::net::is_timeout(&e), "{e}");
        assert!(
            started.elapsed() < Duration::from_millis(900),
            "{:?}",
            started.elapsed()
        );
        drop(s);
        writer.join().unwrap();
    }
}
