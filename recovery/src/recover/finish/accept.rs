//! Accepting a withheld recovery without running it again: the output a run kept as
//! `DEST.incomplete`, because it recorded loss, is committed once a person accepts that
//! loss, after the file is shown to be the very file the run verified (its SHA-256 against
//! the report's) and SQLite's integrity check passes on it again. The report is rewritten
//! to say so, and who accepted it when; the output and the report are put in place
//! together, or neither is.

use std::path::{Path, PathBuf};

use super::{Outcome, Recovery};
use crate::base::error::Error;
use crate::base::paths::{folder_of, with_suffix};
use crate::recover::request::{refused, Paths};
use crate::report::{Accepted, LossReport, OutputLocation};

/// What a caller asks to commit.
#[derive(Clone, Debug, Default)]
pub struct AcceptOptions {
    /// The withheld output, `DEST.incomplete`.
    pub incomplete: PathBuf,
    /// Its run's loss report (default: `DEST.report.json`).
    pub report: Option<PathBuf>,
    /// The command line, recorded in the report.
    pub command_line: Vec<String>,
}

/// Commits a withheld output, accepting the loss its report records.
pub fn accept(options: &AcceptOptions) -> Result<Recovery, Error> {
    accept_by(options, None)
}

/// [`accept`], recording who accepted the loss (`salvage commit --examiner`) in the
/// report's `output.accepted`, beside when and by what command.
pub fn accept_by(options: &AcceptOptions, examiner: Option<&str>) -> Result<Recovery, Error> {
    let incomplete = options.incomplete.clone();
    let dest = incomplete
        .to_str()
        .and_then(|s| s.strip_suffix(".incomplete"))
        .filter(|d| !d.is_empty() && !d.ends_with('/'))
        .map(PathBuf::from)
        .ok_or_else(|| {
            refused(
                format!(
                    "`{}` is not a withheld output (DEST.incomplete)",
                    incomplete.display()
                ),
                "pass the DEST.incomplete file `salvage recover` kept, as its summary names it",
            )
        })?;
    let report_path = options
        .report
        .clone()
        .unwrap_or_else(|| with_suffix(&dest, ".report.json"));
    crate::base::paths::check_regular_file(&incomplete)?;
    // The file itself, not a link to one: DEST becomes this very inode.
    let pinned = std::fs::symlink_metadata(&incomplete).map_err(|source| Error::Source {
        path: incomplete.clone(),
        source,
    })?;
    if !pinned.file_type().is_file() {
        return Err(refused(
            format!(
                "`{}` is a symbolic link, not the output file",
                incomplete.display()
            ),
            "pass the DEST.incomplete file itself",
        ));
    }
    if std::fs::symlink_metadata(&dest).is_ok() {
        return Err(refused(
            format!("`{}` exists; it is never overwritten", dest.display()),
            "move it aside first, or keep using the .incomplete file where it is",
        ));
    }
    let report_incomplete = with_suffix(&report_path, ".incomplete");
    if std::fs::symlink_metadata(&report_incomplete).is_ok() {
        return Err(refused(
            format!(
                "`{}` is left from a commit that did not finish",
                report_incomplete.display()
            ),
            "look at it, then move it away and commit again",
        ));
    }
    let mut report = read_report(&report_path)?;
    check_report(&report, &dest, &report_path)?;
    let sha256 = crate::recover::evidence::sha256_file(&incomplete)?;
    if report.output.sha256.as_deref() != Some(sha256.as_str()) {
        return Err(refused(
            format!(
                "`{}` is not the file its run verified: its SHA-256 differs from the report's",
                incomplete.display()
            ),
            "run the recovery again; a changed output must not be committed",
        ));
    }
    recheck(&incomplete, &report)?;
    // Unchanged since it was hashed: the same inode, size and modification time.
    if !same_file(&pinned, &incomplete) {
        return Err(refused(
            format!("`{}` changed while it was checked", incomplete.display()),
            "run the commit again once nothing writes to it",
        ));
    }
    report.output.committed = true;
    report.output.location = OutputLocation::Dest;
    report.output.accepted = Some(Accepted {
        utc: crate::base::files::utc(std::time::SystemTime::now()),
        command_line: options.command_line.clone(),
        examiner: examiner.map(str::to_string),
    });
    let paths = Paths {
        src: PathBuf::from(&report.run.source_path),
        src_link: report.run.source_link.as_ref().map(PathBuf::from),
        wal: report.run.wal_path.as_ref().map(PathBuf::from),
        journal: report.run.journal_path.as_ref().map(PathBuf::from),
        wal_off: false,
        journal_off: false,
        beside: [None, None],
        dest,
        incomplete,
        report: report_path,
    };
    place(&paths, &report, &pinned)?;
    let outcome = if report.flags.loss_detected {
        Outcome::PartialCommitted
    } else {
        Outcome::Complete
    };
    Ok(Recovery {
        outcome,
        report,
        paths,
    })
}

/// The loss report at `path`.
fn read_report(path: &Path) -> Result<LossReport, Error> {
    let bytes = std::fs::read(path).map_err(|e| {
        refused(
            format!("cannot read the loss report `{}`: {e}", path.display()),
            "name the run's report with --report",
        )
    })?;
    serde_json::from_slice(&bytes).map_err(|e| {
        refused(
            format!(
                "`{}` is not a loss report of `salvage recover`: {e}",
                path.display()
            ),
            "name the run's report with --report",
        )
    })
}

/// Refuses a report that is not of a withheld, verified output at `dest`.
fn check_report(report: &LossReport, dest: &Path, path: &Path) -> Result<(), Error> {
    let same = |a: &Path, b: &Path| {
        std::path::absolute(a)
            .ok()
            .is_some_and(|a| std::path::absolute(b).ok() == Some(a))
    };
    if !same(Path::new(&report.run.dest_path), dest) {
        return Err(refused(
            format!(
                "the report `{}` is of a run whose output is `{}`, not `{}`",
                path.display(),
                report.run.dest_path,
                dest.display()
            ),
            "name this output's report with --report",
        ));
    }
    if report.output.committed || report.output.location != OutputLocation::Incomplete {
        return Err(refused(
            format!(
                "the report `{}` says its output was not withheld",
                path.display()
            ),
            "there is nothing to commit",
        ));
    }
    if !report.flags.verified || !report.source.unchanged {
        return Err(refused(
            format!(
                "the run of `{}` {}: its output must not be used",
                path.display(),
                if report.source.unchanged {
                    "did not verify its output"
                } else {
                    "saw its source change"
                }
            ),
            "keep the files for inspection and run the recovery again",
        ));
    }
    Ok(())
}

/// The output checked again: SQLite's integrity check passes, and every table holds the
/// rows the report says. Opened read-only as an immutable file (no lock, no file beside it).
fn recheck(path: &Path, report: &LossReport) -> Result<(), Error> {
    let failed =
        |why: String| {
            refused(
            format!("`{}` fails the check before its commit: {why}", path.display()),
            "run the recovery again; an output that changed or is damaged must not be committed",
        )
        };
    let conn = rusqlite::Connection::open_with_flags(
        crate::base::sqlite::uri(path, "immutable=1"),
        crate::base::sqlite::read_only(),
    )
    .map_err(|e| failed(format!("SQLite cannot open it: {e}")))?;
    crate::base::sqlite::register_stand_ins(&conn).map_err(|e| failed(e.to_string()))?;
    // Text an older SQLite left in a numeric column is the file's, kept (see `verify`);
    // so is the index of a full-text table over a stand-in tokenizer.
    let mut answer = crate::base::sqlite::sqlite_check(&conn, "PRAGMA integrity_check")
        .map_err(|e| failed(e.to_string()))?;
    answer.leave_out_full_text(&crate::base::sqlite::stand_in_full_text(&conn));
    if let Some(fault) = answer.faults.first() {
        return Err(failed(fault.clone()));
    }
    for t in &report.tables {
        let Some(claimed) = t.rows_in_output else {
            continue;
        };
        let held: i64 = conn
            .query_row(
                &format!(
                    "SELECT count(*) FROM {}",
                    crate::base::output::quote(&t.name)
                ),
                [],
                |r| r.get(0),
            )
            .map_err(|e| failed(format!("`{}` cannot be counted: {e}", t.name)))?;
        if u64::try_from(held).ok() != Some(claimed) {
            return Err(failed(format!(
                "`{}` holds {held} rows, the report says {claimed}",
                t.name
            )));
        }
    }
    Ok(())
}

/// Whether `path` is still the file `pinned` describes: same device, inode, size and
/// modification time.
fn same_file(pinned: &std::fs::Metadata, path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::symlink_metadata(path).is_ok_and(|m| {
        m.dev() == pinned.dev()
            && m.ino() == pinned.ino()
            && m.len() == pinned.len()
            && m.mtime() == pinned.mtime()
            && m.mtime_nsec() == pinned.mtime_nsec()
    })
}

/// The report rewritten beside its path, then the output linked to DEST (never over a
/// file) and DEST's folder synced, the report moved over the old one, and the
/// `.incomplete` name removed; when the report cannot be put in place, or DEST is not the
/// file that was checked, the output's link is taken back.
fn place(paths: &Paths, report: &LossReport, pinned: &std::fs::Metadata) -> Result<(), Error> {
    let report_incomplete = with_suffix(&paths.report, ".incomplete");
    super::commit::write_report(&report_incomplete, report)?;
    std::fs::File::open(&paths.incomplete)
        .and_then(|f| f.sync_all())
        .and_then(|()| std::fs::hard_link(&paths.incomplete, &paths.dest))
        .and_then(|()| std::fs::File::open(folder_of(&paths.dest))?.sync_all())
        .map_err(|e| {
            let _ = std::fs::remove_file(&report_incomplete);
            Error::Output(e)
        })?;
    if !same_file(pinned, &paths.dest) {
        let _ = std::fs::remove_file(&paths.dest);
        let _ = std::fs::remove_file(&report_incomplete);
        return Err(refused(
            format!(
                "`{}` changed while it was committed",
                paths.incomplete.display()
            ),
            "run the commit again once nothing writes to it",
        ));
    }
    if let Err(e) = std::fs::rename(&report_incomplete, &paths.report) {
        let _ = std::fs::remove_file(&paths.dest);
        let _ = std::fs::remove_file(&report_incomplete);
        return Err(Error::Output(e));
    }
    std::fs::remove_file(&paths.incomplete).map_err(Error::Output)?;
    for file in [&paths.dest, &paths.report] {
        let _ = std::fs::File::open(folder_of(file)).and_then(|f| f.sync_all());
    }
    Ok(())
}
