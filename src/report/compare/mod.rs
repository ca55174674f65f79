//! Devices side by side on every headline figure they have, as the first seed compares the
//! EA7500 v1 and v2 (in-device loopback, the `openssl speed` row, …), and a table of many
//! devices with each one's rank per column. Every input becomes a [`Device`] of figures
//! (`groups`: one function per figure group), the devices one [`Comparison`] (`table`), and
//! that one model is laid out as text, markdown, the wiki's rows, CSV or JSON (`text`,
//! `formats`) and in the HTML page (`report::export::html`). A figure one device lacks is
//! missing, never 0; figures measured differently (engine, OpenSSL version, cipher block,
//! threads, congestion control, length) are flagged, never compared silently.

pub mod formats;
pub mod groups;
mod groups_load;
pub mod model;
pub mod table;
pub mod text;

pub use model::Options;
pub use table::{Comparison, Device, letter};

use crate::report::reference::Reference;
use crate::report::rows::Row;
use crate::results::RunResult;
use model::{Better, Figure, Unit, aspect};

/// Output formats of `compare`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// Aligned columns for a terminal (at most 100 wide).
    Text,
    /// Markdown tables.
    Markdown,
    /// OpenWrt wiki table rows (`| … |`) of the crypto row, one per device, then the ratios.
    Wiki,
    /// One line per device, one column per figure (raw numbers in bit/s, bytes/s, ms).
    Csv,
    /// The whole comparison: devices, lines, cells with ratio, rank and flags.
    Json,
}

/// How devices are laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Layout {
    /// Side by side for two or three devices, a table of many from four.
    Auto,
    /// A column per device, a line per figure, with each one's ratio to the first.
    Side,
    /// A line per device, a column per figure, with each one's rank (the wiki table of your
    /// own fleet).
    Table,
}

impl Layout {
    /// What `Auto` becomes for `n` devices.
    pub fn resolve(self, n: usize) -> Layout {
        match self {
            Layout::Auto if n <= 3 => Layout::Side,
            Layout::Auto => Layout::Table,
            l => l,
        }
    }
}

/// Vendor words a short label leaves out of a SoC name.
const VENDORS: &[&str] = &[
    "Qualcomm",
    "Atheros",
    "MediaTek",
    "Mediatek",
    "Broadcom",
    "Marvell",
    "Realtek",
    "Rockchip",
    "Allwinner",
    "Ralink",
    "Freescale",
    "NXP",
    "Intel",
    "AMD",
];

/// A SoC or CPU name for a label: no vendor, no revision (`Qualcomm Atheros QCA9558 ver 1 rev
/// 0` → `QCA9558`, `Intel(R) Xeon(R) Processor` → `Xeon`).
pub fn short_soc(name: &str) -> String {
    let tidy = groups::tidy_cpu(name);
    let words: Vec<&str> = tidy
        .split_whitespace()
        .take_while(|w| !matches!(*w, "ver" | "rev") && !w.starts_with("ver:"))
        .filter(|w| !VENDORS.contains(w))
        .collect();
    if words.is_empty() {
        tidy
    } else {
        words.join(" ")
    }
}

/// Cuts `s` to `n` characters, the last one `…` when it was longer.
pub fn cut(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(n.saturating_sub(1)).collect();
        t.push('…');
        t
    }
}

/// `name · SoC`, either part alone, or None.
fn join_label(name: Option<String>, soc: Option<String>) -> Option<String> {
    let name = name.map(|n| cut(&n, 24));
    match (name, soc) {
        (Some(n), Some(s)) if !n.contains(&s) => Some(format!("{n} · {}", cut(&s, 16))),
        (Some(n), _) => Some(n),
        (None, Some(s)) => Some(s),
        (None, None) => None,
    }
}

/// The file name of an input without its directory and `.json` (a reference row: its id).
fn stem(input: &str) -> String {
    if let Some(id) = input.strip_prefix("ref:") {
        return id.to_string();
    }
    let name = std::path::Path::new(input)
        .file_name()
        .map_or(input.to_string(), |f| f.to_string_lossy().to_string());
    name.trim_end_matches(".json").to_string()
}

/// A result's short label: its hostname (unless it is a default such as `OpenWrt`) or board,
/// then its SoC (or CPU); the input's file name when the result names no device.
pub fn result_label(run: &RunResult, input: &str) -> String {
    let d = run.device.as_ref();
    let generic = |h: &String| {
        matches!(
            h.to_ascii_lowercase().as_str(),
            "" | "openwrt" | "lede" | "localhost" | "(none)"
        )
    };
    let host = d.and_then(|d| d.hostname.clone()).filter(|h| !generic(h));
    let name = host.or_else(|| d.and_then(|d| d.model.clone()));
    let soc = d.and_then(|d| d.soc.as_deref().or(d.cpu_model.as_deref()).map(short_soc));
    join_label(name, soc)
        .or_else(|| run.lab.as_ref().map(|l| format!("lab {}", l.config.name)))
        .unwrap_or_else(|| stem(input))
}

/// A result file's device.
pub fn device_of_result(run: &RunResult, input: &str, opts: &Options) -> Device {
    Device {
        label: result_label(run, input),
        input: input.to_string(),
        source: input.to_string(),
        figures: groups::figures_of(run, opts),
        crypto: Row::from_result(run, input, opts.cipher_block),
    }
}

/// A row in the wiki's format (or a built-in reference row without its notes): its crypto
/// figures, labelled by its first identity cell and the SoC word after it.
pub fn device_of_row(row: &Row, input: &str) -> Device {
    let cells: Vec<&str> = row.label.split(" / ").collect();
    let first = row.short_label();
    let soc = cells
        .iter()
        .skip_while(|c| **c != first)
        .nth(1)
        .map(|c| short_soc(c))
        .and_then(|s| s.split_whitespace().next().map(str::to_string))
        .filter(|w| w.chars().any(|c| c.is_ascii_digit()));
    Device {
        label: join_label(Some(first), soc).unwrap_or_else(|| stem(input)),
        input: input.to_string(),
        source: row.source.clone(),
        figures: groups::crypto_figures(row),
        crypto: Some(row.clone()),
    }
}

/// A built-in (or `--reference FILE`) row with what its source says beside the row: board,
/// SoC, CPUs, OpenWrt revision and the in-device loopback figure.
pub fn device_of_reference(r: &Reference, input: &str) -> Device {
    let mut d = device_of_row(&r.row, input);
    let g = "identity";
    let mut ident: Vec<Figure> = [
        Figure::text(g, "SoC", r.get("soc").map(str::to_string)),
        Figure::text(g, "board", r.get("board").map(str::to_string)),
        Figure::number(
            g,
            "CPUs",
            Unit::Count,
            Better::Neither,
            r.get("cpus").and_then(|c| c.parse().ok()),
        ),
        Figure::text(g, "OpenWrt", r.get("openwrt").map(str::to_string)),
    ]
    .into_iter()
    .flatten()
    .collect();
    if let Some(bps) = r.loopback_bps() {
        let mut method = Vec::new();
        for (key, name) in [
            ("loopback-tool", "tool"),
            ("loopback-cc", "congestion control"),
            ("loopback-length", "length"),
            ("loopback-streams", "streams"),
            ("loopback-block", "block"),
        ] {
            if let Some(v) = r.get(key) {
                method.push(aspect(name, v));
            }
        }
        ident.extend(groups::loopback_of_reference(bps, &method));
    }
    ident.append(&mut d.figures);
    d.figures = ident;
    if let (Some(b), s) = (r.get("board"), r.get("soc")) {
        d.label = join_label(Some(b.to_string()), s.map(short_soc)).unwrap_or(d.label);
    }
    d
}

/// The input's directory and file name without `.json` (`default/latest`).
fn dir_stem(input: &str) -> String {
    let p = std::path::Path::new(input);
    match p.parent().and_then(|d| d.file_name()) {
        Some(d) => format!("{}/{}", d.to_string_lossy(), stem(input)),
        None => stem(input),
    }
}

/// Makes labels unique: a repeated label gets its input's file name (`(latest)`), or its
/// directory and file name when those repeat too (`(default/latest)`), else `#n`.
pub fn unique_labels(devices: &mut [Device]) {
    let labels: Vec<String> = devices.iter().map(|d| d.label.clone()).collect();
    let inputs: Vec<String> = devices.iter().map(|d| d.input.clone()).collect();
    for (i, d) in devices.iter_mut().enumerate() {
        let twins: Vec<usize> = (0..labels.len())
            .filter(|&j| labels[j] == labels[i])
            .collect();
        if twins.len() < 2 {
            continue;
        }
        let distinct = |f: fn(&str) -> String| {
            let mine = f(&inputs[i]);
            let fits = !mine.is_empty() && mine.chars().count() <= 24;
            (fits && twins.iter().all(|&j| j == i || f(&inputs[j]) != mine)).then_some(mine)
        };
        d.label = match distinct(stem).or_else(|| distinct(dir_stem)) {
            Some(s) => format!("{} ({s})", labels[i]),
            None => format!("{} #{}", labels[i], i + 1),
        };
    }
}

/// The comparison of `devices` in `format` and `layout` (auto: side by side for up to three).
pub fn render(c: &Comparison, format: Format, layout: Layout) -> String {
    let layout = layout.resolve(c.devices.len());
    match format {
        Format::Text => text::render(c, layout, false),
        Format::Markdown => text::render(c, layout, true),
        Format::Wiki => formats::wiki(c),
        Format::Csv => formats::csv(c),
        Format::Json => formats::json(c),
    }
}

#[cfg(test)]
#[path = "tests.rs"]
mod tests;
