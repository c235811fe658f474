//! Durable file operations the bundle, repair and backup workflows are made of: a copy
//! that hashes what it writes and reaches the disk before it counts, a rename that is
//! durable, a hash of a file read afresh, and UTC timestamps without a clock library.

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::path::Path;

use std::time::SystemTime;

use sha2::{Digest, Sha256};

use crate::error::Error;

/// Bytes copied per read.
const CHUNK: usize = 1 << 20;

/// What a copy wrote: its length and the SHA-256 of its bytes, in lower-case hex.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Copied {
    /// Bytes written.
    pub size: u64,
    /// SHA-256 of the bytes, lower-case hex.
    pub sha256: String,
}

/// Copies the file `from` to `to` byte for byte (`to` must not exist), hashing the bytes
/// as they go, and syncs `to` to the disk before returning. `from` is opened read-only
/// and never through SQLite: no lock is taken and no sidecar is made; it is opened
/// first, so that a source that cannot be read leaves nothing at `to`.
///
/// The error names the file at fault: [`Error::Source`] with `from` when reading fails,
/// [`Error::Write`] with `to` when writing fails (a full disk is the destination's).
pub fn copy_file(from: &Path, to: &Path) -> Result<Copied, Error> {
    let reading = |e| Error::Source {
        path: from.to_path_buf(),
        source: e,
    };
    let writing = |e| Error::Write {
        path: to.to_path_buf(),
        source: e,
    };
    let src = File::open(from).map_err(reading)?;
    let mut dst = OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(to)
        .map_err(writing)?;
    let copied = read_through(src, |chunk| dst.write_all(chunk)).map_err(|e| match e {
        Failed::Reading(e) => reading(e),
        Failed::Writing(e) => writing(e),
    })?;
    dst.sync_all().map_err(writing)?;
    Ok(copied)
}

/// [`copy_file`] for a caller that maps an I/O error itself: the error keeps its kind,
/// and its text names the file at fault as [`copy_file`]'s does.
pub fn copy_durably(from: &Path, to: &Path) -> std::io::Result<Copied> {
    copy_file(from, to).map_err(|e| {
        let kind = match &e {
            Error::Source { source, .. } | Error::Write { source, .. } => source.kind(),
            _ => std::io::ErrorKind::Other,
        };
        std::io::Error::new(kind, e.to_string())
    })
}

/// The length and SHA-256 of the file at `path`, read afresh.
pub fn hash_file(path: &Path) -> std::io::Result<Copied> {
    hash_open(File::open(path)?)
}

/// The length and SHA-256 of the open `file`, read from where it stands to its end.
pub fn hash_open(file: File) -> std::io::Result<Copied> {
    read_through(file, |_| Ok(())).map_err(Failed::into_io)
}

/// Which side of a copy failed.
enum Failed {
    /// Reading the source.
    Reading(std::io::Error),
    /// Handing a chunk on (writing the copy).
    Writing(std::io::Error),
}

impl Failed {
    /// The I/O error, whichever side it came from.
    fn into_io(self) -> std::io::Error {
        match self {
            Failed::Reading(e) | Failed::Writing(e) => e,
        }
    }
}

/// Reads `src` from start to end, handing each chunk to `sink`: its length and SHA-256.
fn read_through(
    mut src: File,
    mut sink: impl FnMut(&[u8]) -> std::io::Result<()>,
) -> Result<Copied, Failed> {
    let mut hash = Sha256::new();
    let mut buf = vec![0u8; CHUNK];
    let mut size = 0u64;
    loop {
        let n = match src.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(Failed::Reading(e)),
        };
        let chunk = buf.get(..n).unwrap_or_default();
        hash.update(chunk);
        sink(chunk).map_err(Failed::Writing)?;
        size += n as u64;
    }
    Ok(Copied {
        size,
        sha256: hex(&hash.finalize()),
    })
}

/// Gives the file at `path` the modification time `time`, and syncs it: a bundle's copy
/// keeps its original's time, and a manifest the time it was made, which `verify`
/// compares with what the manifest says.
pub fn set_modified(path: &Path, time: SystemTime) -> std::io::Result<()> {
    let file = OpenOptions::new().write(true).open(path)?;
    file.set_modified(time)?;
    file.sync_all()
}

/// Writes `bytes` to `path` so that a reader sees the old file or the whole new one,
/// never a part: written beside it as `path.tmp`, synced, renamed over it, and the folder
/// synced.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = std::path::PathBuf::from(tmp);
    let _ = std::fs::remove_file(&tmp);
    let mut f = OpenOptions::new().write(true).create_new(true).open(&tmp)?;
    f.write_all(bytes)?;
    f.sync_all()?;
    drop(f);
    std::fs::rename(&tmp, path)?;
    sync_parent(path)
}

/// Renames `from` to `to` and syncs the folders of both, so that the rename survives a
/// crash.
pub fn rename_durably(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::rename(from, to)?;
    sync_parent(to)?;
    sync_parent(from)
}

/// Syncs the folder holding `path` (a rename or a new entry in it reaches the disk).
pub fn sync_parent(path: &Path) -> std::io::Result<()> {
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    sync_dir(parent)
}

/// Syncs a folder.
pub fn sync_dir(dir: &Path) -> std::io::Result<()> {
    File::open(dir)?.sync_all()
}

/// Lower-case hex.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A time as a UTC timestamp, `YYYY-MM-DDTHH:MM:SSZ`.
pub fn utc(time: SystemTime) -> String {
    humantime::format_rfc3339_seconds(time).to_string()
}

/// The same timestamp with only digits and `T`/`Z` (`YYYYMMDDTHHMMSSZ`), for file names.
pub fn utc_compact(time: SystemTime) -> String {
    utc(time).replace(['-', ':'], "")
}

/// Now.
pub fn now() -> SystemTime {
    SystemTime::now()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_utc_calendar_dates() {
        let at = |s: u64| std::time::UNIX_EPOCH + std::time::Duration::from_secs(s);
        assert_eq!(utc(at(0)), "1970-01-01T00:00:00Z");
        assert_eq!(utc(at(951_782_400)), "2000-02-29T00:00:00Z");
        assert_eq!(utc(at(1_796_083_199)), "2026-11-30T23:59:59Z");
        assert_eq!(utc_compact(at(1_796_083_199)), "20261130T235959Z");
    }

    /// A failure writing names the destination, one reading names the source: a copy
    /// into a folder that does not exist is not "cannot read" its source, and a source
    /// that cannot be read leaves nothing at the destination.
    #[test]
    fn a_copy_names_the_file_at_fault() -> std::io::Result<()> {
        let dir = std::env::temp_dir().join(format!("salvage-copy-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir)?;
        let (src, missing) = (dir.join("src"), dir.join("missing"));
        std::fs::write(&src, b"bytes")?;
        let into_nothing = dir.join("no-such-folder/copy");
        match copy_file(&src, &into_nothing) {
            Err(Error::Write { path, .. }) => assert_eq!(path, into_nothing),
            other => panic!("{other:?}"),
        }
        let to = dir.join("copy");
        match copy_file(&missing, &to) {
            Err(Error::Source { path, .. }) => assert_eq!(path, missing),
            other => panic!("{other:?}"),
        }
        assert!(
            !to.exists(),
            "nothing made for a source that cannot be read"
        );
        let err = copy_durably(&src, &into_nothing)
            .err()
            .map(|e| e.to_string());
        assert!(err.is_some_and(|e| e.contains("no-such-folder/copy")));
        let copied = copy_file(&src, &to).map_err(|e| std::io::Error::other(e.to_string()))?;
        assert_eq!(copied.size, 5);
        std::fs::remove_dir_all(&dir)
    }
}
