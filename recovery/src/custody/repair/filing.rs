//! Filing the original into the archive after the switch (a repair of journal format 3):
//! nothing is copied. The original's own files, which the switch left at names the
//! journal records (the database at the shadow's path, each log at
//! `DB.salvage-old-wal`, `-journal`, the `-shm` at its name), are linked into the
//! archive's `.incomplete` folder under their own names, and its manifest is written
//! from the hashes the recovery's read made (the file system's stamps, or a hash, proved
//! each file the one read before the switch moved it); the folder is then renamed into
//! place. Until `done` removes them, the original's names beside the database keep every
//! file: a partial archive holds only second names, and a stop anywhere leaves the
//! original where the journal says. An archive on another filesystem (or where the
//! filesystem will not give a file a second name) gets copies, each hash checked against
//! the manifest's. The archive's `.incomplete` folder is made when the repair is
//! recorded ([`reserve`]): no other repair can take the name while this one lasts.

use std::path::{Path, PathBuf};

use super::journal::{Journal, Phase};
use super::{hash, old_log, Known};
use crate::base::error::Error;
use crate::base::files::{copy_durably, hash_file, now, rename_durably, utc};
use crate::base::paths::with_suffix as beside;
use crate::custody::bundle::{self, Manifest, ManifestFile, Provenance, Role};

/// Reserves the archive's name for this repair: its `.incomplete` folder, made once the
/// repair is recorded (the start saw neither name taken), so that no other repair's
/// archive is ever taken for this one's.
pub(super) fn reserve(j: &Journal) -> Result<(), Error> {
    let partial = bundle::incomplete(&j.archive);
    match std::fs::create_dir(&partial) {
        Ok(()) => crate::base::files::sync_parent(&partial).map_err(Error::writing(&partial)),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && partial.is_dir() => Ok(()),
        Err(e) => Err(Error::writing(&partial)(e)),
    }
}

/// Whether the bundle at `dir` is this repair's archive: its manifest, of a repair's
/// archive, names this database and lists each file the recovery read, by name and hash.
pub(super) fn is_ours(j: &Journal, dir: &Path) -> bool {
    let Ok(m) = Manifest::read(dir) else {
        return false;
    };
    m.kind == "repair-archive"
        && Path::new(&m.source) == j.db
        && j.archived
            .iter()
            .filter(|f| f.role != Role::Shm.name())
            .all(|f| {
                m.files
                    .iter()
                    .any(|g| g.role == f.role && g.path == f.path && g.sha256 == f.sha256)
            })
}

/// Files the original into the archive and records `filed`. An archive already in place
/// (a stop between its rename and the record) must be this repair's and match its
/// manifest; the partial one is this repair's own ([`reserve`]) and holds second names or
/// copies only: it is emptied and filled again. A resumed run first checks that the
/// database's path still holds the recovery (a rollback stopped partway may have put the
/// original back).
pub(super) fn file(j: &mut Journal, who: &Provenance, known: Known) -> Result<(), Error> {
    let partial = bundle::incomplete(&j.archive);
    if known == Known::FromJournal && Some(hash(&j.db)?.sha256) != j.recovered_sha256 {
        return Err(super::switch::changed(j, &j.db));
    }
    if j.archive.exists() {
        if !is_ours(j, &j.archive) {
            return Err(Error::Refused {
                what: format!(
                    "`{}` is not this repair's archive: its manifest does not list the files the repair read",
                    j.archive.display()
                ),
                hint: "nothing was moved into it; move it away, then `--resume` (the original is at the names the repair's journal records)".into(),
            });
        }
        let v = bundle::verify(&j.archive)?;
        // Until `done`, each file the archive holds is linked from where the switch left
        // it: that second name is the only difference allowed.
        let differs = v.differences.iter().any(|d| match d {
            bundle::Difference::HardLinked { path, links: 2 } => {
                !linked_from_switch(j, &j.archive.join(path))
            }
            _ => true,
        });
        if differs {
            return Err(Error::Refused {
                what: format!(
                    "the archive `{}` differs from its manifest",
                    j.archive.display()
                ),
                hint: "look at it; the original is still at the names the repair's journal records, `--rollback` puts it back".into(),
            });
        }
        j.archived = v.manifest.files;
        return j.advance(Phase::Filed);
    }
    if partial.exists() {
        std::fs::remove_dir_all(&partial).map_err(Error::writing(&partial))?;
    }
    std::fs::create_dir(&partial).map_err(Error::writing(&partial))?;
    let mut manifest = Manifest::new("repair-archive", &j.db, who, now());
    manifest.source_link = j.db_link.as_ref().map(|l| l.display().to_string());
    for listed in &j.archived {
        let Some(at) = Role::parse(&listed.role).and_then(|role| where_now(j, role)) else {
            continue;
        };
        // A resumed run vouches only for what it checks: a file at the switch's name since
        // the stop could be anything.
        if known == Known::FromJournal {
            let same = match Role::parse(&listed.role) {
                Some(role) if at.exists() => super::switch::as_archived(j, role, &at)?,
                Some(_) => false,
                None => true,
            };
            if !same {
                return Err(differs(&at));
            }
        }
        let copy = partial.join(&listed.path);
        if link_or_copy(&at, &copy)?.is_some_and(|sha256| sha256 != listed.sha256) {
            return Err(differs(&at));
        }
        manifest.files.push(listed.clone());
    }
    // The `-shm` (the log's index) stays at its name until `done`: filed as it is now,
    // under SQLite's locks, which keep every application from it.
    let shm = beside(&j.db, "-shm");
    if std::fs::symlink_metadata(&shm).is_ok_and(|m| m.is_file()) {
        let name = file_name(&shm);
        let copy = partial.join(&name);
        link_or_copy(&shm, &copy)?;
        let meta = std::fs::metadata(&copy).map_err(Error::writing(&copy))?;
        let hashed = hash_file(&copy).map_err(Error::writing(&copy))?;
        manifest.files.push(ManifestFile {
            path: name,
            role: Role::Shm.name().into(),
            size: hashed.size,
            sha256: hashed.sha256,
            mtime_utc: meta.modified().ok().map(utc),
            rows: None,
            journal_mode: None,
        });
    }
    bundle::write_manifest(&partial, &manifest)?;
    crate::base::files::sync_dir(&partial).map_err(Error::writing(&partial))?;
    rename_durably(&partial, &j.archive).map_err(Error::writing(&j.archive))?;
    crate::base::crash::point("repair:archive-renamed");
    j.archived = manifest.files;
    j.advance(Phase::Filed)
}

/// Whether the archive's file at `filed` is the same file as one the switch left beside
/// the database (the shadow, an old log, the `-shm`): a second name filing gave it.
fn linked_from_switch(j: &Journal, filed: &Path) -> bool {
    use std::os::unix::fs::MetadataExt as _;
    let Ok(f) = std::fs::symlink_metadata(filed) else {
        return false;
    };
    [Role::Database, Role::Wal, Role::Journal]
        .into_iter()
        .filter_map(|role| where_now(j, role))
        .chain([beside(&j.db, "-shm")])
        .filter_map(|p| std::fs::symlink_metadata(p).ok())
        .any(|m| m.is_file() && m.dev() == f.dev() && m.ino() == f.ino())
}

/// Where the switch left the original's file of `role`: the database at the shadow's
/// path, a log at the name its fence keeps it under.
fn where_now(j: &Journal, role: Role) -> Option<PathBuf> {
    match role {
        Role::Database => Some(j.shadow.clone()),
        Role::Wal | Role::Journal => Some(old_log(&j.db, role)),
        Role::Shm | Role::Other => None,
    }
}

/// Gives `from` the second name `to`; across filesystems (or where the filesystem gives
/// no second names: not permitted, not supported, too many), copies it, returning the
/// copy's SHA-256 (`None`: a link, the same file). A file that already has another name
/// (a hard link the application or a person made) is copied too: the archive's file
/// must be reachable from no name outside it, which could write it or change its mode.
fn link_or_copy(from: &Path, to: &Path) -> Result<Option<String>, Error> {
    use std::os::unix::fs::MetadataExt as _;
    let copy = || {
        copy_durably(from, to)
            .map(|c| Some(c.sha256))
            .map_err(Error::writing(to))
    };
    match std::fs::symlink_metadata(from) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(differs(from)),
        Ok(m) if m.nlink() > 1 => return copy(),
        _ => {}
    }
    let no_link = [libc::EXDEV, libc::EPERM, libc::EOPNOTSUPP, libc::EMLINK];
    match std::fs::hard_link(from, to) {
        Ok(()) => Ok(None),
        Err(e) if e.raw_os_error().is_some_and(|n| no_link.contains(&n)) => copy(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(differs(from)),
        Err(e) => Err(Error::writing(to)(e)),
    }
}

/// The refusal when a file the switch left is not the one the recovery read.
fn differs(path: &Path) -> Error {
    Error::Refused {
        what: format!(
            "`{}` is not the original the repair read: it is gone or its bytes differ",
            path.display()
        ),
        hint: "nothing more is moved; look at the repair's journal and files, then `--rollback` or `--resume`".into(),
    }
}

/// A path's last component: a file's name in the archive.
pub(super) fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The archive's files made read-only, once the original's names beside the database
/// are gone (until then, a file's mode is the original's as the application uses it,
/// should a rollback put it back).
pub(super) fn seal(j: &Journal) -> Result<(), Error> {
    bundle::make_read_only(&j.archive, &j.archived)
}
