//! The one `--json [FILE|-]` (`-J`) convention of every command that writes JSON; the document
//! is `report::export::json`'s (or `report::export::iperf3`'s), the file writer `util::fs`'s.
//!
//! - `--json FILE` writes the JSON to FILE (checked before anything is measured: not a
//!   directory, its directory exists and is writable; none is created; the file is replaced
//!   atomically, a device such as `/dev/stdout` is written in place); the command prints its
//!   usual text. If the write still fails after measuring, the JSON goes to a fallback file
//!   (`./routerbench-unsaved-STAMP.json`, else the temp directory), or to standard output if
//!   no file can be written, and the error says where: a measurement is never lost.
//! - `--json` alone, or `--json -`, prints the JSON on standard output *instead of* the text
//!   (notes, progress and "saved" lines go to standard error, so stdout is one JSON document).
//!
//! The value is optional, so the word right after `--json` is taken as its FILE unless it starts
//! with `-`: `rrul --json out.json HOST` saves to out.json, and for standard output write the
//! positional first (`rrul HOST --json`), or `--json -`, or `--json=-`. A FILE that starts with
//! `-` is written `--json=./-name`.

use std::io::Write;
use std::path::{Path, PathBuf};

use clap::Args;

use crate::report::export::{Exporter, json::Json};

/// Where `--json` sends the JSON.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JsonTarget {
    /// `--json` alone or `--json -`.
    Stdout,
    /// `--json FILE`.
    File(PathBuf),
}

fn parse_target(s: &str) -> Result<JsonTarget, String> {
    match s {
        "-" => Ok(JsonTarget::Stdout),
        "" => Err("empty FILE: give a file name, or `-` for standard output".into()),
        path => Ok(JsonTarget::File(PathBuf::from(path))),
    }
}

/// `-J, --json [FILE|-]`, flattened into every command that writes JSON.
#[derive(Debug, Clone, Default, Args)]
pub struct JsonArg {
    /// Write the result as JSON to FILE and print the usual text; without FILE (or with `-`),
    /// print the JSON on standard output instead of the text. The word after --json is taken as
    /// FILE unless it starts with `-`.
    #[arg(
        short = 'J',
        long = "json",
        value_name = "FILE",
        num_args = 0..=1,
        default_missing_value = "-",
        value_parser = parse_target
    )]
    pub json: Option<JsonTarget>,
}

impl JsonArg {
    /// `--json` was given, in either form.
    pub fn is_set(&self) -> bool {
        self.json.is_some()
    }

    /// The JSON goes to standard output, so the command's text stays off it.
    pub fn on_stdout(&self) -> bool {
        self.json == Some(JsonTarget::Stdout)
    }

    /// The FILE of `--json FILE`.
    pub fn file(&self) -> Option<&Path> {
        match &self.json {
            Some(JsonTarget::File(p)) => Some(p),
            _ => None,
        }
    }

    /// Before measuring: FILE is not a directory, and its directory exists and takes a file.
    pub fn check(&self) -> anyhow::Result<()> {
        match self.file() {
            Some(p) => crate::cli::check_output_file(p, "--json"),
            None => Ok(()),
        }
    }

    /// Writes one JSON document (`value`, pretty-printed, with a final newline): to FILE or
    /// standard output. Returns the FILE written, for a "saved" line.
    pub fn write<T: serde::Serialize>(&self, value: &T) -> anyhow::Result<Option<&Path>> {
        let bytes = Json.serialize(value)?;
        let text = String::from_utf8(bytes)?;
        self.write_text(&text, |t| crate::out!("{t}"))
    }

    /// Writes one JSON document given as text (ending in a newline): to FILE (replaced
    /// atomically) or through `stdout` (standard output, or iperf3's `--logfile` for client and
    /// loopback). Returns the FILE written. A failed write keeps the document (see the module
    /// doc) and is an error naming where it went.
    pub fn write_text(
        &self,
        text: &str,
        stdout: impl FnOnce(&str),
    ) -> anyhow::Result<Option<&Path>> {
        match &self.json {
            None => Ok(None),
            Some(JsonTarget::Stdout) => {
                stdout(text);
                Ok(None)
            }
            Some(JsonTarget::File(path)) => match crate::util::fs::write_output(path, text) {
                Ok(()) => Ok(Some(path)),
                Err(e) => Err(kept_elsewhere(path, &e, text, stdout)),
            },
        }
    }

    /// Appends one JSON document to FILE, or passes it to `stdout`: for the server, which
    /// writes one document per test. A failed append keeps the document as `write_text` does.
    pub fn append_text(&self, text: &str, stdout: impl FnOnce(&str)) -> anyhow::Result<()> {
        match &self.json {
            None => Ok(()),
            Some(JsonTarget::Stdout) => {
                stdout(text);
                Ok(())
            }
            Some(JsonTarget::File(path)) => std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .and_then(|mut f| f.write_all(text.as_bytes()))
                .map_err(|e| kept_elsewhere(path, &e, text, stdout)),
        }
    }

    /// A "saved FILE" line: on standard output, or standard error while the JSON is there.
    pub fn say(&self, line: &str) {
        if self.on_stdout() {
            crate::errln!("{line}");
        } else {
            crate::outln!("{line}");
        }
    }
}

/// Where a document goes when its FILE cannot be written: a fallback file in the current
/// directory, else in the temp directory, else `stdout`. The error says which.
fn kept_elsewhere(
    path: &Path,
    e: &std::io::Error,
    text: &str,
    stdout: impl FnOnce(&str),
) -> anyhow::Error {
    let stamp = crate::util::time::now_rfc3339().replace(':', "");
    let name = format!("routerbench-unsaved-{stamp}-{}.json", std::process::id());
    for dir in [PathBuf::from("."), std::env::temp_dir()] {
        let fallback = dir.join(&name);
        if std::fs::OpenOptions::new()
            .create_new(true)
            .write(true)
            .open(&fallback)
            .and_then(|mut f| f.write_all(text.as_bytes()))
            .is_ok()
        {
            return anyhow::anyhow!(
                "cannot write {}: {e}; the result was saved to {} instead",
                path.display(),
                fallback.display()
            );
        }
    }
    stdout(text);
    anyhow::anyhow!(
        "cannot write {}: {e}, nor a fallback file here or in {}; the result was printed on \
         standard output instead",
        path.display(),
        std::env::temp_dir().display()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Cmd {
        #[command(flatten)]
        json: JsonArg,
        #[arg(short)]
        quiet: bool,
        host: Option<String>,
    }

    fn parse(args: &[&str]) -> Cmd {
        Cmd::try_parse_from(std::iter::once("t").chain(args.iter().copied())).unwrap()
    }

    #[test]
    fn forms_of_the_flag() {
        assert_eq!(parse(&[]).json.json, None);
        assert!(parse(&["--json"]).json.on_stdout());
        assert!(parse(&["-J"]).json.on_stdout());
        assert!(parse(&["--json", "-"]).json.on_stdout());
        assert!(parse(&["--json=-"]).json.on_stdout());
        let c = parse(&["--json", "-q"]);
        assert!(c.json.on_stdout() && c.quiet);
        let c = parse(&["host", "--json"]);
        assert!(c.json.on_stdout());
        assert_eq!(c.host.as_deref(), Some("host"));
        let c = parse(&["--json", "out.json", "host"]);
        assert_eq!(c.json.file(), Some(Path::new("out.json")));
        assert_eq!(c.host.as_deref(), Some("host"));
        // The word after --json is its FILE: the documented rule.
        let c = parse(&["--json", "host"]);
        assert_eq!(c.json.file(), Some(Path::new("host")));
        assert_eq!(c.host, None);
        assert!(Cmd::try_parse_from(["t", "--json="]).is_err());
    }

    #[test]
    fn writes_the_file_or_stdout() {
        let dir = std::env::temp_dir().join(format!("rb-jsonarg-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        let path = dir.join("sub").join("r.json");
        let arg = JsonArg {
            json: Some(JsonTarget::File(path.clone())),
        };
        arg.check().unwrap();
        let mut printed = String::new();
        let saved = arg
            .write_text("{\"a\": 1}\n", |t| printed.push_str(t))
            .unwrap();
        assert_eq!(saved, Some(path.as_path()));
        assert!(printed.is_empty());
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "{\"a\": 1}\n");
        arg.append_text("{}\n", |_| {}).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "{\"a\": 1}\n{}\n");
        let out = JsonArg {
            json: Some(JsonTarget::Stdout),
        };
        let saved = out.write_text("{}\n", |t| printed.push_str(t)).unwrap();
        assert_eq!((saved, printed.as_str()), (None, "{}\n"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn bad_paths_are_refused_before_measuring_and_nothing_is_created() {
        let dir = std::env::temp_dir().join(format!("rb-jsonarg-bad-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let check = |p: &Path| {
            JsonArg {
                json: Some(JsonTarget::File(p.to_path_buf())),
            }
            .check()
            .map_err(|e| e.to_string())
        };
        let e = check(&dir).unwrap_err();
        assert!(
            e.contains("is a directory") && e.contains("result.json"),
            "{e}"
        );
        let missing = dir.join("no").join("such").join("x.json");
        let e = check(&missing).unwrap_err();
        assert!(
            e.contains("does not exist") && e.contains("mkdir -p"),
            "{e}"
        );
        assert!(!dir.join("no").exists(), "no directory was created");
        assert!(
            check(Path::new("/dev/null")).is_ok(),
            "a device is written in place"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_failed_write_keeps_the_document() {
        // /dev/full takes the open and fails the write (ENOSPC): after the check passed.
        let arg = JsonArg {
            json: Some(JsonTarget::File(PathBuf::from("/dev/full"))),
        };
        arg.check().unwrap();
        let mut printed = String::new();
        let e = arg
            .write_text("{\"kept\": true}\n", |t| printed.push_str(t))
            .unwrap_err()
            .to_string();
        assert!(e.contains("cannot write /dev/full"), "{e}");
        let saved = e
            .split("saved to ")
            .nth(1)
            .and_then(|r| r.strip_suffix(" instead"))
            .map(PathBuf::from);
        match saved {
            Some(p) => {
                assert_eq!(std::fs::read_to_string(&p).unwrap(), "{\"kept\": true}\n");
                std::fs::remove_file(p).unwrap();
            }
            None => assert_eq!(printed, "{\"kept\": true}\n", "{e}"),
        }
    }
}
