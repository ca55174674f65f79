//! iperf3 UDP stream hellos on the server's shared UDP port (docs/throughput.md, "UDP streams
//! bound to their test"). One reader owns the port's unconnected socket: the latency probe
//! reflector when it shares the port, else a thread of this acceptor. It offers every datagram
//! that is not a probe here; a hello is taken only when
//!
//! - it is a hello: exactly 4 bytes, `9876` (every iperf3 since 3.17, and little-endian hosts
//!   before) or `6789` (big-endian hosts before 3.17);
//! - a test of the sender's IP address is creating its UDP streams (it said CREATE_STREAMS on
//!   its control connection) and still lacks streams: the test binds the first such sources,
//!   one stream each, and every other source is ignored from then on;
//! - the source is not a *suspect*: a source that said hello when no test of its address
//!   expected one (a real client never does: its hellos answer CREATE_STREAMS) is ignored for
//!   [`SUSPECT_FOR`].
//!
//! Tests from different addresses set up their UDP streams at the same time; tests from one
//! address take turns, since a hello carries nothing that names its test.

use crate::wire::iperf3 as wire;
use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// How long a source that said hello unasked is ignored.
pub const SUSPECT_FOR: Duration = Duration::from_secs(60);
/// Suspect sources remembered at most (a flood from many ports costs bounded memory).
const MAX_SUSPECTS: usize = 4096;

/// Whether a datagram is an iperf3 UDP stream hello.
pub fn is_hello(payload: &[u8]) -> bool {
    payload == wire::UDP_CONNECT_MSG || payload == wire::UDP_CONNECT_REPLY
}

/// What became of an offered datagram.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Offer {
    /// A hello handed to the test that expected it.
    Taken,
    /// Not a hello (the reader counts it as garbage).
    NotHello,
    /// A hello nobody may take (wrong source, unasked, extra, suspect): dropped.
    Ignored(Ignored),
}

/// Why a hello was dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Ignored {
    /// No test of this address is creating UDP streams: the source is a suspect from now on.
    Unasked,
    /// The source said hello unasked earlier.
    Suspect,
    /// The test already bound all its streams (or this source already has one).
    Extra,
}

struct Expectation {
    tx: SyncSender<SocketAddr>,
    wanted: usize,
    bound: Vec<SocketAddr>,
}

#[derive(Default)]
struct Table {
    expect: HashMap<IpAddr, Expectation>,
    suspects: HashMap<SocketAddr, Instant>,
}

/// The shared state: the tests expecting hellos, by client address, and the suspects.
#[derive(Default)]
pub struct HelloTable {
    t: Mutex<Table>,
    freed: Condvar,
}

impl HelloTable {
    /// Offers one datagram that arrived on the port from `from`.
    pub fn offer(&self, from: SocketAddr, payload: &[u8]) -> Offer {
        if !is_hello(payload) {
            return Offer::NotHello;
        }
        let Ok(mut t) = self.t.lock() else {
            return Offer::Ignored(Ignored::Extra);
        };
        let now = Instant::now();
        if let Some(since) = t.suspects.get(&from) {
            if now.duration_since(*since) < SUSPECT_FOR {
                return Offer::Ignored(Ignored::Suspect);
            }
        }
        let ip = crate::net::addr::canonical_ip(from.ip());
        let verdict = match t.expect.get_mut(&ip) {
            Some(e) if e.bound.contains(&from) => return Offer::Ignored(Ignored::Extra),
            Some(e) if e.bound.len() < e.wanted => {
                e.bound.push(from);
                if e.tx.try_send(from).is_ok() {
                    return Offer::Taken;
                }
                Ignored::Extra
            }
            Some(_) => Ignored::Extra,
            None => Ignored::Unasked,
        };
        if t.suspects.len() >= MAX_SUSPECTS {
            t.suspects
                .retain(|_, since| now.duration_since(*since) < SUSPECT_FOR);
            if t.suspects.len() >= MAX_SUSPECTS {
                t.suspects.clear();
            }
        }
        t.suspects.insert(from, now);
        Offer::Ignored(verdict)
    }
}

/// UDP stream set-up on the server port.
pub struct UdpAcceptor {
    /// The address the server listens on (UDP binds the same address and port).
    pub bind: SocketAddr,
    table: Arc<HelloTable>,
    /// Another reader (the probe reflector) owns the port and offers its datagrams.
    shared: bool,
    /// Our own reader thread, started with the first UDP test when the port is not shared.
    reader: Mutex<bool>,
}

impl std::fmt::Debug for UdpAcceptor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UdpAcceptor")
            .field("bind", &self.bind)
            .field("shared", &self.shared)
            .finish()
    }
}

/// A test's turn to take hellos from its client's address; the next test of that address may
/// set up when it drops.
pub struct Expecting<'a> {
    acceptor: &'a UdpAcceptor,
    ip: IpAddr,
    pub rx: Receiver<SocketAddr>,
}

impl Drop for Expecting<'_> {
    fn drop(&mut self) {
        if let Ok(mut t) = self.acceptor.table.t.lock() {
            t.expect.remove(&self.ip);
        }
        self.acceptor.table.freed.notify_all();
    }
}

impl UdpAcceptor {
    pub fn new(bind: SocketAddr) -> Self {
        UdpAcceptor {
            bind,
            table: Arc::new(HelloTable::default()),
            shared: false,
            reader: Mutex::new(false),
        }
    }

    /// Another reader owns the port: the returned table takes its datagrams (`offer`).
    pub fn share(&mut self) -> Arc<HelloTable> {
        self.shared = true;
        self.table.clone()
    }

    /// Waits (until `until`, or until `abandon` says so) for the turn of `ip` and registers a
    /// test that wants `wanted` streams from it; None if the turn did not come.
    pub fn expect(
        &self,
        ip: IpAddr,
        wanted: usize,
        until: Instant,
        abandon: &dyn Fn() -> bool,
    ) -> Option<Expecting<'_>> {
        let ip = crate::net::addr::canonical_ip(ip);
        let mut t = self.table.t.lock().ok()?;
        loop {
            if let std::collections::hash_map::Entry::Vacant(slot) = t.expect.entry(ip) {
                let (tx, rx) = sync_channel(wanted.max(1));
                slot.insert(Expectation {
                    tx,
                    wanted,
                    bound: Vec::with_capacity(wanted),
                });
                return Some(Expecting {
                    acceptor: self,
                    ip,
                    rx,
                });
            }
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() || abandon() {
                return None;
            }
            t = self
                .table
                .freed
                .wait_timeout(t, left.min(Duration::from_millis(100)))
                .ok()?
                .0;
        }
    }

    /// Makes sure a reader owns the port: ours, unless it is shared.
    pub fn ensure_reader(&self) -> std::io::Result<()> {
        if self.shared {
            return Ok(());
        }
        let mut started = self
            .reader
            .lock()
            .map_err(|_| std::io::Error::other("UDP reader state poisoned"))?;
        if *started {
            return Ok(());
        }
        let sock = bind_udp(self.bind)?;
        sock.set_read_timeout(Some(Duration::from_millis(200)))?;
        let table = self.table.clone();
        std::thread::Builder::new()
            .name("iperf3-udp-hello".into())
            .spawn(move || read_hellos(sock, table))?;
        *started = true;
        Ok(())
    }
}

/// The acceptor's own reader: offers what arrives until the acceptor is gone.
fn read_hellos(sock: UdpSocket, table: Arc<HelloTable>) {
    let mut buf = [0u8; 64];
    // The acceptor holds the other reference; when it is dropped, the server is gone.
    while Arc::strong_count(&table) > 1 {
        match sock.recv_from(&mut buf) {
            Ok((n, from)) => {
                let _ = table.offer(from, &buf[..n.min(buf.len())]);
            }
            Err(e) if crate::net::is_timeout(&e) => {}
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            // ICMP errors surface here; anything else: back off briefly, never spin.
            Err(_) => std::thread::sleep(Duration::from_millis(20)),
        }
    }
}

/// An unconnected UDP socket on the server's address and port, SO_REUSEADDR (like iperf3), so
/// connected stream sockets and the next listener can share the port.
pub fn bind_udp(addr: SocketAddr) -> std::io::Result<UdpSocket> {
    use socket2::{Domain, Socket, Type};
    let s = Socket::new(Domain::for_address(addr), Type::DGRAM, None)?;
    s.set_reuse_address(true)?;
    if addr.is_ipv6() {
        let _ = s.set_only_v6(false);
    }
    s.bind(&addr.into())
        .map_err(|e| std::io::Error::new(e.kind(), format!("UDP bind {addr}: {e}")))?;
    Ok(s.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(s: &str) -> SocketAddr {
        s.parse().unwrap()
    }

    #[test]
    fn hellos_bind_to_the_expecting_test_and_unasked_sources_become_suspects() {
        let a = UdpAcceptor::new(addr("127.0.0.1:0"));
        let t = a.table.clone();
        let victim = addr("10.0.0.1:40000");
        let spoof = addr("10.0.0.1:40001");
        // Before the test asks: not taken, and the source is a suspect.
        assert_eq!(t.offer(spoof, b"9876"), Offer::Ignored(Ignored::Unasked));
        assert_eq!(t.offer(victim, b"junk"), Offer::NotHello);
        assert_eq!(t.offer(victim, b"98765"), Offer::NotHello);
        let until = Instant::now() + Duration::from_secs(1);
        let exp = a.expect(victim.ip(), 1, until, &|| false).unwrap();
        assert_eq!(t.offer(spoof, b"9876"), Offer::Ignored(Ignored::Suspect));
        assert_eq!(
            t.offer(addr("10.0.0.2:40000"), b"9876"),
            Offer::Ignored(Ignored::Unasked),
            "another host's hello"
        );
        let mapped = addr("[::ffff:10.0.0.1]:40000");
        assert_eq!(t.offer(mapped, b"9876"), Offer::Taken, "v4-mapped = IPv4");
        assert_eq!(exp.rx.try_recv().unwrap(), mapped);
        assert_eq!(
            t.offer(addr("10.0.0.1:40002"), b"6789"),
            Offer::Ignored(Ignored::Extra),
            "the test has its stream: every other source is ignored"
        );
        // A second test of the same address waits for the first.
        assert!(
            a.expect(
                victim.ip(),
                1,
                Instant::now() + Duration::from_millis(30),
                &|| false
            )
            .is_none()
        );
        drop(exp);
        assert!(a.expect(victim.ip(), 1, until, &|| false).is_some());
        // Another address never waits behind it.
        let _one = a
            .expect(addr("10.0.0.3:1").ip(), 1, until, &|| false)
            .unwrap();
        assert!(
            a.expect(addr("10.0.0.4:1").ip(), 1, Instant::now(), &|| false)
                .is_some()
        );
    }
}
