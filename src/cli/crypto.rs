//! `routerbench crypto`: the `openssl speed` suite, or import of its saved output.

use clap::Args;

#[derive(Debug, Args)]
pub struct CryptoArgs {}

pub fn run(_args: CryptoArgs) -> anyhow::Result<i32> {
    anyhow::bail!("routerbench crypto is being built")
}
