//! The last results of tests this machine ran (result files of `routerbench run` and every
//! command's `--json`, in the results directory) or served (iperf3 tests of its server), as
//! `routerbench_*` gauges, each kind with a `…_timestamp_seconds` gauge saying when it was
//! measured (Unix seconds): RRUL-family latency and grade, RPM, SQM capacity, the crypto row.
//! A kind no result holds is not exported.

use crate::results::RunResult;
use crate::results::crypto::{
    Algorithm, AlgorithmKind, ROW_CIPHER_BLOCK, ROW_HASH_BLOCK, WIREGUARD_BLOCK,
};
use crate::results::metrics::{Family, MetricType};
use crate::results::throughput::ThroughputResult;
use crate::util::time::parse_rfc3339;

fn gauge(name: &'static str, help: &'static str) -> Family {
    Family::new(name, MetricType::Gauge, help)
}

/// When a result was measured: its end, else its start (Unix seconds).
fn measured_at(r: &RunResult) -> Option<f64> {
    parse_rfc3339(&r.finished_at).or_else(|| parse_rfc3339(&r.started_at))
}

/// The families of the newest result of each kind among `results` (any order).
pub fn last_results(results: &[RunResult]) -> Vec<Family> {
    let mut by_time: Vec<(f64, &RunResult)> = results
        .iter()
        .filter_map(|r| Some((measured_at(r)?, r)))
        .collect();
    by_time.sort_by(|a, b| b.0.total_cmp(&a.0));
    let mut out = Vec::new();
    if let Some((t, r)) = by_time.iter().find(|(_, r)| r.latency.is_some()) {
        out.extend(latency(*t, r));
    }
    if let Some((t, r)) = by_time.iter().find(|(_, r)| r.rpm.is_some()) {
        out.extend(rpm(*t, r));
    }
    if let Some((t, r)) = by_time
        .iter()
        .find(|(_, r)| r.sqm_capacity.is_some() || !r.sqm_side_by_side.is_empty())
    {
        out.extend(sqm(*t, r));
    }
    if let Some((t, r)) = by_time.iter().find(|(_, r)| r.crypto.is_some()) {
        out.extend(crypto(*t, r));
    }
    out
}

fn latency(t: f64, r: &RunResult) -> Vec<Family> {
    let Some(l) = &r.latency else {
        return Vec::new();
    };
    let test = || ("test", l.test.clone());
    let mut when = gauge(
        "routerbench_latency_timestamp_seconds",
        "When the last latency-under-load test (rrul and friends) ended, Unix seconds.",
    );
    when.push(vec![test()], t);
    let mut idle = gauge(
        "routerbench_latency_idle_seconds",
        "Last latency test: median round-trip time before the load, seconds.",
    );
    if let Some(v) = l.summary.idle_rtt_ms.median {
        idle.push(vec![test()], v / 1e3);
    }
    let mut loaded = gauge(
        "routerbench_latency_loaded_seconds",
        "Last latency test: round-trip time under load at a quantile, seconds.",
    );
    let s = &l.summary.loaded_rtt_ms;
    for (q, v) in [("0.5", s.median), ("0.9", s.p90), ("0.99", s.p99)] {
        if let Some(v) = v {
            loaded.push(vec![test(), ("quantile", q.into())], v / 1e3);
        }
    }
    let mut increase = gauge(
        "routerbench_latency_increase_seconds",
        "Last latency test: median loaded minus median idle round-trip time (bufferbloat), seconds.",
    );
    if let Some(v) = l.summary.increase_ms {
        increase.push(vec![test()], v / 1e3);
    }
    let mut grade = gauge(
        "routerbench_latency_grade_info",
        "Last latency test: its bufferbloat grade (A+ to F) as a label; the value is 1.",
    );
    if let Some(g) = &l.summary.grade {
        grade.push(vec![test(), ("grade", g.clone())], 1.0);
    }
    let mut rpm = gauge(
        "routerbench_latency_rpm",
        "Last latency test: responsiveness under load, round trips per minute.",
    );
    if let Some(v) = l.summary.rpm_loaded {
        rpm.push(vec![test()], v);
    }
    let mut goodput = gauge(
        "routerbench_latency_goodput_bits_per_second",
        "Last latency test: mean goodput of its load flows per direction, bit/s.",
    );
    for (dir, v) in [
        ("download", l.summary.download_mbps),
        ("upload", l.summary.upload_mbps),
    ] {
        if let Some(v) = v {
            goodput.push(vec![test(), ("direction", dir.into())], v * 1e6);
        }
    }
    vec![when, idle, loaded, increase, grade, rpm, goodput]
}

fn rpm(t: f64, r: &RunResult) -> Vec<Family> {
    let Some(p) = &r.rpm else {
        return Vec::new();
    };
    let mut when = gauge(
        "routerbench_rpm_timestamp_seconds",
        "When the last responsiveness (RPM) test ended, Unix seconds.",
    );
    when.push(vec![("mode", p.mode.clone())], t);
    let mut rpm = gauge(
        "routerbench_rpm",
        "Last responsiveness test: round trips per minute under working conditions, per run.",
    );
    for run in &p.runs {
        if let Some(v) = run.score.rpm {
            rpm.push(
                vec![
                    ("mode", p.mode.clone()),
                    ("direction", run.direction.clone()),
                ],
                v,
            );
        }
    }
    vec![when, rpm]
}

fn sqm(t: f64, r: &RunResult) -> Vec<Family> {
    let mut when = gauge(
        "routerbench_sqm_capacity_timestamp_seconds",
        "When the last SQM capacity search ended, Unix seconds.",
    );
    when.push(vec![], t);
    let mut cap = gauge(
        "routerbench_sqm_capacity_bits_per_second",
        "Last SQM capacity search: the highest shaped rate this CPU sustains with the qdisc, bit/s.",
    );
    for c in r.sqm_capacity.iter().chain(&r.sqm_side_by_side) {
        if let Some(bps) = c.capacity_bps {
            let l = vec![("qdisc", c.qdisc.clone()), ("place", c.place.clone())];
            // The same qdisc and place twice (side by side repeats the single one): keep one.
            if !cap.samples.iter().any(|s| s.labels == l) {
                cap.push(l, bps as f64);
            }
        }
    }
    vec![when, cap]
}

fn crypto(t: f64, r: &RunResult) -> Vec<Family> {
    let Some(c) = &r.crypto else {
        return Vec::new();
    };
    let engine = || ("engine", c.engine.name.clone());
    let mut when = gauge(
        "routerbench_crypto_timestamp_seconds",
        "When the last crypto benchmark (the OpenWrt table row) ended, Unix seconds.",
    );
    when.push(vec![engine()], t);
    let mut bulk = gauge(
        "routerbench_crypto_bytes_per_second",
        "Last crypto benchmark: bytes per second of a hash, cipher or AEAD at the row's block size.",
    );
    let mut ops = gauge(
        "routerbench_crypto_operations_per_second",
        "Last crypto benchmark: RSA/DSA 2048 signatures or verifications per second.",
    );
    for alg in Algorithm::EVERY {
        match alg.kind() {
            AlgorithmKind::PublicKey => {
                if let Some(p) = c.public_key(alg) {
                    for (op, v) in [("sign", p.sign_per_sec), ("verify", p.verify_per_sec)] {
                        ops.push(
                            vec![
                                engine(),
                                ("algorithm", alg.cli_name().into()),
                                ("operation", op.into()),
                            ],
                            v,
                        );
                    }
                }
            }
            kind => {
                let block = match kind {
                    AlgorithmKind::Hash => ROW_HASH_BLOCK,
                    AlgorithmKind::Aead => WIREGUARD_BLOCK,
                    _ => ROW_CIPHER_BLOCK,
                };
                if let Some(v) = c.rate(alg, block) {
                    bulk.push(
                        vec![
                            engine(),
                            ("algorithm", alg.cli_name().into()),
                            ("block_bytes", block.to_string()),
                        ],
                        v,
                    );
                }
            }
        }
    }
    vec![when, bulk, ops]
}

/// The last iperf3 test this machine's server served: throughput per direction and its time.
pub fn served_iperf3(r: &ThroughputResult) -> Vec<Family> {
    let mut when = gauge(
        "routerbench_iperf3_served_timestamp_seconds",
        "When the last iperf3 test this server served ended, Unix seconds.",
    );
    when.push(
        vec![],
        r.timesecs as f64 + r.sum_received.end.max(r.sum_sent.end),
    );
    let mut bps = gauge(
        "routerbench_iperf3_served_bits_per_second",
        "Last iperf3 test this server served: throughput of its main direction, bit/s.",
    );
    bps.push1("side", "sender", r.sent_bps());
    bps.push1("side", "receiver", r.received_bps());
    vec![when, bps]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::latency::LatencyResult;

    #[test]
    fn newest_of_each_kind_with_its_time() {
        let mut old = RunResult::new("2026-12-06T10:00:00Z".into());
        old.finished_at = "2026-12-06T10:01:00Z".into();
        let summary =
            serde_json::to_value(crate::results::latency::LatencySummary::default()).unwrap();
        let mut l: LatencyResult = serde_json::from_value(serde_json::json!({
            "test": "rrul", "host": "10.9.2.2", "port": 5201, "ip_version": 4,
            "started_at": "2026-12-06T10:00:00Z", "t0_unix": 0.0, "length_s": 10.0,
            "delay_s": 2.0, "step_s": 0.2, "total_length_s": 14.0, "probe_interval_s": 0.2,
            "probe_size": 64, "flows": [], "probes": [], "summary": summary
        }))
        .unwrap();
        l.summary.idle_rtt_ms.median = Some(1.0);
        l.summary.grade = Some("C".into());
        old.latency = Some(l.clone());
        let mut new = RunResult::new("2026-12-06T11:00:00Z".into());
        new.finished_at = "2026-12-06T11:00:30Z".into();
        l.summary.loaded_rtt_ms.p99 = Some(250.0);
        l.summary.grade = Some("F".into());
        l.summary.increase_ms = Some(180.0);
        new.latency = Some(l);
        // A file without a time is not "last" of anything.
        let mut undated = RunResult::new("never".into());
        undated.finished_at = "never".into();
        undated.latency = old.latency.clone();
        let f = last_results(&[old, new, undated]);
        let get = |n: &str| f.iter().find(|x| x.name == n).unwrap();
        let when = get("routerbench_latency_timestamp_seconds");
        assert_eq!(
            when.samples[0].value,
            parse_rfc3339("2026-12-06T11:00:30Z").unwrap()
        );
        let grade = get("routerbench_latency_grade_info");
        assert!(
            grade.samples[0]
                .labels
                .contains(&("grade", "F".to_string()))
        );
        assert_eq!(
            get("routerbench_latency_increase_seconds").samples[0].value,
            0.18
        );
        let loaded = get("routerbench_latency_loaded_seconds");
        assert_eq!(loaded.samples.len(), 1, "only the quantile measured");
        assert_eq!(loaded.samples[0].value, 0.25);
        assert!(f.iter().all(|x| !x.name.starts_with("routerbench_crypto")));
    }

    #[test]
    fn crypto_row_columns() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/results/crypto-openssl-3.0.19.json"
        );
        let r = crate::results::load(std::path::Path::new(path)).unwrap();
        let f = last_results(&[r]);
        let get = |n: &str| f.iter().find(|x| x.name == n).unwrap();
        let bulk = get("routerbench_crypto_bytes_per_second");
        assert!(bulk.samples.len() >= 9, "{:?}", bulk.samples);
        let aes = bulk
            .samples
            .iter()
            .find(|s| s.labels.contains(&("algorithm", "aes-128-cbc".to_string())))
            .unwrap();
        assert!(aes.labels.contains(&("block_bytes", "8192".to_string())));
        assert!(aes.value > 1e6, "{}", aes.value);
        let ops = get("routerbench_crypto_operations_per_second");
        assert_eq!(ops.samples.len(), 4, "RSA and DSA, sign and verify");
        assert_eq!(
            get("routerbench_crypto_timestamp_seconds").samples[0].value,
            parse_rfc3339("2026-12-06T06:06:35Z").unwrap()
        );
    }
}
