//! `salvage repair`: the library's repair (`recovery::repair`), printed for a person.

use recovery::bundle::Provenance;
use recovery::repair::{Action, RepairOptions, Repaired};

use crate::cli::RepairArgs;
use crate::run::{Error, Exit};

/// Runs `salvage repair`.
pub fn run(args: &RepairArgs) -> Result<Exit, Error> {
    let options = RepairOptions {
        db: args.db.clone(),
        archive: args.archive.clone(),
        allow_partial: args.allow_partial,
        placeholders: args.placeholders,
        action: if args.resume {
            Action::Resume
        } else if args.rollback {
            Action::Rollback
        } else if args.abandon {
            Action::Abandon
        } else {
            Action::Start
        },
        provenance: Provenance {
            command: std::env::args().collect(),
            ..Provenance::default()
        },
    };
    let done = recovery::repair::repair(&options, crate::progress::observer(args.quiet).as_ref())?;
    let db = match done.db.link() {
        Some(link) => format!(
            "`{}` (a link to `{}`)",
            crate::shown(link),
            crate::shown(&done.db.file)
        ),
        None => format!("`{}`", crate::shown(&args.db)),
    };
    let again = crate::shown(&args.db);
    Ok(match done.outcome {
        Repaired::Healthy => {
            eprintln!("salvage repair: {db} is healthy (SQLite's integrity check ok on the database as SQLite opens it, its log included; every page as the format says): nothing to repair, nothing moved");
            Exit::Clean
        }
        Repaired::Replaced {
            partial,
            archive,
            manifest_sha256,
            report,
        } => {
            eprintln!(
                "salvage repair: {db} {}\n  the original and its sidecars: `{}` (check it: salvage verify {})",
                if partial {
                    "is replaced by a recovery WITH LOSS (allowed by --allow-partial)"
                } else {
                    "is replaced by a complete recovery"
                },
                crate::shown(&archive),
                crate::shown(&archive),
            );
            if let Some(sha) = manifest_sha256 {
                eprintln!("  the archive's manifest: SHA-256 {sha} (record it in the case notes)");
            }
            eprintln!("  report: `{}`", crate::shown(&report));
            if partial {
                Exit::Damaged
            } else {
                Exit::Clean
            }
        }
        Repaired::Withheld { shadow, report } => {
            eprintln!(
                "salvage repair: LOSS DETECTED; {db} is untouched\n  the recovery: `{}`\n  report: `{}`\n  hint: `salvage repair {again} --resume --allow-partial` puts it in place; `salvage repair {again} --rollback` ends the repair",
                crate::shown(&shadow),
                crate::shown(&report)
            );
            Exit::Withheld
        }
        Repaired::RolledBack { steps } => {
            eprintln!("salvage repair: the original is back at {db}");
            for s in steps {
                eprintln!("  {s}");
            }
            Exit::Clean
        }
        Repaired::Abandoned { steps } => {
            eprintln!("salvage repair: the repair of {db} is ended; the database is as the application left it");
            for s in steps {
                eprintln!("  {s}");
            }
            Exit::Clean
        }
    })
}
