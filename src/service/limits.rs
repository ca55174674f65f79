//! Who holds what on the server: streams and buffer memory over all tests and the process's
//! thread count, each against a cap sized for a 128 MB router, and the caps of the
//! connection and test pools (`fair.rs` shares those between hosts). Every grant is an RAII
//! guard, so a failing test can never leak a slot.

use std::sync::{Arc, Mutex};

/// The caps (see docs/throughput.md for the defaults and why).
#[derive(Debug, Clone)]
pub struct Caps {
    /// Connections one address may have open before they are classified (cookie or magic
    /// still arriving) or while they serve a routerbench session (below the server-wide cap).
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

/// Streams and buffer bytes reserved for one test; released on drop.
#[derive(Debug)]
pub struct StreamGuard {
    ledger: Arc<Ledger>,
    streams: usize,
    buffer: u64,
}

impl Ledger {
    pub fn new(caps: Caps) -> Self {
        Ledger {
            caps,
            held: Mutex::new(Held::default()),
        }
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
