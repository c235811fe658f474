//! Ending a recorded repair another way than by finishing it: `--rollback` puts the
//! original and its logs back at the database's path, `--abandon` leaves the path as the
//! application left it. Neither replaces a file the repair cannot prove is its own or
//! the original: a database the application wrote to since the repair read it stays where
//! the application finds it. Both remove what the repair made beside the database (the
//! recovery, the fences, the staged copies) once the journal or a hash proves it is the
//! repair's, and keep the report. A repair of format 2 copied the original into its
//! archive first, and the archive is kept; one of format 3 files the original's own files
//! there only after the switch, and a rollback that put them back removes that archive,
//! whose files are second names of (or copies of) what is back at the database's path.

use std::path::{Path, PathBuf};

use super::journal::{Journal, Phase};
use super::steps::record;
use super::switch::hold;
use super::{
    exchange, hash, is_fence, log_path, named, old_log, place, restoring, Repaired, Step, LOGS,
};
use crate::base::error::Error;
use crate::base::files::{copy_durably, now, FileStamp};
use crate::base::paths::with_suffix as beside;
use crate::custody::bundle::Role;
use crate::report::RepairState;

/// What is at the database's path.
#[derive(Clone, Debug, PartialEq, Eq)]
enum AtDb {
    /// The original, as archived.
    Original,
    /// The repair's recovery, as verified.
    Recovery,
    /// Nothing (moved away by a person, or an empty file SQLite made while the fences
    /// kept it from opening the database).
    Absent,
    /// Something else: the application's.
    Other {
        /// Its SHA-256.
        sha256: String,
    },
}

/// Whether a fence of the repair stands at one of the logs' names.
fn fenced(j: &Journal) -> bool {
    LOGS.iter().any(|r| is_fence(&log_path(&j.db, *r)))
}

/// What is at the database's path, by its hash. An empty file while the fences stand is
/// what SQLite makes when an application opens a database whose file was moved away (its
/// open then fails on the fence): it holds nothing, and is removed.
fn at_db(j: &Journal) -> Result<AtDb, Error> {
    let Ok(meta) = std::fs::symlink_metadata(&j.db) else {
        return Ok(AtDb::Absent);
    };
    if meta.is_file() && meta.len() == 0 && fenced(j) {
        std::fs::remove_file(&j.db).map_err(Error::writing(&j.db))?;
        return Ok(AtDb::Absent);
    }
    if unchanged_since_read(j, Role::Database, &j.db) {
        return Ok(AtDb::Original);
    }
    let now = hash(&j.db)?.sha256;
    Ok(
        if Some(&now) == j.archived(Role::Database).map(|a| &a.sha256) {
            AtDb::Original
        } else if Some(&now) == j.recovered_sha256.as_ref() {
            AtDb::Recovery
        } else {
            AtDb::Other { sha256: now }
        },
    )
}

/// Whether the file at `path` is the original's file of `role`, by its stamp alone: the
/// one the recovery's read saw, which the journal records only where it had settled
/// before that read (so that a write since would have moved it).
fn unchanged_since_read(j: &Journal, role: Role, path: &Path) -> bool {
    j.archived(role).is_some()
        && j.seen(role)
            .is_some_and(|seen| FileStamp::read(path).ok() == Some(seen.stamp))
}

/// A log beside the database that is neither the original's archived log nor a fence:
/// one the application wrote.
fn foreign_log(j: &Journal) -> Result<Option<PathBuf>, Error> {
    for role in LOGS {
        let path = log_path(&j.db, role);
        match std::fs::symlink_metadata(&path) {
            Err(_) => {}
            Ok(_) if is_fence(&path) => {}
            Ok(m)
                if m.is_file()
                    && (unchanged_since_read(j, role, &path)
                        || j.archived(role).map(|a| &a.sha256) == Some(&hash(&path)?.sha256)) => {}
            Ok(_) => return Ok(Some(path)),
        }
    }
    Ok(None)
}

/// The refusal to replace what the application wrote.
fn not_ours(j: &Journal, at: &AtDb, log: Option<&Path>) -> Error {
    let db = named(j);
    let why = match (at, log) {
        (AtDb::Other { sha256 }, _) => format!("its SHA-256 is {sha256}"),
        (_, Some(log)) => format!(
            "a log the repair did not make lies beside it, `{}`",
            log.display()
        ),
        _ => String::new(),
    };
    let recovery = [j.shadow.clone(), beside(&j.shadow, ".incomplete")]
        .into_iter()
        .find(|p| p.exists())
        .map_or(String::new(), |p| {
            format!(", the recovery is at `{}`", p.display())
        });
    Error::Refused {
        what: format!(
            "`{}` holds neither the original this repair archived nor its recovery ({why}): the application has written to it since; it is left as it is",
            db.display()
        ),
        hint: match j.archive.is_dir() && (!j.files_last() || super::filing::is_ours(j, &j.archive)) {
            true => format!(
                "the original and its sidecars are archived in `{0}` (`salvage verify` it){recovery}. To keep the database as the application left it and end this repair: `salvage repair {1} --abandon`. To put the original back anyway, move `{1}` and its -wal and -journal away first, then run `--rollback` again",
                j.archive.display(),
                db.display()
            ),
            false => format!(
                "no archive of the original is left (the repair files it only as it switches the recovery in, and a rollback removes it once the original is back){recovery}. To keep the database as the application left it and end this repair: `salvage repair {0} --abandon`",
                db.display()
            ),
        },
    }
}

/// Puts the original back at its path and ends the repair, from whatever phase it
/// reached. Every copy it needs from the archive is made and hash checked first, while
/// nothing has moved. Then each log's name gets a fence; the database is exchanged back
/// (or renamed onto an empty path), then each of the original's logs exchanged with its
/// fence and the other fences removed: at no instant does the path hold the original
/// without its log or anything with the wrong log. While the fences stand the journal
/// says a rollback is under way (`rolling_back`), and `--resume` is refused. Refused when
/// the path holds what the application wrote.
pub(super) fn rollback(j: &mut Journal) -> Result<Repaired, Error> {
    let _held = hold(j)?;
    let mut steps = Vec::new();
    // From here the repair is being undone: the journal says so, and a resume, which
    // would take a half-restored (or cleaned-up) path for the repair's, is refused.
    let under_way = |j: &mut Journal| -> Result<(), Error> {
        if !j.rolling_back {
            j.rolling_back = true;
            j.write()?;
        }
        crate::base::crash::point("repair:rolling-back");
        Ok(())
    };
    if j.archived(Role::Database).is_some() {
        let at = at_db(j)?;
        let foreign = foreign_log(j)?;
        if matches!(at, AtDb::Other { .. }) || foreign.is_some() {
            return Err(not_ours(j, &at, foreign.as_deref()));
        }
        let (stamp, stamped) = (stamp_of(&j.db), now());
        under_way(j)?;
        let logs = stage_logs(j, &at)?;
        let database = stage_database(j, &at)?;
        let shm = stage_shm(j)?;
        crate::base::crash::point("repair:rollback-staged");
        for (_, path) in &logs {
            if !is_fence(path) {
                std::fs::create_dir(path).map_err(Error::writing(path))?;
                steps.push(Step::Fenced(path.clone()));
            }
        }
        // The staging took time without fences: what the application did meanwhile is
        // looked at again, and until the database is back a failure takes this run's
        // fences down again, leaving the path to the application.
        let back = (|| {
            let moved = stamp_of(&j.db) != stamp || stamp.is_some_and(|s| s.racy(stamped));
            if moved {
                let again = at_db(j)?;
                if again != at {
                    return Err(not_ours(j, &again, None));
                }
            }
            if let Some(log) = foreign_log(j)? {
                return Err(not_ours(j, &at, Some(&log)));
            }
            match database {
                Some(from) => put_back_database(j, &at, from, &mut steps),
                None => Ok(()),
            }
        })();
        if let Err(e) = back {
            for step in &steps {
                if let Step::Fenced(fence) = step {
                    if is_fence(fence) {
                        std::fs::remove_dir(fence).map_err(Error::writing(fence))?;
                    }
                }
            }
            return Err(e);
        }
        if let Some(staged) = shm {
            let path = beside(&j.db, "-shm");
            place::rename_noreplace(&staged, &path).map_err(Error::writing(&path))?;
            steps.push(Step::PutBack(path));
        }
        // While the fences still stand: a stop after they are gone must not leave the
        // archive a second name of the database the application then writes.
        if j.files_last() {
            remove_filed_archive(j, &mut steps)?;
        }
        crate::base::crash::point("repair:rollback-archive-removed");
        for (staged, path) in logs {
            match staged {
                Some(staged) => {
                    exchange(&staged, &path)?;
                    std::fs::remove_dir(&staged).map_err(Error::writing(&staged))?;
                    steps.push(Step::PutBack(path));
                }
                None => std::fs::remove_dir(&path).map_err(Error::writing(&path))?,
            }
        }
        crate::base::crash::point("repair:rollback-moved");
    } else {
        under_way(j)?;
    }
    // Every original file is back at its path (or there never was one to move).
    clean(j, &mut steps, true)?;
    crate::base::crash::point("repair:rollback-cleaned");
    record(j, RepairState::RolledBack)?;
    j.remove()?;
    if steps.is_empty() {
        steps.push(Step::NothingMoved);
    }
    Ok(Repaired::RolledBack { steps })
}

/// The stamp of what is at `path` (a link not followed).
fn stamp_of(path: &Path) -> Option<FileStamp> {
    std::fs::symlink_metadata(path)
        .ok()
        .map(|m| FileStamp::of(&m))
}

/// Each log's name to fence (while the database is not the original, no log may appear
/// beside it), with the original's log to put back there: from where the switch's fence
/// keeps it, where a rollback stopped partway staged it, else copied from the archive
/// (its hash checked); `None`: the original had no such log, the fence is only removed.
/// Nothing is fenced or moved yet.
fn stage_logs(j: &Journal, at: &AtDb) -> Result<Vec<(Option<PathBuf>, PathBuf)>, Error> {
    let mut logs = Vec::new();
    for role in LOGS {
        let path = log_path(&j.db, role);
        if std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_file()) {
            continue; // the archived log, still at its name (foreign ones were refused)
        }
        let staged = match j.archived(role) {
            None => None,
            Some(archived) => {
                let suffix = role.suffix().unwrap_or_default();
                // Where the switch kept it, or where a rollback stopped partway staged it
                // (its only copy once that rollback removed a filed archive).
                let kept = holding(
                    [old_log(&j.db, role), restoring(&j.db, suffix)],
                    &archived.sha256,
                )?;
                if kept.is_some() {
                    kept
                } else if j.files_last()
                    && j.phase < Phase::Swapped
                    && *at == AtDb::Original
                    && !super::filing::is_ours(j, &j.archive)
                {
                    // A repair of format 3 copied nothing, and before its switch moved no
                    // log: the log the recovery read is neither at its name nor kept
                    // aside (the application removed it, the database unchanged), and
                    // the path is as the application left it.
                    None
                } else {
                    Some(from_archive(
                        j,
                        &archived.path,
                        &archived.sha256,
                        &restoring(&j.db, suffix),
                    )?)
                }
            }
        };
        // The original alone at its path with no log of its own needs no fence.
        if staged.is_none() && *at == AtDb::Original && !is_fence(&path) {
            continue;
        }
        logs.push((staged, path));
    }
    Ok(logs)
}

/// The first of `candidates` that is a regular file (a link not followed) with the
/// SHA-256 `sha256`.
fn holding(
    candidates: impl IntoIterator<Item = PathBuf>,
    sha256: &str,
) -> Result<Option<PathBuf>, Error> {
    for candidate in candidates {
        if std::fs::symlink_metadata(&candidate).is_ok_and(|m| m.is_file())
            && hash(&candidate)?.sha256 == sha256
        {
            return Ok(Some(candidate));
        }
    }
    Ok(None)
}

/// Where the original database comes back from when it is not at its path: the shadow
/// (or the aside path of a repair of journal format 1) where the swap left it, a copy a
/// stopped rollback staged, else a copy from the archive (each by its hash).
fn stage_database(j: &Journal, at: &AtDb) -> Result<Option<PathBuf>, Error> {
    let Some(archived) = j.archived(Role::Database).filter(|_| *at != AtDb::Original) else {
        return Ok(None);
    };
    let candidates = [j.shadow.clone(), j.aside.clone(), restoring(&j.db, "")];
    if let Some(kept) = holding(candidates, &archived.sha256)? {
        return Ok(Some(kept));
    }
    from_archive(j, &archived.path, &archived.sha256, &restoring(&j.db, "")).map(Some)
}

/// Puts the original database `from` at its path: exchanged with the recovery, or
/// renamed onto an empty path (never over a file).
fn put_back_database(
    j: &Journal,
    at: &AtDb,
    from: PathBuf,
    steps: &mut Vec<Step>,
) -> Result<(), Error> {
    if *at == AtDb::Absent {
        place::rename_noreplace(&from, &j.db).map_err(Error::writing(&j.db))?;
        steps.push(Step::Renamed {
            from,
            to: j.db.clone(),
        });
    } else {
        exchange(&from, &j.db)?;
        steps.push(Step::Exchanged {
            db: j.db.clone(),
            from,
        });
    }
    Ok(())
}

/// A copy of the original's `-shm` from the archive, when it is archived and its name is
/// free (SQLite would make a new one from the log; the original's is put back byte for
/// byte).
fn stage_shm(j: &Journal) -> Result<Option<PathBuf>, Error> {
    let Some(archived) = j.archived(Role::Shm) else {
        return Ok(None);
    };
    if std::fs::symlink_metadata(beside(&j.db, "-shm")).is_ok() {
        return Ok(None);
    }
    from_archive(
        j,
        &archived.path,
        &archived.sha256,
        &restoring(&j.db, "-shm"),
    )
    .map(Some)
}

/// A copy of the archived file `name` at `to` (a staging name of the repair's own,
/// emptied first), its hash checked against `sha256`.
fn from_archive(j: &Journal, name: &str, sha256: &str, to: &Path) -> Result<PathBuf, Error> {
    let from = j
        .archive
        .join(crate::custody::bundle::safe_relative(name).unwrap_or_default());
    if std::fs::symlink_metadata(to).is_ok() {
        std::fs::remove_file(to).map_err(Error::writing(to))?;
    }
    let copied = copy_durably(&from, to).map_err(Error::writing(to))?;
    if copied.sha256 != sha256 {
        let _ = std::fs::remove_file(to);
        return Err(Error::Refused {
            what: format!(
                "the archive's copy `{}` does not match its manifest",
                from.display()
            ),
            hint: format!(
                "`salvage verify {}`; nothing at the database's path was changed",
                j.archive.display()
            ),
        });
    }
    Ok(to.to_path_buf())
}

/// Removes the archive a repair of format 3 filed the original into, once the original and
/// its sidecars are back at their paths: its files are their second names, or copies
/// (each hash checked when made); left in place, a linked one would change with the
/// database the application writes.
fn remove_filed_archive(j: &Journal, steps: &mut Vec<Step>) -> Result<(), Error> {
    if std::fs::symlink_metadata(&j.archive).is_ok_and(|m| m.is_dir())
        && j.phase >= Phase::Swapped
        && super::filing::is_ours(j, &j.archive)
    {
        // Renamed to its partial name first, which every later run removes: a stop in the
        // middle of the removal leaves no remnant under the archive's name without its
        // manifest, which none would take for this repair's.
        let partial = crate::custody::bundle::incomplete(&j.archive);
        crate::base::files::rename_durably(&j.archive, &partial)
            .map_err(Error::writing(&j.archive))?;
        std::fs::remove_dir_all(&partial).map_err(Error::writing(&partial))?;
        steps.push(Step::RemovedArchive(j.archive.clone()));
    }
    Ok(())
}

/// Ends the repair, leaving the database's path as the application left it (which it
/// wrote to since the archive was made): what the repair made beside it is removed, the
/// archive and the report kept. Refused in the middle of the switch (the fences are up:
/// `--resume` or `--rollback` ends it), or when nothing is at the path.
pub(super) fn abandon(j: &Journal) -> Result<Repaired, Error> {
    let db = named(j);
    if let Some(fence) = LOGS
        .iter()
        .map(|r| log_path(&j.db, *r))
        .find(|p| is_fence(p))
    {
        return Err(Error::Refused {
            what: format!(
                "the repair of `{}` stopped in the middle of its switch (`{}` is its fence)",
                db.display(),
                fence.display()
            ),
            hint: format!(
                "`salvage repair {0} --resume` finishes it, `salvage repair {0} --rollback` puts the original back",
                db.display()
            ),
        });
    }
    if std::fs::symlink_metadata(&j.db).is_err() {
        return Err(Error::Refused {
            what: format!("nothing is at `{}`", j.db.display()),
            hint: format!(
                "`salvage repair {} --rollback` puts the original back",
                db.display()
            ),
        });
    }
    let _held = hold(j)?;
    let mut steps = vec![Step::LeftAsIs(j.db.clone())];
    clean(j, &mut steps, false)?;
    record(j, RepairState::Abandoned)?;
    j.remove()?;
    Ok(Repaired::Abandoned { steps })
}

/// Removes what the repair made beside the database and no longer needs, each once it is
/// proven the repair's: the recovery at the shadow path and its `.incomplete` (by the
/// hashes the journal records; before the recovery is verified, by the journal alone:
/// the start saw those names free and only the recovery writes there), the original's
/// copies the archive holds, staged copies (by their hashes), empty folders at the
/// repair's own names, SQLite's files beside the shadow, a partial archive, a partial
/// report. Never the database's path or its sidecars, the archive or the report. A file
/// holding an original's bytes is removed only while a copy of it is known to remain:
/// `originals_back` (a rollback put each at its path), an archive an older build copied
/// first, or this repair's own filed archive; else it is kept, and the step says where
/// (an abandon of a repair of format 3 stopped in its switch: there it is the only copy).
fn clean(j: &Journal, steps: &mut Vec<Step>, originals_back: bool) -> Result<(), Error> {
    let mut known: Vec<String> = j
        .recovered_sha256
        .iter()
        .chain(&j.withheld_sha256)
        .cloned()
        .collect();
    let originals: Vec<String> = j.archived.iter().map(|f| f.sha256.clone()).collect();
    let kept_elsewhere = originals_back
        || !j.files_last()
        || (j.archive.is_dir() && super::filing::is_ours(j, &j.archive));
    if kept_elsewhere {
        known.extend(originals.iter().cloned());
    }
    let recovering = j.phase <= Phase::Withheld;
    let shadows = [j.shadow.clone(), beside(&j.shadow, ".incomplete")];
    let mut candidates: Vec<PathBuf> = shadows.to_vec();
    candidates.push(j.aside.clone());
    candidates.extend(["", "-wal", "-journal", "-shm"].map(|s| restoring(&j.db, s)));
    candidates.extend(LOGS.iter().map(|r| old_log(&j.db, *r)));
    for path in candidates {
        match std::fs::symlink_metadata(&path) {
            Ok(_) if is_fence(&path) => {
                std::fs::remove_dir(&path).map_err(Error::writing(&path))?;
            }
            Ok(m) if m.is_file() => {
                let sha256 = match recovering && shadows.contains(&path) {
                    true => None,
                    false => Some(hash(&path)?.sha256),
                };
                if sha256.as_ref().is_none_or(|h| known.contains(h)) {
                    std::fs::remove_file(&path).map_err(Error::writing(&path))?;
                    steps.push(Step::Removed(path));
                } else if sha256.is_some_and(|h| originals.contains(&h)) {
                    steps.push(Step::KeptOriginal(path));
                }
            }
            _ => {}
        }
    }
    // SQLite's files beside the shadow, and a partial report: the repair's own by their
    // names (the start saw none of them, and only the repair's SQLite writes them).
    let mut derived: Vec<PathBuf> = shadows
        .iter()
        .flat_map(|s| ["-wal", "-journal", "-shm"].map(|x| beside(s, x)))
        .collect();
    derived.push(beside(&j.report, ".incomplete"));
    for path in derived {
        if std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_file()) {
            std::fs::remove_file(&path).map_err(Error::writing(&path))?;
            steps.push(Step::Removed(path));
        }
    }
    let partial = crate::custody::bundle::incomplete(&j.archive);
    if partial.is_dir() {
        std::fs::remove_dir_all(&partial).map_err(Error::writing(&partial))?;
        steps.push(Step::RemovedPartialArchive(partial));
    }
    Ok(())
}
