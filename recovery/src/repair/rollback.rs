//! Ending a recorded repair another way than by finishing it: `--rollback` puts the
//! original and its logs back at the database's path, `--abandon` leaves the path as the
//! application left it. Neither replaces a file the repair cannot prove is its own or
//! the original: a database the application wrote to since it was archived stays where
//! the application finds it. Both remove what the repair made beside the database (the
//! recovery, the fences, the staged copies) once the journal or a hash proves it is the
//! repair's, and keep the archive and the report.

use std::path::{Path, PathBuf};

use super::journal::{Journal, Phase};
use super::steps::record;
use super::switch::hold;
use super::{hash, is_fence, named, old_log, place, restoring, Repaired, LOGS};
use crate::bundle::files::copy_durably;
use crate::error::Error;
use crate::report::RepairState;
use crate::request::with_suffix as beside;

/// What is at the database's path.
#[derive(Clone, Debug, PartialEq, Eq)]
enum AtDb {
    /// The original, as archived.
    Original,
    /// The repair's recovery, as verified.
    Recovery,
    /// Nothing (a stop between two renames).
    Absent,
    /// Something else: the application's.
    Other {
        /// Its SHA-256.
        sha256: String,
    },
}

/// What is at the database's path, by its hash.
fn at_db(j: &Journal) -> Result<AtDb, Error> {
    if std::fs::symlink_metadata(&j.db).is_err() {
        return Ok(AtDb::Absent);
    }
    let now = hash(&j.db)?.sha256;
    Ok(if Some(&now) == j.archived("database").map(|a| &a.sha256) {
        AtDb::Original
    } else if Some(&now) == j.recovered_sha256.as_ref() {
        AtDb::Recovery
    } else {
        AtDb::Other { sha256: now }
    })
}

/// A log beside the database that is neither the original's archived log nor a fence:
/// one the application wrote.
fn foreign_log(j: &Journal) -> Result<Option<PathBuf>, Error> {
    for (suffix, role) in LOGS {
        let path = beside(&j.db, suffix);
        match std::fs::symlink_metadata(&path) {
            Err(_) => {}
            Ok(_) if is_fence(&path) => {}
            Ok(m) if m.is_file() && j.archived(role).map(|a| &a.sha256) == Some(&hash(&path)?.sha256) => {}
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
        (_, Some(log)) => format!("a log the repair did not make lies beside it, `{}`", log.display()),
        _ => String::new(),
    };
    let recovery = [j.shadow.clone(), beside(&j.shadow, ".incomplete")]
        .into_iter()
        .find(|p| p.exists())
        .map_or(String::new(), |p| format!(", the recovery is at `{}`", p.display()));
    Error::Refused {
        what: format!(
            "`{}` holds neither the original this repair archived nor its recovery ({why}): the application has written to it since; it is left as it is",
            db.display()
        ),
        hint: format!(
            "the original and its sidecars are archived in `{}` (`salvage verify` it){recovery}. To keep the database as the application left it and end this repair: `salvage repair {1} --abandon`. To put the original back anyway, move `{1}` and its -wal and -journal away first, then run `--rollback` again",
            j.archive.display(),
            db.display()
        ),
    }
}

/// Puts the original back at its path and ends the repair, from whatever phase it
/// reached. Each of the original's logs gets a fence at its name first; then the
/// database is exchanged back (or renamed onto an empty path), then each log exchanged
/// with its fence: at no instant does the path hold the original without its log or
/// anything with the wrong log. Refused when the path holds what the application wrote.
pub(super) fn rollback(j: &Journal) -> Result<Repaired, Error> {
    let _held = hold(j)?;
    let mut steps = Vec::new();
    if j.archived("database").is_some() {
        let at = at_db(j)?;
        let foreign = foreign_log(j)?;
        if matches!(at, AtDb::Other { .. }) || foreign.is_some() {
            return Err(not_ours(j, &at, foreign.as_deref()));
        }
        let logs = stage_logs(j, &mut steps)?;
        put_back_database(j, &at, &mut steps)?;
        for (staged, path) in logs {
            let write = |source| Error::Write {
                path: path.clone(),
                source,
            };
            if place::exchange(&staged, &path).map_err(write)? {
                std::fs::remove_dir(&staged).map_err(write)?;
            } else {
                std::fs::remove_dir(&path).map_err(write)?;
                place::rename_noreplace(&staged, &path).map_err(write)?;
            }
            steps.push(format!("put the original `{}` back", path.display()));
        }
        put_back_shm(j, &mut steps)?;
    }
    clean(j, &mut steps)?;
    record(j, RepairState::RolledBack)?;
    j.remove()?;
    if steps.is_empty() {
        steps.push("the original was never moved; the repair's journal is removed".into());
    }
    Ok(Repaired::RolledBack { steps })
}

/// Each of the original's logs that is not at its name: staged (from where the fence
/// keeps it, else copied from the archive, its hash checked) with a fence made at its
/// name. Returns the staged copies and their names.
fn stage_logs(j: &Journal, steps: &mut Vec<String>) -> Result<Vec<(PathBuf, PathBuf)>, Error> {
    let mut logs = Vec::new();
    for (suffix, role) in LOGS {
        let Some(archived) = j.archived(role) else {
            continue;
        };
        let path = beside(&j.db, suffix);
        if std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_file()) {
            continue; // the archived log, still at its name (foreign ones were refused)
        }
        let old = old_log(&j.db, suffix);
        let staged = if std::fs::symlink_metadata(&old).is_ok_and(|m| m.is_file())
            && hash(&old)?.sha256 == archived.sha256
        {
            old
        } else {
            from_archive(j, &archived.path, &archived.sha256, &restoring(&j.db, suffix))?
        };
        if !is_fence(&path) {
            std::fs::create_dir(&path).map_err(|source| Error::Write {
                path: path.clone(),
                source,
            })?;
            steps.push(format!(
                "fenced `{}` until the original's log is back",
                path.display()
            ));
        }
        logs.push((staged, path));
    }
    Ok(logs)
}

/// Puts the original database at its path when it is not there: from the shadow or
/// aside path where the swap left it, else copied from the archive (its hash checked);
/// exchanged with the recovery, or renamed onto an empty path.
fn put_back_database(j: &Journal, at: &AtDb, steps: &mut Vec<String>) -> Result<(), Error> {
    if *at == AtDb::Original {
        return Ok(());
    }
    let Some(archived) = j.archived("database") else {
        return Ok(());
    };
    let mut from = None;
    for candidate in [&j.shadow, &j.aside, &restoring(&j.db, "")] {
        if candidate.is_file() && hash(candidate)?.sha256 == archived.sha256 {
            from = Some(candidate.clone());
            break;
        }
    }
    let from = match from {
        Some(f) => f,
        None => from_archive(j, &archived.path, &archived.sha256, &restoring(&j.db, ""))?,
    };
    let write = |source| Error::Write {
        path: j.db.clone(),
        source,
    };
    if *at == AtDb::Absent {
        place::rename_noreplace(&from, &j.db).map_err(write)?;
        steps.push(format!(
            "renamed `{}` back to `{}`",
            from.display(),
            j.db.display()
        ));
    } else if place::exchange(&from, &j.db).map_err(write)? {
        steps.push(format!(
            "exchanged `{}` back with the original from `{}`",
            j.db.display(),
            from.display()
        ));
    } else {
        // No atomic exchange here: the recovery goes to a free name of the repair's own,
        // then the original onto the empty path (the fences keep SQLite out meanwhile).
        let out = [&j.shadow, &j.aside]
            .into_iter()
            .find(|p| std::fs::symlink_metadata(p).is_err())
            .cloned()
            .unwrap_or_else(|| restoring(&j.db, ".recovery"));
        place::rename_noreplace(&j.db, &out).map_err(write)?;
        place::rename_noreplace(&from, &j.db).map_err(write)?;
        steps.push(format!(
            "renamed the recovery to `{}` and the original back to `{}`",
            out.display(),
            j.db.display()
        ));
    }
    Ok(())
}

/// The original's `-shm` copied back from the archive when it is archived and its name is
/// free (SQLite would make a new one from the log; the original's is put back byte for
/// byte).
fn put_back_shm(j: &Journal, steps: &mut Vec<String>) -> Result<(), Error> {
    let path = beside(&j.db, "-shm");
    let Some(archived) = j.archived("shm") else {
        return Ok(());
    };
    if std::fs::symlink_metadata(&path).is_ok() {
        return Ok(());
    }
    let staged = from_archive(j, &archived.path, &archived.sha256, &restoring(&j.db, "-shm"))?;
    place::rename_noreplace(&staged, &path).map_err(|source| Error::Write {
        path: path.clone(),
        source,
    })?;
    steps.push(format!("put the original `{}` back", path.display()));
    Ok(())
}

/// A copy of the archived file `name` at `to` (a staging name of the repair's own,
/// emptied first), its hash checked against `sha256`.
fn from_archive(j: &Journal, name: &str, sha256: &str, to: &Path) -> Result<PathBuf, Error> {
    let from = j
        .archive
        .join(crate::bundle::safe_relative(name).unwrap_or_default());
    if std::fs::symlink_metadata(to).is_ok() {
        std::fs::remove_file(to).map_err(|source| Error::Write {
            path: to.to_path_buf(),
            source,
        })?;
    }
    let copied = copy_durably(&from, to).map_err(|source| Error::Write {
        path: to.to_path_buf(),
        source,
    })?;
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

/// Ends the repair, leaving the database's path as the application left it (which it
/// wrote to since the archive was made): what the repair made beside it is removed, the
/// archive and the report kept. Refused in the middle of the switch (the fences are up:
/// `--resume` or `--rollback` ends it), or when nothing is at the path.
pub(super) fn abandon(j: &Journal) -> Result<Repaired, Error> {
    let db = named(j);
    let fenced = LOGS
        .iter()
        .map(|(s, _)| beside(&j.db, s))
        .find(|p| is_fence(p));
    if let Some(fence) = fenced {
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
    let mut steps = vec![format!(
        "left `{}` and its sidecars as they are",
        j.db.display()
    )];
    clean(j, &mut steps)?;
    record(j, RepairState::Abandoned)?;
    j.remove()?;
    Ok(Repaired::Abandoned { steps })
}

/// Removes what the repair made beside the database and no longer needs: copies of the
/// recovery (by the hash the journal records; a recovery stopped midway by its phase),
/// the original's copies the archive holds, the staged copies, empty fences at the
/// repair's own names, SQLite's files beside the shadow, a partial archive, a partial
/// report. Never the database's path or its sidecars, the archive or the report.
fn clean(j: &Journal, steps: &mut Vec<String>) -> Result<(), Error> {
    let mut known: Vec<String> = j
        .recovered_sha256
        .iter()
        .chain(&j.withheld_sha256)
        .cloned()
        .collect();
    known.extend(j.archived.iter().map(|f| f.sha256.clone()));
    // Until the recovery is verified, nothing but the recovery has been at these paths:
    // the start saw each free, the claim kept other repairs out, and only the recovery
    // (or its acceptance) wrote there; every file at them is the repair's own.
    let recovering = j.phase <= Phase::Withheld;
    let mut candidates = vec![
        j.shadow.clone(),
        beside(&j.shadow, ".incomplete"),
        j.aside.clone(),
    ];
    candidates.extend(["", "-wal", "-journal", "-shm", ".recovery"].map(|s| restoring(&j.db, s)));
    candidates.extend(LOGS.iter().map(|(s, _)| old_log(&j.db, s)));
    let remove = |path: &Path, steps: &mut Vec<String>| -> Result<(), Error> {
        std::fs::remove_file(path).map_err(|source| Error::Write {
            path: path.to_path_buf(),
            source,
        })?;
        steps.push(format!("removed `{}`", path.display()));
        Ok(())
    };
    for path in candidates {
        match std::fs::symlink_metadata(&path) {
            Ok(m) if m.is_dir() && is_fence(&path) => {
                std::fs::remove_dir(&path).map_err(|source| Error::Write {
                    path: path.clone(),
                    source,
                })?;
            }
            Ok(m) if m.is_file() && (recovering || known.contains(&hash(&path)?.sha256)) => {
                remove(&path, steps)?;
            }
            _ => {}
        }
    }
    // SQLite's files beside the shadow, and the run's partial files: the repair's own by
    // their names (the start saw none of them).
    let mut derived: Vec<PathBuf> = [j.shadow.clone(), beside(&j.shadow, ".incomplete")]
        .iter()
        .flat_map(|s| ["-wal", "-journal", "-shm"].map(|x| beside(s, x)))
        .collect();
    derived.push(beside(&j.report, ".incomplete"));
    for path in derived {
        if std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_file()) {
            remove(&path, steps)?;
        }
    }
    let partial = crate::bundle::incomplete(&j.archive);
    if partial.is_dir() {
        std::fs::remove_dir_all(&partial).map_err(|source| Error::Write {
            path: partial.clone(),
            source,
        })?;
        steps.push(format!("removed the partial archive `{}`", partial.display()));
    }
    Ok(())
}
