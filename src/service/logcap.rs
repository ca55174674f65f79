//! A cap on refusal log lines: a flood of garbage connections is refused at line rate, and one
//! line each would fill a router's log (the soak's hostile clients made 130 000 a minute). At
//! most `per_sec` lines a second are written; the rest are counted and reported in one line.

use std::sync::Mutex;
use std::time::{Duration, Instant};

#[derive(Debug)]
struct Window {
    start: Instant,
    lines: u32,
    suppressed: u64,
}

/// The refusal-line budget of one server.
#[derive(Debug)]
pub struct LogCap {
    per_sec: u32,
    w: Mutex<Window>,
}

impl LogCap {
    pub fn new(per_sec: u32) -> Self {
        LogCap {
            per_sec,
            w: Mutex::new(Window {
                start: Instant::now(),
                lines: 0,
                suppressed: 0,
            }),
        }
    }

    /// Whether one more line may be written now.
    pub fn admit(&self) -> bool {
        let Ok(mut w) = self.w.lock() else {
            return false;
        };
        if w.start.elapsed() >= Duration::from_secs(1) && w.suppressed == 0 {
            w.start = Instant::now();
            w.lines = 0;
        }
        if w.lines < self.per_sec {
            w.lines += 1;
            true
        } else {
            w.suppressed += 1;
            false
        }
    }

    /// Once a window with suppressed lines is over: how many were not written (then resets).
    pub fn flush(&self) -> Option<u64> {
        let mut w = self.w.lock().ok()?;
        if w.suppressed == 0 || w.start.elapsed() < Duration::from_secs(1) {
            return None;
        }
        let n = w.suppressed;
        *w = Window {
            start: Instant::now(),
            lines: 0,
            suppressed: 0,
        };
        Some(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caps_lines_per_second_and_counts_the_rest() {
        let c = LogCap::new(3);
        let admitted = (0..10).filter(|_| c.admit()).count();
        assert_eq!(admitted, 3);
        assert_eq!(c.flush(), None, "the window is not over yet");
        std::thread::sleep(Duration::from_millis(1010));
        assert!(
            !c.admit(),
            "a window with suppressed lines stays closed until flushed"
        );
        assert_eq!(c.flush(), Some(8));
        assert!(c.admit());
        assert_eq!(c.flush(), None);
    }
}
