//! `lab capacity` end to end, as root: the unshaped lab forwards with and without NAT, with 1 and
//! 4 flows, and the result lands in the result model. Figures are compared in
//! bench/lab-capacity.sh, never asserted here.

#![cfg(feature = "lab")]

use crate::support::lab::{can_run, guard, unique_name};

#[test]
fn capacity_matrix_through_the_binary() {
    // It loads the machine or measures against theory: not at once with the others that do
    // (tests/support/mod.rs, alone).
    let _alone = crate::support::alone();
    if !can_run(
        "capacity_matrix_through_the_binary",
        &["ip", "tc", "nft", "iperf3"],
    ) {
        return;
    }
    let name = unique_name("k");
    let _guard = guard(&name);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_routerbench"))
        .args([
            "lab", "capacity", "--name", &name, "--length", "2", "--json",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: routerbench::results::RunResult = serde_json::from_slice(&out.stdout).unwrap();
    let lab = v.lab.expect("lab section");
    let cap = lab.capacity.expect("capacity section");
    assert_eq!(cap.points.len(), 4);
    for (i, (nat, flows)) in [(false, 1), (false, 4), (true, 1), (true, 4)]
        .iter()
        .enumerate()
    {
        let p = &cap.points[i];
        assert_eq!((p.nat, p.flows), (*nat, *flows));
        assert!(p.goodput_bps > 0.0 && p.seconds > 1.0, "{p:?}");
    }
    assert_eq!(lab.config.up_rate_bps, None, "capacity runs unshaped");
    assert!(lab.theory.up_queue_delay_ms.is_none());
    // Without --keep the command removes its lab.
    assert!(!routerbench::lab::netns::exists(&format!("{name}-rtr")));
}
