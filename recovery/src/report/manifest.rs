//! The manifest of a bundle (`MANIFEST.json`): what a quarantine, a repair's archive or
//! a backup holds, each file with its role, size, SHA-256 and original's time. The
//! document's schema only; making and checking bundles is `crate::custody::bundle`'s.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::base::error::Error;

/// The manifest's file name in a bundle.
pub const MANIFEST: &str = "MANIFEST.json";

/// The manifest's layout version this build writes. 2: each copy has its original's
/// modification time and the manifest the time it was made (`created_utc`), which
/// `verify` checks; a database of a backup may carry `journal_mode`. Version 1 bundles
/// carry no such times.
pub const FORMAT_VERSION: u32 = 2;

/// What a bundle holds, as `MANIFEST.json` says.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// The manifest's layout version.
    pub format_version: u32,
    /// What made the bundle: `quarantine`, `repair-archive` or `backup`.
    pub kind: String,
    /// The tool and its version.
    pub tool: String,
    /// When the copy was made, UTC.
    pub created_utc: String,
    /// The command line that made it.
    pub command: Vec<String>,
    /// The absolute path the database was copied from: the file itself, every symbolic
    /// link on the way resolved.
    pub source: String,
    /// The path as given, when it is a symbolic link to `source`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_link: Option<String>,
    /// The case the bundle belongs to (`--case`), if given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub case: Option<String>,
    /// Who made it (`--examiner`), if given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub examiner: Option<String>,
    /// Every file of the bundle but the manifest.
    pub files: Vec<ManifestFile>,
    /// What a backup holds at its top (`salvage backup`); absent in other bundles.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub root: Option<BackupRoot>,
}

/// The top of a backup: the source's own name, under which the backup holds it
/// (`BACKUP/NAME`), and whether that is one database file or a folder of files.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct BackupRoot {
    /// The source's file name.
    pub name: String,
    /// The source was a folder (else one database file).
    pub folder: bool,
    /// Every folder under a folder source, `/`-separated and relative to it, so that a
    /// restore makes the empty ones too.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub folders: Vec<String>,
}

/// One file of a bundle.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ManifestFile {
    /// Its path inside the bundle (`/`-separated).
    pub path: String,
    /// `database`, `wal`, `shm`, `journal` or `other`.
    pub role: String,
    /// Its length in bytes.
    pub size: u64,
    /// Its SHA-256, lower-case hex.
    pub sha256: String,
    /// The original's modification time, UTC, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mtime_utc: Option<String>,
    /// A backup's database copy: the rows of each table counted in it, by table name
    /// (virtual tables are not counted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rows: Option<BTreeMap<String, u64>>,
    /// A backup's database copy whose original was not in rollback-journal mode: the
    /// original's mode. The copy itself is stored in rollback-journal mode (a reader then
    /// creates nothing beside it), and `restore` puts this mode back. Absent for a
    /// rollback-journal original.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub journal_mode: Option<JournalMode>,
}

/// A database's journal mode other than a rollback journal's, as a backup's manifest
/// records its original's ("The Database Header": file format write and read versions,
/// offsets 18 and 19, are 2 for WAL).
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum JournalMode {
    /// Write-ahead log (`PRAGMA journal_mode=WAL`).
    Wal,
}

impl Manifest {
    /// The bundle's database file.
    pub fn database(&self) -> Option<&ManifestFile> {
        self.files
            .iter()
            .find(|f| Role::parse(&f.role) == Some(Role::Database))
    }

    /// Reads the manifest of the bundle at `dir`. A field salvage never writes is refused
    /// like a file that is not a manifest ([`verify`](crate::bundle::verify) names it as a difference instead).
    pub fn read(dir: &Path) -> Result<Manifest, Error> {
        let path = dir.join(MANIFEST);
        let text = std::fs::read_to_string(&path).map_err(|e| Error::Source {
            path: path.clone(),
            source: e,
        })?;
        serde_json::from_str(&text).map_err(|e| not_a_manifest(&path, e))
    }
}

/// The refusal of a file at `path` that cannot be read as a manifest, and why.
pub(crate) fn not_a_manifest(path: &Path, why: impl std::fmt::Display) -> Error {
    Error::Refused {
        what: format!("`{}` is not a bundle manifest: {why}", path.display()),
        hint: "a bundle is a folder made by `salvage quarantine`, `repair` or `backup`".into(),
    }
}

/// What made a bundle, as its manifest's `kind` names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `salvage quarantine`: evidence for an examiner.
    Quarantine,
    /// `salvage repair`: the archive of the original before the repair.
    RepairArchive,
    /// `salvage backup`: a copy of a healthy, live database or folder.
    Backup,
}

impl Kind {
    /// Every kind.
    pub const ALL: [Kind; 3] = [Kind::Quarantine, Kind::RepairArchive, Kind::Backup];

    /// Its name in a manifest.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Quarantine => "quarantine",
            Kind::RepairArchive => "repair-archive",
            Kind::Backup => "backup",
        }
    }

    /// The kind a manifest names, if salvage makes it.
    pub fn parse(name: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.name() == name)
    }

    /// The `salvage` command that makes a bundle of this kind.
    pub fn command(self) -> &'static str {
        match self {
            Kind::Quarantine => "quarantine",
            Kind::RepairArchive => "repair",
            Kind::Backup => "backup",
        }
    }
}

impl Serialize for Kind {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

/// What a file of a bundle is, as its manifest entry's `role` names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// The database file.
    Database,
    /// Its write-ahead log, `DB-wal`.
    Wal,
    /// Its wal-index, `DB-shm`.
    Shm,
    /// Its rollback journal, `DB-journal`.
    Journal,
    /// Any other file of a folder backed up.
    Other,
}

impl Role {
    /// Every role.
    pub const ALL: [Role; 5] = [
        Role::Database,
        Role::Wal,
        Role::Shm,
        Role::Journal,
        Role::Other,
    ];

    /// Its name in a manifest.
    pub fn name(self) -> &'static str {
        match self {
            Role::Database => "database",
            Role::Wal => "wal",
            Role::Shm => "shm",
            Role::Journal => "journal",
            Role::Other => "other",
        }
    }

    /// The role a manifest names, if salvage writes it.
    pub fn parse(name: &str) -> Option<Role> {
        Role::ALL.into_iter().find(|r| r.name() == name)
    }

    /// A sidecar's suffix after its database's name (`-wal`, `-shm`, `-journal`).
    pub fn suffix(self) -> Option<&'static str> {
        match self {
            Role::Wal => Some("-wal"),
            Role::Shm => Some("-shm"),
            Role::Journal => Some("-journal"),
            Role::Database | Role::Other => None,
        }
    }
}

impl Serialize for Role {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

/// A manifest's path, when it stays inside the bundle (no root, no `..`).
pub fn safe_relative(path: &str) -> Option<PathBuf> {
    let p = Path::new(path);
    p.components()
        .all(|c| matches!(c, std::path::Component::Normal(_)))
        .then(|| p.to_path_buf())
}
