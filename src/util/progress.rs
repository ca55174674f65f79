//! Progress display for anything longer than two seconds. Measuring code reports progress through
//! the `Progress` trait; only the command-line layer decides whether a bar is drawn (stderr, TTY).

use std::io::{IsTerminal, Write};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Receives progress from a long-running measurement. Implementations must be cheap.
pub trait Progress: Send + Sync {
    /// A new phase starts, with `total` steps (0 if unknown).
    fn phase(&self, name: &str, total: u64);
    /// `done` steps of the current phase are complete; `message` is a short live status.
    fn step(&self, done: u64, message: &str);
    /// The current phase ended.
    fn finish(&self);
}

/// Discards all progress (tests, `--quiet`, non-TTY JSON output).
pub struct NoProgress;

impl Progress for NoProgress {
    fn phase(&self, _: &str, _: u64) {}
    fn step(&self, _: u64, _: &str) {}
    fn finish(&self) {}
}

/// A one-line progress display on stderr, redrawn every 200 ms by its own thread; nothing is
/// drawn when stderr is not a terminal. Written here rather than taken from indicatif: the line
/// needs a prefix, a bar or a spinner, the elapsed time and a message, and indicatif with its
/// template engine and terminal crate cost the router builds more than this whole module.
pub struct BarProgress {
    state: Arc<Mutex<BarState>>,
    ticker: Option<std::thread::JoinHandle<()>>,
}

struct BarState {
    prefix: String,
    total: u64,
    pos: u64,
    message: String,
    started: Instant,
    tick: usize,
    /// Something is on the line that `finish` (or the next draw) must clear.
    drawn: bool,
    /// Drawn: from the start (a spinner until the first phase names itself) and from each
    /// phase or step, not after `finish`.
    active: bool,
    stop: bool,
}

impl Default for BarProgress {
    fn default() -> Self {
        Self::new()
    }
}

impl BarProgress {
    pub fn new() -> Self {
        Self::with_terminal(std::io::stderr().is_terminal())
    }

    fn with_terminal(tty: bool) -> Self {
        let state = Arc::new(Mutex::new(BarState {
            prefix: String::new(),
            total: 0,
            pos: 0,
            message: String::new(),
            started: Instant::now(),
            tick: 0,
            drawn: false,
            active: true,
            stop: false,
        }));
        let ticker = tty
            .then(|| {
                let st = Arc::clone(&state);
                std::thread::Builder::new()
                    .name("progress".into())
                    .spawn(move || tick_loop(&st))
                    .ok()
            })
            .flatten();
        Self { state, ticker }
    }

    fn with<R>(&self, f: impl FnOnce(&mut BarState) -> R) -> R {
        let mut g = self.state.lock().unwrap_or_else(|e| e.into_inner());
        f(&mut g)
    }
}

/// Redraws every 200 ms until `stop`; the line is cleared where it ends.
fn tick_loop(state: &Mutex<BarState>) {
    let mut err = std::io::stderr();
    let mut last = String::new();
    loop {
        std::thread::sleep(Duration::from_millis(200));
        let mut g = state.lock().unwrap_or_else(|e| e.into_inner());
        if g.stop {
            clear(&mut g);
            return;
        }
        if !g.active {
            continue;
        }
        g.tick = g.tick.wrapping_add(1);
        let line = render(&g, terminal_width());
        // The same line again (a bar that has not moved) is not rewritten: on a router's
        // serial console or over a slow ssh link every byte counts.
        if g.drawn && line == last {
            continue;
        }
        // \r, the line, then clear to its end: no flicker, and a shorter line leaves no tail.
        // Written under the lock, so that a `finish` cannot clear the line between this draw's
        // render and its write and leave a stale line behind.
        let _ = err.write_all(format!("\r{line}\x1b[K").as_bytes());
        let _ = err.flush();
        g.drawn = true;
        drop(g);
        last = line;
    }
}

/// Erases the drawn line, if there is one.
fn clear(st: &mut BarState) {
    if st.drawn {
        let mut err = std::io::stderr();
        let _ = err.write_all(b"\r\x1b[2K");
        let _ = err.flush();
        st.drawn = false;
    }
}

/// The line for `st`, at most `width` characters: `prefix [=====>    ] pos/len message` when the
/// phase has a length, `prefix ⠂ 1m 05s message` when not.
fn render(st: &BarState, width: usize) -> String {
    const SPINNER: [char; 8] = ['⠁', '⠂', '⠄', '⡀', '⢀', '⠠', '⠐', '⠈'];
    let mut line = String::new();
    if !st.prefix.is_empty() {
        line.push_str(&format!("{:>12} ", st.prefix));
    }
    if st.total > 0 {
        const W: u64 = 30;
        let pos = st.pos.min(st.total);
        let filled = (pos * W / st.total) as usize;
        let mut bar = "=".repeat(filled);
        if filled < W as usize {
            bar.push(if pos > 0 { '>' } else { ' ' });
            bar.push_str(&" ".repeat(W as usize - filled - 1));
        }
        line.push_str(&format!("[{bar}] {}/{}", st.pos, st.total));
    } else {
        let s = st.started.elapsed().as_secs();
        let elapsed = if s >= 60 {
            format!("{}m {:02}s", s / 60, s % 60)
        } else {
            format!("{s}s")
        };
        line.push_str(&format!("{} {elapsed}", SPINNER[st.tick % SPINNER.len()]));
    }
    if !st.message.is_empty() {
        line.push(' ');
        line.push_str(&st.message);
    }
    // Never wrap: a wrapped line cannot be redrawn in place.
    match line.char_indices().nth(width.max(1) - 1) {
        Some((i, _)) => line[..i].to_string(),
        None => line,
    }
}

/// Columns of the terminal on stderr (80 when it cannot be read).
fn terminal_width() -> usize {
    // SAFETY: TIOCGWINSZ writes one `winsize` into the pointer given; a failure leaves it zeroed.
    let mut ws: libc::winsize = unsafe { std::mem::zeroed() };
    let ok = unsafe { libc::ioctl(libc::STDERR_FILENO, libc::TIOCGWINSZ, &mut ws) } == 0;
    if ok && ws.ws_col > 0 {
        ws.ws_col as usize
    } else {
        80
    }
}

impl Progress for BarProgress {
    fn phase(&self, name: &str, total: u64) {
        self.with(|s| {
            s.prefix = name.to_string();
            s.total = total;
            s.pos = 0;
            s.message.clear();
            s.started = Instant::now();
            s.active = true;
        });
    }
    fn step(&self, done: u64, message: &str) {
        self.with(|s| {
            s.pos = done;
            s.message.clear();
            s.message.push_str(message);
            s.active = true;
        });
    }
    fn finish(&self) {
        self.with(|s| {
            clear(s);
            s.active = false;
            s.prefix.clear();
            s.total = 0;
            s.pos = 0;
            s.message.clear();
        });
    }
}

impl Drop for BarProgress {
    fn drop(&mut self) {
        self.with(|s| s.stop = true);
        if let Some(t) = self.ticker.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(prefix: &str, total: u64, pos: u64, message: &str) -> BarState {
        BarState {
            prefix: prefix.into(),
            total,
            pos,
            message: message.into(),
            started: Instant::now(),
            tick: 0,
            drawn: false,
            active: true,
            stop: false,
        }
    }

    #[test]
    fn bar_spinner_and_width() {
        let line = render(&state("crypto", 10, 5, "aes-128-cbc"), 200);
        assert_eq!(
            line,
            format!(
                "{:>12} [{}>{}] 5/10 aes-128-cbc",
                "crypto",
                "=".repeat(15),
                " ".repeat(14)
            )
        );
        assert_eq!(
            render(&state("", 4, 4, ""), 200),
            format!("[{}] 4/4", "=".repeat(30))
        );
        assert_eq!(
            render(&state("", 4, 0, ""), 200),
            format!("[{}] 0/4", " ".repeat(30))
        );
        // A position past the length draws a full bar, never a panic.
        assert!(render(&state("", 3, 9, ""), 200).starts_with(&format!("[{}]", "=".repeat(30))));
        let mut s = state("rrul", 0, 0, "loaded");
        s.started = Instant::now() - Duration::from_secs(65);
        s.tick = 1;
        assert_eq!(render(&s, 200), format!("{:>12} ⠂ 1m 05s loaded", "rrul"));
        // Cut to the terminal's width, on a character boundary (the spinner is 3 bytes).
        let cut = render(&state("", 0, 0, "x".repeat(100).as_str()), 20);
        assert_eq!(cut.chars().count(), 19, "{cut}");
        assert!(cut.starts_with('⠁'));
    }

    #[test]
    fn state_follows_phases_and_a_pipe_gets_no_thread() {
        let p = BarProgress::with_terminal(false);
        assert!(p.ticker.is_none());
        p.phase("loopback", 3);
        p.step(2, "stream 2");
        p.with(|s| {
            assert_eq!(
                (s.prefix.as_str(), s.total, s.pos, s.message.as_str()),
                ("loopback", 3, 2, "stream 2")
            )
        });
        p.finish();
        p.with(|s| assert_eq!((s.total, s.pos, s.drawn, s.active), (0, 0, false, false)));
        p.step(1, "again");
        p.with(|s| assert!(s.active));
        // With a "terminal" the ticker runs, and drop stops it (the join returns) before its
        // first tick has drawn anything.
        let p = BarProgress::with_terminal(true);
        assert!(p.ticker.is_some());
        drop(p);
    }
}
