//! Our `-J` output has every key iperf3 3.12 writes (the real samples in
//! tests/fixtures/iperf3/, iperf3 3.12's own -J output), with the same JSON types, so tools that parse
//! iperf3 JSON find what they look for.

use routerbench::server::loopback::{self, LoopbackConfig};
use serde_json::Value;

/// Every key path of `v` (array elements collapsed to `[]`) with its JSON type.
fn paths(v: &Value, prefix: &str, out: &mut Vec<(String, &'static str)>) {
    match v {
        Value::Object(m) => {
            for (k, child) in m {
                let p = format!("{prefix}.{k}");
                out.push((p.clone(), kind(child)));
                paths(child, &p, out);
            }
        }
        Value::Array(a) => {
            for child in a {
                paths(child, &format!("{prefix}[]"), out);
            }
        }
        _ => {}
    }
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn check(sample: &str, ours: &Value, ignore: &[&str]) {
    let sample: Value = serde_json::from_str(sample).expect("sample is JSON");
    let (mut want, mut have) = (Vec::new(), Vec::new());
    paths(&sample, "", &mut want);
    paths(ours, "", &mut have);
    let missing: Vec<_> = want
        .iter()
        .filter(|(p, _)| !ignore.iter().any(|i| p.starts_with(i)))
        .filter(|w| !have.contains(w))
        .collect();
    assert!(
        missing.is_empty(),
        "keys (or types) iperf3 has and we lack: {missing:#?}"
    );
}

#[test]
fn tcp_json_has_iperf3_keys() {
    let r = loopback::run(&LoopbackConfig {
        time: 2,
        ..Default::default()
    })
    .unwrap();
    let ours: Value = serde_json::from_str(&routerbench::report::export::iperf3::render(
        &r,
        &routerbench::iperf3::system_info(),
    ))
    .unwrap();
    check(
        include_str!("../fixtures/iperf3/iperf3-tcp.json"),
        &ours,
        &[],
    );
}

#[test]
fn udp_json_has_iperf3_keys() {
    let r = loopback::run(&LoopbackConfig {
        time: 2,
        udp: true,
        bandwidth: 10_000_000,
        ..Default::default()
    })
    .unwrap();
    let ours: Value = serde_json::from_str(&routerbench::report::export::iperf3::render(
        &r,
        &routerbench::iperf3::system_info(),
    ))
    .unwrap();
    check(
        include_str!("../fixtures/iperf3/iperf3-udp.json"),
        &ours,
        &[],
    );
}

#[test]
#[should_panic(expected = "keys (or types) iperf3 has and we lack")]
fn the_check_can_fail() {
    let mut doc: Value =
        serde_json::from_str(include_str!("../fixtures/iperf3/iperf3-tcp.json")).unwrap();
    doc["end"]["sum_sent"]
        .as_object_mut()
        .unwrap()
        .remove("retransmits");
    check(
        include_str!("../fixtures/iperf3/iperf3-tcp.json"),
        &doc,
        &[],
    );
}
