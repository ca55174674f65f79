//! `lab measure`, as root: bulk TCP with the lab's UDP echo probes alongside (as
//! docs/protocols/netns-lab.md's script does with iperf3 + ping), once with routerbench's own iperf3
//! client/server and once with Debian's iperf3 as an independent cross-check: loaded-minus-idle
//! round trip ≈ buffer·8/rate, goodput ≈ 1448/1514 × rate, with and without NAT.
//! (tests/lab/lab_rrul.rs holds the full accuracy matrix through routerbench's latency tests.)

#![cfg(feature = "lab")]

use crate::support::lab::{can_run, guard, unique_name};
use routerbench::lab::accuracy::{MeasurePlan, measure};
use routerbench::lab::load::{ExternalIperf3, LoadGenerator};
use routerbench::lab::native_load::NativeIperf3;
use routerbench::lab::{self, LabSpec};
use std::sync::Arc;

/// One run; returns the failures (empty = pass).
fn run_once(
    rate_bps: u64,
    buffer: u64,
    nat: bool,
    download: bool,
    generator: Arc<dyn LoadGenerator>,
) -> Vec<String> {
    let name = unique_name("a");
    let _guard = guard(&name);
    let cfg = lab::up(&LabSpec {
        name: name.clone(),
        up_rate_bps: Some(rate_bps),
        down_rate_bps: Some(rate_bps),
        buffer_bytes: buffer,
        nat,
        ..LabSpec::default()
    })
    .unwrap();
    let plan = MeasurePlan {
        download,
        flows: 1,
        seconds: 10,
        cc: "cubic".into(),
        ..MeasurePlan::default()
    };
    let p = measure(&cfg, &plan, generator).unwrap();
    let row = routerbench::report::lab::accuracy_row(&p);
    eprintln!("nat={nat} {row}");
    let mut fails = Vec::new();
    let want = rate_bps as f64 * routerbench::lab::theory::goodput_ratio();
    if (p.goodput_bps / want - 1.0).abs() > 0.03 {
        fails.push(format!("goodput {} vs {want}: {row}", p.goodput_bps));
    }
    match (p.p99_ratio, p.median_ratio) {
        (Some(p99), Some(med)) => {
            if !(0.85..=1.10).contains(&p99) {
                fails.push(format!("p99 ratio {p99}: {row}"));
            }
            if !(0.6..=1.05).contains(&med) {
                fails.push(format!("median ratio {med}: {row}"));
            }
        }
        other => fails.push(format!("no ratios {other:?}: {row}")),
    }
    if p.loaded.received * 10 < p.loaded.sent * 9 {
        fails.push(format!("probe loss: {row}"));
    }
    fails
}

/// A run that misses a bound is measured once more: the p99 of ~70 loaded probes is their
/// maximum, so one sender descheduled on this shared 2-vCPU VM fails a run. It fails only if
/// both runs miss.
fn check(rate_bps: u64, buffer: u64, nat: bool, download: bool, generator: Arc<dyn LoadGenerator>) {
    let first = run_once(rate_bps, buffer, nat, download, generator.clone());
    if first.is_empty() {
        return;
    }
    eprintln!("missed, measuring once more: {first:?}");
    let second = run_once(rate_bps, buffer, nat, download, generator);
    assert!(
        second.is_empty(),
        "both runs missed:\n first: {first:?}\n second: {second:?}"
    );
}

#[test]
fn measure_matches_theory_with_both_load_generators() {
    // It loads the machine or measures against theory: not at once with the others that do
    // (tests/support/mod.rs, alone).
    let _alone = crate::support::alone();
    if !can_run(
        "measure_matches_theory_with_both_load_generators",
        &["ip", "tc", "nft", "iperf3"],
    ) {
        return;
    }
    // The runs share 2 CPUs with everything else: one at a time.
    check(20_000_000, 64_000, true, false, Arc::new(NativeIperf3));
    check(
        50_000_000,
        300_000,
        false,
        true,
        Arc::new(ExternalIperf3::default()),
    );
}
