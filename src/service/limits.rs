//! Who holds what on the server: connections and tests per client address, streams and buffer
//! memory over all tests, and the process's thread count, each against a cap sized for a
//! 128 MB router. Every grant is an RAII guard, so a failing test can never leak a slot.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};

/// The caps (see docs/throughput.md for the defaults and why).
#[derive(Debug, Clone)]
pub struct Caps {
    /// Connections one address may have open before they are classified (cookie or magic
    /// still arriving) or while they serve a routerbench session.
    pub conns_per_host: usize,
    /// iperf3 tests one address may run at once.
    pub tests_per_host: usize,
    /// Data streams (TCP and UDP, both directions) over all running tests.
    pub total_streams: usize,
    /// Stream buffer memory (streams × block size) over all running tests, bytes.
    pub total_buffer_bytes: u64,
    /// Threads of the whole process; no new connection or test is started above it.
    pub max_threads: usize,
}

impl Default for Caps {
    fn default() -> Self {
        Caps {
            conns_per_host: 48,
            tests_per_host: 4,
            total_streams: 96,
            total_buffer_bytes: 48 << 20,
            max_threads: 256,
        }
    }
}

#[derive(Debug, Default)]
struct Held {
    conns: HashMap<IpAddr, usize>,
    tests: HashMap<IpAddr, usize>,
    streams: usize,
    buffer: u64,
}

/// The server's ledger of what every client holds.
#[derive(Debug, Default)]
pub struct Ledger {
    pub caps: Caps,
    held: Mutex<Held>,
}

/// Why a grant was refused (the text goes into the log line).
pub type Refusal = String;

/// A connection slot of one address; released on drop.
#[derive(Debug)]
pub struct ConnGuard {
    ledger: Arc<Ledger>,
    ip: IpAddr,
}

/// A test slot of one address; released on drop.
#[derive(Debug)]
pub struct TestGuard {
    ledger: Arc<Ledger>,
    ip: IpAddr,
}

/// Streams and buffer bytes reserved for one test; released on drop.
#[derive(Debug)]
pub struct StreamGuard {
    ledger: Arc<Ledger>,
    streams: usize,
    buffer: u64,
}

fn dec(map: &mut HashMap<IpAddr, usize>, ip: IpAddr) {
    if let Some(n) = map.get_mut(&ip) {
        *n = n.saturating_sub(1);
        if *n == 0 {
            map.remove(&ip);
        }
    }
}

impl Ledger {
    pub fn new(caps: Caps) -> Self {
        Ledger {
            caps,
            held: Mutex::new(Held::default()),
        }
    }

    /// A new connection from `ip`.
    pub fn connection(self: &Arc<Self>, ip: IpAddr) -> Result<ConnGuard, Refusal> {
        // The v4-mapped form and the plain IPv4 form of an address count as one host.
        let ip = crate::net::addr::canonical_ip(ip);
        let mut h = self
            .held
            .lock()
            .map_err(|_| "ledger poisoned".to_string())?;
        let n = h.conns.entry(ip).or_insert(0);
        if *n >= self.caps.conns_per_host {
            return Err(format!(
                "{n} connections from this address already open (limit {} per host)",
                self.caps.conns_per_host
            ));
        }
        *n += 1;
        Ok(ConnGuard {
            ledger: self.clone(),
            ip,
        })
    }

    /// A new test from `ip`.
    pub fn test(self: &Arc<Self>, ip: IpAddr) -> Result<TestGuard, Refusal> {
        // The v4-mapped form and the plain IPv4 form of an address count as one host.
        let ip = crate::net::addr::canonical_ip(ip);
        let mut h = self
            .held
            .lock()
            .map_err(|_| "ledger poisoned".to_string())?;
        let n = h.tests.entry(ip).or_insert(0);
        if *n >= self.caps.tests_per_host {
            return Err(format!(
                "{n} tests from this address already running (limit {} per host)",
                self.caps.tests_per_host
            ));
        }
        *n += 1;
        Ok(TestGuard {
            ledger: self.clone(),
            ip,
        })
    }

    /// Reserves `streams` streams of `block` bytes each over all tests.
    pub fn streams(self: &Arc<Self>, streams: usize, block: u64) -> Result<StreamGuard, Refusal> {
        let buffer = streams as u64 * block;
        let mut h = self
            .held
            .lock()
            .map_err(|_| "ledger poisoned".to_string())?;
        if h.streams + streams > self.caps.total_streams {
            return Err(format!(
                "{streams} streams asked, {} of {} in use over all tests",
                h.streams, self.caps.total_streams
            ));
        }
        if h.buffer + buffer > self.caps.total_buffer_bytes {
            return Err(format!(
                "{} KiB of stream buffers asked, {} of {} KiB in use over all tests",
                buffer >> 10,
                h.buffer >> 10,
                self.caps.total_buffer_bytes >> 10
            ));
        }
        let threads = thread_count();
        if threads + streams > self.caps.max_threads {
            return Err(format!(
                "{streams} stream threads asked, {threads} of {} threads in use",
                self.caps.max_threads
            ));
        }
        h.streams += streams;
        h.buffer += buffer;
        Ok(StreamGuard {
            ledger: self.clone(),
            streams,
            buffer,
        })
    }

    /// Whether one more thread fits under the cap.
    pub fn thread_room(&self) -> bool {
        thread_count() < self.caps.max_threads
    }

    /// (streams, buffer bytes) held now, for tests and the soak log.
    pub fn in_use(&self) -> (usize, u64) {
        self.held
            .lock()
            .map(|h| (h.streams, h.buffer))
            .unwrap_or((0, 0))
    }
}

impl Drop for ConnGuard {
    fn drop(&mut self) {
        if let Ok(mut h) = self.ledger.held.lock() {
            dec(&mut h.conns, self.ip);
        }
    }
}

impl Drop for TestGuard {
    fn drop(&mut self) {
        if let Ok(mut h) = self.ledger.held.lock() {
            dec(&mut h.tests, self.ip);
        }
    }
}

impl Drop for StreamGuard {
    fn drop(&mut self) {
        if let Ok(mut h) = self.ledger.held.lock() {
            h.streams = h.streams.saturating_sub(self.streams);
            h.buffer = h.buffer.saturating_sub(self.buffer);
        }
    }
}

/// Threads of this process (`/proc/self/status` Threads:), 0 if unreadable.
pub fn thread_count() -> usize {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Threads:"))
                .and_then(|v| v.trim().parse().ok())
        })
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ledger(caps: Caps) -> Arc<Ledger> {
        Arc::new(Ledger::new(caps))
    }

    #[test]
    fn per_host_connections_and_tests_are_released_on_drop() {
        let l = ledger(Caps {
            conns_per_host: 2,
            tests_per_host: 1,
            ..Caps::default()
        });
        let a: IpAddr = "10.0.0.1".parse().unwrap();
        let mapped: IpAddr = "::ffff:10.0.0.1".parse().unwrap();
        let b: IpAddr = "10.0.0.2".parse().unwrap();
        let c1 = l.connection(a).unwrap();
        let _c2 = l.connection(mapped).unwrap();
        assert!(
            l.connection(a).is_err(),
            "v4-mapped counts as the same host"
        );
        assert!(l.connection(b).is_ok(), "another host is not affected");
        drop(c1);
        assert!(l.connection(a).is_ok());
        let t = l.test(a).unwrap();
        assert!(l.test(a).unwrap_err().contains("limit 1 per host"));
        drop(t);
        assert!(l.test(a).is_ok());
    }

    #[test]
    fn streams_and_buffers_are_capped_over_all_tests() {
        let l = ledger(Caps {
            total_streams: 10,
            total_buffer_bytes: 1 << 20,
            max_threads: 100_000,
            ..Caps::default()
        });
        let g = l.streams(8, 1024).unwrap();
        assert!(l.streams(3, 1024).unwrap_err().contains("8 of 10"));
        let g2 = l.streams(2, 1024).unwrap();
        assert_eq!(l.in_use(), (10, 10 * 1024));
        drop((g, g2));
        assert!(l.streams(1, 2 << 20).unwrap_err().contains("KiB"));
        assert_eq!(l.in_use(), (0, 0));
    }

    #[test]
    fn thread_cap_counts_this_process() {
        assert!(thread_count() >= 1);
        let l = ledger(Caps {
            max_threads: 1,
            ..Caps::default()
        });
        assert!(!l.thread_room());
        assert!(l.streams(1, 1).unwrap_err().contains("threads"));
    }
}
