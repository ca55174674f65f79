//! The stop flag of every measuring command: set when SIGINT/SIGTERM arrives
//! (`crate::util::signals`), so measuring code stops cleanly and keeps what it measured.

/// A stop flag that follows SIGINT/SIGTERM (polled by a small watcher thread).
pub struct SignalFlag(pub std::sync::Arc<std::sync::atomic::AtomicBool>);

impl Default for SignalFlag {
    fn default() -> Self {
        let flag = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let f = flag.clone();
        let _ = std::thread::Builder::new()
            .name("signals".into())
            .spawn(move || {
                while !crate::util::signals::signalled() {
                    std::thread::sleep(std::time::Duration::from_millis(100));
                }
                f.store(true, std::sync::atomic::Ordering::Relaxed);
            });
        SignalFlag(flag)
    }
}

impl SignalFlag {
    /// Whether SIGINT/SIGTERM has arrived (as the watcher last saw it).
    pub fn stopped(&self) -> bool {
        self.0.load(std::sync::atomic::Ordering::Relaxed)
    }
}
