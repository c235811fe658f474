//! `salvage`: forensic SQLite salvage. See `docs/cli.md` for the command reference.
#![deny(unsafe_code)]

use std::process::ExitCode;

use clap::Parser;

mod bulk;
mod cli;
mod copies;
mod demo;
mod export;
mod fts;
mod inspect;
mod output;
mod partial;
mod placeholders;
mod profiles;
mod recover;
mod recover_report;
mod render;
mod report;
mod run;
mod source;

fn main() -> ExitCode {
    let args = cli::Cli::parse();
    match run::run(&args) {
        Ok(outcome) => ExitCode::from(outcome.code()),
        Err(err) => {
            eprintln!("error: {err}");
            if let Some(hint) = err.hint() {
                eprintln!("\nhint: {hint}");
            }
            ExitCode::from(err.code())
        }
    }
}
