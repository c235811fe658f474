//! What putting a database in place needs from the operating system: who holds SQLite's
//! locks on it, an atomic exchange of two paths, and room on a filesystem.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// A lock another process holds on a file, as `F_GETLK` reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Holder {
    /// The process holding it.
    pub pid: i32,
    /// Whether it is a write lock (else a read lock).
    pub write: bool,
}

/// The first POSIX advisory lock another process holds on any byte of the file at
/// `path` (SQLite's locks on a database and its `-shm` are such locks). Tests for them
/// with `F_GETLK`, never taking or dropping one. `None` when nothing holds one, or the
/// file cannot be opened.
pub fn lock_holder(path: &Path) -> Option<Holder> {
    let file = std::fs::File::open(path).ok()?;
    use std::os::fd::AsRawFd as _;
    // SAFETY: `flock` is plain data; F_GETLK only reads the lock table into it, for an
    // open descriptor this function owns for the duration of the call.
    #[allow(unsafe_code)]
    // reason: no safe wrapper in the workspace's crates queries POSIX locks without taking one
    let got = unsafe {
        let mut lock: libc::flock = std::mem::zeroed();
        lock.l_type = libc::F_WRLCK as libc::c_short;
        lock.l_whence = libc::SEEK_SET as libc::c_short;
        lock.l_start = 0;
        lock.l_len = 0; // to the end of the file, however far
        (
            libc::fcntl(file.as_raw_fd(), libc::F_GETLK, &mut lock),
            lock,
        )
    };
    let (rc, lock) = got;
    (rc == 0 && lock.l_type != libc::F_UNLCK as libc::c_short).then_some(Holder {
        pid: lock.l_pid,
        write: lock.l_type == libc::F_WRLCK as libc::c_short,
    })
}

/// The command line of process `pid`, where `/proc` shows it.
pub fn process_name(pid: i32) -> Option<String> {
    let raw = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    let words: Vec<String> = raw
        .split(|b| *b == 0)
        .filter(|w| !w.is_empty())
        .map(|w| String::from_utf8_lossy(w).into_owned())
        .collect();
    (!words.is_empty()).then(|| words.join(" "))
}

/// Exchanges the files at `a` and `b` atomically (Linux `renameat2(RENAME_EXCHANGE)`):
/// at no instant is either path absent. `Ok(false)` where the platform or filesystem
/// cannot (the caller falls back to renaming aside).
pub fn exchange(a: &Path, b: &Path) -> std::io::Result<bool> {
    let (ca, cb) = (
        CString::new(a.as_os_str().as_bytes())?,
        CString::new(b.as_os_str().as_bytes())?,
    );
    // SAFETY: both paths are NUL-terminated strings that outlive the call.
    #[allow(unsafe_code)]
    // reason: std has no atomic exchange of two paths
    let rc = unsafe {
        libc::renameat2(
            libc::AT_FDCWD,
            ca.as_ptr(),
            libc::AT_FDCWD,
            cb.as_ptr(),
            libc::RENAME_EXCHANGE,
        )
    };
    if rc == 0 {
        crate::bundle::files::sync_parent(a)?;
        return Ok(true);
    }
    let e = std::io::Error::last_os_error();
    match e.raw_os_error() {
        Some(libc::EINVAL | libc::ENOSYS | libc::EOPNOTSUPP) => Ok(false),
        _ => Err(e),
    }
}

/// Bytes free for this user on the filesystem holding `path`.
pub fn free_bytes(path: &Path) -> Option<u64> {
    let c = CString::new(path.as_os_str().as_bytes()).ok()?;
    // SAFETY: `statvfs` is plain data the call fills; the path outlives the call.
    #[allow(unsafe_code)]
    // reason: std does not report free space
    let (rc, st) = unsafe {
        let mut st: libc::statvfs = std::mem::zeroed();
        (libc::statvfs(c.as_ptr(), &mut st), st)
    };
    #[allow(clippy::useless_conversion)] // reason: the field's width differs between platforms
    (rc == 0).then(|| u64::from(st.f_bavail).saturating_mul(u64::from(st.f_frsize)))
}

/// The device of the filesystem holding `path`.
pub fn device(path: &Path) -> Option<u64> {
    use std::os::unix::fs::MetadataExt as _;
    std::fs::metadata(path).ok().map(|m| m.dev())
}

/// SQLite's `PRAGMA integrity_check` of the database at `path`, opened read-only and
/// immutable (no lock taken, no sidecar made or read): `Ok(())` or the first problems it
/// names. Text an older SQLite left in a numeric column, which this one would convert,
/// is the data as it was, not a fault (see `finish::verify`).
pub fn integrity(path: &Path) -> Result<(), String> {
    use crate::backup::sqlite::{read_only, uri};
    let conn = rusqlite::Connection::open_with_flags(uri(path, "immutable=1"), read_only())
        .map_err(|e| e.to_string())?;
    let answer = crate::finish::verify::sqlite_check(&conn, "PRAGMA integrity_check")
        .map_err(|e| e.to_string())?;
    match answer.faults.as_slice() {
        [] => Ok(()),
        faults => Err(faults
            .iter()
            .take(20)
            .cloned()
            .collect::<Vec<_>>()
            .join("; ")),
    }
}
