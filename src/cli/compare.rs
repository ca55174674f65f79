//! `routerbench compare A B …`: crypto rows side by side with the first one's ratio over each
//! other, from result files, files of rows in the wiki's format, or built-in reference rows
//! (`ref:ID`); `--reference [FILE]` ranks each row among the reference set.

use crate::report::compare::{self, Format};
use crate::report::reference::{self, Reference};
use crate::report::rows::Row;
use clap::Args;

#[derive(Debug, Args)]
pub struct CompareArgs {
    /// Result files (.json), files of OpenWrt wiki rows, or `ref:ID` for a built-in reference
    /// row (`ref:list` lists them). The first is the base of every ratio.
    #[arg(value_name = "A B …")]
    pub inputs: Vec<String>,
    /// Output layout.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// Rank each row among reference rows: the built-in set, or FILE (rows in the wiki's
    /// format). Give it after the inputs, or as --reference=FILE.
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

/// The crypto rows of one input: a result file, a file of wiki rows, or `ref:ID`.
pub fn rows_of(input: &str, cipher_block: u32) -> anyhow::Result<Vec<Row>> {
    if let Some(id) = input.strip_prefix("ref:") {
        let refs = reference::builtin().map_err(anyhow::Error::msg)?;
        return match refs.into_iter().find(|r| r.id == id) {
            Some(r) => Ok(vec![r.row]),
            None => anyhow::bail!(
                "no built-in reference row `{id}` (see `routerbench compare ref:list`)"
            ),
        };
    }
    let path = std::path::Path::new(input);
    let text =
        std::fs::read_to_string(path).map_err(|e| anyhow::anyhow!("cannot read {input}: {e}"))?;
    if text.trim_start().starts_with('{') {
        let run = crate::results::load(path)?;
        let row = Row::from_result(&run, input, cipher_block).ok_or_else(|| {
            anyhow::anyhow!("{input} has no crypto result (run `routerbench crypto --json FILE`)")
        })?;
        return Ok(vec![row]);
    }
    Ok(reference::parse(&text, input)
        .map_err(anyhow::Error::msg)?
        .into_iter()
        .map(|r| r.row)
        .collect())
}

pub fn run(a: CompareArgs) -> anyhow::Result<i32> {
    if a.cipher_block != 1024 && a.cipher_block != 8192 {
        anyhow::bail!("--cipher-block must be 1024 or 8192");
    }
    if a.inputs.iter().any(|i| i == "ref:list") {
        for r in reference::builtin().map_err(anyhow::Error::msg)? {
            crate::outln!(
                "ref:{:<20} {} [{}] — {}",
                r.id,
                r.row.label,
                r.row.engine,
                r.row.source
            );
        }
        return Ok(0);
    }
    let mut rows = Vec::new();
    for input in &a.inputs {
        rows.extend(rows_of(input, a.cipher_block)?);
    }
    let refs = a.reference.as_deref().map(references).transpose()?;
    if rows.len() >= 2 {
        crate::out!("{}", compare::render(&rows, a.format));
    } else if refs.is_none() {
        anyhow::bail!(
            "compare needs two rows (files or ref:ID), or one with --reference; got {}",
            rows.len()
        );
    }
    if let Some(refs) = refs {
        for row in &rows {
            // A row is not ranked against itself when it comes from the same set.
            let others: Vec<Reference> = refs.iter().filter(|r| r.row != *row).cloned().collect();
            crate::outln!();
            crate::out!(
                "{}",
                reference::render_standing(row, &reference::standing(row, &others))
            );
        }
    }
    Ok(0)
}
