//! `salvage recover`: the salvage run. Validate, read, reconstruct, load, verify, report,
//! commit — in that order, so that a result is never thrown away and nothing is created
//! before the inputs are known to be good.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use pager::{Database, PageNo, Survey, TextEncoding, Value};
use reconstruct::{
    Attribution, OrphanGroup, Plan, Provenance, RecoveredRow, RowEvent, TableLoss, TableRows,
    TableShape, TableTarget,
};

use crate::error::{Error, Outcome};
use crate::observer::Observer;
use crate::output::{quote, Inserted, Output, SqlValue};
use crate::recover_report::*;
use crate::report::FindingList;
use crate::source::{sha256_file, Residency, Source, RESIDENT_LIMIT};

/// What to recover, where to, and how.
#[derive(Clone, Debug)]
pub struct RecoverOptions {
    /// The damaged database (opened read-only; nothing is written beside it).
    pub src: PathBuf,
    /// The new database to write; must not exist.
    pub dest: PathBuf,
    /// Where to write the JSON loss report (default: DEST.report.json); must not exist.
    pub report: Option<PathBuf>,
    /// Commit the output even when loss is detected.
    pub allow_partial: bool,
    /// Do not rebuild lost rows from index entries and full-text copies.
    pub no_partial_rows: bool,
    /// Read the main database file alone, ignoring SRC-wal.
    pub no_wal: bool,
    /// Read this write-ahead log instead of SRC-wal.
    pub wal: Option<PathBuf>,
    /// Do not roll back a hot rollback journal.
    pub no_journal: bool,
    /// Roll back this hot journal instead of SRC-journal.
    pub journal: Option<PathBuf>,
    /// Application profile: `auto`, `none`, `agent`, `chroma` or a profile file.
    pub profile: String,
}

/// A run that went to its end: the report it wrote, and how it ended.
#[derive(Debug)]
pub struct Recovered {
    /// How the run ended.
    pub outcome: Outcome,
    /// The loss report, as written.
    pub report: LossReport,
    /// The destination asked for.
    pub dest: PathBuf,
    /// Where the output is kept when it is not committed.
    pub incomplete: PathBuf,
    /// Where the report was written.
    pub report_path: PathBuf,
}

/// The paths of one run, validated.
struct Paths {
    src: PathBuf,
    /// The write-ahead log to read, if any.
    wal: Option<PathBuf>,
    /// The rollback journal to read, if any.
    journal: Option<PathBuf>,
    dest: PathBuf,
    incomplete: PathBuf,
    report: PathBuf,
}

fn with_suffix(p: &Path, suffix: &str) -> PathBuf {
    let mut s = p.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

fn refused(what: String, hint: &str) -> Error {
    Error::Refused {
        what,
        hint: hint.to_string(),
    }
}

/// The canonical form of a path that may not exist yet: its folder canonicalized.
fn canonical_target(p: &Path) -> Option<PathBuf> {
    let parent = p
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    Some(parent.canonicalize().ok()?.join(p.file_name()?))
}

/// Checks every argument before anything is created.
fn validate(args: &RecoverOptions) -> Result<Paths, Error> {
    let meta = std::fs::metadata(&args.src).map_err(|e| Error::Source {
        path: args.src.clone(),
        source: e,
    })?;
    if meta.is_dir() {
        return Err(Error::NotAFile {
            path: args.src.clone(),
            what: "a directory",
        });
    }
    if !meta.is_file() {
        return Err(Error::NotAFile {
            path: args.src.clone(),
            what: "not a regular file",
        });
    }
    let dest = args.dest.clone();
    let incomplete = with_suffix(&dest, ".incomplete");
    let report = args
        .report
        .clone()
        .unwrap_or_else(|| with_suffix(&dest, ".report.json"));
    if incomplete.symlink_metadata().is_ok() {
        return Err(refused(
            format!(
                "`{}` is left from an earlier run that did not finish or was withheld",
                incomplete.display()
            ),
            "inspect it, or remove it yourself; salvage never reuses or deletes it",
        ));
    }
    for (p, what) in [(&dest, "destination"), (&report, "report")] {
        if p.symlink_metadata().is_ok() {
            return Err(refused(
                format!("the {what} `{}` already exists", p.display()),
                "salvage never overwrites a file: choose a new path or move the old one away",
            ));
        }
    }
    let folder = dest
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    if !folder.is_dir() {
        return Err(refused(
            format!(
                "the destination folder `{}` does not exist",
                folder.display()
            ),
            "create the folder first",
        ));
    }
    let src_canon = args.src.canonicalize().map_err(|e| Error::Source {
        path: args.src.clone(),
        source: e,
    })?;
    let dest_canon = canonical_target(&dest).ok_or_else(|| {
        refused(
            format!("cannot resolve the destination `{}`", dest.display()),
            "give a file path in an existing folder",
        )
    })?;
    let sidecars = ["", "-wal", "-shm", "-journal"].map(|s| with_suffix(&src_canon, s));
    for target in [
        &dest_canon,
        &canonical_target(&report).unwrap_or_default(),
        &canonical_target(&incomplete).unwrap_or_default(),
    ] {
        if sidecars.contains(target) {
            return Err(refused(
                format!("`{}` is the source or one of its sidecar files", target.display()),
                "write the output somewhere else: the source is evidence and nothing is written beside it",
            ));
        }
    }
    if let Err(e) = crate::profiles::choose(&args.profile, &[]) {
        return Err(refused(
            e,
            "--profile takes auto, none, agent, chroma or the path of a profile file",
        ));
    }
    // Every file the output side writes, or SQLite may touch beside the output it opens
    // (it deletes what looks like a hot journal of a database it opens): never evidence.
    let mut outputs = vec![
        Some(dest_canon.clone()),
        canonical_target(&report),
        canonical_target(&incomplete),
    ];
    for file in [&dest, &incomplete] {
        for suffix in ["-journal", "-wal", "-shm"] {
            outputs.push(canonical_target(&with_suffix(file, suffix)));
        }
    }
    if outputs.contains(&Some(src_canon.clone())) {
        return Err(refused(
            format!(
                "`{}` is a file the output's database may write or delete",
                args.src.display()
            ),
            "name the output so that the source is not one of its sidecar files",
        ));
    }
    let wal = sidecar_to_read(args.no_wal, args.wal.as_ref(), &args.src, "-wal", &outputs)?;
    let journal = sidecar_to_read(
        args.no_journal,
        args.journal.as_ref(),
        &args.src,
        "-journal",
        &outputs,
    )?;
    Ok(Paths {
        src: args.src.clone(),
        wal,
        journal,
        dest,
        incomplete,
        report,
    })
}

/// A file beside the source to read as well (`suffix`: `-wal`, `-journal`): the one
/// named by its option, else `SRC{suffix}` when it exists and is not empty; none when
/// turned `off`. Refused when it is not a readable file or is one of the `outputs`.
fn sidecar_to_read(
    off: bool,
    named: Option<&PathBuf>,
    src: &Path,
    suffix: &str,
    outputs: &[Option<PathBuf>],
) -> Result<Option<PathBuf>, Error> {
    let what = if suffix == "-wal" {
        "write-ahead log"
    } else {
        "rollback journal"
    };
    let path = if off {
        None
    } else if let Some(p) = named {
        match std::fs::metadata(p) {
            Ok(m) if m.is_file() => Some(p.clone()),
            _ => {
                return Err(Error::Refused {
                    what: format!("the {what} `{}` is not a readable file", p.display()),
                    hint: format!(
                        "give the path of the {suffix} file, or leave --{} out",
                        suffix.trim_start_matches('-')
                    ),
                })
            }
        }
    } else {
        let beside = with_suffix(src, suffix);
        std::fs::metadata(&beside)
            .ok()
            .filter(|m| m.is_file() && m.len() > 0)
            .map(|_| beside)
    };
    if let Some(p) = &path {
        let canon = p.canonicalize().ok();
        if canon.is_some() && outputs.contains(&canon) {
            return Err(Error::Refused {
                what: format!("`{}` is the {what} being read", p.display()),
                hint: "write the output somewhere else".into(),
            });
        }
    }
    Ok(path)
}

/// Runs `salvage recover`.
pub fn run(args: &RecoverOptions, progress: &dyn Observer) -> Result<Recovered, Error> {
    let paths = validate(args)?;
    let source = Source::open(&paths.src)?;
    let wal_source = paths.wal.as_deref().map(Source::open).transpose()?;
    let journal_source = paths.journal.as_deref().map(Source::open).transpose()?;
    let bytes = source.bytes();
    let wal_bytes = wal_source.as_ref().map(Source::bytes);
    let mut sources = vec![&source];
    sources.extend(wal_source.as_ref());
    sources.extend(journal_source.as_ref());
    let sources_for_survey = sources.clone();
    let residency = std::cell::RefCell::new(Residency::new(sources, RESIDENT_LIMIT));
    let read = |bytes: u64| residency.borrow_mut().read(bytes);
    let wal = wal_bytes.map(pager::read_wal);
    let journal = journal_source
        .as_ref()
        .map(|j| pager::read_journal(j.bytes()));
    // As SQLite opens the database: a hot journal rolled back first (unless it names a
    // super-journal that no longer exists: then its transaction committed), then the
    // log's committed frames over the result.
    let rolled_back = journal
        .as_ref()
        .filter(|j| j.header.is_some() && super_journal_exists(j) != Some(false));
    let db = Database::open_with_logs(
        bytes,
        rolled_back,
        wal.as_ref().and_then(|w| w.as_ref().ok()),
    )
    .map_err(|why| Error::NotADatabase {
        path: paths.src.clone(),
        why,
    })?;
    std::thread::scope(|scope| {
        // The evidence is hashed on the second core while the first one works, read from
        // the file (not through the map, which would keep every page resident).
        let before = scope.spawn(|| {
            let hashes = Hashes::of(&paths);
            progress.note("first hash of the source done");
            hashes
        });
        let page_size = u64::from(db.page_size().get());
        let (schema, scanned) = schema_with_scan(&db);
        // The survey runs on the second core while the first loads the tables' own rows,
        // which need only the schema; the orphan pages it finds are planned after.
        let survey_schema = schema.clone();
        let db_ref = &db;
        let survey_sources = sources_for_survey.clone();
        let progress_ref = progress;
        let surveyed = scope.spawn(move || {
            let mut residency = Residency::new(survey_sources, RESIDENT_LIMIT);
            let survey = pager::survey_with_schema(
                db_ref,
                survey_schema,
                pager::SurveyChecks::Structure,
                &mut |_| residency.read(pager::OBSERVE_EVERY * page_size),
            );
            progress_ref.note("survey done");
            survey
        });
        let mut run = Run::new(&db, schema, &paths, progress, &read, &args.profile)?;
        run.schema_rows_scanned = scanned;
        let deferred = run.bulk_load()?;
        progress.say("surveying pages");
        let survey = surveyed
            .join()
            .map_err(|_| Error::Database("the survey failed".into()))?;
        run.attach_survey(survey);
        run.load(deferred)?;
        // Loss bounds read only the source and the load's record: on the second core.
        let bounds_input = run.bounds_inputs();
        let bounds_sources = sources_for_survey.clone();
        // The second hash of the source proves that nothing read from it changed during
        // the run, so it starts after the last read: right after the loss bounds on the
        // second core, unless the first still has the source to read (text copies keyed
        // by a column, virtual tables refilled from their shadow tables).
        let late_reads = run.reads_source_late();
        let hash_source = || {
            let hashes = Hashes::of(&paths);
            progress.note("second hash of the source done");
            hashes
        };
        let (bounds_tx, bounds_rx) = std::sync::mpsc::channel();
        let second_core = scope.spawn(move || {
            let mut residency = Residency::new(bounds_sources, RESIDENT_LIMIT);
            let bounded = compute_bounds(db_ref, bounds_input, &mut residency);
            progress_ref.note("loss bounds done");
            let _ = bounds_tx.send(bounded);
            (!late_reads).then(hash_source)
        });
        run.create_indexes();
        let Ok(bounds) = bounds_rx.recv() else {
            // The thread ended without its result: joined here, its panic is an error,
            // not a crash of the whole run.
            let _ = second_core.join();
            return Err(Error::Database("bounding the loss failed".into()));
        };
        // Partial rows go in before the placeholders (they may reference a lost parent)
        // and before any trigger exists.
        run.take_bounds(bounds, !args.no_partial_rows)
            .map_err(|e| Error::Database(e.to_string()))?;
        run.finish_schema()?;
        let late_hash = late_reads.then(|| scope.spawn(hash_source));
        let verified = run.verify();
        let hashed_before = before
            .join()
            .map_err(|_| Error::Database("hashing failed".into()))??;
        let early_hash = second_core
            .join()
            .map_err(|_| Error::Database("hashing failed".into()))?;
        let after = match late_hash {
            Some(h) => h.join().ok(),
            None => early_hash,
        };
        let hashed_after = after.ok_or_else(|| Error::Database("hashing failed".into()))??;
        let unchanged = hashed_after == hashed_before;
        let wal_report = wal_report(
            args,
            &paths,
            &wal,
            &db,
            hashed_before.wal.clone(),
            hashed_after.wal.clone(),
        );
        let journal_report = journal_report(
            args,
            &journal,
            wal.as_ref().and_then(|w| w.as_ref().ok()),
            &db,
            hashed_before.journal.clone(),
            hashed_after.journal.clone(),
        );
        let mut report = run.report(
            &wal_report,
            &journal_report,
            verified,
            SourceProof {
                size: bytes.len() as u64,
                sha256_before: hashed_before.main,
                sha256_after: hashed_after.main,
                unchanged,
            },
        );
        drop(run);
        progress.done();
        let outcome = finish(args, &paths, &mut report, unchanged)?;
        Ok(Recovered {
            outcome,
            report,
            dest: paths.dest.clone(),
            incomplete: paths.incomplete.clone(),
            report_path: paths.report.clone(),
        })
    })
}

/// The schema from page 1, completed when it is damaged by the schema rows found on any
/// other table leaf page (not on the freelist). Returns how many rows the scan added.
fn schema_with_scan(db: &Database<'_>) -> (pager::Schema, usize) {
    let mut schema = pager::read_schema(db);
    if schema.findings.is_empty() {
        return (schema, 0);
    }
    let freelist = pager::read_freelist(db);
    let mut skip = pager::PageSet::with_page_count(db.page_count());
    for p in freelist.trunks.iter().chain(&freelist.leaves) {
        skip.insert(*p);
    }
    let found: Vec<pager::SchemaRow> = pager::scan_for_schema_rows(db, &skip)
        .into_iter()
        .filter(|r| {
            !schema
                .rows
                .iter()
                .any(|o| o.name.eq_ignore_ascii_case(&r.name))
        })
        .collect();
    let n = found.len();
    schema.rows.extend(found);
    (schema, n)
}

/// Commits or withholds the output, writes the report and the summary.
fn finish(
    args: &RecoverOptions,
    paths: &Paths,
    report: &mut LossReport,
    unchanged: bool,
) -> Result<Outcome, Error> {
    report.run = RunPaths {
        source_path: paths.src.display().to_string(),
        dest_path: paths.dest.display().to_string(),
        report_path: paths.report.display().to_string(),
        wal_path: paths.wal.as_ref().map(|p| p.display().to_string()),
        journal_path: paths.journal.as_ref().map(|p| p.display().to_string()),
    };
    let loss = report.flags.loss_detected;
    let commit = report.flags.verified && unchanged && (!loss || args.allow_partial);
    if commit {
        // A hard link fails if DEST appeared meanwhile: never overwrite.
        std::fs::hard_link(&paths.incomplete, &paths.dest).map_err(Error::Output)?;
        std::fs::remove_file(&paths.incomplete).map_err(Error::Output)?;
        report.output = OutputState {
            committed: true,
            location: "dest",
        };
    } else {
        report.output = OutputState {
            committed: false,
            location: "incomplete",
        };
    }
    write_report(&paths.report, report)?;
    Ok(if !report.flags.verified || !unchanged {
        Outcome::NotVerified {
            source_changed: !unchanged,
        }
    } else {
        match (loss, commit) {
            (false, _) => Outcome::Clean,
            (true, true) => Outcome::Damaged,
            (true, false) => Outcome::Withheld,
        }
    })
}

/// SHA-256 of the evidence: the main file, and the log and journal read with it.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Hashes {
    main: String,
    wal: Option<String>,
    journal: Option<String>,
}

impl Hashes {
    fn of(paths: &Paths) -> Result<Hashes, Error> {
        Ok(Hashes {
            main: sha256_file(&paths.src)?,
            wal: paths.wal.as_deref().map(sha256_file).transpose()?,
            journal: paths.journal.as_deref().map(sha256_file).transpose()?,
        })
    }
}

/// Whether the super-journal a hot journal names exists (SQLite looks it up by the name as
/// recorded); `None` when it names none.
fn super_journal_exists(j: &pager::Journal<'_>) -> Option<bool> {
    j.super_journal
        .as_deref()
        .map(|name| Path::new(name).exists())
}

/// What the run did with the rollback journal, and whether that is a sign of loss.
fn journal_report(
    args: &RecoverOptions,
    journal: &Option<pager::Journal<'_>>,
    wal: Option<&pager::Wal<'_>>,
    db: &Database<'_>,
    sha256_before: Option<String>,
    sha256_after: Option<String>,
) -> JournalReport {
    let mut r = JournalReport {
        rolled_back: false,
        note: String::new(),
        loss: None,
        warning: None,
        hot: false,
        records_valid: 0,
        records_ignored: 0,
        pages_restored: 0,
        pages_before: None,
        super_journal: None,
        sha256_before,
        sha256_after,
        findings: FindingList::new(&[]),
    };
    let Some(j) = journal else {
        r.note = if args.no_journal {
            "the rollback journal was not read (--no-journal)".into()
        } else {
            "no rollback journal beside the source".into()
        };
        return r;
    };
    let Some(h) = j.header else {
        r.note = "the rollback journal is not hot (no valid header: its transaction committed); nothing to roll back".into();
        return r;
    };
    r.hot = true;
    r.records_valid = j.records_valid;
    r.records_ignored = j.records_ignored;
    r.pages_before = Some(h.original_pages);
    r.super_journal = j.super_journal.clone();
    r.findings = FindingList::new(&j.findings);
    if super_journal_exists(j) == Some(false) {
        r.note = format!(
            "the hot journal names super-journal `{}`, which does not exist: its multi-database transaction committed, so nothing is rolled back (as SQLite does)",
            j.super_journal.as_deref().unwrap_or_default()
        );
        return r;
    }
    r.rolled_back = true;
    r.pages_restored = j
        .pages
        .keys()
        .filter(|p| p.get() <= db.page_count() && !wal.is_some_and(|w| w.pages.contains_key(p)))
        .count() as u64;
    r.note = format!(
        "hot journal rolled back: {} pages restored to their state before an interrupted transaction, the database read at its {} pages from before it{}",
        r.pages_restored,
        h.original_pages,
        if wal.is_some() {
            "; the write-ahead log's committed frames then read over it"
        } else {
            ""
        }
    );
    r.warning = Some(format!(
        "the source had a hot rollback journal: an interrupted transaction's changes were rolled back ({} pages restored), as SQLite does when it opens the database",
        r.pages_restored
    ));
    if j.records_ignored > 0 {
        r.loss = Some(format!(
            "{} records of the hot rollback journal are damaged and not rolled back: the pages they held may carry changes of a transaction that never committed",
            j.records_ignored
        ));
    }
    r
}

/// What the run did with the write-ahead log, and whether that is a sign of loss.
fn wal_report(
    args: &RecoverOptions,
    paths: &Paths,
    wal: &Option<Result<pager::Wal<'_>, pager::Finding>>,
    db: &Database<'_>,
    sha256_before: Option<String>,
    sha256_after: Option<String>,
) -> WalReport {
    let mut r = WalReport {
        used: false,
        note: String::new(),
        loss: None,
        frames_present: 0,
        frames_committed: 0,
        pages_from_wal: 0,
        sha256_before,
        sha256_after,
        findings: FindingList::new(&[]),
    };
    match wal {
        None if args.no_wal => r.note = "the write-ahead log was not read (--no-wal)".into(),
        None => r.note = "no write-ahead log beside the source".into(),
        Some(Err(f)) => {
            r.note = format!("the write-ahead log is unusable: {f}");
            r.loss = Some(format!(
                "the write-ahead log `{}` is unusable ({f}): transactions committed only to it are not recovered",
                paths.wal.as_ref().map_or(String::new(), |p| p.display().to_string())
            ));
            r.findings = FindingList::new(std::slice::from_ref(f));
        }
        Some(Ok(w)) => {
            r.used = true;
            r.frames_present = w.frames_present;
            r.frames_committed = w.frames_committed;
            r.pages_from_wal = w
                .pages
                .keys()
                .filter(|p| p.get() <= db.page_count())
                .count() as u64;
            r.note = format!(
                "{} of {} frames are committed; {} pages read from the log",
                w.frames_committed, w.frames_present, r.pages_from_wal
            );
            if let Some(pager::Finding::WalFrameChecksumMismatch { frame }) = w
                .findings
                .iter()
                .find(|f| matches!(f, pager::Finding::WalFrameChecksumMismatch { .. }))
            {
                let after = w.frames_present.saturating_sub(*frame);
                if after > 0 {
                    r.loss = Some(format!(
                        "write-ahead log frame {frame} is damaged: {after} frames after it are ignored, and transactions among them are not recovered"
                    ));
                }
            }
            r.findings = FindingList::new(&w.findings);
        }
    }
    r
}

fn write_report(path: &Path, report: &LossReport) -> Result<(), Error> {
    let mut text = serde_json::to_string_pretty(report).map_err(|e| Error::Output(e.into()))?;
    text.push('\n');
    // create_new: the report never overwrites a file either.
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(Error::Output)?;
    f.write_all(text.as_bytes()).map_err(Error::Output)
}

/// What happened to one table of the schema.
struct TableRun {
    name: String,
    root: Option<PageNo>,
    status: &'static str,
    reason: Option<String>,
    /// Index into the plan's targets, when the table is filled.
    target: Option<usize>,
    loss: TableLoss,
    /// How many rows it lost, when anything says it lost some.
    bounds: Option<reconstruct::LossBounds>,
    /// Rowids of the rows its constraints refused.
    rejected_rowids: BTreeSet<i64>,
    /// Rowids of the rows written into it (the load's own record, for loss bounds).
    written_rowids: Vec<i64>,
    /// Partial rows its constraints refused.
    partial_refused: u64,
}

/// One salvage run in progress.
struct Run<'a, 'd> {
    db: &'d Database<'a>,
    /// The schema: page 1's, completed by a scan when page 1 is damaged.
    schema: pager::Schema,
    /// The survey, once it is in (see [`Run::attach_survey`]).
    survey: Option<Survey>,
    out: Output,
    enc: TextEncoding,
    tables: Vec<TableRun>,
    targets: Vec<TableTarget>,
    plan: Plan,
    objects: Vec<SchemaObject>,
    conflicts: Listed<ConflictReport>,
    lost_and_found: Option<String>,
    /// Rows written to `lost_and_found`: from unattributed orphan groups and refused rows.
    lost_rows: u64,
    /// Of those, rows from unattributed orphan groups.
    orphan_lost_rows: u64,
    warnings: Vec<String>,
    verified_evidence: Vec<String>,
    progress: &'d dyn Observer,
    /// Told how many bytes of the source each step read, to keep resident memory flat.
    read: &'d dyn Fn(u64),
    /// Schema rows found by scanning the file because page 1's schema was damaged.
    schema_rows_scanned: usize,
    /// The `--profile` choice.
    profile: String,
    /// The profiles that applied.
    profiles_used: Vec<String>,
    /// Placeholder parents made and refused.
    placeholders: crate::placeholders::Outcome,
    /// Indexes the bulk writer built (lower-cased names): not created again.
    prebuilt_indexes: BTreeSet<String>,
    /// The registry of partial rows in the output, once one is written.
    partial_registry: Option<String>,
    /// Tables a profile expects that a damaged schema lacks: one sentence each.
    missing_loss: Vec<String>,
    /// Virtual tables not rebuilt whole (full-text and others): one sentence each.
    fts_loss: Vec<String>,
    /// Full-text tables' copies of other tables' text (see [`crate::copies`]).
    text_copies: Vec<crate::partial::ResolvedCopy>,
}

impl<'a, 'd> Run<'a, 'd> {
    /// Creates DEST.incomplete and the schema's tables.
    fn new(
        db: &'d Database<'a>,
        schema: pager::Schema,
        paths: &Paths,
        progress: &'d dyn Observer,
        read: &'d dyn Fn(u64),
        profile: &str,
    ) -> Result<Self, Error> {
        let h = db.header();
        let out = Output::create(
            &paths.incomplete,
            db.page_size().get(),
            db.encoding(),
            h.user_version,
            h.application_id,
        )
        .map_err(|e| Error::Database(e.to_string()))?;
        let mut run = Run {
            db,
            schema,
            survey: None,
            out,
            enc: db.encoding(),
            tables: Vec::new(),
            targets: Vec::new(),
            plan: Plan::default(),
            objects: Vec::new(),
            conflicts: Listed::default(),
            lost_and_found: None,
            lost_rows: 0,
            orphan_lost_rows: 0,
            warnings: Vec::new(),
            verified_evidence: Vec::new(),
            progress,
            read,
            schema_rows_scanned: 0,
            profile: profile.to_string(),
            profiles_used: Vec::new(),
            placeholders: crate::placeholders::Outcome::default(),
            prebuilt_indexes: BTreeSet::new(),
            partial_registry: None,
            fts_loss: Vec::new(),
            text_copies: Vec::new(),
            missing_loss: Vec::new(),
        };
        run.create_tables();
        Ok(run)
    }

    /// Takes the survey in: each table's b-tree damage, then the plan for the orphan pages
    /// and the tables inferred from them.
    fn attach_survey(&mut self, survey: Survey) {
        for t in &mut self.tables {
            match t
                .root
                .and_then(|root| survey.trees.iter().find(|tr| tr.root == root))
            {
                Some(tree) => {
                    t.loss.lost_subtrees = tree.lost.len() as u64;
                    t.loss.tree_findings = tree.findings.len() as u64;
                    t.loss.root_lost = tree.pages == 0;
                }
                None => t.loss.root_lost = t.status == "recovered",
            }
        }
        self.progress.say("planning orphan pages");
        self.plan = reconstruct::plan(self.db, &survey, &self.targets);
        self.survey = Some(survey);
        self.create_inferred_tables();
    }

    fn create_tables(&mut self) {
        let rows = &self.schema.rows;
        let is_virtual = |sql: &Option<String>| {
            sql.as_deref().is_some_and(|s| {
                s.trim_start()
                    .get(..20)
                    .is_some_and(|h| h.eq_ignore_ascii_case("CREATE VIRTUAL TABLE"))
            })
        };
        let vtabs: Vec<String> = rows
            .iter()
            .filter(|r| r.kind == pager::SchemaKind::Table && is_virtual(&r.sql))
            .map(|r| r.name.clone())
            .collect();
        // Virtual tables first: each makes its shadow tables on the output, which are then
        // known as such wherever the schema lists them (VACUUM puts them before their
        // virtual table). The report keeps schema order.
        let mut ordered: Vec<(usize, &pager::SchemaRow)> = rows
            .iter()
            .filter(|r| r.kind == pager::SchemaKind::Table)
            .enumerate()
            .collect();
        ordered.sort_by_key(|(_, r)| !is_virtual(&r.sql));
        let mut made: Vec<(usize, TableRun)> = Vec::with_capacity(ordered.len());
        for (position, r) in ordered {
            let mut t = TableRun {
                name: r.name.clone(),
                root: r.rootpage,
                status: "recovered",
                reason: None,
                target: None,
                loss: TableLoss::default(),
                bounds: None,
                rejected_rowids: BTreeSet::new(),
                written_rowids: Vec::new(),
                partial_refused: 0,
            };
            let lower = r.name.to_ascii_lowercase();
            if lower == "sqlite_sequence" {
                // Created by SQLite with the first AUTOINCREMENT table; filled at the end.
                t.status = "skipped";
                t.reason = Some(
                    "internal table: its counters are carried over after the rows are in".into(),
                );
            } else if lower.starts_with("sqlite_") {
                t.status = "skipped";
                t.reason = Some(
                    "internal table (statistics are derived data; run ANALYZE on the output)"
                        .into(),
                );
            } else if is_virtual(&r.sql) {
                let sql = r.sql.clone().unwrap_or_default();
                match self.out.create_object(&sql) {
                    Ok(()) => {
                        t.status = "skipped";
                        t.reason = Some("virtual table: re-created from its CREATE statement; its shadow tables are not copied (a full-text table is rebuilt from canonical rows, see schema_objects)".into());
                        self.objects.push(SchemaObject {
                            kind: "virtual table".into(),
                            name: r.name.clone(),
                            status: "created",
                            reason: None,
                        });
                    }
                    Err(e) => {
                        t.status = "failed";
                        t.reason = Some(format!("its CREATE statement failed on the output: {e}"));
                        self.objects.push(SchemaObject {
                            kind: "virtual table".into(),
                            name: r.name.clone(),
                            status: "failed",
                            reason: Some(e),
                        });
                    }
                }
            } else if let Some(v) = vtabs.iter().find(|v| {
                // A shadow table is one its virtual table made on the output already: a
                // user table that merely shares the prefix is data.
                lower.starts_with(&format!("{}_", v.to_ascii_lowercase()))
                    && self.out.has_table(&r.name)
            }) {
                t.status = "skipped";
                t.reason = Some(format!(
                    "shadow table of virtual table `{v}`: derived, not copied as data"
                ));
            } else {
                match r.sql.as_deref().map(|sql| self.out.create_object(sql)) {
                    Some(Ok(())) => match self.out.shape(&r.name, r.is_without_rowid()) {
                        Ok(shape) => {
                            t.target = Some(self.targets.len());
                            self.targets.push(TableTarget {
                                shape,
                                root: r.rootpage,
                            });
                        }
                        Err(e) => {
                            t.status = "failed";
                            t.reason = Some(format!("its columns could not be read back: {e}"));
                        }
                    },
                    Some(Err(e)) => {
                        t.status = "failed";
                        t.reason = Some(format!("its CREATE statement failed on the output: {e}"));
                    }
                    None => {
                        t.status = "failed";
                        t.reason = Some("its schema row has no CREATE statement".into());
                    }
                }
            }
            made.push((position, t));
        }
        made.sort_by_key(|(position, _)| *position);
        self.tables.extend(made.into_iter().map(|(_, t)| t));
    }

    /// One sentence per parent/child pair: children kept under placeholders (loss: the
    /// parents' own data is gone), and children whose parent could not be rebuilt.
    fn placeholder_evidence(&self) -> Vec<String> {
        let mut made: BTreeMap<(String, String), (u64, u64)> = BTreeMap::new();
        for m in &self.placeholders.made {
            let e = made
                .entry((m.table.clone(), m.child_table.clone()))
                .or_default();
            e.0 += 1;
            e.1 += m.children;
        }
        let mut blocked: BTreeMap<(String, String), (u64, u64, String)> = BTreeMap::new();
        for b in &self.placeholders.blocked {
            let e = blocked
                .entry((b.table.clone(), b.child_table.clone()))
                .or_default();
            e.0 += 1;
            e.1 += b.children;
            e.2 = b.reason.clone();
        }
        let mut out: Vec<String> = made
            .into_iter()
            .map(|((parent, child), (n, children))| {
                format!(
                    "{children} `{child}` rows kept under {n} reconstructed `{parent}` rows; the `{parent}` rows themselves are lost (their metadata is gone) and the placeholders are registered as fabricated"
                )
            })
            .collect();
        out.extend(blocked.into_iter().map(|((parent, child), (n, children, reason))| {
            format!(
                "{children} `{child}` rows reference {n} lost `{parent}` rows that could not be rebuilt ({reason}); they are kept with dangling references"
            )
        }));
        out
    }

    fn placeholder_report(&self) -> PlaceholderReport {
        let names: Vec<String> = self.targets.iter().map(|t| t.shape.name.clone()).collect();
        let profiles = crate::profiles::choose(&self.profile, &names).unwrap_or_default();
        let mut made = Listed::default();
        for m in &self.placeholders.made {
            made.push(PlaceholderEntry {
                table: m.table.clone(),
                rowid: m.rowid,
                key: m.key.clone(),
                child_table: m.child_table.clone(),
                children: m.children,
                filled_columns: m.filled.clone(),
                relationship: m.origin.clone(),
            });
        }
        let mut blocked = Listed::default();
        for b in &self.placeholders.blocked {
            blocked.push(BlockedEntry {
                table: b.table.clone(),
                key: b.key.clone(),
                child_table: b.child_table.clone(),
                children: b.children,
                reason: b.reason.clone(),
            });
        }
        PlaceholderReport {
            profiles: profiles
                .into_iter()
                .map(|p| [p.name, p.description])
                .collect(),
            registry: self.placeholders.registry.clone(),
            made,
            blocked,
        }
    }

    /// Names the schema already uses, lower-cased (SQLite compares names without case).
    fn taken_names(&self) -> BTreeSet<String> {
        self.schema
            .rows
            .iter()
            .map(|r| r.name.to_ascii_lowercase())
            .collect()
    }

    /// Creates a table for each shape of orphan records that no table of the schema fits:
    /// tables whose CREATE statement is lost. Columns are named c0, c1, … and declared
    /// without a type, so that every value keeps its storage class.
    fn create_inferred_tables(&mut self) {
        let taken = self.taken_names();
        let inferred = std::mem::take(&mut self.plan.inferred);
        let mut n = 0;
        for table in inferred {
            let name = loop {
                n += 1;
                let candidate = format!("salvage_inferred_{n}");
                if !taken.contains(&candidate) {
                    break candidate;
                }
            };
            let cols: Vec<String> = (0..table.columns.len())
                .map(|i| quote(&format!("c{i}")))
                .collect();
            let sql = format!("CREATE TABLE {}({})", quote(&name), cols.join(", "));
            let shape = self
                .out
                .create_object(&sql)
                .ok()
                .and_then(|()| self.out.shape(&name, false).ok());
            let Some(shape) = shape else { continue };
            let rows: u64 = table.groups.iter().map(|g| g.cells).sum();
            let reason = format!(
                "its CREATE statement is lost: {} columns ({}) inferred from {} sampled records of {} orphan page groups ({rows} cells)",
                table.columns.len(),
                table.columns.join(", "),
                table.sampled,
                table.groups.len()
            );
            let target = self.targets.len();
            self.targets.push(TableTarget { shape, root: None });
            let evidence = vec![reconstruct::Evidence::LostSchema {
                sampled: table.sampled,
            }];
            self.plan.attributed.push(
                table
                    .groups
                    .into_iter()
                    .map(|group| Attribution {
                        group,
                        evidence: evidence.clone(),
                        confidence: reconstruct::Confidence::Low,
                    })
                    .collect(),
            );
            self.tables.push(TableRun {
                name,
                root: None,
                status: "inferred",
                reason: Some(reason),
                target: Some(target),
                loss: TableLoss::default(),
                bounds: None,
                rejected_rowids: BTreeSet::new(),
                written_rowids: Vec::new(),
                partial_refused: 0,
            });
        }
    }

    /// Streams every table's rows into the output, then `lost_and_found`, then the
    /// counters, indexes, views and triggers.
    fn load(&mut self, mut deferred: BTreeMap<usize, Vec<RecoveredRow<'a>>>) -> Result<(), Error> {
        let dberr = |e: rusqlite::Error| Error::Database(e.to_string());
        for ti in 0..self.tables.len() {
            let Some(target) = self.tables.get(ti).and_then(|t| t.target) else {
                continue;
            };
            let Some(tt) = self.targets.get(target).cloned() else {
                continue;
            };
            self.progress
                .say(&format!("recovering `{}`", tt.shape.name));
            let groups: Vec<Attribution> = self
                .plan
                .attributed
                .get(target)
                .cloned()
                .unwrap_or_default();
            let mut loss = self
                .tables
                .get(ti)
                .map(|t| t.loss.clone())
                .unwrap_or_default();
            // A bulk-loaded table has its tree rows in already; the rows it could not
            // append in order follow here, then its orphan rows.
            let (tree, early): (Option<PageNo>, Vec<RowEvent<'a>>) = match deferred.remove(&ti) {
                Some(rows) => (None, rows.into_iter().map(RowEvent::Row).collect()),
                None => (tt.root.filter(|_| !loss.root_lost), Vec::new()),
            };
            let rows = early.into_iter().chain(TableRows::new(
                self.db,
                tree,
                groups.iter().map(|a| &a.group),
            ));
            self.out.conn.execute_batch("BEGIN").map_err(dberr)?;
            let writer = TableWriter::new(&tt.shape);
            for event in rows {
                match event {
                    RowEvent::Unreadable { .. } => loss.unreadable_cells += 1,
                    RowEvent::Row(row) => self
                        .insert_row(&tt, &writer, &row, &mut loss)
                        .map_err(dberr)?,
                }
            }
            self.out.conn.execute_batch("COMMIT").map_err(dberr)?;
            if let Some(t) = self.tables.get_mut(ti) {
                t.loss = loss;
            }
        }
        self.progress.say("writing lost_and_found");
        self.load_lost_and_found().map_err(dberr)?;
        self.carry_sequence().map_err(dberr)
    }

    /// After the rows: indexes, views and triggers. Reads nothing from the source.
    /// What bounding each damaged table's loss needs, taken out of the run so that it can
    /// be worked out on the second core while the output is finished and verified.
    fn bounds_inputs(&mut self) -> Vec<BoundsInput> {
        self.resolve_text_copies();
        let Some(survey) = self.survey.as_ref() else {
            return Vec::new();
        };
        let sequences = self.source_sequences();
        let analyzed = self.source_stat1_rows();
        let mut out = Vec::new();
        for (ti, t) in self.tables.iter_mut().enumerate() {
            let Some(tt) = t.target.and_then(|i| self.targets.get(i)) else {
                continue;
            };
            let rowids = std::mem::take(&mut t.written_rowids);
            if tt.shape.without_rowid || t.status != "recovered" {
                continue;
            }
            let lost: Vec<pager::LostChild> = t
                .root
                .and_then(|r| survey.trees.iter().find(|tr| tr.root == r))
                .map(|tr| tr.lost.clone())
                .unwrap_or_default();
            if lost.is_empty()
                && !t.loss.root_lost
                && t.loss.rejected == 0
                && t.loss.unreadable_cells == 0
            {
                continue;
            }
            let mut rowids = rowids;
            rowids.sort_unstable();
            rowids.dedup();
            let indexes: Vec<(String, PageNo, Option<String>)> = self
                .schema
                .rows
                .iter()
                .filter(|r| {
                    r.kind == pager::SchemaKind::Index && r.tbl_name.eq_ignore_ascii_case(&t.name)
                })
                .filter_map(|r| Some((r.name.clone(), r.rootpage?, r.sql.clone())))
                .collect();
            let table_sql = self
                .schema
                .rows
                .iter()
                .find(|r| {
                    r.kind == pager::SchemaKind::Table && r.name.eq_ignore_ascii_case(&t.name)
                })
                .and_then(|r| r.sql.as_deref());
            let indexes = crate::partial::index_keys(table_sql, &indexes);
            // A counter below a recovered rowid contradicts the rows: it proves nothing.
            let sequence = sequences
                .get(&t.name.to_lowercase())
                .copied()
                .filter(|seq| rowids.last().is_none_or(|last| last <= seq));
            let analyzed_rows = analyzed.get(&t.name.to_lowercase()).copied();
            out.push(BoundsInput {
                table: ti,
                sequence,
                analyzed_rows,
                lost,
                root_lost: t.loss.root_lost,
                known: reconstruct::KnownMissing {
                    rejected: t.loss.rejected,
                    unreadable: t.loss.unreadable_cells,
                },
                rejected_rowids: std::mem::take(&mut t.rejected_rowids),
                rowids,
                indexes,
                copies: self
                    .text_copies
                    .iter()
                    .filter(|c| c.copy.key.is_none() && c.copy.table.eq_ignore_ascii_case(&t.name))
                    .cloned()
                    .collect(),
            });
        }
        out
    }

    /// Whether the steps after the load read the source: text copies keyed by a column
    /// (read while the partial rows are taken in) and virtual tables (refilled from their
    /// shadow tables in the source).
    fn reads_source_late(&self) -> bool {
        self.text_copies.iter().any(|c| c.copy.key.is_some())
            || self
                .objects
                .iter()
                .any(|o| o.kind == "virtual table" && o.status == "created")
    }

    /// The text copies the schema's triggers and the profiles state, resolved; those that
    /// cannot be used are warned about.
    fn resolve_text_copies(&mut self) {
        let names: Vec<String> = self.targets.iter().map(|t| t.shape.name.clone()).collect();
        let profiles = crate::profiles::choose(&self.profile, &names).unwrap_or_default();
        let stated: Vec<reconstruct::TextCopy> = profiles
            .iter()
            .filter_map(|p| p.text_copies(self.enc).ok())
            .flatten()
            // A profile's copy applies only where its full-text table exists.
            .filter(|c| {
                self.schema
                    .rows
                    .iter()
                    .any(|r| r.name.eq_ignore_ascii_case(&c.fts))
            })
            .collect();
        let shapes: Vec<TableShape> = self.targets.iter().map(|t| t.shape.clone()).collect();
        let (copies, unusable) = crate::copies::resolve(&self.schema, &self.out, stated, &shapes);
        self.text_copies = copies;
        self.warnings.extend(unusable);
    }

    fn create_indexes(&mut self) {
        self.progress.say("re-creating indexes");
        self.create_objects(&[pager::SchemaKind::Index]);
    }

    /// Takes each table's loss bounds in, and writes the partial rows its index entries and
    /// text copies prove (unless `partial_rows` is off), registered in
    /// `salvage_partial_rows`. Text copies keyed by a column, not the rowid, are taken in
    /// here (see [`Run::fill_from_keyed_copies`], [`Run::rows_from_keyed_copies`]).
    fn take_bounds(&mut self, bounded: Vec<Bounded>, partial_rows: bool) -> rusqlite::Result<()> {
        if partial_rows && bounded.iter().any(|b| !b.partial.is_empty()) {
            self.progress
                .say("rebuilding partial rows from index entries and text copies");
        }
        let taken = self.taken_names();
        for mut b in bounded {
            let Some(t) = self.tables.get(b.table) else {
                continue;
            };
            let (name, rejected) = (t.name.clone(), t.loss.rejected);
            let keyed: Vec<crate::partial::ResolvedCopy> = self
                .text_copies
                .iter()
                .filter(|c| c.copy.key.is_some() && c.copy.table.eq_ignore_ascii_case(&name))
                .cloned()
                .collect();
            for copy in &keyed {
                self.fill_from_keyed_copies(copy, &mut b.partial);
            }
            self.out.conn.execute_batch("BEGIN")?;
            let done = (|| {
                let mut done = crate::partial::Inserted::default();
                if partial_rows {
                    done = crate::partial::insert(
                        &self.out,
                        self.enc,
                        &name,
                        b.partial.iter().map(|(rowid, row)| (Some(*rowid), row)),
                        &mut self.partial_registry,
                        &taken,
                    )?;
                }
                let mut unkeyed = 0u64;
                for copy in &keyed {
                    // A refused row (in lost_and_found) is not in the output either: with
                    // any, a copy that no index entry places proves nothing.
                    if rejected > 0 {
                        self.warnings.push(format!(
                            "`{name}` refused {rejected} rows (kept in lost_and_found): copies in `{}` that no index entry places are not used, since they may stand for those rows",
                            copy.copy.fts
                        ));
                        continue;
                    }
                    let (n, more) =
                        self.rows_from_keyed_copies(&name, copy, &b.partial, partial_rows, &taken)?;
                    unkeyed += n;
                    done.written += more.written;
                    done.refused += more.refused;
                }
                Ok::<_, rusqlite::Error>((done, unkeyed))
            })();
            let (done, unkeyed) = match done {
                Ok(d) => d,
                Err(e) => {
                    let _ = self.out.conn.execute_batch("ROLLBACK");
                    return Err(e);
                }
            };
            self.out.conn.execute_batch("COMMIT")?;
            b.bounds.add_text_proof(unkeyed, rejected);
            if let Some(t) = self.tables.get_mut(b.table) {
                t.bounds = Some(b.bounds);
                t.loss.partial_rows = done.written;
                t.partial_refused = done.refused;
            }
        }
        Ok(())
    }

    /// The rows of a full-text copy in the source: its rowid, and what it gives back of
    /// its row.
    fn copy_rows<'c>(
        &'c self,
        copy: &'c crate::partial::ResolvedCopy,
    ) -> impl Iterator<Item = (i64, Vec<(String, Value)>)> + 'c {
        copy.rows(self.db, self.read)
            .map(|row| (row.rowid, copy.row_values(&row)))
    }

    /// A copy keyed by a column (Chroma's documents, under their embedding's id) fills the
    /// partial rows index entries proved with the same key and fixed values.
    fn fill_from_keyed_copies(
        &self,
        copy: &crate::partial::ResolvedCopy,
        partial: &mut BTreeMap<i64, crate::partial::PartialRow>,
    ) {
        let Some(key) = copy.copy.key.as_deref() else {
            return;
        };
        let by_key: BTreeMap<i64, i64> = partial
            .iter()
            .filter(|(_, row)| copy.stands_for(row))
            .filter_map(|(rowid, row)| match row.values.get(key) {
                Some(Value::Integer(k)) => Some((*k, *rowid)),
                _ => None,
            })
            .collect();
        if by_key.is_empty() {
            return;
        }
        for (k, values) in self.copy_rows(copy) {
            if let Some(p) = by_key.get(&k).and_then(|rowid| partial.get_mut(rowid)) {
                p.add_text(copy, values);
            }
        }
    }

    /// Copies keyed by a column whose row is neither in the output nor proven by an index
    /// entry (`partial`): each proves a lost row whose rowid is unknown. Counted, and
    /// (with `write`) rebuilt under a new rowid as they are read: what is held is the
    /// table's keys (8 bytes a row), never the copies' text.
    fn rows_from_keyed_copies(
        &mut self,
        table: &str,
        copy: &crate::partial::ResolvedCopy,
        partial: &BTreeMap<i64, crate::partial::PartialRow>,
        write: bool,
        taken: &BTreeSet<String>,
    ) -> rusqlite::Result<(u64, crate::partial::Inserted)> {
        let Some(key) = copy.copy.key.clone() else {
            return Ok((0, crate::partial::Inserted::default()));
        };
        // The keys the table holds, in one pass (no index on the key is needed).
        let mut sql = format!(
            "SELECT {} FROM {} WHERE 1",
            quote(&key),
            quote(&copy.copy.table)
        );
        for (i, (c, _)) in copy.copy.when.iter().enumerate() {
            sql.push_str(&format!(" AND {} = ?{}", quote(c), i + 1));
        }
        let when: Vec<SqlValue<'_>> = copy
            .copy
            .when
            .iter()
            .map(|(_, v)| SqlValue::from_value(v, self.enc))
            .collect();
        let params: Vec<&dyn rusqlite::ToSql> =
            when.iter().map(|v| v as &dyn rusqlite::ToSql).collect();
        let mut held: Vec<i64> = {
            let mut stmt = self.out.conn.prepare(&sql)?;
            let keys = stmt.query_map(params.as_slice(), |r| {
                r.get::<_, Option<i64>>(0).or(Ok(None))
            })?;
            keys.filter_map(|k| k.ok().flatten()).collect()
        };
        held.extend(
            partial
                .values()
                .filter(|row| copy.stands_for(row))
                .filter_map(|row| match row.values.get(&key) {
                    Some(Value::Integer(k)) => Some(*k),
                    _ => None,
                }),
        );
        held.sort_unstable();
        // The registry is moved out while the copy's rows are read (they borrow the run).
        let mut registry = self.partial_registry.take();
        let (mut proven, mut done) = (0u64, crate::partial::Inserted::default());
        let mut batch: Vec<crate::partial::PartialRow> = Vec::new();
        let mut result = Ok(());
        for (k, values) in self.copy_rows(copy) {
            if held.binary_search(&k).is_ok() {
                continue;
            }
            proven += 1;
            if !write {
                continue;
            }
            let mut row = crate::partial::PartialRow::default();
            row.values.insert(key.clone(), Value::Integer(k));
            row.add_text(copy, values);
            batch.push(row);
            if batch.len() >= 1024 {
                result = self.insert_unkeyed(table, &mut batch, &mut registry, taken, &mut done);
                if result.is_err() {
                    break;
                }
            }
        }
        if result.is_ok() {
            result = self.insert_unkeyed(table, &mut batch, &mut registry, taken, &mut done);
        }
        self.partial_registry = registry;
        result.map(|()| (proven, done))
    }

    fn insert_unkeyed(
        &self,
        table: &str,
        batch: &mut Vec<crate::partial::PartialRow>,
        registry: &mut Option<String>,
        taken: &BTreeSet<String>,
        done: &mut crate::partial::Inserted,
    ) -> rusqlite::Result<()> {
        let more = crate::partial::insert(
            &self.out,
            self.enc,
            table,
            batch.iter().map(|row| (None, row)),
            registry,
            taken,
        )?;
        batch.clear();
        done.written += more.written;
        done.refused += more.refused;
        Ok(())
    }

    fn finish_schema(&mut self) -> Result<(), Error> {
        self.progress.say("rebuilding lost parent rows");
        self.synthesize_placeholders()
            .map_err(|e| Error::Database(e.to_string()))?;
        self.progress.say("re-creating views");
        self.create_objects(&[pager::SchemaKind::View]);
        self.progress.say("rebuilding full-text indexes");
        self.rebuild_fts()
            .map_err(|e| Error::Database(e.to_string()))?;
        // Views and triggers last: no trigger fires on a recovered or synthesized row.
        self.progress.say("re-creating triggers");
        self.create_objects(&[pager::SchemaKind::Trigger]);
        Ok(())
    }

    /// Rebuilds each FTS table created on the output from canonical rows (see
    /// [`crate::fts`]): its own stored text, or its external content table. What cannot be
    /// rebuilt, or came back incomplete, is loss.
    fn rebuild_fts(&mut self) -> rusqlite::Result<()> {
        let vtabs: Vec<(String, Option<crate::fts::Content>)> = self
            .objects
            .iter()
            .filter(|o| o.kind == "virtual table" && o.status == "created")
            .filter_map(|o| {
                let sql = self
                    .schema
                    .rows
                    .iter()
                    .find(|r| r.name.eq_ignore_ascii_case(&o.name))?
                    .sql
                    .as_deref()?;
                Some((o.name.clone(), crate::fts::classify(sql)))
            })
            .collect();
        for (name, content) in vtabs {
            let outcome = match &content {
                None => {
                    let refilled = self.refill_rtree(&name)?;
                    if refilled.is_none() {
                        self.note_left_empty(&name);
                    }
                    refilled
                }
                Some(crate::fts::Content::Own) => Some(self.refill_fts(&name)?),
                Some(crate::fts::Content::External(table)) => Some(
                    match self.out.conn.execute(
                        &format!("INSERT INTO {0}({0}) VALUES ('rebuild')", quote(&name)),
                        [],
                    ) {
                        Ok(_) => ("rebuilt", format!("index rebuilt from the recovered rows of its content table `{table}`")),
                        Err(e) => {
                            self.fts_loss.push(format!("full-text table `{name}`: rebuilding its index from `{table}` failed: {e}"));
                            ("failed", format!("rebuilding from `{table}` failed: {e}"))
                        }
                    },
                ),
                Some(crate::fts::Content::Contentless) => {
                    self.fts_loss.push(format!("full-text table `{name}` is contentless: no stored text to rebuild its index from, so the index is lost"));
                    Some(("created", "contentless: created empty; nothing stores the text its index was built from".into()))
                }
            };
            if let Some((status, reason)) = outcome {
                if let Some(o) = self
                    .objects
                    .iter_mut()
                    .find(|o| o.kind == "virtual table" && o.name == name)
                {
                    o.status = status;
                    o.reason = Some(reason);
                }
            }
        }
        Ok(())
    }

    /// A virtual table salvage cannot refill: its data lives in its shadow tables (those it
    /// made on the output), which are not carried over. Loss, when the source has any.
    fn note_left_empty(&mut self, name: &str) {
        let prefix = format!("{}_", name.to_ascii_lowercase());
        let shadows: Vec<String> = self
            .schema
            .rows
            .iter()
            .filter(|r| {
                r.name.to_ascii_lowercase().starts_with(&prefix) && self.out.has_table(&r.name)
            })
            .map(|r| format!("`{}`", r.name))
            .collect();
        if !shadows.is_empty() {
            self.fts_loss.push(format!(
                "virtual table `{name}` is created empty: its data in {} is not carried over",
                shadows.join(", ")
            ));
        }
    }

    /// What the survey says is wrong with a shadow table's b-tree (root `root`), if
    /// anything: its root unreadable, subtrees lost, other findings.
    fn shadow_damage(&self, root: PageNo, table: &str) -> Option<String> {
        let Some(tree) = self
            .survey
            .as_ref()
            .and_then(|s| s.trees.iter().find(|t| t.root == root))
        else {
            return Some(format!("`{table}` was not surveyed"));
        };
        (tree.pages == 0 || !tree.lost.is_empty() || !tree.findings.is_empty()).then(|| {
            format!(
                "the b-tree of `{table}`: {} pages reached, {} subtrees lost, {} findings",
                tree.pages,
                tree.lost.len(),
                tree.findings.len()
            )
        })
    }

    /// Refills an R-tree (`rtree`, `rtree_i32`, no auxiliary columns) from the node blobs
    /// of its `NAME_node` shadow table in the source. `None`: not such a table.
    fn refill_rtree(&mut self, name: &str) -> rusqlite::Result<Option<(&'static str, String)>> {
        let Some(sql) = self
            .schema
            .rows
            .iter()
            .find(|r| r.name.eq_ignore_ascii_case(name))
            .and_then(|r| r.sql.clone())
        else {
            return Ok(None);
        };
        let module = crate::fts::module(&sql);
        let int32 = match module.as_deref() {
            Some("rtree") => false,
            Some("rtree_i32") => true,
            _ => return Ok(None),
        };
        if sql.contains('+') {
            return Ok(None); // auxiliary columns live in `NAME_rowid`: not refilled here
        }
        let node_table = format!("{name}_node");
        let Some(root) = self.schema_root(&node_table) else {
            return Ok(None);
        };
        let mut nodes = BTreeMap::new();
        let mut damaged = 0u64;
        for event in TableRows::new(self.db, Some(root), std::iter::empty()) {
            let RowEvent::Row(row) = event else {
                damaged += 1;
                continue;
            };
            let (record, complete) = row.record();
            damaged += u64::from(!complete);
            if let (Some(n), Some(Value::Blob(b))) = (row.rowid(), record.get(1)) {
                nodes.insert(n, b.clone());
            }
        }
        let columns = self.out.columns(name)?;
        let columns: Vec<&str> = columns.iter().map(String::as_str).collect();
        let dims = columns.len().saturating_sub(1) / 2;
        let found = reconstruct::rtree_rows(&nodes, dims, int32);
        let (mut rows, mut refused) = (0u64, 0u64);
        self.out.conn.execute_batch("BEGIN")?;
        for r in &found.rows {
            let mut values = vec![SqlValue::Integer(r.id)];
            values.extend(r.coords.iter().map(|c| match c {
                reconstruct::Coord::Real(f) => SqlValue::Real(f64::from(*f)),
                reconstruct::Coord::Int(i) => SqlValue::Integer(i64::from(*i)),
            }));
            match self.out.insert(name, None, None, &columns, &values) {
                Ok(Inserted::Ok) => rows += 1,
                _ => refused += 1,
            }
        }
        self.out.conn.execute_batch("COMMIT")?;
        let tree = self.shadow_damage(root, &node_table);
        if !found.defects.is_empty() || refused + damaged > 0 || tree.is_some() {
            self.fts_loss.push(format!(
                "R-tree `{name}`: {rows} rows rebuilt from `{node_table}`; {refused} refused, {damaged} node blobs damaged{}; node defects: {}",
                tree.map_or(String::new(), |t| format!("; {t}")),
                if found.defects.is_empty() { "none".to_string() } else { found.defects.join("; ") }
            ));
        }
        Ok(Some((
            "rebuilt",
            format!("refilled from the node blobs of `{node_table}` in the source: {rows} rows"),
        )))
    }

    /// Refills an FTS table from the rows of its own `NAME_content` shadow table in the
    /// source: rowid, then the columns in order. The new table indexes them afresh.
    fn refill_fts(&mut self, name: &str) -> rusqlite::Result<(&'static str, String)> {
        let shadow = format!("{name}_content");
        let Some(root) = self.schema_root(&shadow) else {
            self.fts_loss.push(format!("full-text table `{name}`: its stored text (`{shadow}`) is not in the schema; the table is left empty"));
            return Ok(("created", format!("`{shadow}` is missing: left empty")));
        };
        let columns = self.out.columns(name)?;
        let columns: Vec<&str> = columns.iter().map(String::as_str).collect();
        let (mut rows, mut refused, mut unreadable, mut damaged) = (0u64, 0u64, 0u64, 0u64);
        self.out.conn.execute_batch("BEGIN")?;
        for event in TableRows::new(self.db, Some(root), std::iter::empty()) {
            let RowEvent::Row(row) = event else {
                unreadable += 1;
                continue;
            };
            let (record, complete) = row.record();
            damaged += u64::from(!complete);
            let values: Vec<SqlValue<'_>> = crate::fts::content_columns(&record)
                .iter()
                .chain(std::iter::repeat(&Value::Null))
                .take(columns.len())
                .map(|v| SqlValue::from_value(v, self.enc))
                .collect();
            match self
                .out
                .insert(name, Some("rowid"), row.rowid(), &columns, &values)
            {
                Ok(Inserted::Ok) => rows += 1,
                _ => refused += 1,
            }
        }
        self.out.conn.execute_batch("COMMIT")?;
        let tree = self.shadow_damage(root, &shadow);
        if refused + unreadable + damaged > 0 || tree.is_some() {
            self.fts_loss.push(format!(
                "full-text table `{name}`: {rows} rows of its stored text rebuilt ({damaged} with damaged text); {unreadable} cells unreadable, {refused} rows refused{}",
                tree.map_or(String::new(), |t| format!("; {t}"))
            ));
        }
        Ok((
            "rebuilt",
            format!("refilled from its own stored text (`{shadow}` in the source): {rows} rows, indexed afresh"),
        ))
    }

    /// Lists each table a chosen profile expects but the schema lacks, as `missing`. With
    /// a damaged schema that is loss (its row may be what was lost); with an intact one, a
    /// warning (the application may never have created it).
    fn note_missing_tables(&mut self, profiles: &[crate::profiles::Profile]) {
        let schema_damaged = !self.schema.findings.is_empty() || self.schema_rows_scanned > 0;
        for p in profiles {
            for name in p.detect.tables.iter().chain(&p.expect) {
                if self
                    .tables
                    .iter()
                    .any(|t| t.name.eq_ignore_ascii_case(name))
                {
                    continue;
                }
                let reason = format!("expected by profile `{}`; not in the schema", p.name);
                if schema_damaged {
                    self.missing_loss.push(format!(
                        "table `{name}` (expected by profile `{}`) is missing: the schema is damaged and may have lost it",
                        p.name
                    ));
                } else {
                    self.warnings.push(format!(
                        "table `{name}` (expected by profile `{}`) is not in the schema; the schema is intact, so the application may never have created it",
                        p.name
                    ));
                }
                self.tables.push(TableRun {
                    name: name.clone(),
                    root: None,
                    status: "missing",
                    reason: Some(reason),
                    target: None,
                    loss: TableLoss::default(),
                    bounds: None,
                    rejected_rowids: BTreeSet::new(),
                    written_rowids: Vec::new(),
                    partial_refused: 0,
                });
            }
        }
    }

    /// Placeholder parents for children whose parent row is lost (declared foreign keys
    /// and the chosen profiles), registered in `salvage_placeholders`.
    fn synthesize_placeholders(&mut self) -> rusqlite::Result<()> {
        let names: Vec<String> = self.targets.iter().map(|t| t.shape.name.clone()).collect();
        let profiles = crate::profiles::choose(&self.profile, &names).unwrap_or_default();
        self.profiles_used = profiles.iter().map(|p| p.name.clone()).collect();
        self.note_missing_tables(&profiles);
        let shapes: Vec<TableShape> = self.targets.iter().map(|t| t.shape.clone()).collect();
        let rels = crate::placeholders::relationships(&self.out, &shapes, &profiles)?;
        let mut taken = self.taken_names();
        taken.extend(self.lost_and_found.iter().map(|n| n.to_ascii_lowercase()));
        self.out.conn.execute_batch("BEGIN")?;
        let outcome = crate::placeholders::synthesize(&self.out, &rels, &shapes, &taken)?;
        self.out.conn.execute_batch("COMMIT")?;
        for m in &outcome.made {
            if let Some(t) = self
                .tables
                .iter_mut()
                .find(|t| t.name.eq_ignore_ascii_case(&m.table))
            {
                t.loss.placeholders += 1;
            }
        }
        self.placeholders = outcome;
        self.parent_count_hints(&rels);
        Ok(())
    }

    /// Where a relationship says a parent column counts its children (a profile's `count`
    /// rule, e.g. a session's `message_count`) and the child table lost rows: how many
    /// children the surviving parents count beyond those recovered. A hint, not a bound
    /// (the application may not keep the count exact).
    fn parent_count_hints(&mut self, rels: &[reconstruct::Relationship]) {
        for rel in rels {
            let (Some(column), [child_key], [parent_key]) = (
                rel.fills
                    .iter()
                    .find(|(_, f)| *f == reconstruct::Fill::Count)
                    .map(|(c, _)| c),
                rel.child_columns.as_slice(),
                rel.parent_columns.as_slice(),
            ) else {
                continue;
            };
            let Some(child) = self
                .tables
                .iter()
                .position(|t| t.name.eq_ignore_ascii_case(&rel.child) && t.bounds.is_some())
            else {
                continue;
            };
            let sql = format!(
                "WITH c AS (SELECT {ck} AS k, count(*) AS n FROM {child} GROUP BY {ck})
                 SELECT count(*), coalesce(sum(max(0, p.{col} - coalesce(c.n, 0))), 0)
                 FROM {parent} AS p LEFT JOIN c ON c.k = p.{pk}
                 WHERE typeof(p.{col}) = 'integer' AND p.{col} > coalesce(c.n, 0)",
                ck = quote(child_key),
                child = quote(&rel.child),
                col = quote(column),
                parent = quote(&rel.parent),
                pk = quote(parent_key),
            );
            let Ok((parents, missing)) = self
                .out
                .conn
                .query_row(&sql, [], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?)))
            else {
                continue;
            };
            if missing > 0 {
                if let Some(b) = self.tables.get_mut(child).and_then(|t| t.bounds.as_mut()) {
                    b.evidence.push(format!(
                        "{parents} surviving `{}` rows count {missing} more `{}` rows in `{column}` than were recovered for them (a hint, not a bound: the count may not be exact)",
                        rel.parent, rel.child
                    ));
                }
            }
        }
    }

    /// Inserts one row through SQL, counting what happened to it.
    fn insert_row(
        &mut self,
        tt: &TableTarget,
        writer: &TableWriter<'_>,
        row: &RecoveredRow<'a>,
        loss: &mut TableLoss,
    ) -> rusqlite::Result<()> {
        let (record, complete) = row.record();
        let mapped = tt.shape.map_record(row.rowid(), record);
        match writer.insert(&self.out, self.enc, row.rowid(), &mapped.values)? {
            Inserted::Ok => {
                match row.provenance {
                    Provenance::Cell { .. } => loss.from_tree += 1,
                    Provenance::Orphan { .. } => loss.from_orphans += 1,
                }
                if let (Some(rowid), Some(t)) = (
                    row.rowid(),
                    self.tables
                        .iter_mut()
                        .find(|t| t.name.eq_ignore_ascii_case(&tt.shape.name)),
                ) {
                    t.written_rowids.push(rowid);
                }
                if !complete || mapped.surplus > 0 {
                    loss.damaged_rows += 1;
                }
            }
            Inserted::Conflict(reason) => {
                loss.conflicts += 1;
                self.conflicts.push(ConflictReport {
                    table: tt.shape.name.clone(),
                    rowid: row.rowid(),
                    dropped: describe(&row.provenance),
                    reason,
                });
            }
            Inserted::Rejected(reason) => {
                loss.rejected += 1;
                if let (Some(rowid), Some(t)) = (
                    row.rowid(),
                    self.tables
                        .iter_mut()
                        .find(|t| t.name.eq_ignore_ascii_case(&tt.shape.name)),
                ) {
                    t.rejected_rowids.insert(rowid);
                }
                self.reject(tt.root, row, &reason)?;
            }
        }
        Ok(())
    }

    /// Tables whose rows can be written straight into the file: rowid tables with no
    /// index that SQLite keeps for a constraint (UNIQUE, or a PRIMARY KEY that is not the
    /// rowid), so that nothing but the table's own b-tree must change. Returns, per table
    /// index, the output root page.
    fn bulk_candidates(&self) -> rusqlite::Result<Vec<(usize, u32)>> {
        let mut out = Vec::new();
        for (ti, t) in self.tables.iter().enumerate() {
            let Some(tt) = t.target.and_then(|i| self.targets.get(i)) else {
                continue;
            };
            if tt.shape.without_rowid || t.loss.root_lost || tt.root.is_none() {
                continue;
            }
            let (indexes, root): (i64, Option<i64>) = self.out.conn.query_row(
                "SELECT (SELECT count(*) FROM sqlite_schema WHERE type = 'index' AND tbl_name = ?1 COLLATE NOCASE),
                        (SELECT rootpage FROM sqlite_schema WHERE type = 'table' AND name = ?1 COLLATE NOCASE)",
                [&t.name],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )?;
            if let (0, Some(root)) = (indexes, root.and_then(|r| u32::try_from(r).ok())) {
                out.push((ti, root));
            }
        }
        Ok(out)
    }

    /// The indexes of a bulk-loaded table that the bulk writer builds itself: created now
    /// on the still empty table (so that SQLite owns their root pages and maintains them for
    /// rows inserted later), kept when they are plain (one column of the table, BINARY
    /// collation, ascending, not UNIQUE, not partial, not the rowid), dropped otherwise
    /// (SQLite builds those after the load).
    fn prebuild_indexes(&mut self, shape: &TableShape) -> rusqlite::Result<Vec<Prebuilt>> {
        let mut out = Vec::new();
        let order = shape.record_order();
        let alias = shape.rowid_alias();
        let rows: Vec<(String, String)> = self
            .schema
            .rows
            .iter()
            .filter(|r| {
                r.kind == pager::SchemaKind::Index && r.tbl_name.eq_ignore_ascii_case(&shape.name)
            })
            .filter_map(|r| Some((r.name.clone(), r.sql.clone()?)))
            .collect();
        for (name, sql) in rows {
            if self.out.create_object(&sql).is_err() {
                continue;
            }
            let plain: Option<(i64, u32)> = (|| {
                let (unique, partial): (i64, i64) = self.out.conn.query_row(
                    "SELECT \"unique\", partial FROM pragma_index_list(?2) WHERE name = ?1",
                    [&name, &shape.name],
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )?;
                let mut stmt = self.out.conn.prepare(
                    "SELECT cid, \"desc\", coll FROM pragma_index_xinfo(?1) WHERE key = 1",
                )?;
                let keys: Vec<(i64, i64, Option<String>)> = stmt
                    .query_map([&name], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
                    .collect::<Result<_, _>>()?;
                let root: i64 = self.out.conn.query_row(
                    "SELECT rootpage FROM sqlite_schema WHERE name = ?1",
                    [&name],
                    |r| r.get(0),
                )?;
                Ok::<_, rusqlite::Error>(match keys.as_slice() {
                    [(cid, 0, Some(coll))]
                        if unique == 0 && partial == 0 && coll.eq_ignore_ascii_case("BINARY") =>
                    {
                        Some((*cid, u32::try_from(root).unwrap_or(0)))
                    }
                    _ => None,
                })
            })()?;
            let position = plain.and_then(|(cid, root)| {
                let cid = usize::try_from(cid).ok()?;
                if Some(cid) == alias || root == 0 {
                    return None;
                }
                order.iter().position(|c| *c == cid).map(|p| (p, root))
            });
            match position {
                Some((position, root)) => out.push(Prebuilt {
                    name,
                    root,
                    position,
                }),
                None => self
                    .out
                    .conn
                    .execute_batch(&format!("DROP INDEX {}", quote(&name)))?,
            }
        }
        Ok(out)
    }

    /// Writes the tree rows of every bulk candidate straight into the output file. Rows
    /// that cannot be appended as they are (out of rowid order, damaged, or refused by a
    /// NOT NULL column) are returned to go through SQL.
    fn bulk_load(&mut self) -> Result<BTreeMap<usize, Vec<RecoveredRow<'a>>>, Error> {
        let dberr = |e: rusqlite::Error| Error::Database(e.to_string());
        let candidates = self.bulk_candidates().map_err(dberr)?;
        let mut deferred: BTreeMap<usize, Vec<RecoveredRow<'a>>> = BTreeMap::new();
        if candidates.is_empty() {
            return Ok(deferred);
        }
        let db = self.db;
        let page_size = db.page_size().get();
        let jobs: Vec<(usize, u32, TableTarget)> = candidates
            .into_iter()
            .filter_map(|(ti, root)| {
                let target = self.tables.get(ti)?.target?;
                Some((ti, root, self.targets.get(target)?.clone()))
            })
            .collect();
        // Plain single-column indexes of these tables are built here too (see
        // `prebuild_indexes`); the rest are created by SQLite after the load.
        let mut prebuilt: Vec<Vec<Prebuilt>> = Vec::with_capacity(jobs.len());
        for (_, _, tt) in &jobs {
            prebuilt.push(self.prebuild_indexes(&tt.shape).map_err(dberr)?);
        }
        let progress = self.progress;
        let read = self.read;
        let mut written: Vec<(usize, u64, u64, Vec<i64>)> = Vec::new();
        let mut reindex: Vec<String> = Vec::new();
        self.out
            .with_file_closed(|path| {
                let mut writer = crate::bulk::BulkWriter::open(path, page_size)?;
                for ((ti, root, tt), indexes) in jobs.iter().zip(prebuilt.iter_mut()) {
                    progress.say(&format!("recovering `{}`", tt.shape.name));
                    let mut entries: Vec<Option<crate::bulk::IndexEntries>> = indexes
                        .iter()
                        .map(|_| Some(crate::bulk::IndexEntries::default()))
                        .collect();
                    let mut table = writer.table(*root);
                    let appendable = Appendable::new(&tt.shape);
                    let mut unreadable = 0u64;
                    let mut later = Vec::new();
                    let mut rowids = Vec::new();
                    for event in TableRows::new(db, tt.root, std::iter::empty()) {
                        let row = match event {
                            RowEvent::Row(row) => {
                                read(row.raw.payload.len() as u64 + 64);
                                row
                            }
                            RowEvent::Unreadable { .. } => {
                                unreadable += 1;
                                continue;
                            }
                        };
                        match row.rowid() {
                            Some(rowid) if table.accepts(rowid) && appendable.accepts(&row) => {
                                table.push(rowid, &row.raw.payload)?;
                                rowids.push(rowid);
                                for (index, slot) in indexes.iter().zip(entries.iter_mut()) {
                                    let Some(e) = slot else { continue };
                                    let value = pager::record::column_raw(
                                        &row.raw.payload,
                                        row.raw.location,
                                        index.position,
                                    );
                                    // A value this builder does not order, or a column the record
                                    // lacks (its default applies): SQLite rebuilds that index.
                                    let pushed = value
                                        .is_some_and(|(t, body)| e.push(t.code(), body, rowid));
                                    if !pushed {
                                        *slot = None;
                                    }
                                }
                            }
                            _ => later.push(row),
                        }
                    }
                    let rows = table.finish()?;
                    for (index, slot) in indexes.iter().zip(entries) {
                        match slot {
                            Some(e) => writer.index(index.root, e)?,
                            None => reindex.push(index.name.clone()),
                        }
                    }
                    written.push((*ti, rows, unreadable, rowids));
                    deferred.insert(*ti, later);
                }
                writer.finish()
            })
            .map_err(Error::Database)?;
        for name in reindex {
            self.out
                .conn
                .execute_batch(&format!("REINDEX {}", quote(&name)))
                .map_err(dberr)?;
        }
        for built in prebuilt.iter().flatten() {
            self.objects.push(SchemaObject {
                kind: "index".into(),
                name: built.name.clone(),
                status: "created",
                reason: None,
            });
            self.prebuilt_indexes
                .insert(built.name.to_ascii_lowercase());
        }
        for (ti, rows, unreadable, rowids) in written {
            if let Some(t) = self.tables.get_mut(ti) {
                t.loss.from_tree += rows;
                t.loss.unreadable_cells += unreadable;
                t.written_rowids = rowids;
            }
        }
        Ok(deferred)
    }

    /// Keeps a row the output's constraints refused, in `lost_and_found`, so it is not lost.
    fn reject(
        &mut self,
        root: Option<PageNo>,
        row: &RecoveredRow<'_>,
        reason: &str,
    ) -> rusqlite::Result<()> {
        self.warnings.push(format!(
            "a row of page {} was refused by a constraint and kept in lost_and_found: {reason}",
            row.provenance.page().get()
        ));
        let (record, _) = row.record();
        let name = self.ensure_lost_and_found(record.len())?;
        self.insert_lost(&name, root, row)
    }

    fn ensure_lost_and_found(&mut self, width: usize) -> rusqlite::Result<String> {
        if let Some(name) = &self.lost_and_found {
            // Widen if needed.
            let have: usize = self
                .out
                .conn
                .prepare(&format!("PRAGMA table_info({})", quote(name)))?
                .query_map([], |_| Ok(()))?
                .count();
            for i in have.saturating_sub(4)..width {
                self.out.conn.execute_batch(&format!(
                    "ALTER TABLE {} ADD COLUMN {}",
                    quote(name),
                    quote(&format!("c{i}"))
                ))?;
            }
            return Ok(name.clone());
        }
        let taken = self.taken_names();
        let name = std::iter::once("lost_and_found".to_string())
            .chain((0..).map(|i| format!("lost_and_found_{i}")))
            .find(|n| !taken.contains(n))
            .unwrap_or_else(|| "lost_and_found".into());
        let cols: Vec<String> = (0..width).map(|i| quote(&format!("c{i}"))).collect();
        let sep = if cols.is_empty() { "" } else { ", " };
        self.out.conn.execute_batch(&format!(
            "CREATE TABLE {}(rootpgno INTEGER, pgno INTEGER, nfield INTEGER, id INTEGER{sep}{})",
            quote(&name),
            cols.join(", ")
        ))?;
        self.lost_and_found = Some(name.clone());
        Ok(name)
    }

    fn insert_lost(
        &mut self,
        name: &str,
        root: Option<PageNo>,
        row: &RecoveredRow<'_>,
    ) -> rusqlite::Result<()> {
        let (record, _) = row.record();
        let mut names = vec![
            "rootpgno".to_string(),
            "pgno".into(),
            "nfield".into(),
            "id".into(),
        ];
        names.extend((0..record.len()).map(|i| format!("c{i}")));
        let mut values: Vec<SqlValue<'_>> = vec![
            root.map_or(SqlValue::Null, |r| SqlValue::Integer(i64::from(r.get()))),
            SqlValue::Integer(i64::from(row.provenance.page().get())),
            SqlValue::Integer(record.len() as i64),
            row.rowid().map_or(SqlValue::Null, SqlValue::Integer),
        ];
        values.extend(record.iter().map(|v| SqlValue::from_value(v, self.enc)));
        let quoted: Vec<String> = names.iter().map(|n| quote(n)).collect();
        let ph: Vec<String> = (1..=values.len()).map(|i| format!("?{i}")).collect();
        let sql = format!(
            "INSERT INTO {} ({}) VALUES ({})",
            quote(name),
            quoted.join(", "),
            ph.join(", ")
        );
        self.out
            .conn
            .prepare_cached(&sql)?
            .execute(rusqlite::params_from_iter(values.iter()))?;
        self.lost_rows += 1;
        Ok(())
    }

    fn load_lost_and_found(&mut self) -> rusqlite::Result<()> {
        let groups: Vec<OrphanGroup> = self.plan.lost_and_found.clone();
        if groups.is_empty() {
            return Ok(());
        }
        // First pass: the widest record decides the table's width.
        let width = TableRows::new(self.db, None, groups.iter())
            .filter_map(|e| match e {
                RowEvent::Row(r) => Some(r.record().0.len()),
                RowEvent::Unreadable { .. } => None,
            })
            .max()
            .unwrap_or(0);
        let name = self.ensure_lost_and_found(width)?;
        self.out.conn.execute_batch("BEGIN")?;
        for event in TableRows::new(self.db, None, groups.iter()) {
            if let RowEvent::Row(row) = event {
                self.insert_lost(&name, None, &row)?;
                self.orphan_lost_rows += 1;
            }
        }
        self.out.conn.execute_batch("COMMIT")
    }

    /// Root page in the source of the schema object named `name`.
    fn schema_root(&self, name: &str) -> Option<PageNo> {
        self.schema
            .rows
            .iter()
            .find(|r| r.name.eq_ignore_ascii_case(name))
            .and_then(|r| r.rootpage)
    }

    /// The records of a small internal table of the source (`sqlite_stat1`,
    /// `sqlite_sequence`), as stored.
    fn internal_records(&self, name: &str) -> Vec<Vec<Value>> {
        let Some(root) = self.schema_root(name) else {
            return Vec::new();
        };
        TableRows::new(self.db, Some(root), std::iter::empty())
            .filter_map(|e| match e {
                RowEvent::Row(row) => Some(row.record().0),
                RowEvent::Unreadable { .. } => None,
            })
            .collect()
    }

    /// Row counts `sqlite_stat1` recorded at the source's last ANALYZE (the first number of
    /// each index's `stat`), by lower-cased table name.
    fn source_stat1_rows(&self) -> BTreeMap<String, u64> {
        let mut out = BTreeMap::new();
        for record in self.internal_records("sqlite_stat1") {
            let (Some(Value::Text(tbl)), Some(Value::Text(stat))) = (record.first(), record.get(2))
            else {
                continue;
            };
            let (Some(tbl), Some(stat)) = (self.enc.decode(tbl), self.enc.decode(stat)) else {
                continue;
            };
            if let Some(n) = stat
                .split_whitespace()
                .next()
                .and_then(|n| n.parse::<u64>().ok())
            {
                let e = out.entry(tbl.to_lowercase()).or_insert(0);
                *e = (*e).max(n);
            }
        }
        out
    }

    /// The source's `sqlite_sequence` counters, by lower-cased table name.
    fn source_sequences(&self) -> BTreeMap<String, i64> {
        let mut out = BTreeMap::new();
        for record in self.internal_records("sqlite_sequence") {
            if let (Some(Value::Text(name)), Some(Value::Integer(seq))) =
                (record.first(), record.get(1))
            {
                if let Some(name) = self.enc.decode(name) {
                    out.insert(name.to_lowercase(), *seq);
                }
            }
        }
        out
    }

    /// Carries `sqlite_sequence` counters over: never below what the rows now need.
    fn carry_sequence(&mut self) -> rusqlite::Result<()> {
        if !self.out.has_table("sqlite_sequence") {
            return Ok(());
        }
        for record in self.internal_records("sqlite_sequence") {
            let (Some(Value::Text(name)), Some(Value::Integer(seq))) =
                (record.first(), record.get(1))
            else {
                continue;
            };
            let name_value = Value::Text(name.clone());
            let name = SqlValue::from_value(&name_value, self.enc);
            let changed = self.out.conn.execute(
                "UPDATE sqlite_sequence SET seq = max(seq, ?2) WHERE name = ?1",
                rusqlite::params![name, seq],
            )?;
            if changed == 0 {
                self.out.conn.execute(
                    "INSERT INTO sqlite_sequence(name, seq) VALUES (?1, ?2)",
                    rusqlite::params![name, seq],
                )?;
            }
        }
        Ok(())
    }

    /// Indexes, then views, then triggers (which therefore never fire during the load).
    fn create_objects(&mut self, kinds: &[pager::SchemaKind]) {
        let created: BTreeSet<String> = self
            .tables
            .iter()
            .filter(|t| t.target.is_some() || t.status == "skipped")
            .map(|t| t.name.to_ascii_lowercase())
            .collect();
        for kind in kinds.iter().cloned() {
            for r in self.schema.rows.iter().filter(|r| r.kind == kind) {
                if self.prebuilt_indexes.contains(&r.name.to_ascii_lowercase()) {
                    continue;
                }
                let Some(sql) = &r.sql else {
                    // Automatic indexes come with their table's constraints.
                    continue;
                };
                let table_known = kind == pager::SchemaKind::View
                    || created.contains(&r.tbl_name.to_ascii_lowercase());
                let (status, reason) = if !table_known {
                    (
                        "skipped",
                        Some(format!("its table `{}` was not created", r.tbl_name)),
                    )
                } else {
                    match self.out.create_object(sql) {
                        Ok(()) => ("created", None),
                        Err(e) => ("failed", Some(e)),
                    }
                };
                if status == "failed" {
                    self.warnings.push(format!(
                        "the {} `{}` could not be re-created: {}",
                        kind.as_str(),
                        r.name,
                        reason.clone().unwrap_or_default()
                    ));
                }
                self.objects.push(SchemaObject {
                    kind: kind.as_str().to_string(),
                    name: r.name.clone(),
                    status,
                    reason,
                });
            }
        }
    }

    /// Checks the output: SQLite's integrity check, and every table holds exactly the
    /// rows this run wrote.
    fn verify(&mut self) -> bool {
        self.progress.say("verifying the output");
        // Every page is read once: a small cache recycles its pages instead of allocating
        // (and faulting in) new memory for each.
        let _ = self.out.conn.pragma_update(None, "cache_size", -2048);
        let check: Result<Vec<String>, _> = self
            .out
            .conn
            .prepare("PRAGMA integrity_check")
            .and_then(|mut s| s.query_map([], |r| r.get::<_, String>(0))?.collect());
        let ok = match check {
            Ok(lines) if lines == ["ok"] => {
                self.verified_evidence
                    .push("PRAGMA integrity_check on the output: ok".into());
                true
            }
            Ok(lines) => {
                self.verified_evidence.push(format!(
                    "PRAGMA integrity_check on the output: {}",
                    lines.join("; ")
                ));
                false
            }
            Err(e) => {
                self.verified_evidence
                    .push(format!("PRAGMA integrity_check could not run: {e}"));
                false
            }
        };
        let mut counts_ok = true;
        for t in self.tables.iter().filter(|t| t.target.is_some()) {
            let n: Result<i64, _> = self.out.conn.query_row(
                &format!("SELECT count(*) FROM {}", quote(&t.name)),
                [],
                |r| r.get(0),
            );
            let written = t.loss.written() + t.loss.placeholders + t.loss.partial_rows;
            let n = n.ok();
            if n != i64::try_from(written).ok() {
                counts_ok = false;
                let held = n.map_or("an unknown number of".to_string(), |n| n.to_string());
                self.verified_evidence.push(format!(
                    "table `{}` holds {held} rows; {written} were written",
                    t.name
                ));
            }
        }
        if counts_ok {
            self.verified_evidence.push(format!(
                "every table holds exactly the rows written ({} tables)",
                self.tables.iter().filter(|t| t.target.is_some()).count()
            ));
        }
        ok && counts_ok
    }

    fn report(
        &self,
        wal: &WalReport,
        journal: &JournalReport,
        verified: bool,
        source: SourceProof,
    ) -> LossReport {
        let db = self.db;
        let fallback;
        let survey = match &self.survey {
            Some(s) => s,
            None => {
                fallback = pager::survey(db);
                &fallback
            }
        };
        let losses: Vec<(String, TableLoss)> = self
            .tables
            .iter()
            .filter(|t| t.target.is_some())
            .map(|t| (t.name.clone(), t.loss.clone()))
            .collect();
        let mut assessment = reconstruct::assess(
            survey,
            &self.plan,
            &losses,
            self.orphan_lost_rows,
            db.findings(),
            verified,
        );
        if let Some(l) = &wal.loss {
            assessment.evidence.push(l.clone());
        }
        if let Some(l) = &journal.loss {
            assessment.evidence.push(l.clone());
        }
        assessment.evidence.extend(self.placeholder_evidence());
        assessment.evidence.extend(self.fts_loss.iter().cloned());
        assessment
            .evidence
            .extend(self.missing_loss.iter().cloned());
        for t in &self.tables {
            if t.loss.partial_rows > 0 {
                assessment.evidence.push(format!(
                    "{} lost `{}` rows rebuilt from their index entries and full-text copies alone (other columns are NULL); registered in `{}`",
                    t.loss.partial_rows,
                    t.name,
                    self.partial_registry.as_deref().unwrap_or("salvage_partial_rows")
                ));
            }
            if t.partial_refused > 0 {
                assessment.evidence.push(format!(
                    "{} lost `{}` rows proven by index entries or full-text copies could not be rebuilt: the table's constraints refused what the evidence holds; their known values are kept in `{}`",
                    t.partial_refused,
                    t.name,
                    self.partial_registry.as_deref().unwrap_or("salvage_partial_rows")
                ));
            }
        }
        for t in &self.tables {
            if let Some(b) = t
                .bounds
                .as_ref()
                .filter(|b| b.lower > 0 || b.upper != Some(0))
            {
                assessment.evidence.push(format!(
                    "table `{}`: at least {} rows lost{}{}",
                    t.name,
                    b.lower,
                    b.upper
                        .map_or(", how many more is unknown".to_string(), |u| format!(
                            ", at most {u}"
                        )),
                    match (b.proven_by_index, b.proven_by_text) {
                        (0, 0) => String::new(),
                        (i, 0) => format!(" ({i} proven by index entries)"),
                        (0, t) => format!(" ({t} proven by full-text copies)"),
                        (i, t) =>
                            format!(" ({i} proven by index entries, {t} more by full-text copies)"),
                    }
                ));
            }
        }
        for t in self.tables.iter().filter(|t| t.status == "inferred") {
            assessment.evidence.push(format!(
                "table `{}` holds {} rows of a table whose schema row is lost; its name and columns are inferred",
                t.name,
                t.loss.written()
            ));
        }
        for t in self.tables.iter().filter(|t| t.status == "failed") {
            assessment.evidence.push(format!(
                "table `{}` could not be recovered: {}",
                t.name,
                t.reason.clone().unwrap_or_default()
            ));
        }
        let loss_detected = !assessment.evidence.is_empty();
        let (page_size_source, page_size_evidence) = crate::report::page_size_decision(db);
        let mut damaged = Listed::default();
        for (page, why) in crate::report::damaged_page_reasons(db, survey) {
            damaged.push(DamagedPage {
                page: page.get(),
                class: survey.page_map.class(page).map_or("past_end", |c| c.name()),
                why,
            });
        }
        let tables = self
            .tables
            .iter()
            .map(|t| {
                let tree = t
                    .root
                    .and_then(|root| survey.trees.iter().find(|tr| tr.root == root));
                let groups = t
                    .target
                    .and_then(|i| self.plan.attributed.get(i))
                    .map(|a| a.iter().map(group_report).collect())
                    .unwrap_or_default();
                TableReport {
                    name: t.name.clone(),
                    status: t.status,
                    reason: t.reason.clone(),
                    root: t.root.map(PageNo::get),
                    rows_written: t.loss.written(),
                    rows_from_tree: t.loss.from_tree,
                    rows_from_orphans: t.loss.from_orphans,
                    rows_damaged: t.loss.damaged_rows,
                    cells_unreadable: t.loss.unreadable_cells,
                    conflicts: t.loss.conflicts,
                    rejected_to_lost_and_found: t.loss.rejected,
                    placeholders: t.loss.placeholders,
                    rows_partial: t.loss.partial_rows,
                    partial_refused: t.partial_refused,
                    lost_rows: t.bounds.as_ref().map(|b| LostRows {
                        lower_bound: b.lower,
                        upper_bound: b.upper,
                        proven_by_index: b.proven_by_index,
                        proven_by_text: b.proven_by_text,
                        evidence: b.evidence.clone(),
                    }),
                    lost_subtrees: tree
                        .map(|tr| {
                            tr.lost
                                .iter()
                                .map(|l| LostSubtree {
                                    parent: l.parent.get(),
                                    child: l.child,
                                    rowid_above: l.bounds.lower,
                                    rowid_up_to: l.bounds.upper,
                                })
                                .collect()
                        })
                        .unwrap_or_default(),
                    orphan_groups: groups,
                    findings: FindingList::new(
                        tree.map(|tr| tr.findings.as_slice()).unwrap_or_default(),
                    ),
                }
            })
            .collect();
        let mut warnings = self.warnings.clone();
        warnings.extend(journal.warning.iter().cloned());
        warnings.extend(assessment.evidence.iter().cloned());
        LossReport {
            format_version: FORMAT_VERSION,
            tool: crate::report::Tool {
                name: "salvage",
                version: env!("CARGO_PKG_VERSION"),
            },
            source,
            wal: wal.clone(),
            journal: journal.clone(),
            geometry: Geometry {
                page_size: db.page_size().get(),
                page_size_source,
                page_size_evidence,
                reserved_space: db.reserved_space(),
                text_encoding: db.encoding().to_string(),
                text_encoding_source: match db.encoding_source() {
                    pager::EncodingSource::Header => "header",
                    pager::EncodingSource::Inferred { .. } => "inferred",
                },
                page_count: db.page_count(),
            },
            pages: PageSummary {
                by_class: survey
                    .page_map
                    .counts()
                    .into_iter()
                    .map(|(c, n)| (c.name(), n))
                    .collect(),
                orphan_btree_pages: survey.page_map.orphans().count() as u32,
                damaged,
            },
            schema: SchemaSource {
                rows: survey.schema.rows.len(),
                rows_found_by_scan: self.schema_rows_scanned,
                findings: FindingList::new(&survey.schema.findings),
            },
            tables,
            lost_and_found: LostAndFound {
                table: self.lost_and_found.clone().filter(|_| self.lost_rows > 0),
                rows: self.lost_rows,
                groups: self
                    .plan
                    .lost_and_found
                    .iter()
                    .map(|g| {
                        group_report(&Attribution {
                            group: g.clone(),
                            evidence: Vec::new(),
                            confidence: reconstruct::Confidence::Low,
                        })
                    })
                    .map(|mut g| {
                        g.confidence = None;
                        g
                    })
                    .collect(),
                index_groups: self.plan.index_groups.len() as u64,
            },
            placeholders: self.placeholder_report(),
            partial_rows: PartialRowsReport {
                registry: self.partial_registry.clone(),
                rows: self.tables.iter().map(|t| t.loss.partial_rows).sum(),
                refused: self.tables.iter().map(|t| t.partial_refused).sum(),
            },
            schema_objects: self
                .objects
                .iter()
                .map(|o| SchemaObject {
                    kind: o.kind.clone(),
                    name: o.name.clone(),
                    status: o.status,
                    reason: o.reason.clone(),
                })
                .collect(),
            conflicts: Listed {
                count: self.conflicts.count,
                listed: self
                    .conflicts
                    .listed
                    .iter()
                    .map(|c| ConflictReport {
                        table: c.table.clone(),
                        rowid: c.rowid,
                        dropped: c.dropped.clone(),
                        reason: c.reason.clone(),
                    })
                    .collect(),
            },
            flags: Flags {
                complete: !loss_detected && verified,
                partial: loss_detected,
                loss_detected,
                verified,
            },
            evidence: FlagEvidence {
                loss: assessment.evidence,
                verified: self.verified_evidence.clone(),
            },
            warnings,
            output: OutputState {
                committed: false,
                location: "none",
            },
            run: RunPaths {
                source_path: String::new(),
                dest_path: String::new(),
                report_path: String::new(),
                wal_path: None,
                journal_path: None,
            },
        }
    }
}

/// An index the bulk writer builds (see `Run::prebuild_indexes`).
struct Prebuilt {
    name: String,
    /// Its root page in the output.
    root: u32,
    /// Position of its column in the table's records.
    position: usize,
}

/// One table's loss bounds, and the lost rows its index entries and rowid-keyed text
/// copies prove, by rowid.
struct Bounded {
    table: usize,
    bounds: reconstruct::LossBounds,
    partial: BTreeMap<i64, crate::partial::PartialRow>,
}

/// What bounding one table's loss needs (see [`compute_bounds`]).
struct BoundsInput {
    table: usize,
    /// The table's `sqlite_sequence` counter in the source, unless a recovered rowid
    /// exceeds it.
    sequence: Option<i64>,
    /// Rows `sqlite_stat1` counted at the source's last ANALYZE.
    analyzed_rows: Option<u64>,
    lost: Vec<pager::LostChild>,
    root_lost: bool,
    known: reconstruct::KnownMissing,
    rejected_rowids: BTreeSet<i64>,
    /// Rowids of the rows written into the table (not placeholders), sorted.
    rowids: Vec<i64>,
    /// The table's indexes in the source, with the column behind each key.
    indexes: Vec<crate::partial::IndexKeys>,
    /// Full-text copies of the table's text keyed by its rowid.
    copies: Vec<crate::partial::ResolvedCopy>,
}

/// Bounds the rows each damaged table lost: its lost rowid ranges against the rows
/// recovered in them, and its indexes' entries (in the source) whose rows the output lacks.
/// Reads only the source and what the load recorded, so it runs beside the output's work.
fn compute_bounds(
    db: &Database<'_>,
    inputs: Vec<BoundsInput>,
    residency: &mut Residency<'_>,
) -> Vec<Bounded> {
    let mut out = Vec::new();
    for input in inputs {
        let rows = &input.rowids;
        // Rows written with lower < rowid <= upper.
        let in_range = |lo: Option<i64>, hi: Option<i64>| {
            let from = lo.map_or(0, |lo| rows.partition_point(|r| *r <= lo));
            let to = hi.map_or(rows.len(), |hi| rows.partition_point(|r| *r <= hi));
            to.saturating_sub(from) as u64
        };
        let ranges: Vec<reconstruct::LostRange> = input
            .lost
            .iter()
            .map(|l| reconstruct::LostRange {
                lost: *l,
                recovered: in_range(l.bounds.lower, l.bounds.upper),
            })
            .collect();
        // Lost ranges sorted by their lower bound, to place an index entry's rowid.
        let mut spans: Vec<(i64, i64)> = input
            .lost
            .iter()
            .map(|l| {
                (
                    l.bounds.lower.unwrap_or(i64::MIN),
                    l.bounds.upper.unwrap_or(i64::MAX),
                )
            })
            .collect();
        spans.sort_unstable();
        let in_lost_range = |rowid: i64| {
            input.root_lost || {
                let i = spans.partition_point(|(lo, _)| *lo < rowid);
                i > 0 && spans.get(i - 1).is_some_and(|(_, hi)| rowid <= *hi)
            }
        };
        let mut missing: BTreeMap<i64, crate::partial::PartialRow> = BTreeMap::new();
        for index in &input.indexes {
            for item in pager::BtreeWalk::new(db, index.root).flatten() {
                let pager::TreeItem::Cell(cell) = item else {
                    continue;
                };
                // Only the rowid, the record's last value, is needed; it lives in the local
                // part of the payload unless the entry is huge.
                let Some(payload) = cell.cell.payload() else {
                    continue;
                };
                residency.read(payload.local.len() as u64 + 16);
                let rowid = match pager::record::last_value(payload.local, cell.location) {
                    Some(pager::ValueRef::Integer(r)) => r,
                    _ => match pager::raw_cell(db, &cell)
                        .ok()
                        .and_then(|raw| raw.decode().values.last().cloned())
                    {
                        Some(Value::Integer(r)) => r,
                        _ => continue,
                    },
                };
                // A refused row is counted as such, not again as proven by an index.
                if in_lost_range(rowid)
                    && !input.rejected_rowids.contains(&rowid)
                    && rows.binary_search(&rowid).is_err()
                {
                    // The whole entry is decoded only for a row that is gone. A damaged
                    // entry still proves the row; its values (NULL where damaged) do not.
                    let keys = pager::raw_cell(db, &cell)
                        .map(|raw| raw.decode())
                        .ok()
                        .filter(|d| d.complete)
                        .map(|d| d.values)
                        .unwrap_or_default();
                    let keys = keys.split_last().map_or(&[][..], |(_, k)| k);
                    missing.entry(rowid).or_default().add(index, keys);
                }
            }
        }
        // A full-text copy under a rowid the output lacks proves that row too, and gives its
        // text back.
        for copy in &input.copies {
            for row in copy.rows(db, |n| residency.read(n)) {
                if in_lost_range(row.rowid)
                    && !input.rejected_rowids.contains(&row.rowid)
                    && rows.binary_search(&row.rowid).is_err()
                {
                    let values = copy.row_values(&row);
                    missing.entry(row.rowid).or_default().add_text(copy, values);
                }
            }
        }
        // A counter below any rowid known to have existed (recovered, proven by an index
        // entry or a text copy, or refused) is contradicted by the file: it bounds nothing.
        let sequence = input.sequence.filter(|seq| {
            missing.keys().next_back().is_none_or(|m| m <= seq)
                && input.rejected_rowids.last().is_none_or(|r| r <= seq)
        });
        let by_index = missing.values().filter(|p| p.by_index).count() as u64;
        let mut bounds = reconstruct::bound_loss(
            &ranges,
            reconstruct::Proven {
                by_index,
                by_text: missing.len() as u64 - by_index,
            },
            input.known,
            input.root_lost,
            sequence,
        );
        // A count from the last ANALYZE is a hint, not a bound: rows may have come and gone
        // since.
        if let Some(n) = input.analyzed_rows.filter(|n| *n > rows.len() as u64) {
            bounds.evidence.push(format!(
                "sqlite_stat1 counted {n} rows at the last ANALYZE; {} are recovered, {} fewer (a hint, not a bound: rows may have changed since)",
                rows.len(),
                n - rows.len() as u64
            ));
        }
        out.push(Bounded {
            table: input.table,
            bounds,
            partial: missing,
        });
    }
    out
}

/// What decides whether a table's records can be copied as they are, worked out once per
/// table: for each record position, whether NULL is refused there.
struct Appendable {
    /// Per record position: a NOT NULL column that is not the rowid alias.
    refuses_null: Vec<bool>,
}

impl Appendable {
    fn new(shape: &TableShape) -> Appendable {
        let alias = shape.rowid_alias();
        let refuses_null = shape
            .record_order()
            .into_iter()
            .map(|col| Some(col) != alias && shape.columns.get(col).is_some_and(|c| c.not_null))
            .collect();
        Appendable { refuses_null }
    }

    /// Whether a row's record can be stored exactly as it is: whole, no wider than the
    /// table, and no NULL in a NOT NULL column (those go through SQL, which refuses them).
    fn accepts(&self, row: &RecoveredRow<'_>) -> bool {
        if !row.raw.intact {
            return false;
        }
        let payload = &row.raw.payload;
        let mut position = 0usize;
        let mut ok = true;
        let header = pager::record::visit_record_header(
            payload,
            payload.len() as u64,
            row.raw.location,
            |t| {
                let refuses = self.refuses_null.get(position).copied();
                ok &= match refuses {
                    None => false, // wider than the table
                    Some(refuses) => !(refuses && t == pager::SerialType::Null),
                };
                position += 1;
            },
        );
        header.is_ok() && ok
    }
}

fn describe(p: &Provenance) -> String {
    match p {
        Provenance::Cell { page, index } => format!("{index} of {page}"),
        Provenance::Orphan { page, index, group } => {
            format!("{index} of orphan {page} (group at page {})", group.get())
        }
    }
}

fn group_report(a: &Attribution) -> OrphanGroupReport {
    OrphanGroupReport {
        top: a.group.top.get(),
        pages: a.group.pages.len(),
        cells: a.group.cells,
        rowids: a.group.rowids.map(|(lo, hi)| [lo, hi]),
        confidence: Some(a.confidence.name()),
        evidence: a.evidence.iter().map(evidence_sentence).collect(),
    }
}

fn evidence_sentence(e: &reconstruct::Evidence) -> String {
    match e {
        reconstruct::Evidence::ChildPointer { parent } => format!("a child pointer of surviving interior {parent} points to it"),
        reconstruct::Evidence::RowidRange { parent, lower, upper } => format!(
            "its rowids lie in ({}, {}], the range surviving interior {parent} assigns to a child it can no longer reach",
            lower.map_or("-inf".into(), |v| v.to_string()),
            upper.map_or("+inf".into(), |v| v.to_string())
        ),
        reconstruct::Evidence::LostSchema { sampled } => format!(
            "no table of the schema fits its records: a table of its own is inferred from {sampled} sampled records"
        ),
        reconstruct::Evidence::Shape { sampled, fitting, runner_up } => format!(
            "{fitting} of {sampled} sampled records fit the table's columns{}",
            runner_up.as_ref().map_or(String::new(), |(n, k)| format!("; next best `{n}`: {k}"))
        ),
    }
}

/// Inserts rows into one table, with the column list fixed once.
struct TableWriter<'s> {
    name: &'s str,
    columns: Vec<&'s str>,
    /// The name under which the rowid is inserted, for rowid tables without an alias.
    rowid_name: Option<&'static str>,
}

impl<'s> TableWriter<'s> {
    fn new(shape: &'s TableShape) -> TableWriter<'s> {
        let columns: Vec<&str> = shape
            .insert_columns()
            .into_iter()
            .filter_map(|i| shape.columns.get(i).map(|c| c.name.as_str()))
            .collect();
        let rowid_name = if shape.without_rowid || shape.rowid_alias().is_some() {
            None
        } else {
            ["rowid", "_rowid_", "oid"]
                .into_iter()
                .find(|n| !shape.columns.iter().any(|c| c.name.eq_ignore_ascii_case(n)))
        };
        TableWriter {
            name: &shape.name,
            columns,
            rowid_name,
        }
    }

    fn insert(
        &self,
        out: &Output,
        enc: TextEncoding,
        rowid: Option<i64>,
        values: &[Option<Value>],
    ) -> rusqlite::Result<Inserted> {
        // Values a short record lacks are left to the column's default: the columns
        // present are always a prefix of the insert columns.
        let present = values
            .iter()
            .rposition(Option::is_some)
            .map_or(0, |i| i + 1);
        let bound: Vec<SqlValue<'_>> = values
            .iter()
            .take(present)
            .map(|v| {
                v.as_ref()
                    .map_or(SqlValue::Null, |v| SqlValue::from_value(v, enc))
            })
            .collect();
        out.insert(
            self.name,
            self.rowid_name,
            rowid,
            self.columns.get(..present).unwrap_or_default(),
            &bound,
        )
    }
}

