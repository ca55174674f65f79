//! One room per output format, after hyperfine's `src/export/`: each file turns a result into
//! the bytes of one format ([`Exporter::serialize`]) and writes them to a file
//! ([`Exporter::write_to_file`], through the project's one writer, `util::fs`). Nothing else in
//! the library writes a format (tests/architecture.rs checks it); the commands (`cli/`) choose
//! the exporter and the file.
//!
//! - [`iperf3`]: iperf3's `-J` document of a throughput test (`client`, `server`, `loopback`).
//! - [`flent`] (with `flent_voip`, `flent_wifi`): flent's `.flent.gz` data file of a latency
//!   test, with the router's access-point stations as flent's `wifi_stats` series.
//! - [`json`]: routerbench's own result JSON (`docs/results-schema.md`) and every `--json`.
//! - [`html`]: the self-contained HTML report of one or more results.
//! - [`prometheus`]: Prometheus text 0.0.4 and OpenMetrics 1.0 of the metric families
//!   (`GET /metrics`, `--metrics-file`).
//!
//! A new output format is one more file here with one more `Exporter`.

use std::path::{Path, PathBuf};

pub mod flent;
mod flent_voip;
mod flent_wifi;
#[cfg(feature = "plots")]
pub mod html;
pub mod iperf3;
pub mod json;
pub mod prometheus;

/// Why a format could not be produced or written: the file and the cause.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    #[error("cannot encode {what}: {cause}")]
    Encode {
        what: &'static str,
        cause: std::io::Error,
    },
    #[error("cannot write {}: {cause}", path.display())]
    Write {
        path: PathBuf,
        cause: std::io::Error,
    },
}

/// One output format of an input `T` (a result, or a set of them).
pub trait Exporter<T: ?Sized> {
    /// The whole file's bytes for `input`.
    fn serialize(&self, input: &T) -> Result<Vec<u8>, ExportError>;

    /// Writes the format of `input` to `path`: a file replaced atomically, or a device or pipe
    /// written in place (`util::fs::write_output`).
    fn write_to_file(&self, input: &T, path: &Path) -> Result<(), ExportError> {
        let bytes = self.serialize(input)?;
        crate::util::fs::write_output(path, bytes).map_err(|cause| ExportError::Write {
            path: path.to_path_buf(),
            cause,
        })
    }
}
