//! `lab measure`, as root: bulk TCP with the lab's UDP echo probes alongside (as
//! spec/netns-lab.md's script does with iperf3 + ping), once with routerbench's own iperf3
//! client/server and once with Debian's iperf3 as an independent cross-check: loaded-minus-idle
//! round trip ≈ buffer·8/rate, goodput ≈ 1448/1514 × rate, with and without NAT.
//! (tests/lab_rrul.rs holds the full accuracy matrix through routerbench's latency tests.)

mod lab_support;

use lab_support::{can_run, unique_name};
use routerbench::lab::accuracy::{MeasurePlan, measure};
use routerbench::lab::load::{ExternalIperf3, LoadGenerator};
use routerbench::lab::native_load::NativeIperf3;
use routerbench::lab::{self, LabGuard, LabSpec};
use std::sync::Arc;

fn check(rate_bps: u64, buffer: u64, nat: bool, download: bool, generator: Arc<dyn LoadGenerator>) {
    let name = unique_name("a");
    let _guard = LabGuard::new(&name);
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
    let want = rate_bps as f64 * routerbench::lab::theory::goodput_ratio();
    assert!(
        (p.goodput_bps / want - 1.0).abs() <= 0.03,
        "goodput {} vs {want}: {row}",
        p.goodput_bps
    );
    let p99 = p.p99_ratio.expect("p99 ratio");
    let med = p.median_ratio.expect("median ratio");
    assert!((0.85..=1.10).contains(&p99), "p99 ratio {p99}: {row}");
    assert!((0.6..=1.05).contains(&med), "median ratio {med}: {row}");
    assert!(
        p.loaded.received * 10 >= p.loaded.sent * 9,
        "probe loss: {row}"
    );
}

#[test]
fn measure_matches_theory_with_both_load_generators() {
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
