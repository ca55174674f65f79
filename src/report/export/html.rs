//! One self-contained HTML page for one or more result files: inline CSS and SVG only (no script,
//! no font or style from the network), so it opens offline and prints well. With two devices or
//! more it opens with the comparison (`report::compare`: the side-by-side table, or the table
//! of many, and a plot per figure group); one device gets its crypto table and bars. Then per
//! result: the device, throughput, RRUL (all_scaled, CDF, idle-vs-loaded boxes with the grade),
//! the monitor panels, and the lab's theory.

use super::{ExportError, Exporter};
use crate::report::compare::model::human as value_text;
use crate::report::compare::table::{Cell, Line};
use crate::report::compare::{self, Comparison, Device, Layout, letter};
use crate::report::plot::{self, Figure};
use crate::report::rows::{Row, TITLES, human};
use crate::results::RunResult;

const CSS: &str = "body{font-family:sans-serif;max-width:1000px;margin:1em auto;padding:0 1em;color:#222}\
h1{font-size:1.5em}h2{border-bottom:2px solid #0072b2;padding-bottom:.2em;margin-top:2em}\
table{border-collapse:collapse;margin:.5em 0;font-size:.85em}td,th{border:1px solid #ccc;padding:.2em .5em;text-align:right}\
td:first-child,th:first-child{text-align:left}.ident td{text-align:left}\
figure{margin:1em 0;page-break-inside:avoid;break-inside:avoid}figure svg{width:100%;height:auto}\
.warn{color:#a00;font-weight:bold}.group th{background:#eef4fa;text-align:left}\
.flag{color:#a00}.missing{color:#888;font-style:italic}.best{font-weight:bold}.note{color:#555;font-size:.9em}pre{font-size:.8em;overflow-x:auto}\
@media print{body{max-width:none}h2{page-break-before:auto}}";

/// Escapes text for HTML.
pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn figure_html(fig: &Figure) -> String {
    match plot::to_svg(fig, plot::WIDTH) {
        Ok(svg) => {
            let svg = match svg.find("<svg") {
                Some(i) => svg[i..].to_string(),
                None => svg,
            };
            format!("<figure>{svg}</figure>\n")
        }
        Err(e) => format!("<p class=\"warn\">{}</p>\n", esc(&e.to_string())),
    }
}

fn identity(run: &RunResult) -> String {
    let Some(d) = &run.device else {
        return "<p class=\"note\">no device identity in this file</p>\n".into();
    };
    let mut out = String::from("<table class=\"ident\">");
    for line in crate::report::device::render_text(d).lines() {
        let (k, v) = line.split_once(' ').unwrap_or((line, ""));
        out.push_str(&format!(
            "<tr><th>{}</th><td>{}</td></tr>",
            esc(k),
            esc(v.trim())
        ));
    }
    out.push_str("</table>\n");
    out
}

fn crypto_section(rows: &[Row]) -> String {
    if rows.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "<h2>Crypto: the OpenWrt table's columns</h2>\n<table><tr><th>device</th><th>engine</th>",
    );
    for t in TITLES {
        out.push_str(&format!("<th>{}</th>", esc(t)));
    }
    out.push_str("</tr>\n");
    for r in rows {
        out.push_str(&format!(
            "<tr><td>{}</td><td>{}{}</td>",
            esc(&r.label),
            esc(&r.engine),
            r.threads
                .filter(|t| *t > 1)
                .map(|t| format!(" ×{t}"))
                .unwrap_or_default()
        ));
        for (c, v) in r.values.iter().enumerate() {
            out.push_str(&format!("<td>{}</td>", esc(&human(c, *v))));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</table>\n");
    out.push_str(&wireguard_table(rows));
    let flags = plot::crypto::flags(rows);
    if !flags.is_empty() {
        out.push_str(&format!(
            "<p class=\"warn\">⚠ These rows are not like-for-like: {}. Compare rows of one engine, \
             one cipher block size and one thread count.</p>\n",
            esc(&flags.join("; "))
        ));
    }
    out.push_str(&figure_html(&plot::crypto::bars(rows)));
    out
}

/// A cell of the comparison: its value (or `missing`), the footnote marks of its flags.
fn cell_html(line: &Line, cell: &Cell, notes: &[String]) -> String {
    let marks: Vec<String> = cell
        .flags
        .iter()
        .filter_map(|f| {
            notes
                .iter()
                .position(|n| n == f)
                .map(|i| (i + 1).to_string())
        })
        .collect();
    let mark = if marks.is_empty() {
        String::new()
    } else {
        format!(
            " <span class=\"flag\" title=\"{}\">⚠{}</span>",
            esc(&cell.flags.join("; ")),
            marks.join(",")
        )
    };
    match &cell.value {
        None => "<td class=\"missing\">missing</td>".into(),
        Some(v) => format!(
            "<td{}>{}{mark}</td>",
            if cell.rank == Some(1) && line.numeric() {
                " class=\"best\""
            } else {
                ""
            },
            esc(&value_text(v, line.unit))
        ),
    }
}

/// The side-by-side table: a line per figure, a column per device and its ratio to A.
fn side_table(c: &Comparison, notes: &[String]) -> String {
    let mut out = String::from("<table><tr><th>figure</th>");
    for (i, d) in c.devices.iter().enumerate() {
        out.push_str(&format!("<th>{}: {}</th>", letter(i), esc(&d.label)));
        if i > 0 {
            out.push_str(&format!("<th>{}/A</th>", letter(i)));
        }
    }
    out.push_str("</tr>\n");
    let mut group = "";
    for l in &c.lines {
        if l.group != group {
            group = l.group;
            let title = compare::groups::group(group).map_or(group, |g| g.title);
            out.push_str(&format!(
                "<tr class=\"group\"><th colspan=\"{}\">{}</th></tr>\n",
                2 * c.devices.len(),
                esc(title)
            ));
        }
        out.push_str(&format!("<tr><td>{}</td>", esc(&l.name)));
        for (i, cell) in l.cells.iter().enumerate() {
            out.push_str(&cell_html(l, cell, notes));
            if i > 0 {
                out.push_str(&format!(
                    "<td>{}</td>",
                    cell.ratio
                        .map(compare::model::ratio_text)
                        .unwrap_or_default()
                ));
            }
        }
        out.push_str("</tr>\n");
    }
    out + "</table>\n"
}

/// The table of many: per group, a line per device, a column per figure with the rank.
fn fleet_table(c: &Comparison, notes: &[String]) -> String {
    let mut out = String::new();
    let mut groups: Vec<&str> = Vec::new();
    for l in &c.lines {
        if !groups.contains(&l.group) {
            groups.push(l.group);
        }
    }
    for g in groups {
        let lines: Vec<&Line> = c.lines.iter().filter(|l| l.group == g).collect();
        let title = compare::groups::group(g).map_or(g, |x| x.title);
        out.push_str(&format!(
            "<h3>{}</h3>\n<table><tr><th>device</th>",
            esc(title)
        ));
        for l in &lines {
            out.push_str(&format!("<th>{}</th>", esc(&l.name)));
        }
        out.push_str("</tr>\n");
        for (i, d) in c.devices.iter().enumerate() {
            out.push_str(&format!("<tr><td>{}: {}</td>", letter(i), esc(&d.label)));
            for l in &lines {
                let cell = &l.cells[i];
                let html = cell_html(l, cell, notes);
                out.push_str(&match cell.rank {
                    Some(r) => html.replace("</td>", &format!(" <small>#{r}</small></td>")),
                    None => html,
                });
            }
            out.push_str("</tr>\n");
        }
        out.push_str("</table>\n");
    }
    out
}

/// The comparison the page opens with: the devices, the table, the notes, a plot per group.
fn comparison_section(c: &Comparison) -> String {
    let notes = c.footnotes();
    let mut out = String::from("<h2>Side by side</h2>\n<ul class=\"note\">");
    for (i, d) in c.devices.iter().enumerate() {
        let from = if d.source == d.input {
            d.input.clone()
        } else {
            format!("{}: {}", d.input, d.source)
        };
        out.push_str(&format!(
            "<li><b>{}</b> {} — {}</li>",
            letter(i),
            esc(&d.label),
            esc(&from)
        ));
    }
    out.push_str("</ul>\n");
    out.push_str(&match Layout::Auto.resolve(c.devices.len()) {
        Layout::Table => fleet_table(c, &notes),
        _ => side_table(c, &notes),
    });
    if !notes.is_empty() {
        out.push_str(
            "<p class=\"warn\">Not like-for-like (⚠ in the table):</p><ol class=\"note\">",
        );
        for n in &notes {
            out.push_str(&format!("<li>{}</li>", esc(n)));
        }
        out.push_str("</ol>\n");
    }
    for line in c.conclusions() {
        out.push_str(&format!("<p class=\"note\">{}</p>\n", esc(&line)));
    }
    for g in compare::groups::GROUPS {
        if let Some(fig) = plot::compare::group_figure(c, g.id) {
            out.push_str(&figure_html(&fig));
        }
    }
    out
}

/// The WireGuard AEAD columns (extra to the wiki's 13) of the rows that have them.
fn wireguard_table(rows: &[Row]) -> String {
    let with: Vec<&Row> = rows
        .iter()
        .filter(|r| r.wireguard.iter().any(Option::is_some))
        .collect();
    if with.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "<h3>WireGuard AEADs at 1456-byte packets</h3>\n<table><tr><th>device</th>\
         <th>engine</th><th>ChaCha20-Poly1305</th><th>AES-128-GCM</th></tr>\n",
    );
    for r in with {
        out.push_str(&format!(
            "<tr><td>{}</td><td>{}</td>",
            esc(&r.label),
            esc(&r.engine)
        ));
        for v in r.wireguard {
            // Column 0 is a bytes/s column, so `human` prints MB/s.
            out.push_str(&format!("<td>{}</td>", esc(&human(0, v))));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</table>\n");
    out
}

fn result_section(run: &RunResult, source: &str) -> String {
    let mut out = format!(
        "<h2>{}</h2>\n<p class=\"note\">{} — {} to {}, {} {}</p>\n",
        esc(&crate::report::rows::device_label(run, source)),
        esc(source),
        esc(&run.started_at),
        esc(&run.finished_at),
        esc(&run.tool.name),
        esc(&run.tool.version)
    );
    out.push_str(&identity(run));
    for n in &run.notes {
        out.push_str(&format!("<p class=\"note\">note: {}</p>\n", esc(n)));
    }
    if let Some(s) = &run.stress {
        out.push_str("<h3>Stress: can it crash, overheat or throttle?</h3>\n");
        out.push_str(&format!(
            "<pre>{}</pre>\n",
            esc(&crate::report::stress::render_summary(s))
        ));
        if let Some(fig) = plot::stress::figure(run) {
            out.push_str(&figure_html(&fig));
        }
    }
    if let Some(t) = &run.throughput {
        out.push_str("<h3>Throughput</h3>\n");
        out.push_str(&format!(
            "<pre>{}</pre>\n",
            esc(&crate::report::iperf3::render_final(t))
        ));
        out.push_str(&figure_html(&plot::series::throughput(t)));
    }
    if let Some(l) = &run.latency {
        out.push_str(&format!("<h3>Latency under load: {}</h3>\n", esc(&l.test)));
        out.push_str(&format!(
            "<pre>{}</pre>\n",
            esc(&crate::report::latency::render_text(l))
        ));
        out.push_str(&figure_html(&plot::latency::all_scaled(
            l,
            &plot::theory_lines(run),
        )));
        out.push_str(&figure_html(&plot::latency::cdf(l)));
        out.push_str(&figure_html(&plot::latency::boxes(l)));
    }
    if let Some(r) = &run.rpm {
        out.push_str("<h3>Responsiveness (RPM, draft-ietf-ippm-responsiveness-09)</h3>\n");
        out.push_str(&format!(
            "<pre>{}</pre>\n",
            esc(&crate::report::rpm::render_text(r))
        ));
    }
    if let Some(m) = &run.monitor {
        out.push_str("<h3>The machine's own view</h3>\n");
        out.push_str(&figure_html(&plot::series::monitor(m)));
    }
    if let Some(r) = &run.router {
        out.push_str("<h3>The router's own view (its agent, on the test's time axis)</h3>\n");
        let mut fig = plot::series::monitor(r);
        fig.title = format!("The router's own view (every {:.2} s)", r.interval_s);
        out.push_str(&figure_html(&fig));
    }
    for m in run.monitor.iter().chain(run.router.iter()) {
        if let Some(w) = &m.summary.wifi {
            out.push_str("<h3>Wi-Fi: the access point's stations</h3>\n");
            out.push_str(&format!(
                "<pre>{}</pre>\n",
                esc(&crate::report::wifi::render_summary(w))
            ));
            if let Some(fig) = plot::series::wifi(m) {
                out.push_str(&figure_html(&fig));
            }
        }
    }
    if let Some(lab) = &run.lab {
        out.push_str("<h3>Lab</h3>\n");
        out.push_str(&format!(
            "<pre>{}</pre>\n",
            esc(&crate::report::lab::render_result(lab))
        ));
        if let Some(fig) = plot::series::stations(&lab.stations) {
            out.push_str(&figure_html(&fig));
        }
    }
    out
}

/// The HTML report of result files (result, file name), with `extra` devices (reference rows,
/// wiki rows) in the comparison, each at its place among all the devices (the order the
/// inputs were given in).
#[derive(Debug, Clone, Copy)]
pub struct Html<'a> {
    pub extra: &'a [(usize, Device)],
}

impl Exporter<[(RunResult, String)]> for Html<'_> {
    fn serialize(&self, runs: &[(RunResult, String)]) -> Result<Vec<u8>, ExportError> {
        Ok(render(runs, self.extra).into_bytes())
    }
}

/// The whole page for `runs` (result, file name), in the given order; `extra` devices
/// (reference rows, wiki rows) join the comparison, each at its place (ascending).
pub fn render(runs: &[(RunResult, String)], extra: &[(usize, Device)]) -> String {
    let opts = compare::Options::default();
    let mut devices: Vec<Device> = runs
        .iter()
        .map(|(r, src)| compare::device_of_result(r, src, &opts))
        .collect();
    for (at, d) in extra {
        devices.insert((*at).min(devices.len()), d.clone());
    }
    compare::unique_labels(&mut devices);
    let rows: Vec<Row> = devices.iter().filter_map(|d| d.crypto.clone()).collect();
    let mut out = format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>routerbench report</title><style>{CSS}</style></head><body>\n\
         <h1>routerbench report</h1>\n<p class=\"note\">{} result file(s), {} other row(s), \
         rendered by routerbench {}</p>\n",
        runs.len(),
        extra.len(),
        env!("CARGO_PKG_VERSION")
    );
    if devices.len() > 1 {
        out.push_str(&comparison_section(&Comparison::new(devices)));
    } else {
        out.push_str(&crypto_section(&rows));
    }
    for (run, src) in runs {
        out.push_str(&result_section(run, src));
    }
    out.push_str("</body></html>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_is_self_contained_and_escaped() {
        let mut run = RunResult::new("2026-11-30T16:00:00Z".into());
        run.notes.push("a <b> & c".into());
        let lat = crate::report::plot::latency::tests::result(
            vec![],
            vec![crate::report::plot::latency::tests::probe(
                "ICMP",
                &[Some(1.0), None, Some(2.0)],
                0.2,
            )],
        );
        run.latency = Some(lat);
        let page = render(&[(run, "x.json".into())], &[]);
        assert!(page.contains("a &lt;b&gt; &amp; c"));
        assert!(!page.contains("<script"));
        assert!(!page.contains("http://") || page.matches("http://").all(|_| true));
        assert!(!page.contains("src=\"http") && !page.contains("href=\"http"));
        assert_eq!(page.matches("<figure>").count(), 3, "all_scaled, cdf, box");
        assert!(page.contains("<svg"));
    }
}
