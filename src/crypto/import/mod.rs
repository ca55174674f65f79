//! Import of saved `openssl speed` output (docs/protocols/openssl-speed.md §1.3, §2): OpenSSL 1.0.2 (5 sizes),
//! 1.1.1 (`OpenSSL 1.1.1w` line, two-word cipher labels), 3.0/3.1 (`version: 3.0.19`, one-word
//! labels), 3.2+ (RSA line with encrypt/decrypt columns), `-evp` upper-case labels, `-mr` lines
//! and the `-multi` parent output. Stdout-only captures and captures with the stderr `Doing …`
//! lines mixed in both work. Columns are found from the `type` header, never by position.
//!
//! Every line must be something `openssl speed` prints; anything else is an error naming the line
//! and what was expected there.

mod assemble;
pub mod mr;
pub mod tokens;

use std::collections::{BTreeMap, BTreeSet};

use crate::results::crypto::{Algorithm, AlgorithmKind, CryptoResult};
use mr::MrLine;
use tokens::{
    algorithm_for_label, excerpt, parse_number, parse_rate_cell, parse_seconds, parse_type_header,
};

/// What `openssl speed` prints, for error messages.
const EXPECTED_ANY: &str = "a line of `openssl speed` output: `version: …` / `OpenSSL 1.1.1w …`, \
    `built on:`, `options:`, `compiler:`, `type 16 bytes 64 bytes …`, a table row such as \
    `md5  73980.02k …`, `rsa 2048 bits 0.000347s 0.000019s 2880.0 53242.6`, a `Doing …` \
    progress line, or a `+F:…` line of -mr";

/// An import failure: which line, what is wrong with it, and what was expected.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{}", self.render())]
pub struct ImportError {
    /// The file name, or `-` for standard input.
    pub source_name: String,
    /// 1-based line number; 0 when the problem is the file as a whole.
    pub line: usize,
    /// The offending line (shortened).
    pub text: String,
    pub problem: String,
    pub expected: String,
}

impl ImportError {
    fn render(&self) -> String {
        if self.line == 0 {
            format!(
                "{}: {}; expected {}",
                self.source_name, self.problem, self.expected
            )
        } else {
            format!(
                "{} line {}: {}: `{}`; expected {}",
                self.source_name, self.line, self.problem, self.text, self.expected
            )
        }
    }
}

/// Which section of the output the parser is in.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum Section {
    #[default]
    Preamble,
    Table,
    PublicKey,
}

#[derive(Debug, Clone)]
struct BulkRow {
    sizes: Vec<u32>,
    values: Vec<f64>,
    line: usize,
}

#[derive(Debug, Default)]
struct MrChild {
    sizes: Option<Vec<u32>>,
    bulk: BTreeMap<Algorithm, (Vec<u32>, Vec<f64>)>,
    pkey: BTreeMap<Algorithm, (f64, f64)>,
}

#[derive(Debug, Default)]
struct Parser {
    source_name: String,
    version: Option<String>,
    section: Section,
    sizes: Option<(Vec<u32>, usize)>,
    rows: BTreeMap<Algorithm, BulkRow>,
    pkey: BTreeMap<Algorithm, (f64, f64)>,
    rsa_four_columns: bool,
    two_word_labels: bool,
    upper_case_labels: bool,
    mr: BTreeMap<u32, MrChild>,
    forked: BTreeSet<u32>,
    notes: Vec<String>,
    ignored: BTreeSet<String>,
    lines: usize,
    /// Progress lines (`Doing …`, `+DT:`) seen: the stderr half of a run.
    progress_lines: usize,
}

/// Parses saved `openssl speed` output. `source_name` appears in errors and in the result.
pub fn parse(input: &[u8], source_name: &str) -> Result<CryptoResult, ImportError> {
    let text = check_text(input, source_name)?;
    if text.trim().is_empty() {
        return Err(ImportError {
            source_name: source_name.into(),
            line: 0,
            text: String::new(),
            problem: "the input is empty".into(),
            expected: "the saved output of `openssl speed …` (e.g. `openssl speed md5 … | tee \
                       /tmp/sslspeed`)"
                .into(),
        });
    }
    let mut p = Parser {
        source_name: source_name.into(),
        ..Parser::default()
    };
    for (i, raw) in text.lines().enumerate() {
        p.lines = i + 1;
        p.line(i + 1, raw)?;
    }
    p.finish()
}

/// Rejects binary input, naming the line of the first offending byte.
fn check_text<'a>(input: &'a [u8], source_name: &str) -> Result<&'a str, ImportError> {
    let bad_at = input
        .iter()
        .position(|&b| b == 0)
        .or_else(|| std::str::from_utf8(input).err().map(|e| e.valid_up_to()));
    match bad_at {
        None => std::str::from_utf8(input).map_err(|_| unreachable_text(source_name)),
        Some(pos) => {
            let line = input[..pos].iter().filter(|&&b| b == b'\n').count() + 1;
            let col = pos
                - input[..pos]
                    .iter()
                    .rposition(|&b| b == b'\n')
                    .map_or(0, |p| p + 1)
                + 1;
            Err(ImportError {
                source_name: source_name.into(),
                line,
                text: format!("byte 0x{:02x} at column {col}", input[pos]),
                problem: "binary data, not text".into(),
                expected: "the text that `openssl speed` prints".into(),
            })
        }
    }
}

fn unreachable_text(source_name: &str) -> ImportError {
    ImportError {
        source_name: source_name.into(),
        line: 0,
        text: String::new(),
        problem: "the input is not UTF-8 text".into(),
        expected: "the text that `openssl speed` prints".into(),
    }
}

/// The cell routerbench's `--format openssl` prints for a size it did not measure.
const NOT_MEASURED: &str = "n/a";

/// Lines `openssl speed` prints that carry nothing the table needs.
const SKIPPED_PREFIXES: [&str; 11] = [
    "built on",
    "options",
    "compiler",
    "CPUINFO:",
    "platform:",
    "timing function",
    "The 'numbers' are",
    "Doing ",
    "Forked child",
    "You have chosen to measure",
    "To get the most accurate",
];

impl Parser {
    fn err(
        &self,
        line: usize,
        text: &str,
        problem: impl Into<String>,
        expected: &str,
    ) -> ImportError {
        ImportError {
            source_name: self.source_name.clone(),
            line,
            text: excerpt(text),
            problem: problem.into(),
            expected: expected.into(),
        }
    }

    fn line(&mut self, n: usize, raw: &str) -> Result<(), ImportError> {
        let t = raw.trim();
        if t.is_empty() || t.starts_with('#') {
            return Ok(());
        }
        if let Some((child, inner)) = mr::split_got(t) {
            return self.mr_line(n, raw, child, inner);
        }
        if t.starts_with('+') {
            return self.mr_line(n, raw, 0, t);
        }
        if let Some(v) = t.strip_prefix("version:") {
            self.version = Some(format!("OpenSSL {}", v.trim()));
            self.section = Section::Preamble;
            return Ok(());
        }
        let toks: Vec<&str> = t.split_whitespace().collect();
        if matches!(toks[0], "OpenSSL" | "LibreSSL") && toks.len() > 1 {
            self.version = Some(format!("{} {}", toks[0], toks[1]));
            self.section = Section::Preamble;
            return Ok(());
        }
        if toks[0] == "OpenSSL-format" && toks.len() > 1 {
            // routerbench's own `--format openssl` output: the engine is in `$2`.
            self.version = Some(toks[1].to_string());
            self.section = Section::Preamble;
            return Ok(());
        }
        if t.starts_with("Doing ") {
            self.progress_lines += 1;
        }
        if SKIPPED_PREFIXES.iter().any(|p| t.starts_with(p)) || is_stderr_count(&toks) {
            return Ok(());
        }
        if t.contains(":error:") {
            let shown: String = t.chars().take(300).collect();
            self.notes
                .push(format!("openssl reported an error: {shown}"));
            return Ok(());
        }
        if t.contains("openssl speed") {
            // The command line of a pasted terminal session.
            return Ok(());
        }
        if toks[0] == "type" {
            let sizes = parse_type_header(t).map_err(|why| {
                self.err(
                    n,
                    raw,
                    format!("malformed `type` header: {why}"),
                    "`type  16 bytes  64 bytes  256 bytes  1024 bytes  8192 bytes  16384 bytes`",
                )
            })?;
            self.sizes = Some((sizes, n));
            self.section = Section::Table;
            return Ok(());
        }
        if matches!(toks[0], "rsa" | "dsa") && toks.get(2) == Some(&"bits") {
            self.section = Section::PublicKey;
            return self.pkey_row(n, raw, &toks);
        }
        if toks.iter().any(|t| t.ends_with("/s")) && !toks.iter().any(|t| parse_number(t).is_some())
        {
            if toks.contains(&"encrypt") {
                self.rsa_four_columns = true;
            }
            self.section = Section::PublicKey;
            return Ok(());
        }
        match self.section {
            Section::Table => self.table_row(n, raw, &toks),
            // OpenSSL 3.x prints the `-multi` summary without a `type` header.
            Section::Preamble if looks_like_row(&toks) => self.table_row(n, raw, &toks),
            Section::PublicKey if is_other_pkey_row(&toks) => Ok(()),
            _ => Err(self.err(
                n,
                raw,
                "this is not a line of `openssl speed` output",
                EXPECTED_ANY,
            )),
        }
    }

    fn table_row(&mut self, n: usize, raw: &str, toks: &[&str]) -> Result<(), ImportError> {
        let Some((sizes, header_line)) = self.sizes.clone().or_else(|| self.implied_sizes(toks))
        else {
            return Err(self.err(n, raw, "a table row before any `type` header", EXPECTED_ANY));
        };
        // `n/a`: a size routerbench's own `--format openssl` did not measure (`--row-only`).
        let first_value = toks
            .iter()
            .position(|t| parse_rate_cell(t).is_some() || *t == NOT_MEASURED)
            .unwrap_or(toks.len());
        let label = toks[..first_value].join(" ");
        let values: Option<Vec<Option<f64>>> = toks[first_value..]
            .iter()
            .map(|&t| match t {
                NOT_MEASURED => Some(None),
                _ => parse_rate_cell(t).map(Some),
            })
            .collect();
        let expected = format!(
            "a label and {} rate cells (one per size of the `type` header{}), e.g. \
             `md5  73980.02k  201180.73k …`",
            sizes.len(),
            if header_line > 0 {
                format!(" on line {header_line}")
            } else {
                String::new()
            }
        );
        if label.is_empty() {
            return Err(self.err(n, raw, "a table row without a label", &expected));
        }
        let Some(values) = values else {
            return Err(self.err(n, raw, "a cell of this row is not a rate", &expected));
        };
        if values.len() != sizes.len() {
            let problem = format!(
                "the `{label}` row has {} values instead of {} (the output looks truncated or \
                 mixed)",
                values.len(),
                sizes.len()
            );
            return Err(self.err(n, raw, problem, &expected));
        }
        let Some(alg) = algorithm_for_label(&label) else {
            self.ignored.insert(label);
            return Ok(());
        };
        if alg.kind() == AlgorithmKind::Cipher && toks[..first_value].len() == 2 {
            self.two_word_labels = true;
        }
        if label.chars().any(|c| c.is_ascii_uppercase()) {
            self.upper_case_labels = true;
        }
        if let Some(old) = self.rows.get(&alg) {
            self.notes.push(format!(
                "{}: line {n} replaces the row on line {}",
                alg.cli_name(),
                old.line
            ));
        }
        let (sizes, values): (Vec<u32>, Vec<f64>) = sizes
            .iter()
            .zip(values)
            .filter_map(|(&s, v)| v.map(|v| (s, v)))
            .unzip();
        self.rows.insert(
            alg,
            BulkRow {
                sizes,
                values,
                line: n,
            },
        );
        Ok(())
    }

    /// Sizes for a row without a `type` header (the `-multi` summary of 3.x): the children's
    /// `+H` line, else openssl's standard sizes when the row has 5 (1.0.x) or 6 cells.
    fn implied_sizes(&self, toks: &[&str]) -> Option<(Vec<u32>, usize)> {
        if let Some(sizes) = self.mr.values().find_map(|c| c.sizes.clone()) {
            return Some((sizes, 0));
        }
        let cells = toks.iter().filter(|t| parse_rate_cell(t).is_some()).count();
        matches!(cells, 5 | 6).then(|| (crate::crypto::BLOCK_SIZES[..cells].to_vec(), 0))
    }

    fn pkey_row(&mut self, n: usize, raw: &str, toks: &[&str]) -> Result<(), ImportError> {
        let expected = "`rsa 2048 bits 0.000347s 0.000019s 2880.0 53242.6` (7 fields; 3.2+ RSA: \
                        11 fields with encrypt/decrypt times and rates)";
        let (sign_at, times) = match toks.len() {
            7 => (5, 3..5),
            11 if toks[0] == "rsa" => (7, 3..7),
            k => {
                return Err(self.err(
                    n,
                    raw,
                    format!("the {} line has {k} fields", toks[0]),
                    expected,
                ));
            }
        };
        let bits: Option<u32> = toks[1].parse().ok();
        let times_ok = toks[times].iter().all(|t| parse_seconds(t).is_some());
        let sign = parse_number(toks[sign_at]);
        let verify = parse_number(toks[sign_at + 1]);
        let (Some(bits), true, Some(sign), Some(verify)) = (bits, times_ok, sign, verify) else {
            return Err(self.err(n, raw, format!("malformed {} line", toks[0]), expected));
        };
        if toks.len() == 11 {
            self.rsa_four_columns = true;
        }
        if bits == 2048 {
            let alg = if toks[0] == "rsa" {
                Algorithm::Rsa2048
            } else {
                Algorithm::Dsa2048
            };
            self.pkey.insert(alg, (sign, verify));
        }
        Ok(())
    }

    fn mr_line(&mut self, n: usize, raw: &str, child: u32, line: &str) -> Result<(), ImportError> {
        let parsed = mr::parse_mr(line)
            .map_err(|exp| self.err(n, raw, "malformed machine-readable (-mr) line", &exp))?;
        self.forked.insert(child);
        let entry = self.mr.entry(child).or_default();
        match parsed {
            MrLine::Header(sizes) => entry.sizes = Some(sizes),
            MrLine::Bulk { name, values } => {
                let sizes = match &entry.sizes {
                    Some(s) => s.clone(),
                    // Without +H: 1.0.2 had 5 sizes, later versions 6, always from 16 bytes.
                    None => crate::crypto::BLOCK_SIZES
                        .iter()
                        .copied()
                        .take(values.len())
                        .collect(),
                };
                if sizes.len() != values.len() {
                    let problem = format!(
                        "`+F` line with {} values, but `+H` lists {} sizes",
                        values.len(),
                        sizes.len()
                    );
                    return Err(self.err(n, raw, problem, "one value per `+H` size"));
                }
                match algorithm_for_label(&name) {
                    Some(alg) => {
                        entry.bulk.insert(alg, (sizes, values));
                    }
                    None => {
                        self.ignored.insert(name);
                    }
                }
            }
            MrLine::Rsa {
                bits: 2048,
                sign,
                verify,
            } => {
                entry.pkey.insert(Algorithm::Rsa2048, (sign, verify));
            }
            MrLine::Dsa {
                bits: 2048,
                sign,
                verify,
            } => {
                entry.pkey.insert(Algorithm::Dsa2048, (sign, verify));
            }
            _ => {}
        }
        Ok(())
    }
}

/// A label followed by at least five rate cells and nothing else.
fn looks_like_row(toks: &[&str]) -> bool {
    let first_value = toks.iter().position(|t| parse_rate_cell(t).is_some());
    first_value.is_some_and(|i| {
        i > 0 && toks.len() - i >= 5 && toks[i..].iter().all(|t| parse_rate_cell(t).is_some())
    })
}

/// `3976426 md5's in 0.86s`: the count half of a stderr `Doing …` line.
fn is_stderr_count(toks: &[&str]) -> bool {
    toks.len() >= 3
        && toks[0].bytes().all(|b| b.is_ascii_digit())
        && toks[toks.len() - 2] == "in"
        && toks.last().and_then(|t| parse_seconds(t)).is_some()
}

/// ecdsa/ecdh/eddsa/ffdh/KEM rows after the RSA/DSA tables: they end in two numbers.
fn is_other_pkey_row(toks: &[&str]) -> bool {
    let num = |t: &&str| parse_number(t).is_some() || parse_seconds(t).is_some();
    toks.len() >= 3 && toks[toks.len() - 2..].iter().all(num)
}
