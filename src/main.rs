//! routerbench: the command-line entry point. Parses the arguments, runs one command, maps errors
//! to exit codes (0 ok, 1 failure, 2 usage).

use clap::Parser;

fn main() {
    let cli = routerbench::cli::Cli::parse();
    match routerbench::cli::dispatch(cli) {
        Ok(code) => std::process::exit(code),
        Err(err) => {
            routerbench::errln!("routerbench: error: {err:#}");
            std::process::exit(1);
        }
    }
}
