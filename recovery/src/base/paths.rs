//! Paths: a sidecar's name beside its file, the folder a file is in, a path that may
//! not exist yet made canonical, and the check that a path is a regular file.

use std::path::{Path, PathBuf};

use crate::base::error::Error;

/// `p` with `suffix` appended to its file name.
pub fn with_suffix(p: &Path, suffix: &str) -> PathBuf {
    let mut s = p.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

/// The folder a file is in (`.` for a bare name).
pub fn folder_of(file: &Path) -> &Path {
    file.parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

/// The canonical form of a path that may not exist yet: its folder canonicalized.
pub fn canonical_target(p: &Path) -> Option<PathBuf> {
    let parent = p
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    Some(parent.canonicalize().ok()?.join(p.file_name()?))
}

/// Checks that `path` exists and is a regular file, not a directory or a device.
pub fn check_regular_file(path: &Path) -> Result<std::fs::Metadata, Error> {
    let meta = std::fs::metadata(path).map_err(|e| {
        // A path that cannot lead to a file is refused like a missing one.
        let what = match e.raw_os_error() {
            Some(libc::ELOOP) => Some("a loop of symbolic links"),
            Some(libc::ENOTDIR) => Some("a path through something that is not a folder"),
            Some(libc::ENAMETOOLONG) => Some("a name too long for the system"),
            _ => None,
        };
        match what {
            Some(what) => Error::NotAFile {
                path: path.to_owned(),
                what,
            },
            None => Error::Source {
                path: path.to_owned(),
                source: e,
            },
        }
    })?;
    if meta.is_dir() {
        return Err(Error::NotAFile {
            path: path.to_owned(),
            what: "a directory",
        });
    }
    if !meta.is_file() {
        return Err(Error::NotAFile {
            path: path.to_owned(),
            what: "not a regular file",
        });
    }
    Ok(meta)
}

/// The sidecar suffixes SQLite gives the files beside a database, in the order copied.
pub const SIDECARS: [&str; 3] = ["-wal", "-shm", "-journal"];
