//! Export of a latency result to flent's data format, version 4 (docs/protocols/latency.md §1.7): gzip
//! JSON with `version`, `x_values` (the step grid), `results` (every series interpolated onto
//! the grid, null outside its samples), `raw_values` (`{t, val, …}` with absolute Unix `t`) and
//! `metadata` (NAME, LENGTH, TOTAL_LENGTH, STEP_SIZE, T0, HOSTS, SERIES_META, …), so that
//! `flent -i FILE.flent.gz -p all_scaled` plots it with flent's own plot definitions.

use super::{ExportError, Exporter};
use crate::results::latency::{FlowResult, LatencyResult};
use crate::results::monitor::MonitorResult;
use serde_json::{Map, Value, json};
use std::io::Write;
use std::path::Path;

/// flent's data file format version written here.
pub const FILEFORMAT_VERSION: u32 = 4;

/// Linear interpolation of `(t, v)` samples (sorted by t) onto `grid`; None outside the samples.
pub fn interpolate(samples: &[(f64, f64)], grid: &[f64]) -> Vec<Option<f64>> {
    let mut out = Vec::with_capacity(grid.len());
    let mut j = 0;
    for &x in grid {
        let (Some(first), Some(last)) = (samples.first(), samples.last()) else {
            out.push(None);
            continue;
        };
        if x < first.0 || x > last.0 {
            out.push(None);
            continue;
        }
        while j + 1 < samples.len() && samples[j + 1].0 < x {
            j += 1;
        }
        let (t0, v0) = samples[j];
        let v = match samples.get(j + 1) {
            Some(&(t1, v1)) if t1 > t0 && x >= t0 => v0 + (v1 - v0) * (x - t0) / (t1 - t0),
            _ => v0,
        };
        out.push(Some(v));
    }
    out
}

/// Combines series point by point, ignoring nulls: flent's `average` and `sum` runners.
fn combine(series: &[&Vec<Option<f64>>], len: usize, mean: bool) -> Vec<Option<f64>> {
    (0..len)
        .map(|i| {
            let vals: Vec<f64> = series
                .iter()
                .filter_map(|s| s.get(i).copied().flatten())
                .collect();
            if vals.is_empty() {
                None
            } else {
                let sum: f64 = vals.iter().sum();
                Some(if mean { sum / vals.len() as f64 } else { sum })
            }
        })
        .collect()
}

/// Jain's fairness index point by point, (Σx)² / (n·Σx²), over the series with a value there
/// (flent's `fairness` runner); null where none has one or all are zero.
fn fairness(series: &[&Vec<Option<f64>>], len: usize) -> Vec<Option<f64>> {
    (0..len)
        .map(|i| {
            let vals: Vec<f64> = series
                .iter()
                .filter_map(|s| s.get(i).copied().flatten())
                .collect();
            let sq: f64 = vals.iter().map(|x| x * x).sum();
            (!vals.is_empty() && sq > 0.0).then(|| {
                let sum: f64 = vals.iter().sum();
                sum * sum / (vals.len() as f64 * sq)
            })
        })
        .collect()
}

/// `2026-11-29T20:13:19.123456Z` for a Unix time (what flent's parse_date reads as UTC).
fn flent_time(unix: f64) -> String {
    let secs = unix.floor() as i64;
    let micros = ((unix - secs as f64) * 1e6).round().min(999_999.0) as u32;
    let base = crate::util::time::rfc3339_utc(secs);
    format!("{}.{micros:06}Z", base.trim_end_matches('Z'))
}

/// A series interpolated onto the grid, by name.
type Interpolated = Vec<(String, Vec<Option<f64>>)>;

/// The per-series parts of the document, filled series by series.
#[derive(Default)]
struct Series {
    raw: Map<String, Value>,
    meta: Map<String, Value>,
    interpolated: Interpolated,
}

/// Builds the flent document (uncompressed JSON value).
pub fn to_flent_json(r: &LatencyResult, title: &str) -> Value {
    let n = (r.total_length_s / r.step_s).round() as usize + 1;
    let grid: Vec<f64> = (0..n)
        .map(|i| ((i as f64 * r.step_s) * 1e6).round() / 1e6)
        .collect();
    let mut series = Series::default();
    add_flows(r, &grid, &mut series);
    if r.test == "voip" {
        super::flent_voip::add_voip(
            r,
            &grid,
            &mut series.raw,
            &mut series.meta,
            &mut series.interpolated,
            interpolate,
        );
    } else {
        add_probes(r, &grid, &mut series);
    }
    let computed = computed_series(r, &series.interpolated, n);
    let Series {
        mut raw,
        mut meta,
        interpolated,
    } = series;
    let mut results: Map<String, Value> = Map::new();
    for (name, values) in interpolated {
        results.insert(name, json!(values));
    }
    for (name, values, units) in computed {
        let present: Vec<f64> = values.iter().flatten().copied().collect();
        let mean =
            (!present.is_empty()).then(|| present.iter().sum::<f64>() / present.len() as f64);
        meta.insert(
            name.clone(),
            json!({"UNITS": units, "RUNNER": "computed", "MEAN_VALUE": mean}),
        );
        results.insert(name.clone(), json!(values));
        raw.insert(name, json!([]));
    }
    json!({
        "version": FILEFORMAT_VERSION,
        "x_values": grid,
        "results": results,
        "raw_values": raw,
        "metadata": metadata(r, title, meta),
    })
}

/// The TCP flows: throughput samples (with the RTT flent's `tcp_rtt` plots read) and their
/// marking and congestion control.
fn add_flows(r: &LatencyResult, grid: &[f64], out: &mut Series) {
    for f in &r.flows {
        let pts: Vec<(f64, f64)> = f.samples.iter().map(|s| (s.t, s.mbps)).collect();
        let raw_pts: Vec<Value> = f
            .samples
            .iter()
            .map(|s| {
                let mut o = json!({"t": r.t0_unix + s.t, "val": s.mbps, "dur": r.step_s});
                // flent's `tcp_rtt` plots read this key (ms, as from `ss -i`).
                if let Some(rtt) = s.tcp_rtt_ms {
                    o["tcp_rtt"] = json!(rtt);
                }
                o
            })
            .collect();
        out.raw.insert(f.name.clone(), Value::Array(raw_pts));
        out.interpolated
            .push((f.name.clone(), interpolate(&pts, grid)));
        out.meta.insert(
            f.name.clone(),
            json!({
                "UNITS": "Mbits/s",
                "RUNNER": "routerbench",
                "MEAN_VALUE": f.mbps.mean,
                "MARKING": format!("{:#04x}", f.tos),
                "UPSTREAM_TOS": f.tos_client.map(|t| format!("{t:#04x}")),
                "DOWNSTREAM_TOS": f.tos_server.map(|t| format!("{t:#04x}")),
                "CONG_CONTROL": f.cc_client,
                "CONG_CONTROL_SERVER": f.cc_server,
                "BYTES": f.bytes,
                "TCP_RTT_MEAN_MS": f.tcp_rtt_ms.mean,
            }),
        );
    }
}

/// The latency probes: round trips (with one-way delays when known), lost probes marked.
fn add_probes(r: &LatencyResult, grid: &[f64], out: &mut Series) {
    // One series per name: phases runs `Ping (ms) ICMP` in each phase's session, one after
    // the other; flent sees one series over the whole timeline (the first one's metadata).
    let mut seen: Vec<&str> = Vec::new();
    for p in &r.probes {
        if seen.contains(&p.name.as_str()) {
            continue;
        }
        seen.push(&p.name);
        let mut samples: Vec<_> = r
            .probes
            .iter()
            .filter(|q| q.name == p.name)
            .flat_map(|q| q.samples.iter())
            .collect();
        samples.sort_by(|a, b| a.t.total_cmp(&b.t));
        let mut pts = Vec::new();
        let mut raw_pts = Vec::new();
        for s in samples {
            let t = r.t0_unix + s.t;
            match s.rtt_ms {
                Some(v) => {
                    pts.push((s.t, v));
                    let mut o = json!({"t": t, "val": v, "seq": s.seq});
                    if let (Some(u), Some(d)) = (s.owd_up_ms, s.owd_down_ms) {
                        o["owd_up"] = json!(u);
                        o["owd_down"] = json!(d);
                    }
                    raw_pts.push(o);
                }
                None => raw_pts.push(json!({"t": t, "seq": s.seq, "lost": true})),
            }
        }
        out.raw.insert(p.name.clone(), Value::Array(raw_pts));
        out.interpolated
            .push((p.name.clone(), interpolate(&pts, grid)));
        out.meta.insert(
            p.name.clone(),
            json!({
                "UNITS": "ms",
                "RUNNER": "routerbench",
                "MEAN_VALUE": p.rtt_ms.mean,
                "RTT_MEDIAN": p.rtt_ms.median,
                "MARKING": format!("{:#04x}", p.tos),
                "TIMESTAMPS": p.timestamps,
                "PACKETS_SENT": p.sent,
                "PACKETS_RECEIVED": p.received,
                "LOST_UP": p.lost_up,
                "LOST_DOWN": p.lost_down,
            }),
        );
    }
}

/// Computed series, as the test's .conf defines them: per-direction avg and sum, and for the
/// rrul family the TCP totals and the ping average. `(name, values, units)`.
fn computed_series(
    r: &LatencyResult,
    interpolated: &Interpolated,
    n: usize,
) -> Vec<(String, Vec<Option<f64>>, &'static str)> {
    let pick = |pred: &dyn Fn(&str) -> bool| -> Vec<&Vec<Option<f64>>> {
        interpolated
            .iter()
            .filter(|(name, _)| pred(name))
            .map(|(_, v)| v)
            .collect()
    };
    let mut computed: Vec<(String, Vec<Option<f64>>, &'static str)> = Vec::new();
    // tcp_bidirectional's .conf defines no computed series (phases is read as it).
    let with_avg = !matches!(r.test.as_str(), "tcp_bidirectional" | "phases");
    for dir in ["upload", "download"] {
        let prefix = format!("TCP {dir}");
        let flows = pick(&|name: &str| name.starts_with(&prefix));
        if with_avg && !flows.is_empty() {
            computed.push((
                format!("TCP {dir} avg"),
                combine(&flows, n, true),
                "Mbits/s",
            ));
            computed.push((
                format!("TCP {dir} sum"),
                combine(&flows, n, false),
                "Mbits/s",
            ));
        }
    }
    if r.test == "rtt_fair" {
        // rtt_fair.inc: Jain's fairness index of each direction's streams, and the ping mean.
        for dir in ["upload", "download"] {
            let prefix = format!("TCP {dir} ");
            let flows = pick(&|name: &str| name.starts_with(&prefix));
            computed.push((format!("TCP {dir} fairness"), fairness(&flows, n), "Idx"));
        }
        let pings = pick(&|name: &str| name.starts_with("Ping (ms)"));
        computed.push(("Ping (ms) avg".into(), combine(&pings, n, true), "ms"));
    }
    if r.test == "phases" {
        // Read as tcp_bidirectional: one download and one upload series over the whole
        // timeline (each phase's flows, summed; null where the direction is idle).
        for dir in ["upload", "download"] {
            let prefix = format!("TCP {dir}::");
            let flows = pick(&|name: &str| name.starts_with(&prefix));
            computed.push((format!("TCP {dir}"), combine(&flows, n, false), "Mbits/s"));
        }
    }
    if matches!(
        r.test.as_str(),
        "rrul" | "rrul_be" | "rrul_icmp" | "rrul_var" | "rrul46"
    ) {
        let all = pick(&|name: &str| name.starts_with("TCP "));
        computed.push(("TCP totals".into(), combine(&all, n, false), "Mbits/s"));
        let pings = pick(&|name: &str| name.starts_with("Ping (ms)"));
        computed.push(("Ping (ms) avg".into(), combine(&pings, n, true), "ms"));
    }
    computed
}

/// flent's `metadata`: the test, its timing, hosts, parameters, and `SERIES_META`.
fn metadata(r: &LatencyResult, title: &str, series_meta: Map<String, Value>) -> Value {
    let mut test_parameters = Map::new();
    let nflows = r.flows.len();
    match r.test.as_str() {
        "tcp_nup" => {
            test_parameters.insert("upload_streams".into(), json!(nflows.to_string()));
        }
        "tcp_ndown" => {
            test_parameters.insert("download_streams".into(), json!(nflows.to_string()));
        }
        "rrul_var" => {
            let n = r.flows.iter().filter(|f| f.direction == "upload").count();
            test_parameters.insert("bidir_streams".into(), json!(n.to_string()));
        }
        "rtt_fair" => {
            // flent's for_stream_config: one stream per HOSTS entry, its label, ping label and
            // marking from these lists (series `TCP upload LABEL HOST`, `Ping (ms) PING HOST`).
            let ups: Vec<_> = r.flows.iter().filter(|f| f.direction == "upload").collect();
            let list = |f: &dyn Fn(usize, &FlowResult) -> String| {
                ups.iter()
                    .enumerate()
                    .map(|(i, u)| f(i, u))
                    .collect::<Vec<_>>()
                    .join(",")
            };
            test_parameters.insert("labels".into(), json!(list(&|_, u| u.label.clone())));
            test_parameters.insert(
                "ping_labels".into(),
                json!(list(&|i, _| format!("ICMP{}", i + 1))),
            );
            test_parameters.insert(
                "markings".into(),
                json!(list(&|_, u| if u.tos == 0 {
                    "CS0".into()
                } else {
                    format!("CS{}", u.tos >> 5)
                })),
            );
        }
        _ => {}
    }
    if let Some(cc) = &r.congestion_control {
        test_parameters.insert("tcp_cong_control".into(), json!(cc));
    }
    // rtt_fair: each stream's host (the last word of its series name), in stream order.
    let hosts: Vec<String> = if r.test == "rtt_fair" {
        r.flows
            .iter()
            .filter(|f| f.direction == "upload")
            .filter_map(|f| f.name.rsplit(' ').next().map(str::to_string))
            .collect()
    } else if r.hosts.is_empty() {
        vec![r.host.clone()]
    } else {
        r.hosts.clone()
    };
    let time = flent_time(r.t0_unix);
    let hostname = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .unwrap_or_default();
    json!({
        // phases has no flent test of its own: its file is read as tcp_bidirectional.
        "NAME": if r.test == "phases" { "tcp_bidirectional" } else { r.test.as_str() },
        "TITLE": title,
        "NOTE": r.notes.join("; "),
        "HOSTS": hosts,
        "HOST": r.host,
        "LOCAL_HOST": hostname,
        "LENGTH": r.length_s,
        "TOTAL_LENGTH": r.total_length_s,
        "STEP_SIZE": r.step_s,
        "DELAY": r.delay_s,
        "TIME": time,
        "T0": time,
        "IP_VERSION": r.ip_version,
        "GENERATED_BY": format!("routerbench {}", env!("CARGO_PKG_VERSION")),
        "TEST_PARAMETERS": test_parameters,
        "FAILED_RUNNERS": 0,
        // Ended by SIGINT/SIGTERM: LENGTH is what was measured (NOTE says so too).
        "INTERRUPTED": r.interrupted,
        "SERIES_META": series_meta,
        "DATA_FILENAME": Value::Null,
    })
}

/// flent's data file of a latency result, titled `title` (flent's `TITLE`); `DATA_FILENAME` is
/// the name of the file written ([`Exporter::write_to_file`]), or null for bare bytes.
#[derive(Debug, Clone, Default)]
pub struct Flent<'a> {
    pub title: String,
    pub data_filename: Option<String>,
    /// The router's agent and what it saw: its access point's stations go into the file as
    /// flent's `wifi_stats` series (`flent_wifi.rs`).
    pub router: Option<(&'a str, &'a MonitorResult)>,
}

impl<'a> Flent<'a> {
    pub fn new(title: &str) -> Self {
        Self {
            title: title.to_string(),
            data_filename: None,
            router: None,
        }
    }

    /// The same, with the router agent at `host` and its samples.
    pub fn with_router(mut self, router: Option<(&'a str, &'a MonitorResult)>) -> Self {
        self.router = router;
        self
    }
}

impl Exporter<LatencyResult> for Flent<'_> {
    /// The gzip-compressed JSON document, with a final newline inside the gzip stream.
    fn serialize(&self, r: &LatencyResult) -> Result<Vec<u8>, ExportError> {
        let mut doc = to_flent_json(r, &self.title);
        if let Some((host, m)) = self.router {
            super::flent_wifi::add_wifi(&mut doc, m, host, interpolate);
        }
        if let Some(name) = &self.data_filename {
            doc["metadata"]["DATA_FILENAME"] = json!(name);
        }
        let encode = |cause: std::io::Error| ExportError::Encode {
            what: "the flent data file",
            cause,
        };
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        serde_json::to_writer(&mut gz, &doc).map_err(|e| encode(e.into()))?;
        gz.write_all(b"\n").map_err(encode)?;
        gz.finish().map_err(encode)
    }

    /// Writes the file (its name should end in `.flent.gz`), naming it in `DATA_FILENAME`.
    fn write_to_file(&self, r: &LatencyResult, path: &Path) -> Result<(), ExportError> {
        let named = Flent {
            router: self.router,
            title: self.title.clone(),
            data_filename: path
                .file_name()
                .and_then(|n| n.to_str())
                .map(str::to_string),
        };
        let bytes = named.serialize(r)?;
        crate::util::fs::write_output(path, bytes).map_err(|cause| ExportError::Write {
            path: path.to_path_buf(),
            cause,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interpolation_matches_flent_grid_rules() {
        let grid = [0.0, 0.2, 0.4, 0.6, 0.8];
        let s = [(0.1, 1.0), (0.5, 3.0)];
        let v = interpolate(&s, &grid);
        assert_eq!(v[0], None, "before the first sample");
        assert!((v[1].unwrap() - 1.5).abs() < 1e-9);
        assert!((v[2].unwrap() - 2.5).abs() < 1e-9);
        assert_eq!(v[3], None, "after the last sample");
        assert_eq!(interpolate(&[], &grid), vec![None; 5]);
        assert_eq!(interpolate(&[(0.4, 7.0)], &grid)[2], Some(7.0));
    }

    #[test]
    fn combine_ignores_nulls() {
        let a = vec![Some(1.0), None, None];
        let b = vec![Some(3.0), Some(5.0), None];
        assert_eq!(
            combine(&[&a, &b], 3, true),
            vec![Some(2.0), Some(5.0), None]
        );
        assert_eq!(
            combine(&[&a, &b], 3, false),
            vec![Some(4.0), Some(5.0), None]
        );
    }

    fn result(test: &str, flows: &[&str]) -> LatencyResult {
        use crate::results::latency::*;
        let flow = |name: &str| FlowResult {
            name: name.into(),
            label: "BE".into(),
            direction: if name.contains("upload") {
                "upload"
            } else {
                "download"
            }
            .into(),
            tos: 0,
            tos_client: Some(0),
            tos_server: Some(0),
            cc_client: None,
            cc_server: None,
            bytes: 250_000,
            bytes_all: None,
            samples: vec![
                ThroughputSample {
                    t: 0.4,
                    mbps: 10.0,
                    tcp_rtt_ms: Some(1.5),
                },
                ThroughputSample {
                    t: 0.6,
                    mbps: 20.0,
                    tcp_rtt_ms: None,
                },
            ],
            mbps: SeriesStats::default(),
            tcp_rtt_ms: SeriesStats::default(),
        };
        LatencyResult {
            test: test.into(),
            host: "127.0.0.1".into(),
            port: 5201,
            ip_version: 4,
            started_at: String::new(),
            t0_unix: 1_795_983_199.0,
            length_s: 0.4,
            delay_s: 0.2,
            step_s: 0.2,
            total_length_s: 0.8,
            hosts: Vec::new(),
            sessions: Vec::new(),
            probe_interval_s: 0.2,
            probe_size: 64,
            congestion_control: None,
            flows: flows.iter().map(|n| flow(n)).collect(),
            probes: vec![],
            clock: None,
            summary: LatencySummary::default(),
            phases: Vec::new(),
            notes: vec![],
            interrupted: false,
        }
    }

    #[test]
    fn jains_fairness_index() {
        let (a, b) = (
            vec![Some(10.0), Some(10.0), None],
            vec![Some(10.0), Some(0.0), None],
        );
        let f = fairness(&[&a, &b], 3);
        assert_eq!(f[0], Some(1.0));
        assert_eq!(f[1], Some(0.5));
        assert_eq!(f[2], None);
        let c = vec![Some(0.0)];
        assert_eq!(fairness(&[&c], 1), vec![None]);
    }

    #[test]
    fn computed_series_follow_each_tests_conf() {
        let doc = to_flent_json(&result("rrul", &["TCP upload BE", "TCP download BE"]), "t");
        assert_eq!(doc["version"], 4);
        assert_eq!(doc["x_values"], json!([0.0, 0.2, 0.4, 0.6, 0.8]));
        assert_eq!(
            doc["results"]["TCP upload BE"],
            json!([null, null, 10.0, 20.0, null])
        );
        assert_eq!(
            doc["results"]["TCP totals"],
            json!([null, null, 20.0, 40.0, null])
        );
        assert_eq!(
            doc["results"]["TCP upload avg"],
            json!([null, null, 10.0, 20.0, null])
        );
        let raw = &doc["raw_values"]["TCP upload BE"][0];
        assert_eq!(
            (raw["t"].as_f64(), raw["tcp_rtt"].as_f64()),
            (Some(1_795_983_199.4), Some(1.5))
        );
        assert_eq!(doc["metadata"]["T0"], "2026-11-29T20:13:19.000000Z");
        let bidir = to_flent_json(
            &result("tcp_bidirectional", &["TCP download", "TCP upload"]),
            "",
        );
        assert!(
            bidir["results"].get("TCP upload avg").is_none(),
            "not in tcp_bidirectional.conf"
        );
        assert!(bidir["results"].get("TCP totals").is_none());
        let nup = to_flent_json(&result("tcp_nup", &["TCP upload::1", "TCP upload::2"]), "");
        assert_eq!(nup["metadata"]["TEST_PARAMETERS"]["upload_streams"], "2");
        assert_eq!(
            nup["results"]["TCP upload sum"],
            json!([null, null, 20.0, 40.0, null])
        );
    }

    #[test]
    fn time_format_is_flent_utc() {
        assert_eq!(flent_time(1_795_983_199.25), "2026-11-29T20:13:19.250000Z");
    }
}
