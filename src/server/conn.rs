//! One accepted connection: its first bytes decide between an iperf3 test (control or data
//! connection, routed by cookie), a routerbench-protocol hand-off and an HTTP request (an
//! upper-case first byte: `http`); refusals within the log's budget.

use super::broker::Route;
use super::{ServerEvent, ServerObserver, Shared, log_refusal};
use crate::iperf3::session::{self, SessionEnv, StreamBroker};
use crate::results::throughput::ThroughputResult;
use crate::service::fair::{self, Seat};
use crate::wire::ROUTERBENCH_MAGIC;
use crate::wire::iperf3::{COOKIE_SIZE, Cookie, State};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Instant;

fn read_prefix(stream: &mut TcpStream, buf: &mut [u8], deadline: Instant) -> Result<(), String> {
    let mut got = 0;
    while got < buf.len() {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(format!(
                "sent {got} of {} first bytes, then nothing: timed out",
                buf.len()
            ));
        }
        let _ = stream.set_read_timeout(Some(left));
        match stream.read(&mut buf[got..]) {
            Ok(0) => return Err(format!("closed after {got} bytes")),
            Ok(n) => got += n,
            Err(e) if crate::iperf3::control::is_timeout(&e) => {}
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(format!("read error: {e}")),
        }
    }
    Ok(())
}

/// A connection refused at the accept (a cap reached): one byte `0xff` and a close. iperf3
/// clients print "the server is busy running a test. try again later"; routerbench clients
/// read it as "busy" too (the byte starts no frame of theirs).
pub(super) fn refuse_at_accept(mut stream: TcpStream) {
    let _ = stream.write(&[crate::wire::BUSY_BYTE]);
}

/// Why a handshake read failed: the connection's seat was taken by a lighter host's
/// newcomer (its read side was shut for that), or the peer's own failure.
fn or_evicted(seat: &Seat, why: String) -> String {
    if seat.is_evicted() {
        "evicted in its handshake: the server was full and a host holding fewer connections \
         needed the slot"
            .into()
    } else {
        why
    }
}

fn deny(sh: &Shared, mut stream: TcpStream, peer: SocketAddr, reason: String) {
    let _ = stream.write_all(&[State::AccessDenied.to_byte()]);
    sh.refused.fetch_add(1, Ordering::Relaxed);
    log_refusal(sh, peer, reason);
}

pub(super) fn handle_connection(
    sh: &Arc<Shared>,
    mut stream: TcpStream,
    peer: SocketAddr,
    seq: u64,
    seat: Seat,
    accepted_at: Instant,
) {
    let _ = stream.set_nonblocking(false);
    // One deadline for the whole first message: the cookie, or the magic and the first frame.
    let deadline = accepted_at + sh.cfg.first_bytes_timeout;
    if !sh.cfg.iperf3 {
        return routerbench_only(sh, stream, peer, deadline, seat);
    }
    let mut first = [0u8; 1];
    if let Err(why) = read_prefix(&mut stream, &mut first, deadline) {
        sh.refused.fetch_add(1, Ordering::Relaxed);
        log_refusal(sh, peer, format!("no cookie: {}", or_evicted(&seat, why)));
        return;
    }
    if Cookie::is_routerbench(first[0]) {
        let mut magic = [0u8; ROUTERBENCH_MAGIC.len()];
        magic[0] = first[0];
        let read = read_prefix(&mut stream, &mut magic[1..], deadline);
        let error = match read {
            Err(why) => Some(format!("routerbench magic: {}", or_evicted(&seat, why))),
            Ok(()) if magic != ROUTERBENCH_MAGIC => {
                Some("first byte 0xFF but not the routerbench magic".into())
            }
            Ok(()) => hand_over(sh, stream, &magic, deadline, seat),
        };
        return report_handoff(sh, peer, error);
    }
    if crate::wire::http::starts_request(first[0]) {
        return super::http::serve(sh, stream, peer, first[0], deadline, seat);
    }
    let mut cookie_buf = [0u8; COOKIE_SIZE];
    cookie_buf[0] = first[0];
    if let Err(why) = read_prefix(&mut stream, &mut cookie_buf[1..], deadline) {
        sh.refused.fetch_add(1, Ordering::Relaxed);
        log_refusal(
            sh,
            peer,
            format!("incomplete cookie: {}", or_evicted(&seat, why)),
        );
        return;
    }
    let cookie = Cookie(cookie_buf);
    if !cookie.is_plausible() {
        // Not an iperf3 client: close at once, one log line, a strike for its host.
        sh.refused.fetch_add(1, Ordering::Relaxed);
        log_refusal(
            sh,
            peer,
            "garbage instead of an iperf3 cookie: closed".into(),
        );
        return;
    }
    // Classified: a data stream or a test holds no connection seat any more (a test takes one
    // in the test pool; routerbench sessions keep theirs, above, for their whole life).
    seat.succeed();
    match sh.broker.route(&cookie) {
        Route::Stream(tx) => {
            if let Err(e) = tx.send((seq, stream)) {
                deny(
                    sh,
                    (e.0).1,
                    peer,
                    "data stream for a test that stopped accepting".into(),
                );
            }
        }
        Route::Deny => deny(
            sh,
            stream,
            peer,
            "data connection for a running test (or a duplicate cookie)".into(),
        ),
        Route::NewTest => run_test(sh, stream, peer, cookie),
    }
}

/// A server of the routerbench protocol alone: the whole magic within the deadline, or a
/// refusal.
fn routerbench_only(
    sh: &Shared,
    mut stream: TcpStream,
    peer: SocketAddr,
    deadline: Instant,
    seat: Seat,
) {
    let mut magic = [0u8; ROUTERBENCH_MAGIC.len()];
    let refusal = match read_prefix(&mut stream, &mut magic, deadline) {
        Err(why) => format!(
            "no magic within the handshake timeout: {}",
            or_evicted(&seat, why)
        ),
        Ok(()) if magic != ROUTERBENCH_MAGIC => {
            format!("not a routerbench client (first bytes {magic:02x?})")
        }
        Ok(()) => {
            return report_handoff(sh, peer, hand_over(sh, stream, &magic, deadline, seat));
        }
    };
    sh.refused.fetch_add(1, Ordering::Relaxed);
    log_refusal(sh, peer, refusal);
}

/// Hands a connection that sent the routerbench magic to the handler, with the rest of its
/// handshake deadline and its connection seat; its error, if any.
fn hand_over(
    sh: &Shared,
    stream: TcpStream,
    magic: &[u8],
    deadline: Instant,
    seat: Seat,
) -> Option<String> {
    let Some(h) = &sh.handler else {
        return Some("routerbench protocol not enabled on this server".into());
    };
    let _ = stream.set_read_timeout(None);
    h.handle(crate::service::Handoff {
        stream,
        prefix: magic.to_vec(),
        deadline,
        seat: Some(seat),
    })
    .err()
    .map(|e| e.to_string())
}

fn report_handoff(sh: &Shared, peer: SocketAddr, error: Option<String>) {
    // Failed handoffs are refusals too: within the log's budget.
    if error.is_none() || sh.logcap.admit() {
        sh.observer.event(&ServerEvent::Handoff { peer, error });
    }
}

/// Hands a test's streams and intervals to the observer (the server's interval lines).
struct ObserverIntervals<'a> {
    observer: &'a dyn ServerObserver,
    peer: SocketAddr,
    first: AtomicBool,
    parallel: AtomicUsize,
}

impl crate::iperf3::IntervalSink for ObserverIntervals<'_> {
    fn started(&self, connected: &[crate::results::throughput::Connected]) {
        // Bidir connects 2·P streams; `interval` halves it.
        self.parallel.store(connected.len(), Ordering::Relaxed);
        self.observer.event(&ServerEvent::StreamsConnected {
            peer: self.peer,
            connected,
        });
    }
    fn interval(&self, interval: &crate::results::throughput::Interval) {
        let bidir = interval.sum_bidir_reverse.is_some();
        let n = self.parallel.load(Ordering::Relaxed);
        self.observer.event(&ServerEvent::Interval {
            peer: self.peer,
            interval,
            first: self.first.swap(false, Ordering::Relaxed),
            parallel: if bidir { n / 2 } else { n },
        });
    }
    fn results(&self, result: &ThroughputResult) {
        self.observer.event(&ServerEvent::TestDone {
            peer: self.peer,
            result,
        });
    }
}

fn run_test(sh: &Arc<Shared>, stream: TcpStream, peer: SocketAddr, cookie: Cookie) {
    let started = sh.started_tests.load(Ordering::Relaxed);
    if sh.cfg.max_tests.is_some_and(|m| started >= m) || sh.stop.load(Ordering::Relaxed) {
        return deny(
            sh,
            stream,
            peer,
            "server is stopping (test limit reached)".into(),
        );
    }
    let admission = sh
        .tests
        .acquire(peer.ip(), fair::shut_reader(&stream, None));
    let seat = match admission {
        Ok(a) => a,
        Err(why) => return deny(sh, stream, peer, format!("busy: {why}")),
    };
    if let Some(ip) = seat.evicted {
        log_refusal(
            sh,
            peer,
            format!(
                "test slots full: took the slot of a test of {} still in its set-up (that host \
                 holds the most)",
                crate::net::addr::display_ip(ip)
            ),
        );
    }
    let seat = seat.seat;
    sh.active_tests.fetch_add(1, Ordering::Relaxed);
    if !sh.broker.claim(&cookie) {
        sh.active_tests.fetch_sub(1, Ordering::Relaxed);
        return deny(sh, stream, peer, "duplicate cookie".into());
    }
    sh.started_tests.fetch_add(1, Ordering::Relaxed);
    sh.observer.event(&ServerEvent::TestStarted { peer });
    let render = |r: &ThroughputResult| sh.observer.server_output(r);
    let sink = ObserverIntervals {
        observer: sh.observer.as_ref(),
        peer,
        first: AtomicBool::new(true),
        parallel: AtomicUsize::new(1),
    };
    let env = SessionEnv {
        cfg: &sh.cfg.session,
        broker: &sh.broker,
        udp: &sh.udp,
        stop: &sh.stop,
        sink: &sink,
        render_text: &render,
        ledger: &sh.ledger,
        auth: sh.cfg.auth.as_deref(),
        seat: Some(&seat),
    };
    let outcome = crate::iperf3::control::Control::new(stream, sh.cfg.session.control_timeout)
        .and_then(|ctl| session::serve(ctl, cookie, &env));
    match outcome {
        Ok(result) => {
            // The observer had TestDone from the session (`IntervalSink::results`).
            sh.done.fetch_add(1, Ordering::Relaxed);
            if sh.keep_results {
                if let Ok(mut r) = sh.results.lock() {
                    r.push(result);
                }
            }
        }
        Err(error) => {
            sh.broker.close(&cookie);
            sh.failed.fetch_add(1, Ordering::Relaxed);
            sh.observer.event(&ServerEvent::TestFailed {
                peer,
                error: &error,
            });
        }
    }
    sh.active_tests.fetch_sub(1, Ordering::Relaxed);
}
