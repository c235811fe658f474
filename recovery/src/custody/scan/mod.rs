//! `scan`: a whole case at once. Every SQLite database under the sources (folders or
//! files) is found by its content ([`find`]), triaged as `inspect` does, and recovered
//! into one output folder that mirrors the sources' paths, on several cores, largest
//! first. Each database's result is committed as it finishes (its entry in
//! `OUT/.scan/`), so that a scan killed at any moment and run again with the same `OUT`
//! skips what is committed (checked by hash) and redoes the rest. One summary
//! (`scan.json`, `scan.csv`) lists every database with its verdict, application, rows,
//! loss and output. One bad file never ends the scan; only I/O on `OUT` does.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use crate::base::error::Error;
use crate::base::files::write_atomically;
use crate::recover::evidence::sha256_file;
use crate::report::ArchiveMember;
use crate::{Outcome, Quiet, RecoverOptions};

pub mod archive;
pub mod find;

pub use find::{discover, Discovery, Found, Kind};

/// Version of `scan.json`'s schema; changes whenever a field changes meaning or is removed.
pub const FORMAT_VERSION: u32 = 1;

/// The folder inside `OUT` holding the scan's own state: each committed entry.
const STATE: &str = ".scan";

/// What a scan is asked to do.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScanOptions {
    /// Folders (searched recursively, links not followed), files, and `.tar`, `.tar.gz`
    /// and `.zip` archives (their members spooled into `OUT/.scan/spool`).
    pub sources: Vec<PathBuf>,
    /// The output folder: new, or the folder of an earlier scan to resume.
    pub out: PathBuf,
    /// Databases worked on at once (0: one per core).
    pub jobs: usize,
    /// Commit each output even when loss is detected (`recover --allow-partial`).
    pub allow_partial: bool,
    /// Carve deleted records (`recover --carve`).
    pub carve: bool,
    /// Every version of every row the logs hold (`recover --history`).
    pub history: bool,
    /// Triage only: inspect every database, recover none.
    pub triage_only: bool,
}

/// How one database's recovery ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EntryOutcome {
    /// Recovered, verified, no loss.
    Complete,
    /// Recovered with loss, committed (`allow_partial`).
    Partial,
    /// Recovered with loss and withheld as `DEST.incomplete`.
    Withheld,
    /// Recovered, but the output failed its verification.
    NotVerified,
    /// Inspected only (`triage_only`, or a log without its database).
    Triaged,
    /// The file could not be read or recovered: `error` says why.
    Failed,
}

/// One database (or lone log) of the scan.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScanEntry {
    /// The file, as found; a member of an archive as `ARCHIVE!/MEMBER`.
    pub path: String,
    /// The source it was found under, as given.
    pub source: String,
    /// Its path inside the source.
    pub relative: String,
    /// Its size in bytes.
    pub size: u64,
    /// SHA-256 of the file, hex.
    pub sha256: Option<String>,
    /// `database`, `header_destroyed`, `lone_wal` or `lone_journal`.
    pub kind: String,
    /// The files beside it that belong to it (`-wal`, `-journal`, `-shm`).
    pub sidecars: Vec<String>,
    /// `healthy`, `damaged` or `unreadable` (`inspect`'s verdict).
    pub verdict: String,
    /// `inspect`'s findings.
    pub findings: u64,
    /// Its damaged pages.
    pub damaged_pages: u64,
    /// Pages on its freelist: where deleted records are found.
    pub free_pages: u64,
    /// What looks deliberate or abnormal (`inspect --audit`), counted.
    pub concerns: u64,
    /// The applications identified, by name.
    pub applications: Vec<String>,
    /// How its recovery ended.
    pub outcome: EntryOutcome,
    /// Loss recorded: a damaged file, a partial or withheld recovery, or a failure.
    pub loss: bool,
    /// Rows in the output.
    pub rows: Option<u64>,
    /// The output database, relative to `OUT`.
    pub output: Option<String>,
    /// Its SHA-256 once committed.
    pub output_sha256: Option<String>,
    /// The loss report (`recover`'s JSON), relative to `OUT`.
    pub report: Option<String>,
    /// Its SHA-256.
    pub report_sha256: Option<String>,
    /// The `inspect` document, relative to `OUT`.
    pub inspect: Option<String>,
    /// Of a log without its database: the database image laid out from the pages it
    /// holds (`NAME.image`, relative to `OUT`), which was triaged and recovered in its
    /// place.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    /// Its SHA-256.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_sha256: Option<String>,
    /// Why it failed, or what it is when it is not a database.
    pub error: Option<String>,
}

impl ScanEntry {
    /// The entry of a file not yet read: unreadable, failed, loss, until its triage and
    /// recovery say otherwise.
    pub fn unread(
        path: String,
        source: String,
        relative: String,
        size: u64,
        kind: &str,
    ) -> ScanEntry {
        ScanEntry {
            path,
            source,
            relative,
            size,
            sha256: None,
            kind: kind.into(),
            sidecars: Vec::new(),
            verdict: "unreadable".into(),
            findings: 0,
            damaged_pages: 0,
            free_pages: 0,
            concerns: 0,
            applications: Vec::new(),
            outcome: EntryOutcome::Failed,
            loss: true,
            rows: None,
            output: None,
            output_sha256: None,
            report: None,
            report_sha256: None,
            inspect: None,
            image: None,
            image_sha256: None,
            error: None,
        }
    }
}

/// The scan's summary: `OUT/scan.json`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScanSummary {
    /// [`FORMAT_VERSION`].
    pub format_version: u32,
    /// The sources, as given.
    pub sources: Vec<String>,
    /// Every database and lone log, by path.
    pub entries: Vec<ScanEntry>,
    /// Files that are not SQLite's, counted and skipped.
    pub skipped_files: u64,
    /// Their bytes.
    pub skipped_bytes: u64,
    /// Symbolic links, not followed.
    pub links_not_followed: u64,
    /// Files or folders that could not be read, with why.
    pub unreadable: Vec<String>,
    /// Entries taken from an earlier run of the same scan (their output checked by hash).
    pub resumed: u64,
    /// The archives among the sources, each hashed once.
    pub archives: Vec<ArchiveEntry>,
}

/// An archive among the sources.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArchiveEntry {
    /// The archive, as given.
    pub path: String,
    /// Its SHA-256, hex.
    pub sha256: String,
    /// Members that are SQLite's, spooled and scanned.
    pub kept: u64,
    /// Members that are not, counted and skipped.
    pub skipped: u64,
    /// Members not spooled (links, a path leaving the archive's root), with why.
    pub refused: Vec<String>,
}

impl ScanSummary {
    /// Whether some loss is recorded (a damaged file, a partial or withheld recovery, a
    /// failure, something unreadable).
    pub fn loss(&self) -> bool {
        !self.unreadable.is_empty() || self.entries.iter().any(|e| e.loss)
    }
}

/// What a scan tells as it goes.
pub trait ScanObserver: Sync {
    /// The databases found, and their bytes.
    fn found(&self, _databases: u64, _bytes: u64) {}
    /// One database done (or taken from an earlier run).
    fn done(&self, _entry: &ScanEntry) {}
}

impl ScanObserver for Quiet {}

/// A scan made ready, before any database is worked on: its request checked, its
/// archives spooled, its databases found. Each [`ScanTask`] is then run on its own, here
/// on threads ([`scan`]) or as the tasks of a cluster (the Python package's
/// `salvage.cluster`), and [`finish`] writes the summary of what they gave. It is
/// serialisable, to travel to where the tasks run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScanPlan {
    /// The request.
    pub options: ScanOptions,
    /// Every database and lone log found, largest first.
    pub tasks: Vec<ScanTask>,
    /// Files that are not SQLite's, counted and skipped (archives' members included).
    pub skipped_files: u64,
    /// Their bytes.
    pub skipped_bytes: u64,
    /// Symbolic links, not followed.
    pub links_not_followed: u64,
    /// Files, folders and archives that could not be read, with why.
    pub unreadable: Vec<String>,
    /// The archives among the sources, each hashed once.
    pub archives: Vec<ArchiveEntry>,
}

/// One database (or lone log) of a scan, to be triaged and recovered.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScanTask {
    /// The file, its kind and its companions.
    pub found: Found,
    /// Its source's folder in `OUT`.
    pub source_name: String,
    /// The archive it was spooled from (a member, then, at `found.relative`), and the
    /// archive's SHA-256.
    pub archive: Option<(PathBuf, String)>,
}

/// What one task gave: its entry, and whether it was taken from an earlier run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskDone {
    /// The database's entry in the summary.
    pub entry: ScanEntry,
    /// Committed by an earlier run of the same scan, its outputs checked by hash.
    pub resumed: bool,
}

/// Runs a scan: [`plan`], every task on `options.jobs` threads (largest first), then
/// [`finish`].
///
/// # Errors
///
/// [`Error::Refused`] before anything is created (no source, `OUT` a file or a folder that
/// is no scan's, `OUT` inside a source or a source inside `OUT`); I/O on `OUT`.
pub fn scan(options: &ScanOptions, observer: &dyn ScanObserver) -> Result<ScanSummary, Error> {
    let plan = plan(options)?;
    observer.found(
        plan.tasks.len() as u64,
        plan.tasks.iter().map(|t| t.found.size).sum(),
    );
    let queue: Mutex<VecDeque<&ScanTask>> = Mutex::new(plan.tasks.iter().collect());
    let done: Mutex<Vec<TaskDone>> = Mutex::new(Vec::new());
    let failure: Mutex<Option<Error>> = Mutex::new(None);
    let jobs = match options.jobs {
        0 => std::thread::available_parallelism().map_or(1, usize::from),
        j => j,
    };
    std::thread::scope(|s| {
        for _ in 0..jobs.min(plan.tasks.len()).max(1) {
            s.spawn(|| loop {
                if failure.lock().map_or(true, |f| f.is_some()) {
                    return;
                }
                let Some(next) = queue.lock().ok().and_then(|mut q| q.pop_front()) else {
                    return;
                };
                match run_task(&plan.options, next) {
                    Ok(task) => {
                        observer.done(&task.entry);
                        if let Ok(mut d) = done.lock() {
                            d.push(task);
                        }
                    }
                    Err(e) => {
                        if let Ok(mut f) = failure.lock() {
                            f.get_or_insert(e);
                        }
                        return;
                    }
                }
            });
        }
    });
    if let Some(e) = failure.into_inner().ok().flatten() {
        return Err(e);
    }
    finish(&plan, done.into_inner().unwrap_or_default())
}

/// Makes a scan ready: checks the request (refused before anything is created), makes
/// `OUT/.scan`, spools each archive's SQLite members into `OUT/.scan/spool` (an earlier
/// run's spool removed first), and finds every database.
///
/// # Errors
///
/// [`Error::Refused`], as [`scan`]; I/O on `OUT`.
pub fn plan(options: &ScanOptions) -> Result<ScanPlan, Error> {
    check(options)?;
    let state = options.out.join(STATE);
    std::fs::create_dir_all(&state).map_err(|source| Error::Write {
        path: state.clone(),
        source,
    })?;
    let names = source_names(&options.sources);
    // An archive is spooled into OUT (the scan's own) and its folder scanned in its place;
    // a spool an earlier run left is the scan's own too.
    let spool_root = state.join("spool");
    remove_spool(&spool_root)?;
    let mut roots = Vec::new();
    let mut archives = Vec::new();
    let mut from_archive: Vec<Option<(PathBuf, String)>> = Vec::new();
    let mut unreadable_archives = Vec::new();
    for (source, name) in options.sources.iter().zip(&names) {
        let kind = std::fs::symlink_metadata(source)
            .is_ok_and(|m| m.is_file())
            .then(|| archive::archive_kind(source))
            .flatten();
        let Some(kind) = kind else {
            roots.push(source.clone());
            from_archive.push(None);
            continue;
        };
        let into = spool_root.join(name);
        let mut hash = String::new();
        match archive::spool(source, kind, &into) {
            Ok(spooled) => {
                hash.clone_from(&spooled.sha256);
                archives.push(ArchiveEntry {
                    path: source.display().to_string(),
                    sha256: spooled.sha256,
                    kept: spooled.kept,
                    skipped: spooled.skipped,
                    refused: spooled.refused,
                });
            }
            // A damaged archive is one bad source: named, and the scan goes on with
            // what was spooled of it.
            Err(e) => unreadable_archives.push(format!(
                "{}: the archive cannot be read to its end: {e}",
                source.display()
            )),
        }
        roots.push(into);
        from_archive.push(Some((source.clone(), hash)));
    }
    let found = discover(&roots);
    let tasks = found
        .found
        .iter()
        .map(|f| ScanTask {
            found: f.clone(),
            source_name: names.get(f.source).cloned().unwrap_or_default(),
            archive: from_archive.get(f.source).cloned().flatten(),
        })
        .collect();
    Ok(ScanPlan {
        options: options.clone(),
        tasks,
        skipped_files: found.skipped_files + archives.iter().map(|a| a.skipped).sum::<u64>(),
        skipped_bytes: found.skipped_bytes,
        links_not_followed: found.links,
        unreadable: found
            .unreadable
            .iter()
            .map(|(p, why)| format!("{}: {why}", p.display()))
            .chain(unreadable_archives)
            .collect(),
        archives,
    })
}

/// Writes the summary of a scan whose tasks are done (`scan.json`, `scan.csv`: entries
/// by path), and removes the spool: the outputs and reports stand on their own.
///
/// # Errors
///
/// I/O on `OUT`.
pub fn finish(plan: &ScanPlan, done: Vec<TaskDone>) -> Result<ScanSummary, Error> {
    let mut done = done;
    done.sort_by(|a, b| a.entry.path.cmp(&b.entry.path));
    let summary = ScanSummary {
        format_version: FORMAT_VERSION,
        sources: plan
            .options
            .sources
            .iter()
            .map(|s| s.display().to_string())
            .collect(),
        resumed: done.iter().filter(|d| d.resumed).count() as u64,
        entries: done.into_iter().map(|d| d.entry).collect(),
        skipped_files: plan.skipped_files,
        skipped_bytes: plan.skipped_bytes,
        links_not_followed: plan.links_not_followed,
        unreadable: plan.unreadable.clone(),
        archives: plan.archives.clone(),
    };
    write_summary(&plan.options.out, &summary)?;
    remove_spool(&plan.options.out.join(STATE).join("spool"))?;
    Ok(summary)
}

/// Removes the scan's spool of archive members, when there is one.
fn remove_spool(spool: &Path) -> Result<(), Error> {
    if spool.exists() {
        std::fs::remove_dir_all(spool).map_err(|source| Error::Write {
            path: spool.to_path_buf(),
            source,
        })?;
    }
    Ok(())
}

/// Refuses what cannot be scanned before anything is created.
fn check(options: &ScanOptions) -> Result<(), Error> {
    let refuse = |what: String, hint: &str| Error::Refused {
        what,
        hint: hint.to_string(),
    };
    if options.sources.is_empty() {
        return Err(refuse(
            "no source to scan".into(),
            "name a folder or a file",
        ));
    }
    for s in &options.sources {
        if std::fs::symlink_metadata(s).is_err() {
            return Err(refuse(
                format!("the source `{}` does not exist", s.display()),
                "name a folder or a file that exists",
            ));
        }
    }
    match std::fs::symlink_metadata(&options.out) {
        Ok(m) if !m.is_dir() => {
            return Err(refuse(
                format!("`{}` exists and is not a folder", options.out.display()),
                "name a new folder for the scan's output",
            ))
        }
        Ok(_) => {
            let is_scan = options.out.join(STATE).is_dir();
            let empty = std::fs::read_dir(&options.out).is_ok_and(|mut d| d.next().is_none());
            if !is_scan && !empty {
                return Err(refuse(
                    format!(
                        "`{}` exists and holds files that are no scan's",
                        options.out.display()
                    ),
                    "name a new folder, or the folder of an earlier scan to resume it",
                ));
            }
        }
        Err(_) => {}
    }
    // Each compared as an absolute path: OUT inside a source would be scanned as it is
    // written; a source inside OUT is an earlier scan's output.
    let absolute = |p: &Path| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
    let out = absolute(&options.out);
    for s in &options.sources {
        let s = absolute(s);
        if out.starts_with(&s) || s.starts_with(&out) {
            return Err(refuse(
                format!(
                    "the output `{}` and the source `{}` are one inside the other",
                    out.display(),
                    s.display()
                ),
                "put the scan's output outside every source",
            ));
        }
    }
    Ok(())
}

/// Each source's folder name in `OUT`: its own name, made unique with `-2`, `-3`, ….
fn source_names(sources: &[PathBuf]) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for s in sources {
        let base = std::path::absolute(s)
            .ok()
            .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| "source".into());
        let mut name = base.clone();
        let mut k = 2;
        while names.contains(&name) {
            name = format!("{base}-{k}");
            k += 1;
        }
        names.push(name);
    }
    names
}

/// Where one database's files go in `OUT`, relative to it.
struct Places {
    output: PathBuf,
    report: PathBuf,
    inspect: PathBuf,
    image: PathBuf,
    state: PathBuf,
}

fn places(found: &Found, source_name: &str) -> Places {
    let mirror = Path::new(source_name).join(&found.relative);
    let suffixed = |path: &Path, suffix: &str| {
        let mut p = path.as_os_str().to_owned();
        p.push(suffix);
        PathBuf::from(p)
    };
    // A log's database is not a log: `gone.db-wal` gives `gone.db-wal.db`.
    let output = match found.kind {
        Kind::LoneWal | Kind::LoneJournal => suffixed(&mirror, ".db"),
        Kind::Database | Kind::HeaderDestroyed => mirror.clone(),
    };
    let with = |suffix: &str| suffixed(&output, suffix);
    // The state file's name: the output's path, its separators made safe.
    let key: String = output
        .to_string_lossy()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let state = Path::new(STATE).join(format!(
        "{key}-{:016x}.json",
        fnv(output.to_string_lossy().as_bytes())
    ));
    Places {
        report: with(".report.json"),
        inspect: with(".inspect.json"),
        image: suffixed(&mirror, ".image"),
        state,
        output,
    }
}

/// FNV-1a, to tell apart two outputs whose names differ only in characters made safe.
fn fnv(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Runs one task of a scan: taken from an earlier run when its entry is committed and its
/// files' hashes agree; else triaged, recovered, and its entry committed in `OUT/.scan`.
/// One bad database is an entry that says why.
///
/// # Errors
///
/// I/O on `OUT` only.
pub fn run_task(options: &ScanOptions, task: &ScanTask) -> Result<TaskDone, Error> {
    let out = &options.out;
    let found = &task.found;
    let at = places(found, &task.source_name);
    if let Some(entry) = committed(out, &at) {
        return Ok(TaskDone {
            entry,
            resumed: true,
        });
    }
    let member = task
        .archive
        .as_ref()
        .map(|(archive, sha256)| ArchiveMember {
            archive: archive.display().to_string(),
            archive_sha256: sha256.clone(),
            member: found.relative.to_string_lossy().into_owned(),
        });
    // What an earlier run left of this database unfinished is the scan's own, in OUT.
    for p in [&at.output, &at.report, &at.inspect, &at.image] {
        remove_leftover(&out.join(p))?;
    }
    // The recovery's own unfinished files too: its output and its report, each written
    // as `.incomplete` until committed.
    for p in [&at.output, &at.report] {
        let mut incomplete = out.join(p).into_os_string();
        incomplete.push(".incomplete");
        remove_leftover(Path::new(&incomplete))?;
    }
    let parent = out.join(&at.output);
    if let Some(dir) = parent.parent() {
        std::fs::create_dir_all(dir).map_err(|source| Error::Write {
            path: dir.to_path_buf(),
            source,
        })?;
    }
    let mut entry = ScanEntry::unread(
        match &member {
            Some(m) => format!("{}!/{}", m.archive, m.member),
            None => found.path.display().to_string(),
        },
        options
            .sources
            .get(found.source)
            .map(|s| s.display().to_string())
            .unwrap_or_default(),
        found.relative.display().to_string(),
        found.size,
        kind_name(found.kind),
    );
    entry.sidecars.clone_from(&found.sidecars);
    // A log without its database is read for what it holds: its pages laid out as a
    // database image, triaged and recovered as a damaged database in its place.
    let lone = matches!(found.kind, Kind::LoneWal | Kind::LoneJournal);
    let log_sha256 = if lone {
        sha256_file(&found.path).ok()
    } else {
        None
    };
    let subject = if lone {
        entry.sha256.clone_from(&log_sha256);
        match lay_out(&found.path, found.kind, &out.join(&at.image))? {
            Some(what) => {
                entry.image = Some(at.image.display().to_string());
                entry.image_sha256 = Some(sha256_file(&out.join(&at.image))?);
                entry.error = Some(what);
                out.join(&at.image)
            }
            None => {
                entry.verdict = "damaged".into();
                entry.outcome = EntryOutcome::Triaged;
                entry.error =
                    Some("a log without its database, and no page image in it can be read".into());
                commit_entry(out, &at, &entry)?;
                return Ok(TaskDone {
                    entry,
                    resumed: false,
                });
            }
        }
    } else {
        found.path.clone()
    };
    // The recovery hashes the source (and its output) itself: the triage hashes it only
    // when nothing is recovered.
    match crate::inspect::inspect_file_with(&subject, options.triage_only || lone, true) {
        Ok(mut report) => {
            report.run.archive_member.clone_from(&member);
            entry.sha256 = report.source.sha256.clone();
            entry.verdict = if report.verdict.healthy {
                "healthy"
            } else {
                "damaged"
            }
            .into();
            entry.findings = report.verdict.finding_count as u64;
            entry.damaged_pages = report.verdict.damaged_page_count;
            entry.free_pages = (report.freelist.trunk_pages + report.freelist.leaf_pages) as u64;
            entry.concerns = report.audit.as_ref().map_or(0, |a| a.len() as u64);
            entry.applications = report
                .applications
                .iter()
                .map(|a| a.application.clone())
                .collect();
            let text = serde_json::to_vec_pretty(&report).map_err(|e| Error::Output(e.into()))?;
            write_atomically(&out.join(&at.inspect), &text).map_err(|source| Error::Write {
                path: out.join(&at.inspect),
                source,
            })?;
            entry.inspect = Some(at.inspect.display().to_string());
        }
        // A file whose header is destroyed is recovered all the same.
        Err(_) if lone => entry.verdict = "damaged".into(),
        Err(e) => entry.error = Some(e.to_string()),
    }
    if lone {
        // The evidence is the log: its hash, and the loss of the database it was of.
        entry.sha256.clone_from(&log_sha256);
        entry.verdict = "damaged".into();
    }
    if options.triage_only {
        entry.outcome = EntryOutcome::Triaged;
        entry.loss = entry.verdict != "healthy";
        commit_entry(out, &at, &entry)?;
        return Ok(TaskDone {
            entry,
            resumed: false,
        });
    }
    let mut request = RecoverOptions::new(&subject, out.join(&at.output));
    request.allow_partial = options.allow_partial;
    request.carve = options.carve;
    request.history = options.history;
    request.archive_member = member;
    match crate::recover(&request, &Quiet) {
        Ok(done) => {
            let r = &done.report;
            entry.outcome = match done.outcome {
                Outcome::Complete => EntryOutcome::Complete,
                Outcome::PartialCommitted => EntryOutcome::Partial,
                Outcome::Withheld => EntryOutcome::Withheld,
                Outcome::NotVerified { .. } => EntryOutcome::NotVerified,
            };
            // A log's database is lost, whatever its image gives.
            entry.loss = lone || entry.outcome != EntryOutcome::Complete;
            entry.rows = Some(r.tables.iter().filter_map(|t| t.rows_in_output).sum());
            if entry.applications.is_empty() {
                entry.applications = r
                    .applications
                    .iter()
                    .map(|a| a.application.clone())
                    .collect();
            }
            if !lone {
                entry.sha256 = Some(r.source.sha256_before.clone());
            }
            let output = if r.output.committed {
                done.paths.dest.clone()
            } else {
                done.paths.incomplete.clone()
            };
            entry.output = output
                .strip_prefix(out)
                .ok()
                .map(|p| p.display().to_string());
            entry.output_sha256 = match &r.output.sha256 {
                Some(h) => Some(h.clone()),
                None => Some(sha256_file(&output)?),
            };
            entry.report = Some(at.report.display().to_string());
            entry.report_sha256 = Some(sha256_file(&out.join(&at.report))?);
            if !lone {
                entry.error = None;
            }
        }
        // Refused or unreadable: this database fails, the scan goes on. Only I/O on OUT
        // ends it.
        Err(e @ (Error::Output(_) | Error::Write { .. })) => return Err(e),
        Err(e) => {
            entry.outcome = EntryOutcome::Failed;
            entry.loss = true;
            entry.error = Some(e.to_string());
        }
    }
    commit_entry(out, &at, &entry)?;
    Ok(TaskDone {
        entry,
        resumed: false,
    })
}

/// Lays a lone log's pages out as a database image at `to` (written whole, sparse where
/// the log holds no page), and says what it is; `None` when no page image in it can be
/// read. Only I/O on `to` is an error: a log that cannot be read holds nothing.
fn lay_out(log: &Path, kind: Kind, to: &Path) -> Result<Option<String>, Error> {
    use std::os::unix::fs::FileExt;
    let Ok(source) = crate::recover::evidence::Source::open(log) else {
        return Ok(None);
    };
    let bytes = source.bytes();
    let wal = match kind {
        Kind::LoneWal => pager::read_wal(bytes).ok(),
        _ => None,
    };
    let image = match (kind, &wal) {
        (Kind::LoneWal, Some(wal)) => history::wal_image(wal),
        (Kind::LoneJournal, _) => history::journal_image(bytes),
        _ => None,
    };
    let Some(image) = image else {
        return Ok(None);
    };
    let write = |tmp: &Path| -> std::io::Result<()> {
        let _ = std::fs::remove_file(tmp);
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(tmp)?;
        let size = u64::from(image.page_size);
        file.set_len(u64::from(image.length) * size)?;
        for (page, bytes) in &image.pages {
            file.write_all_at(bytes, u64::from(page - 1) * size)?;
        }
        file.sync_all()?;
        drop(file);
        crate::base::files::rename_durably(tmp, to)
    };
    let mut tmp = to.as_os_str().to_owned();
    tmp.push(".tmp");
    write(Path::new(&tmp)).map_err(|source| Error::Write {
        path: to.to_path_buf(),
        source,
    })?;
    let what = match kind {
        Kind::LoneWal => "a write-ahead log without its database: its newest committed page images",
        _ => "a rollback journal without its database: the page images from before its transaction",
    };
    Ok(Some(format!(
        "{what}, {} pages of {} bytes, laid out as a database image of {} pages ({} not in the log, zeros{}), triaged and recovered in its place",
        image.pages.len(),
        image.page_size,
        image.length,
        image.pages_missing(),
        match image.pages_left_out {
            0 => String::new(),
            n => format!("; {n} pages numbered implausibly far past the others left out"),
        }
    )))
}

fn kind_name(kind: Kind) -> &'static str {
    match kind {
        Kind::Database => "database",
        Kind::HeaderDestroyed => "header_destroyed",
        Kind::LoneWal => "lone_wal",
        Kind::LoneJournal => "lone_journal",
    }
}

/// The entry an earlier run committed, where the files it names still hash as it says; a
/// failed one is tried again.
fn committed(out: &Path, at: &Places) -> Option<ScanEntry> {
    let text = std::fs::read(out.join(&at.state)).ok()?;
    let entry: ScanEntry = serde_json::from_slice(&text).ok()?;
    if entry.outcome == EntryOutcome::Failed {
        return None;
    }
    let agrees = |file: &Option<String>, hash: &Option<String>| match (file, hash) {
        (Some(f), Some(h)) => sha256_file(&out.join(f)).is_ok_and(|got| got == *h),
        (None, None) => true,
        _ => false,
    };
    (agrees(&entry.output, &entry.output_sha256)
        && agrees(&entry.report, &entry.report_sha256)
        && agrees(&entry.image, &entry.image_sha256))
    .then_some(entry)
}

/// Commits one entry: written whole or not at all.
fn commit_entry(out: &Path, at: &Places, entry: &ScanEntry) -> Result<(), Error> {
    let text = serde_json::to_vec_pretty(entry).map_err(|e| Error::Output(e.into()))?;
    let path = out.join(&at.state);
    write_atomically(&path, &text).map_err(|source| Error::Write { path, source })
}

/// Removes a file an earlier, unfinished run of the scan wrote in `OUT` (never a folder).
fn remove_leftover(path: &Path) -> Result<(), Error> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.is_file() || m.file_type().is_symlink() => {
            std::fs::remove_file(path).map_err(|source| Error::Write {
                path: path.to_path_buf(),
                source,
            })
        }
        Ok(_) => Err(Error::Write {
            path: path.to_path_buf(),
            source: std::io::Error::other("a folder stands where the scan writes a file"),
        }),
        Err(_) => Ok(()),
    }
}

/// `scan.json` and `scan.csv`, each written whole.
fn write_summary(out: &Path, summary: &ScanSummary) -> Result<(), Error> {
    let json = serde_json::to_vec_pretty(summary).map_err(|e| Error::Output(e.into()))?;
    let path = out.join("scan.json");
    write_atomically(&path, &json).map_err(|source| Error::Write { path, source })?;
    let path = out.join("scan.csv");
    write_atomically(&path, csv(summary).as_bytes()).map_err(|source| Error::Write { path, source })
}

/// The summary as CSV: one row per entry.
pub fn csv(summary: &ScanSummary) -> String {
    let field = crate::export::csv::field;
    let mut text = String::from(
        "path,relative,size,sha256,kind,sidecars,verdict,findings,damaged_pages,free_pages,concerns,applications,outcome,loss,rows,output,report,error\n",
    );
    for e in &summary.entries {
        let outcome = serde_json::to_value(e.outcome)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default();
        let row = [
            field(&e.path),
            field(&e.relative),
            e.size.to_string(),
            e.sha256.clone().unwrap_or_default(),
            e.kind.clone(),
            field(&e.sidecars.join(" ")),
            e.verdict.clone(),
            e.findings.to_string(),
            e.damaged_pages.to_string(),
            e.free_pages.to_string(),
            e.concerns.to_string(),
            field(&e.applications.join("; ")),
            outcome,
            e.loss.to_string(),
            e.rows.map(|r| r.to_string()).unwrap_or_default(),
            field(e.output.as_deref().unwrap_or_default()),
            field(e.report.as_deref().unwrap_or_default()),
            field(e.error.as_deref().unwrap_or_default()),
        ];
        text.push_str(&row.join(","));
        text.push('\n');
    }
    text
}
