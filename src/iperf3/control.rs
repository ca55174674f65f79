//! The control connection: state bytes, length-framed JSON and SERVER_ERROR, each read with a
//! deadline so a silent or vanished peer never blocks a thread, and the 3.21-style close
//! (`shutdown(WR)`, drain to EOF, close) so the last bytes are not lost to a RST.

use super::{Iperf3Error, Result};
use crate::wire::iperf3::{self as wire, ErrorPayload, State, TestResults};
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::os::fd::AsFd;
use std::time::{Duration, Instant};

/// One control connection (either end).
#[derive(Debug)]
pub struct Control {
    stream: TcpStream,
    timeout: Duration,
}

impl Control {
    /// Wraps a connected socket: TCP_NODELAY (both iperf3 ends set it) and a write timeout.
    pub fn new(stream: TcpStream, timeout: Duration) -> Result<Control> {
        stream
            .set_nodelay(true)
            .map_err(|e| Iperf3Error::io("control: TCP_NODELAY", e))?;
        stream
            .set_write_timeout(Some(timeout))
            .map_err(|e| Iperf3Error::io("control: write timeout", e))?;
        Ok(Control { stream, timeout })
    }

    pub fn stream(&self) -> &TcpStream {
        &self.stream
    }

    /// The per-message read deadline.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Changes the per-message read deadline (and the write timeout).
    pub fn set_timeout(&mut self, timeout: Duration) {
        self.timeout = timeout;
        let _ = self.stream.set_write_timeout(Some(timeout));
    }

    /// Reads exactly `buf.len()` bytes within `wait`.
    pub fn read_full(&mut self, buf: &mut [u8], what: &'static str, wait: Duration) -> Result<()> {
        self.read_full_by(buf, what, Instant::now() + wait, wait)
    }

    /// Reads exactly `buf.len()` bytes before `deadline` (`wait` is the whole allowance, for
    /// the error), however slowly the peer dribbles them.
    fn read_full_by(
        &mut self,
        buf: &mut [u8],
        what: &'static str,
        deadline: Instant,
        wait: Duration,
    ) -> Result<()> {
        let mut got = 0;
        while got < buf.len() {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(Iperf3Error::Timeout(what, wait));
            }
            self.stream
                .set_read_timeout(Some(left.max(Duration::from_millis(1))))
                .map_err(|e| Iperf3Error::io(what, e))?;
            match self.stream.read(&mut buf[got..]) {
                Ok(0) => return Err(Iperf3Error::Closed(what)),
                Ok(n) => got += n,
                Err(e) if is_timeout(&e) => {}
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) if is_reset(&e) => return Err(Iperf3Error::Closed(what)),
                Err(e) => return Err(Iperf3Error::io(what, e)),
            }
        }
        Ok(())
    }

    /// Reads one state byte within the control timeout.
    pub fn read_state(&mut self) -> Result<State> {
        let wait = self.timeout;
        self.read_state_within(wait)
    }

    /// Reads one state byte within `wait`.
    pub fn read_state_within(&mut self, wait: Duration) -> Result<State> {
        let mut b = [0u8; 1];
        self.read_full(&mut b, "control state", wait)?;
        State::from_byte(b[0]).map_err(|source| Iperf3Error::Wire {
            context: "control state",
            source,
        })
    }

    /// Waits up to `wait` for a state byte; `Ok(None)` if none came (used as the test's tick).
    /// Uses poll(2), which keeps millisecond precision (SO_RCVTIMEO rounds up to a jiffy, and
    /// interval boundaries would drift by up to 10 ms).
    pub fn poll_state(&mut self, wait: Duration) -> Result<Option<State>> {
        let mut fds = [PollFd::new(self.stream.as_fd(), PollFlags::POLLIN)];
        match poll(
            &mut fds,
            PollTimeout::try_from(wait).unwrap_or(PollTimeout::MAX),
        ) {
            Ok(n) if n > 0 => {}
            // Timeout, or EINTR: the caller's loop comes back.
            _ => return Ok(None),
        }
        let mut b = [0u8; 1];
        self.stream
            .set_read_timeout(Some(Duration::from_millis(100)))
            .map_err(|e| Iperf3Error::io("control", e))?;
        match self.stream.read(&mut b) {
            Ok(0) => Err(Iperf3Error::Closed("control")),
            Ok(_) => State::from_byte(b[0])
                .map(Some)
                .map_err(|source| Iperf3Error::Wire {
                    context: "control state",
                    source,
                }),
            Err(e) if is_timeout(&e) || e.kind() == ErrorKind::Interrupted => Ok(None),
            Err(e) if is_reset(&e) => Err(Iperf3Error::Closed("control")),
            Err(e) => Err(Iperf3Error::io("control", e)),
        }
    }

    pub fn send_state(&mut self, state: State) -> Result<()> {
        self.write_all(&[state.to_byte()], "control: send state")
    }

    /// Sends `[u32 len][body]` as two writes, like iperf3.
    pub fn send_json(&mut self, body: &str) -> Result<()> {
        self.write_all(
            &wire::json_len_header(body.len()),
            "control: send JSON length",
        )?;
        self.write_all(body.as_bytes(), "control: send JSON")
    }

    /// Reads one framed JSON body of at most `max` bytes: length and body together within the
    /// control timeout (one deadline for the whole message, not one per read).
    pub fn read_json(&mut self, max: usize, what: &'static str) -> Result<Vec<u8>> {
        let mut hdr = [0u8; 4];
        let wait = self.timeout;
        let deadline = Instant::now() + wait;
        self.read_full_by(&mut hdr, what, deadline, wait)?;
        let len = wire::parse_json_len(&hdr, max).map_err(|source| Iperf3Error::Wire {
            context: what,
            source,
        })?;
        let mut body = vec![0u8; len];
        self.read_full_by(&mut body, what, deadline, wait)?;
        Ok(body)
    }

    /// Reads the peer's framed results JSON (`context` names it in errors).
    pub fn read_results(&mut self, max: usize, context: &'static str) -> Result<TestResults> {
        let body = self.read_json(max, context)?;
        TestResults::parse(&body).map_err(|source| Iperf3Error::Wire { context, source })
    }

    /// Sends SERVER_ERROR with iperf3's error code.
    pub fn send_error(&mut self, i_errno: i32, errno: i32) -> Result<()> {
        let p = ErrorPayload {
            i_errno,
            errno: Some(errno),
        };
        self.write_all(&p.emit(), "control: send SERVER_ERROR")
    }

    /// Reads the payload after a SERVER_ERROR byte (tolerating EOF after the first int32).
    pub fn read_error_payload(&mut self) -> ErrorPayload {
        let mut first = [0u8; 4];
        let wait = self.timeout.min(Duration::from_secs(2));
        if self.read_full(&mut first, "SERVER_ERROR", wait).is_err() {
            return ErrorPayload {
                i_errno: 0,
                errno: None,
            };
        }
        let mut second = [0u8; 4];
        let errno = self
            .read_full(&mut second, "SERVER_ERROR", wait)
            .ok()
            .map(|_| i32::from_be_bytes(second));
        ErrorPayload {
            i_errno: i32::from_be_bytes(first),
            errno,
        }
    }

    fn write_all(&mut self, buf: &[u8], what: &'static str) -> Result<()> {
        self.stream.write_all(buf).map_err(|e| {
            if is_reset(&e) {
                Iperf3Error::Closed(what)
            } else {
                Iperf3Error::io(what, e)
            }
        })
    }

    /// `shutdown(WR)`, read until EOF (at most `wait`, 64 KiB), then close.
    pub fn close_gracefully(self, wait: Duration) {
        close_gracefully(self.stream, wait);
    }
}

/// Refuses a test: SERVER_ERROR with iperf3's `i_errno` to the client (best effort), and the
/// error with `message` for the server's log.
pub(crate) fn refuse(ctl: &mut Control, i_errno: i32, message: String) -> Iperf3Error {
    let _ = ctl.send_error(i_errno, 0);
    Iperf3Error::Refused { i_errno, message }
}

/// The 3.21 close for any TCP socket: `shutdown(WR)`, drain to EOF within `wait`, close.
pub fn close_gracefully(mut stream: TcpStream, wait: Duration) {
    let _ = stream.shutdown(Shutdown::Write);
    let deadline = Instant::now() + wait;
    let mut buf = [0u8; 4096];
    let mut drained = 0usize;
    while drained < 64 * 1024 {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() || stream.set_read_timeout(Some(left)).is_err() {
            break;
        }
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => drained += n,
        }
    }
}

pub use crate::net::is_timeout;

/// The peer reset or closed the connection under us.
pub fn is_reset(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        ErrorKind::ConnectionReset
            | ErrorKind::ConnectionAborted
            | ErrorKind::BrokenPipe
            | ErrorKind::NotConnected
            | ErrorKind::UnexpectedEof
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    fn pair() -> (Control, TcpStream) {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (s, _) = l.accept().unwrap();
        (Control::new(s, Duration::from_millis(300)).unwrap(), c)
    }

    #[test]
    fn frames_states_and_json() {
        let (mut ctl, mut peer) = pair();
        ctl.send_state(State::ParamExchange).unwrap();
        ctl.send_json(r#"{"a":1}"#).unwrap();
        let mut got = [0u8; 12];
        peer.read_exact(&mut got).unwrap();
        assert_eq!(&got, b"\x09\x00\x00\x00\x07{\"a\":1}");
        peer.write_all(b"\x04\x00\x00\x00\x02{}").unwrap();
        assert_eq!(ctl.read_state().unwrap(), State::TestEnd);
        assert_eq!(ctl.read_json(10, "results").unwrap(), b"{}");
    }

    #[test]
    fn silent_peer_times_out_and_huge_length_is_refused() {
        let (mut ctl, mut peer) = pair();
        let t = Instant::now();
        assert!(matches!(ctl.read_state(), Err(Iperf3Error::Timeout(..))));
        assert!(t.elapsed() < Duration::from_secs(2));
        peer.write_all(&[0xff, 0xff, 0xff, 0xff]).unwrap();
        assert!(matches!(
            ctl.read_json(wire::MAX_PARAMS_LEN, "parameters"),
            Err(Iperf3Error::Wire { .. })
        ));
        // A half-sent body times out instead of hanging.
        peer.write_all(&[0, 0, 0, 9, b'{']).unwrap();
        assert!(matches!(
            ctl.read_json(wire::MAX_PARAMS_LEN, "parameters"),
            Err(Iperf3Error::Timeout(..))
        ));
        drop(peer);
        assert!(matches!(
            ctl.poll_state(Duration::from_millis(100)),
            Err(Iperf3Error::Closed(_))
        ));
    }
}
