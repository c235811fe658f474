//! The switch: the verified recovery put at the database's path in the place of the
//! original and its logs, under SQLite's own locks, so that no application opens the
//! database in between, and behind fences, so that after a crash SQLite refuses to open
//! it rather than read a mix.
//!
//! ```text
//!             DB          DB-wal, DB-journal        a crash here leaves
//! verified    original    the original's logs       the original, whole
//! fenced      original    empty folders             a database SQLite cannot open
//! swapped     recovery    empty folders             a database SQLite cannot open
//! filed       recovery    empty folders             a database SQLite cannot open
//! done        recovery    (none)                    the recovery, whole
//! ```
//!
//! From `swapped` the original is at the shadow's path and its logs at
//! `DB.salvage-old-wal`, `-journal`, names the journal records; `filed` links them into
//! the archive as well ([`super::filing`]), and only `done` removes those names.
//!
//! SQLite opens a `-wal` beside any database it opens, and replays it; it rolls a hot
//! `-journal` back into it. The original's log beside the recovery would write old pages
//! into it, and the original without its log is an older state. Two paths cannot change
//! in one step; an empty folder at each log's name, whether a log was there or not, makes
//! SQLite's open fail (`SQLITE_CANTOPEN`, an I/O error for a `-journal`) until the switch
//! is over, and keeps an application that opens the database after a crash from writing
//! a new log beside the wrong file. Every step is an exchange of two paths or the making
//! or removing of an empty folder: nothing is renamed onto an empty path, so the
//! database's path is never absent (a filesystem that cannot exchange is refused at the
//! start, [`place::can_exchange`]).

use std::path::Path;

use super::journal::{Journal, Phase};
use super::{exchange, hash, in_use, is_fence, log_path, named, old_log, place, Known, LOGS};
use crate::base::error::Error;
use crate::base::files::FileStamp;
use crate::base::paths::with_suffix as beside;
use crate::custody::bundle::Role;

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
                .map_err(|busy| in_use(&busy.path, busy.holder, false))?;
        }
    }
    Ok(held)
}

/// The refusal when a file at the database's path is not what the repair left there.
pub(super) fn changed(j: &Journal, path: &Path) -> Error {
    let db = named(j);
    Error::Refused {
        what: format!(
            "`{}` changed since the repair read the database: the application wrote to it",
            path.display()
        ),
        hint: format!(
            "what the application wrote is left where it is. `salvage repair {0} --abandon` ends this repair and leaves the database as the application left it; then repair it again if it is still damaged",
            db.display()
        ),
    }
}

/// Fences each log's name beside the database with an empty folder: an original log is
/// exchanged with one (the log kept at `DB.salvage-old-wal`, `-journal`), an absent one
/// gets one made. From here SQLite cannot open the database until the switch is over.
/// The database and each log must still be the archived copies (else the application
/// wrote since: refused, nothing moved).
pub(super) fn fence(j: &mut Journal) -> Result<(), Error> {
    if !as_archived(j, Role::Database, &j.db)? {
        return Err(changed(j, &j.db));
    }
    for role in LOGS {
        let path = log_path(&j.db, role);
        let old = old_log(&j.db, role);
        match std::fs::symlink_metadata(&path) {
            // Fenced already (a stop after the exchange).
            Ok(_) if is_fence(&path) => {}
            // A log the recovery read, gone since: the application ran (a repair of format 2
            // keeps its copy in the archive; one of format 3 files the log itself).
            Err(_) if j.files_last() && j.archived(role).is_some() => {
                return Err(changed(j, &path))
            }
            // No log: a fence of its own, so that none appears beside the wrong file.
            Err(_) => std::fs::create_dir(&path).map_err(Error::writing(&path))?,
            Ok(m) if m.is_file() => {
                if j.archived(role).is_none() || !as_archived(j, role, &path)? {
                    return Err(changed(j, &path));
                }
                if !is_fence(&old) {
                    std::fs::create_dir(&old).map_err(Error::writing(&old))?;
                }
                exchange(&old, &path)?;
            }
            Ok(_) => return Err(changed(j, &path)),
        }
    }
    crate::base::files::sync_parent(&j.db).map_err(Error::writing(&j.db))?;
    j.advance(Phase::Fenced)
}

/// Whether the original file of `role` at `path` is still the one archived, or read by
/// the recovery for the archive (true when none was). Its stamp unchanged since that read
/// proved the read whole, the
/// file is unchanged without being read; a moved stamp (a `chmod`, a write) has the file
/// read once, its BLAKE3 compared; with no stamp recorded, its SHA-256.
pub(super) fn as_archived(j: &Journal, role: Role, path: &Path) -> Result<bool, Error> {
    let Some(archived) = j.archived(role) else {
        return Ok(true);
    };
    match j.seen(role) {
        Some(seen) if FileStamp::read(path).ok() == Some(seen.stamp) => Ok(true),
        Some(seen) => Ok(crate::recover::evidence::Source::open(path)?.blake3() == seen.blake3),
        None => Ok(hash(path)?.sha256 == archived.sha256),
    }
}

/// Refuses to go on when a log's name beside the database no longer holds its fence:
/// after a crash, someone removed it and an application may have written a log there.
fn check_fences(j: &Journal) -> Result<(), Error> {
    for role in LOGS {
        let path = log_path(&j.db, role);
        if !is_fence(&path) {
            return Err(changed(j, &path));
        }
    }
    Ok(())
}

/// [`check_fences`] for a resumed `finish`, which a stop may have cut short after it
/// removed some fences: a log's name with no fence is accepted while nothing is at it
/// and no `-shm` is beside the database (`finish` removes the original's before any
/// fence). That alone does not prove no application opened the database since (SQLite
/// removes its `-wal` and `-shm` as the last connection closes, and makes no `-shm` in
/// rollback-journal mode): what makes going on safe is that nothing is at the log's name
/// now, and that the database's hash, checked next, is still the recovery's.
fn check_fences_finishing(j: &Journal) -> Result<(), Error> {
    let shm = beside(&j.db, "-shm");
    let opened = std::fs::symlink_metadata(&shm).is_ok();
    for role in LOGS {
        let path = log_path(&j.db, role);
        if !is_fence(&path) && (opened || std::fs::symlink_metadata(&path).is_ok()) {
            return Err(changed(j, &path));
        }
    }
    Ok(())
}

/// Puts the shadow at the database's path: an atomic exchange of the two paths. A stop
/// between the exchange and its record is told by the files' hashes.
pub(super) fn swap(j: &mut Journal, known: Known) -> Result<(), Error> {
    check_fences(j)?;
    let recovered = j.recovered_sha256.clone().unwrap_or_default();
    let original = j
        .archived(Role::Database)
        .map(|f| f.sha256.clone())
        .unwrap_or_default();
    let at_db = match known {
        // This run checked the original at DB a step ago and has not swapped yet.
        Known::ByThisRun => original.clone(),
        Known::FromJournal => hash(&j.db)?.sha256,
    };
    if at_db == original {
        exchange(&j.shadow, &j.db)?;
    } else if at_db != recovered {
        return Err(changed(j, &j.db));
    }
    j.advance(Phase::Swapped)
}

/// Ends the switch: the old `-shm` (the log's index, which SQLite rebuilds from a log)
/// removed, the fences removed, the original's logs kept aside removed once each is
/// byte for byte its archived copy, and the original's leftover copy (the shadow path, or
/// the aside path of a repair of journal format 1) removed likewise (known without
/// reading it when this run put it there). Of a repair that filed the original's own
/// files (format 3) those names are the files' other names; once they are gone, the
/// archive's files are made read-only.
pub(super) fn finish(j: &mut Journal, known: Known) -> Result<(), Error> {
    if known == Known::FromJournal {
        check_fences_finishing(j)?;
        if Some(hash(&j.db)?.sha256) != j.recovered_sha256 {
            return Err(changed(j, &j.db));
        }
    }
    let remove_file = |path: &Path| std::fs::remove_file(path).map_err(Error::writing(path));
    let shm = beside(&j.db, "-shm");
    if std::fs::symlink_metadata(&shm).is_ok_and(|m| m.is_file()) {
        remove_file(&shm)?;
    }
    for role in LOGS {
        let path = log_path(&j.db, role);
        let old = old_log(&j.db, role);
        for fence in [&path, &old] {
            if is_fence(fence) {
                std::fs::remove_dir(fence).map_err(Error::writing(fence))?;
            }
        }
        crate::base::crash::point("repair:finishing");
        let archived = j.archived(role).map(|a| a.sha256.clone());
        if std::fs::symlink_metadata(&old).is_ok_and(|m| m.is_file())
            && (known == Known::ByThisRun || Some(hash(&old)?.sha256) == archived)
        {
            remove_file(&old)?;
        }
    }
    let original = j
        .archived(Role::Database)
        .map(|f| f.sha256.clone())
        .unwrap_or_default();
    for left in [&j.shadow, &j.aside] {
        if left.exists() && (known == Known::ByThisRun || hash(left)?.sha256 == original) {
            remove_file(left)?;
        }
    }
    crate::base::files::sync_parent(&j.db).map_err(Error::writing(&j.db))?;
    if j.files_last() {
        super::filing::seal(j)?;
    }
    j.advance(Phase::Done)
}
