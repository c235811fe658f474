//! `salvage recover`: the library's recovery, with progress and a one-screen summary.

use recovery::recover::{RecoverOptions, Recovered};
use recovery::recover_report::LossReport;
use recovery::{Error, Outcome};

use crate::cli::RecoverArgs;
use crate::progress::Progress;

/// Runs `salvage recover`.
pub fn run(args: &RecoverArgs) -> Result<Outcome, Error> {
    let options = RecoverOptions {
        src: args.src.clone(),
        dest: args.dest.clone(),
        report: args.report.clone(),
        allow_partial: args.allow_partial,
        no_partial_rows: args.no_partial_rows,
        no_wal: args.no_wal,
        wal: args.wal.clone(),
        no_journal: args.no_journal,
        journal: args.journal.clone(),
        profile: args.profile.clone(),
    };
    let done = recovery::recover::run(&options, &Progress::from_env())?;
    summary(&done, &args.src);
    if let Outcome::NotVerified { source_changed } = done.outcome {
        return Err(Error::Database(format!(
            "the output failed verification{}; it is kept at `{}`, not committed",
            if source_changed {
                " and the source changed during the run"
            } else {
                ""
            },
            done.incomplete.display()
        )));
    }
    Ok(done.outcome)
}

/// The one-screen summary on stderr.
fn summary(done: &Recovered, src: &std::path::Path) {
    let r: &LossReport = &done.report;
    eprintln!("salvage recover: `{}`", src.display());
    eprintln!(
        "  {:<28} {:>10} {:>10} {:>9} {:>12} {:>9}",
        "table", "rows", "orphans", "damaged", "placeholders", "status"
    );
    for t in &r.tables {
        eprintln!(
            "  {:<28} {:>10} {:>10} {:>9} {:>12} {:>9}",
            crate::inspect::ellipsize(&t.name, 28),
            t.rows_written,
            t.rows_from_orphans,
            t.rows_damaged,
            t.placeholders,
            t.status
        );
    }
    if r.lost_and_found.rows > 0 {
        eprintln!(
            "  {:<28} {:>10}",
            r.lost_and_found
                .table
                .as_deref()
                .unwrap_or("lost_and_found"),
            r.lost_and_found.rows
        );
    }
    let verdict = if r.flags.complete {
        "complete: no loss detected, output verified"
    } else if r.flags.loss_detected {
        "LOSS DETECTED: the recovery is partial"
    } else {
        "not verified"
    };
    eprintln!("\n  {verdict}");
    for w in r.evidence.loss.iter().take(8) {
        eprintln!("  - {w}");
    }
    if r.evidence.loss.len() > 8 {
        eprintln!("  - … {} more in the report", r.evidence.loss.len() - 8);
    }
    if r.output.committed {
        eprintln!("\n  output: `{}`", done.dest.display());
    } else {
        eprintln!(
            "\n  output NOT committed: kept as `{}`",
            done.incomplete.display()
        );
        if r.flags.loss_detected {
            eprintln!("  hint: rerun with --allow-partial to accept a partial recovery (remove the .incomplete file first)");
        }
    }
    eprintln!("  report: `{}`", done.report_path.display());
}
