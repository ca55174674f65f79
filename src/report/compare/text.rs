//! The comparison for people, as text (at most 100 columns) or markdown: side by side (a column
//! per device, a line per figure, each one's ratio to the first) for two or three devices, or a
//! table of many (a line per device, a column per figure, each one's rank), cut into tables
//! that fit when it is text.

use super::model::{Unit, Value, bare, bits_scale, human, ratio_text};
use super::table::{Cell, Comparison, Line, letter};
use super::{Layout, cut, groups};

/// Widest text line.
pub const WIDTH: usize = 100;
/// Widest figure name in the side-by-side text.
const NAME_W: usize = 22;

/// Widest value cell side by side for `n` devices, so the lines fit in [`WIDTH`]: what is left
/// after the names, a ratio column (about 10) per other device and the gaps, shared out (16
/// for three devices, 30 at most).
fn value_width(n: usize) -> usize {
    let n = n.max(1);
    let fixed = NAME_W + 10 * (n - 1) + 2 * (2 * n - 1);
    (WIDTH.saturating_sub(fixed) / n).clamp(12, 30)
}

/// The whole comparison in `layout` (Side or Table), as text or markdown.
pub fn render(c: &Comparison, layout: Layout, markdown: bool) -> String {
    if c.devices.is_empty() {
        return "nothing to compare\n".into();
    }
    let mut out = legend(c, markdown);
    out.push('\n');
    out.push_str(&match (layout, markdown) {
        (Layout::Table, false) => fleet_text(c),
        (Layout::Table, true) => fleet_markdown(c),
        (_, false) => side_text(c),
        (_, true) => side_markdown(c),
    });
    out.push_str(&notes(c, markdown));
    out
}

/// One line per device: its letter, label and where its numbers come from.
fn legend(c: &Comparison, markdown: bool) -> String {
    let w = c
        .devices
        .iter()
        .map(|d| d.label.chars().count())
        .max()
        .unwrap_or(0);
    let mut out = String::new();
    for (i, d) in c.devices.iter().enumerate() {
        let from = if d.source == d.input {
            d.input.clone()
        } else {
            format!("{}: {}", d.input, d.source)
        };
        if markdown {
            out.push_str(&format!("- **{}** {} — {}\n", letter(i), d.label, from));
        } else {
            let head = format!("{:<3}{:<w$}  ", letter(i), d.label);
            let room = WIDTH.saturating_sub(head.chars().count()).max(20);
            out.push_str(&format!("{head}{}\n", cut(&from, room)));
        }
    }
    out
}

/// Footnote numbers of a cell's flags (`⚠1,3`), empty when it has none.
fn marks(cell: &Cell, notes: &[String]) -> String {
    let n: Vec<String> = cell
        .flags
        .iter()
        .filter_map(|f| {
            notes
                .iter()
                .position(|x| x == f)
                .map(|i| (i + 1).to_string())
        })
        .collect();
    if n.is_empty() {
        String::new()
    } else {
        format!("⚠{}", n.join(","))
    }
}

/// A cell's value with its unit, `missing` when the device lacks the figure.
fn value_text(line: &Line, cell: &Cell) -> String {
    match &cell.value {
        None => "missing".into(),
        Some(v) => human(v, line.unit),
    }
}

/// The ratio column of device `i`: `0.10×`, with the footnote marks.
fn ratio_cell(cell: &Cell, notes: &[String]) -> String {
    let r = cell.ratio.map(ratio_text).unwrap_or_default();
    let m = marks(cell, notes);
    match (r.is_empty(), m.is_empty()) {
        (_, true) => r,
        (true, false) => m,
        (false, false) => format!("{r} {m}"),
    }
}

fn pad(s: &str, w: usize) -> String {
    let n = s.chars().count();
    if n >= w {
        s.to_string()
    } else {
        format!("{s}{}", " ".repeat(w - n))
    }
}

/// The groups of `c`'s lines in order, each with its lines.
fn by_group(c: &Comparison) -> Vec<(&'static str, Vec<&Line>)> {
    let mut out: Vec<(&'static str, Vec<&Line>)> = Vec::new();
    for l in &c.lines {
        match out.last_mut() {
            Some((g, v)) if *g == l.group => v.push(l),
            _ => out.push((l.group, vec![l])),
        }
    }
    out
}

fn title(group: &str) -> &str {
    groups::group(group).map_or(group, |g| g.title)
}

/// Side by side: `figure | A | B | B/A | C | C/A`.
fn side_text(c: &Comparison) -> String {
    let notes = c.footnotes();
    let n = c.devices.len();
    let value_w = value_width(n);
    let mut rows: Vec<Option<Vec<String>>> = Vec::new();
    let mut head = vec![String::new(), letter(0)];
    for i in 1..n {
        head.push(letter(i));
        head.push(format!("{}/{}", letter(i), letter(0)));
    }
    for (g, lines) in by_group(c) {
        rows.push(None);
        rows.push(Some(vec![title(g).to_string()]));
        for l in lines {
            let mut r = vec![format!("  {}", cut(&l.name, NAME_W - 2))];
            r.push(cut(&value_text(l, &l.cells[0]), value_w));
            for cell in &l.cells[1..] {
                r.push(cut(&value_text(l, cell), value_w));
                r.push(ratio_cell(cell, &notes));
            }
            rows.push(Some(r));
        }
    }
    let mut widths: Vec<usize> = head.iter().map(|h| h.chars().count()).collect();
    for r in rows.iter().flatten().filter(|r| r.len() > 1) {
        for (w, cell) in widths.iter_mut().zip(r) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: &[String]| -> String {
        let parts: Vec<String> = cells.iter().zip(&widths).map(|(c, w)| pad(c, *w)).collect();
        parts.join("  ").trim_end().to_string() + "\n"
    };
    let mut out = line(&head);
    for r in rows {
        match r {
            None => {}
            Some(r) if r.len() == 1 => out.push_str(&format!("{}\n", cut(&r[0], WIDTH))),
            Some(r) => out.push_str(&line(&r)),
        }
    }
    out
}

fn side_markdown(c: &Comparison) -> String {
    let notes = c.footnotes();
    let n = c.devices.len();
    let mut head = vec!["figure".to_string(), format!("A: {}", c.devices[0].label)];
    for i in 1..n {
        head.push(format!("{}: {}", letter(i), c.devices[i].label));
        head.push(format!("{}/{}", letter(i), letter(0)));
    }
    let mut out = format!("| {} |\n|{}\n", head.join(" | "), "---|".repeat(head.len()));
    for (g, lines) in by_group(c) {
        out.push_str(&format!(
            "| **{}** |{}\n",
            title(g),
            " |".repeat(head.len() - 1)
        ));
        for l in lines {
            let mut r = vec![l.name.clone(), value_text(l, &l.cells[0])];
            for cell in &l.cells[1..] {
                r.push(value_text(l, cell));
                r.push(ratio_cell(cell, &notes));
            }
            out.push_str(&format!("| {} |\n", r.join(" | ")));
        }
    }
    out
}

/// A column of the table of many: its header (name, unit) and one cell per device.
struct Column {
    name: String,
    unit: String,
    cells: Vec<String>,
}

fn column(line: &Line, notes: &[String]) -> Column {
    let top = line
        .cells
        .iter()
        .filter_map(|c| c.value.as_ref().and_then(Value::number))
        .fold(0.0f64, |a, b| a.max(b.abs()));
    let (div, bits_unit) = bits_scale(top);
    let unit = match line.unit {
        Unit::BitsPerSec => bits_unit.to_string(),
        u => u.header().to_string(),
    };
    let cells = line
        .cells
        .iter()
        .map(|c| {
            let v = match &c.value {
                None => "missing".to_string(),
                Some(Value::Number(x)) => bare(*x, line.unit, div),
                Some(Value::AtLeast(x)) => format!("≥{}", bare(*x, line.unit, div)),
                Some(Value::Text(t)) => cut(t, 14),
                Some(Value::NotMeasured(_)) => "not measured".into(),
            };
            let mut s = v;
            if let Some(r) = c.rank {
                s.push_str(&format!(" #{r}"));
            }
            let m = marks(c, notes);
            if !m.is_empty() {
                s.push(' ');
                s.push_str(&m);
            }
            s
        })
        .collect();
    Column {
        name: line.name.clone(),
        unit,
        cells,
    }
}

/// The table of many as text: per group, tables of as many columns as fit in [`WIDTH`].
fn fleet_text(c: &Comparison) -> String {
    let notes = c.footnotes();
    let label_w = c
        .devices
        .iter()
        .map(|d| d.label.chars().count().min(28))
        .max()
        .unwrap_or(6)
        .max(6);
    let lead = 3 + label_w;
    let mut out = String::from("#n: the device's rank in that column (1 = best)\n");
    for (g, lines) in by_group(c) {
        let cols: Vec<(Column, usize)> = lines
            .iter()
            .map(|l| {
                let col = column(l, &notes);
                let w = col
                    .cells
                    .iter()
                    .map(|s| s.chars().count())
                    .chain([col.name.chars().count().min(16), col.unit.chars().count()])
                    .max()
                    .unwrap_or(4);
                (col, w)
            })
            .collect();
        let mut chunks: Vec<Vec<&(Column, usize)>> = vec![Vec::new()];
        let mut used = lead;
        for col in &cols {
            if used + 2 + col.1 > WIDTH && chunks.last().is_some_and(|ch| !ch.is_empty()) {
                chunks.push(Vec::new());
                used = lead;
            }
            used += 2 + col.1;
            if let Some(ch) = chunks.last_mut() {
                ch.push(col);
            }
        }
        for (k, ch) in chunks.iter().enumerate() {
            let t = if k == 0 {
                title(g).to_string()
            } else {
                format!("{} (continued)", title(g))
            };
            out.push_str(&format!("\n{}\n", cut(&t, WIDTH)));
            let mut name_row = pad("", lead);
            let mut unit_row = pad("", lead);
            for (col, w) in ch {
                name_row.push_str(&format!("  {}", pad(&cut(&col.name, 16), *w)));
                unit_row.push_str(&format!("  {}", pad(&col.unit, *w)));
            }
            out.push_str(&format!("{}\n", name_row.trim_end()));
            if !unit_row.trim().is_empty() {
                out.push_str(&format!("{}\n", unit_row.trim_end()));
            }
            for (i, d) in c.devices.iter().enumerate() {
                let mut row = format!("{:<3}{}", letter(i), pad(&cut(&d.label, label_w), label_w));
                for (col, w) in ch {
                    row.push_str(&format!("  {}", pad(&col.cells[i], *w)));
                }
                out.push_str(&format!("{}\n", row.trim_end()));
            }
        }
    }
    out
}

/// The table of many as one markdown table.
fn fleet_markdown(c: &Comparison) -> String {
    let notes = c.footnotes();
    let cols: Vec<Column> = c.lines.iter().map(|l| column(l, &notes)).collect();
    let mut head = vec!["".to_string(), "device".to_string()];
    for (l, col) in c.lines.iter().zip(&cols) {
        let unit = if col.unit.is_empty() {
            String::new()
        } else {
            format!(" ({})", col.unit)
        };
        head.push(format!("{} {}{unit}", l.group, col.name));
    }
    let mut out = format!("| {} |\n|{}\n", head.join(" | "), "---|".repeat(head.len()));
    for (i, d) in c.devices.iter().enumerate() {
        let mut r = vec![letter(i), d.label.clone()];
        r.extend(cols.iter().map(|col| col.cells[i].clone()));
        out.push_str(&format!("| {} |\n", r.join(" | ")));
    }
    out
}

/// The footnotes (why a cell is not like-for-like), then the conclusions.
fn notes(c: &Comparison, markdown: bool) -> String {
    let mut out = String::new();
    let notes = c.footnotes();
    let bullet = if markdown { "- " } else { "" };
    if !notes.is_empty() {
        out.push_str("\nNot like-for-like (⚠ in the table; ratios and ranks there mix methods):\n");
        for (i, n) in notes.iter().enumerate() {
            out.push_str(&wrap(&format!("{bullet}⚠{} {n}", i + 1), markdown));
        }
    }
    let concl = c.conclusions();
    if !concl.is_empty() {
        out.push('\n');
        for l in concl {
            out.push_str(&wrap(&format!("{bullet}{l}"), markdown));
        }
    }
    out
}

/// `text` as lines of at most [`WIDTH`] (broken at spaces, continued indented), or as it is
/// in markdown.
fn wrap(text: &str, markdown: bool) -> String {
    if markdown || text.chars().count() <= WIDTH {
        return format!("{text}\n");
    }
    let mut out = String::new();
    let mut line = String::new();
    for word in text.split(' ') {
        if !line.is_empty() && line.chars().count() + 1 + word.chars().count() > WIDTH {
            out.push_str(line.trim_end());
            out.push('\n');
            line = "    ".into();
        }
        if !line.is_empty() && !line.ends_with("    ") {
            line.push(' ');
        }
        line.push_str(word);
    }
    out.push_str(line.trim_end());
    out.push('\n');
    out
}
