//! Crypto rows to compare: the 13 numbers of the OpenWrt table with what they mean (engine,
//! cipher column block size, threads) and where they came from: a result file, a row in the
//! wiki's format, or the built-in reference set.

use crate::results::RunResult;
use crate::results::crypto::Algorithm;

/// The 13 columns, as the OpenWrt table titles them.
pub const TITLES: [&str; 13] = crate::report::crypto::ROW_TITLES;

/// Columns 4..=8 are the ciphers (DES … AES-256), read at the row's cipher block size.
pub fn is_cipher_column(col: usize) -> bool {
    (4..=8).contains(&col)
}

/// Columns 0..=8 are bytes per second, 9..=12 operations per second.
pub fn is_rate_column(col: usize) -> bool {
    col <= 8
}

/// One row of numbers with its semantics.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// Who: device / SoC / file.
    pub label: String,
    /// What measured it: `OpenSSL 3.0.19`, `RustCrypto`, `OpenSSL 1.1.1g`.
    pub engine: String,
    /// Block size the cipher columns were read at (8192 for OpenSSL 3.x rows, 1024 for 1.x rows),
    /// `None` when unknown.
    pub cipher_block: Option<u32>,
    /// Threads (`-multi N`) summed, `None` when unknown.
    pub threads: Option<u32>,
    /// Bytes/s for 0..=8, ops/s for 9..=12. `None` = not published; `Some(0.0)` = not measured
    /// (the wiki row's `0.00`, e.g. DES without OpenSSL 3's legacy provider).
    pub values: [Option<f64>; 13],
    /// The WireGuard AEADs (chacha20-poly1305, aes-128-gcm) in bytes/s at 1456 B: extra columns
    /// of result files; wiki rows have none.
    pub wireguard: [Option<f64>; 2],
    /// Where the row came from (a file name or a URL).
    pub source: String,
}

/// The engine family a row's numbers depend on.
pub fn engine_family(engine: &str) -> &'static str {
    let e = engine.to_ascii_lowercase();
    if e.contains("rustcrypto") {
        "RustCrypto"
    } else if e.contains("openssl") || e.starts_with(|c: char| c.is_ascii_digit()) {
        "OpenSSL"
    } else {
        "unknown"
    }
}

impl Row {
    /// The label without a leading revision cell (`r23633 / Linksys EA7500 v1 / …` →
    /// `Linksys EA7500 v1`) and without the file name: for column headers.
    pub fn short_label(&self) -> String {
        let first = self.label.split(" (").next().unwrap_or(&self.label);
        let parts: Vec<&str> = first.split(" / ").collect();
        let is_rev = |p: &str| {
            p.strip_prefix('r')
                .is_some_and(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()))
                || p == "unknown"
        };
        parts
            .iter()
            .find(|p| !is_rev(p))
            .unwrap_or(&first)
            .to_string()
    }

    pub fn family(&self) -> &'static str {
        engine_family(&self.engine)
    }

    /// The crypto part of a result file as a row (cipher columns at `cipher_block`).
    pub fn from_result(r: &RunResult, source: &str, cipher_block: u32) -> Option<Row> {
        let c = r.crypto.as_ref()?;
        let mut values = [None; 13];
        let mut col = 0;
        for alg in Algorithm::ALL {
            match alg.row_block(cipher_block) {
                Some(size) => {
                    values[col] = c.rate(alg, size);
                    col += 1;
                }
                None => {
                    let pk = c.public_key(alg);
                    values[col] = pk.map(|p| p.sign_per_sec);
                    values[col + 1] = pk.map(|p| p.verify_per_sec);
                    col += 2;
                }
            }
        }
        let wireguard =
            Algorithm::WIREGUARD.map(|a| c.rate(a, crate::results::crypto::WIREGUARD_BLOCK));
        Some(Row {
            wireguard,
            label: device_label(r, source),
            engine: c.engine.version.clone(),
            cipher_block: Some(cipher_block),
            threads: Some(c.threads),
            values,
            source: source.into(),
        })
    }

    /// Parses one row in the wiki's format: `| identity… | engine | 13 numbers |`. Numbers may
    /// carry `k`/`M` suffixes; `-` or an empty cell is "not published", `0.00` "not measured".
    pub fn parse_wiki(line: &str, source: &str) -> Result<Row, String> {
        let cells: Vec<&str> = line
            .trim()
            .trim_matches('|')
            .split('|')
            .map(str::trim)
            .collect();
        if cells.len() < 14 {
            return Err(format!(
                "a row needs an engine cell and 13 numbers (MD5 … DSA Verify), found {} cells",
                cells.len()
            ));
        }
        let n = cells.len();
        let mut values = [None; 13];
        for (i, cell) in cells[n - 13..].iter().enumerate() {
            values[i] =
                parse_number(cell).map_err(|e| format!("column {} ({}): {e}", i + 1, TITLES[i]))?;
        }
        let engine = cells[n - 14].to_string();
        let ident = &cells[..n - 14];
        let label = if ident.is_empty() {
            "row".to_string()
        } else {
            ident.join(" / ")
        };
        let version = engine.trim_start_matches("OpenSSL").trim();
        let cipher_block = match engine_family(&engine) {
            "RustCrypto" => Some(8192),
            _ if version.starts_with('3') => Some(8192),
            _ if version.starts_with("1.") => Some(1024),
            _ => None,
        };
        Ok(Row {
            threads: threads_in(ident).or_else(|| threads_in(&[engine.as_str()])),
            wireguard: [None; 2],
            label,
            engine,
            cipher_block,
            values,
            source: source.into(),
        })
    }
}

/// `-multi N`, `N threads` or an `Nt` token in the identity cells; `single-thread` is 1.
fn threads_in(cells: &[&str]) -> Option<u32> {
    for cell in cells {
        let words: Vec<&str> = cell.split_whitespace().collect();
        for (i, w) in words.iter().enumerate() {
            if *w == "single-thread" {
                return Some(1);
            }
            if *w == "-multi" {
                return words.get(i + 1).and_then(|n| n.parse().ok());
            }
            if let Some(n) = w.strip_suffix('t').and_then(|n| n.parse().ok()) {
                return Some(n);
            }
        }
    }
    None
}

fn parse_number(cell: &str) -> Result<Option<f64>, String> {
    let c = cell.trim();
    if c.is_empty() || c == "-" {
        return Ok(None);
    }
    let (num, mult) = match c.chars().last() {
        Some('M') => (&c[..c.len() - 1], 1e6),
        Some('k') => (&c[..c.len() - 1], 1e3),
        _ => (c, 1.0),
    };
    let v: f64 = num
        .trim()
        .parse()
        .map_err(|_| format!("`{c}` is not a number"))?;
    if !v.is_finite() || v < 0.0 {
        return Err(format!("`{c}` is not a rate"));
    }
    Ok(Some(v * mult))
}

/// A short name for the device of a result: model, else SoC, else CPU, else host; then the file.
pub fn device_label(r: &RunResult, source: &str) -> String {
    let d = r.device.as_ref();
    let who = d
        .and_then(|d| {
            d.model
                .clone()
                .or_else(|| d.soc.clone())
                .or_else(|| d.cpu_model.clone())
                .or_else(|| d.hostname.clone())
        })
        .or_else(|| r.lab.as_ref().map(|l| format!("lab {}", l.config.name)))
        .or_else(|| {
            r.latency
                .as_ref()
                .map(|l| format!("{} to {}", l.test, l.host))
        })
        .unwrap_or_else(|| "unknown device".into());
    let file = std::path::Path::new(source)
        .file_name()
        .map(|f| f.to_string_lossy().to_string())
        .unwrap_or_else(|| source.to_string());
    format!("{who} ({file})")
}

/// A value for people: MB/s (10⁶ bytes/s) for the rate columns, `/s` with one decimal otherwise.
pub fn human(col: usize, v: Option<f64>) -> String {
    match v {
        None => "-".into(),
        Some(x) if x <= 0.0 => "not measured".into(),
        Some(x) if is_rate_column(col) => format!("{:.1} MB/s", x / 1e6),
        Some(x) => format!("{x:.1}/s"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seed_rows_parse_with_des_not_measured() {
        let v1 = "| Linksys EA7500 v1 | OpenSSL 3.x | 98150740 | 127698940 | 82592770 | 46162600 | 0.00 | 6785710 | 65806340 | 56702290 | 50457260 | 111.9 | 5441.4 | 403.7 | 493.3 |";
        let r = Row::parse_wiki(v1, "seed").unwrap();
        assert_eq!(r.label, "Linksys EA7500 v1");
        assert_eq!(r.family(), "OpenSSL");
        assert_eq!(r.cipher_block, Some(8192));
        assert_eq!(r.values[0], Some(98150740.0));
        assert_eq!(r.values[4], Some(0.0));
        assert_eq!(human(4, r.values[4]), "not measured");
        assert_eq!(r.values[9], Some(111.9));
    }

    #[test]
    fn suffixes_threads_and_bad_cells() {
        let row = "| K2P | MT7621AT MIPS1004K 4t 583.68 | 1.1.1 | 85.20M | 58.20M | 27.54M | 10.79M | 12.96M | 4.66M | 25.82M | 21.92M | 18.89M | - | - | - | - |";
        let r = Row::parse_wiki(row, "x").unwrap();
        assert_eq!(r.threads, Some(4));
        assert_eq!(r.cipher_block, Some(1024));
        assert_eq!(r.values[0], Some(85.2e6));
        assert_eq!(r.values[12], None);
        assert!(
            Row::parse_wiki("| a | b | 1 |", "x")
                .unwrap_err()
                .contains("13 numbers")
        );
        let multi = "| r1 | OpenSSL 3.0.22 (openssl speed) -multi 2 | 1 | 1 | 1 | 1 | 1 | 1 | 1 | 1 | 1 | 1 | 1 | 1 | 1 |";
        assert_eq!(Row::parse_wiki(multi, "x").unwrap().threads, Some(2));
        let bad = row.replace("85.20M", "fast");
        assert!(Row::parse_wiki(&bad, "x").unwrap_err().contains("MD5"));
    }
}
