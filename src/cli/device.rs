//! `routerbench device`: print this machine's identity.

use clap::Args;

#[derive(Debug, Args)]
pub struct DeviceArgs {
    /// The identity as JSON (`--json [FILE|-]`, see `crate::cli::common::json_arg`).
    #[command(flatten)]
    pub json: crate::cli::common::json_arg::JsonArg,
}

pub fn run(args: DeviceArgs) -> anyhow::Result<i32> {
    args.json.check()?;
    let info = crate::device::detect();
    if !args.json.on_stdout() {
        crate::out!("{}", crate::report::device::render_text(&info));
    }
    if let Some(path) = args.json.write(&info)? {
        crate::outln!("saved {}", path.display());
    }
    Ok(0)
}
