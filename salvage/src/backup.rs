//! `salvage backup` and `salvage restore`: made and checked by the library
//! (`recovery::backup`), printed for a person.

use recovery::backup::{self, BackupOptions, Plan};
use recovery::bundle::{JournalMode, ManifestFile, Provenance};

use crate::cli::{BackupArgs, RestoreArgs};
use crate::run::{print_stdout, Error, Exit};

/// Runs `salvage backup`.
pub fn backup(args: &BackupArgs) -> Result<Exit, Error> {
    let options = BackupOptions {
        src: args.src.clone(),
        to: args.to.clone(),
        keep: args.keep.and_then(|n| usize::try_from(n).ok()),
        who: Provenance {
            command: std::env::args().collect(),
            ..Provenance::default()
        },
    };
    let plan = Plan::check(&options)?;
    // Named before the run, so that a run that then fails has said it too.
    for stale in &plan.stale {
        eprintln!(
            "warning: `{}` is left from an earlier run that did not finish: it is not a backup, and salvage never reuses or removes it; inspect it, or remove it yourself",
            crate::shown(stale)
        );
    }
    let made = plan.run()?;
    let mut text = format!(
        "backed up `{}` into `{}`\n",
        crate::shown(&args.src),
        crate::shown(&made.path)
    );
    for f in &made.manifest.files {
        text.push_str(&file_line(f));
    }
    for skipped in &made.skipped {
        text.push_str(&format!(
            "  skipped  {skipped} (a sidecar: its committed content is in its database's copy)\n"
        ));
    }
    for pruned in &made.pruned {
        text.push_str(&format!(
            "removed the older backup `{}`\n",
            crate::shown(pruned)
        ));
    }
    text.push_str(&crate::bundle::manifest_lines(&made.path)?);
    text.push_str(&format!(
        "next: salvage verify {0}; salvage restore {0} TARGET\n",
        crate::shown(&made.path)
    ));
    print_stdout(&text)?;
    Ok(Exit::Clean)
}

/// One line of a backup's file: role, size, hash, path, and a database's tables and rows.
fn file_line(f: &ManifestFile) -> String {
    let plural = |n: u64, what: &str| format!("{n} {what}{}", if n == 1 { "" } else { "s" });
    let counted = f.rows.as_ref().map_or(String::new(), |rows| {
        // `sqlite_schema` counts schema rows, not a table's.
        let tables = rows.keys().filter(|t| t.as_str() != "sqlite_schema");
        let total: u64 = tables.clone().filter_map(|t| rows.get(t)).sum();
        format!(
            "  ({}, {})",
            plural(tables.count() as u64, "table"),
            plural(total, "row")
        )
    });
    let mode = match f.journal_mode {
        Some(JournalMode::Wal) => {
            "  (a WAL database, kept in rollback-journal mode; restored in WAL mode)"
        }
        None => "",
    };
    format!(
        "  {:<8} {:>14} bytes  sha256 {}  {}{counted}{mode}\n",
        f.role, f.size, f.sha256, f.path
    )
}

/// Runs `salvage restore`.
pub fn restore(args: &RestoreArgs) -> Result<Exit, Error> {
    let done = backup::restore(&args.backup, &args.target)?;
    let mut text = format!(
        "restored `{}` to `{}`\n",
        crate::shown(&args.backup),
        crate::shown(&done.target)
    );
    for (from, to) in &done.moved {
        text.push_str(&format!(
            "  moved aside `{}` to `{}`\n",
            crate::shown(from),
            crate::shown(to)
        ));
    }
    text.push_str(&format!(
        "verified: {} files as the manifest says, every database passes quick_check\n",
        done.manifest.files.len()
    ));
    if let Some(aside) = &done.aside {
        text.push_str(&format!(
            "the previous `{}` is kept at `{}`; remove it once the restored copy serves\n",
            crate::shown(&done.target),
            crate::shown(aside)
        ));
    }
    print_stdout(&text)?;
    Ok(Exit::Clean)
}
