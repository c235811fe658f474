//! `salvage`: forensic SQLite salvage. See `docs/cli.md` for the command reference.
#![deny(unsafe_code)]

use std::process::ExitCode;

use clap::Parser;

mod backup;
mod bundle;
mod case;
mod cli;
mod demo;
mod export;
mod html;
mod inspect;
mod profiles;
mod progress;
mod recover;
mod repair;
mod report;
mod run;
mod run_record;
mod scan;
mod scan_case;
mod scan_html;

pub(crate) use recovery::shown;

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
