//! Recovers a damaged database in-process and prints what was lost, signal by signal.
//!
//! ```sh
//! cargo run -p recovery --example recover -- damaged.db recovered.db
//! ```
//!
//! The output is committed even when rows were lost (`allow_partial`); the loss report is
//! written beside it as `recovered.db.report.json`.

use std::process::ExitCode;

use recovery::{LossSignal, Observer, Outcome, RecoverOptions, Stage};

/// Prints each stage on stderr.
struct Stages;

impl Observer for Stages {
    fn stage(&self, stage: Stage<'_>) {
        eprintln!("… {stage}");
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [src, dest] = args.as_slice() else {
        eprintln!("usage: recover DAMAGED.db RECOVERED.db");
        return ExitCode::from(2);
    };
    let mut options = RecoverOptions::new(src, dest);
    options.allow_partial = true;
    let recovery = match recovery::recover(&options, &Stages) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(if e.is_refusal() { 2 } else { 1 });
        }
    };
    for table in &recovery.report.tables {
        println!(
            "{:<24} {:>10} {:>8} rows written",
            table.name, table.status, table.rows_written
        );
    }
    for signal in recovery.signals() {
        // Signals are typed: a program acts on them, a person reads them.
        if let LossSignal::RowsLost {
            table,
            lower,
            upper,
            ..
        } = signal
        {
            println!("{table}: between {lower} and {upper:?} rows lost");
        }
        println!("loss: {signal}");
    }
    match recovery.outcome {
        Outcome::Complete => ExitCode::SUCCESS,
        Outcome::PartialCommitted | Outcome::Withheld => ExitCode::from(3),
        Outcome::NotVerified { .. } => ExitCode::FAILURE,
    }
}
