//! The phase journal of a repair (`DB.salvage-repair.json`): where a repair is, written
//! atomically and synced before each step it allows, so that a repair stopped at any
//! instant is finished (`--resume`) or undone (`--rollback`) from what it says, checked
//! against what is on disk.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::base::error::Error;
use crate::base::files::{now, utc, write_atomically, FileStamp};
use crate::base::paths::with_suffix as beside;
use crate::custody::bundle::{ManifestFile, Role};

/// How far a repair got. Each phase is recorded once its work is durable.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// Everything was checked; nothing made yet.
    Validated,
    /// The database and its sidecars are in the archive, hashed.
    Archived,
    /// The recovery from the archived copy is committed at the shadow path.
    Recovered,
    /// The recovery found loss and was not allowed to be put in place: the original is
    /// untouched, the shadow kept as `SHADOW.incomplete`.
    Withheld,
    /// The shadow passed SQLite's integrity check, in the original's journal mode.
    Verified,
    /// Each old `-wal` and `-journal` beside the database is exchanged with an empty
    /// folder (the old file kept at `DB.salvage-old-wal`, `DB.salvage-old-journal`): until
    /// the swap is over, SQLite cannot open the database at all, rather than read the
    /// original without its log or the recovery with the original's log. (A journal of
    /// format 1 spelt this phase `sidecars_removed`: the old sidecars removed, none fenced.)
    #[serde(alias = "sidecars_removed")]
    Fenced,
    /// The shadow is at the database's path; the original is at the shadow's path (or
    /// the aside path).
    Swapped,
    /// The original and its sidecars are filed into the archive (format 3): each linked
    /// there from where the switch left it (copied, when the archive is on another
    /// filesystem), its manifest written from the hashes the recovery's read made, the
    /// folder renamed into place. Their names beside the database stay until `done`.
    Filed,
    /// The fences and the old sidecars are gone, the original's leftover copy removed;
    /// the repair is over.
    Done,
}

impl Phase {
    /// The phase's name, as the journal and the crash switch spell it.
    pub fn name(self) -> &'static str {
        match self {
            Phase::Validated => "validated",
            Phase::Archived => "archived",
            Phase::Recovered => "recovered",
            Phase::Withheld => "withheld",
            Phase::Verified => "verified",
            Phase::Fenced => "fenced",
            Phase::Swapped => "swapped",
            Phase::Filed => "filed",
            Phase::Done => "done",
        }
    }
}

/// The journal's contents.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Journal {
    /// The layout version.
    pub format_version: u32,
    /// The database repaired: the file itself, every symbolic link on the way resolved.
    pub db: PathBuf,
    /// The path the repair was asked for, when it is a symbolic link to `db`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub db_link: Option<PathBuf>,
    /// The archive bundle of the original.
    pub archive: PathBuf,
    /// Where the recovery is written before it is put in place.
    pub shadow: PathBuf,
    /// Where the original goes when the platform cannot exchange two paths.
    pub aside: PathBuf,
    /// The recovery's loss report.
    pub report: PathBuf,
    /// Whether a recovery with loss may be put in place.
    pub allow_partial: bool,
    /// How far the repair got.
    pub phase: Phase,
    /// When the repair started, UTC.
    pub started_utc: String,
    /// When the journal was last written, UTC.
    pub updated_utc: String,
    /// The archived files, as the archive's manifest lists them: from the recovery's
    /// read of the original on (format 3: what the archive will hold), from the copy
    /// (format 2).
    #[serde(default)]
    pub archived: Vec<ManifestFile>,
    /// SHA-256 of the recovered database, once verified (in the original's journal
    /// mode: what is put at the database's path).
    #[serde(default)]
    pub recovered_sha256: Option<String>,
    /// SHA-256 of a recovery withheld for its loss (`SHADOW.incomplete`), as its report
    /// records it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub withheld_sha256: Option<String>,
    /// Whether the recovery had loss (it was put in place with `--allow-partial`).
    #[serde(default)]
    pub partial: bool,
    /// Whether placeholder parents may be written into the recovery (`--placeholders`).
    #[serde(default)]
    pub placeholders: bool,
    /// The original was in write-ahead-log mode: the recovery is put in that mode too.
    #[serde(default)]
    pub wal_mode: bool,
    /// What the recovery's read (format 3), or the archive's copy (format 2), saw of each
    /// original file it proved unchanged during the read by the file system's stamps: the
    /// stamp and the BLAKE3 of the bytes. Before the switch, an original whose stamp is
    /// still this one is unchanged without being read; one whose stamp moved is read
    /// once, its BLAKE3 compared. (Absent, as in a journal written before it was
    /// recorded, the original is hashed whole again.)
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub seen: Vec<Seen>,
    /// A rollback began moving files (recorded before its first move): from then on only
    /// `--rollback` ends the repair. A resume would take a half-restored path for the
    /// recovery, an abandon would leave it half restored.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub rolling_back: bool,
}

/// An original file as the recovery's read, or the archive's copy, saw it.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Seen {
    /// Its role, as the manifest names it (`database`, `wal`, …).
    pub role: String,
    /// What the file system said of it after the copy read its last byte.
    pub stamp: FileStamp,
    /// The BLAKE3 of the bytes copied, lower-case hex.
    pub blake3: String,
}

impl Journal {
    /// The journal's path for the database at `db`.
    pub fn path_for(db: &Path) -> PathBuf {
        beside(db, ".salvage-repair.json")
    }

    /// The layout version this build writes. Format 3 reads the original in place and
    /// files it into the archive after the switch; a journal of format 2 (the archive
    /// copied first) is carried on, or undone, in its own order.
    pub const FORMAT_VERSION: u32 = 3;

    /// Whether this repair files the original into the archive after the switch
    /// (format 3) rather than copying it there first (format 2 and before).
    pub fn files_last(&self) -> bool {
        self.format_version >= 3
    }

    /// Reads the journal of the database at `db`, if there is one.
    pub fn read(db: &Path) -> Result<Option<Journal>, Error> {
        let path = Journal::path_for(db);
        let unreadable = |why: String| {
            Error::Refused {
            what: format!("`{}` is not a repair journal salvage can read: {why}", path.display()),
            hint: "look at it and at the files it names; salvage does not guess what a damaged journal meant".into(),
        }
        };
        match std::fs::read(&path) {
            Ok(bytes) => {
                let mut j: Journal =
                    serde_json::from_slice(&bytes).map_err(|e| unreadable(e.to_string()))?;
                if j.format_version > Journal::FORMAT_VERSION {
                    return Err(unreadable(format!(
                        "its format {} is newer than this salvage's ({})",
                        j.format_version,
                        Journal::FORMAT_VERSION
                    )));
                }
                if j.format_version < 2 && j.phase == Phase::Fenced {
                    // Format 1 recorded `sidecars_removed`: the old logs removed (each in
                    // the archive), nothing fenced, the original still at DB. The fence
                    // step, checked again, makes the fences this build relies on.
                    j.phase = Phase::Verified;
                }
                Ok(Some(j))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(Error::Source { path, source: e }),
        }
    }

    /// Records `phase` durably, then stops the process there if the test-only switch
    /// names it (`SALVAGE_FAULT_AT=repair:PHASE`, see [`crate::base::crash`]).
    pub fn advance(&mut self, phase: Phase) -> Result<(), Error> {
        self.phase = phase;
        self.write()?;
        crate::base::crash::point(&format!("repair:{}", phase.name()));
        Ok(())
    }

    /// Writes the journal atomically and syncs it.
    pub fn write(&mut self) -> Result<(), Error> {
        self.updated_utc = utc(now());
        let json = serde_json::to_vec_pretty(self).map_err(|e| Error::Output(e.into()))?;
        let path = Journal::path_for(&self.db);
        write_atomically(&path, &json).map_err(|source| Error::Write { path, source })
    }

    /// Removes the journal: the repair is over (finished or undone).
    pub fn remove(&self) -> Result<(), Error> {
        let path = Journal::path_for(&self.db);
        std::fs::remove_file(&path).map_err(Error::writing(&path))?;
        crate::base::files::sync_parent(&path).map_err(|source| Error::Write { path, source })
    }

    /// The archived file of `role`.
    pub fn archived(&self, role: Role) -> Option<&ManifestFile> {
        self.archived.iter().find(|f| f.role == role.name())
    }

    /// What the recovery's read, or the archive's copy, saw of the original of `role`,
    /// when its stamps proved it unchanged during the read.
    pub fn seen(&self, role: Role) -> Option<&Seen> {
        self.seen.iter().find(|f| f.role == role.name())
    }
}
