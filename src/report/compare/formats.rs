//! The comparison for programs and for the OpenWrt wiki: CSV (a line per device, a column per
//! figure, raw numbers in base units), JSON (the whole model) and the wiki's row format (each
//! device's crypto row as the table prints it, then one ratio row per other device).

use super::model::{Unit, Value, ratio_text};
use super::table::{Comparison, letter};
use crate::report::reference::semantic_flags;
use crate::report::rows::TITLES;

/// The base unit a CSV column holds its numbers in.
fn base_unit(u: Unit) -> &'static str {
    match u {
        Unit::BitsPerSec => "bit/s",
        Unit::BytesPerSec => "bytes/s",
        Unit::PerSec => "per s",
        Unit::Ms => "ms",
        Unit::Rpm => "RPM",
        Unit::Count => "count",
        Unit::Percent => "%",
        Unit::Celsius => "°C",
        Unit::Text => "text",
    }
}

/// A CSV field, quoted when it needs to be (RFC 4180).
fn field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// One line per device: `device,label,input,source`, then one column per figure, headed
/// `key (unit)`; a lower bound is written `>=N`, a figure the device lacks is empty, one it did
/// not measure is `not measured`.
pub fn csv(c: &Comparison) -> String {
    let mut head = vec![
        "device".to_string(),
        "label".into(),
        "input".into(),
        "source".into(),
    ];
    head.extend(
        c.lines
            .iter()
            .map(|l| format!("{} ({})", l.key, base_unit(l.unit))),
    );
    let mut out = head.iter().map(|h| field(h)).collect::<Vec<_>>().join(",") + "\n";
    for (i, d) in c.devices.iter().enumerate() {
        let mut row = vec![
            letter(i),
            d.label.clone(),
            d.input.clone(),
            d.source.clone(),
        ];
        for l in &c.lines {
            row.push(match &l.cells[i].value {
                None => String::new(),
                Some(Value::Number(x)) => format!("{x}"),
                Some(Value::AtLeast(x)) => format!(">={x}"),
                Some(Value::Text(t)) => t.clone(),
                Some(Value::NotMeasured(_)) => "not measured".into(),
            });
        }
        out.push_str(&(row.iter().map(|f| field(f)).collect::<Vec<_>>().join(",") + "\n"));
    }
    out
}

/// The whole comparison as one JSON document (pretty, with a final newline).
pub fn json(c: &Comparison) -> String {
    #[derive(serde::Serialize)]
    struct Doc<'a> {
        comparison: &'a Comparison,
        footnotes: Vec<String>,
        conclusions: Vec<String>,
    }
    let doc = Doc {
        comparison: c,
        footnotes: c.footnotes(),
        conclusions: c.conclusions(),
    };
    match serde_json::to_string_pretty(&doc) {
        Ok(s) => s + "\n",
        Err(e) => format!("{{\"error\": \"cannot encode the comparison: {e}\"}}\n"),
    }
}

/// The devices' crypto rows as OpenWrt wiki table rows (raw numbers, as the wiki prints them),
/// then one row of ratios (this / the first) per other device, flagged cells marked.
pub fn wiki(c: &Comparison) -> String {
    let rows: Vec<(usize, &crate::report::rows::Row)> = c
        .devices
        .iter()
        .enumerate()
        .filter_map(|(i, d)| d.crypto.as_ref().map(|r| (i, r)))
        .collect();
    let mut out = format!("| Device | Engine | {} |\n", TITLES.join(" | "));
    for (i, r) in &rows {
        let cells: Vec<String> = r
            .values
            .iter()
            .enumerate()
            .map(|(col, v)| match v {
                None => "-".into(),
                Some(x) if *x == 0.0 => "0.00".into(),
                Some(x) if col <= 8 => format!("{x:.0}"),
                Some(x) => format!("{x:.1}"),
            })
            .collect();
        out.push_str(&format!(
            "| {} | {} | {} |\n",
            c.devices[*i].label,
            r.engine,
            cells.join(" | ")
        ));
    }
    let Some((b, base)) = rows.first() else {
        return out + "(no device has a crypto row)\n";
    };
    for (i, r) in rows.iter().skip(1) {
        let cells: Vec<String> = (0..TITLES.len())
            .map(|col| {
                let mut s = match (base.values[col], r.values[col]) {
                    (Some(a), Some(x)) if a > 0.0 && x > 0.0 => ratio_text(x / a),
                    (Some(a), Some(x)) if a == 0.0 || x == 0.0 => "not measured".into(),
                    _ => "-".into(),
                };
                if !semantic_flags(base, r, col).is_empty() {
                    s.push_str(" (not like-for-like)");
                }
                s
            })
            .collect();
        out.push_str(&format!(
            "| {} / {} | ratio | {} |\n",
            c.devices[*i].label,
            c.devices[*b].label,
            cells.join(" | ")
        ));
    }
    out
}
