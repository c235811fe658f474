//! The steps of a repair before the switch: the recovery of the original read in place
//! (or, for a journal of format 2, the archive's copy and the recovery of that copy), a
//! withheld recovery accepted, and the recovery verified in the original's journal mode.
//! None of them touches the database's path.

use std::path::Path;

use super::journal::{Journal, Phase, Seen};
use super::{hash, Repaired};
use crate::base::error::Error;
use crate::base::files::{now, utc, FileStamp};
use crate::base::observer::Observer;
use crate::base::paths::with_suffix as beside;
use crate::custody::bundle::{self, ManifestFile, Provenance, Role};
use crate::recover::evidence::Digests;
use crate::recover::{Given, Outcome, RecoverOptions};
use crate::report::{LossReport, RepairPaths, RepairRecord, RepairState};

/// Copies the database and its sidecars into the archive. A partial archive left by a
/// stop during the copy is this repair's own: it is removed and the copy made again.
/// Returns the digests of each archived copy, as its copy computed them (none when the
/// archive was made by an earlier run).
pub(super) fn archive(j: &mut Journal, who: &Provenance) -> Result<Hashed, Error> {
    let partial = bundle::incomplete(&j.archive);
    if partial.exists() {
        make_writable(&partial);
        std::fs::remove_dir_all(&partial).map_err(Error::writing(&partial))?;
    }
    let (manifest, watched) = if j.archive.exists() {
        // Stopped after the archive was renamed into place: it must still match.
        let v = bundle::verify(&j.archive)?;
        if !v.intact() {
            return Err(Error::Refused {
                what: format!("the archive `{}` differs from its manifest", j.archive.display()),
                hint: "nothing was changed at the database's path; look at the archive, then `--rollback`".into(),
            });
        }
        (v.manifest, Vec::new())
    } else {
        match bundle::make_watched(&j.db, &j.archive, "repair-archive", who) {
            Ok(made) => made,
            // Refused with nothing made (the database changed while it was copied: the
            // application is writing to it): the journal goes too, so that the refusal
            // leaves nothing and the next repair starts afresh.
            Err(e) if e.is_refusal() && !j.archive.exists() && !partial.exists() => {
                j.remove()?;
                return Err(e);
            }
            Err(e) => return Err(e),
        }
    };
    let mut digests = Vec::new();
    j.seen.clear();
    for (f, w) in manifest.files.iter().zip(&watched) {
        if w.steady() {
            j.seen.push(Seen {
                role: f.role.clone(),
                stamp: w.after,
                blake3: w.blake3.clone(),
            });
        }
        let copy = Digests {
            sha256: w.copied.sha256.clone(),
            blake3: w.blake3.clone(),
        };
        digests.push((j.archive.join(&f.path), copy));
    }
    j.archived = manifest.files;
    j.advance(Phase::Archived)?;
    Ok(digests)
}

/// Lets a partial bundle's read-only files be removed (their folder stays writable, but
/// some filesystems refuse to unlink a read-only file).
fn make_writable(dir: &Path) {
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            if let Ok(meta) = e.metadata() {
                let mut perms = meta.permissions();
                #[allow(clippy::permissions_set_readonly_false)]
                // reason: the repair's own partial copy, about to be removed
                perms.set_readonly(false);
                let _ = std::fs::set_permissions(e.path(), perms);
            }
        }
    }
}

/// The digests of the archive's copies this run made, by their paths.
pub(super) type Hashed = Vec<(std::path::PathBuf, Digests)>;

/// How the recovery of the archived copy ended.
pub(super) enum Recovered {
    /// Committed at the shadow path, and vouched for by this run: checked by SQLite's
    /// integrity check in the original's journal mode, with this SHA-256.
    Vouched(String),
    /// Withheld for its loss.
    Withheld(Repaired),
}

/// Recovers the original into the shadow, in the original's journal mode, checked by
/// SQLite's integrity check: read in place (format 3), its files' hashes and stamps
/// recorded for the archive and the switch; or the archived copy (format 2), not hashed
/// again before the run when this run made it (`hashed`). The application writing to the
/// original while it is read is refused, and the refusal leaves nothing.
pub(super) fn recover(
    j: &mut Journal,
    (who, hashed): (&Provenance, Hashed),
    observer: &dyn Observer,
) -> Result<Recovered, Error> {
    // What a stop during an earlier attempt left is this repair's own, and derived: the
    // start saw none of these paths taken.
    remove_recovery(j)?;
    let (source, originals) = if j.files_last() {
        (j.db.clone(), Some(Originals::before(&j.db)?))
    } else {
        let name = j
            .archived(Role::Database)
            .map(|f| f.path.clone())
            .unwrap_or_default();
        (j.archive.join(name), None)
    };
    let mut options = RecoverOptions::new(source, &j.shadow);
    options.report = Some(j.report.clone());
    options.allow_partial = j.allow_partial;
    options.placeholders = j.placeholders;
    options.command_line = who.command.clone();
    let given = Given {
        digests: hashed,
        integrity_check: true,
        wal_mode: j.wal_mode,
    };
    let done = crate::recover::recover_with(&options, observer, &given);
    if let Some(originals) = &originals {
        if let Some(moved) = originals.moved(&j.db) {
            return Err(written_while_read(j, &moved));
        }
    }
    // A write that failed names the recovery's file (`recover` names none: its output
    // is the path it was given).
    let done = done.map_err(|e| match e {
        Error::Output(source) => Error::Write {
            path: beside(&j.shadow, ".incomplete"),
            source,
        },
        e => e,
    })?;
    if let Some(originals) = &originals {
        (j.archived, j.seen) = match originals.hashed(&done.report) {
            Ok(read) => read,
            Err(Unread::Moved(path)) => return Err(written_while_read(j, &path)),
            Err(Unread::Failed(path, source)) => {
                return Err(leave_nothing(j)
                    .err()
                    .unwrap_or(Error::Source { path, source }))
            }
        };
    }
    match done.outcome {
        Outcome::Complete | Outcome::PartialCommitted => {
            j.partial = done.outcome == Outcome::PartialCommitted;
            record(j, RepairState::Pending)?;
            j.advance(Phase::Recovered)?;
            Ok(Recovered::Vouched(
                done.report.output.sha256.clone().unwrap_or_default(),
            ))
        }
        Outcome::Withheld | Outcome::NotVerified { .. } => {
            j.withheld_sha256 = done.report.output.sha256.clone();
            record(j, RepairState::Withheld)?;
            j.advance(Phase::Withheld)?;
            Ok(Recovered::Withheld(Repaired::Withheld {
                shadow: beside(&j.shadow, ".incomplete"),
                report: j.report.clone(),
            }))
        }
    }
}

/// The refusal when the application wrote to an original file while the repair read it:
/// nothing the repair made is kept (see [`leave_nothing`]).
fn written_while_read(j: &Journal, path: &Path) -> Error {
    match leave_nothing(j) {
        Ok(()) => Error::Refused {
            what: format!("`{}` changed while the repair read it", path.display()),
            hint: "something is writing to it: stop the application using it and run again; nothing was kept".into(),
        },
        Err(e) => e,
    }
}

/// Ends a repair whose read of the original cannot vouch for it: nothing the repair made
/// is kept (the recovery, its report, the archive's reserved name), and the journal goes
/// too, so that the next repair starts afresh. Should the removal itself fail, the repair
/// stays recorded, and that error is returned.
fn leave_nothing(j: &Journal) -> Result<(), Error> {
    let partial = bundle::incomplete(&j.archive);
    remove_recovery(j)
        .and_then(|()| match std::fs::remove_dir(&partial) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(Error::writing(&partial)(e)),
            _ => Ok(()),
        })
        .and_then(|()| j.remove())
}

/// Why an original file the recovery read could not be listed for the archive.
enum Unread {
    /// Gone, or changed since its stamp was taken: an application wrote.
    Moved(std::path::PathBuf),
    /// Reading it failed (an I/O error, not a write).
    Failed(std::path::PathBuf, std::io::Error),
}

/// Removes what a recovery of this repair wrote (the shadow, its `.incomplete`, the
/// report, and SQLite's files beside each): this repair's own, and derived.
fn remove_recovery(j: &Journal) -> Result<(), Error> {
    for made in [
        j.shadow.clone(),
        beside(&j.shadow, ".incomplete"),
        j.report.clone(),
        beside(&j.report, ".incomplete"),
    ] {
        for file in ["", "-journal", "-wal", "-shm"].map(|s| beside(&made, s)) {
            if file.exists() {
                std::fs::remove_file(&file).map_err(Error::writing(&file))?;
            }
        }
    }
    Ok(())
}

/// The original's files a recovery reads (the database, its `-wal` and `-journal`; the
/// `-shm` is filed with them after the switch) as the file system described them before
/// the read.
struct Originals {
    /// Each file, its role, its stamp and its modification time.
    files: Vec<(
        std::path::PathBuf,
        Role,
        FileStamp,
        Option<std::time::SystemTime>,
    )>,
    /// When the stamps were taken.
    began: std::time::SystemTime,
}

impl Originals {
    /// The files beside `db` and their stamps, now.
    fn before(db: &Path) -> Result<Originals, Error> {
        let began = now();
        let mut files = Vec::new();
        for (path, role) in Originals::paths(db) {
            let meta = std::fs::metadata(&path).map_err(|e| Error::Source {
                path: path.clone(),
                source: e,
            })?;
            files.push((path, role, FileStamp::of(&meta), meta.modified().ok()));
        }
        Ok(Originals { files, began })
    }

    /// The original's files that lie beside `db`, the `-shm` left out.
    fn paths(db: &Path) -> Vec<(std::path::PathBuf, Role)> {
        bundle::database_files(db)
            .into_iter()
            .filter_map(|(path, role)| Some((path, Role::parse(role)?)))
            .filter(|(_, role)| *role != Role::Shm)
            .collect()
    }

    /// The first file whose stamp is not the one taken before (written, replaced, gone),
    /// or that appeared since.
    fn moved(&self, db: &Path) -> Option<std::path::PathBuf> {
        let now = Originals::paths(db);
        if let Some((path, _)) = now
            .iter()
            .find(|(p, _)| !self.files.iter().any(|(q, ..)| q == p))
        {
            return Some(path.clone());
        }
        self.files
            .iter()
            .find(|(path, _, stamp, _)| FileStamp::read(path).ok() != Some(*stamp))
            .map(|(path, ..)| path.clone())
    }

    /// What the archive will list of each file, and what the read saw of it: its
    /// digests from the recovery's first hash (a file the recovery did not hash, an empty
    /// log, is hashed here, its stamp checked again after), its stamp when the stamps
    /// alone prove it unchanged since.
    fn hashed(&self, report: &LossReport) -> Result<(Vec<ManifestFile>, Vec<Seen>), Unread> {
        let (mut listed, mut seen) = (Vec::new(), Vec::new());
        for (path, role, stamp, modified) in &self.files {
            let from_run = |h: &crate::report::LogHashes| {
                Some((h.sha256_before.clone()?, h.blake3_before.clone()?))
            };
            let digests = match role {
                Role::Database => (report.source.unchanged && report.source.size == stamp.len)
                    .then(|| {
                        (
                            report.source.sha256_before.clone(),
                            report.source.blake3_before.clone(),
                        )
                    }),
                Role::Wal => from_run(&report.wal.hashes),
                Role::Journal => from_run(&report.journal.hashes),
                Role::Shm | Role::Other => None,
            };
            let (sha256, blake3) = match digests {
                Some(d) => d,
                None => read_unchanged(path, stamp)?,
            };
            if !stamp.racy(self.began) {
                seen.push(Seen {
                    role: role.name().into(),
                    stamp: *stamp,
                    blake3,
                });
            }
            listed.push(ManifestFile {
                path: super::filing::file_name(path),
                role: role.name().into(),
                size: stamp.len,
                sha256,
                mtime_utc: modified.map(utc),
                rows: None,
                journal_mode: None,
            });
        }
        Ok((listed, seen))
    }
}

/// The SHA-256 and BLAKE3 of the file at `path`, read now, when its stamp is still
/// `stamp` after the read.
fn read_unchanged(path: &Path, stamp: &FileStamp) -> Result<(String, String), Unread> {
    match crate::base::files::hash_file_both(path) {
        Ok((read, blake3))
            if FileStamp::read(path).ok() == Some(*stamp) && read.size == stamp.len =>
        {
            Ok((read.sha256, blake3))
        }
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(Unread::Failed(path.into(), e)),
        // Gone or changed since its stamp was taken.
        _ => Err(Unread::Moved(path.into())),
    }
}

/// A withheld recovery accepted (`--resume --allow-partial`): checked again and
/// committed at the shadow path as `salvage commit` would, its report saying who
/// accepted it. A stop after the commit put it there is told by its hash.
pub(super) fn commit_withheld(j: &mut Journal, who: &Provenance) -> Result<(), Error> {
    let held = beside(&j.shadow, ".incomplete");
    let committed = j.shadow.exists()
        && j.withheld_sha256.is_some()
        && Some(hash(&j.shadow)?.sha256) == j.withheld_sha256;
    if committed {
        if held.exists() && hash(&held)?.sha256 == j.withheld_sha256.clone().unwrap_or_default() {
            std::fs::remove_file(&held).map_err(Error::writing(&held))?;
        }
    } else if held.exists() {
        crate::recover::finish::accept::accept(&crate::recover::finish::accept::AcceptOptions {
            incomplete: held,
            report: Some(j.report.clone()),
            command_line: who.command.clone(),
        })?;
    } else {
        return Err(Error::Refused {
            what: format!("the withheld recovery `{}` is gone", held.display()),
            hint: "`--rollback` ends the repair (the original is untouched)".into(),
        });
    }
    j.partial = true;
    record(j, RepairState::Pending)?;
    j.advance(Phase::Recovered)
}

/// Puts the shadow in the original's journal mode (write-ahead log, through SQLite,
/// which leaves no `-wal` once the connection closes), runs SQLite's integrity check on
/// it and records its hash. A recovery this run made in that mode, checked and hashed
/// (`vouched`: its SHA-256), is not read again: only what lies beside it, and its
/// header's journal mode, are looked at.
pub(super) fn verify(j: &mut Journal, vouched: Option<String>) -> Result<(), Error> {
    let failed = |why: String| {
        Error::Output(std::io::Error::other(format!(
            "the recovery `{}` {why}",
            j.shadow.display()
        )))
    };
    // A resumed check finds the recovery where this repair committed it, or refuses: it
    // never lets SQLite make a new, empty database at that name.
    if !std::fs::symlink_metadata(&j.shadow).is_ok_and(|m| m.is_file()) {
        return Err(Error::Refused {
            what: format!(
                "the recovery `{}` is gone (or is no file)",
                j.shadow.display()
            ),
            hint: "a rollback stopped partway removes it: `--rollback` ends the repair (the original is untouched)".into(),
        });
    }
    if let Some(sha256) = vouched.filter(|s| !s.is_empty()) {
        no_sidecars(&j.shadow).map_err(failed)?;
        if j.wal_mode != super::header_says_wal(&j.shadow) {
            return Err(failed(format!(
                "is not in the original's journal mode ({})",
                if j.wal_mode {
                    "WAL"
                } else {
                    "a rollback journal"
                }
            )));
        }
        j.recovered_sha256 = Some(sha256);
        return j.advance(Phase::Verified);
    }
    if j.wal_mode {
        let flags = rusqlite::OpenFlags::SQLITE_OPEN_READ_WRITE
            | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX
            | rusqlite::OpenFlags::SQLITE_OPEN_URI;
        let conn = rusqlite::Connection::open_with_flags(&j.shadow, flags)
            .map_err(|e| failed(format!("cannot be opened by SQLite: {e}")))?;
        let mode: String = conn
            .query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))
            .map_err(|e| failed(format!("cannot be put in WAL mode: {e}")))?;
        conn.close()
            .map_err(|(_, e)| failed(format!("cannot be closed: {e}")))?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(failed(format!("stayed in journal mode {mode}")));
        }
    }
    no_sidecars(&j.shadow).map_err(failed)?;
    crate::base::sqlite::integrity_of_output(&j.shadow)
        .map_err(|why| failed(format!("fails SQLite's integrity check: {why}")))?;
    j.recovered_sha256 = Some(hash(&j.shadow)?.sha256);
    j.advance(Phase::Verified)
}

/// Refuses a recovery with a log or an index of one beside it after SQLite closed it.
fn no_sidecars(shadow: &Path) -> Result<(), String> {
    for leftover in ["-wal", "-shm", "-journal"].map(|s| beside(shadow, s)) {
        if leftover.exists() {
            return Err(format!(
                "has `{}` beside it after SQLite closed it",
                leftover.display()
            ));
        }
    }
    Ok(())
}

/// Records in the recovery's report where the repair stands with it, and the repair's
/// paths; a report that is not there (a stop before it was written) is left alone.
pub(super) fn record(j: &Journal, state: RepairState) -> Result<(), Error> {
    let Ok(bytes) = std::fs::read(&j.report) else {
        return Ok(());
    };
    let mut report: LossReport = serde_json::from_slice(&bytes).map_err(|e| Error::Refused {
        what: format!(
            "`{}` is not a loss report salvage can read: {e}",
            j.report.display()
        ),
        hint: "look at it; the repair does not guess what a damaged report meant".into(),
    })?;
    let in_place = (state == RepairState::InPlace)
        .then(|| j.recovered_sha256.clone())
        .flatten();
    report.repair = Some(RepairRecord {
        state,
        wal_mode: j.wal_mode,
        sha256_in_place: in_place,
        archived: std::fs::symlink_metadata(&j.archive).is_ok_and(|m| m.is_dir()),
        utc: utc(now()),
    });
    report.run.repair = Some(RepairPaths {
        db_path: j.db.display().to_string(),
        db_link: j.db_link.as_ref().map(|l| l.display().to_string()),
        archive_path: j.archive.display().to_string(),
    });
    let next = beside(&j.report, ".incomplete");
    // A stop while it was written left it: the repair's own.
    let _ = std::fs::remove_file(&next);
    crate::recover::finish::commit::write_report(&next, &report)?;
    crate::base::files::rename_durably(&next, &j.report).map_err(Error::writing(&j.report))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file that cannot be read is told from one written since its stamp: a read error
    /// is not an application's write.
    #[test]
    fn a_read_error_is_not_a_write() {
        let dir = std::env::temp_dir().join(format!("salvage-steps-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("unreadable")).unwrap();
        let file = dir.join("log");
        std::fs::write(&file, b"").unwrap();
        let stamp = FileStamp::read(&file).unwrap();
        assert!(read_unchanged(&file, &stamp).is_ok());
        // A directory opens, and its read fails.
        let unreadable = dir.join("unreadable");
        let at = FileStamp::read(&unreadable).unwrap();
        assert!(matches!(
            read_unchanged(&unreadable, &at),
            Err(Unread::Failed(..))
        ));
        std::fs::write(&file, b"written").unwrap();
        assert!(matches!(
            read_unchanged(&file, &stamp),
            Err(Unread::Moved(_))
        ));
        std::fs::remove_file(&file).unwrap();
        assert!(matches!(
            read_unchanged(&file, &stamp),
            Err(Unread::Moved(_))
        ));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
