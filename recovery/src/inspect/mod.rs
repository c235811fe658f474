//! Read-only forensic inspection: the `inspect` document (`docs/inspect.md`) of a file.

use std::path::Path;

use pager::Database;

use crate::base::error::Error;
use crate::recover::evidence::{sha256_file, EnteredFolios, Residency, Source, RESIDENT_LIMIT};
use crate::report::inspect::{self as report, InspectReport, RunInfo, SourceInfo};

mod build;

/// Inspects the database file at `path` (mapped read-only; nothing is written beside it),
/// with the SHA-256 of the file when `sha256` is set.
pub fn inspect_file(path: &Path, sha256: bool) -> Result<InspectReport, Error> {
    inspect_file_with(path, sha256, false)
}

/// [`inspect_file`], with the audit (`audit`: what looks deliberate or abnormal, graded)
/// when asked.
pub fn inspect_file_with(path: &Path, sha256: bool, audit: bool) -> Result<InspectReport, Error> {
    // A bundle (`salvage quarantine`) is read through its database file.
    let path = &crate::recover::request::database_in(path).unwrap_or_else(|| path.to_path_buf());
    // The log and journal lie beside the file a link points to, where SQLite keeps them.
    let named = crate::base::dbpath::DatabasePath::resolve(path)?;
    let source = Source::open(&named.file)?;
    let mut report = inspect_audited(&source, sha256, audit)?;
    report.run.source_link = named.link().map(|l| l.display().to_string());
    Ok(report)
}

/// Inspects a mapped source.
pub fn inspect(source: &Source, sha256: bool) -> Result<InspectReport, Error> {
    inspect_audited(source, sha256, false)
}

/// [`inspect`], with the audit when `audit` is set: of the same survey, with the
/// write-ahead log beside the source when there is one.
pub fn inspect_audited(source: &Source, sha256: bool, audit: bool) -> Result<InspectReport, Error> {
    let bytes = pager::as_sqlite_reads(source.bytes());
    let db = Database::open(bytes).map_err(|why| Error::NotADatabase {
        path: source.path.clone(),
        why,
        looks_like: crate::base::error::looks_like(bytes),
    })?;
    // The map's pages are let go of as the survey moves on: resident memory stays flat
    // (every folio a page is read in counted as it is entered).
    // One thread: the survey reads each page once (a tree's by its walk, the others by
    // their content), as fast on the 2 GB stores as a second thread classifying every
    // page beside the walks was, with a core's less work.
    let folios = EnteredFolios::new(vec![source]);
    let entered = |image: &[u8]| folios.entered(image);
    let db = db.observed(&entered);
    let survey = pager::survey_with_schema(
        &db,
        pager::read_schema(&db),
        pager::SurveyChecks::All,
        &mut |_| {},
    );
    let sha256 = if sha256 {
        Some(sha256_file(&source.path)?)
    } else {
        None
    };
    let info = SourceInfo {
        size: source.bytes().len() as u64,
        sha256,
    };
    let run = RunInfo {
        source_path: source.path.display().to_string(),
        source_link: None,
        archive_member: None,
    };
    if source.shrank() {
        return Err(Error::Source {
            path: source.path.clone(),
            source: std::io::Error::other(
                "the file shrank while it was being read (another process, a failing disk or share): the pages past its new end read as zeros, so no report is given; inspect a copy that nothing changes",
            ),
        });
    }
    let mut report = build::build(&db, &survey, info, run);
    report.sidecars = sidecars(source)?;
    if audit {
        let wal = beside(&file_of(source), "-wal")?;
        // A log of gigabytes is read frame by frame, its pages let go of as it goes.
        let wal = wal
            .as_ref()
            .and_then(|s| Residency::new(vec![s], RESIDENT_LIMIT).read_wal(s).ok());
        let mut concerns = reconstruct::audit(&db, &survey, wal.as_ref());
        // SQLite's own check disagreeing with the file is a contradiction SQLite never
        // writes: index entries naming rows their table does not hold, counts that differ.
        let sqlite = reconstruct::sqlite_concerns(
            &report.sqlite_check.problems,
            &report.sqlite_check.failing_checks,
            &survey.schema,
        );
        concerns.splice(0..0, sqlite);
        report.audit = Some(concerns);
    }
    let mut summary = beside_summary(&report.sidecars);
    if pager::is_empty_database(bytes) {
        summary.insert_str(
            0,
            " The file is empty (0 bytes): SQLite opens it as an empty database.",
        );
    }
    if !summary.is_empty() {
        if !report.verdict.summary.ends_with('.') {
            report.verdict.summary.push('.');
        }
        report.verdict.summary.push_str(&summary);
    }
    Ok(report)
}

/// What the verdict says of the log and journal beside the file: those `recover` reads
/// (the file alone is then not the database), and those it refuses, whose page size the
/// database's disagrees with.
fn beside_summary(sidecars: &report::Sidecars) -> String {
    let wal = sidecars.wal.as_ref().filter(|w| w.frames_committed > 0);
    let journal = sidecars.journal.as_ref().filter(|j| j.hot);
    let read: Vec<&str> = [
        wal.filter(|w| w.usable)
            .map(|_| "a write-ahead log with committed frames"),
        journal
            .filter(|j| !j.refused)
            .map(|_| "a hot rollback journal (an interrupted transaction)"),
    ]
    .into_iter()
    .flatten()
    .collect();
    let refused: Vec<&str> = [
        wal.filter(|w| !w.usable && w.page_size.is_some())
            .map(|_| "a write-ahead log"),
        journal
            .filter(|j| j.refused)
            .map(|_| "a hot rollback journal"),
    ]
    .into_iter()
    .flatten()
    .collect();
    let mut out = String::new();
    if !read.is_empty() {
        out.push_str(&format!(
            " Beside it: {}. The file alone is not the database; `recover` reads them.",
            read.join(" and ")
        ));
    }
    if !refused.is_empty() {
        out.push_str(&format!(
            " Beside it, not read: {}, whose page size disagrees with the database's and is not proven by its own page 1.",
            refused.join(" and ")
        ));
    }
    out
}

/// The file `path` + `suffix` (`-wal`, `-journal`), mapped read-only, when it exists and
/// is not empty.
fn beside(path: &Path, suffix: &str) -> Result<Option<Source>, Error> {
    let mut p = path.as_os_str().to_owned();
    p.push(suffix);
    let p = std::path::PathBuf::from(p);
    match std::fs::metadata(&p) {
        Ok(m) if m.is_file() && m.len() > 0 => Source::open(&p).map(Some),
        _ => Ok(None),
    }
}

/// The file SQLite opens for `source`: its path with every symbolic link on the way
/// resolved, beside which SQLite keeps its `-wal` and `-shm` (`crate::base::dbpath`), not beside
/// a link it was given by.
fn file_of(source: &Source) -> std::path::PathBuf {
    source
        .path
        .canonicalize()
        .unwrap_or_else(|_| source.path.clone())
}

/// The log and journal beside the file `main` is, read (mapped read-only) when they exist
/// and are not empty.
fn sidecars(main: &Source) -> Result<report::Sidecars, Error> {
    let file = file_of(main);
    let beside = |suffix: &str| beside(&file, suffix);
    Ok(report::Sidecars {
        wal: beside("-wal")?.map(|s| {
            // The rows of each commit are read from both files: their resident pages stay
            // bounded together, every folio counted as a page in it is read.
            let mut residency = Residency::new(vec![main, &s], RESIDENT_LIMIT);
            let folios = EnteredFolios::new(vec![main, &s]);
            let entered = |image: &[u8]| folios.entered(image);
            report::WalSidecar::of(
                s.bytes(),
                main.bytes(),
                (&entered, &mut |n| residency.read(n)),
            )
        }),
        journal: beside("-journal")?.map(|s| report::JournalSidecar::of(s.bytes(), main.bytes())),
    })
}
