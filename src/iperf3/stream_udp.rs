//! UDP data streams: the sender numbers and stamps every datagram and hands the kernel a batch
//! per call (GSO, else sendmmsg); the receiver takes batches (GRO, recvmmsg) and runs iperf3's
//! loss/jitter arithmetic on each datagram (docs/protocols/iperf3.md §8, docs/throughput.md).

use super::{
    Counters, StopState, Tally, UdpRecvStats, WORKER_TICK, WorkerConfig, monotonic_now, pace,
    payload,
};
use crate::iperf3::control::is_timeout;
use crate::net::udp_batch::{MAX_SEGMENTS, UdpRx, UdpTx};
use crate::wire::iperf3::UdpHeader;
use std::net::UdpSocket;
use std::sync::atomic::AtomicBool;
use std::sync::atomic::Ordering;
use std::time::Instant;

/// Datagrams one call may carry at `rate` bit/s: at most about 250 µs of the rate, so a paced
/// stream does not overflow a plain receiver's default socket buffer in one burst (1 datagram
/// per call below ~90 Mbit/s at 1400 B, as iperf3 sends); a full batch when unlimited.
pub fn batch_for(rate: u64, len: usize) -> usize {
    if rate == 0 {
        return MAX_SEGMENTS;
    }
    let per_quarter_ms = rate / 8 / 4000 / len.max(1) as u64;
    (per_quarter_ms as usize).clamp(1, MAX_SEGMENTS)
}

/// How the stream's datagrams went out, for the result's notes.
fn method_note(gso: bool, batch: usize, what: &str) -> Option<String> {
    match (gso, batch > 1) {
        (true, _) => Some(format!(
            "UDP {what}: GSO (UDP_SEGMENT), up to {batch} per call"
        )),
        (false, true) => Some(format!("UDP {what}: sendmmsg, up to {batch} per call")),
        (false, false) => None,
    }
}

pub(super) fn udp_send(
    s: UdpSocket,
    cfg: &WorkerConfig,
    c: &Counters,
    done: &AtomicBool,
) -> std::io::Result<Option<String>> {
    s.set_write_timeout(Some(WORKER_TICK))?;
    let buf = payload(cfg.len, cfg.repeating_payload);
    let header = if cfg.wide {
        crate::wire::iperf3::udp::HEADER_LEN_64
    } else {
        crate::wire::iperf3::udp::HEADER_LEN_32
    };
    if buf.len() < header {
        return Err(std::io::Error::other("UDP block shorter than its header"));
    }
    let batch = if cfg.udp_offload {
        batch_for(cfg.rate, cfg.len)
    } else {
        1
    };
    let mut tx = UdpTx::new(&s, &buf, batch, cfg.udp_offload);
    let start = Instant::now();
    let mut seq: u64 = 0;
    let mut tally = Tally::new(c);
    while !done.load(Ordering::Relaxed) {
        // Each datagram of the batch is claimed against a `-n`/`-k` budget on its own.
        let mut k = 0;
        while k < tx.capacity() && cfg.budget.as_ref().is_none_or(|b| b.claim(cfg.len as u64)) {
            k += 1;
        }
        if k == 0 {
            break;
        }
        let (sec, usec, _) = monotonic_now();
        for i in 0..k {
            let h = UdpHeader {
                sec,
                usec,
                pcount: seq + 1 + i as u64,
                wide: cfg.wide,
            };
            // The slot is `len` bytes, checked above to hold the header.
            let _ = h.emit(tx.slot(i));
        }
        match tx.send(&s, k) {
            Ok(m) => {
                seq += m as u64;
                tally.add((m * cfg.len) as u64, m as u64);
            }
            // ENOBUFS or a refused port (ICMP) must not end the test: iperf3 goes on too.
            // The sequence number is not advanced for datagrams not sent (iperf3 3.18+).
            Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) => {}
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => {}
            Err(e) if is_timeout(&e) || e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
        pace(cfg.rate, tally.bytes, start, done);
    }
    Ok(method_note(tx.gso(), tx.capacity(), "send"))
}

/// Bytes of receive buffer a UDP stream uses per call (GRO: two 64 KiB super-datagrams).
const RX_BUDGET: usize = 128 << 10;

pub(super) fn udp_recv(
    s: UdpSocket,
    cfg: &WorkerConfig,
    c: &Counters,
    done: &AtomicBool,
) -> std::io::Result<Option<String>> {
    s.set_read_timeout(Some(WORKER_TICK))?;
    let budget = if cfg.udp_offload { RX_BUDGET } else { 0 };
    let mut rx = UdpRx::new(&s, cfg.len.max(1), cfg.udp_offload, budget);
    let mut stop = StopState { drain_until: None };
    let mut tally = Tally::new(c);
    // The loss figures live here and are published with the byte counts.
    let mut st: UdpRecvStats = c.udp_snapshot();
    let publish = |st: &mut UdpRecvStats| {
        if c.reset_jitter.swap(false, Ordering::Relaxed) {
            st.reset_jitter();
        }
        if let Ok(mut g) = c.udp_rx.lock() {
            *g = *st;
        }
    };
    let wide = cfg.wide;
    while stop.keep_going(done, cfg.drain, || {
        let _ = s.set_read_timeout(Some(crate::iperf3::stream::DRAIN_IDLE));
    }) {
        let mut bytes = 0u64;
        let mut datagrams = 0u64;
        let mut arrival = None;
        let r = rx.recv(&s, |d| {
            let Ok(h) = UdpHeader::parse(d, wide) else {
                return; // a stray hello or runt datagram: not data
            };
            // One clock read per batch: the datagrams of one call arrived together.
            let at = *arrival.get_or_insert_with(|| monotonic_now().2);
            bytes += d.len() as u64;
            datagrams += 1;
            st.on_datagram(h.pcount as i64, h.sent_secs(), at);
        });
        match r {
            Ok(_) => {
                if datagrams > 0 && tally.add(bytes, datagrams) {
                    publish(&mut st);
                }
            }
            Err(e) if is_timeout(&e) && stop.draining() => break,
            Err(e) if is_timeout(&e) || e.kind() == std::io::ErrorKind::Interrupted => {
                tally.flush();
                publish(&mut st);
            }
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => {}
            Err(e) => {
                publish(&mut st);
                return Err(e);
            }
        }
    }
    publish(&mut st);
    Ok(rx
        .gro()
        .then(|| "UDP receive: GRO (UDP_GRO) and recvmmsg".to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_follow_the_rate() {
        assert_eq!(batch_for(0, 1400), 64);
        assert_eq!(batch_for(1_000_000, 1400), 1);
        assert_eq!(batch_for(100_000_000, 1400), 2);
        assert_eq!(batch_for(2_000_000_000, 1400), 44);
        assert_eq!(batch_for(10_000_000_000, 1400), 64);
    }
}
