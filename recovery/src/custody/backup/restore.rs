//! `salvage restore BACKUP TARGET`: a backup put back, the target it replaces kept.
//!
//! ```text
//! check ────────────▶ stage ─────────────────▶ move aside ────────────────▶ place ──────▶ verify
//! backup hashes =     TARGET.incomplete:        TARGET, then its -wal,       TARGET.        hashes =
//! manifest; target    copies hashed as          -shm, -journal, to           incomplete     staged,
//! checked; nothing    written, quick_check,     TARGET.pre-restore-STAMP     linked or      quick_check
//! created or moved    row counts; WAL mode      (and -wal, -shm, -journal)   renamed to
//!                     put back, checked again                                TARGET
//! ```
//!
//! A backup stores every database in rollback-journal mode (a reader of the backup then
//! creates nothing in it); a database whose original was in WAL mode (the manifest's
//! `journal_mode`) is put back in WAL mode on the staged copy, through SQLite, once that
//! copy has been checked against the manifest, and checked again after. From then on its
//! header differs from the manifest's bytes: the result is compared with what was staged.
//!
//! The target's original bytes are at TARGET or at `TARGET.pre-restore-STAMP` at every
//! moment, and nothing is ever written over: the copy is linked (a file) or renamed (a
//! folder, onto nothing) into place. A database's sidecars go aside with it, or SQLite
//! would replay the old `-wal` into the restored file; the database goes first, so that a
//! stop halfway leaves a `-wal` without its database, which the next run refuses, saying
//! where it belongs.

use std::path::{Path, PathBuf};

use super::tree::refused;
use super::{failed, names_in, sqlite};
use crate::base::error::Error;
use crate::base::files::{
    copy_file, hash_file, rename_durably, sync_dir, sync_parent, utc_compact, Copied,
};
use crate::base::paths::with_suffix;
use crate::custody::bundle::{
    incomplete, safe_relative, verify, BackupRoot, JournalMode, Manifest, ManifestFile, Role,
    MANIFEST, SIDECARS,
};

/// A restore done and verified.
#[derive(Debug)]
pub struct Restored {
    /// Where the backup was put.
    pub target: PathBuf,
    /// Where the target that was there is kept, with its sidecars beside it under that
    /// name; `None` when there was nothing at TARGET.
    pub aside: Option<PathBuf>,
    /// Every file or folder moved aside, from where to where.
    pub moved: Vec<(PathBuf, PathBuf)>,
    /// The backup's manifest.
    pub manifest: Manifest,
}

/// A restore checked before anything is created or moved.
struct Plan {
    /// The backup folder.
    backup: PathBuf,
    /// Where it goes.
    target: PathBuf,
    /// `TARGET.incomplete`, where the copy is made.
    staging: PathBuf,
    /// The backup's manifest, verified.
    manifest: Manifest,
    /// Its top.
    root: BackupRoot,
    /// `TARGET.pre-restore-STAMP`: free, as are its sidecars' names.
    aside: PathBuf,
    /// What exists at TARGET and beside it, with where each goes: the target first.
    moves: Vec<(PathBuf, PathBuf)>,
}

/// Restores the backup at `backup` to `target`: verified first (a damaged backup is
/// refused and nothing is moved), copied beside the target, the target and its sidecars
/// moved aside, the copy put in place and verified again.
pub fn restore(backup: &Path, target: &Path) -> Result<Restored, Error> {
    let plan = Plan::check(backup, target)?;
    crate::base::crash::point("restore:checked");
    let staged = plan.stage()?;
    crate::base::crash::point("restore:staged");
    for (n, (from, to)) in plan.moves.iter().enumerate() {
        rename_durably(from, to).map_err(Error::Output)?;
        if n == 0 {
            crate::base::crash::point("restore:moving-aside");
        }
    }
    crate::base::crash::point("restore:moved-aside");
    plan.place()?;
    crate::base::crash::point("restore:placed");
    plan.check_placed(&staged)?;
    Ok(Restored {
        aside: (!plan.moves.is_empty()).then(|| plan.aside.clone()),
        target: plan.target,
        moved: plan.moves,
        manifest: plan.manifest,
    })
}

impl Plan {
    /// Reads and verifies the backup and checks the target; creates nothing.
    fn check(backup: &Path, target: &Path) -> Result<Plan, Error> {
        let manifest = read_backup(backup)?;
        let root = manifest.root.clone().ok_or_else(|| not_a_backup(backup))?;
        let verification = verify(backup)?;
        if !verification.intact() {
            let differences: Vec<String> = verification
                .differences
                .iter()
                .map(ToString::to_string)
                .collect();
            return Err(refused(
                format!("the backup `{}` is damaged: {}", backup.display(), differences.join("; ")),
                "nothing was moved; restore another backup (`salvage verify BACKUP` lists what differs)",
            ));
        }
        check_layout(backup, &manifest, &root)?;
        check_target(backup, target, &root)?;
        // A database the application still has open is not replaced under it.
        for f in manifest.files.iter().filter(|f| f.rows.is_some()) {
            let at = match within(&root, &f.path) {
                Some(rel) if !rel.as_os_str().is_empty() => target.join(rel),
                _ => target.to_path_buf(),
            };
            crate::base::place::check_not_in_use(&at)?;
        }
        let staging = incomplete(target);
        if std::fs::symlink_metadata(&staging).is_ok() {
            return Err(interrupted(target, &staging));
        }
        // SQLite's own files of a staged copy put back in WAL mode by a restore that
        // stopped: beside a new staged copy, SQLite would read them into it.
        if let Some(left) = SIDECARS
            .iter()
            .map(|s| with_suffix(&staging, s))
            .find(|p| exists(p))
        {
            return Err(refused(
                format!("`{}` is left from a restore that did not finish", left.display()),
                "it is SQLite's own file of a copy that was being put back in WAL mode: remove it, and run the restore again",
            ));
        }
        let present: Vec<&str> = SIDECARS
            .into_iter()
            .filter(|s| !root.folder && exists(&with_suffix(target, s)))
            .collect();
        let there = exists(target);
        if !there && !present.is_empty() {
            return Err(orphan_sidecars(target, &present));
        }
        let aside = free_aside(target)?;
        let moves = if there {
            std::iter::once(target.to_path_buf())
                .chain(present.iter().map(|s| with_suffix(target, s)))
                .zip(
                    std::iter::once(aside.clone())
                        .chain(present.iter().map(|s| with_suffix(&aside, s))),
                )
                .collect()
        } else {
            Vec::new()
        };
        Ok(Plan {
            backup: backup.to_path_buf(),
            target: target.to_path_buf(),
            staging,
            manifest,
            root,
            aside,
            moves,
        })
    }

    /// Where the backup's file `f` goes under `base` (the staging copy or the target).
    fn place_of(&self, base: &Path, f: &ManifestFile) -> PathBuf {
        match within(&self.root, &f.path) {
            Some(rel) if !rel.as_os_str().is_empty() => base.join(rel),
            _ => base.to_path_buf(),
        }
    }

    /// Copies the backup into `TARGET.incomplete`, each file hashed as written and
    /// compared with the manifest, synced, and each database checked; then a database
    /// whose original was in WAL mode is put back in it, and checked again. What was
    /// staged, file by file in manifest order: the manifest's bytes, or for a database
    /// put back in WAL mode its bytes since.
    fn stage(&self) -> Result<Vec<Copied>, Error> {
        let mut folders = Vec::new();
        if self.root.folder {
            folders.push(self.staging.clone());
            folders.extend(
                self.root
                    .folders
                    .iter()
                    .filter_map(|f| safe_relative(f))
                    .map(|f| self.staging.join(f)),
            );
            for folder in &folders {
                std::fs::create_dir(folder).map_err(Error::writing(folder))?;
            }
        }
        let mut staged = Vec::new();
        for (n, f) in self.manifest.files.iter().enumerate() {
            let from = self.backup.join(safe_relative(&f.path).unwrap_or_default());
            let to = self.place_of(&self.staging, f);
            let copied = copy_file(&from, &to)?;
            if copied.size != f.size || copied.sha256 != f.sha256 {
                return Err(failed(format!(
                    "`{}` changed while it was copied: {} bytes, SHA-256 {}; the manifest says {} bytes, {}; the target was not touched, the partial copy is at `{}`",
                    from.display(), copied.size, copied.sha256, f.size, f.sha256, self.staging.display()
                )));
            }
            staged.push(copied);
            if n == 0 {
                crate::base::crash::point("restore:staging");
            }
        }
        let check = |why: String| {
            failed(format!(
                "the copy of the backup failed its check: {why}; the target was not touched, the copy is at `{}`",
                self.staging.display()
            ))
        };
        // Checked as the manifest says first, then once more in the mode put back.
        self.check_databases(&self.staging).map_err(check)?;
        let wal = self.put_back_wal(&mut staged)?;
        if wal {
            self.check_databases(&self.staging).map_err(check)?;
        }
        folders.push(crate::base::paths::folder_of(&self.staging).to_path_buf());
        for folder in &folders {
            sync_dir(folder).map_err(Error::writing(folder))?;
        }
        Ok(staged)
    }

    /// Puts each staged database whose original was in WAL mode (the manifest's
    /// `journal_mode`) back in it, through SQLite, and hashes it again into `staged`,
    /// synced. Whether there was one.
    fn put_back_wal(&self, staged: &mut [Copied]) -> Result<bool, Error> {
        let mut any = false;
        for (f, copied) in self.manifest.files.iter().zip(staged.iter_mut()) {
            if f.journal_mode != Some(JournalMode::Wal) {
                continue;
            }
            let at = self.place_of(&self.staging, f);
            sqlite::set_wal(&at)?;
            std::fs::File::open(&at)
                .and_then(|file| file.sync_all())
                .map_err(Error::writing(&at))?;
            *copied = hash_file(&at).map_err(|e| Error::Source {
                path: at.clone(),
                source: e,
            })?;
            any = true;
        }
        Ok(any)
    }

    /// `quick_check` and row counts of each database of the backup, as copied under
    /// `base`.
    fn check_databases(&self, base: &Path) -> Result<(), String> {
        let databases = self.manifest.files.iter();
        for f in databases.filter(|f| Role::parse(&f.role) == Some(Role::Database)) {
            let at = self.place_of(base, f);
            sqlite::check_copy(&at, &f.rows.clone().unwrap_or_default())
                .map_err(|why| format!("`{}`: {why}", at.display()))?;
        }
        Ok(())
    }

    /// Puts the staged copy at TARGET, never over anything: a file is linked to its name
    /// (which fails if the name appeared meanwhile) and its staging name removed; a folder
    /// is renamed (which fails onto anything but an empty folder).
    fn place(&self) -> Result<(), Error> {
        if self.root.folder {
            rename_durably(&self.staging, &self.target).map_err(Error::Output)
        } else {
            std::fs::hard_link(&self.staging, &self.target).map_err(Error::Output)?;
            std::fs::remove_file(&self.staging).map_err(Error::Output)?;
            sync_parent(&self.target).map_err(Error::Output)
        }
    }

    /// Verifies the restored copy at TARGET: every file's hash is what was staged
    /// (`staged`: the manifest's, or a database's once put back in WAL mode), and every
    /// database passes `quick_check` with the manifest's row counts.
    fn check_placed(&self, staged: &[Copied]) -> Result<(), Error> {
        let kept = match self.moves.first() {
            Some((_, aside)) => format!("the original is kept at `{}`", aside.display()),
            None => "nothing was there before".into(),
        };
        for (f, was) in self.manifest.files.iter().zip(staged) {
            let at = self.place_of(&self.target, f);
            let now = hash_file(&at).map_err(Error::Output)?;
            if now != *was {
                return Err(failed(format!(
                    "the restored `{}` differs from the copy checked before it was put in place: {} bytes, SHA-256 {}; it was {} bytes, {}; {kept}",
                    at.display(), now.size, now.sha256, was.size, was.sha256
                )));
            }
        }
        self.check_databases(&self.target)
            .map_err(|why| failed(format!("the restored copy failed its check: {why}; {kept}")))
    }
}

/// The manifest of the backup at `dir`, refused when `dir` is not a backup.
fn read_backup(dir: &Path) -> Result<Manifest, Error> {
    if !dir.join(MANIFEST).is_file() {
        return Err(not_a_backup(dir));
    }
    let manifest = Manifest::read(dir)?;
    if manifest.kind != super::KIND {
        return Err(refused(
            format!("`{}` is a {} bundle, not a backup", dir.display(), manifest.kind),
            "restore takes a folder made by `salvage backup`; a quarantine bundle is evidence: `salvage recover` reads it",
        ));
    }
    Ok(manifest)
}

/// The refusal of a folder that is not a backup.
fn not_a_backup(dir: &Path) -> Error {
    refused(
        format!("`{}` is not a backup: it holds no backup manifest", dir.display()),
        "pass a folder made by `salvage backup` (named like 20261130T235959Z-state.db, inside its --to folder)",
    )
}

/// The path of a backup's file `path` relative to its top: empty for the database of a
/// file backup, `None` when it is not under the top.
fn within(root: &BackupRoot, path: &str) -> Option<PathBuf> {
    if !root.folder {
        return (path == root.name).then(PathBuf::new);
    }
    path.strip_prefix(&root.name)?
        .strip_prefix('/')
        .and_then(safe_relative)
}

/// Refuses a manifest whose files are not laid out as a backup: one database named as
/// the top, or files and folders under it.
fn check_layout(backup: &Path, manifest: &Manifest, root: &BackupRoot) -> Result<(), Error> {
    let files_fit = manifest
        .files
        .iter()
        .all(|f| within(root, &f.path).is_some())
        && (root.folder || manifest.files.len() == 1);
    let folders_fit = root.folders.iter().all(|f| safe_relative(f).is_some());
    if files_fit && folders_fit && safe_relative(&root.name).is_some() {
        return Ok(());
    }
    Err(refused(
        format!(
            "the manifest of `{}` does not lay its files out under `{}`",
            backup.display(),
            root.name
        ),
        "this is not a backup made by `salvage backup`; nothing was moved",
    ))
}

/// Refuses a target whose folder is missing, which is not what the backup holds (a
/// database file, or a folder), or which overlaps the backup.
fn check_target(backup: &Path, target: &Path, root: &BackupRoot) -> Result<(), Error> {
    let folder = crate::base::paths::folder_of(target);
    if !folder.is_dir() || target.file_name().is_none() {
        return Err(refused(
            format!("the folder of `{}` does not exist", target.display()),
            "create it first, or name a target in an existing folder",
        ));
    }
    if let Ok(meta) = std::fs::symlink_metadata(target) {
        let (fits, holds) = if root.folder {
            (meta.is_dir(), "a folder")
        } else {
            (meta.is_file(), "a database file")
        };
        if !fits {
            return Err(refused(
                format!("`{}` is not {holds}, which is what the backup holds", target.display()),
                "name the database file (or the folder) the backup was made from; a symbolic link is not followed",
            ));
        }
    }
    // The target need not exist: its folder is resolved, and its name joined to it.
    let named = folder
        .canonicalize()
        .map(|f| f.join(target.file_name().unwrap_or_default()));
    let overlap = match (named, backup.canonicalize()) {
        (Ok(named), Ok(backup)) => named.starts_with(&backup) || backup.starts_with(&named),
        _ => false,
    };
    if overlap {
        return Err(refused(
            format!(
                "`{}` and the backup `{}` overlap",
                target.display(),
                backup.display()
            ),
            "restore to a path outside the backup folder",
        ));
    }
    Ok(())
}

/// Something is at `path` (a file, a folder or a link).
fn exists(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok()
}

/// The first `TARGET.pre-restore-STAMP` (then `.2`, `.3`…) free, with its sidecars' names.
fn free_aside(target: &Path) -> Result<PathBuf, Error> {
    let stamp = utc_compact(crate::base::files::now());
    (1..=1000)
        .map(|k| {
            let suffix = if k < 2 {
                format!(".pre-restore-{stamp}")
            } else {
                format!(".pre-restore-{stamp}.{k}")
            };
            with_suffix(target, &suffix)
        })
        .find(|aside| !exists(aside) && SIDECARS.iter().all(|s| !exists(&with_suffix(aside, s))))
        .ok_or_else(|| {
            refused(
                format!("no free name to move `{}` aside to", target.display()),
                "wait a second and run again",
            )
        })
}

/// The newest `TARGET.pre-restore-*` beside the target (not a sidecar of one).
fn newest_aside(target: &Path) -> Option<PathBuf> {
    let prefix = format!("{}.pre-restore-", target.file_name()?.to_str()?);
    names_in(crate::base::paths::folder_of(target))
        .ok()?
        .into_iter()
        .filter(|(name, _)| {
            name.starts_with(&prefix) && !SIDECARS.iter().any(|s| name.ends_with(s))
        })
        .map(|(_, path)| path)
        .max()
}

/// `a` to `b`, `c` to `d`: moves in words.
fn moves_in_words(moves: &[(PathBuf, PathBuf)]) -> String {
    moves
        .iter()
        .map(|(from, to)| format!("`{}` to `{}`", from.display(), to.display()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The sidecars at TARGET that belong beside `aside`, as moves.
fn pending_sidecars(target: &Path, aside: &Path) -> Vec<(PathBuf, PathBuf)> {
    SIDECARS
        .iter()
        .filter(|s| exists(&with_suffix(target, s)))
        .map(|s| (with_suffix(target, s), with_suffix(aside, s)))
        .collect()
}

/// The refusal of a restore that finds `TARGET.incomplete` left by one that stopped, with
/// what to do, from what is at TARGET.
fn interrupted(target: &Path, staging: &Path) -> Error {
    let what = format!(
        "`{}` is left from a restore that did not finish",
        staging.display()
    );
    let same_file = |a: &Path, b: &Path| {
        use std::os::unix::fs::MetadataExt;
        match (std::fs::metadata(a), std::fs::metadata(b)) {
            (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
            _ => false,
        }
    };
    let hint = match (exists(target), newest_aside(target)) {
        (true, _) if same_file(target, staging) => format!(
            "it had put the backup in place: `{}` is a second name of `{}`; remove `{}` (the original is the newest `{}.pre-restore-*`)",
            staging.display(), target.display(), staging.display(), target.display()
        ),
        (true, _) => format!(
            "`{}` was not moved: remove `{}` (a copy of the backup not put in place) and run the restore again",
            target.display(), staging.display()
        ),
        (false, Some(aside)) => {
            let pending = pending_sidecars(target, &aside);
            let finish = if pending.is_empty() {
                String::new()
            } else {
                format!("move {}, then ", moves_in_words(&pending))
            };
            format!(
                "the original was moved aside to `{}`; to finish: {finish}remove `{}` and run the restore again; to go back instead: remove `{}` and move `{}` back to `{}` (with its -wal, -shm, -journal if it has them)",
                aside.display(), staging.display(), staging.display(), aside.display(), target.display()
            )
        }
        (false, None) => format!(
            "nothing was at `{}`: remove `{}` and run the restore again",
            target.display(),
            staging.display()
        ),
    };
    refused(what, &hint)
}

/// The refusal of sidecars at TARGET without their database: restored beside them, the
/// database would get them replayed into it.
fn orphan_sidecars(target: &Path, present: &[&str]) -> Error {
    let names: Vec<String> = present
        .iter()
        .map(|s| format!("`{}`", with_suffix(target, s).display()))
        .collect();
    let what = format!(
        "{} {} there without `{}`: SQLite would apply an old write-ahead log to the restored database",
        names.join(", "),
        if names.len() == 1 { "is" } else { "are" },
        target.display()
    );
    let hint = match newest_aside(target) {
        Some(aside) => format!(
            "a restore that stopped moved `{}` aside to `{}`: move {} to finish that, and run the restore again",
            target.display(),
            aside.display(),
            moves_in_words(&pending_sidecars(target, &aside))
        ),
        None => "move them away (they are not part of the backup), and run the restore again".into(),
    };
    refused(what, &hint)
}
