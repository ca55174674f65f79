//! The result model: everything routerbench measures ends up here, and every report is rendered
//! from here. Serialized as JSON with a versioned schema (`docs/results-schema.md`).
//!
//! Each measuring area owns one file (`device.rs`, `crypto.rs`, …); `RunResult` is the envelope
//! that `routerbench run` saves under `./routerbench-results/`.

use serde::{Deserialize, Serialize};

pub mod crypto;
pub mod device;
pub mod flent;
pub mod lab;
pub mod latency;
pub mod monitor;
pub mod throughput;

/// Bumped on any incompatible change of the JSON layout; readers refuse a newer major.
/// `/2` put units into field names (`start_s`, `rtt_us`, `*_pct`, `t_s`, …).
pub const SCHEMA: &str = "routerbench.run/2";

/// Older schemas this version still reads: their field names are serde aliases.
pub const SCHEMA_READABLE: [&str; 2] = ["routerbench.run/1", SCHEMA];

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
    /// Always [`SCHEMA`] when written by this version; [`SCHEMA_READABLE`] ones load.
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
    /// The machine's own view (CPU, softirq, softnet, temperature) during the run's tests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub monitor: Option<monitor::MonitorResult>,
    /// The netns lab the run went through: configuration, theory, capacity, accuracy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lab: Option<lab::LabResult>,
    /// Loopback (or client) throughput test in iperf3's terms, with both ends' CPU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub throughput: Option<throughput::ThroughputResult>,
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
            monitor: None,
            lab: None,
            throughput: None,
            notes: Vec::new(),
            interrupted: false,
        }
    }
}

/// Errors reading a saved result file.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("cannot read {path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("{path} is not a routerbench result file: {source}")]
    Json {
        path: String,
        source: serde_json::Error,
    },
    #[error("{path} has schema {found}, this routerbench reads {expected}: upgrade routerbench")]
    Schema {
        path: String,
        found: String,
        expected: &'static str,
    },
}

/// Reads a result file written by `save`, checking the schema's major version.
pub fn load(path: &std::path::Path) -> Result<RunResult, LoadError> {
    let p = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|source| LoadError::Io {
        path: p.clone(),
        source,
    })?;
    let value: serde_json::Value =
        serde_json::from_str(&text).map_err(|source| LoadError::Json {
            path: p.clone(),
            source,
        })?;
    let found = value
        .get("schema")
        .and_then(|s| s.as_str())
        .unwrap_or("")
        .to_string();
    if !SCHEMA_READABLE.contains(&found.as_str()) {
        return Err(LoadError::Schema {
            path: p,
            found,
            expected: SCHEMA,
        });
    }
    serde_json::from_value(value).map_err(|source| LoadError::Json { path: p, source })
}

/// Writes `result` as pretty JSON, atomically (temp file + rename), creating the directory.
pub fn save(result: &RunResult, path: &std::path::Path) -> std::io::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    let tmp = path.with_extension("json.tmp");
    let text = serde_json::to_string_pretty(result).map_err(std::io::Error::other)?;
    std::fs::write(&tmp, text + "\n")?;
    std::fs::rename(&tmp, path)
}
