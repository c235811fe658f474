//! Committing a run: the loss report built, the output linked into place only when it is
//! verified, the source unchanged, and either nothing was lost or partial output is
//! allowed; the report written beside it, never over a file.

use std::path::Path;

use super::{Outcome, Recovery};
use crate::base::error::Error;
use crate::recover::evidence::logs::{journal_outcome, wal_outcome};
use crate::recover::evidence::{After, Before, Changed, Evidence};
use crate::recover::finish::report::{build, LossReportParts};
use crate::recover::load::Found;
use crate::recover::plan::Work;
use crate::recover::rebuild::Rebuilt;
use crate::recover::request::Request;
use crate::report::{LogHashes, LossReport, OutputLocation, OutputState, RunPaths, SourceProof};

/// What proves the evidence unchanged, and the output's hash: the evidence's hashes
/// before and after the run, the files the file system says changed meanwhile, and the
/// output's SHA-256 as verified (none when it could not be read).
pub struct Proof {
    /// The evidence's hashes before the run.
    pub before: Before,
    /// Its hashes after.
    pub after: After,
    /// Evidence files known to have changed during the run, whatever their hashes say.
    pub changed: Vec<Changed>,
    /// The output's SHA-256.
    pub output_sha256: Option<String>,
    /// What SQLite's own integrity check says of the source as read.
    pub sqlite_check: crate::report::SqliteCheck,
}

/// Builds the loss report, commits or withholds the output, writes the report.
pub fn commit(
    evidence: &Evidence<'_>,
    request: &Request,
    rebuilt: Rebuilt,
    verified: bool,
    proof: Proof,
) -> Result<Recovery, Error> {
    let paths = &request.paths;
    let Proof {
        before,
        after,
        changed,
        output_sha256,
        sqlite_check,
    } = proof;
    // A file cut short or written under its map changed, even when both hashes read it
    // after the change.
    let unchanged = before.unchanged(&after) && changed.is_empty();
    let source = SourceProof {
        size: evidence.db.bytes().len() as u64,
        sha256_before: before.main.sha256.clone(),
        blake3_before: before.main.blake3.clone(),
        blake3_after: after.main.clone(),
        unchanged,
        changed_under_the_run: changed.iter().map(|c| c.role.to_string()).collect(),
        sqlite_check,
    };
    let mut report = report_of(
        evidence,
        paths,
        rebuilt,
        verified,
        (&before, &after),
        source,
    );
    // How a file changed, where its hashes could not tell.
    report.warnings.extend(changed.iter().map(|c| {
        format!(
            "{} changed under the run: {}; the output is not committed (run again on a copy that nothing writes to)",
            c.named, c.how
        )
    }));
    report.run = run_paths(request);
    let loss = report.flags.loss_detected;
    let commit = verified && unchanged && (!loss || request.allow_partial);
    report.output = OutputState {
        committed: commit,
        location: if commit {
            OutputLocation::Dest
        } else {
            OutputLocation::Incomplete
        },
        // Of the file as verified: what is linked to DEST is this file.
        sha256: output_sha256,
        accepted: None,
    };
    // The report is written whole (and synced) beside its path first; then the output and
    // the report are put in place together, or neither is.
    let report_incomplete = crate::base::paths::with_suffix(&paths.report, ".incomplete");
    write_report(&report_incomplete, &report)?;
    let placed = place(paths, &report_incomplete, commit);
    if placed.is_err() {
        let _ = std::fs::remove_file(&report_incomplete);
    }
    placed?;
    let outcome = if !verified || !unchanged {
        Outcome::NotVerified {
            source_changed: !unchanged,
            output_verified: verified,
        }
    } else {
        match (loss, commit) {
            (false, _) => Outcome::Complete,
            (true, true) => Outcome::PartialCommitted,
            (true, false) => Outcome::Withheld,
        }
    };
    Ok(Recovery {
        report,
        outcome,
        paths: paths.clone(),
    })
}

/// The loss report of the rebuilt output, the output closed first (it is linked into
/// place after); the logs' outcomes with their hashes.
fn report_of(
    evidence: &Evidence<'_>,
    paths: &crate::recover::request::Paths,
    rebuilt: Rebuilt,
    verified: bool,
    (before, after): (&Before, &After),
    source: SourceProof,
) -> LossReport {
    let Rebuilt {
        work,
        found,
        partial_registry,
        placeholders,
        profiles,
    } = rebuilt;
    let Work {
        out,
        tables,
        ledger,
        ..
    } = work;
    let Found {
        survey,
        lost_and_found,
        unattributed,
        candidates,
        index_groups,
    } = found;
    let stand_ins = crate::base::sqlite::stand_ins(&out.conn);
    // The output is closed before it is linked into place.
    drop(out);
    let wal = wal_outcome(
        paths,
        &evidence.wal,
        &evidence.db,
        LogHashes::of(before.wal.as_ref(), after.wal.as_ref()),
    );
    let journal = journal_outcome(
        paths,
        &evidence.journal,
        evidence.usable_wal(),
        &evidence.db,
        LogHashes::of(before.journal.as_ref(), after.journal.as_ref()),
    );
    build(LossReportParts {
        db: &evidence.db,
        survey: &survey,
        schema_rows: (survey.schema.rows.len(), evidence.schema_rows_scanned),
        tables: &tables,
        ledger: &ledger,
        lost_and_found: &lost_and_found,
        unattributed: &unattributed,
        candidates: &candidates,
        index_groups,
        partial_registry: partial_registry.as_deref(),
        placeholders: &placeholders,
        profiles: &profiles,
        wal,
        journal,
        stand_ins: &stand_ins,
        verified,
        source,
    })
}

/// The run's record: when, by whom, how, and every path, absolute as a case file needs
/// them (a path that cannot be made so stays as given).
fn run_paths(request: &Request) -> RunPaths {
    let (paths, about) = (&request.paths, &request.about);
    let shown = |p: &Path| {
        std::path::absolute(p)
            .unwrap_or_else(|_| p.to_path_buf())
            .display()
            .to_string()
    };
    RunPaths {
        started_utc: crate::base::files::utc(about.started),
        finished_utc: crate::base::files::utc(std::time::SystemTime::now()),
        command_line: about.command_line.clone(),
        case: about.case.clone(),
        examiner: about.examiner.clone(),
        build: crate::report::Tool::build(),
        source_path: shown(&paths.src),
        source_link: paths.src_link.as_deref().map(shown),
        dest_path: shown(&paths.dest),
        report_path: shown(&paths.report),
        wal_path: paths.wal.as_deref().map(shown),
        journal_path: paths.journal.as_deref().map(shown),
        repair: None,
        archive_member: about.archive_member.clone(),
    }
}

/// Puts the report written at `report_incomplete` in place, and the output too when it is
/// committed: each linked to its path (a hard link fails if the path appeared meanwhile:
/// never overwrite), synced, and only then are the `.incomplete` names removed. When the
/// report cannot be placed, the output's link is taken back: both or neither.
fn place(
    paths: &crate::recover::request::Paths,
    report_incomplete: &Path,
    commit: bool,
) -> Result<(), Error> {
    if commit {
        std::fs::File::open(&paths.incomplete)
            .and_then(|f| f.sync_all())
            .map_err(Error::Output)?;
        std::fs::hard_link(&paths.incomplete, &paths.dest).map_err(Error::Output)?;
    }
    if let Err(e) = std::fs::hard_link(report_incomplete, &paths.report) {
        if commit {
            let _ = std::fs::remove_file(&paths.dest);
        }
        return Err(Error::Output(e));
    }
    if commit {
        std::fs::remove_file(&paths.incomplete).map_err(Error::Output)?;
    }
    std::fs::remove_file(report_incomplete).map_err(Error::Output)?;
    for file in [&paths.dest, &paths.report] {
        let folder = crate::base::paths::folder_of(file);
        let _ = std::fs::File::open(folder).and_then(|f| f.sync_all());
    }
    Ok(())
}

/// Writes the report whole and syncs it; `create_new`: it never overwrites a file. A
/// report that cannot be written whole (a full disk) is removed: a report is complete or
/// absent, never a stub that blocks the next run.
pub(crate) fn write_report(path: &Path, report: &LossReport) -> Result<(), Error> {
    use std::io::Write;
    let mut text = serde_json::to_string_pretty(report).map_err(|e| Error::Output(e.into()))?;
    text.push('\n');
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(Error::Output)?;
    let written = f.write_all(text.as_bytes()).and_then(|()| f.sync_all());
    if let Err(e) = written {
        drop(f);
        let _ = std::fs::remove_file(path);
        return Err(Error::Output(e));
    }
    Ok(())
}
