//! `routerbench compare A B … | DIR`: devices side by side on every headline figure they have
//! (identity, in-device loopback, the crypto row and WireGuard AEADs, latency under load, per
//! phase, RPM, SQM and forwarding capacity, stress verdicts), each with its ratio to the first;
//! from four devices on, a table with a line per device and each one's rank per column.
//! Inputs are result files (any command's `--json`), directories of them, files of rows in the
//! wiki's format, or `ref:ID`; one that cannot be read is skipped with a one-line reason.
//! `--reference [FILE]` ranks each crypto row among the reference set.

use crate::report::compare::{self, Comparison, Device, Format, Layout, Options, letter};
use crate::report::reference::{self, Reference};
use clap::Args;
use std::path::Path;

#[derive(Debug, Args)]
pub struct CompareArgs {
    /// Result files (any command's --json), directories of them (every *.json but
    /// latest.json), files of OpenWrt wiki rows, or `ref:ID` for a built-in reference row
    /// (`ref:list` lists them). The first device is the base of every ratio.
    #[arg(value_name = "A B …|DIR")]
    pub inputs: Vec<String>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// Side by side (a column per device) or a table (a line per device); auto: side by side
    /// for up to three devices.
    #[arg(long, value_enum, default_value_t = Layout::Auto)]
    pub layout: Layout,
    /// Order the devices by a figure, best first: its key (`loopback.tcp`, `crypto.aes-128`),
    /// the key's last part (`aes-128`), a group with one figure (`loopback`) or its name.
    #[arg(long, value_name = "FIGURE")]
    pub sort: Option<String>,
    /// A device's label: `A=name` (its letter), `2=name` (its position) or `FILE=name`.
    /// Repeatable.
    #[arg(long, value_name = "WHICH=NAME")]
    pub label: Vec<String>,
    /// Rank each crypto row among reference rows: the built-in set, or FILE (rows in the
    /// wiki's format). Give it after the inputs, or as --reference=FILE.
    #[arg(long, value_name = "FILE", num_args = 0..=1, default_missing_value = "builtin")]
    pub reference: Option<String>,
    /// Block size of a result file's cipher columns: 8192 (OpenSSL 3.x rows) or 1024 (1.x rows).
    #[arg(long, default_value_t = crate::results::crypto::ROW_CIPHER_BLOCK)]
    pub cipher_block: u32,
}

/// The reference set: built in, or a user's file.
pub fn references(which: &str) -> anyhow::Result<Vec<Reference>> {
    if which == "builtin" {
        return reference::builtin().map_err(anyhow::Error::msg);
    }
    let text = std::fs::read_to_string(which)
        .map_err(|e| anyhow::anyhow!("cannot read the reference table {which}: {e}"))?;
    reference::parse(&text, which).map_err(anyhow::Error::msg)
}

/// True if `input` is a JSON file (a result), not `ref:ID` or a file of wiki rows.
pub fn is_result_file(input: &str) -> bool {
    if input.starts_with("ref:") {
        return false;
    }
    std::fs::read_to_string(input).map_or(true, |t| t.trim_start().starts_with('{'))
}

/// The built-in reference row `ref:ID`.
fn builtin_ref(id: &str) -> anyhow::Result<Reference> {
    reference::builtin()
        .map_err(anyhow::Error::msg)?
        .into_iter()
        .find(|r| r.id == id)
        .ok_or_else(|| {
            anyhow::anyhow!("no built-in reference row `{id}` (see `routerbench compare ref:list`)")
        })
}

/// The devices of one input: a result file (one per document in it), a directory of them, a
/// file of wiki rows (one per row), or `ref:ID`.
pub fn devices_of(input: &str, opts: &Options) -> anyhow::Result<Vec<Device>> {
    if let Some(id) = input.strip_prefix("ref:") {
        return Ok(vec![compare::device_of_reference(&builtin_ref(id)?, input)]);
    }
    let path = Path::new(input);
    let text =
        std::fs::read_to_string(path).map_err(|e| anyhow::anyhow!("cannot read {input}: {e}"))?;
    if text.trim_start().starts_with('{') {
        let runs = crate::results::load_any(path)?;
        let n = runs.len();
        return Ok(runs
            .iter()
            .enumerate()
            .map(|(i, run)| {
                let name = if n > 1 {
                    format!("{input} (test {} of {n})", i + 1)
                } else {
                    input.to_string()
                };
                compare::device_of_result(run, &name, opts)
            })
            .collect());
    }
    Ok(reference::parse(&text, input)
        .map_err(|e| {
            anyhow::anyhow!(
                "neither a result file (JSON) nor rows in the wiki's format `| identity | engine \
                 | 13 numbers |` ({e})"
            )
        })?
        .iter()
        .map(|r| {
            if r.meta.is_empty() {
                compare::device_of_row(&r.row, input)
            } else {
                compare::device_of_reference(r, input)
            }
        })
        .collect())
}

/// The inputs with each directory replaced by its result files (`*.json` in name order,
/// without `latest.json`, the copy `run` keeps of its newest result).
fn expand(inputs: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    for i in inputs {
        let p = Path::new(i);
        if !p.is_dir() {
            out.push(i.clone());
            continue;
        }
        let mut files: Vec<String> = std::fs::read_dir(p)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .filter(|f| f.extension().is_some_and(|x| x == "json"))
            .filter(|f| f.file_name().is_some_and(|n| n != "latest.json"))
            .map(|f| f.display().to_string())
            .collect();
        files.sort();
        if files.is_empty() {
            crate::errln!("routerbench compare: {i}: no *.json result files in this directory");
        }
        out.extend(files);
    }
    out
}

/// Applies `--label WHICH=NAME`.
fn apply_labels(devices: &mut [Device], labels: &[String]) -> anyhow::Result<()> {
    for l in labels {
        let Some((which, name)) = l.split_once('=') else {
            anyhow::bail!("--label {l}: write WHICH=NAME, e.g. --label A=\"my router\"");
        };
        let i = devices
            .iter()
            .enumerate()
            .position(|(i, d)| {
                which == letter(i) || which == (i + 1).to_string() || which == d.input
            })
            .ok_or_else(|| {
                anyhow::anyhow!(
                    "--label {l}: `{which}` is none of the devices (a letter A–{}, a position \
                     1–{}, or an input as given)",
                    letter(devices.len().saturating_sub(1)),
                    devices.len()
                )
            })?;
        devices[i].label = name.to_string();
    }
    Ok(())
}

/// Leaves out, with a one-line reason each, devices that share no measured figure with the
/// first one (two results of different kinds: a stress run and a crypto row, say); also says
/// how many it left out.
fn keep_comparable(devices: Vec<Device>) -> (Vec<Device>, usize) {
    let Some(base) = devices.first() else {
        return (devices, 0);
    };
    let base_groups = base.measured_groups();
    let base_label = format!("{} ({})", base.label, base.input);
    let mut out = Vec::new();
    for (i, d) in devices.iter().enumerate() {
        let groups = d.measured_groups();
        if i > 0 && !groups.iter().any(|g| base_groups.contains(g)) {
            let has = |g: &[&str]| {
                if g.is_empty() {
                    "nothing but its identity".to_string()
                } else {
                    g.join(", ")
                }
            };
            crate::errln!(
                "routerbench compare: skipping {}: it has no figure in common with {base_label} \
                 (it has {}; that one has {})",
                d.input,
                has(&groups),
                has(&base_groups)
            );
            continue;
        }
        out.push(d.clone());
    }
    let left_out = devices.len() - out.len();
    (out, left_out)
}

pub fn run(a: CompareArgs) -> anyhow::Result<i32> {
    if a.cipher_block != 1024 && a.cipher_block != 8192 {
        anyhow::bail!("--cipher-block must be 1024 or 8192");
    }
    if a.inputs.iter().any(|i| i == "ref:list") {
        for r in reference::builtin().map_err(anyhow::Error::msg)? {
            let loopback = r
                .get("loopback")
                .map_or(String::new(), |l| format!(", loopback {l}"));
            crate::outln!(
                "ref:{:<22} {} [{}{loopback}] — {}",
                r.id,
                r.row.label,
                r.row.engine,
                r.row.source
            );
        }
        return Ok(0);
    }
    let opts = Options {
        cipher_block: a.cipher_block,
    };
    let mut devices = Vec::new();
    let mut skipped = 0;
    for input in expand(&a.inputs) {
        match devices_of(&input, &opts) {
            Ok(d) => devices.extend(d),
            Err(e) => {
                skipped += 1;
                let line = format!("{e:#}").replace('\n', " ");
                crate::errln!("routerbench compare: skipping {input}: {line}");
            }
        }
    }
    let refs = a.reference.as_deref().map(references).transpose()?;
    let (mut devices, left_out) = keep_comparable(devices);
    skipped += left_out;
    compare::unique_labels(&mut devices);
    apply_labels(&mut devices, &a.label)?;
    if devices.len() >= 2 {
        let mut c = Comparison::new(devices.clone());
        if let Some(want) = &a.sort {
            let Some(line) = c.find(want) else {
                let keys: Vec<&str> = c.lines.iter().map(|l| l.key.as_str()).collect();
                anyhow::bail!(
                    "--sort {want}: no such figure here; these are: {}",
                    keys.join(", ")
                );
            };
            let order = c.order_by(line);
            c = c.reordered(&order);
        }
        crate::out!("{}", compare::render(&c, a.format, a.layout));
    } else if refs.is_none() {
        anyhow::bail!(
            "compare needs two devices (result files, a directory of them, rows or ref:ID), or \
             one with --reference; got {}{}",
            devices.len(),
            if skipped > 0 {
                format!(" ({skipped} input(s) skipped, see above)")
            } else {
                String::new()
            }
        );
    }
    if let Some(refs) = refs {
        for row in devices.iter().filter_map(|d| d.crypto.as_ref()) {
            // A row is not ranked against itself when it comes from the same set.
            let others: Vec<Reference> = refs.iter().filter(|r| r.row != *row).cloned().collect();
            crate::outln!();
            crate::out!(
                "{}",
                reference::render_standing(row, &reference::standing(row, &others))
            );
        }
    }
    Ok(if skipped > 0 { 1 } else { 0 })
}
