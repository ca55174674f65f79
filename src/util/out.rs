//! Writing a command's output to stdout/stderr without panicking when the reader went away
//! (`routerbench client … | head -1`): like iperf3, a closed pipe ends the command quietly.
//!
//! `println!` panics on `EPIPE` (Rust ignores SIGPIPE), so the command layer prints through
//! [`outln!`](crate::outln) / [`out!`](crate::out) / [`errln!`](crate::errln) /
//! [`err!`](crate::err) instead.

use std::io::Write;

/// Exit status when stdout was closed by its reader: the reader got what it wanted.
pub const CLOSED_PIPE_EXIT: i32 = 0;

/// Writes `text` to stdout and flushes; a closed pipe exits the process quietly with status 0.
pub fn stdout(text: std::fmt::Arguments<'_>) {
    let mut o = std::io::stdout().lock();
    if let Err(e) = o.write_fmt(text).and_then(|()| o.flush()) {
        closed(&e);
    }
}

/// Writes `text` to stderr; any error (closed stderr) is ignored: there is nowhere to say it.
pub fn stderr(text: std::fmt::Arguments<'_>) {
    let mut o = std::io::stderr().lock();
    let _ = o.write_fmt(text).and_then(|()| o.flush());
}

fn closed(e: &std::io::Error) {
    if is_closed_pipe(e) {
        std::process::exit(CLOSED_PIPE_EXIT);
    }
    // Another write error (a full disk behind a redirect): say it once on stderr and go on;
    // the command's exit status still reports the measurement.
    stderr(format_args!("routerbench: cannot write to stdout: {e}\n"));
}

/// Whether a write failed because the reading end is gone.
pub fn is_closed_pipe(e: &std::io::Error) -> bool {
    e.kind() == std::io::ErrorKind::BrokenPipe || e.raw_os_error() == Some(libc::EPIPE)
}

/// `print!` that ends the process quietly on a closed stdout.
#[macro_export]
macro_rules! out {
    ($($arg:tt)*) => { $crate::util::out::stdout(format_args!($($arg)*)) };
}

/// `println!` that ends the process quietly on a closed stdout.
#[macro_export]
macro_rules! outln {
    () => { $crate::util::out::stdout(format_args!("\n")) };
    ($($arg:tt)*) => { $crate::util::out::stdout(format_args!("{}\n", format_args!($($arg)*))) };
}

/// `eprint!` that never panics.
#[macro_export]
macro_rules! err {
    ($($arg:tt)*) => { $crate::util::out::stderr(format_args!($($arg)*)) };
}

/// `eprintln!` that never panics.
#[macro_export]
macro_rules! errln {
    () => { $crate::util::out::stderr(format_args!("\n")) };
    ($($arg:tt)*) => { $crate::util::out::stderr(format_args!("{}\n", format_args!($($arg)*))) };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognises_a_closed_pipe() {
        assert!(is_closed_pipe(&std::io::Error::from_raw_os_error(
            libc::EPIPE
        )));
        assert!(is_closed_pipe(&std::io::Error::from(
            std::io::ErrorKind::BrokenPipe
        )));
        assert!(!is_closed_pipe(&std::io::Error::from_raw_os_error(
            libc::ENOSPC
        )));
    }
}
