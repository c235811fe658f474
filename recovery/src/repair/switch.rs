//! The switch: the verified recovery put at the database's path in the place of the
//! original and its logs, under SQLite's own locks, so that no application opens the
//! database in between, and behind fences, so that after a crash SQLite refuses to open
//! it rather than read a mix.
//!
//! ```text
//!             DB          DB-wal / DB-journal       a crash here leaves
//! verified    original    the original's logs       the original, whole
//! fenced      original    empty folders             a database SQLite cannot open
//! swapped     recovery    empty folders             a database SQLite cannot open
//! done        recovery    (none)                    the recovery, whole
//! ```
//!
//! SQLite opens a `-wal` beside any database it opens, and replays it: the original's
//! log beside the recovery would write old pages into it, and the original without its
//! log would show an older state. Two paths cannot change in one step; an empty folder
//! at the log's name makes SQLite's open fail (`SQLITE_CANTOPEN`, an I/O error for a
//! `-journal`) until the switch is over.

use std::path::Path;

use super::journal::{Journal, Phase};
use super::{hash, in_use, is_fence, named, old_log, place, Known, LOGS};
use crate::error::Error;
use crate::request::with_suffix as beside;

/// Takes SQLite's locks on every file that is or will be at the database's path (the
/// database, the shadow) and on the `-shm`: refused while an application holds one.
pub(super) fn hold(j: &Journal) -> Result<place::Held, Error> {
    let mut held = place::Held::default();
    let files = [
        (j.db.clone(), place::LockBytes::Database),
        (j.shadow.clone(), place::LockBytes::Database),
        (beside(&j.db, "-shm"), place::LockBytes::Shm),
    ];
    for (path, bytes) in files {
        if std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_file()) {
            held.add(&path, bytes)
                .map_err(|busy| in_use(&busy.path, busy.holder))?;
        }
    }
    Ok(held)
}

/// The refusal when a file at the database's path is not what the repair archived.
pub(super) fn changed(j: &Journal, path: &Path) -> Error {
    let db = named(j);
    Error::Refused {
        what: format!(
            "`{}` changed since it was archived: the application wrote to the database during the repair",
            path.display()
        ),
        hint: format!(
            "nothing at the database's path was moved. `salvage repair {0} --abandon` ends this repair and leaves the database as the application left it; then repair it again if it is still damaged",
            db.display()
        ),
    }
}

/// Exchanges each of the original's logs beside the database with an empty folder (the
/// log kept at `DB.salvage-old-wal`, `-journal`): from here SQLite cannot open the
/// database until the switch is over. The database and each log must still be the
/// archived copies (else the application wrote since: refused, nothing moved).
pub(super) fn fence(j: &mut Journal) -> Result<(), Error> {
    if let Some(original) = j.archived("database") {
        if hash(&j.db)?.sha256 != original.sha256 {
            return Err(changed(j, &j.db));
        }
    }
    for (suffix, role) in LOGS {
        let path = beside(&j.db, suffix);
        let old = old_log(&j.db, suffix);
        match std::fs::symlink_metadata(&path) {
            // Fenced already (a stop after the exchange), or no log: nothing to do.
            Ok(m) if m.is_dir() && is_fence(&path) => continue,
            Err(_) => continue,
            Ok(m) if m.is_file() => match j.archived(role) {
                Some(a) if hash(&path)?.sha256 == a.sha256 => {}
                _ => return Err(changed(j, &path)),
            },
            Ok(_) => return Err(changed(j, &path)),
        }
        if !is_fence(&old) {
            std::fs::create_dir(&old).map_err(|source| Error::Write {
                path: old.clone(),
                source,
            })?;
        }
        let write = |source| Error::Write {
            path: path.clone(),
            source,
        };
        if !place::exchange(&old, &path).map_err(write)? {
            // No atomic exchange here: the log is renamed aside and the folder made at
            // its name (SQLite's locks, held, keep applications out in between).
            std::fs::remove_dir(&old).map_err(write)?;
            place::rename_noreplace(&path, &old).map_err(write)?;
            std::fs::create_dir(&path).map_err(write)?;
        }
    }
    crate::bundle::files::sync_parent(&j.db).map_err(|source| Error::Write {
        path: j.db.clone(),
        source,
    })?;
    j.advance(Phase::Fenced)
}

/// Puts the shadow at the database's path: an atomic exchange of the two paths, else the
/// original renamed aside and the shadow renamed in (the fences and the locks cover the
/// moment between). A stop between the exchange and its record is told by the files'
/// hashes.
pub(super) fn swap(j: &mut Journal, known: Known) -> Result<(), Error> {
    let recovered = j.recovered_sha256.clone().unwrap_or_default();
    let original = j
        .archived("database")
        .map(|f| f.sha256.clone())
        .unwrap_or_default();
    let at_db = match (known, j.db.exists()) {
        (_, false) => None,
        // This run checked the original at DB a step ago and has not swapped yet.
        (Known::ByThisRun, true) => Some(original.clone()),
        (Known::FromJournal, true) => Some(hash(&j.db)?.sha256),
    };
    let write = |path: &Path| {
        let path = path.to_path_buf();
        move |source| Error::Write { path, source }
    };
    match at_db {
        Some(h) if h == recovered => {}
        // Stopped between the two renames of the fallback.
        None => place::rename_noreplace(&j.shadow, &j.db).map_err(write(&j.db))?,
        Some(h) if h == original => {
            if !place::exchange(&j.shadow, &j.db).map_err(write(&j.db))? {
                place::rename_noreplace(&j.db, &j.aside).map_err(write(&j.aside))?;
                place::rename_noreplace(&j.shadow, &j.db).map_err(write(&j.db))?;
            }
        }
        Some(_) => return Err(changed(j, &j.db)),
    }
    j.advance(Phase::Swapped)
}

/// Ends the switch: the old `-shm` (the log's index, which SQLite rebuilds from a log)
/// removed, the fences removed, the original's logs kept aside removed once each is
/// byte for byte its archived copy, and the original's leftover copy (the shadow or
/// aside path) removed likewise (known without reading it when this run put it there).
pub(super) fn finish(j: &mut Journal, known: Known) -> Result<(), Error> {
    let remove_file = |path: &Path| {
        std::fs::remove_file(path).map_err(|source| Error::Write {
            path: path.to_path_buf(),
            source,
        })
    };
    let shm = beside(&j.db, "-shm");
    if std::fs::symlink_metadata(&shm).is_ok_and(|m| m.is_file()) {
        remove_file(&shm)?;
    }
    for (suffix, role) in LOGS {
        let path = beside(&j.db, suffix);
        let old = old_log(&j.db, suffix);
        for fence in [&path, &old] {
            if is_fence(fence) {
                std::fs::remove_dir(fence).map_err(|source| Error::Write {
                    path: fence.clone(),
                    source,
                })?;
            }
        }
        let archived = j.archived(role).map(|a| a.sha256.clone());
        if std::fs::symlink_metadata(&old).is_ok_and(|m| m.is_file())
            && (known == Known::ByThisRun || Some(hash(&old)?.sha256) == archived)
        {
            remove_file(&old)?;
        }
    }
    let original = j
        .archived("database")
        .map(|f| f.sha256.clone())
        .unwrap_or_default();
    for left in [&j.shadow, &j.aside] {
        if left.exists() && (known == Known::ByThisRun || hash(left)?.sha256 == original) {
            remove_file(left)?;
        }
    }
    crate::bundle::files::sync_parent(&j.db).map_err(|source| Error::Write {
        path: j.db.clone(),
        source,
    })?;
    j.advance(Phase::Done)
}
