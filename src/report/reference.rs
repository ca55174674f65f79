//! Reference rows: the built-in set (the seed's EA7500 v1/v2 rows and other published rows,
//! each with its source and semantics, in `reference_rows.txt`) or a user's own table in the
//! wiki's row format; and where a row stands among them, column by column.

use super::rows::{Row, TITLES, is_cipher_column};

/// One reference row with its id and notes.
#[derive(Debug, Clone, PartialEq)]
pub struct Reference {
    pub id: String,
    pub row: Row,
    pub note: Option<String>,
    /// Every `key: value` line before the row (`loopback`, `soc`, `board`, …), in file order.
    pub meta: Vec<(String, String)>,
}

impl Reference {
    /// The value of a `key:` line before the row.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.meta
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// The row's in-device loopback figure (`loopback: 6.20 Gbit/s`), bit/s.
    pub fn loopback_bps(&self) -> Option<f64> {
        self.get("loopback").and_then(|v| parse_bit_rate(v).ok())
    }
}

/// `6.20 Gbit/s`, `611 Mbit/s`, `950 kbit/s`, `12 bit/s` → bit/s.
pub fn parse_bit_rate(text: &str) -> Result<f64, String> {
    let t = text.trim();
    let (num, unit) = t
        .split_once(' ')
        .ok_or_else(|| format!("`{t}`: write a rate as `6.20 Gbit/s` or `611 Mbit/s`"))?;
    let mult = match unit.trim() {
        "Gbit/s" => 1e9,
        "Mbit/s" => 1e6,
        "kbit/s" => 1e3,
        "bit/s" => 1.0,
        u => {
            return Err(format!(
                "`{t}`: unknown unit `{u}` (Gbit/s, Mbit/s, kbit/s, bit/s)"
            ));
        }
    };
    let v: f64 = num
        .parse()
        .map_err(|_| format!("`{t}`: `{num}` is not a number"))?;
    if !v.is_finite() || v <= 0.0 {
        return Err(format!("`{t}`: a rate must be above 0"));
    }
    Ok(v * mult)
}

const BUILTIN: &str = include_str!("reference_rows.txt");

/// The built-in reference set.
pub fn builtin() -> Result<Vec<Reference>, String> {
    parse(BUILTIN, "built-in reference set")
}

/// Reads a table: `key: value` lines (`id`, `source`, `cipher-block`, `threads`, `note`, and
/// for comparisons `loopback` with `loopback-tool`, `-length`, `-streams`, `-block`, `soc`,
/// `board`, `cpus`, `openwrt`) apply to the next row; `|…|` lines are rows; `#` comments, blank lines and the wiki's header and
/// `|---|` separator lines are skipped.
pub fn parse(text: &str, origin: &str) -> Result<Vec<Reference>, String> {
    let mut out = Vec::new();
    let mut meta: Vec<(String, String)> = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let t = line.trim();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        if t.starts_with('|') {
            let lower = t.to_ascii_lowercase();
            if lower.contains("md5") || t.chars().all(|c| "|-: ".contains(c)) {
                continue; // a header or separator line
            }
            let get = |k: &str| meta.iter().find(|(mk, _)| mk == k).map(|(_, v)| v.clone());
            let source = get("source").unwrap_or_else(|| format!("{origin} line {}", n + 1));
            let mut row =
                Row::parse_wiki(t, &source).map_err(|e| format!("{origin} line {}: {e}", n + 1))?;
            if let Some(b) = get("cipher-block") {
                row.cipher_block = Some(b.parse().map_err(|_| {
                    format!(
                        "{origin} line {}: cipher-block `{b}` is not 1024 or 8192",
                        n + 1
                    )
                })?);
            }
            if let Some(t) = get("threads") {
                row.threads = Some(t.parse().map_err(|_| {
                    format!("{origin} line {}: threads `{t}` is not a number", n + 1)
                })?);
            }
            if let Some(l) = get("loopback") {
                parse_bit_rate(&l).map_err(|e| format!("{origin} line {}: loopback {e}", n + 1))?;
            }
            let id = get("id").unwrap_or_else(|| format!("row{}", out.len() + 1));
            let note = get("note");
            out.push(Reference {
                id,
                row,
                note,
                meta: std::mem::take(&mut meta),
            });
        } else if let Some((k, v)) = t.split_once(':') {
            meta.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
        } else {
            return Err(format!(
                "{origin} line {}: neither a `| … |` row nor a `key: value` line",
                n + 1
            ));
        }
    }
    if out.is_empty() {
        return Err(format!(
            "{origin}: no rows (expected `| identity | engine | 13 numbers |`)"
        ));
    }
    Ok(out)
}

/// Why a reference's column is not like-for-like with the row's; empty when it is.
pub fn semantic_flags(a: &Row, b: &Row, col: usize) -> Vec<String> {
    let mut flags = Vec::new();
    if a.family() != b.family() {
        flags.push(format!("engine {} vs {}", a.family(), b.family()));
    }
    if is_cipher_column(col) && a.cipher_block != b.cipher_block {
        let s = |v: Option<u32>| v.map_or("unknown".to_string(), |b| format!("{b} B"));
        flags.push(format!(
            "cipher block {} vs {}",
            s(a.cipher_block),
            s(b.cipher_block)
        ));
    }
    if let (Some(x), Some(y)) = (a.threads, b.threads) {
        if x != y {
            flags.push(format!("{x} vs {y} threads"));
        }
    }
    flags
}

/// Where `row` stands in one column: its rank among the references with a value there, and the
/// nearest reference above and below it.
#[derive(Debug, Clone, PartialEq)]
pub struct Standing {
    pub col: usize,
    pub value: Option<f64>,
    /// 1 = fastest; of `of` rows including this one.
    pub rank: usize,
    pub of: usize,
    /// (reference id, its value, row value / its value, semantic flags)
    pub above: Option<(String, f64, f64, Vec<String>)>,
    pub below: Option<(String, f64, f64, Vec<String>)>,
}

/// `row`'s standing in every column it has a measured value in.
pub fn standing(row: &Row, refs: &[Reference]) -> Vec<Standing> {
    let mut out = Vec::new();
    for col in 0..TITLES.len() {
        let Some(v) = row.values[col].filter(|v| *v > 0.0) else {
            continue;
        };
        let mut with: Vec<(&Reference, f64)> = refs
            .iter()
            .filter_map(|r| r.row.values[col].filter(|x| *x > 0.0).map(|x| (r, x)))
            .collect();
        with.sort_by(|a, b| b.1.total_cmp(&a.1));
        let faster = with.iter().filter(|(_, x)| *x > v).count();
        let pick =
            |r: &Reference, x: f64| (r.id.clone(), x, v / x, semantic_flags(row, &r.row, col));
        out.push(Standing {
            col,
            value: Some(v),
            rank: faster + 1,
            of: with.len() + 1,
            above: with
                .iter()
                .rev()
                .find(|(_, x)| *x > v)
                .map(|(r, x)| pick(r, *x)),
            below: with.iter().find(|(_, x)| *x <= v).map(|(r, x)| pick(r, *x)),
        });
    }
    out
}

/// The standing as text, one line per column.
pub fn render_standing(row: &Row, st: &[Standing]) -> String {
    let mut out = format!(
        "Where {} ({}) stands among the reference rows:\n",
        row.label, row.engine
    );
    let side = |s: &Option<(String, f64, f64, Vec<String>)>, col: usize| match s {
        None => "-".to_string(),
        Some((id, x, ratio, flags)) => {
            let f = if flags.is_empty() {
                String::new()
            } else {
                format!(" [not like-for-like: {}]", flags.join(", "))
            };
            format!(
                "{id} {} ({ratio:.2}×){f}",
                super::rows::human(col, Some(*x))
            )
        }
    };
    for s in st {
        out.push_str(&format!(
            "  {:<10} {:>14}  rank {:>2} of {:<2}  above: {}  below: {}\n",
            TITLES[s.col],
            super::rows::human(s.col, s.value),
            s.rank,
            s.of,
            side(&s.above, s.col),
            side(&s.below, s.col),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_set_parses_with_sources() {
        let refs = builtin().unwrap();
        assert!(refs.len() >= 2);
        let v1 = refs.iter().find(|r| r.id == "ea7500-v1").unwrap();
        assert_eq!(v1.row.values[9], Some(111.9));
        assert_eq!(v1.row.threads, Some(1));
        assert!(refs.iter().all(|r| !r.row.source.is_empty()));
        let multi = refs.iter().find(|r| r.id == "k2p-mt7621at-4t").unwrap();
        assert_eq!(multi.row.threads, Some(4));
    }

    #[test]
    fn v2_ranks_below_v1_and_mixed_rows_are_flagged() {
        let refs = builtin().unwrap();
        let v2 = refs
            .iter()
            .find(|r| r.id == "ea7500-v2")
            .unwrap()
            .row
            .clone();
        let others: Vec<Reference> = refs
            .iter()
            .filter(|r| r.id != "ea7500-v2")
            .cloned()
            .collect();
        let st = standing(&v2, &others);
        let rsa = st.iter().find(|s| s.col == 9).unwrap();
        assert_eq!(rsa.above.as_ref().unwrap().0, "ea7500-v1");
        assert!(rsa.below.is_none(), "the slowest RSA row of the set");
        let aes = st.iter().find(|s| s.col == 6).unwrap();
        assert!(aes.rank > 1 && aes.rank <= aes.of);
        // The MT7621 row next to a 1.1.1 row: cipher blocks differ and are flagged.
        let ax58 = &refs
            .iter()
            .find(|r| r.id == "rt-ax58u-bcm6750")
            .unwrap()
            .row;
        assert!(!semantic_flags(&v2, ax58, 6).is_empty());
        assert!(semantic_flags(&v2, ax58, 0).is_empty());
        let text = render_standing(&v2, &st);
        assert!(text.contains("RSA"), "{text}");
    }

    #[test]
    fn user_table_errors_name_the_line() {
        let e = parse("| a | 1 | 2 |\n", "mine.txt").unwrap_err();
        assert!(e.contains("mine.txt line 1"), "{e}");
        assert!(parse("hello\n", "x").unwrap_err().contains("line 1"));
        assert!(parse("# nothing\n", "x").unwrap_err().contains("no rows"));
    }
}
