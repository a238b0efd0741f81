//! Command line: clap structs ([`args`]), dispatch, the choice of renderer, exit codes. The
//! only place that uses `anyhow`; everything it runs is in the library.

mod args;
mod demo;
mod export;
mod filter;
mod flamegraph;
mod parse;
mod plot;
mod record;
mod report;
mod warn;
mod whatif;

use std::io::{self, Write};
use std::process::ExitCode;

use clap::Parser;

pub use args::Cli;
use args::Command;

/// Dispatch a parsed command line.
fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Parse(a) => parse::run(a),
        Command::Report(a) => report::report(a),
        Command::Diff(a) => report::diff(a),
        Command::Demo(a) => demo::run(a),
        Command::Whatif(a) => whatif::whatif(a),
        Command::Validate(a) => whatif::validate(a),
        Command::Plot(a) => plot::plot(a),
        Command::Record(a) => record::run(a),
        Command::Flamegraph(a) => flamegraph::run(a),
        Command::Export(a) => export::run(a),
    }
}

/// Parse arguments, run, print errors, and map them to the documented exit codes.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            if is_broken_pipe(&e) {
                return ExitCode::SUCCESS;
            }
            let _ = writeln!(io::stderr(), "lockcast: {}", message(&e));
            ExitCode::from(exit_code(&e))
        }
    }
}

/// The error and its causes, each cause added only if the text so far does not already say
/// it: `lockcast::Error` messages embed their source (`path: incomplete deflate stream`), and
/// `{:#}` would print it twice.
fn message(e: &anyhow::Error) -> String {
    let mut msg = e.to_string();
    for cause in e.chain().skip(1) {
        let c = cause.to_string();
        if !msg.contains(&c) {
            msg.push_str(": ");
            msg.push_str(&c);
        }
    }
    msg
}

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<io::Error>()
            .is_some_and(|io| io.kind() == io::ErrorKind::BrokenPipe)
            || c.downcast_ref::<lockcast::Error>().is_some_and(|l| {
                matches!(l, lockcast::Error::Io { source, .. } if source.kind() == io::ErrorKind::BrokenPipe)
            })
    })
}

fn exit_code(e: &anyhow::Error) -> u8 {
    e.chain()
        .find_map(|c| c.downcast_ref::<lockcast::Error>())
        .map_or(1, lockcast::Error::exit_code)
}
