//! `routerbench report RESULT.json… [-o report.html]` and `routerbench plot RESULT.json --kind K
//! -o FILE.svg`: the HTML page and single SVG plots, drawn by `report::export::html` and `report::plot`.

use crate::report::export::{ExportError, Exporter, html::Html};
use crate::report::plot::{self, Kind};
use clap::Args;
use std::path::{Path, PathBuf};

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Result files (`routerbench run`, or any command's `--json`); also files of OpenWrt wiki
    /// rows and `ref:ID` built-in reference rows, which join the comparison the page opens with.
    #[arg(required = true, value_name = "RESULT.json")]
    pub files: Vec<String>,
    /// The HTML file to write.
    #[arg(short, long, default_value = "report.html")]
    pub output: PathBuf,
}

#[derive(Debug, Args)]
pub struct PlotArgs {
    /// A result file.
    #[arg(value_name = "RESULT.json")]
    pub file: PathBuf,
    /// Which plot.
    #[arg(long, value_enum)]
    pub kind: Kind,
    /// The SVG file to write.
    #[arg(short, long)]
    pub output: PathBuf,
}

/// Loads every file, naming the one that fails: any command's `--json` output (a file of the
/// server's, one iperf3 document per test, gives one result per test).
pub fn load_all(files: &[PathBuf]) -> anyhow::Result<Vec<(crate::results::RunResult, String)>> {
    let mut out = Vec::new();
    for f in files {
        let runs = crate::results::load_any(f)?;
        let n = runs.len();
        for (i, r) in runs.into_iter().enumerate() {
            let name = if n > 1 {
                format!("{} (test {} of {n})", f.display(), i + 1)
            } else {
                f.display().to_string()
            };
            out.push((r, name));
        }
    }
    Ok(out)
}

/// Writes the report of `runs` (and devices `extra`: reference or wiki rows, each at its place
/// among all devices) to `path`.
pub fn write_report(
    runs: &[(crate::results::RunResult, String)],
    extra: &[(usize, crate::report::compare::Device)],
    path: &Path,
) -> anyhow::Result<()> {
    Html { extra }
        .write_to_file(runs, path)
        .map_err(|e| match e {
            ExportError::Write { cause, .. } => {
                anyhow::anyhow!(
                    "cannot write {}: {cause} (choose another -o)",
                    path.display()
                )
            }
            e => e.into(),
        })
}

pub fn run_report(a: ReportArgs) -> anyhow::Result<i32> {
    // Devices in the order given: the results of each file, or its rows.
    let mut runs = Vec::new();
    let mut extra = Vec::new();
    for f in &a.files {
        if crate::cli::compare::is_result_file(f) {
            runs.extend(load_all(&[PathBuf::from(f)])?);
        } else {
            let opts = crate::report::compare::Options::default();
            for d in crate::cli::compare::devices_of(f, &opts)? {
                extra.push((runs.len() + extra.len(), d));
            }
        }
    }
    write_report(&runs, &extra, &a.output)?;
    crate::outln!("wrote {}", a.output.display());
    Ok(0)
}

pub fn run_plot(a: PlotArgs) -> anyhow::Result<i32> {
    let run = crate::results::load_any(&a.file)?
        .into_iter()
        .next_back()
        .ok_or_else(|| anyhow::anyhow!("{}: no result in it", a.file.display()))?;
    let fig = plot::figure(a.kind, &run, &a.file.display().to_string())
        .map_err(|e| anyhow::anyhow!("{e} (try another --kind)"))?;
    let svg = plot::to_svg(&fig, plot::WIDTH)?;
    std::fs::write(&a.output, svg)
        .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", a.output.display()))?;
    crate::outln!("wrote {}", a.output.display());
    Ok(0)
}
