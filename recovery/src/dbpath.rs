//! The path of a database as SQLite opens it. SQLite resolves symbolic links before it
//! names anything after the database (`unixFullPathname` follows every link on the way),
//! so its `-wal`, `-shm` and `-journal` lie beside the file a link points to, never
//! beside the link. Every command that reads, copies or replaces a database resolves its
//! path here first, and derives each sidecar's name from the file itself.

use std::path::{Path, PathBuf};

use crate::error::Error;
use crate::request::with_suffix;

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
    /// [`crate::evidence::check_regular_file`] refuses: a missing path, a folder, a
    /// special file, a loop of links.
    pub fn resolve(given: &Path) -> Result<DatabasePath, Error> {
        crate::evidence::check_regular_file(given)?;
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

    /// The given path, when it is not the file itself (a link on the way).
    pub fn link(&self) -> Option<&Path> {
        (self.given != self.file).then_some(self.given.as_path())
    }

    /// The sidecar of the database with `suffix` (`-wal`, `-shm`, `-journal`), beside
    /// the file itself.
    pub fn sidecar(&self, suffix: &str) -> PathBuf {
        with_suffix(&self.file, suffix)
    }
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
        let real = dir.join("real/w.db").canonicalize().map_err(Error::Output)?;
        for name in ["link.db", "chain.db"] {
            let p = DatabasePath::resolve(&dir.join(name))?;
            assert_eq!(p.file, real);
            assert_eq!(p.link(), Some(dir.join(name).as_path()));
            assert_eq!(p.sidecar("-wal"), with_suffix(&real, "-wal"));
        }
        assert_eq!(DatabasePath::resolve(&real)?.link(), None);
        std::fs::remove_dir_all(&dir).map_err(Error::Output)?;
        Ok(())
    }
}
