//! `salvage repair`: a damaged database repaired at its own path, for the application
//! that uses it, so that at every instant the original bytes are at that path, at a path
//! the journal names, or in the archive, with a matching hash, and the path never shows
//! the application a state it did not commit.
//!
//! ```text
//! validated ─▶ recovered ─▶ verified ─▶ fenced ───────────▶ swapped ─▶ filed ──────▶ done
//! (checks,     (recover the (journal     (old -wal and       (exchange  (the original (fences and
//!  healthy?     original in  mode kept,   -journal exchanged   of the     and its logs  old names
//!  no-op)       place, its   integrity    with empty folders:  two       linked into   gone, the
//!               files'       check,       SQLite cannot open   paths)     the archive,  archive
//!               hashes)      hashed)      the database)                   manifest)     read-only)
//!            └─▶ withheld (loss without --allow-partial: original untouched, nothing archived)
//! ```
//!
//! The original is read once: the recovery's first hash of each file is what the archive's
//! manifest records, and the file system's stamps (else one more hash) prove the file the
//! switch moves is the one that was read. Nothing is copied: the archive holds the
//! original's own files, linked there from where the switch left them (copied only when
//! the archive is on another filesystem), so a repair needs room for the recovery alone.
//! A journal of format 2 (an older build's) goes on in its own order: the archive copied
//! first (`archived`), the recovery made from that copy.
//!
//! The database is the file a symbolic link points to (`base::dbpath`): its sidecars
//! and the repair's own files lie beside it, and a link stays a link. From `fenced` to
//! `done` this process holds SQLite's own locks on the files (`place::Held`), so that
//! no application reads or writes in between; after a crash there, the empty folders at
//! the sidecars' names keep SQLite from opening the database until `--resume` or
//! `--rollback` ends the switch: it fails to open rather than show the original without
//! its log, or the recovery with the original's log.
//!
//! Each phase is written to the journal ([`journal`]) once its work is durable; a repair
//! stopped anywhere is finished with `--resume` or undone with `--rollback`, each first
//! checking that the files are where the journal says; `--abandon` ends a repair whose
//! database the application has written to since, leaving it as it is. One repair of a
//! database runs at a time (`place::Claim`). A refusal creates nothing.

mod filing;
pub mod journal;
mod rollback;
mod start;
mod steps;
mod switch;

use std::path::{Path, PathBuf};

use crate::base::dbpath::DatabasePath;
use crate::base::error::Error;
use crate::base::files::hash_file;
use crate::base::observer::{Observer, Stage};
use crate::base::paths::with_suffix as beside;
use crate::base::place::{self, in_use};
use crate::custody::bundle::{self, Provenance, Role};
use journal::{Journal, Phase};

/// What a repair run should do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Start a repair (refused while an earlier one is unfinished).
    Start,
    /// Finish the repair the journal records.
    Resume,
    /// Undo the repair the journal records: the original back at its path.
    Rollback,
    /// End the repair the journal records without touching the database's path: for a
    /// database the application has written to since the repair read it.
    Abandon,
}

/// A repair request.
#[derive(Clone, Debug)]
pub struct RepairOptions {
    /// The database to repair, at the path its application uses (a symbolic link is
    /// followed: the file it points to is repaired, the link stays).
    pub db: PathBuf,
    /// The archive folder (default `DB.salvage-<UTC timestamp>`).
    pub archive: Option<PathBuf>,
    /// Put a recovery with loss in place (exit 3) instead of withholding it (exit 4).
    pub allow_partial: bool,
    /// Write placeholder parents for children whose parent row is lost into the
    /// database the application will use (never, unless asked).
    pub placeholders: bool,
    /// Start, resume, roll back or abandon.
    pub action: Action,
    /// Who asks: written into the archive's manifest and the report.
    pub provenance: Provenance,
}

/// How a repair ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Repaired {
    /// The database, with its log, was healthy: nothing was made or moved.
    Healthy,
    /// The recovery is in place; `partial` when it had loss (allowed).
    Replaced {
        /// Whether the recovery had loss.
        partial: bool,
        /// The archive of the original.
        archive: PathBuf,
        /// The SHA-256 of the archive's manifest, for the case notes.
        manifest_sha256: Option<String>,
        /// The recovery's loss report.
        report: PathBuf,
    },
    /// The recovery had loss and was not put in place; the original is untouched.
    Withheld {
        /// The recovery, kept for inspection.
        shadow: PathBuf,
        /// The recovery's loss report.
        report: PathBuf,
    },
    /// The original is back at its path.
    RolledBack {
        /// What was done to put it back.
        steps: Vec<Step>,
    },
    /// The repair is over; the database's path was left as the application left it.
    Abandoned {
        /// What was done.
        steps: Vec<Step>,
    },
}

/// One thing a rollback or an abandon did, in the order done.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Step {
    /// An empty folder made at a log's name, so that SQLite opens nothing until the
    /// original and its logs are back.
    Fenced(PathBuf),
    /// The original put back at the database's path, exchanged with what was there
    /// (the recovery), from where it was kept.
    Exchanged {
        /// The database's path.
        db: PathBuf,
        /// Where the original was, and where the recovery now is.
        from: PathBuf,
    },
    /// The original renamed onto the database's empty path.
    Renamed {
        /// Where it was.
        from: PathBuf,
        /// The database's path.
        to: PathBuf,
    },
    /// One of the original's files (a log, the `-shm`) back at its name.
    PutBack(PathBuf),
    /// A file the repair made, removed.
    Removed(PathBuf),
    /// The repair's partial archive, removed.
    RemovedPartialArchive(PathBuf),
    /// The archive the repair filed the original into, removed: its files are back at
    /// their paths (a repair of journal format 3).
    RemovedArchive(PathBuf),
    /// The database and its sidecars left as they are.
    LeftAsIs(PathBuf),
    /// A file holding the original's bytes, as the repair read them, kept where the
    /// repair had put it: no copy of it is known elsewhere (a repair of journal format 3
    /// abandoned in its switch files nothing).
    KeptOriginal(PathBuf),
    /// Nothing had been moved: only the journal was removed.
    NothingMoved,
}

impl std::fmt::Display for Step {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Step::Fenced(p) => write!(
                f,
                "fenced `{}` until the original's logs were back",
                p.display()
            ),
            Step::Exchanged { db, from } => write!(
                f,
                "exchanged `{}` with the original from `{}`",
                db.display(),
                from.display()
            ),
            Step::Renamed { from, to } => {
                write!(
                    f,
                    "renamed the original `{}` to `{}`",
                    from.display(),
                    to.display()
                )
            }
            Step::PutBack(p) => write!(f, "put the original `{}` back", p.display()),
            Step::Removed(p) => write!(f, "removed `{}`", p.display()),
            Step::RemovedPartialArchive(p) => {
                write!(f, "removed the partial archive `{}`", p.display())
            }
            Step::RemovedArchive(p) => write!(
                f,
                "removed the archive `{}`: its files are back at their paths",
                p.display()
            ),
            Step::LeftAsIs(p) => write!(f, "left `{}` and its sidecars as they are", p.display()),
            Step::KeptOriginal(p) => write!(
                f,
                "kept `{}`: the original as the repair read it, its only copy (move it somewhere safe)",
                p.display()
            ),
            Step::NothingMoved => {
                f.write_str("the original was never moved; the repair's journal is removed")
            }
        }
    }
}

/// A repair that ran: the database it was for, and how it ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RepairRun {
    /// The database, as given and as resolved.
    pub db: DatabasePath,
    /// How it ended.
    pub outcome: Repaired,
}

/// Repairs, resumes, rolls back or abandons as `options` says.
pub fn repair(options: &RepairOptions, observer: &dyn Observer) -> Result<RepairRun, Error> {
    let db = match DatabasePath::resolve(&options.db) {
        Ok(db) => db,
        // A recorded repair goes on, or is undone, with the database moved away: its
        // journal lies beside where the file was.
        Err(e) if options.action != Action::Start => DatabasePath::resolve_absent(&options.db)
            .filter(|db| Journal::path_for(&db.file).exists())
            .ok_or(e)?,
        Err(e) => return Err(e),
    };
    let _claim = claim(&db)?;
    let existing = Journal::read(&db.file)?;
    let outcome = match (options.action, existing) {
        (Action::Start, Some(j)) => Err(unfinished(&j)),
        (Action::Start, None) => start::start(&db, options, observer),
        (_, None) => Err(Error::Refused {
            what: format!(
                "no repair of `{}` is recorded (`{}` does not exist)",
                db.given.display(),
                Journal::path_for(&db.file).display()
            ),
            hint: "run `salvage repair DB` to start one".into(),
        }),
        // (An abandon is refused while a fence stands, as it always is, and is the way on
        // when the application wrote after a rollback's stop.)
        (Action::Resume, Some(j)) if j.rolling_back => Err(unfinished(&j)),
        (Action::Resume, Some(mut j)) => {
            j.allow_partial |= options.allow_partial;
            j.placeholders |= options.placeholders;
            run(&mut j, &options.provenance, observer, Known::FromJournal)
        }
        (Action::Rollback, Some(mut j)) => rollback::rollback(&mut j),
        (Action::Abandon, Some(j)) => rollback::abandon(&j),
    }?;
    Ok(RepairRun { db, outcome })
}

/// Takes the exclusive claim on repairing `db` (`DB.salvage-repair.lock`, removed when
/// the run ends): a second run started meanwhile is refused.
fn claim(db: &DatabasePath) -> Result<place::Claim, Error> {
    let path = beside(&db.file, ".salvage-repair.lock");
    match place::Claim::take(&path) {
        Ok(Ok(claim)) => Ok(claim),
        Ok(Err(pid)) => Err(Error::Refused {
            what: format!(
                "another `salvage repair` of `{}` is running{}",
                db.given.display(),
                pid.map_or(String::new(), |p| format!(" (process {p})"))
            ),
            hint: format!(
                "wait for it to end; it holds `{}`",
                path.display()
            ),
        }),
        Err(e) if e.raw_os_error() == Some(libc::ELOOP)
            || matches!(
                e.kind(),
                std::io::ErrorKind::AlreadyExists | std::io::ErrorKind::IsADirectory
            ) =>
        {
            Err(Error::Refused {
                what: format!(
                    "`{}` is in the way of the repair's claim: it is not a regular file (a symbolic link, a folder), and it is never followed",
                    path.display()
                ),
                hint: "move it away (salvage never deletes what it did not make)".into(),
            })
        }
        Err(e) if matches!(
            e.kind(),
            std::io::ErrorKind::PermissionDenied | std::io::ErrorKind::ReadOnlyFilesystem
        ) =>
        {
            Err(Error::Refused {
                what: format!(
                    "the repair cannot write in the folder of `{}`: {e}",
                    db.file.display()
                ),
                hint: "a repair writes its recovery and journal beside the database: run it as a user who may write there".into(),
            })
        }
        Err(source) => Err(Error::Write { path, source }),
    }
}

/// The database as the person named it: the link, when it was given by one.
fn named(j: &Journal) -> PathBuf {
    j.db_link.clone().unwrap_or_else(|| j.db.clone())
}

/// The refusal when a repair is recorded and unfinished.
fn unfinished(j: &Journal) -> Error {
    let name = named(j);
    let db = name.display();
    if j.rolling_back {
        return Error::Refused {
            what: format!(
                "a rollback of the repair of `{db}` began and stopped before its end"
            ),
            hint: format!(
                "`salvage repair {db} --rollback` finishes it; should the application have written to the database since, `salvage repair {db} --abandon` ends the repair leaving it as it is (refused while a fence of the repair stands at its -wal or -journal). The repair cannot be resumed. The journal is `{}`",
                Journal::path_for(&j.db).display()
            ),
        };
    }
    let state = match j.phase {
        Phase::Withheld => format!(
            "the recovery found loss and was withheld; the original is untouched, the recovery is at `{}`, its report at `{}`",
            beside(&j.shadow, ".incomplete").display(),
            j.report.display()
        ),
        p => format!("it stopped after the phase `{}`", p.name()),
    };
    Error::Refused {
        what: format!("an earlier repair of `{db}` is unfinished: {state}"),
        hint: format!(
            "`salvage repair {db} --resume` finishes it (add --allow-partial to accept a recovery with loss), `salvage repair {db} --rollback` puts the original back; the journal is `{}`",
            Journal::path_for(&j.db).display()
        ),
    }
}

/// How a run knows where the files are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Known {
    /// It did every step itself: each file is where its last step put it.
    ByThisRun,
    /// It resumes a stopped repair: a stop may fall between a step and its record, so the
    /// files' hashes say where each is.
    FromJournal,
}

/// Carries the repair on from the phase its journal records. A failure that is not a
/// refusal is returned as [`Error::RepairStopped`], naming the phase and the journal.
fn run(
    j: &mut Journal,
    who: &Provenance,
    observer: &dyn Observer,
    known: Known,
) -> Result<Repaired, Error> {
    // SQLite's locks, held from the fence to the end of the switch.
    let mut held: Option<place::Held> = None;
    // What this run knows without reading again: the digests of the archive's copies it
    // made, and the hash of the recovery it made and checked.
    let mut hashed: steps::Hashed = Vec::new();
    let mut vouched: Option<String> = None;
    loop {
        let step = match j.phase {
            Phase::Validated if j.files_last() => {
                match steps::recover(j, (who, Vec::new()), observer) {
                    Ok(steps::Recovered::Withheld(withheld)) => return Ok(withheld),
                    Ok(steps::Recovered::Vouched(sha256)) => {
                        vouched = Some(sha256);
                        Ok(())
                    }
                    Err(e) => Err(e),
                }
            }
            Phase::Validated => {
                observer.stage(Stage::Archiving);
                steps::archive(j, who).map(|h| hashed = h)
            }
            Phase::Archived => {
                match steps::recover(j, (who, std::mem::take(&mut hashed)), observer) {
                    Ok(steps::Recovered::Withheld(withheld)) => return Ok(withheld),
                    Ok(steps::Recovered::Vouched(sha256)) => {
                        vouched = Some(sha256);
                        Ok(())
                    }
                    Err(e) => Err(e),
                }
            }
            Phase::Withheld if j.allow_partial => steps::commit_withheld(j, who),
            Phase::Withheld => return Err(unfinished(j)),
            Phase::Recovered => {
                observer.stage(Stage::Confirming);
                steps::verify(j, vouched.take())
            }
            Phase::Verified | Phase::Fenced | Phase::Swapped | Phase::Filed if held.is_none() => {
                observer.stage(Stage::Switching);
                switch::hold(j).map(|h| held = Some(h))
            }
            Phase::Verified => switch::fence(j),
            Phase::Fenced => switch::swap(j, known),
            Phase::Swapped if j.files_last() => {
                observer.stage(Stage::Archiving);
                filing::file(j, who, known)
            }
            Phase::Swapped | Phase::Filed => switch::finish(j, known),
            Phase::Done => {
                drop(held);
                let manifest_sha256 = bundle::manifest_sha256(&j.archive).ok();
                steps::record(j, crate::report::RepairState::InPlace)?;
                j.remove()?;
                return Ok(Repaired::Replaced {
                    partial: j.partial,
                    archive: j.archive.clone(),
                    manifest_sha256,
                    report: j.report.clone(),
                });
            }
        };
        if let Err(e) = step {
            return Err(stopped(e, j));
        }
    }
}

/// A failure or a refusal partway through a repair, with where its journal says it
/// is: the repair stays recorded, the original intact.
fn stopped(e: Error, j: &Journal) -> Error {
    // A refusal that ended the repair (its journal removed, nothing kept) is told as it
    // is: there is nothing recorded to go on from.
    let journal = std::fs::symlink_metadata(Journal::path_for(&j.db));
    if journal.is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound) {
        return e;
    }
    Error::RepairStopped {
        cause: Box::new(e),
        db: named(j),
        phase: j.phase.name(),
        journal: Journal::path_for(&j.db),
    }
}

/// A file's hash, an error naming it.
fn hash(path: &Path) -> Result<crate::base::files::Copied, Error> {
    hash_file(path).map_err(|e| Error::Source {
        path: path.to_path_buf(),
        source: e,
    })
}

/// Whether the database header at `path` says write-ahead-log mode ("The Database
/// Header": read and write versions, offsets 18 and 19, are 2).
fn header_says_wal(path: &Path) -> bool {
    use std::io::Read as _;
    let mut head = [0u8; 20];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut head))
        .is_ok()
        && head.get(18..20) == Some(&[2, 2])
}

/// The sidecars a repair fences and moves: the two logs SQLite reads into the database.
/// (`-shm` is the log's index, rebuilt from the log by the next connection that opens
/// it.)
const LOGS: [Role; 2] = [Role::Wal, Role::Journal];

/// The log of `role` beside the database: `DB-wal`, `DB-journal`.
fn log_path(db: &Path, role: Role) -> PathBuf {
    beside(db, role.suffix().unwrap_or_default())
}

/// Where a repair keeps the original's log of `role` while it is fenced:
/// `DB.salvage-old-wal`, `DB.salvage-old-journal`.
fn old_log(db: &Path, role: Role) -> PathBuf {
    beside(
        db,
        &format!(".salvage-old{}", role.suffix().unwrap_or_default()),
    )
}

/// Where a rollback stages a copy from the archive: `DB.salvage-restore` and
/// `DB.salvage-restore-wal`, `-journal`, `-shm`.
fn restoring(db: &Path, suffix: &str) -> PathBuf {
    beside(db, &format!(".salvage-restore{suffix}"))
}

/// An exchange of two paths, which the start made sure the filesystem can do
/// ([`place::can_exchange`]): never a rename onto an empty path.
fn exchange(a: &Path, b: &Path) -> Result<(), Error> {
    match place::exchange(a, b) {
        Ok(true) => Ok(()),
        Ok(false) => Err(Error::writing(b)(std::io::Error::other(
            "the filesystem cannot exchange two paths atomically",
        ))),
        Err(e) => Err(Error::writing(b)(e)),
    }
}

/// Whether `path` is an empty folder: a repair's fence at a sidecar's name.
fn is_fence(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.is_dir())
        && std::fs::read_dir(path).is_ok_and(|mut d| d.next().is_none())
}

/// Every path a repair of `db` makes or moves beside it, which nothing else may be: the
/// journal and its lock, the shadow and its `.incomplete` (with the files SQLite writes
/// beside them), the aside copy, the original's logs while fenced, a rollback's staged
/// copies.
fn own_paths(db: &Path) -> Vec<PathBuf> {
    let journal = Journal::path_for(db);
    let mut out = vec![
        journal.clone(),
        beside(&journal, ".tmp"),
        beside(db, ".salvage-repair.lock"),
        beside(db, ".salvage-old"),
    ];
    for shadow in [
        beside(db, ".salvage-new"),
        beside(db, ".salvage-new.incomplete"),
    ] {
        out.extend(["-journal", "-wal", "-shm"].map(|s| beside(&shadow, s)));
        out.push(shadow);
    }
    out.extend(LOGS.iter().map(|r| old_log(db, *r)));
    out.extend(["", "-wal", "-shm", "-journal"].map(|s| restoring(db, s)));
    out.extend(place::PROBES.iter().map(|s| beside(db, s)));
    out
}
