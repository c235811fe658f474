//! What putting a database in place needs from the operating system: who holds SQLite's
//! locks on it, SQLite's own locks held while files move, an atomic exchange of two paths,
//! a rename that never replaces, an exclusive claim on a repair, and room on a filesystem.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use crate::base::error::Error;

/// Refuses while another process holds SQLite's locks on the database or its `-shm`.
pub fn check_not_in_use(db: &Path) -> Result<(), Error> {
    for path in [
        db.to_path_buf(),
        crate::base::paths::with_suffix(db, "-shm"),
    ] {
        if let Some(h) = lock_holder(&path) {
            return Err(in_use(&path, Some(h), true));
        }
    }
    Ok(())
}

/// The refusal of a file another process holds a lock on; `again`: the command may
/// simply be run again once the application is stopped (a refusal before anything was
/// made).
pub fn in_use(path: &Path, holder: Option<Holder>, again: bool) -> Error {
    let who = holder.map_or("another process holds a lock on it".to_string(), |h| {
        let name = process_name(h.pid).map_or(format!("process {}", h.pid), |c| {
            format!("process {} (`{c}`)", h.pid)
        });
        format!(
            "{name} holds a {} lock on it",
            if h.write { "write" } else { "read" }
        )
    });
    Error::Refused {
        what: format!("`{}` is in use: {who}", path.display()),
        hint: format!(
            "stop the application using the database (or close its connections){}",
            if again {
                ", then run the command again"
            } else {
                ""
            }
        ),
    }
}

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

/// SQLite's locks on a database's files, held as a writer holds them: while they are held
/// no SQLite connection of another process can read or write the database (it waits, then
/// gets `SQLITE_BUSY`, as it would behind any writer). Open file description locks
/// (`F_OFD_SETLK`), which conflict with the POSIX locks SQLite takes, and which closing
/// another descriptor of the same file in this process does not drop. Released when
/// dropped.
#[derive(Debug, Default)]
pub struct Held {
    /// The files whose locks are held, kept open.
    files: Vec<std::fs::File>,
}

/// Where SQLite locks a file: the database's lock bytes (`PENDING_BYTE` at 1 GiB, then
/// the reserved byte and the 510 shared bytes: SQLite's `os_unix.c`), or a `-shm`'s
/// eight write-ahead-log locks and its dead-man switch (bytes 120 to 128).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LockBytes {
    /// A database file.
    Database,
    /// A `-shm` (wal-index) file.
    Shm,
}

impl LockBytes {
    /// The first byte and the length of the range.
    fn range(self) -> (i64, i64) {
        match self {
            LockBytes::Database => (0x4000_0000, 512),
            LockBytes::Shm => (120, 9),
        }
    }
}

impl Held {
    /// Takes the write lock of `bytes` on the file at `path` as well, without waiting.
    /// `Err` with the holder when another process holds a lock there; a file this user
    /// cannot open for writing, or a platform without such locks, is only tested
    /// ([`lock_holder`]), not locked.
    pub fn add(&mut self, path: &Path, bytes: LockBytes) -> Result<(), Busy> {
        let Ok(file) = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
        else {
            return match lock_holder(path) {
                Some(h) => Err(Busy {
                    path: path.to_path_buf(),
                    holder: Some(h),
                }),
                None => Ok(()),
            };
        };
        match ofd_write_lock(&file, bytes.range()) {
            Ok(true) => {
                self.files.push(file);
                Ok(())
            }
            Ok(false) => Err(Busy {
                path: path.to_path_buf(),
                holder: lock_holder(path),
            }),
            // No open file description locks here: tested instead.
            Err(_) => match lock_holder(path) {
                Some(h) => Err(Busy {
                    path: path.to_path_buf(),
                    holder: Some(h),
                }),
                None => Ok(()),
            },
        }
    }
}

/// A file on which another process holds a lock.
#[derive(Clone, Debug)]
pub struct Busy {
    /// The file.
    pub path: std::path::PathBuf,
    /// Who holds the lock, when the system says.
    pub holder: Option<Holder>,
}

/// Takes an open file description write lock on `range` of `file` without waiting:
/// `Ok(false)` when another holds a conflicting lock.
#[cfg(target_os = "linux")]
fn ofd_write_lock(file: &std::fs::File, (start, len): (i64, i64)) -> std::io::Result<bool> {
    use std::os::fd::AsRawFd as _;
    // SAFETY: `flock` is plain data; F_OFD_SETLK reads it for an open descriptor this
    // function borrows for the duration of the call.
    #[allow(unsafe_code)]
    // reason: no safe wrapper in the workspace's crates takes an open file description lock
    let rc = unsafe {
        let mut lock: libc::flock = std::mem::zeroed();
        lock.l_type = libc::F_WRLCK as libc::c_short;
        lock.l_whence = libc::SEEK_SET as libc::c_short;
        lock.l_start = start;
        lock.l_len = len;
        lock.l_pid = 0; // required of open file description locks
        libc::fcntl(file.as_raw_fd(), libc::F_OFD_SETLK, &lock)
    };
    if rc == 0 {
        return Ok(true);
    }
    let e = std::io::Error::last_os_error();
    match e.raw_os_error() {
        Some(libc::EAGAIN | libc::EACCES) => Ok(false),
        _ => Err(e),
    }
}

/// Elsewhere there are no open file description locks.
#[cfg(not(target_os = "linux"))]
fn ofd_write_lock(_: &std::fs::File, _: (i64, i64)) -> std::io::Result<bool> {
    Err(std::io::Error::from(std::io::ErrorKind::Unsupported))
}

/// An exclusive claim on one repair of a database: a lock (`flock`) on the file
/// `DB.salvage-repair.lock`, which is removed when the claim is dropped. Two runs started
/// at the same instant cannot both hold it; a claim left by a run that died is taken over
/// (the lock went with the process).
#[derive(Debug)]
pub struct Claim {
    /// The lock file, open and locked.
    file: std::fs::File,
    /// Its path.
    path: std::path::PathBuf,
}

impl Claim {
    /// Takes the claim at `path`, or says which process holds it. The file is created if
    /// missing; after locking, its path must still name the locked file (a run that was
    /// ending may have removed it meanwhile), or the claim is taken again.
    pub fn take(path: &Path) -> std::io::Result<Result<Claim, Option<i32>>> {
        use std::io::{Read as _, Write as _};
        use std::os::unix::fs::MetadataExt as _;
        for _ in 0..100 {
            use std::os::unix::fs::OpenOptionsExt as _;
            // Never through a link: a link at the claim's name would have the claim
            // truncate, then remove, whatever it points to.
            let mut file = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .custom_flags(libc::O_NOFOLLOW)
                .open(path)?;
            if !file.metadata()?.is_file() {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::AlreadyExists,
                    "not a regular file",
                ));
            }
            if let Err(e) =
                rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive)
            {
                if e == rustix::io::Errno::WOULDBLOCK {
                    let mut pid = String::new();
                    let _ = file.read_to_string(&mut pid);
                    return Ok(Err(pid.trim().parse().ok()));
                }
                return Err(e.into());
            }
            let (held, named) = (file.metadata()?, std::fs::metadata(path));
            if named.is_ok_and(|n| n.ino() == held.ino() && n.dev() == held.dev()) {
                file.set_len(0)?;
                file.write_all(std::process::id().to_string().as_bytes())?;
                return Ok(Ok(Claim {
                    file,
                    path: path.to_path_buf(),
                }));
            }
        }
        Err(std::io::Error::other(
            "the repair's lock file kept changing",
        ))
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        // Removed while still locked: a run that opened it meanwhile finds its path gone
        // and takes the claim again on a new file.
        let _ = std::fs::remove_file(&self.path);
        let _ = rustix::fs::flock(&self.file, rustix::fs::FlockOperation::Unlock);
    }
}

/// Renames `from` to `to` when nothing is at `to`, atomically (Linux
/// `renameat2(RENAME_NOREPLACE)`); where the filesystem cannot, a file is linked to `to`
/// (which fails if anything is there) and its old name removed. Fails with
/// `AlreadyExists` when `to` exists. The folders are synced.
pub fn rename_noreplace(from: &Path, to: &Path) -> std::io::Result<()> {
    if !rename_with(from, to, Rename::NoReplace)? {
        std::fs::hard_link(from, to)?;
        std::fs::remove_file(from)?;
    }
    crate::base::files::sync_parent(to)?;
    crate::base::files::sync_parent(from)
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
/// cannot. The folder is synced.
pub fn exchange(a: &Path, b: &Path) -> std::io::Result<bool> {
    if !rename_with(a, b, Rename::Exchange)? {
        return Ok(false);
    }
    crate::base::files::sync_parent(a)?;
    Ok(true)
}

/// How [`rename_with`] renames.
#[derive(Clone, Copy)]
enum Rename {
    /// The two paths swap their files.
    Exchange,
    /// Only onto an empty path.
    NoReplace,
}

/// `renameat2` with `how`: `Ok(false)` where the platform or filesystem cannot.
#[cfg(target_os = "linux")]
fn rename_with(from: &Path, to: &Path, how: Rename) -> std::io::Result<bool> {
    use rustix::fs::{renameat_with, RenameFlags, CWD};
    let flags = match how {
        Rename::Exchange => RenameFlags::EXCHANGE,
        Rename::NoReplace => RenameFlags::NOREPLACE,
    };
    match renameat_with(CWD, from, CWD, to, flags) {
        Ok(()) => Ok(true),
        Err(e)
            if [
                rustix::io::Errno::INVAL,
                rustix::io::Errno::NOSYS,
                rustix::io::Errno::OPNOTSUPP,
            ]
            .contains(&e) =>
        {
            Ok(false)
        }
        Err(e) => Err(e.into()),
    }
}

/// Elsewhere there is no `renameat2`.
#[cfg(not(target_os = "linux"))]
fn rename_with(_: &Path, _: &Path, _: Rename) -> std::io::Result<bool> {
    Ok(false)
}

/// The names beside a database [`can_exchange`] probes with, made and removed at once.
pub const PROBES: [&str; 2] = [".salvage-repair.probe-a", ".salvage-repair.probe-b"];

/// Whether the filesystem holding the database at `db` can exchange two paths
/// atomically, tried on two empty files of the repair's own beside it (removed before
/// returning). A repair in place needs it: without it, a crash between two renames would
/// leave the database's path empty.
pub fn can_exchange(db: &Path) -> std::io::Result<bool> {
    let [a, b] = PROBES.map(|s| crate::base::paths::with_suffix(db, s));
    let made = (|| {
        for p in [&a, &b] {
            std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(p)?;
        }
        rename_with(&a, &b, Rename::Exchange)
    })();
    for p in [&a, &b] {
        let _ = std::fs::remove_file(p);
    }
    made
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

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("salvage-place-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// While the locks are held, SQLite cannot read or write the database (busy), and
    /// they cannot be taken while SQLite holds one of its own.
    #[test]
    #[cfg(target_os = "linux")]
    fn held_locks_keep_sqlite_out_and_sqlite_s_keep_them_from_being_taken() {
        let dir = scratch("held");
        let db = dir.join("a.db");
        let app = rusqlite::Connection::open(&db).unwrap();
        app.execute_batch("CREATE TABLE t(x); INSERT INTO t VALUES (1);")
            .unwrap();
        app.execute_batch("BEGIN IMMEDIATE").unwrap();
        let mut held = Held::default();
        assert!(
            held.add(&db, LockBytes::Database).is_err(),
            "a writer holds it"
        );
        app.execute_batch("ROLLBACK").unwrap();
        held.add(&db, LockBytes::Database).unwrap();
        let reader = rusqlite::Connection::open(&db).unwrap();
        reader.busy_timeout(std::time::Duration::ZERO).unwrap();
        let read = reader.query_row("SELECT count(*) FROM t", [], |r| r.get::<_, i64>(0));
        assert!(
            matches!(&read, Err(rusqlite::Error::SqliteFailure(e, _)) if e.code == rusqlite::ErrorCode::DatabaseBusy),
            "{read:?}"
        );
        drop(held);
        assert_eq!(
            reader
                .query_row("SELECT count(*) FROM t", [], |r| r.get::<_, i64>(0))
                .unwrap(),
            1
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A claim is exclusive while held, and its file goes with it.
    #[test]
    fn a_claim_is_exclusive_and_removed_when_dropped() {
        let dir = scratch("claim");
        let path = dir.join("a.db.salvage-repair.lock");
        let first = Claim::take(&path).unwrap().unwrap();
        let second = Claim::take(&path).unwrap();
        assert_eq!(second.err(), Some(Some(std::process::id() as i32)));
        drop(first);
        assert!(!path.exists());
        let again = Claim::take(&path).unwrap();
        assert!(again.is_ok());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
