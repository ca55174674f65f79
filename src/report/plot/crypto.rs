//! The crypto bar chart: several devices side by side per column, log scale, the engine written
//! on every bar; rows of different semantics (engine, cipher block, threads) flagged in the title.

use super::model::{Bar, Figure, Panel};
use super::scale::log_range;
use crate::report::reference::semantic_flags;
use crate::report::rows::{Row, TITLES};

fn bar_text(r: &Row) -> String {
    match r.threads {
        Some(t) if t > 1 => format!("{} ×{t}", r.engine),
        _ => r.engine.clone(),
    }
}

fn panel(rows: &[Row], cols: std::ops::Range<usize>, title: &str, unit: &str, scale: f64) -> Panel {
    let values = rows
        .iter()
        .flat_map(|r| cols.clone().filter_map(move |c| r.values[c]))
        .map(|v| v / scale);
    let Some(y) = log_range(values) else {
        return Panel::missing(title, "column", unit, "no values");
    };
    let mut p = Panel::new(title, "", unit);
    p.log_y = true;
    p.y = y;
    p.categories = cols.clone().map(|c| TITLES[c].to_string()).collect();
    p.members = rows.iter().map(|r| r.label.clone()).collect();
    for (m, r) in rows.iter().enumerate() {
        for (g, c) in cols.clone().enumerate() {
            if let Some(v) = r.values[c].filter(|v| *v > 0.0) {
                p.bars.push(Bar {
                    group: g,
                    member: m,
                    value: v / scale,
                    text: bar_text(r),
                });
            }
        }
    }
    p
}

/// Flags of every row against the first, per distinct reason.
pub fn flags(rows: &[Row]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    if let Some(base) = rows.first() {
        for r in &rows[1..] {
            for col in 0..TITLES.len() {
                for f in semantic_flags(base, r, col) {
                    if !out.contains(&f) {
                        out.push(f);
                    }
                }
            }
        }
    }
    out
}

/// Hashes and ciphers in MB/s, RSA/DSA in operations per second, one bar per device.
pub fn bars(rows: &[Row]) -> Figure {
    let f = flags(rows);
    let warn = if f.is_empty() {
        String::new()
    } else {
        format!(" — ⚠ not like-for-like: {}", f.join("; "))
    };
    Figure {
        title: format!("openssl speed suite (OpenWrt table columns){warn}"),
        panels: vec![
            panel(
                rows,
                0..9,
                "Hashes (1024 B) and ciphers, MB/s, log scale",
                "MB/s (10⁶ bytes/s)",
                1e6,
            ),
            panel(
                rows,
                9..13,
                "RSA-2048 and DSA-2048, operations/s, log scale",
                "per second",
                1.0,
            ),
        ],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::reference::builtin;

    #[test]
    fn mixed_engines_are_flagged_and_every_bar_names_its_engine() {
        let refs = builtin().unwrap();
        let v1 = refs
            .iter()
            .find(|r| r.id == "ea7500-v1")
            .unwrap()
            .row
            .clone();
        let mut rc = v1.clone();
        rc.label = "same box, pure Rust".into();
        rc.engine = "RustCrypto".into();
        let f = bars(&[v1.clone(), rc]);
        assert!(
            f.title
                .contains("⚠ not like-for-like: engine OpenSSL vs RustCrypto"),
            "{}",
            f.title
        );
        let p = &f.panels[0];
        assert!(p.log_y);
        assert_eq!(p.members.len(), 2);
        assert!(p.bars.iter().all(|b| !b.text.is_empty()));
        assert!(p.bars.iter().any(|b| b.text == "RustCrypto"));
        // DES 0.00 is not drawn as a bar.
        assert!(!p.bars.iter().any(|b| b.group == 4));
        let same = bars(&[v1.clone(), v1]);
        assert!(!same.title.contains('⚠'));
    }
}
