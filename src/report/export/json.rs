//! routerbench's own JSON: a result envelope (`results::RunResult`, `docs/results-schema.md`)
//! or any command's `--json` document, pretty-printed by serde_json with a final newline.
//! `results::load` and `results::load_any` read it back.

use super::{ExportError, Exporter};
use serde::Serialize;

/// Pretty JSON with a final newline, of any serializable document.
#[derive(Debug, Clone, Copy, Default)]
pub struct Json;

impl<T: Serialize + ?Sized> Exporter<T> for Json {
    fn serialize(&self, input: &T) -> Result<Vec<u8>, ExportError> {
        let mut text = serde_json::to_vec_pretty(input).map_err(|e| ExportError::Encode {
            what: "the JSON document",
            cause: e.into(),
        })?;
        text.push(b'\n');
        Ok(text)
    }
}

/// Writes `result` as pretty JSON, atomically (temp file + rename), creating the directory:
/// the files `routerbench run` saves, which `results::load` reads. The error is the write's
/// own (callers name the file).
pub fn save(result: &crate::results::RunResult, path: &std::path::Path) -> std::io::Result<()> {
    let bytes = Json.serialize(result).map_err(std::io::Error::other)?;
    crate::util::fs::write_output(path, bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bytes_are_serde_json_pretty_with_a_newline() {
        let r = crate::results::RunResult::new("2026-12-02T00:00:00Z".into());
        let want = serde_json::to_string_pretty(&r).unwrap() + "\n";
        assert_eq!(Json.serialize(&r).unwrap(), want.into_bytes());
        let dir = std::env::temp_dir().join(format!("rb-export-json-{}", std::process::id()));
        let path = dir.join("new").join("r.json");
        save(&r, &path).unwrap();
        let back = crate::results::load(&path).unwrap();
        assert_eq!(back.started_at, r.started_at);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
