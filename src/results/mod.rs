//! The result model: everything routerbench measures ends up here, and every report is rendered
//! from here. Serialized as JSON with a versioned schema (`docs/results-schema.md`); this module
//! reads those files back (`load`, `load_any`), the writers of every output format (this JSON
//! too) are `report::export`.
//!
//! Each measuring area owns one file (`device.rs`, `crypto.rs`, …); `RunResult` is the envelope
//! that `routerbench run` saves under `./routerbench-results/`.

use serde::{Deserialize, Serialize};

pub mod crypto;
pub mod device;
pub mod iperf3_doc;
pub mod lab;
pub mod latency;
pub mod metrics;
pub mod monitor;
pub mod rpm;
pub mod stress;
pub mod throughput;
pub mod validity;
pub mod web;
pub mod wifi;

/// A process and its CPU use over a window (the monitor's busiest processes, hostapd in the
/// Wi-Fi report).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct ProcessCpu {
    pub pid: u32,
    pub comm: String,
    /// Percent of one CPU over the window.
    pub cpu_pct: f64,
}

/// Bumped on any incompatible change of the JSON layout; readers refuse a newer major.
/// `/2` put units into field names (`start_s`, `rtt_us`, `*_pct`, `t_s`, …).
pub const SCHEMA: &str = "routerbench.run/2";

/// Who wrote a result file.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ToolInfo {
    pub name: String,
    pub version: String,
}

impl ToolInfo {
    pub fn this() -> Self {
        Self {
            name: "routerbench".into(),
            version: env!("CARGO_PKG_VERSION").into(),
        }
    }
}

/// One `routerbench run` (or a single command's `--json`): the envelope of all sections.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunResult {
    /// Always [`SCHEMA`] when written by this version; older ones load (renamed fields are
    /// serde aliases).
    pub schema: String,
    pub tool: ToolInfo,
    /// RFC 3339 UTC time the run started.
    pub started_at: String,
    /// RFC 3339 UTC time the run ended.
    pub finished_at: String,
    pub device: Option<device::DeviceInfo>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub crypto: Option<crypto::CryptoResult>,
    /// Latency under load (rrul & co.), when run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency: Option<latency::LatencyResult>,
    /// Responsiveness under working conditions (`routerbench rpm`), when run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rpm: Option<rpm::RpmResult>,
    /// The machine's own view (CPU, softirq, softnet, temperature) during the run's tests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub monitor: Option<monitor::MonitorResult>,
    /// The router's view during the test, pulled from its agent (`routerbench server --monitor`)
    /// with `--monitor HOST`, on the test's time axis (`t_s` from the test's t0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub router: Option<monitor::MonitorResult>,
    /// The netns lab the run went through: configuration, theory, capacity, accuracy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lab: Option<lab::LabResult>,
    /// Loopback (or client) throughput test in iperf3's terms, with both ends' CPU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub throughput: Option<throughput::ThroughputResult>,
    /// The highest shaped rate this CPU sustains with SQM (cake / fq_codel), from the lab.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sqm_capacity: Option<lab::SqmCapacity>,
    /// Several SQM capacities measured side by side on one router (`lab capacity --router vm
    /// --side-by-side`: kernel cake, kernel fq_codel+htb, userspace cake).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sqm_side_by_side: Vec<lab::SqmCapacity>,
    /// `routerbench stress`: the workload, the load's own series, events and the analysis
    /// (the machine's series are `monitor` and `router`, on the same time axis).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stress: Option<stress::StressResult>,
    /// The radios and stations (`routerbench wifi`), when this machine has radios (`run`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wifi: Option<wifi::WifiReport>,
    /// Whether the run was clean: idle at the start, no background load while measuring, no
    /// throttling or frequency scaling, a measured clock near its claim (`crypto`, `run`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub validity: Option<validity::Validity>,
    /// A browser test served by `routerbench server` (`latency.test` is `web`): the client and
    /// the router's verdict on where the queue built.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub web: Option<web::WebClient>,
    /// Things a reader must know to trust the numbers (missing sources, skipped parts).
    #[serde(default)]
    pub notes: Vec<String>,
    /// Ended early by SIGINT/SIGTERM: the sections hold what was measured until then.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub interrupted: bool,
}

impl RunResult {
    pub fn new(started_at: String) -> Self {
        Self {
            schema: SCHEMA.into(),
            tool: ToolInfo::this(),
            finished_at: started_at.clone(),
            started_at,
            device: None,
            crypto: None,
            latency: None,
            rpm: None,
            monitor: None,
            router: None,
            lab: None,
            throughput: None,
            sqm_capacity: None,
            sqm_side_by_side: Vec::new(),
            stress: None,
            wifi: None,
            validity: None,
            web: None,
            notes: Vec::new(),
            interrupted: false,
        }
    }
}

/// Errors reading a saved result file.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    // The causes are in the messages and not `#[source]`: `{:#}` would print them twice.
    #[error("cannot read {path}: {cause}")]
    Io { path: String, cause: std::io::Error },
    #[error("{path} is not a routerbench result file: {cause}")]
    Json {
        path: String,
        cause: serde_json::Error,
    },
    #[error(
        "{path} was written by a newer routerbench (schema {found}); this one reads {expected}: \
         upgrade routerbench"
    )]
    Newer {
        path: String,
        found: String,
        expected: &'static str,
    },
    #[error(
        "{path} was written by an older routerbench (schema {found}) and does not convert to \
         {expected}: {cause}; re-run the test with this version"
    )]
    Older {
        path: String,
        found: String,
        expected: &'static str,
        cause: serde_json::Error,
    },
    /// A file of another kind of output that did not read as one (`what` says which).
    #[error("{path}: {what}: {why}")]
    Kind {
        path: String,
        what: &'static str,
        why: String,
    },
    #[error("{path} is not a routerbench result file ({why}): {hint}")]
    NotOurs {
        path: String,
        why: String,
        hint: &'static str,
    },
}

/// The major version of a `routerbench.run/N` schema string.
fn schema_major(schema: &str) -> Option<u32> {
    schema
        .strip_prefix("routerbench.run/")?
        .split('.')
        .next()?
        .parse()
        .ok()
}

/// Reads a result file written by `save`. Files of an older schema load when their layout still
/// converts (fields added since then are optional); a newer or unknown schema is refused with a
/// message naming the version.
pub fn load(path: &std::path::Path) -> Result<RunResult, LoadError> {
    let p = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|cause| LoadError::Io {
        path: p.clone(),
        cause,
    })?;
    let value: serde_json::Value =
        serde_json::from_slice(text.as_bytes()).map_err(|cause| LoadError::Json {
            path: p.clone(),
            cause,
        })?;
    from_value(value, p)
}

/// Every result in a file written by any command's `--json`: a result envelope (`run`,
/// `crypto`, the latency tests, `lab run/measure/capacity`), iperf3 `-J` documents (`client`,
/// `loopback`; `server` appends one per test, so a file may hold several), `device`, `monitor`,
/// `lab up` and `lab status`. Each becomes an envelope with its one section.
pub fn load_any(path: &std::path::Path) -> Result<Vec<RunResult>, LoadError> {
    let p = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|cause| LoadError::Io {
        path: p.clone(),
        cause,
    })?;
    let mut out = Vec::new();
    for doc in
        serde_json::Deserializer::from_slice(text.as_bytes()).into_iter::<serde_json::Value>()
    {
        let doc = doc.map_err(|cause| LoadError::Json {
            path: p.clone(),
            cause,
        })?;
        out.push(from_any_value(doc, &p)?);
    }
    if out.is_empty() {
        return Err(LoadError::NotOurs {
            path: p,
            why: "it is empty".into(),
            hint: "give a file written by a routerbench command's --json",
        });
    }
    Ok(out)
}

/// One document of any `--json` kind as an envelope (see [`load_any`]).
fn from_any_value(doc: serde_json::Value, p: &str) -> Result<RunResult, LoadError> {
    let has = |k: &str| doc.get(k).is_some();
    let kind = |what: &'static str| {
        move |e: serde_json::Error| LoadError::Kind {
            path: p.to_string(),
            what,
            why: e.to_string(),
        }
    };
    let started = crate::util::time::now_rfc3339();
    let mut r = RunResult::new(started);
    if has("schema") {
        return from_value(doc, p.to_string());
    } else if iperf3_doc::is_iperf3_doc(&doc) {
        let t = iperf3_doc::from_iperf3_json(&doc).map_err(|why| LoadError::Kind {
            path: p.to_string(),
            what: "iperf3 -J output",
            why,
        })?;
        r.started_at = crate::util::time::rfc3339_utc(t.timesecs as i64);
        r.finished_at = r.started_at.clone();
        r.interrupted = t.interrupted;
        r.throughput = Some(t);
    } else if has("samples") && has("summary") && has("cpus") {
        r.monitor = Some(serde_json::from_value(doc).map_err(kind("monitor --json output"))?);
    } else if has("namespaces") && has("up") {
        let st: lab::LabStatus =
            serde_json::from_value(doc).map_err(kind("lab status --json output"))?;
        let (Some(config), Some(theory)) = (st.config, st.theory) else {
            return Err(LoadError::Kind {
                path: p.to_string(),
                what: "lab status --json output",
                why: format!("lab {} is not up: nothing to report", st.name),
            });
        };
        r.lab = Some(lab::LabResult::new(config, theory));
    } else if has("config") && has("theory") {
        let up: lab::LabUp = serde_json::from_value(doc).map_err(kind("lab up --json output"))?;
        r.lab = Some(lab::LabResult::new(up.config, up.theory));
    } else if has("kernel") || has("cpu_model") || has("soc") {
        r.device = Some(serde_json::from_value(doc).map_err(kind("device --json output"))?);
    } else {
        return Err(LoadError::NotOurs {
            path: p.to_string(),
            why: "it is none of the --json outputs (no \"schema\", iperf3 \"start\"/\"end\", device, monitor or lab keys)".into(),
            hint: "give a file written by a routerbench command's --json",
        });
    }
    Ok(r)
}

/// A result envelope from its JSON (the schema checked).
fn from_value(value: serde_json::Value, p: String) -> Result<RunResult, LoadError> {
    let found = value
        .get("schema")
        .and_then(|s| s.as_str())
        .map(str::to_string);
    let Some(found) = found else {
        let iperf3 = value.get("start").is_some() && value.get("end").is_some();
        return Err(LoadError::NotOurs {
            path: p,
            why: if iperf3 {
                "it is iperf3 -J output".into()
            } else {
                "it has no \"schema\" field".into()
            },
            hint: "save results with `routerbench run`, or `--json FILE` of crypto, rrul or lab run",
        });
    };
    let (Some(major), Some(ours)) = (schema_major(&found), schema_major(SCHEMA)) else {
        return Err(LoadError::NotOurs {
            path: p,
            why: format!("schema `{found}`"),
            hint: "expected routerbench.run/N",
        });
    };
    if major > ours {
        return Err(LoadError::Newer {
            path: p,
            found,
            expected: SCHEMA,
        });
    }
    serde_json::from_value(value).map_err(|cause| {
        if major < ours {
            LoadError::Older {
                path: p,
                found,
                expected: SCHEMA,
                cause,
            }
        } else {
            LoadError::Json { path: p, cause }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(name: &str, text: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("rb-load-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    #[test]
    fn older_schema_loads_newer_and_foreign_files_name_the_version() {
        let old = r#"{"schema":"routerbench.run/0","tool":{"name":"routerbench","version":"0.0.1"},"started_at":"a","finished_at":"b","device":null}"#;
        let r = load(&write("old.json", old)).unwrap();
        assert_eq!(r.schema, "routerbench.run/0");
        let broken = r#"{"schema":"routerbench.run/0","tool":{"name":"routerbench"}}"#;
        let e = load(&write("old-broken.json", broken))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("older routerbench (schema routerbench.run/0)"),
            "{e}"
        );
        let newer = old.replace("run/0", "run/9");
        let e = load(&write("new.json", &newer)).unwrap_err().to_string();
        assert!(
            e.contains("newer routerbench (schema routerbench.run/9)"),
            "{e}"
        );
        let e = load(&write("iperf.json", r#"{"start":{},"end":{}}"#))
            .unwrap_err()
            .to_string();
        assert!(e.contains("iperf3 -J output"), "{e}");
        let _ = std::fs::remove_dir_all(
            std::env::temp_dir().join(format!("rb-load-{}", std::process::id())),
        );
    }
}
