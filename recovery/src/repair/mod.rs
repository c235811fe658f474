//! `salvage repair`: a damaged database repaired at its own path, for the application
//! that uses it, so that at every instant the original bytes are at that path or in the
//! archive with a matching hash.
//!
//! ```text
//! validated ─▶ archived ─▶ recovered ─▶ verified ─▶ sidecars_removed ─▶ swapped ─▶ done
//! (checks,     (bundle of   (recover the (integrity   (old -wal/-shm/     (exchange  (old copy
//!  no lock)     the files)   archived     check of     -journal gone,     of the     removed,
//!                            copy into    the shadow)  each matching      two paths) journal
//!                            the shadow)               its archive)                  removed)
//!                  └─▶ withheld (loss without --allow-partial: original untouched)
//! ```
//!
//! Each phase is written to the journal ([`journal`]) once its work is durable; a repair
//! stopped anywhere is finished with `--resume` or undone with `--rollback`, each first
//! checking that the files are where the journal says.

pub mod journal;
pub mod place;

use std::path::{Path, PathBuf};

use crate::bundle::files::{copy_durably, hash_file, now, utc, utc_compact};
use crate::bundle::{self, Provenance};
use crate::error::Error;
use crate::observer::Observer;
use crate::request::with_suffix as beside;
use crate::{Outcome, RecoverOptions};
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
}

/// A repair request.
#[derive(Clone, Debug)]
pub struct RepairOptions {
    /// The database to repair, at the path its application uses.
    pub db: PathBuf,
    /// The archive folder (default `DB.salvage-<UTC timestamp>`).
    pub archive: Option<PathBuf>,
    /// Put a recovery with loss in place (exit 3) instead of withholding it (exit 4).
    pub allow_partial: bool,
    /// Start, resume or roll back.
    pub action: Action,
    /// Who asks: written into the archive's manifest.
    pub provenance: Provenance,
}

/// How a repair ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Repaired {
    /// The database was healthy: nothing was made or moved.
    Healthy,
    /// The recovery is in place; `partial` when it had loss (allowed).
    Replaced {
        /// Whether the recovery had loss.
        partial: bool,
        /// The archive of the original.
        archive: PathBuf,
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
        steps: Vec<String>,
    },
}

/// Repairs, resumes or rolls back as `options` says.
pub fn repair(options: &RepairOptions, observer: &dyn Observer) -> Result<Repaired, Error> {
    let db = std::path::absolute(&options.db).map_err(|e| Error::Source {
        path: options.db.clone(),
        source: e,
    })?;
    let existing = Journal::read(&db)?;
    match (options.action, existing) {
        (Action::Start, Some(j)) => Err(unfinished(&j)),
        (Action::Start, None) => start(&db, options, observer),
        (Action::Resume | Action::Rollback, None) => Err(Error::Refused {
            what: format!(
                "no repair of `{}` is recorded (`{}` does not exist)",
                db.display(),
                Journal::path_for(&db).display()
            ),
            hint: "run `salvage repair DB` to start one".into(),
        }),
        (Action::Resume, Some(mut j)) => {
            j.allow_partial |= options.allow_partial;
            run(&mut j, &options.provenance, observer, Known::FromJournal)
        }
        (Action::Rollback, Some(j)) => rollback(&j),
    }
}

/// The refusal when a repair is recorded and unfinished.
fn unfinished(j: &Journal) -> Error {
    let db = j.db.display();
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

/// Checks everything, then starts the repair: nothing is created before every check
/// passed, and a healthy database is left as it is.
fn start(db: &Path, options: &RepairOptions, observer: &dyn Observer) -> Result<Repaired, Error> {
    let meta = crate::evidence::check_regular_file(db)?;
    let archive = match &options.archive {
        Some(dir) => std::path::absolute(dir).map_err(Error::Output)?,
        None => beside(db, &format!(".salvage-{}", utc_compact(now()))),
    };
    let j = Journal {
        format_version: 1,
        db: db.to_path_buf(),
        shadow: beside(db, ".salvage-new"),
        aside: beside(db, ".salvage-old"),
        report: beside(&archive, ".report.json"),
        archive,
        allow_partial: options.allow_partial,
        phase: Phase::Validated,
        started_utc: utc(now()),
        updated_utc: String::new(),
        archived: Vec::new(),
        recovered_sha256: None,
        partial: false,
    };
    bundle::check_target(&j.archive)?;
    for taken in [
        &j.shadow,
        &beside(&j.shadow, ".incomplete"),
        &j.aside,
        &j.report,
    ] {
        if std::fs::symlink_metadata(taken).is_ok() {
            return Err(Error::Refused {
                what: format!("`{}` exists", taken.display()),
                hint: "it is in the way of the repair's own files; move it away (salvage never deletes what it did not make)".into(),
            });
        }
    }
    check_not_in_use(db)?;
    check_room(&j, meta.len())?;
    if healthy(db) {
        return Ok(Repaired::Healthy);
    }
    let mut j = j;
    j.advance(Phase::Validated)?;
    run(&mut j, &options.provenance, observer, Known::ByThisRun)
}

/// Refuses while another process holds SQLite's locks on the database or its `-shm`.
pub(crate) fn check_not_in_use(db: &Path) -> Result<(), Error> {
    for path in [db.to_path_buf(), beside(db, "-shm")] {
        if let Some(h) = place::lock_holder(&path) {
            let who = place::process_name(h.pid).map_or(format!("process {}", h.pid), |c| {
                format!("process {} (`{c}`)", h.pid)
            });
            return Err(Error::Refused {
                what: format!(
                    "`{}` is in use: {who} holds a {} lock on it",
                    path.display(),
                    if h.write { "write" } else { "read" }
                ),
                hint: "stop the application using the database (or close its connections), then run the repair again".into(),
            });
        }
    }
    Ok(())
}

/// Refuses when the archive's filesystem cannot hold a copy of the database and its
/// sidecars, or the database's cannot hold the recovery beside it.
fn check_room(j: &Journal, db_len: u64) -> Result<(), Error> {
    let total: u64 = bundle::database_files(&j.db)
        .iter()
        .filter_map(|(p, _)| std::fs::metadata(p).ok())
        .map(|m| m.len())
        .sum();
    let archive_parent = j.archive.parent().unwrap_or(Path::new("/"));
    let db_parent = j.db.parent().unwrap_or(Path::new("/"));
    let same = place::device(archive_parent) == place::device(db_parent);
    let needs = [
        (archive_parent, if same { total + db_len } else { total }),
        (db_parent, db_len),
    ];
    for (dir, bytes) in needs {
        if place::free_bytes(dir).is_some_and(|free| free < bytes) {
            return Err(Error::Refused {
                what: format!(
                    "`{}` has {} bytes free; the repair needs {bytes} there",
                    dir.display(),
                    place::free_bytes(dir).unwrap_or(0)
                ),
                hint: "free space, or pass --archive DIR on a filesystem with room".into(),
            });
        }
    }
    Ok(())
}

/// Whether the database needs no repair: no log beside it, every page as the format
/// says, and SQLite's integrity check (which covers full-text indexes) passes.
fn healthy(db: &Path) -> bool {
    let logs = ["-wal", "-journal"]
        .iter()
        .any(|s| std::fs::metadata(beside(db, s)).is_ok_and(|m| m.len() > 0));
    !logs
        && crate::inspect::inspect_file(db, false).is_ok_and(|r| r.verdict.healthy)
        && place::integrity(db).is_ok()
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

/// Carries the repair on from the phase its journal records.
fn run(
    j: &mut Journal,
    who: &Provenance,
    observer: &dyn Observer,
    known: Known,
) -> Result<Repaired, Error> {
    loop {
        match j.phase {
            Phase::Validated => archive(j, who)?,
            Phase::Archived => {
                if let Some(withheld) = recover(j, observer)? {
                    return Ok(withheld);
                }
            }
            Phase::Withheld if j.allow_partial => commit_withheld(j)?,
            Phase::Withheld => return Err(unfinished(j)),
            Phase::Recovered => verify(j)?,
            Phase::Verified => remove_sidecars(j)?,
            Phase::SidecarsRemoved => swap(j, known)?,
            Phase::Swapped => finish(j, known)?,
            Phase::Done => {
                j.remove()?;
                return Ok(Repaired::Replaced {
                    partial: j.partial,
                    archive: j.archive.clone(),
                    report: j.report.clone(),
                });
            }
        }
    }
}

/// Copies the database and its sidecars into the archive. A partial archive left by a
/// stop during the copy is this repair's own: it is removed and the copy made again.
fn archive(j: &mut Journal, who: &Provenance) -> Result<(), Error> {
    let partial = bundle::incomplete(&j.archive);
    if partial.exists() {
        std::fs::remove_dir_all(&partial).map_err(Error::Output)?;
    }
    let manifest = if j.archive.exists() {
        // Stopped after the archive was renamed into place: it must still match.
        let v = bundle::verify(&j.archive)?;
        if !v.intact() {
            return Err(Error::Refused {
                what: format!("the archive `{}` differs from its manifest", j.archive.display()),
                hint: "nothing was changed at the database's path; look at the archive, then `--rollback`".into(),
            });
        }
        v.manifest
    } else {
        bundle::make(&j.db, &j.archive, "repair-archive", who)?
    };
    j.archived = manifest.files;
    j.advance(Phase::Archived)
}

/// Recovers the archived copy into the shadow. `Some` when the recovery is withheld.
fn recover(j: &mut Journal, observer: &dyn Observer) -> Result<Option<Repaired>, Error> {
    // What a stop during an earlier attempt left is this repair's own, and derived.
    for leftover in [
        &j.shadow,
        &beside(&j.shadow, ".incomplete"),
        &j.report,
        &beside(&j.report, ".incomplete"),
    ] {
        if leftover.exists() {
            std::fs::remove_file(leftover).map_err(Error::Output)?;
        }
    }
    let name = j
        .archived("database")
        .map(|f| f.path.clone())
        .unwrap_or_default();
    let mut options = RecoverOptions::new(j.archive.join(name), &j.shadow);
    options.report = Some(j.report.clone());
    options.allow_partial = j.allow_partial;
    let done = crate::recover(&options, observer)?;
    match done.outcome {
        Outcome::Complete | Outcome::PartialCommitted => {
            j.partial = done.outcome == Outcome::PartialCommitted;
            j.advance(Phase::Recovered)?;
            Ok(None)
        }
        Outcome::Withheld | Outcome::NotVerified { .. } => {
            j.advance(Phase::Withheld)?;
            Ok(Some(Repaired::Withheld {
                shadow: beside(&j.shadow, ".incomplete"),
                report: j.report.clone(),
            }))
        }
    }
}

/// A withheld recovery accepted (`--resume --allow-partial`): put at the shadow path.
fn commit_withheld(j: &mut Journal) -> Result<(), Error> {
    let held = beside(&j.shadow, ".incomplete");
    if !held.exists() {
        return Err(Error::Refused {
            what: format!("the withheld recovery `{}` is gone", held.display()),
            hint: "`--rollback` ends the repair (the original is untouched)".into(),
        });
    }
    crate::bundle::files::rename_durably(&held, &j.shadow).map_err(Error::Output)?;
    j.partial = true;
    j.advance(Phase::Recovered)
}

/// SQLite's integrity check of the shadow; its hash, recorded.
fn verify(j: &mut Journal) -> Result<(), Error> {
    place::integrity(&j.shadow).map_err(|why| {
        Error::Output(std::io::Error::other(format!(
            "the recovery `{}` fails SQLite's integrity check: {why}",
            j.shadow.display()
        )))
    })?;
    j.recovered_sha256 = Some(hash(&j.shadow)?.sha256);
    j.advance(Phase::Verified)
}

/// Removes the old `-wal`, `-shm` and `-journal` from beside the database, each only
/// when it is byte for byte its archived copy (else the application wrote since: the
/// repair stops, nothing moved). The database itself must still be its archived copy.
fn remove_sidecars(j: &mut Journal) -> Result<(), Error> {
    check_not_in_use(&j.db)?;
    let changed = |path: &Path| {
        Error::Refused {
        what: format!("`{}` changed since it was archived", path.display()),
        hint: "the application wrote to the database during the repair: stop it, then `--rollback` and repair again".into(),
    }
    };
    if let Some(original) = j.archived("database") {
        if hash(&j.db)?.sha256 != original.sha256 {
            return Err(changed(&j.db));
        }
    }
    for (suffix, role) in bundle::SIDECARS.iter().zip(["wal", "shm", "journal"]) {
        let path = beside(&j.db, suffix);
        if !path.exists() {
            continue;
        }
        match j.archived(role) {
            Some(a) if hash(&path)?.sha256 == a.sha256 => {
                std::fs::remove_file(&path).map_err(Error::Output)?;
            }
            _ => return Err(changed(&path)),
        }
    }
    crate::bundle::files::sync_parent(&j.db).map_err(Error::Output)?;
    j.advance(Phase::SidecarsRemoved)
}

/// Puts the shadow at the database's path: an atomic exchange of the two paths, else the
/// original renamed aside and the shadow renamed in (the window the journal covers).
/// A stop between the exchange and its record is told by the files' hashes.
fn swap(j: &mut Journal, known: Known) -> Result<(), Error> {
    let recovered = j.recovered_sha256.clone().unwrap_or_default();
    let at_db = match (known, j.db.exists()) {
        (_, false) => None,
        // This run checked the original at DB a step ago and has not swapped yet.
        (Known::ByThisRun, true) => j.archived("database").map(|f| f.sha256.clone()),
        (Known::FromJournal, true) => Some(hash(&j.db)?.sha256),
    };
    if at_db.as_deref() != Some(recovered.as_str()) {
        if j.db.exists() {
            if !place::exchange(&j.shadow, &j.db).map_err(Error::Output)? {
                crate::bundle::files::rename_durably(&j.db, &j.aside).map_err(Error::Output)?;
                crate::bundle::files::rename_durably(&j.shadow, &j.db).map_err(Error::Output)?;
            }
        } else {
            // Stopped between the two renames of the fallback.
            crate::bundle::files::rename_durably(&j.shadow, &j.db).map_err(Error::Output)?;
        }
    }
    j.advance(Phase::Swapped)
}

/// Removes the original's leftover copy beside the database (the shadow or aside path),
/// only when it is byte for byte the archived original (known without reading it when
/// this run put it there a step ago).
fn finish(j: &mut Journal, known: Known) -> Result<(), Error> {
    let original = j
        .archived("database")
        .map(|f| f.sha256.clone())
        .unwrap_or_default();
    for left in [&j.shadow, &j.aside] {
        if left.exists() && (known == Known::ByThisRun || hash(left)?.sha256 == original) {
            std::fs::remove_file(left).map_err(Error::Output)?;
        }
    }
    j.advance(Phase::Done)
}

/// Puts the original back at its path and ends the repair, from whatever phase it
/// reached: the database exchanged back (or copied back from the archive, its hash
/// checked), the sidecars copied back from the archive. What the repair made (the
/// archive, the recovery, the report) is kept.
fn rollback(j: &Journal) -> Result<Repaired, Error> {
    let mut steps = Vec::new();
    let original = j
        .archived("database")
        .map(|f| f.sha256.clone())
        .unwrap_or_default();
    let at_db = if j.db.exists() {
        Some(hash(&j.db)?.sha256)
    } else {
        None
    };
    if j.phase >= Phase::Verified && at_db.as_deref() != Some(original.as_str()) {
        let old = [&j.shadow, &j.aside]
            .into_iter()
            .find(|p| p.exists() && hash(p).is_ok_and(|h| h.sha256 == original));
        match (old, j.db.exists()) {
            (Some(old), true) if place::exchange(old, &j.db).map_err(Error::Output)? => {
                steps.push(format!(
                    "exchanged `{}` back with `{}`",
                    j.db.display(),
                    old.display()
                ));
            }
            (Some(old), false) => {
                crate::bundle::files::rename_durably(old, &j.db).map_err(Error::Output)?;
                steps.push(format!(
                    "renamed `{}` back to `{}`",
                    old.display(),
                    j.db.display()
                ));
            }
            _ => {
                let name = j
                    .archived("database")
                    .map(|f| f.path.clone())
                    .unwrap_or_default();
                let back = beside(&j.db, ".salvage-restore");
                let _ = std::fs::remove_file(&back);
                let copied = copy_durably(&j.archive.join(name), &back).map_err(Error::Output)?;
                if copied.sha256 != original {
                    return Err(Error::Refused {
                        what: format!("the archive's copy of the database does not match its manifest (`{}`)", j.archive.display()),
                        hint: "`salvage verify` the archive; nothing at the database's path was changed".into(),
                    });
                }
                let kept = beside(&j.db, ".salvage-repaired");
                if j.db.exists() {
                    crate::bundle::files::rename_durably(&j.db, &kept).map_err(Error::Output)?;
                    steps.push(format!(
                        "moved the repaired database to `{}`",
                        kept.display()
                    ));
                }
                crate::bundle::files::rename_durably(&back, &j.db).map_err(Error::Output)?;
                steps.push(format!(
                    "copied the original back from `{}`",
                    j.archive.display()
                ));
            }
        }
    }
    for (suffix, role) in bundle::SIDECARS.iter().zip(["wal", "shm", "journal"]) {
        let path = beside(&j.db, suffix);
        let Some(a) = j.archived(role) else { continue };
        if path.exists() {
            continue;
        }
        let copied = copy_durably(&j.archive.join(&a.path), &path).map_err(Error::Output)?;
        if copied.sha256 != a.sha256 {
            return Err(Error::Refused {
                what: format!(
                    "the archive's copy of `{}` does not match its manifest",
                    a.path
                ),
                hint: format!("`salvage verify {}`", j.archive.display()),
            });
        }
        steps.push(format!("copied `{}` back from the archive", path.display()));
    }
    j.remove()?;
    if steps.is_empty() {
        steps.push("the original was never moved; the repair's journal is removed".into());
    }
    Ok(Repaired::RolledBack { steps })
}

/// A file's hash, an error naming it.
fn hash(path: &Path) -> Result<bundle::files::Copied, Error> {
    hash_file(path).map_err(|e| Error::Source {
        path: path.to_path_buf(),
        source: e,
    })
}
