//! The draft's arithmetic (draft-ietf-ippm-responsiveness-09 §5.3.1) redone from a result's raw
//! probes, for the tests that check `routerbench rpm`'s score against it: over our protocol
//! (TCP-only, §5.3.1.2) and over HTTP/2 + TLS (§5.3.1.1).

/// The 95 % single-sided trimmed mean of `field` over the `kind` probes (`foreign`, `self`)
/// that completed in the last `mad` intervals of `run`.
fn trimmed_mean(run: &serde_json::Value, mad: usize, kind: &str, field: &str) -> f64 {
    let n = run["intervals"].as_array().unwrap().len();
    let first = n.saturating_sub(mad);
    let mut v: Vec<f64> = run["probes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["kind"] == kind && p.get("error").is_none())
        .filter(|p| p["interval"].as_u64().unwrap() as usize >= first)
        .filter_map(|p| p[field].as_f64())
        .collect();
    v.sort_by(f64::total_cmp);
    let keep = ((v.len() as f64 * 0.95).floor() as usize).max(1);
    v[..keep].iter().sum::<f64>() / keep as f64
}

/// RPM = the mean of foreign (60000 / the mean of the foreign `fields`' trimmed means) and
/// loaded (60000 / TM(http_l)).
fn rpm_of(run: &serde_json::Value, mad: usize, fields: &[&str]) -> f64 {
    let foreign_ms = fields
        .iter()
        .map(|f| trimmed_mean(run, mad, "foreign", f))
        .sum::<f64>()
        / fields.len() as f64;
    let foreign = 60000.0 / foreign_ms;
    let loaded = 60000.0 / trimmed_mean(run, mad, "self", "http_ms");
    (foreign + loaded) / 2.0
}

/// The TCP-only arithmetic (§5.3.1.2): foreign = 60000 / mean(tcp_f, http_f).
pub fn recompute(run: &serde_json::Value, mad: usize) -> f64 {
    rpm_of(run, mad, &["tcp_ms", "http_ms"])
}

/// The TLS-enabled arithmetic (§5.3.1.1): foreign = 60000 / mean(tcp_f, tls_f, http_f).
pub fn recompute_tls(run: &serde_json::Value, mad: usize) -> f64 {
    rpm_of(run, mad, &["tcp_ms", "tls_ms", "http_ms"])
}
