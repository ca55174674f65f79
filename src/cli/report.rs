//! `routerbench report RESULT.json… [-o report.html]` and `routerbench plot RESULT.json --kind K
//! -o FILE.svg`: the HTML page and single SVG plots, drawn by `report::html` and `report::plot`.

use crate::report::plot::{self, Kind};
use clap::Args;
use std::path::{Path, PathBuf};

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Result files (`routerbench run`, or any command's `--json`); also files of OpenWrt wiki
    /// rows and `ref:ID` built-in reference rows, which join the crypto comparison.
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

/// Loads every file, naming the one that fails.
pub fn load_all(files: &[PathBuf]) -> anyhow::Result<Vec<(crate::results::RunResult, String)>> {
    files
        .iter()
        .map(|f| {
            crate::results::load(f)
                .map(|r| (r, f.display().to_string()))
                .map_err(anyhow::Error::from)
        })
        .collect()
}

/// Writes the report of `runs` (and crypto rows `extra`) to `path`.
pub fn write_report(
    runs: &[(crate::results::RunResult, String)],
    extra: &[crate::report::rows::Row],
    path: &Path,
) -> anyhow::Result<()> {
    let page = crate::report::html::render(runs, extra);
    std::fs::write(path, page)
        .map_err(|e| anyhow::anyhow!("cannot write {}: {e} (choose another -o)", path.display()))
}

pub fn run_report(a: ReportArgs) -> anyhow::Result<i32> {
    let mut results = Vec::new();
    let mut rows = Vec::new();
    for f in &a.files {
        if crate::cli::compare::is_result_file(f) {
            results.push(PathBuf::from(f));
        } else {
            rows.extend(crate::cli::compare::rows_of(
                f,
                crate::results::crypto::ROW_CIPHER_BLOCK,
            )?);
        }
    }
    let runs = load_all(&results)?;
    write_report(&runs, &rows, &a.output)?;
    crate::outln!("wrote {}", a.output.display());
    Ok(0)
}

pub fn run_plot(a: PlotArgs) -> anyhow::Result<i32> {
    let run = crate::results::load(&a.file)?;
    let fig = plot::figure(a.kind, &run, &a.file.display().to_string())
        .map_err(|e| anyhow::anyhow!("{e} (try another --kind)"))?;
    let svg = plot::to_svg(&fig, plot::WIDTH)?;
    std::fs::write(&a.output, svg)
        .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", a.output.display()))?;
    crate::outln!("wrote {}", a.output.display());
    Ok(0)
}
