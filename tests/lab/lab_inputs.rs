//! The lab never destroys what it did not build, and checks its inputs before work starts:
//! `lab capacity` next to an existing lab leaves it intact; zero and negative rates or byte
//! counts say "must be positive"; a buffer that would queue for over 10 s earns a warning.

#![cfg(feature = "lab")]

use crate::support::lab::{can_run, guard, unique_name};
use crate::support::{rb, text};

#[test]
fn capacity_next_to_an_existing_lab_leaves_it_intact() {
    if !can_run("capacity_next_to_an_existing_lab", &["ip", "tc", "nft"]) {
        return;
    }
    let name = unique_name("k");
    let _guard = guard(&name);
    let up = rb(&[
        "lab", "up", "--name", &name, "--rate", "20mbit", "--buffer", "64000",
    ]);
    assert!(up.status.success(), "{}", text(&up));
    let cap = rb(&["lab", "capacity", "--name", &name, "--length", "1"]);
    assert_eq!(cap.status.code(), Some(1), "{}", text(&cap));
    let msg = text(&cap);
    assert!(msg.contains("already exists"), "{msg}");
    assert!(msg.contains("lab down"), "says what to do: {msg}");
    let st = rb(&["lab", "status", "--name", &name, "--json"]);
    assert!(st.status.success(), "{}", text(&st));
    let v: serde_json::Value = serde_json::from_slice(&st.stdout).unwrap();
    assert_eq!(v["up"], true, "the user's lab is still up");
    assert_eq!(
        v["config"]["up_rate_bps"], 20_000_000,
        "and still shaped as built"
    );
    assert_eq!(v["config"]["buffer_bytes"], 64000);
}

#[test]
fn bad_lab_inputs_are_refused_before_work_starts() {
    for (args, needle) in [
        (&["--rate", "0"][..], "must be positive"),
        (&["--rate", "-5mbit"], "must be positive"),
        (&["--buffer", "-1"], "must be positive"),
        (&["--down-rate", "0kbit"], "must be positive"),
    ] {
        let mut a = vec!["lab", "up", "--name", "rbnever"];
        a.extend_from_slice(args);
        let o = rb(&a);
        assert!(!o.status.success(), "{args:?} accepted");
        let t = text(&o);
        assert!(t.contains(needle), "{args:?}: {t}");
        assert!(!t.contains("unexpected argument"), "{args:?}: {t}");
    }
}

#[test]
fn a_buffer_that_queues_for_minutes_earns_a_warning() {
    if !can_run("a_buffer_that_queues_for_minutes", &["ip", "tc"]) {
        return;
    }
    let name = unique_name("w");
    let _guard = guard(&name);
    let up = rb(&["lab", "up", "--name", &name, "--rate", "20kbit"]);
    assert!(up.status.success(), "{}", text(&up));
    let err = String::from_utf8_lossy(&up.stderr);
    assert!(err.contains("warning"), "{err}");
    assert!(err.contains("120 s of delay"), "{err}");
    let out = String::from_utf8_lossy(&up.stdout);
    assert!(out.contains("full queue adds 120.0 s"), "{out}");
}
