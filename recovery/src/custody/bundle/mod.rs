//! Evidence bundles: a database and its sidecars (`-wal`, `-shm`, `-journal`) copied byte
//! for byte into a folder, never through SQLite, with a `MANIFEST.json` of their sizes and
//! SHA-256 hashes. `salvage quarantine` makes one for an examiner, `salvage repair` makes
//! one as its archive of the original; [`verify`] re-hashes one and says what differs.
//!
//! A bundle is written as `DIR.incomplete/`, each file synced, the manifest last, the
//! files made read-only, then renamed to `DIR`: a folder named `DIR` is always whole.

mod verify;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::base::dbpath::DatabasePath;
use crate::base::error::Error;
use crate::base::files::{self, copy_file, hash_file, rename_durably, utc, write_atomically};
pub use verify::{verify, verify_anchored, Difference, Verification};

/// The manifest's file name in a bundle.
pub const MANIFEST: &str = "MANIFEST.json";

/// The manifest's layout version this build writes. 2: each copy has its original's
/// modification time and the manifest the time it was made (`created_utc`), which
/// `verify` checks; a database of a backup may carry `journal_mode`. Version 1 bundles
/// carry no such times.
pub const FORMAT_VERSION: u32 = 2;

/// The sidecar suffixes SQLite gives the files beside a database, in the order copied.
pub const SIDECARS: [&str; 3] = ["-wal", "-shm", "-journal"];

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
    /// A manifest of no files yet, for a bundle of `kind` made at `created` from `source`,
    /// by `who`.
    pub fn new(
        kind: &str,
        source: &Path,
        who: &Provenance,
        created: std::time::SystemTime,
    ) -> Manifest {
        Manifest {
            format_version: FORMAT_VERSION,
            kind: kind.into(),
            tool: format!("salvage {}", env!("CARGO_PKG_VERSION")),
            created_utc: utc(created),
            command: who.command.clone(),
            source: std::path::absolute(source)
                .unwrap_or_else(|_| source.to_path_buf())
                .display()
                .to_string(),
            source_link: None,
            case: who.case.clone(),
            examiner: who.examiner.clone(),
            files: Vec::new(),
            root: None,
        }
    }

    /// The bundle's database file.
    pub fn database(&self) -> Option<&ManifestFile> {
        self.files
            .iter()
            .find(|f| Role::parse(&f.role) == Some(Role::Database))
    }

    /// Reads the manifest of the bundle at `dir`. A field salvage never writes is refused
    /// like a file that is not a manifest ([`verify`] names it as a difference instead).
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
fn not_a_manifest(path: &Path, why: impl std::fmt::Display) -> Error {
    Error::Refused {
        what: format!("`{}` is not a bundle manifest: {why}", path.display()),
        hint: "a bundle is a folder made by `salvage quarantine`, `repair` or `backup`".into(),
    }
}

/// The SHA-256 of the manifest of the bundle at `dir`, lower-case hex: printed when a
/// bundle is made, for the examiner to record in the case notes, and checked by
/// `salvage verify DIR --manifest-sha256 HASH`. Without this anchor outside the bundle,
/// a manifest rewritten with hashes that match changed files cannot be told from the
/// original.
pub fn manifest_sha256(dir: &Path) -> Result<String, Error> {
    let path = dir.join(MANIFEST);
    hash_file(&path)
        .map(|hashed| hashed.sha256)
        .map_err(|e| Error::Source { path, source: e })
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

/// Who asks for a bundle, and why: written into its manifest.
#[derive(Clone, Debug, Default)]
pub struct Provenance {
    /// The command line.
    pub command: Vec<String>,
    /// `--case`.
    pub case: Option<String>,
    /// `--examiner`.
    pub examiner: Option<String>,
}

/// The database at `dir` when `dir` is a bundle (a folder with a manifest naming one):
/// `inspect` and `recover` read a bundle through its database file, whose sidecars lie
/// beside it under their usual names.
pub fn database_in(dir: &Path) -> Option<PathBuf> {
    if !dir.is_dir() || !dir.join(MANIFEST).is_file() {
        return None;
    }
    let manifest = Manifest::read(dir).ok()?;
    let file = manifest.database()?;
    safe_relative(&file.path).map(|p| dir.join(p))
}

/// A manifest's path, when it stays inside the bundle (no root, no `..`).
pub fn safe_relative(path: &str) -> Option<PathBuf> {
    let p = Path::new(path);
    p.components()
        .all(|c| matches!(c, std::path::Component::Normal(_)))
        .then(|| p.to_path_buf())
}

/// The files SQLite keeps for the database at `db`: the database and each sidecar that
/// exists, with their roles.
pub fn database_files(db: &Path) -> Vec<(PathBuf, &'static str)> {
    let mut out = vec![(db.to_path_buf(), "database")];
    for (suffix, role) in SIDECARS.iter().zip(["wal", "shm", "journal"]) {
        let path = crate::base::paths::with_suffix(db, suffix);
        if std::fs::symlink_metadata(&path).is_ok() {
            out.push((path, role));
        }
    }
    out
}

/// `DIR.incomplete`: where a bundle is written before it is whole.
pub fn incomplete(dir: &Path) -> PathBuf {
    crate::base::paths::with_suffix(dir, ".incomplete")
}

/// Checks that a bundle can be made at `to` before anything is created: neither `to` nor
/// `to.incomplete` exists, and the folder that will hold it does.
pub fn check_target(to: &Path) -> Result<(), Error> {
    let refuse = |what: String, hint: &str| {
        Err(Error::Refused {
            what,
            hint: hint.into(),
        })
    };
    if std::fs::symlink_metadata(to).is_ok() {
        return refuse(
            format!("`{}` exists", to.display()),
            "name a new folder: a bundle is never written over anything",
        );
    }
    let partial = incomplete(to);
    if std::fs::symlink_metadata(&partial).is_ok() {
        return refuse(
            format!(
                "`{}` is left from an earlier run that did not finish",
                partial.display()
            ),
            "inspect it, or remove it yourself; salvage never reuses or deletes it",
        );
    }
    let parent = to
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    if !parent.is_dir() {
        return refuse(
            format!("the folder `{}` does not exist", parent.display()),
            "create it first",
        );
    }
    Ok(())
}

/// The paths SQLite reads or writes for the database at `db`: the file, its `-wal`,
/// `-shm` and `-journal` beside it, and the same names beside the link it was given by.
/// A folder made at one of them would stop SQLite from opening the database.
pub fn protected(db: &DatabasePath) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for base in std::iter::once(db.file.as_path()).chain(db.link()) {
        out.push(base.to_path_buf());
        out.extend(
            SIDECARS
                .iter()
                .map(|s| crate::base::paths::with_suffix(base, s)),
        );
    }
    out
}

/// Refuses a bundle or archive folder `to` that is, or whose `to.incomplete` is, one of
/// `taken` (the database's own files, a workflow's own files): compared with their folders
/// resolved, since neither need exist yet.
pub fn check_apart(to: &Path, taken: &[PathBuf]) -> Result<(), Error> {
    let resolved =
        |p: &Path| crate::base::paths::canonical_target(p).unwrap_or_else(|| p.to_path_buf());
    let taken: Vec<PathBuf> = taken.iter().map(|p| resolved(p)).collect();
    for candidate in [to.to_path_buf(), incomplete(to)] {
        if taken.contains(&resolved(&candidate)) {
            return Err(Error::Refused {
                what: format!(
                    "`{}` is a file the database or this command uses",
                    candidate.display()
                ),
                hint: "name a new folder of its own: a folder at a database's -wal, -shm or -journal would stop SQLite from opening the database".into(),
            });
        }
    }
    Ok(())
}

/// Copies the database at `db` and its sidecars byte for byte into a new bundle at `to`
/// (`kind` says what for). Each file is hashed as it is copied and hashed again at its
/// source afterwards: a file that changed during the copy ends the run with nothing at
/// `to` (its partial copy is left at `to.incomplete` for the person to look at).
pub fn make(db: &Path, to: &Path, kind: &str, who: &Provenance) -> Result<Manifest, Error> {
    // The files SQLite keeps lie beside the file a link points to.
    let db = DatabasePath::resolve(db)?;
    check_target(to)?;
    check_apart(to, &protected(&db))?;
    let partial = incomplete(to);
    let out = |e: std::io::Error| Error::Output(e);
    std::fs::create_dir(&partial).map_err(Error::writing(&partial))?;
    let mut manifest = Manifest::new(kind, &db.file, who, files::now());
    manifest.source_link = db.link().map(|l| l.display().to_string());
    for (path, role) in database_files(&db.file) {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let meta = std::fs::metadata(&path).map_err(|e| Error::Source {
            path: path.clone(),
            source: e,
        })?;
        let copy = partial.join(&name);
        let copied = copy_file(&path, &copy)?;
        let again = hash_file(&path).map_err(|e| Error::Source {
            path: path.clone(),
            source: e,
        })?;
        if again != copied {
            // A copy of a file that changed under it is no copy of anything: removed, so
            // that the refusal leaves nothing behind.
            std::fs::remove_dir_all(&partial).map_err(Error::writing(&partial))?;
            return Err(Error::Refused {
                what: format!("`{}` changed while it was copied", path.display()),
                hint: "something is writing to it: stop the application using it and run again; nothing was kept".into(),
            });
        }
        if let Ok(time) = meta.modified() {
            files::set_modified(&copy, time).map_err(Error::writing(&copy))?;
        }
        manifest.files.push(ManifestFile {
            path: name,
            role: role.into(),
            size: copied.size,
            sha256: copied.sha256,
            mtime_utc: meta.modified().ok().map(utc),
            rows: None,
            journal_mode: None,
        });
    }
    seal(&partial, &manifest)?;
    rename_durably(&partial, to).map_err(out)?;
    Ok(manifest)
}

/// Writes `manifest` into the bundle being made at `partial` (atomically, synced), gives
/// it the modification time its `created_utc` says (to the second), and makes it and
/// every file it lists read-only. An error names the file it was writing.
pub fn seal(partial: &Path, manifest: &Manifest) -> Result<(), Error> {
    let path = partial.join(MANIFEST);
    let json = serde_json::to_vec_pretty(manifest).map_err(|e| Error::writing(&path)(e.into()))?;
    write_atomically(&path, &json).map_err(Error::writing(&path))?;
    let created = files::parse_utc(&manifest.created_utc).ok_or_else(|| {
        Error::writing(&path)(std::io::Error::other("created_utc is not a UTC time"))
    })?;
    files::set_modified(&path, created).map_err(Error::writing(&path))?;
    for f in &manifest.files {
        let file = partial.join(&f.path);
        set_read_only(&file).map_err(Error::writing(&file))?;
    }
    set_read_only(&path).map_err(Error::writing(&path))
}

/// Makes a file read-only for everyone.
fn set_read_only(path: &Path) -> std::io::Result<()> {
    let mut perms = std::fs::metadata(path)?.permissions();
    perms.set_readonly(true);
    std::fs::set_permissions(path, perms)
}
