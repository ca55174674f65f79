//! Side-by-side comparison of crypto rows, as the seed compares EA7500 v1 and v2: every column
//! with the first row's value over each other row's, as text, markdown or OpenWrt wiki rows.
//! Columns whose semantics differ (engine, cipher block size, threads) are flagged, never
//! compared silently; a 0.00 cell is "not measured", not a ratio.

use super::reference::semantic_flags;
use super::rows::{Row, TITLES, human};

/// One cell of the comparison: `base / this`, or why there is no ratio.
#[derive(Debug, Clone, PartialEq)]
pub struct Ratio {
    pub ratio: Option<f64>,
    /// `not measured` / `not published` when there is no ratio.
    pub missing: Option<&'static str>,
    pub flags: Vec<String>,
}

/// Ratios of the first row over every other row, per column.
pub fn ratios(base: &Row, other: &Row) -> Vec<Ratio> {
    (0..TITLES.len())
        .map(|col| {
            let flags = semantic_flags(base, other, col);
            let (ratio, missing) = match (base.values[col], other.values[col]) {
                (Some(a), Some(b)) if a > 0.0 && b > 0.0 => (Some(a / b), None),
                (Some(a), Some(b)) if a == 0.0 || b == 0.0 => (None, Some("not measured")),
                _ => (None, Some("not published")),
            };
            Ratio {
                ratio,
                missing,
                flags,
            }
        })
        .collect()
}

/// The order of magnitude the seed speaks of: 10× or more either way.
pub fn order_of_magnitude(r: f64) -> bool {
    !(0.1..10.0).contains(&r)
}

/// `10.66×`, or `0.07× (1/14.1)` below 0.5 so a small ratio still reads as a factor.
fn ratio_text(x: f64) -> String {
    if x < 0.5 && x > 0.0 {
        format!("{x:.2}× (1/{:.1})", 1.0 / x)
    } else {
        format!("{x:.2}×")
    }
}

fn ratio_cell(r: &Ratio) -> String {
    let mut s = match (r.ratio, r.missing) {
        (Some(x), _) => ratio_text(x),
        (None, Some(m)) => m.to_string(),
        _ => "-".into(),
    };
    if r.ratio.is_some_and(order_of_magnitude) {
        s.push_str(" (order of magnitude)");
    }
    if !r.flags.is_empty() {
        s.push_str(&format!(" ⚠ {}", r.flags.join(", ")));
    }
    s
}

/// Output layouts of `compare`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// Aligned columns for the terminal.
    Text,
    /// A markdown table.
    Markdown,
    /// OpenWrt wiki table rows (`| … |`), one per device, then the ratio rows.
    Wiki,
}

/// Short names for the headers, or the full labels when short ones would collide.
fn names(rows: &[Row]) -> Vec<String> {
    let short: Vec<String> = rows.iter().map(Row::short_label).collect();
    let unique = short
        .iter()
        .collect::<std::collections::BTreeSet<_>>()
        .len()
        == short.len();
    if unique {
        short
    } else {
        rows.iter().map(|r| r.label.clone()).collect()
    }
}

/// The header cells of the comparison table.
pub fn header(rows: &[Row]) -> Vec<String> {
    let n = names(rows);
    let mut h = vec!["column".to_string()];
    h.push(format!("{} [{}]", n[0], rows[0].engine));
    for (r, name) in rows[1..].iter().zip(&n[1..]) {
        h.push(format!("{name} [{}]", r.engine));
        h.push(format!("{} / {name}", n[0]));
    }
    h
}

/// One line of cells per column (MD5 … DSA Verify).
pub fn body(rows: &[Row]) -> Vec<Vec<String>> {
    let base = &rows[0];
    let all: Vec<Vec<Ratio>> = rows[1..].iter().map(|r| ratios(base, r)).collect();
    (0..TITLES.len())
        .map(|col| {
            let mut line = vec![TITLES[col].to_string(), human(col, base.values[col])];
            for (r, rs) in rows[1..].iter().zip(&all) {
                line.push(human(col, r.values[col]));
                line.push(ratio_cell(&rs[col]));
            }
            line
        })
        .collect()
}

/// The lines under the table: orders of magnitude, flagged columns, where each row came from.
pub fn summary(rows: &[Row]) -> String {
    let base = &rows[0];
    let n = names(rows);
    let mut out = String::new();
    for (r, name) in rows[1..].iter().zip(&n[1..]) {
        let rs = ratios(base, r);
        let big: Vec<String> = rs
            .iter()
            .enumerate()
            .filter(|(_, x)| x.ratio.is_some_and(order_of_magnitude))
            .map(|(c, x)| format!("{} {}", TITLES[c], ratio_text(x.ratio.unwrap_or(0.0))))
            .collect();
        if !big.is_empty() {
            out.push_str(&format!(
                "An order of magnitude between {} and {name}: {}\n",
                n[0],
                big.join(", ")
            ));
        }
        let flagged = rs.iter().filter(|x| !x.flags.is_empty()).count();
        if flagged > 0 {
            out.push_str(&format!(
                "⚠ {flagged} column(s) of {} are not like-for-like with {} (flagged above): \
                 compare rows of the same engine, cipher block and thread count\n",
                name, n[0]
            ));
        }
    }
    for (r, name) in rows.iter().zip(&n) {
        out.push_str(&format!("{name}: {}, from {}\n", r.label, r.source));
    }
    out
}

/// The comparison of `rows[0]` with every other row. Needs at least two rows.
pub fn render(rows: &[Row], format: Format) -> String {
    if rows.len() < 2 {
        return "compare needs at least two rows\n".into();
    }
    let head = header(rows);
    let lines = body(rows);
    let mut out = String::new();
    match format {
        Format::Text => {
            let mut widths: Vec<usize> = head.iter().map(|h| h.chars().count()).collect();
            for l in &lines {
                for (w, c) in widths.iter_mut().zip(l) {
                    *w = (*w).max(c.chars().count());
                }
            }
            let fmt = |cells: &[String]| -> String {
                let parts: Vec<String> = cells
                    .iter()
                    .zip(&widths)
                    .map(|(c, w)| format!("{c}{}", " ".repeat(w - c.chars().count())))
                    .collect();
                parts.join("  ").trim_end().to_string() + "\n"
            };
            out.push_str(&fmt(&head));
            for l in &lines {
                out.push_str(&fmt(l));
            }
        }
        Format::Markdown => {
            out.push_str(&format!("| {} |\n", head.join(" | ")));
            out.push_str(&format!("|{}\n", "---|".repeat(head.len())));
            for l in &lines {
                out.push_str(&format!("| {} |\n", l.join(" | ")));
            }
        }
        Format::Wiki => return wiki(rows),
    }
    out.push('\n');
    out.push_str(&summary(rows));
    out
}

/// The rows as OpenWrt table rows (raw numbers, as the wiki prints them), then one ratio row
/// per other device with flagged cells marked.
fn wiki(rows: &[Row]) -> String {
    let mut out = format!("| Device | Engine | {} |\n", TITLES.join(" | "));
    for r in rows {
        let cells: Vec<String> = r
            .values
            .iter()
            .enumerate()
            .map(|(c, v)| match v {
                None => "-".into(),
                Some(x) if *x == 0.0 => "0.00".into(),
                Some(x) if c <= 8 => format!("{x:.0}"),
                Some(x) => format!("{x:.1}"),
            })
            .collect();
        out.push_str(&format!(
            "| {} | {} | {} |\n",
            r.label,
            r.engine,
            cells.join(" | ")
        ));
    }
    let base = &rows[0];
    let n = names(rows);
    for (r, name) in rows[1..].iter().zip(&n[1..]) {
        let cells: Vec<String> = ratios(base, r)
            .iter()
            .map(|x| {
                let mut s = match x.ratio {
                    Some(v) => format!("{v:.2}×"),
                    None => x.missing.unwrap_or("-").to_string(),
                };
                if !x.flags.is_empty() {
                    s.push_str(" (not like-for-like)");
                }
                s
            })
            .collect();
        out.push_str(&format!(
            "| {} / {name} | ratio | {} |\n",
            n[0],
            cells.join(" | ")
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::reference::builtin;

    fn seed() -> (Row, Row) {
        let refs = builtin().unwrap();
        let get = |id: &str| refs.iter().find(|r| r.id == id).unwrap().row.clone();
        (get("ea7500-v1"), get("ea7500-v2"))
    }

    #[test]
    fn seed_v1_over_v2_shows_the_order_of_magnitude_and_des_not_measured() {
        let (v1, v2) = seed();
        let rs = ratios(&v1, &v2);
        let rsa = rs[9].ratio.unwrap();
        assert!((rsa - 111.9 / 10.5).abs() < 1e-9 && order_of_magnitude(rsa));
        assert_eq!(rs[4].ratio, None);
        assert_eq!(rs[4].missing, Some("not measured"));
        assert!(!order_of_magnitude(rs[0].ratio.unwrap()), "MD5 is 1.9×");
        let text = render(&[v1.clone(), v2.clone()], Format::Text);
        assert!(text.contains("10.66× (order of magnitude)"), "{text}");
        assert!(text.contains("RSA Sign 10.66×"), "{text}");
        let back = render(&[v2.clone(), v1.clone()], Format::Text);
        assert!(
            back.contains("0.09× (1/10.7) (order of magnitude)"),
            "{back}"
        );
        assert!(
            !text.contains('⚠'),
            "same semantics: nothing flagged\n{text}"
        );
        let md = render(&[v1.clone(), v2.clone()], Format::Markdown);
        assert!(md.starts_with("| column |") && md.contains("| DES | not measured |"));
        let wiki = render(&[v1, v2], Format::Wiki);
        assert!(
            wiki.contains("| 98150740 |") && wiki.contains("| 10.66× |"),
            "{wiki}"
        );
    }

    #[test]
    fn mixed_engine_semantics_are_flagged() {
        let (v1, mut other) = seed();
        other.engine = "RustCrypto".into();
        other.threads = Some(2);
        let rs = ratios(&v1, &other);
        assert!(
            rs.iter()
                .all(|r| r.flags.iter().any(|f| f.contains("engine")))
        );
        assert!(
            rs.iter()
                .all(|r| r.flags.iter().any(|f| f.contains("threads")))
        );
        let text = render(&[v1, other], Format::Text);
        assert!(text.contains("⚠ engine OpenSSL vs RustCrypto"), "{text}");
        assert!(text.contains("not like-for-like"));
    }
}
