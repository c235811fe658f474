//! Durable file operations the bundle, repair and backup workflows are made of: a copy
//! that hashes what it writes and reaches the disk before it counts, a rename that is
//! durable, a hash of a file read afresh, and UTC timestamps without a clock library.

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::path::Path;

use std::time::SystemTime;

use sha2::{Digest, Sha256};

use crate::base::error::Error;

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

/// A time as a UTC timestamp, `YYYY-MM-DDTHH:MM:SSZ`, the second it falls in. Any time
/// a file system can give: a file dated before 1970 (evidence often is: a wrong clock, a
/// tool that zeroed it) is written as such, never a panic.
pub fn utc(time: SystemTime) -> String {
    let secs = match time.duration_since(std::time::UNIX_EPOCH) {
        Ok(after) => i64::try_from(after.as_secs()).unwrap_or(i64::MAX),
        // The second it falls in: 1.5 s before 1970 is in the second that begins 2 s before.
        Err(before) => {
            let d = before.duration();
            let whole = i64::try_from(d.as_secs()).unwrap_or(i64::MAX);
            whole
                .saturating_neg()
                .saturating_sub(i64::from(d.subsec_nanos() > 0))
        }
    };
    let (days, second) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (y, m, d) = reconstruct::time::civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        second / 3600,
        second % 3600 / 60,
        second % 60
    )
}

/// The time a [`utc`] timestamp names; `None` when it is not one.
pub fn parse_utc(text: &str) -> Option<SystemTime> {
    let b = text.as_bytes();
    let shape = b.len() >= 20
        && b.get(b.len() - 16) == Some(&b'-')
        && b.get(b.len() - 13) == Some(&b'-')
        && b.get(b.len() - 10) == Some(&b'T')
        && b.get(b.len() - 7) == Some(&b':')
        && b.get(b.len() - 4) == Some(&b':')
        && b.last() == Some(&b'Z');
    if !shape {
        return None;
    }
    let field = |from: usize, to: usize| text.get(from..to)?.parse::<i64>().ok();
    let n = text.len();
    let (y, m, d) = (
        field(0, n - 16)?,
        field(n - 15, n - 13)?,
        field(n - 12, n - 10)?,
    );
    let (h, min, sec) = (
        field(n - 9, n - 7)?,
        field(n - 6, n - 4)?,
        field(n - 3, n - 1)?,
    );
    let ranges = (1..=12).contains(&m)
        && (1..=31).contains(&d)
        && (0..24).contains(&h)
        && (0..60).contains(&min)
        && (0..61).contains(&sec);
    if !ranges {
        return None;
    }
    let secs = reconstruct::time::days_from_civil(y, m, d)?
        .checked_mul(86_400)?
        .checked_add(h * 3600 + min * 60 + sec)?;
    let magnitude = std::time::Duration::from_secs(secs.unsigned_abs());
    if secs >= 0 {
        std::time::UNIX_EPOCH.checked_add(magnitude)
    } else {
        std::time::UNIX_EPOCH.checked_sub(magnitude)
    }
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

    #[test]
    fn timestamps_before_1970_and_far_ahead_are_written_and_read_back() {
        let before = |s: u64, n: u32| std::time::UNIX_EPOCH - std::time::Duration::new(s, n);
        assert_eq!(utc(before(1, 0)), "1969-12-31T23:59:59Z");
        assert_eq!(utc(before(1, 500_000_000)), "1969-12-31T23:59:58Z");
        assert_eq!(utc(before(157_766_400, 0)), "1965-01-01T00:00:00Z");
        let far = std::time::UNIX_EPOCH + std::time::Duration::from_secs(253_402_300_800);
        assert_eq!(utc(far), "10000-01-01T00:00:00Z");
        for t in [before(157_766_400, 0), far, std::time::UNIX_EPOCH, now()] {
            let second = parse_utc(&utc(t));
            assert!(second
                .is_some_and(|s| s <= t && t.duration_since(s).is_ok_and(|d| d.as_secs() < 1)));
        }
        assert_eq!(parse_utc("2026-02-30T00:00:00"), None);
        assert_eq!(parse_utc("not a time"), None);
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
