//! The phase journal of a repair (`DB.salvage-repair.json`): where a repair is, written
//! atomically and synced before each step it allows, so that a repair stopped at any
//! instant is finished (`--resume`) or undone (`--rollback`) from what it says, checked
//! against what is on disk.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::bundle::files::{now, utc, write_atomically};
use crate::bundle::ManifestFile;
use crate::error::Error;
use crate::request::with_suffix as beside;

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
    /// The shadow passed SQLite's integrity check.
    Verified,
    /// The old sidecars are gone from beside the database (each matched its archived copy).
    SidecarsRemoved,
    /// The shadow is at the database's path; the original is at the shadow's path (or
    /// the aside path).
    Swapped,
    /// The original's leftover copy is removed; the repair is over.
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
            Phase::SidecarsRemoved => "sidecars_removed",
            Phase::Swapped => "swapped",
            Phase::Done => "done",
        }
    }
}

/// The journal's contents.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Journal {
    /// The layout version.
    pub format_version: u32,
    /// The database repaired, absolute.
    pub db: PathBuf,
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
    /// The archived files, as the archive's manifest lists them.
    #[serde(default)]
    pub archived: Vec<ManifestFile>,
    /// SHA-256 of the recovered database, once verified.
    #[serde(default)]
    pub recovered_sha256: Option<String>,
    /// Whether the recovery had loss (it was put in place with `--allow-partial`).
    #[serde(default)]
    pub partial: bool,
}

impl Journal {
    /// The journal's path for the database at `db`.
    pub fn path_for(db: &Path) -> PathBuf {
        beside(db, ".salvage-repair.json")
    }

    /// Reads the journal of the database at `db`, if there is one.
    pub fn read(db: &Path) -> Result<Option<Journal>, Error> {
        let path = Journal::path_for(db);
        match std::fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes).map(Some).map_err(|e| Error::Refused {
                what: format!("`{}` is not a repair journal salvage can read: {e}", path.display()),
                hint: "look at it and at the files it names; salvage does not guess what a damaged journal meant".into(),
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(Error::Source { path, source: e }),
        }
    }

    /// Records `phase` durably, then stops the process there if the test-only switch
    /// names it (`SALVAGE_FAULT_AT=repair:PHASE`, see [`crate::crash`]).
    pub fn advance(&mut self, phase: Phase) -> Result<(), Error> {
        self.phase = phase;
        self.write()?;
        crate::crash::point(&format!("repair:{}", phase.name()));
        Ok(())
    }

    /// Writes the journal atomically and syncs it.
    pub fn write(&mut self) -> Result<(), Error> {
        self.updated_utc = utc(now());
        let json = serde_json::to_vec_pretty(self).map_err(|e| Error::Output(e.into()))?;
        write_atomically(&Journal::path_for(&self.db), &json).map_err(Error::Output)
    }

    /// Removes the journal: the repair is over (finished or undone).
    pub fn remove(&self) -> Result<(), Error> {
        let path = Journal::path_for(&self.db);
        std::fs::remove_file(&path).map_err(Error::Output)?;
        crate::bundle::files::sync_parent(&path).map_err(Error::Output)
    }

    /// The archived file of `role` (`database`, `wal`, `shm`, `journal`).
    pub fn archived(&self, role: &str) -> Option<&ManifestFile> {
        self.archived.iter().find(|f| f.role == role)
    }
}
