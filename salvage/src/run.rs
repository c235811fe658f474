//! Orchestration: runs a subcommand and maps failures to errors with exit codes.

use std::io::Write;

use recovery::{Error, Outcome};

use crate::cli::{Cli, Command};

/// Writes `text` to stdout; a closed pipe is not an error.
pub fn print_stdout(text: &str) -> Result<(), Error> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other.map_err(Error::Output),
    }
}

/// Runs the command line.
pub fn run(cli: &Cli) -> Result<Outcome, Error> {
    match &cli.command {
        Command::Inspect(args) => crate::inspect::run(args),
        Command::Recover(args) => crate::recover::run(args),
        Command::Report(args) => crate::render::run(args),
        Command::Export(args) => crate::export::run(args),
        Command::Demo(args) => crate::demo::run(args),
    }
}
