//! Inputs are checked before any work starts: negative numbers say "must be positive" (never
//! "unexpected argument"), zero where it makes no sense is refused, an unwritable output
//! directory fails before the run measures anything.

use crate::support::rb;

fn refused(args: &[&str], needle: &str) {
    let o = rb(args);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{args:?} was accepted");
    assert!(err.contains(needle), "{args:?}: {err}");
    assert!(!err.contains("unexpected argument"), "{args:?}: {err}");
    assert!(!err.contains("panicked"), "{args:?}: {err}");
}

#[test]
fn negative_and_zero_numbers_are_named() {
    // 127.0.0.1:1 is never contacted: every case fails before connecting.
    for (args, needle) in [
        (
            &["client", "127.0.0.1", "-p", "1", "-t", "-5"][..],
            "must be positive",
        ),
        (
            &["client", "127.0.0.1", "-p", "1", "-n", "-3"],
            "must be positive",
        ),
        (
            &["client", "127.0.0.1", "-p", "1", "-k", "-1"],
            "must be positive",
        ),
        (
            &["client", "127.0.0.1", "-p", "1", "-b", "-5M"],
            "must be positive",
        ),
        (
            &["client", "127.0.0.1", "-p", "1", "-l", "0"],
            "must be positive",
        ),
        (
            &["client", "127.0.0.1", "-p", "1", "-i", "-1"],
            "-i must be",
        ),
        (&["client", "127.0.0.1", "-p", "0"], "not in 1..=65535"),
        (&["client", "127.0.0.1", "-p", "1", "-f", "x"], "k, m, g"),
        (
            &["rrul", "127.0.0.1", "-p", "1", "--length", "-5"],
            "must be positive",
        ),
        (
            &["rrul", "127.0.0.1", "-p", "1", "--step", "0"],
            "must be positive",
        ),
        (
            &["rrul", "127.0.0.1", "-p", "1", "--delay", "-1"],
            "must be positive",
        ),
        (
            &["server", "-p", "1", "--max-concurrent", "0"],
            "would refuse every client",
        ),
        (&["server", "-p", "1", "-i", "-2"], "-i must be"),
        (&["run", "--loopback-seconds", "0"], "must be positive"),
    ] {
        refused(args, needle);
    }
}

#[test]
fn unwritable_outputs_fail_before_measuring() {
    let o = rb(&["run", "--out-dir", "/proc/routerbench-nope", "-q"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(err.contains("--out-dir /proc/routerbench-nope"), "{err}");
    assert!(
        o.stdout.is_empty(),
        "nothing was measured: {}",
        String::from_utf8_lossy(&o.stdout)
    );
    refused(
        &[
            "rrul",
            "127.0.0.1",
            "-p",
            "1",
            "--flent",
            "/proc/routerbench-nope/x.flent.gz",
        ],
        "does not exist",
    );
}

#[test]
fn iperf3_spellings_are_accepted() {
    // `-c HOST` as iperf3 has it, and `server -s`, both reach their own work (here: the
    // refused connection, and the -i check that runs before binding).
    let o = rb(&["client", "-c", "127.0.0.1", "-p", "1", "-t", "1"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1));
    assert!(err.contains("cannot connect"), "{err}");
    refused(&["server", "-s", "-p", "1", "-i", "100"], "-i must be");
    let help = rb(&["server", "--help"]);
    let text = String::from_utf8_lossy(&help.stdout);
    for flag in [
        "--daemon",
        "--pidfile",
        "--logfile",
        "--verbose",
        "--format",
        "--forceflush",
        "--timestamps",
        "--one-off",
    ] {
        assert!(text.contains(flag), "server --help lacks {flag}");
    }
    let help = rb(&["client", "--help"]);
    let text = String::from_utf8_lossy(&help.stdout);
    for flag in [
        "--client",
        "--cport",
        "--format",
        "--logfile",
        "--timestamps",
    ] {
        assert!(text.contains(flag), "client --help lacks {flag}");
    }
}
