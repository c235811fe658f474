//! `salvage recover`: the library's recovery, with progress and a one-screen summary.

use recovery::{Log, Outcome, RecoverOptions, Recovery};

use crate::cli::RecoverArgs;
use crate::run::{Error, Exit};

/// The library's options from the command line.
fn options(args: &RecoverArgs) -> RecoverOptions {
    let log = |off: bool, named: &Option<std::path::PathBuf>| match (off, named) {
        (true, _) => Log::Off,
        (false, Some(p)) => Log::Named(p.clone()),
        (false, None) => Log::Beside,
    };
    RecoverOptions {
        src: args.src.clone(),
        dest: args.dest.clone(),
        report: args.report.clone(),
        allow_partial: args.allow_partial,
        partial_rows: !args.no_partial_rows,
        placeholders: !args.no_placeholders,
        wal: log(args.no_wal, &args.wal),
        journal: log(args.no_journal, &args.journal),
        profile: args.profile.clone(),
        carve: args.carve,
        history: args.history,
        provenance: args.provenance,
        as_of: args.as_of,
        case: args.case.clone(),
        examiner: args.examiner.clone(),
        command_line: std::env::args_os()
            .map(|a| a.to_string_lossy().into_owned())
            .collect(),
        archive_member: None,
    }
}

/// Exit code of a run stopped by SIGINT or SIGTERM (128 + SIGINT, as shells report it).
const STOPPED: i32 = 130;

/// On SIGINT or SIGTERM: one line saying what is left and how to go on, then exit. Nothing
/// is committed before the very end, the source is only read, and the partial output is
/// `DEST.incomplete`, which a rerun refuses until it is removed.
fn stop_cleanly_on_signals(args: &RecoverArgs) {
    let mut incomplete = args.dest.clone().into_os_string();
    incomplete.push(".incomplete");
    let incomplete = std::path::PathBuf::from(incomplete);
    let _ = ctrlc::set_handler(move || {
        crate::progress::clear_for_exit();
        eprintln!(
            "salvage: stopped; the source is untouched and nothing is committed; the partial output, if it was begun, is `{}` (no report): remove it and run again",
            crate::shown(&incomplete)
        );
        std::process::exit(STOPPED);
    });
}

/// Runs `salvage recover`.
pub fn run(args: &RecoverArgs) -> Result<Exit, Error> {
    stop_cleanly_on_signals(args);
    let done = recovery::recover(
        &options(args),
        crate::progress::observer(args.quiet).as_ref(),
    )?;
    summary(&done, &args.src);
    Ok(match done.verified()?.outcome {
        Outcome::Complete => Exit::Clean,
        Outcome::PartialCommitted => Exit::Damaged,
        Outcome::Withheld | Outcome::NotVerified { .. } => Exit::Withheld,
    })
}

/// Runs `salvage commit`: the library commits the withheld output, then the summary.
pub fn commit(args: &crate::cli::CommitArgs) -> Result<Exit, Error> {
    let options = recovery::AcceptOptions {
        incomplete: args.incomplete.clone(),
        report: args.report.clone(),
        command_line: std::env::args_os()
            .map(|a| a.to_string_lossy().into_owned())
            .collect(),
    };
    let done = recovery::accept_by(&options, args.examiner.as_deref())?;
    eprintln!(
        "salvage commit: `{}` is committed as `{}`, its loss accepted",
        crate::shown(&args.incomplete),
        crate::shown(&done.paths.dest)
    );
    summary(&done, std::path::Path::new(&done.report.run.source_path));
    Ok(match done.outcome {
        Outcome::Complete => Exit::Clean,
        _ => Exit::Damaged,
    })
}

/// The one-screen summary on stderr.
fn summary(done: &Recovery, src: &std::path::Path) {
    let r = &done.report;
    eprintln!("salvage recover: `{}`", crate::shown(src));
    for a in &r.applications {
        eprintln!("  {}", crate::report::application_line(a));
    }
    eprint!("{}", crate::report::table_text(r));
    let wrap = |text: &str, first: &str| crate::inspect::wrap(text, first, "    ", 80);
    let verdict = if r.flags.complete {
        "complete: no loss detected, output verified"
    } else if r.flags.loss_detected {
        "LOSS DETECTED: the recovery is partial"
    } else {
        "not verified"
    };
    eprintln!("\n  {verdict}");
    for w in r.evidence.loss.iter().take(8) {
        eprintln!("{}", wrap(w, "  - "));
    }
    if r.evidence.loss.len() > 8 {
        eprintln!("  - … {} more in the report", r.evidence.loss.len() - 8);
    }
    // Not loss, but a person reading the output should know before a join surprises them.
    for d in crate::report::dangling_sentences(r) {
        eprintln!("{}", wrap(&format!("note: {d}"), "  "));
    }
    for c in &r.source.sqlite_check.failing_checks {
        eprintln!("{}", wrap(&format!("note: {c}; recovered as read"), "  "));
    }
    if r.output.committed {
        eprintln!("\n  output: `{}`", crate::shown(&done.paths.dest));
    } else {
        eprintln!(
            "\n  output NOT committed: kept as `{}`",
            crate::shown(&done.paths.incomplete)
        );
        if r.flags.loss_detected && r.flags.verified && r.source.unchanged {
            eprintln!(
                "{}",
                wrap(
                    &format!(
                        "hint: read what was lost (`salvage report {}`); to accept it, `{}`",
                        crate::shown(&done.paths.report),
                        crate::report::commit_command(r)
                    ),
                    "  "
                )
            );
        }
    }
    eprintln!("  report: `{}`", crate::shown(&done.paths.report));
}
