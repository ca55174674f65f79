//! `routerbench device`: print this machine's identity.

use clap::Args;

#[derive(Debug, Args)]
pub struct DeviceArgs {
    /// Print the identity as JSON.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: DeviceArgs) -> anyhow::Result<i32> {
    let info = crate::device::detect();
    if args.json {
        crate::outln!("{}", serde_json::to_string_pretty(&info)?);
    } else {
        crate::out!("{}", crate::report::device::render_text(&info));
    }
    Ok(0)
}
