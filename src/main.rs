//! routerbench: the command-line entry point. Parses the arguments, runs one command, maps errors
//! to exit codes (0 ok, 1 failure, 2 usage).

use clap::Parser;

// `main` returns its exit code instead of calling `process::exit`: a `main` that never returns
// is `noreturn` + `nounwind` (panic=abort), and LLVM then saves neither LR nor the callee-saved
// registers in its prologue while ARM EHABI still gives it an unwind entry. A backtrace walked
// through it (anyhow captured one per error when RUST_BACKTRACE was set, before it lost its `std`
// feature; std's own Backtrace still can) revisits `main` forever: the opt-level "z" armv7 build
// segfaulted past the stack top, the Thumb-2 one hung.
fn main() -> std::process::ExitCode {
    // `server --config FILE` becomes the file's flags first, so clap checks them like any flag.
    let argv =
        match routerbench::cli::server::config_file::expand_argv(std::env::args_os().collect()) {
            Ok(argv) => argv,
            Err(err) => {
                eprintln!("routerbench: error: {err:#}");
                return std::process::ExitCode::from(2);
            }
        };
    let cli = routerbench::cli::Cli::parse_from(argv);
    match routerbench::cli::dispatch(cli) {
        Ok(code) => std::process::ExitCode::from(u8::try_from(code).unwrap_or(1)),
        Err(err) => {
            routerbench::errln!("routerbench: error: {err:#}");
            std::process::ExitCode::from(1)
        }
    }
}
