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
        action: if args.resume {
            Action::Resume
        } else if args.rollback {
            Action::Rollback
        } else {
            Action::Start
        },
        provenance: Provenance {
            command: std::env::args().collect(),
            ..Provenance::default()
        },
    };
    let db = args.db.display();
    let done = recovery::repair::repair(&options, crate::progress::observer(args.quiet).as_ref())?;
    Ok(match done {
        Repaired::Healthy => {
            eprintln!("salvage repair: `{db}` is healthy (every page as the format says, SQLite's integrity check ok): nothing to repair, nothing moved");
            Exit::Clean
        }
        Repaired::Replaced {
            partial,
            archive,
            report,
        } => {
            eprintln!(
                "salvage repair: `{db}` {}\n  the original and its sidecars: `{}` (check it: salvage verify {})\n  report: `{}`",
                if partial {
                    "is replaced by a recovery WITH LOSS (allowed by --allow-partial)"
                } else {
                    "is replaced by a complete recovery"
                },
                archive.display(),
                archive.display(),
                report.display()
            );
            if partial {
                Exit::Damaged
            } else {
                Exit::Clean
            }
        }
        Repaired::Withheld { shadow, report } => {
            eprintln!(
                "salvage repair: LOSS DETECTED; `{db}` is untouched\n  the recovery: `{}`\n  report: `{}`\n  hint: `salvage repair {db} --resume --allow-partial` puts it in place; `salvage repair {db} --rollback` ends the repair",
                shadow.display(),
                report.display()
            );
            Exit::Withheld
        }
        Repaired::RolledBack { steps } => {
            eprintln!("salvage repair: the original is back at `{db}`");
            for s in steps {
                eprintln!("  {s}");
            }
            Exit::Clean
        }
    })
}
