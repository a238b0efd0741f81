//! The `lockcast` binary: parse arguments, run, map the outcome to an exit code.
use std::process::ExitCode;

mod cli;

fn main() -> ExitCode {
    cli::main()
}
