//! routerbench: the command-line entry point. Parses the arguments, runs one command, maps errors
//! to exit codes (0 ok, 1 failure, 2 usage).

#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

use clap::Parser;

fn main() {
    // `server --config FILE` becomes the file's flags first, so clap checks them like any flag.
    let argv = match routerbench::cli::server_config::expand_argv(std::env::args_os().collect()) {
        Ok(argv) => argv,
        Err(err) => {
            eprintln!("routerbench: error: {err:#}");
            std::process::exit(2);
        }
    };
    let cli = routerbench::cli::Cli::parse_from(argv);
    match routerbench::cli::dispatch(cli) {
        Ok(code) => std::process::exit(code),
        Err(err) => {
            routerbench::errln!("routerbench: error: {err:#}");
            std::process::exit(1);
        }
    }
}
