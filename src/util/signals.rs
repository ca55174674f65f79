//! SIGINT/SIGTERM for every measuring command (a second one exits at once) and SIGHUP (reopen
//! the log file) for the daemon: the handlers only set flags; loops poll them (every loop here
//! wakes at least every few hundred milliseconds).

use std::sync::atomic::{AtomicBool, Ordering};

static SIGNALLED: AtomicBool = AtomicBool::new(false);
static HANGUP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_hangup(_: libc::c_int) {
    HANGUP.store(true, Ordering::SeqCst);
}

/// Exit status of a second SIGINT/SIGTERM (128 + SIGINT, the shell's convention).
pub const SECOND_SIGNAL_EXIT: i32 = 130;

extern "C" fn on_signal(_: libc::c_int) {
    // The first signal asks for a clean stop (what was measured is kept); a second one, from
    // a user who does not want to wait for the current step, ends the process at once.
    if SIGNALLED.swap(true, Ordering::SeqCst) {
        // SAFETY: _exit(2) is async-signal-safe.
        unsafe { libc::_exit(SECOND_SIGNAL_EXIT) };
    }
}

/// Installs the handler for SIGINT and SIGTERM (idempotent).
pub fn install() {
    // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
    unsafe {
        let handler = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
        libc::signal(libc::SIGINT, handler);
        libc::signal(libc::SIGTERM, handler);
    }
}

/// Whether SIGINT or SIGTERM arrived since start.
pub fn signalled() -> bool {
    SIGNALLED.load(Ordering::SeqCst)
}

/// Installs the SIGHUP handler (the server's log reopen); without it SIGHUP ends the process.
pub fn install_hangup() {
    // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
    unsafe {
        let handler = on_hangup as extern "C" fn(libc::c_int) as libc::sighandler_t;
        libc::signal(libc::SIGHUP, handler);
    }
}

/// Whether SIGHUP arrived since the last call (clears it).
pub fn take_hangup() -> bool {
    HANGUP.swap(false, Ordering::SeqCst)
}
