//! The path of a database as SQLite opens it. SQLite resolves symbolic links before it
//! names anything after the database (`unixFullPathname` follows every link on the way),
//! so its `-wal`, `-shm` and `-journal` lie beside the file a link points to, never
//! beside the link. Every command that reads, copies or replaces a database resolves its
//! path here first, and derives each sidecar's name from the file itself.

use std::path::{Path, PathBuf};

use crate::base::error::Error;
use crate::base::paths::with_suffix;

/// A database's path as given and the file SQLite opens through it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DatabasePath {
    /// The path as given, made absolute (links not resolved).
    pub given: PathBuf,
    /// The file itself: every symbolic link on the way resolved.
    pub file: PathBuf,
}

impl DatabasePath {
    /// Resolves `given` to the regular file SQLite would open. Refused as
    /// [`crate::base::paths::check_regular_file`] refuses: a missing path, a folder, a
    /// special file, a loop of links.
    pub fn resolve(given: &Path) -> Result<DatabasePath, Error> {
        crate::base::paths::check_regular_file(given)?;
        let absolute = std::path::absolute(given).map_err(|e| Error::Source {
            path: given.to_path_buf(),
            source: e,
        })?;
        let file = given.canonicalize().map_err(|e| Error::Source {
            path: given.to_path_buf(),
            source: e,
        })?;
        Ok(DatabasePath {
            given: absolute,
            file,
        })
    }

    /// The path of a database that is not there (moved away, or a link whose file is
    /// gone), resolved as far as it can be: every link followed while it leads somewhere,
    /// then the folder of the last name resolved. For a command that must find a
    /// repair's journal beside a database that a stop or a person moved away. `None`
    /// when its folder cannot be resolved.
    pub fn resolve_absent(given: &Path) -> Option<DatabasePath> {
        let absolute = std::path::absolute(given).ok()?;
        let mut at = absolute.clone();
        // SQLite's limit on links followed (SQLITE_MAX_SYMLINKS).
        for _ in 0..100 {
            match std::fs::read_link(&at) {
                Ok(target) => at = crate::base::paths::folder_of(&at).join(target),
                Err(_) => break,
            }
        }
        let folder = crate::base::paths::folder_of(&at).canonicalize().ok()?;
        Some(DatabasePath {
            given: absolute,
            file: folder.join(at.file_name()?),
        })
    }

    /// The given path, when a symbolic link on the way makes it name another path than
    /// the file's (`.` and `..` alone do not).
    pub fn link(&self) -> Option<&Path> {
        (lexical(&self.given) != self.file).then_some(self.given.as_path())
    }

    /// The sidecar of the database with `suffix` (`-wal`, `-shm`, `-journal`), beside
    /// the file itself.
    pub fn sidecar(&self, suffix: &str) -> PathBuf {
        with_suffix(&self.file, suffix)
    }
}

/// `path` (absolute) with `.` and `..` taken away as words, links not followed: what the
/// path names when no link is on the way.
fn lexical(path: &Path) -> PathBuf {
    use std::path::Component;
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_link_resolves_to_the_file_and_its_sidecars_lie_beside_the_file() -> Result<(), Error> {
        let dir = std::env::temp_dir().join(format!("salvage-dbpath-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("real")).map_err(Error::Output)?;
        std::fs::write(dir.join("real/w.db"), b"x").map_err(Error::Output)?;
        std::os::unix::fs::symlink("real/w.db", dir.join("link.db")).map_err(Error::Output)?;
        std::os::unix::fs::symlink("link.db", dir.join("chain.db")).map_err(Error::Output)?;
        let real = dir
            .join("real/w.db")
            .canonicalize()
            .map_err(Error::Output)?;
        for name in ["link.db", "chain.db"] {
            let p = DatabasePath::resolve(&dir.join(name))?;
            assert_eq!(p.file, real);
            assert_eq!(p.link(), Some(dir.join(name).as_path()));
            assert_eq!(p.sidecar("-wal"), with_suffix(&real, "-wal"));
        }
        assert_eq!(DatabasePath::resolve(&real)?.link(), None);
        let around = dir.join("real/../real/./w.db");
        assert_eq!(
            DatabasePath::resolve(&around)?.link(),
            None,
            "no link on the way"
        );
        std::fs::remove_file(dir.join("real/w.db")).map_err(Error::Output)?;
        let gone = DatabasePath::resolve_absent(&dir.join("chain.db"))
            .ok_or("absent")
            .map_err(|e| Error::Output(std::io::Error::other(e)))?;
        assert_eq!(
            gone.file, real,
            "a link whose file is gone names where it was"
        );
        std::fs::remove_dir_all(&dir).map_err(Error::Output)?;
        Ok(())
    }
}
