//! docs/results-schema.md against real output: every field `routerbench run --quick` (and, as
//! root, `lab capacity --json`) writes is listed there, every listed field without `?` is in
//! the output wherever its parent is, and a file with the `/1` names still loads.

#![cfg(feature = "lab")]

use serde_json::Value;
use std::collections::BTreeSet;
use std::process::Command;

const STATS: [&str; 7] = ["n", "mean", "median", "p90", "p99", "min", "max"];

/// Field paths of a JSON document: `a.b[].c`, statistics objects as `x{stats}`.
fn paths(v: &Value, prefix: &str, out: &mut BTreeSet<String>) {
    match v {
        Value::Object(m)
            if !m.is_empty()
                && m.contains_key("n")
                && m.keys().all(|k| STATS.contains(&k.as_str())) =>
        {
            out.insert(format!("{prefix}{{stats}}"));
        }
        Value::Object(m) => {
            for (k, x) in m {
                let p = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                paths(x, &p, out);
            }
        }
        Value::Array(a) if a.is_empty() => {
            out.insert(format!("{prefix}[]"));
        }
        Value::Array(a) => {
            for x in a {
                paths(x, &format!("{prefix}[]"), out);
            }
        }
        _ => {
            out.insert(prefix.to_string());
        }
    }
}

/// (all listed fields, the ones not marked `?`) from the doc's field block.
fn documented() -> (BTreeSet<String>, BTreeSet<String>) {
    let doc = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/docs/results-schema.md"
    ))
    .unwrap();
    let block = doc
        .split("<!-- fields:begin -->")
        .nth(1)
        .and_then(|b| b.split("<!-- fields:end -->").next())
        .expect("docs/results-schema.md has the fields block");
    let (mut all, mut required) = (BTreeSet::new(), BTreeSet::new());
    for line in block.lines().map(str::trim) {
        if line.is_empty() || line.starts_with("```") {
            continue;
        }
        let path = line.split_whitespace().next().unwrap();
        match path.strip_suffix('?') {
            Some(p) => {
                all.insert(p.to_string());
            }
            None => {
                all.insert(path.to_string());
                required.insert(path.to_string());
            }
        }
    }
    (all, required)
}

fn parent(p: &str) -> Option<&str> {
    p.rfind('.').map(|i| &p[..i])
}

fn run_json(dir: &std::path::Path) -> Value {
    let out = Command::new(env!("CARGO_BIN_EXE_routerbench"))
        .args(["run", "--quick", "-q", "--out-dir"])
        .arg(dir)
        .output()
        .expect("routerbench run");
    assert!(
        out.status.success(),
        "run --quick: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(&std::fs::read_to_string(dir.join("latest.json")).unwrap()).unwrap()
}

/// A short `stress --cpu --net loopback` result (the stress section and the monitor's health
/// fields).
fn stress_json(dir: &std::path::Path) -> Value {
    let out_dir = dir.join("stress");
    let out = Command::new(env!("CARGO_BIN_EXE_routerbench"))
        .args(["stress", "--for", "10", "-q", "--out-dir"])
        .arg(&out_dir)
        .output()
        .expect("routerbench stress");
    assert!(
        out.status.success(),
        "stress: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json = std::fs::read_dir(&out_dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|e| e == "json"))
        .expect("the stress result");
    serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap()
}

/// `lab capacity --json` when this machine can build a lab (root, ip, tc, nft).
fn lab_json() -> Option<Value> {
    let can = routerbench::lab::sys::is_root()
        && ["ip", "tc", "nft"]
            .iter()
            .all(|t| routerbench::lab::sys::tool_path(t).is_ok());
    if !can {
        eprintln!("lab fields not checked: needs root, ip, tc and nft");
        return None;
    }
    let name = format!("rbsch{}", std::process::id());
    let _guard = routerbench::lab::LabGuard::new(&name);
    let out = Command::new(env!("CARGO_BIN_EXE_routerbench"))
        .args(["lab", "capacity", "--name", &name, "--length", "1"])
        .args(["--flows", "1", "--json"])
        .output()
        .expect("lab capacity");
    assert!(
        out.status.success(),
        "lab capacity: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(serde_json::from_slice(&out.stdout).unwrap())
}

/// The `/2` names back to `/1` below `latency` and `throughput` (the renamed sections).
fn to_v1(v: &mut Value, in_renamed: bool) {
    const OLD: [(&str, &str); 16] = [
        ("start_s", "start"),
        ("end_s", "end"),
        ("rtt_us", "rtt"),
        ("rttvar_us", "rttvar"),
        ("max_rtt_us", "max_rtt"),
        ("min_rtt_us", "min_rtt"),
        ("mean_rtt_us", "mean_rtt"),
        ("omit_s", "omit"),
        ("duration_s", "duration"),
        ("target_bitrate_bps", "target_bitrate"),
        ("total_pct", "total"),
        ("user_pct", "user"),
        ("system_pct", "system"),
        ("t_s", "t"),
        ("t0_unix_s", "t0_unix"),
        ("round_trips_per_minute_idle", "rpm_idle"),
    ];
    match v {
        Value::Object(m) => {
            let keys: Vec<String> = m.keys().cloned().collect();
            for k in keys {
                let Some(mut x) = m.remove(&k) else { continue };
                let renamed = in_renamed || k == "latency" || k == "throughput";
                to_v1(&mut x, renamed);
                let old = match (in_renamed, k.as_str()) {
                    (true, "round_trips_per_minute_loaded") => "rpm_loaded",
                    (true, _) => OLD
                        .iter()
                        .find(|(new, _)| *new == k)
                        .map(|(_, old)| *old)
                        .unwrap_or(&k),
                    (false, _) => &k,
                };
                m.insert(old.to_string(), x);
            }
        }
        Value::Array(a) => a.iter_mut().for_each(|x| to_v1(x, in_renamed)),
        _ => {}
    }
}

#[test]
fn results_schema_doc_matches_real_output() {
    let dir = std::env::temp_dir().join(format!("rb-schema-{}", std::process::id()));
    let run = run_json(&dir);
    let mut docs = vec![run.clone(), stress_json(&dir)];
    docs.extend(lab_json());
    let mut real = BTreeSet::new();
    for d in &docs {
        paths(d, "", &mut real);
    }
    // A field that is null in one document and an object in another is the object's fields.
    let containers: Vec<String> = real
        .iter()
        .filter(|p| real.iter().any(|q| q.starts_with(&format!("{p}."))))
        .cloned()
        .collect();
    for c in containers {
        real.remove(&c);
    }
    let (listed, required) = documented();
    // A null object (no clock sync in this run) is documented by its fields.
    let undocumented: Vec<&String> = real
        .difference(&listed)
        .filter(|p| !listed.iter().any(|l| l.starts_with(&format!("{p}."))))
        .collect();
    assert!(
        undocumented.is_empty(),
        "fields in the output but not in docs/results-schema.md: {undocumented:#?}"
    );
    let missing: Vec<&String> = required
        .iter()
        .filter(|p| {
            let present_parent = match parent(p) {
                Some(par) => real.iter().any(|q| q.starts_with(&format!("{par}."))),
                None => true,
            };
            present_parent && !real.contains(*p)
        })
        .collect();
    assert!(
        missing.is_empty(),
        "fields listed without `?` but absent from the output: {missing:#?}"
    );
    // Units: every number is a count or an id, or its name says its unit.
    let mut numbers = BTreeSet::new();
    for d in &docs {
        numeric_names(d, "", &mut numbers);
    }
    let unitless: Vec<&String> = numbers.iter().filter(|n| !has_unit(n)).collect();
    assert!(
        unitless.is_empty(),
        "numbers without a unit in their name: {unitless:#?}"
    );
    assert_eq!(run["schema"], routerbench::results::SCHEMA);

    // The same file with the `/1` names (and schema) still loads, to the same values.
    let mut v1 = run.clone();
    to_v1(&mut v1, false);
    v1["schema"] = Value::from("routerbench.run/1");
    assert!(
        v1["throughput"]["intervals"][0]["streams"][0]
            .get("start")
            .is_some()
    );
    let old = dir.join("v1.json");
    std::fs::write(&old, serde_json::to_string(&v1).unwrap()).unwrap();
    let loaded = routerbench::results::load(&old).expect("a /1 file loads");
    let now = routerbench::results::load(&dir.join("latest.json")).unwrap();
    let (a, b) = (
        serde_json::to_value(&loaded).unwrap(),
        serde_json::to_value(&now).unwrap(),
    );
    assert_eq!(a["throughput"], b["throughput"]);
    assert_eq!(a["latency"], b["latency"]);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Names of numeric fields (statistics objects count as their parent's name).
fn numeric_names(v: &Value, name: &str, out: &mut BTreeSet<String>) {
    match v {
        Value::Object(m)
            if m.contains_key("n") && m.keys().all(|k| STATS.contains(&k.as_str())) =>
        {
            out.insert(name.to_string());
        }
        Value::Object(m) => m.iter().for_each(|(k, x)| numeric_names(x, k, out)),
        Value::Array(a) => a.iter().for_each(|x| numeric_names(x, name, out)),
        Value::Number(_) => {
            out.insert(name.to_string());
        }
        _ => {}
    }
}

/// A unit in the name, or a count / id / ratio / iperf3 size whose unit is fixed.
fn has_unit(name: &str) -> bool {
    // A unit is one `_`-separated word of the name: `rtt_us`, `backlog_bytes_max`, `t0_unix_s`.
    const UNITS: [&str; 21] = [
        "s", "ms", "us", "pct", "bps", "sec", "second", "seconds", "mbps", "ppm", "c", "bytes",
        "percent", "ratio", "minute", "mhz", "khz", "hz", "dbm", "kib", "bogomips",
    ];
    const COUNTS: [&str; 38] = [
        "n",
        "bytes",
        "seq",
        "sent",
        "received",
        "lost_up",
        "lost_down",
        "socket",
        "id",
        "port",
        "local_port",
        "remote_port",
        "ip_version",
        "probe_size",
        "tos",
        "tos_client",
        "tos_server",
        "bits",
        "threads",
        "cores",
        "pid",
        "samples",
        "flows",
        "retransmits",
        "snd_cwnd",
        "snd_wnd",
        "max_snd_cwnd",
        "max_snd_wnd",
        "pmtu",
        "blksize",
        "blocks",
        "num_streams",
        "window",
        "tcp_mss_default",
        "sndbuf_actual",
        "rcvbuf_actual",
        "block_sizes",
        "cpus",
    ];
    const MORE_COUNTS: [&str; 22] = [
        "exchanges",
        "link_quality",
        "discarded_packets",
        "packets",
        "lost_packets",
        "out_of_order",
        "softnet_dropped",
        "softnet_time_squeeze",
        "softnet_dropped_total",
        "softnet_time_squeeze_total",
        "qlen_max",
        "drops",
        "drops_total",
        "bql_tx_queues",
        "timesecs",
        "probes",
        "lost_probes",
        "segments",
        "segments_failed",
        "oom_kills",
        "netdev_errors",
        "netdev_dropped",
    ];
    name.split('_').any(|w| UNITS.contains(&w))
        || COUNTS.contains(&name)
        || MORE_COUNTS.contains(&name)
}

#[test]
fn field_paths_collapse_statistics_and_arrays() {
    let v: Value = serde_json::json!({
        "a": {"n": 3, "mean": 1.0, "max": 2.0},
        "b": [{"t_s": 1.0}, {"t_s": 2.0, "x": null}],
        "c": []
    });
    let mut p = BTreeSet::new();
    paths(&v, "", &mut p);
    let p: Vec<&str> = p.iter().map(String::as_str).collect();
    assert_eq!(p, ["a{stats}", "b[].t_s", "b[].x", "c[]"]);
    assert!(has_unit("rtt_us") && has_unit("goodput_bps") && has_unit("seconds_bulk"));
    assert!(!has_unit("rtt") && !has_unit("start") && !has_unit("rpm_idle"));
}
