//! `routerbench run`: the full local suite, saved under `./routerbench-results/`.

use clap::Args;

#[derive(Debug, Args)]
pub struct RunArgs {
    /// Directory for the JSON result.
    #[arg(long, default_value = "routerbench-results")]
    pub out_dir: std::path::PathBuf,
}

pub fn run(args: RunArgs) -> anyhow::Result<i32> {
    let started = crate::util::time::now_rfc3339();
    let mut result = crate::results::RunResult::new(started);
    result.device = Some(crate::device::detect());
    result.finished_at = crate::util::time::now_rfc3339();
    let path = args.out_dir.join("run.json");
    crate::results::save(&result, &path)?;
    println!("saved {}", path.display());
    Ok(0)
}
