//! A repair's start: every check before anything is made, and the question whether
//! there is anything to repair at all. A refusal leaves nothing behind.

use std::path::{Path, PathBuf};

use super::journal::{Journal, Phase};
use super::{own_paths, place, run, Known, RepairOptions, Repaired};
use crate::base::dbpath::DatabasePath;
use crate::base::error::Error;
use crate::base::files::{now, utc, utc_compact};
use crate::base::observer::Observer;
use crate::base::paths::with_suffix as beside;
use crate::custody::bundle::{self};

/// Room a manifest needs, beside the files it lists.
const MANIFEST_ROOM: u64 = 64 << 10;

/// Room a loss report needs: its lists are capped, but a schema can be wide.
const REPORT_ROOM: u64 = 4 << 20;

/// Checks everything, then starts the repair: nothing is created before every check
/// passed, and a healthy database (with its log) is left as it is.
pub(super) fn start(
    db: &DatabasePath,
    options: &RepairOptions,
    observer: &dyn Observer,
) -> Result<Repaired, Error> {
    observer.stage(crate::base::observer::Stage::Examining);
    let file = &db.file;
    // Damage SQLite finds at once needs no survey of the whole file to say so.
    let needs_repair = no_logs(file) && sqlite_finds_damage(file);
    // Not a database at all (a text file, an empty file): refused by the path given.
    let file_healthy = !needs_repair
        && crate::inspect::inspect_file(&db.given, false)?
            .verdict
            .healthy;
    let archive = match &options.archive {
        Some(dir) => std::path::absolute(dir).map_err(Error::writing(dir))?,
        None => free_archive(file),
    };
    let j = Journal {
        format_version: Journal::FORMAT_VERSION,
        db: file.clone(),
        db_link: db.link().map(Path::to_path_buf),
        shadow: beside(file, ".salvage-new"),
        aside: beside(file, ".salvage-old"),
        report: beside(&archive, ".report.json"),
        archive,
        allow_partial: options.allow_partial,
        phase: Phase::Validated,
        started_utc: utc(now()),
        updated_utc: String::new(),
        archived: Vec::new(),
        recovered_sha256: None,
        withheld_sha256: None,
        partial: false,
        placeholders: options.placeholders,
        wal_mode: wal_mode(file),
        seen: Vec::new(),
        rolling_back: false,
    };
    check_paths(db, &j)?;
    check_exchange(file)?;
    place::check_not_in_use(file)?;
    let files = room_for_files(file);
    check_room(&j, files, linked_elsewhere(file))?;
    if !needs_repair && healthy(db, &j, file_healthy, files)? {
        return Ok(Repaired::Healthy);
    }
    let mut j = j;
    j.advance(Phase::Validated)?;
    if j.files_last() {
        super::filing::reserve(&j).map_err(|e| super::stopped(e, &j))?;
    }
    run(&mut j, &options.provenance, observer, Known::ByThisRun)
}

/// The default archive, `DB.salvage-<UTC timestamp>`, or `….2`, `….3` for a second
/// repair begun in the same second (a rolled-back repair's archive is kept).
fn free_archive(db: &Path) -> PathBuf {
    let stamp = utc_compact(now());
    let named = |k: u32| match k {
        1 => beside(db, &format!(".salvage-{stamp}")),
        k => beside(db, &format!(".salvage-{stamp}.{k}")),
    };
    (1..=1000)
        .map(named)
        .find(|a| {
            [a.clone(), bundle::incomplete(a), beside(a, ".report.json")]
                .iter()
                .all(|p| std::fs::symlink_metadata(p).is_err())
        })
        .unwrap_or_else(|| named(1))
}

/// Refuses an archive that is, or would put its report at, one of the database's files
/// or the repair's own, and any of the repair's own paths that is already taken.
fn check_paths(db: &DatabasePath, j: &Journal) -> Result<(), Error> {
    // The switch moves each log by its name and files what it moved: a link there would
    // be moved and filed in the place of the log, a folder is no log.
    for log in ["-wal", "-journal", "-shm"].map(|s| beside(&db.file, s)) {
        if std::fs::symlink_metadata(&log).is_ok_and(|m| !m.is_file()) {
            return Err(Error::Refused {
                what: format!(
                    "`{}` is not a regular file (a symbolic link, a folder): a repair moves a database's logs by their names, and will not move that",
                    log.display()
                ),
                hint: "look at it; move it away if it is no log of this database (SQLite follows a link there, a repair would not), or recover a copy with `salvage recover`".into(),
            });
        }
    }
    bundle::check_target(&j.archive)?;
    let mut taken = bundle::protected(db);
    taken.extend(own_paths(&db.file));
    bundle::check_apart(&j.archive, &taken)?;
    taken.push(j.archive.clone());
    taken.push(bundle::incomplete(&j.archive));
    for report in [j.report.clone(), beside(&j.report, ".incomplete")] {
        let resolved = crate::base::paths::canonical_target(&report);
        if taken
            .iter()
            .any(|t| crate::base::paths::canonical_target(t) == resolved)
        {
            return Err(Error::Refused {
                what: format!(
                    "the report `{}` would be one of the files the database or the repair uses",
                    report.display()
                ),
                hint: "name an archive folder of its own with --archive".into(),
            });
        }
    }
    // Under the claim, with no journal: a regular file where the journal's first record
    // is written (then renamed into place) is that record, left by a repair killed while
    // writing it, before it made anything else; writing the record replaces it.
    let record = beside(&Journal::path_for(&db.file), ".tmp");
    let left_record = std::fs::symlink_metadata(&record).is_ok_and(|m| m.is_file());
    let mut in_the_way: Vec<PathBuf> = own_paths(&db.file)
        .into_iter()
        .filter(|p| *p != beside(&db.file, ".salvage-repair.lock"))
        .filter(|p| !(left_record && *p == record))
        .collect();
    in_the_way.extend([
        j.report.clone(),
        beside(&j.report, ".incomplete"),
        Scratch::beside_archive(j),
    ]);
    for taken in in_the_way {
        if std::fs::symlink_metadata(&taken).is_ok() {
            return Err(Error::Refused {
                what: format!("`{}` exists", taken.display()),
                hint: "it is in the way of the repair's own files; move it away (salvage never deletes what it did not make)".into(),
            });
        }
    }
    Ok(())
}

/// Refuses a filesystem that cannot exchange two paths atomically (a network or FUSE
/// filesystem may not): the switch is made of exchanges, so that the database's path is
/// never empty and never holds a mix.
fn check_exchange(db: &Path) -> Result<(), Error> {
    match place::can_exchange(db) {
        Ok(true) => Ok(()),
        Ok(false) => Err(Error::Refused {
            what: format!(
                "the filesystem holding `{}` cannot exchange two paths atomically (renameat2 RENAME_EXCHANGE)",
                db.display()
            ),
            hint: "a repair in place there would leave moments with the database's path empty: copy the database and its sidecars to a local filesystem and repair the copy, or recover it with `salvage recover`".into(),
        }),
        Err(source) => Err(Error::Write {
            path: crate::base::paths::with_suffix(db, place::PROBES[0]),
            source,
        }),
    }
}

/// Whether the original is in write-ahead-log mode: its header says so ("The Database
/// Header": read and write versions 2), or a log with content lies beside it (its header
/// may be what the damage took).
fn wal_mode(db: &Path) -> bool {
    super::header_says_wal(db) || std::fs::metadata(beside(db, "-wal")).is_ok_and(|m| m.len() > 0)
}

/// The room the database and its sidecars take on disk, each file rounded up to whole
/// blocks of 4 KiB.
fn room_for_files(db: &Path) -> u64 {
    bundle::database_files(db)
        .iter()
        .filter_map(|(p, _)| std::fs::metadata(p).ok())
        .map(|m| m.len().div_ceil(4096) * 4096)
        .sum()
}

/// The room (rounded as [`room_for_files`]) of the database's files that already have
/// another name: filing copies them rather than give them a third.
fn linked_elsewhere(db: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt as _;
    bundle::database_files(db)
        .iter()
        .filter_map(|(p, _)| std::fs::metadata(p).ok())
        .filter(|m| m.nlink() > 1)
        .map(|m| m.len().div_ceil(4096) * 4096)
        .sum()
}

/// Refuses when the archive's filesystem cannot hold its manifest and the report (and a
/// copy of the database and its sidecars, when it is another filesystem than the
/// database's: there the original's own files cannot be linked; else a copy of those
/// with another name, `shared`), or the database's cannot hold the recovery beside it.
fn check_room(j: &Journal, files: u64, shared: u64) -> Result<(), Error> {
    let archive_parent = crate::base::paths::folder_of(&j.archive);
    let db_parent = crate::base::paths::folder_of(&j.db);
    let same = place::device(archive_parent) == place::device(db_parent);
    let records = MANIFEST_ROOM + REPORT_ROOM;
    // The recovery holds what the files hold; SQLite's journal while it is written.
    let beside_db = files + (64 << 10);
    let needs = if same {
        vec![(db_parent, records + beside_db + shared)]
    } else {
        vec![(archive_parent, files + records), (db_parent, beside_db)]
    };
    for (dir, bytes) in needs {
        if let Some(free) = place::free_bytes(dir).filter(|free| *free < bytes) {
            return Err(Error::Refused {
                what: format!(
                    "`{}` has {free} bytes free; the repair needs {bytes} there (the recovery, and the archive's manifest and report{})",
                    dir.display(),
                    match (same, shared) {
                        (true, 0) => "",
                        (true, _) => ", and its copy of the files that have another name",
                        (false, _) => ", and its copy of the database and its sidecars",
                    }
                ),
                hint: "free space, or pass --archive DIR on a filesystem with room".into(),
            });
        }
    }
    Ok(())
}

/// Whether no log with content lies beside the database: SQLite reads it alone.
fn no_logs(db: &Path) -> bool {
    ["-wal", "-journal"]
        .iter()
        .all(|s| !std::fs::metadata(beside(db, s)).is_ok_and(|m| m.len() > 0))
}

/// Whether SQLite's own check of the file (opened read-only and immutable) names a fault
/// among the first it meets: `PRAGMA quick_check(N)` stops at the N-th, so on a damaged
/// file it answers long before it has read the whole. Text an older SQLite left in a
/// numeric column is no fault; a schema this build cannot read (an application's
/// collation) or a file SQLite does not open gives no answer here: the full examination
/// says then.
fn sqlite_finds_damage(db: &Path) -> bool {
    use crate::base::sqlite::{read_only, uri};
    let Ok(conn) = rusqlite::Connection::open_with_flags(uri(db, "immutable=1"), read_only())
    else {
        return false;
    };
    let lines: rusqlite::Result<Vec<String>> = conn
        .prepare("PRAGMA quick_check(8)")
        .and_then(|mut s| s.query_map([], |r| r.get::<_, String>(0))?.collect());
    lines.is_ok_and(|lines| {
        crate::base::sqlite::CheckAnswer::of_lines(lines, "PRAGMA quick_check")
            .faults
            .iter()
            .any(|f| !f.ends_with(" said nothing"))
    })
}

/// Whether the database needs no repair: SQLite's integrity check (which covers
/// full-text indexes) passes, and every page is as the format says, of the database as
/// SQLite opens it. Without a log with content that is the file itself; with one, a
/// scratch copy of the file and its logs, opened by SQLite (which replays the log or
/// rolls back the journal) and checkpointed: the normal state of a WAL application that
/// stopped is not damage.
fn healthy(db: &DatabasePath, j: &Journal, file_healthy: bool, files: u64) -> Result<bool, Error> {
    let logs: Vec<&str> = ["-wal", "-journal"]
        .into_iter()
        .filter(|s| std::fs::metadata(db.sidecar(s)).is_ok_and(|m| m.len() > 0))
        .collect();
    if logs.is_empty() {
        return Ok(file_healthy && crate::base::sqlite::integrity(&db.file).is_ok());
    }
    let scratch = Scratch::make(j, files)?;
    let copy = scratch.dir.join("db");
    for suffix in std::iter::once("").chain(logs) {
        std::fs::copy(beside(&db.file, suffix), beside(&copy, suffix)).map_err(|source| {
            Error::Write {
                path: beside(&copy, suffix),
                source,
            }
        })?;
    }
    let opened = rusqlite::Connection::open(&copy).and_then(|conn| {
        conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))?;
        conn.close().map_err(|(_, e)| e)
    });
    Ok(opened.is_ok()
        && crate::inspect::inspect_file(&copy, false).is_ok_and(|r| r.verdict.healthy)
        && crate::base::sqlite::integrity(&copy).is_ok())
}

/// A folder of this user's alone for a health check's copy, removed when dropped: in the
/// system's temporary folder, or beside the archive when that has no room.
struct Scratch {
    /// The folder.
    dir: PathBuf,
}

impl Scratch {
    /// Makes the folder where `files` bytes fit.
    fn make(j: &Journal, files: u64) -> Result<Scratch, Error> {
        use std::os::unix::fs::DirBuilderExt as _;
        let name = format!(
            "salvage-repair-check-{}-{}",
            std::process::id(),
            utc_compact(now())
        );
        let temp = std::env::temp_dir();
        let dir = if place::free_bytes(&temp).is_some_and(|free| free > files + (1 << 20)) {
            temp.join(name)
        } else {
            Scratch::beside_archive(j)
        };
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&dir)
            .map_err(Error::writing(&dir))?;
        Ok(Scratch { dir })
    }
}

impl Scratch {
    /// Where the scratch copy goes when the temporary folder has no room:
    /// `ARCHIVE.check`, on the filesystem the start checked for room for the archive.
    fn beside_archive(j: &Journal) -> PathBuf {
        beside(&j.archive, ".check")
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
