//! Progress display for anything longer than two seconds. Measuring code reports progress through
//! the `Progress` trait; only the command-line layer decides whether a bar is drawn (stderr, TTY).

use std::time::Duration;

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

/// An indicatif bar on stderr; hidden when stderr is not a terminal.
pub struct BarProgress {
    bar: indicatif::ProgressBar,
}

impl Default for BarProgress {
    fn default() -> Self {
        Self::new()
    }
}

impl BarProgress {
    pub fn new() -> Self {
        let bar =
            indicatif::ProgressBar::with_draw_target(None, indicatif::ProgressDrawTarget::stderr());
        // Until the first phase names itself: a spinner, not an empty bar.
        if let Ok(style) = indicatif::ProgressStyle::with_template("{spinner} {elapsed} {msg}") {
            bar.set_style(style);
        }
        bar.enable_steady_tick(Duration::from_millis(200));
        Self { bar }
    }
}

impl Progress for BarProgress {
    fn phase(&self, name: &str, total: u64) {
        let style = if total > 0 {
            indicatif::ProgressStyle::with_template("{prefix:>12} [{bar:30}] {pos}/{len} {msg}")
        } else {
            indicatif::ProgressStyle::with_template("{prefix:>12} {spinner} {elapsed} {msg}")
        }
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
        .progress_chars("=> ");
        self.bar.reset();
        self.bar.set_style(style);
        self.bar.set_length(total);
        self.bar.set_position(0);
        self.bar.set_prefix(name.to_string());
        self.bar.set_message(String::new());
    }
    fn step(&self, done: u64, message: &str) {
        self.bar.set_position(done);
        self.bar.set_message(message.to_string());
    }
    fn finish(&self) {
        self.bar.finish_and_clear();
    }
}
