//! Evidence bundles: a database and its sidecars (`-wal`, `-shm`, `-journal`) copied byte
//! for byte into a folder, never through SQLite, with a `MANIFEST.json` of their sizes and
//! SHA-256 hashes. `salvage quarantine` makes one for an examiner, `salvage repair` makes
//! one as its archive of the original; [`verify`] re-hashes one and says what differs.
//!
//! A bundle is written as `DIR.incomplete/`, each file synced, the manifest last, the
//! files made read-only, then renamed to `DIR`: a folder named `DIR` is always whole.

mod verify;

use std::path::{Path, PathBuf};

use crate::base::dbpath::DatabasePath;
use crate::base::error::Error;
use crate::base::files::{
    self, copy_file_watched, hash_file, rename_durably, utc, write_atomically, Watched,
};
pub use crate::base::paths::SIDECARS;
pub use crate::report::manifest::{
    safe_relative, BackupRoot, JournalMode, Kind, Manifest, ManifestFile, Role, FORMAT_VERSION,
    MANIFEST,
};
pub use verify::{verify, verify_anchored, Difference, Verification};

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
/// (`kind` says what for). Each file is hashed as it is copied; a file that changed
/// during the copy ends the run with nothing made. Whether it changed is told by what the
/// file system says of it before and after ([`Watched::steady`]), or, when that cannot
/// tell (a file written in the last seconds before the copy), by hashing it again.
pub fn make(db: &Path, to: &Path, kind: &str, who: &Provenance) -> Result<Manifest, Error> {
    make_watched(db, to, kind, who).map(|(manifest, _)| manifest)
}

/// [`make`], with what each copy saw of its original, in the manifest's order.
pub fn make_watched(
    db: &Path,
    to: &Path,
    kind: &str,
    who: &Provenance,
) -> Result<(Manifest, Vec<Watched>), Error> {
    // The files SQLite keeps lie beside the file a link points to.
    let db = DatabasePath::resolve(db)?;
    check_target(to)?;
    check_apart(to, &protected(&db))?;
    let partial = incomplete(to);
    let out = |e: std::io::Error| Error::Output(e);
    std::fs::create_dir(&partial).map_err(Error::writing(&partial))?;
    let mut manifest = Manifest::new(kind, &db.file, who, files::now());
    manifest.source_link = db.link().map(|l| l.display().to_string());
    let mut seen = Vec::new();
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
        let watched = copy_file_watched(&path, &copy)?;
        let copied = watched.copied.clone();
        let unchanged = watched.steady()
            || hash_file(&path).map_err(|e| Error::Source {
                path: path.clone(),
                source: e,
            })? == copied;
        if !unchanged {
            // A copy of a file that changed under it is no copy of anything: removed, so
            // that the refusal leaves nothing behind.
            std::fs::remove_dir_all(&partial).map_err(Error::writing(&partial))?;
            return Err(Error::Refused {
                what: format!("`{}` changed while it was copied", path.display()),
                hint: "something is writing to it: stop the application using it and run again; nothing was kept".into(),
            });
        }
        seen.push(watched);
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
    Ok((manifest, seen))
}

/// Writes `manifest` into the bundle being made at `partial` (atomically, synced), gives
/// it the modification time its `created_utc` says (to the second), and makes it and
/// every file it lists read-only. An error names the file it was writing.
pub fn seal(partial: &Path, manifest: &Manifest) -> Result<(), Error> {
    write_manifest(partial, manifest)?;
    make_read_only(partial, &manifest.files)
}

/// [`seal`]'s first half: the manifest written, given its time and made read-only; the
/// files it lists left as they are (a repair's archive whose files are the original's
/// own, linked, while the original's names beside the database still hold them).
pub fn write_manifest(partial: &Path, manifest: &Manifest) -> Result<(), Error> {
    let path = partial.join(MANIFEST);
    let json = serde_json::to_vec_pretty(manifest).map_err(|e| Error::writing(&path)(e.into()))?;
    write_atomically(&path, &json).map_err(Error::writing(&path))?;
    let created = files::parse_utc(&manifest.created_utc).ok_or_else(|| {
        Error::writing(&path)(std::io::Error::other("created_utc is not a UTC time"))
    })?;
    files::set_modified(&path, created).map_err(Error::writing(&path))?;
    set_read_only(&path).map_err(Error::writing(&path))
}

/// [`seal`]'s second half: every file of `files` (a manifest's list) in the bundle at
/// `dir` made read-only.
pub fn make_read_only(dir: &Path, files: &[ManifestFile]) -> Result<(), Error> {
    for f in files {
        let file = dir.join(&f.path);
        set_read_only(&file).map_err(Error::writing(&file))?;
    }
    Ok(())
}

/// Makes a file read-only for everyone.
fn set_read_only(path: &Path) -> std::io::Result<()> {
    let mut perms = std::fs::metadata(path)?.permissions();
    perms.set_readonly(true);
    std::fs::set_permissions(path, perms)
}
