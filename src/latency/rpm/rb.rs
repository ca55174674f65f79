//! The RPM transport over routerbench's own protocol (the draft's TCP-only variant, §5.3.1.2):
//! a session (Hello → Welcome, RpmBegin → RpmReady), load connections whose byte stream carries
//! the self probes behind the data (`wire::rb::rpm`), and foreign probes that time connect plus
//! one request/response on a fresh connection.

use super::stream::{self, NOTSENT_LOWAT};
use super::transport::{LoadConnection, Ticket, Timing, Transport};
use crate::latency::conn::{self, ConnError};
use crate::latency::error::LatencyError;
use crate::wire::ROUTERBENCH_MAGIC;
use crate::wire::rb::rpm::{self as rec, Record, StreamParser};
use crate::wire::rb::{self, Direction, Message};
use portable_atomic::AtomicU64;
use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A routerbench server that agreed to an RPM test.
pub struct RbTransport {
    addr: SocketAddr,
    session: u64,
    ctl: Mutex<TcpStream>,
    timeout: Duration,
    cc: Option<String>,
    /// Connections the server takes per session (its max_flows).
    pub max_connections: usize,
    /// The next connection number on the wire (unique in the session).
    next_conn: std::sync::atomic::AtomicU32,
}

/// The message for a server without the RPM extension.
fn no_rpm(addr: SocketAddr, said: &str) -> LatencyError {
    LatencyError::Refused {
        addr,
        message: format!(
            "this routerbench server does not speak the RPM extension ({said}): upgrade it \
             (routerbench server or latency-server of this version)"
        ),
    }
}

impl RbTransport {
    /// Opens the session and announces an RPM test of at most `duration`.
    pub fn connect(
        addr: SocketAddr,
        token: &str,
        timeout: Duration,
        duration: Duration,
        cc: Option<String>,
    ) -> Result<Self, LatencyError> {
        let (mut ctl, welcome, _) = crate::latency::control::handshake(addr, timeout, token)?;
        if (welcome.max_duration_ms as u128) < duration.as_millis() {
            return Err(LatencyError::Refused {
                addr,
                message: format!(
                    "the test may take {:.0} s, the server allows {:.0} s: lower --max-time",
                    duration.as_secs_f64(),
                    welcome.max_duration_ms as f64 / 1e3
                ),
            });
        }
        let begin = Message::RpmBegin {
            duration_ms: duration.as_millis().min(u32::MAX as u128) as u32,
        };
        conn::write_msg(&mut ctl, &begin)?;
        match conn::read_msg(&mut ctl) {
            Ok(Message::RpmReady {
                max_connections, ..
            }) => Ok(Self {
                addr,
                session: welcome.session,
                ctl: Mutex::new(ctl),
                timeout,
                cc,
                max_connections: max_connections as usize,
                next_conn: std::sync::atomic::AtomicU32::new(0),
            }),
            Ok(Message::Error { message, .. }) if message.contains("unknown message type") => {
                Err(no_rpm(addr, &message))
            }
            Ok(Message::Error { message, .. }) => Err(LatencyError::Refused { addr, message }),
            Ok(other) => Err(no_rpm(addr, &format!("it answered {other:?}"))),
            Err(ConnError::Closed) => Err(no_rpm(addr, "it closed the connection")),
            Err(e) => Err(no_rpm(addr, &e.to_string())),
        }
    }

    /// Ends the session (Finish → Finished); problems are only worth a note.
    pub fn finish(&self) -> Option<String> {
        let mut ctl = self.ctl.lock().ok()?;
        let _ = ctl.set_read_timeout(Some(Duration::from_secs(2)));
        if let Err(e) = conn::write_msg(&mut *ctl, &Message::Finish) {
            return Some(format!("cannot end the session: {e}"));
        }
        match conn::read_msg(&mut *ctl) {
            Ok(Message::Finished { .. }) => None,
            Ok(other) => Some(format!("server ended the session with {other:?}")),
            Err(e) => Some(format!(
                "server did not confirm the end of the session: {e}"
            )),
        }
    }

    fn connect_socket(&self) -> std::io::Result<TcpStream> {
        let s = TcpStream::connect_timeout(&self.addr, self.timeout)?;
        s.set_nodelay(true)?;
        s.set_read_timeout(Some(self.timeout))?;
        s.set_write_timeout(Some(self.timeout))?;
        Ok(s)
    }
}

impl Transport for RbTransport {
    fn describe(&self) -> String {
        "routerbench TCP".into()
    }

    fn tls(&self) -> bool {
        false
    }

    fn open_load(&self, direction: Direction, _id: u32) -> Result<Box<dyn LoadConnection>, String> {
        let n = self.next_conn.fetch_add(1, Ordering::Relaxed);
        let conn =
            u8::try_from(n).map_err(|_| "more than 255 connections in one session".to_string())?;
        let mut s = self.connect_socket().map_err(|e| format!("connect: {e}"))?;
        if let Some(cc) = &self.cc {
            crate::net::set_congestion(&s, cc).map_err(|e| e.to_string())?;
        }
        let mut hello = ROUTERBENCH_MAGIC.to_vec();
        hello.extend_from_slice(
            &Message::RpmLoadHello {
                version: rb::VERSION,
                session: self.session,
                conn,
                direction,
            }
            .emit(),
        );
        s.write_all(&hello).map_err(|e| e.to_string())?;
        match conn::read_msg(&mut s) {
            Ok(Message::LoadAccept { .. }) => {}
            Ok(Message::Error { message, .. }) => return Err(format!("server refused: {message}")),
            Ok(other) => return Err(format!("server answered {other:?}")),
            Err(e) => return Err(format!("no answer: {e}")),
        }
        Ok(Box::new(
            RbLoad::start(s, direction).map_err(|e| e.to_string())?,
        ))
    }

    fn foreign_probe(&self, ticket: Ticket) {
        let (addr, session, timeout) = (self.addr, self.session, self.timeout);
        let t = ticket.clone();
        let spawned = std::thread::Builder::new()
            .name("rb-rpm-foreign".into())
            .spawn(move || {
                if let Err(e) = foreign(addr, session, timeout, t.clone()) {
                    t.fail(e);
                }
            });
        if let Err(e) = spawned {
            ticket.fail(format!("cannot start a probe thread: {e}"));
        }
    }
}

/// One foreign probe: connect (tcp_f), then RpmProbe → RpmProbeReply (http_f), then close.
fn foreign(
    addr: SocketAddr,
    session: u64,
    timeout: Duration,
    ticket: Ticket,
) -> Result<(), String> {
    let t = Instant::now();
    let mut s = TcpStream::connect_timeout(&addr, timeout).map_err(|e| format!("connect: {e}"))?;
    let tcp = t.elapsed();
    let _ = s.set_nodelay(true);
    let _ = s.set_read_timeout(Some(timeout));
    let _ = s.set_write_timeout(Some(timeout));
    let id = ticket.id();
    let mut req = ROUTERBENCH_MAGIC.to_vec();
    req.extend_from_slice(
        &Message::RpmProbe {
            version: rb::VERSION,
            session,
            id,
        }
        .emit(),
    );
    let h = Instant::now();
    s.write_all(&req).map_err(|e| format!("send: {e}"))?;
    match conn::read_msg(&mut s) {
        Ok(Message::RpmProbeReply { id: got }) if got == id => {
            ticket.done(Timing {
                tcp: Some(tcp),
                http: h.elapsed(),
                ..Default::default()
            });
            Ok(())
        }
        Ok(Message::Error { message, .. }) => Err(format!("server refused: {message}")),
        Ok(other) => Err(format!("server answered {other:?}")),
        Err(e) => Err(format!("no answer: {e}")),
    }
}

/// Shared state of one client load connection.
struct LoadState {
    stop: AtomicBool,
    /// Download: data bytes received.
    received: AtomicU64,
    failure: Mutex<Option<String>>,
    /// Self probes waiting for their response: id → (ticket, sender's unsent bytes).
    waiting: Mutex<HashMap<u32, (Ticket, Option<u32>)>>,
}

impl LoadState {
    fn fail(&self, why: String) {
        if !self.stop.load(Ordering::Relaxed) {
            if let Ok(mut f) = self.failure.lock() {
                f.get_or_insert(why);
            }
        }
    }
}

/// A client load connection.
struct RbLoad {
    direction: Direction,
    sock: TcpStream,
    state: Arc<LoadState>,
    /// Upload: probes for the writer thread to queue behind its data.
    to_writer: Option<Mutex<mpsc::Sender<Ticket>>>,
    /// Download: the request writer (the reader thread owns the reading side).
    writer: Mutex<TcpStream>,
}

impl RbLoad {
    fn start(sock: TcpStream, direction: Direction) -> std::io::Result<Self> {
        sock.set_read_timeout(Some(Duration::from_millis(250)))?;
        sock.set_write_timeout(Some(Duration::from_millis(250)))?;
        let state = Arc::new(LoadState {
            stop: AtomicBool::new(false),
            received: AtomicU64::new(0),
            failure: Mutex::new(None),
            waiting: Mutex::new(HashMap::new()),
        });
        let reader = sock.try_clone()?;
        let st = state.clone();
        std::thread::Builder::new()
            .name("rb-rpm-read".into())
            .spawn(move || read_loop(reader, &st))?;
        let mut to_writer = None;
        if direction == Direction::Upload {
            crate::net::sockopt::set_notsent_lowat(&sock, NOTSENT_LOWAT)?;
            sock.set_write_timeout(Some(stream::WRITE_POLL))?;
            let (tx, rx) = mpsc::channel::<Ticket>();
            let w = sock.try_clone()?;
            let st = state.clone();
            std::thread::Builder::new()
                .name("rb-rpm-write".into())
                .spawn(move || write_loop(w, &st, &rx))?;
            to_writer = Some(Mutex::new(tx));
        }
        Ok(Self {
            direction,
            writer: Mutex::new(sock.try_clone()?),
            sock,
            state,
            to_writer,
        })
    }
}

/// Reads the stream: Data is counted, a ProbeResponse completes its probe.
fn read_loop(mut s: TcpStream, st: &LoadState) {
    let mut buf = vec![0u8; 64 * 1024];
    let mut parser = StreamParser::new();
    while !st.stop.load(Ordering::Relaxed) {
        match s.read(&mut buf) {
            Ok(0) => {
                st.fail("the server closed the connection".into());
                return;
            }
            Ok(n) => {
                let r = parser.feed(&buf[..n], |rec| match rec {
                    Record::Data(k) => {
                        st.received.fetch_add(k as u64, Ordering::Relaxed);
                    }
                    Record::ProbeResponse { id, unsent } => {
                        let w = st.waiting.lock().ok().and_then(|mut m| m.remove(&id));
                        if let Some((t, mine)) = w {
                            t.done(Timing {
                                http: t.launched.elapsed(),
                                unsent: mine.or(Some(unsent)),
                                ..Default::default()
                            });
                        }
                    }
                    Record::ProbeRequest { .. } => {}
                });
                if let Err(e) = r {
                    st.fail(format!("bad stream from the server: {e}"));
                    return;
                }
            }
            Err(e) if crate::net::is_timeout(&e) => {}
            Err(e) => {
                st.fail(format!("receive failed: {e}"));
                return;
            }
        }
    }
}

/// Upload: Data records, with each self probe's request queued between two of them.
fn write_loop(mut s: TcpStream, st: &LoadState, probes: &mpsc::Receiver<Ticket>) {
    let data = stream::data_record();
    while !st.stop.load(Ordering::Relaxed) {
        while let Ok(t) = probes.try_recv() {
            let unsent = stream::unsent(&s);
            if let Ok(mut m) = st.waiting.lock() {
                m.insert(t.id(), (t.clone(), Some(unsent)));
            }
            let r = rec::probe_record(false, t.id(), unsent);
            if let Err(e) = stream::write_all_until(&mut s, &r, &st.stop) {
                t.fail(format!("send: {e}"));
                st.fail(format!("send failed: {e}"));
                return;
            }
        }
        if let Err(e) = stream::write_all_until(&mut s, &data, &st.stop) {
            st.fail(format!("send failed: {e}"));
            return;
        }
    }
}

impl LoadConnection for RbLoad {
    fn bytes(&self) -> u64 {
        match self.direction {
            Direction::Download => self.state.received.load(Ordering::Relaxed),
            // What the server acknowledged: bytes in the sender's buffer are not goodput.
            Direction::Upload => crate::net::tcp_info::tcp_info(&self.sock)
                .map(|i| i.bytes_acked)
                .unwrap_or(0),
        }
    }

    fn self_probe(&self, ticket: Ticket) {
        if let Some(tx) = &self.to_writer {
            let sent = tx
                .lock()
                .map(|t| t.send(ticket.clone()).is_ok())
                .unwrap_or(false);
            if !sent {
                ticket.fail("the connection's writer has stopped");
            }
            return;
        }
        if let Ok(mut m) = self.state.waiting.lock() {
            m.insert(ticket.id(), (ticket.clone(), None));
        }
        let r = rec::probe_record(false, ticket.id(), 0);
        let res = match self.writer.lock() {
            Ok(mut w) => stream::write_all_until(&mut w, &r, &self.state.stop),
            Err(_) => Err(std::io::Error::other("writer poisoned")),
        };
        if let Err(e) = res {
            ticket.fail(format!("send: {e}"));
        }
    }

    fn failure(&self) -> Option<String> {
        self.state.failure.lock().ok().and_then(|f| f.clone())
    }

    fn close(&self) {
        self.state.stop.store(true, Ordering::Relaxed);
        let _ = self.sock.shutdown(std::net::Shutdown::Both);
    }
}
