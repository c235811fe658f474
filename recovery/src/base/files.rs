//! Durable file operations the bundle, repair and backup workflows are made of: a copy
//! that hashes what it writes and reaches the disk before it counts, a rename that is
//! durable, a hash of a file read afresh, and UTC timestamps without a clock library.

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::path::Path;

use std::time::SystemTime;

use sha2::Sha256;

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
    copy(from, to, false).map(|w| w.copied)
}

/// [`copy_file`], watched: the BLAKE3 of the bytes too, and what the file system said of
/// `from` before and after they were read, so that a caller can tell without reading the
/// file again whether it changed during the copy ([`Watched::steady`]) and later
/// ([`FileStamp`]).
pub fn copy_file_watched(from: &Path, to: &Path) -> Result<Watched, Error> {
    copy(from, to, true)
}

/// What a watched copy saw of the file it copied.
#[derive(Clone, Debug)]
pub struct Watched {
    /// The copy's length and SHA-256.
    pub copied: Copied,
    /// The BLAKE3 of the same bytes, lower-case hex.
    pub blake3: String,
    /// The file as the file system described it when it was opened, and after its last
    /// byte was read.
    pub before: FileStamp,
    /// See `before`.
    pub after: FileStamp,
    /// When `before` was taken.
    pub began: SystemTime,
}

impl Watched {
    /// Whether the file's stamps alone prove it unchanged during the copy: equal before
    /// and after, and no write in the file system's last clock tick before the copy
    /// began (one then could be followed by another that leaves the times as they were).
    pub fn steady(&self) -> bool {
        self.before == self.after && !self.before.racy(self.began)
    }
}

/// What the file system says of a file: which file it is, its length, when its bytes last
/// changed and when the file itself last changed. A write moves both times, and only the
/// kernel sets the second (a program can set a file's modification time back; setting it
/// moves the change time).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct FileStamp {
    /// The device the file is on.
    pub device: u64,
    /// Its inode.
    pub inode: u64,
    /// Its length.
    pub len: u64,
    /// Its modification time: seconds and nanoseconds since 1970.
    pub modified: (i64, i64),
    /// Its change time (of the inode): seconds and nanoseconds since 1970.
    pub changed: (i64, i64),
}

/// How long after a file's last change its stamp is trusted to show the next write: the
/// coarsest clock of a file system in use (FAT's two seconds), and some.
const SETTLE: std::time::Duration = std::time::Duration::from_secs(3);

impl FileStamp {
    /// The stamp of what `meta` describes.
    pub fn of(meta: &std::fs::Metadata) -> FileStamp {
        use std::os::unix::fs::MetadataExt;
        FileStamp {
            device: meta.dev(),
            inode: meta.ino(),
            len: meta.len(),
            modified: (meta.mtime(), meta.mtime_nsec()),
            changed: (meta.ctime(), meta.ctime_nsec()),
        }
    }

    /// Whether `other` describes the same file with the same bytes, as far as the file
    /// system tells: its change time left out, which a `chmod` or a new hard link moves
    /// too.
    pub fn same_bytes(&self, other: &FileStamp) -> bool {
        FileStamp {
            changed: other.changed,
            ..*self
        } == *other
    }

    /// The stamp of the file at `path` now (a symbolic link followed).
    pub fn read(path: &Path) -> std::io::Result<FileStamp> {
        std::fs::metadata(path).map(|m| FileStamp::of(&m))
    }

    /// Whether a write made at `at` or just after could leave this stamp as it is: the
    /// file changed within [`SETTLE`] of `at` (or after it, by a clock ahead of ours), and
    /// a second write in the same tick of its file system's clock gives the same times.
    pub fn racy(&self, at: SystemTime) -> bool {
        let latest = self.modified.max(self.changed);
        let since_1970 = |(secs, nanos): (i64, i64)| {
            let secs = u64::try_from(secs).ok()?;
            let nanos = u32::try_from(nanos).ok()?;
            SystemTime::UNIX_EPOCH.checked_add(std::time::Duration::new(secs, nanos))
        };
        match since_1970(latest) {
            Some(when) => at.duration_since(when).map_or(true, |d| d < SETTLE),
            None => true,
        }
    }
}

/// Bytes copied between two requests to the kernel to start writing the copy out: the
/// sync at the end then waits only for the last of them.
const WRITEBACK_EVERY: u64 = 32 << 20;

fn copy(from: &Path, to: &Path, blake3: bool) -> Result<Watched, Error> {
    let reading = |e| Error::Source {
        path: from.to_path_buf(),
        source: e,
    };
    let writing = |e| Error::Write {
        path: to.to_path_buf(),
        source: e,
    };
    let mut src = File::open(from).map_err(reading)?;
    let before = src.metadata().map(|m| FileStamp::of(&m)).map_err(reading)?;
    let began = SystemTime::now();
    let mut dst = OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(to)
        .map_err(writing)?;
    let writeback = dst
        .try_clone()
        .ok()
        .map(crate::base::writeback::Writeback::of);
    let mut started = 0u64;
    let read = read_through(
        &mut src,
        |offset, chunk| {
            dst.write_all(chunk)?;
            let end = offset + chunk.len() as u64;
            if let Some(w) = writeback
                .as_ref()
                .filter(|_| end - started >= WRITEBACK_EVERY)
            {
                w.written(started, end - started);
                started = end;
            }
            Ok(())
        },
        blake3,
    );
    // The helper's descriptor is closed before the sync, which sees every error.
    drop(writeback);
    let (copied, b3) = read.map_err(|e| match e {
        Failed::Reading(e) => reading(e),
        Failed::Writing(e) => writing(e),
    })?;
    let after = src.metadata().map(|m| FileStamp::of(&m)).map_err(reading)?;
    dst.sync_all().map_err(writing)?;
    Ok(Watched {
        copied,
        blake3: b3.unwrap_or_default(),
        before,
        after,
        began,
    })
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

/// The length, SHA-256 and BLAKE3 (lower-case hex) of the file at `path`, read afresh
/// once.
pub fn hash_file_both(path: &Path) -> std::io::Result<(Copied, String)> {
    read_through(&mut File::open(path)?, |_, _| Ok(()), true)
        .map(|(copied, b3)| (copied, b3.unwrap_or_default()))
        .map_err(Failed::into_io)
}

/// The length and SHA-256 of the open `file`, read from where it stands to its end.
pub fn hash_open(mut file: File) -> std::io::Result<Copied> {
    read_through(&mut file, |_, _| Ok(()), false)
        .map(|(copied, _)| copied)
        .map_err(Failed::into_io)
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

/// Chunks read and not yet hashed: the reader runs at most this far ahead of the hashes.
const IN_FLIGHT: usize = 4;

/// Reads `src` from where it stands to its end, handing each chunk to `sink` with its
/// offset, while a thread of its own for each digest (SHA-256, and BLAKE3 when `blake3`)
/// hashes the chunks read: on two cores the digests cost the copy little more than the
/// slower of them. Its length and digests.
fn read_through(
    src: &mut File,
    mut sink: impl FnMut(u64, &[u8]) -> std::io::Result<()>,
    blake3: bool,
) -> Result<(Copied, Option<String>), Failed> {
    use std::sync::{mpsc, Arc};
    /// A chunk read: the buffer and how much of it was read.
    type Chunk = Arc<(Vec<u8>, usize)>;
    let (give_back, spare) = mpsc::channel::<Chunk>();
    std::thread::scope(|scope| {
        let digests: Vec<Digest> = match blake3 {
            true => vec![Digest::Sha256, Digest::Blake3],
            false => vec![Digest::Sha256],
        };
        let hashers: Vec<_> = digests
            .into_iter()
            .map(|digest| {
                let (to_hash, chunks) = mpsc::sync_channel::<Chunk>(IN_FLIGHT);
                let give_back = give_back.clone();
                let thread = scope.spawn(move || {
                    let mut hasher = digest.hasher();
                    for chunk in chunks {
                        hasher.update(chunk.0.get(..chunk.1).unwrap_or_default());
                        let _ = give_back.send(chunk);
                    }
                    hasher.finish()
                });
                (to_hash, thread)
            })
            .collect();
        drop(give_back);
        let mut size = 0u64;
        let read = loop {
            // A buffer every hasher has given back, or a new one.
            let mut buf = loop {
                match spare.try_recv() {
                    Ok(chunk) => match Arc::try_unwrap(chunk) {
                        Ok((buf, _)) => break buf,
                        // Another hasher still has it: it comes back once more.
                        Err(_) => continue,
                    },
                    Err(_) => break vec![0u8; CHUNK],
                }
            };
            let n = match src.read(&mut buf) {
                Ok(0) => break Ok(()),
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => break Err(Failed::Reading(e)),
            };
            if let Err(e) = sink(size, buf.get(..n).unwrap_or_default()) {
                break Err(Failed::Writing(e));
            }
            size += n as u64;
            let chunk: Chunk = Arc::new((buf, n));
            if hashers
                .iter()
                .any(|(to_hash, _)| to_hash.send(Arc::clone(&chunk)).is_err())
            {
                break Ok(());
            }
        };
        let mut hashed = Vec::new();
        for (to_hash, thread) in hashers {
            drop(to_hash);
            hashed.push(thread.join());
        }
        read?;
        let mut hashed = hashed.into_iter().map(|h| {
            h.map_err(|_| {
                Failed::Reading(std::io::Error::other(
                    "a thread hashing the file ended in a panic",
                ))
            })
        });
        let sha256 = hashed.next().transpose()?.unwrap_or_default();
        let b3 = hashed.next().transpose()?;
        Ok((Copied { size, sha256 }, b3))
    })
}

/// A digest [`read_through`] computes.
#[derive(Clone, Copy)]
enum Digest {
    Sha256,
    Blake3,
}

/// A digest's state.
enum Hasher {
    Sha256(Box<Sha256>),
    Blake3(Box<blake3::Hasher>),
}

impl Digest {
    fn hasher(self) -> Hasher {
        match self {
            Digest::Sha256 => Hasher::Sha256(Box::default()),
            Digest::Blake3 => Hasher::Blake3(Box::default()),
        }
    }
}

impl Hasher {
    fn update(&mut self, bytes: &[u8]) {
        match self {
            Hasher::Sha256(h) => sha2::Digest::update(h.as_mut(), bytes),
            Hasher::Blake3(h) => {
                h.update(bytes);
            }
        }
    }

    /// The digest, lower-case hex.
    fn finish(self) -> String {
        match self {
            Hasher::Sha256(h) => hex(&sha2::Digest::finalize(*h)),
            Hasher::Blake3(h) => h.finalize().to_hex().to_string(),
        }
    }
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

    /// A watched copy's digests are those of the bytes, over many chunks and a last one
    /// cut short, each computed on a thread of its own; so is a plain hash's SHA-256.
    #[test]
    fn a_watched_copy_hashes_every_chunk_once_and_in_order(
    ) -> Result<(), Box<dyn std::error::Error>> {
        use sha2::Digest as _;
        let dir = std::env::temp_dir().join(format!("salvage-watched-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir)?;
        // Every chunk differs from every other, so that one hashed twice or out of
        // order changes the digest.
        let bytes: Vec<u8> = (0..(CHUNK * 9 + 12_345) as u64)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        let (src, to) = (dir.join("src"), dir.join("copy"));
        std::fs::write(&src, &bytes)?;
        let w = copy_file_watched(&src, &to)?;
        let sha = hex(&Sha256::digest(&bytes));
        assert_eq!(w.copied.size, bytes.len() as u64);
        assert_eq!(w.copied.sha256, sha);
        assert_eq!(w.blake3, blake3::hash(&bytes).to_hex().to_string());
        assert_eq!(std::fs::read(&to)?, bytes);
        assert_eq!(w.before, w.after, "nothing wrote to it");
        assert_eq!(hash_file(&src)?.sha256, sha);
        assert_eq!(copy_file(&src, &dir.join("plain"))?.sha256, sha);
        std::fs::remove_dir_all(&dir)?;
        Ok(())
    }

    /// A stamp proves nothing of a write in the last seconds before it was taken (a
    /// second write in the same tick of the clock leaves the times as they were), nor of
    /// one dated after it; a copy whose stamps differ before and after is not steady.
    #[test]
    fn a_stamp_taken_just_after_a_change_is_racy() {
        let at = |s: i64| FileStamp {
            device: 1,
            inode: 2,
            len: 3,
            modified: (s, 0),
            changed: (s, 500),
        };
        let second = |s: u64| SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(s);
        assert!(!at(1_000).racy(second(1_010)));
        assert!(at(1_000).racy(second(1_002)), "within the settling time");
        assert!(at(1_000).racy(second(999)), "changed after it was taken");
        let changed_late = FileStamp {
            changed: (1_009, 0),
            ..at(1_000)
        };
        assert!(
            changed_late.racy(second(1_010)),
            "the change time counts too"
        );
        let before_1970 = FileStamp {
            modified: (-5, 0),
            changed: (-5, 0),
            ..at(1_000)
        };
        assert!(before_1970.racy(second(1_010)), "a time it cannot place");
        let watched = |before: FileStamp, after: FileStamp| Watched {
            copied: Copied {
                size: 3,
                sha256: String::new(),
            },
            blake3: String::new(),
            before,
            after,
            began: second(1_010),
        };
        assert!(watched(at(1_000), at(1_000)).steady());
        assert!(
            !watched(at(1_000), at(1_005)).steady(),
            "written during the copy"
        );
        assert!(
            !watched(at(1_009), at(1_009)).steady(),
            "written just before"
        );
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
