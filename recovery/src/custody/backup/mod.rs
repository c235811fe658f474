//! `salvage backup` and `salvage restore`: copies of a healthy, live database (or of a
//! folder holding several, as a Chroma persist directory does), and their way back.
//!
//! A backup is a new folder inside `--to DIR`, named from the UTC time and the source's
//! name (`20261130T235959Z-state.db`), holding the source under its own name
//! (`…/state.db`, or `…/chroma/` and every file under it) and a `MANIFEST.json` of kind
//! `backup` (a [`crate::custody::bundle`]: sizes, SHA-256, each database's row counts):
//!
//! ```text
//! Plan::check ─▶ NAME.incomplete/ ─▶ copies ─────────▶ checks ──────────▶ manifest ─▶ NAME ─▶ prune
//! (nothing        created            SQLite files by    quick_check,        written,             oldest
//!  created)                          the online backup  row counts equal    read-only            beyond
//!                                    API, read-only;    to the snapshot's,                       --keep
//!                                    the rest byte for  hashes
//!                                    byte
//! ```
//!
//! A folder named as a backup is always whole: a run that stops leaves only
//! `NAME.incomplete`, which the next run names and never reuses or removes. [`restore()`]
//! verifies a backup against its manifest, copies it beside the target, moves the target
//! (and a database's sidecars) aside, puts the copy in place and verifies it.

pub mod restore;
pub mod sqlite;
pub mod tree;

use std::path::{Path, PathBuf};

use crate::base::error::Error;
use crate::base::files::{
    copy_file, hash_file, rename_durably, set_modified, sync_dir, sync_parent, utc, utc_compact,
    Copied,
};
use crate::base::paths::with_suffix;
use crate::custody::bundle::{
    check_target, incomplete, seal, BackupRoot, Manifest, ManifestFile, Provenance, Role,
};
use sqlite::Snapshot;
use tree::{refused, Entry, Tree};

pub use restore::{restore, Restored};

/// The manifest's `kind` for a backup.
pub const KIND: &str = "backup";

/// What to back up, where, and how many backups of it to keep.
#[derive(Clone, Debug)]
pub struct BackupOptions {
    /// The database file, or the folder, to back up.
    pub src: PathBuf,
    /// The folder that holds the backups; it must exist.
    pub to: PathBuf,
    /// Keep this many backups of the source (the new one among them), removing the
    /// oldest; `None` keeps every one.
    pub keep: Option<usize>,
    /// Written into the manifest.
    pub who: Provenance,
}

/// A backup checked before anything is created: what it copies, the folder it will be,
/// and what earlier runs left behind.
#[derive(Debug)]
pub struct Plan {
    /// The new backup's folder; neither it nor its `.incomplete` exists.
    pub path: PathBuf,
    /// Left by earlier runs of this source that did not finish (`NAME.incomplete`, and
    /// `NAME.pruned` from a prune): never reused or removed, only named.
    pub stale: Vec<PathBuf>,
    /// The source, walked.
    tree: Tree,
    /// The options.
    options: BackupOptions,
    /// The new backup's manifest, its files not yet listed: made when the backup is
    /// planned, whose time names it.
    manifest: Manifest,
}

/// A backup made, verified and in place.
#[derive(Debug)]
pub struct Backup {
    /// Its folder.
    pub path: PathBuf,
    /// Its manifest.
    pub manifest: Manifest,
    /// Sidecars of the databases under a folder source, not copied (their committed
    /// content is in the database's copy), relative to the source.
    pub skipped: Vec<String>,
    /// Older backups removed to keep `--keep`.
    pub pruned: Vec<PathBuf>,
}

/// One file copied into a backup, not yet checked.
struct Copy<'t> {
    /// The file of the source.
    entry: &'t Entry,
    /// A file copied byte for byte: what was written.
    written: Option<Copied>,
    /// A database copied through SQLite: its rows in the snapshot copied, and its mode.
    snapshot: Option<Snapshot>,
    /// The source's modification time.
    mtime: Option<std::time::SystemTime>,
}

impl Plan {
    /// Checks a backup before anything is created: `--to` is a folder not inside the
    /// source, the source is a database or a folder of regular files, and a free name.
    pub fn check(options: &BackupOptions) -> Result<Plan, Error> {
        check_folder(&options.to)?;
        if options.src.is_dir() && inside(&options.to, &options.src) {
            return Err(refused(
                format!(
                    "`{}` is inside `{}`, the folder backed up",
                    options.to.display(),
                    options.src.display()
                ),
                "keep the backups outside the folder: each backup would copy the ones before it",
            ));
        }
        let tree = Tree::walk(&options.src)?;
        for db in tree.databases() {
            sqlite::check_source(&db.path)?;
        }
        let created = crate::base::files::now();
        let path = free_name(&options.to, &utc_compact(created), &tree.name)?;
        let stale = leftovers(&options.to, &tree.name)?;
        let mut manifest = Manifest::new(KIND, &tree.source, &options.who, created);
        manifest.source_link = tree.link.as_ref().map(|l| l.display().to_string());
        Ok(Plan {
            path,
            stale,
            tree,
            manifest,
            options: options.clone(),
        })
    }

    /// Makes the backup: copies into `NAME.incomplete`, checks every copy, writes the
    /// manifest, renames into place, then prunes to `--keep`. A run that fails leaves
    /// `NAME.incomplete` and nothing named as a backup.
    pub fn run(self) -> Result<Backup, Error> {
        let partial = incomplete(&self.path);
        std::fs::create_dir(&partial).map_err(Error::writing(&partial))?;
        crate::base::crash::point("backup:created");
        let copies = self.copy_all(&partial)?;
        crate::base::crash::point("backup:copied");
        let files = self.check_all(&partial, copies)?;
        crate::base::crash::point("backup:verified");
        let manifest = self.seal(&partial, files)?;
        crate::base::crash::point("backup:manifest");
        rename_durably(&partial, &self.path).map_err(Error::Output)?;
        crate::base::crash::point("backup:renamed");
        let pruned = self.prune()?;
        crate::base::crash::point("backup:pruned");
        Ok(Backup {
            path: self.path,
            manifest,
            skipped: self.tree.skipped,
            pruned,
        })
    }

    /// Copies every file of the source into `partial`: databases through SQLite's online
    /// backup API, the rest byte for byte, each under its path in the source.
    fn copy_all(&self, partial: &Path) -> Result<Vec<Copy<'_>>, Error> {
        if self.tree.folder {
            let top = partial.join(&self.tree.name);
            for folder in
                std::iter::once(top.clone()).chain(self.tree.folders.iter().map(|f| top.join(f)))
            {
                std::fs::create_dir(&folder).map_err(Error::writing(&folder))?;
            }
        }
        let mut copies = Vec::new();
        for entry in &self.tree.files {
            let to = partial.join(&entry.inside);
            let source = |e| Error::Source {
                path: entry.path.clone(),
                source: e,
            };
            let mtime = std::fs::metadata(&entry.path)
                .map_err(source)?
                .modified()
                .ok();
            let (written, snapshot) = if entry.database {
                (None, Some(sqlite::snapshot(&entry.path, &to)?))
            } else {
                (Some(copy_file(&entry.path, &to)?), None)
            };
            copies.push(Copy {
                entry,
                written,
                snapshot,
                mtime,
            });
            if copies.len() == 1 {
                crate::base::crash::point("backup:copying");
            }
        }
        Ok(copies)
    }

    /// Checks each copy (a database: `quick_check`, and the rows of each table equal to
    /// the snapshot's) and hashes it, in manifest order.
    fn check_all(&self, partial: &Path, copies: Vec<Copy<'_>>) -> Result<Vec<ManifestFile>, Error> {
        let mut files = Vec::new();
        for copy in copies {
            let at = partial.join(&copy.entry.inside);
            if let Some(snapshot) = &copy.snapshot {
                sqlite::check_copy(&at, &snapshot.rows).map_err(|why| {
                    failed(format!(
                        "the copy of `{}` failed its check: {why}; the partial backup is left at `{}`",
                        copy.entry.path.display(),
                        partial.display()
                    ))
                })?;
            }
            let hashed = match copy.written {
                Some(written) => written,
                // SQLite wrote this copy: synced here, then hashed as it is on disk.
                None => {
                    std::fs::File::open(&at)
                        .and_then(|f| f.sync_all())
                        .map_err(Error::writing(&at))?;
                    hash_file(&at).map_err(|e| Error::Source {
                        path: at.clone(),
                        source: e,
                    })?
                }
            };
            // The copy keeps its source's time, as the manifest says (`verify` checks it).
            if let Some(time) = copy.mtime {
                set_modified(&at, time).map_err(Error::writing(&at))?;
            }
            files.push(ManifestFile {
                path: copy.entry.inside.clone(),
                role: if copy.snapshot.is_some() {
                    Role::Database
                } else {
                    Role::Other
                }
                .name()
                .into(),
                size: hashed.size,
                sha256: hashed.sha256,
                mtime_utc: copy.mtime.map(utc),
                journal_mode: copy.snapshot.as_ref().and_then(|s| s.journal_mode),
                rows: copy.snapshot.map(|s| s.rows),
            });
        }
        Ok(files)
    }

    /// Writes the manifest and makes every file read-only, then syncs every folder of the
    /// backup, so that the rename puts a whole backup in place.
    fn seal(&self, partial: &Path, files: Vec<ManifestFile>) -> Result<Manifest, Error> {
        let mut manifest = self.manifest.clone();
        manifest.files = files;
        manifest.root = Some(BackupRoot {
            name: self.tree.name.clone(),
            folder: self.tree.folder,
            folders: self.tree.folders.clone(),
        });
        seal(partial, &manifest)?;
        let top = partial.join(&self.tree.name);
        let mut folders: Vec<PathBuf> = self.tree.folders.iter().map(|f| top.join(f)).collect();
        if self.tree.folder {
            folders.push(top);
        }
        folders.push(partial.to_path_buf());
        for folder in folders {
            sync_dir(&folder).map_err(Error::writing(&folder))?;
        }
        Ok(manifest)
    }

    /// Removes the oldest backups of this source beyond `--keep`, the new one counted and
    /// never removed. Each is renamed to `NAME.pruned` first, so that a stop halfway
    /// leaves nothing named as a backup that is not whole.
    fn prune(&self) -> Result<Vec<PathBuf>, Error> {
        let Some(keep) = self.options.keep else {
            return Ok(Vec::new());
        };
        let mut older = backups_of(&self.options.to, &self.tree.name, &self.manifest.source)?;
        older.retain(|(_, path)| path != &self.path);
        let excess = (older.len() + 1).saturating_sub(keep);
        let mut pruned = Vec::new();
        for (_, path) in older.into_iter().take(excess) {
            let doomed = with_suffix(&path, ".pruned");
            rename_durably(&path, &doomed).map_err(Error::Output)?;
            crate::base::crash::point("backup:pruning");
            std::fs::remove_dir_all(&doomed).map_err(Error::Output)?;
            sync_parent(&doomed).map_err(Error::Output)?;
            pruned.push(path);
        }
        Ok(pruned)
    }
}

/// Backs up `options.src` into a new folder inside `options.to`: [`Plan::check`], then
/// [`Plan::run`].
pub fn backup(options: &BackupOptions) -> Result<Backup, Error> {
    Plan::check(options)?.run()
}

/// A failure after the backup or restore began (exit 1), in words.
fn failed(what: String) -> Error {
    Error::Output(std::io::Error::other(what))
}

/// Refuses a `--to` that is not an existing folder.
fn check_folder(dir: &Path) -> Result<(), Error> {
    match std::fs::metadata(dir) {
        Ok(meta) if meta.is_dir() => Ok(()),
        Ok(_) => Err(refused(
            format!("`{}` is not a folder", dir.display()),
            "--to names the folder that holds the backups",
        )),
        Err(_) => Err(refused(
            format!("the folder `{}` does not exist", dir.display()),
            "create it first: backups go into an existing folder",
        )),
    }
}

/// `inner` is `outer` or lies under it, symbolic links resolved.
fn inside(inner: &Path, outer: &Path) -> bool {
    match (inner.canonicalize(), outer.canonicalize()) {
        (Ok(inner), Ok(outer)) => inner.starts_with(outer),
        _ => false,
    }
}

/// A backup folder's name: `STAMP-NAME`, or `STAMP.K-NAME` for the K-th backup of `name`
/// begun in the same second (K from 2).
fn folder_name(stamp: &str, k: u32, name: &str) -> String {
    if k < 2 {
        format!("{stamp}-{name}")
    } else {
        format!("{stamp}.{k}-{name}")
    }
}

/// Where a backup of `name` begun at `stamp` goes: the first name neither taken nor left
/// as `.incomplete` by an earlier run.
fn free_name(dir: &Path, stamp: &str, name: &str) -> Result<PathBuf, Error> {
    (1..=1000)
        .map(|k| dir.join(folder_name(stamp, k, name)))
        .find(|path| check_target(path).is_ok())
        .ok_or_else(|| {
            refused(
                format!("no free backup name in `{}` for this second", dir.display()),
                "wait a second and run again",
            )
        })
}

/// A backup's place among the backups of its source: its time (`utc_compact`), then its K.
type Order = (String, u32);

/// The order of the backup folder named `folder` among the backups of `name` (its time,
/// then its K), or `None` when it is not named as one.
fn order_of(folder: &str, name: &str) -> Option<Order> {
    let prefix = folder.strip_suffix(name)?.strip_suffix('-')?;
    let (stamp, k) = match prefix.split_once('.') {
        Some((stamp, k)) => (stamp, k.parse().ok().filter(|k| *k >= 2)?),
        None => (prefix, 1),
    };
    let digits = |r: std::ops::Range<usize>| {
        stamp
            .get(r)
            .is_some_and(|s| s.bytes().all(|b| b.is_ascii_digit()))
    };
    let is_stamp = stamp.len() == 16
        && digits(0..8)
        && stamp.get(8..9) == Some("T")
        && digits(9..15)
        && stamp.get(15..) == Some("Z");
    is_stamp.then(|| (stamp.to_owned(), k))
}

/// The names in `dir`, with their paths.
fn names_in(dir: &Path) -> Result<Vec<(String, PathBuf)>, Error> {
    let read = |e| Error::Source {
        path: dir.to_path_buf(),
        source: e,
    };
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(read)? {
        let entry = entry.map_err(read)?;
        if let Some(name) = entry.file_name().to_str() {
            out.push((name.to_owned(), entry.path()));
        }
    }
    out.sort();
    Ok(out)
}

/// What earlier runs for `name` left in `dir` unfinished: `.incomplete` backups and
/// `.pruned` backups not yet removed.
fn leftovers(dir: &Path, name: &str) -> Result<Vec<PathBuf>, Error> {
    Ok(names_in(dir)?
        .into_iter()
        .filter(|(folder, _)| {
            [".incomplete", ".pruned"].iter().any(|suffix| {
                folder
                    .strip_suffix(suffix)
                    .is_some_and(|base| order_of(base, name).is_some())
            })
        })
        .map(|(_, path)| path)
        .collect())
}

/// The backups of the source at `source` (absolute, as manifests say) named for `name`
/// in `dir`, oldest first: folders named as backups whose manifest is of kind `backup` and
/// names the source. A folder gets its name only once its copies are verified; it is not
/// hashed again here (`salvage verify` does that).
fn backups_of(dir: &Path, name: &str, source: &str) -> Result<Vec<(Order, PathBuf)>, Error> {
    let mut found: Vec<(Order, PathBuf)> = names_in(dir)?
        .into_iter()
        .filter_map(|(folder, path)| Some((order_of(&folder, name)?, path)))
        .filter(|(_, path)| {
            std::fs::symlink_metadata(path).is_ok_and(|m| m.is_dir())
                && Manifest::read(path).is_ok_and(|m| m.kind == KIND && m.source == source)
        })
        .collect();
    found.sort();
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backup_names_order_by_time_then_sequence() {
        let first = folder_name("20261130T235959Z", 1, "state.db");
        let second = folder_name("20261130T235959Z", 2, "state.db");
        assert_eq!(first, "20261130T235959Z-state.db");
        assert_eq!(second, "20261130T235959Z.2-state.db");
        assert!(order_of(&first, "state.db") < order_of(&second, "state.db"));
        assert!(order_of(&second, "state.db") < order_of("20261201T000000Z-state.db", "state.db"));
        assert_eq!(order_of(&first, "other.db"), None);
        assert_eq!(order_of("notes-state.db", "state.db"), None);
        assert_eq!(order_of("20261130T235959Z.1-state.db", "state.db"), None);
    }
}
