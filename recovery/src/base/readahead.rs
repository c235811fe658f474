//! A VFS for the output's connections that reads ahead where SQLite reads forward.
//!
//! SQLite reads a database one page at a time, with one `pread` each: its check of a
//! 2 GB output, and each `CREATE INDEX` over a bulk-written table, make half a million
//! system calls, and spent more time in the kernel than in SQLite (0.9 s of 1.1 s for
//! `quick_check` on the bench store; the same check over a map took 0.5 s, but a map
//! keeps every page it touched resident). This VFS is the platform's default one with a
//! window in front of each main database file: when a read lands a little after where the
//! last one ended (a scan) or a little before where it started (SQLite's check takes a
//! page's children last first), [`WINDOW`] bytes around it are read at once, and the
//! reads that follow are served from them. Other reads (a search down a tree, a page of a
//! journal or a temporary file) go straight to the default VFS, as before.
//!
//! The window never shows a byte the file no longer holds: a write through the
//! connection is copied into it, a truncation cuts it, and it is emptied whenever SQLite
//! takes its shared lock, as it does before it trusts its cache after another process may
//! have written (the output is the run's alone: `locking_mode=EXCLUSIVE`, and the bulk
//! writer writes with SQLite's connection closed, `Output::with_file_closed`). A fill
//! that served no other read makes the next ones wait, doubling: reads that only look
//! like a scan do not each read a window. Memory: one window per open main database file,
//! allocated on its first fill.
//!
//! The file structure is the default VFS's own, followed by this VFS's state: the
//! default VFS's methods take the same pointer, so only the methods that see the window
//! (close, read, write, truncate, lock) are this module's; the others are the default
//! VFS's. That needs a default VFS that never compares a file's method table with its
//! own, which holds for SQLite's `unix` VFS on Linux (its proxy locking on macOS does):
//! elsewhere connections use the default VFS as it is.

#![allow(unsafe_code)]
// reason: a VFS is a table of C functions SQLite calls with raw pointers, and rusqlite has
// no safe way to define one

use std::ffi::{c_int, c_void, CStr};
use std::ptr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

use rusqlite::ffi;

/// The VFS's name, as `Connection::open_with_flags_and_vfs` takes it.
const NAME: &str = "salvage-readahead";
const NAME_C: &CStr = c"salvage-readahead";

/// Bytes read at once.
const WINDOW: usize = 1 << 20;

/// How far from the last read a read may be and still count as one of a scan: a table's
/// leaves, written in order, have its rows' overflow pages between them.
const GAP: i64 = 256 << 10;

/// Fills skipped at most after fills that served nothing.
const MAX_SKIP: u32 = 256;

/// The bytes read ahead, and where the last read ended.
#[derive(Default)]
struct Window {
    bytes: Vec<u8>,
    /// File offset of `bytes[0]`.
    start: i64,
    /// Valid bytes in `bytes`.
    len: usize,
    /// Where the last read started and ended.
    last: (i64, i64),
    /// Reads served since the last fill (none yet: `None`).
    hits: Option<u32>,
    /// Fills to skip before the next one, and how many the last wait was.
    skip: u32,
    wait: u32,
}

impl Window {
    fn empty(&mut self) {
        self.len = 0;
    }

    /// Copies bytes written at `off` into the window where it holds them.
    fn written(&mut self, off: i64, data: &[u8]) {
        let end = off.saturating_add(data.len() as i64);
        let held_end = self.start.saturating_add(self.len as i64);
        let (from, to) = (off.max(self.start), end.min(held_end));
        if from >= to {
            return;
        }
        let (Ok(src), Ok(dst), Ok(n)) = (
            usize::try_from(from - off),
            usize::try_from(from - self.start),
            usize::try_from(to - from),
        ) else {
            self.empty();
            return;
        };
        match (self.bytes.get_mut(dst..dst + n), data.get(src..src + n)) {
            (Some(d), Some(s)) => d.copy_from_slice(s),
            _ => self.empty(),
        }
    }

    /// Cuts the window at a new end of the file.
    fn truncated(&mut self, size: i64) {
        let keep = usize::try_from(size.saturating_sub(self.start)).unwrap_or(0);
        self.len = self.len.min(keep);
    }

    /// Whether a read that would fill the window fills it: not while waiting after fills
    /// that served nothing.
    fn fills(&mut self) -> bool {
        if self.skip > 0 {
            self.skip -= 1;
            return false;
        }
        if self.hits == Some(0) {
            self.wait = (self.wait * 2).clamp(1, MAX_SKIP);
            self.skip = self.wait;
            self.hits = None;
            return false;
        }
        if self.hits.is_some() {
            self.wait = 0;
        }
        true
    }

    /// The range to read for a read of `off..end` that missed, after a read of `last`:
    /// its start and length. None when the read is not one of a scan (or too large, or
    /// waiting after fills that served nothing), or reaches past the end of the file
    /// (`size`, asked for only then), where the default VFS's short read must reach
    /// SQLite as it is.
    fn fill_for(
        &mut self,
        (off, end): (i64, i64),
        (last_start, last_end): (i64, i64),
        size: impl FnOnce() -> Option<i64>,
    ) -> Option<(i64, usize)> {
        let forward = off >= last_end && off - last_end <= GAP;
        let backward = end <= last_start && last_start - end <= GAP;
        if !(forward || backward) || end - off > WINDOW as i64 / 4 || !self.fills() {
            return None;
        }
        let size = size().filter(|&size| end <= size)?;
        // A backward window keeps an eighth above the page: the check reads each
        // overflow chain forward from where its cell is.
        let span = WINDOW as i64;
        let start = if forward {
            off
        } else {
            end.saturating_add(span / 8)
                .min(size)
                .saturating_sub(span)
                .max(0)
        };
        let fill = usize::try_from(size.min(start.saturating_add(span)) - start).ok()?;
        Some((start, fill))
    }

    /// The window's bytes for `amt` bytes at `off`, if it holds them all.
    fn holds(&self, off: i64, amt: usize) -> Option<&[u8]> {
        let from = usize::try_from(off.checked_sub(self.start)?).ok()?;
        self.bytes
            .get(..self.len)?
            .get(from..from.checked_add(amt)?)
    }
}

/// This VFS's state, after the default VFS's file structure.
#[repr(C)]
struct Extra {
    /// The default VFS's methods for this file.
    inner: *const ffi::sqlite3_io_methods,
    /// The window of a main database file; null for other files.
    window: *mut Window,
}

/// Where [`Extra`] starts: after the default VFS's file structure, aligned.
fn extra_offset(inner: &ffi::sqlite3_vfs) -> usize {
    let size = usize::try_from(inner.szOsFile).unwrap_or(0);
    size.next_multiple_of(std::mem::align_of::<Extra>())
}

/// Where each file's [`Extra`] starts, set before the VFS is registered.
static EXTRA: AtomicUsize = AtomicUsize::new(0);

/// Whether the VFS is registered.
static REGISTERED: OnceLock<bool> = OnceLock::new();

/// Our methods for each of the default VFS's method tables met (one or two in a run),
/// by the address of that table, made once and kept for the process: files point at
/// them until they close.
static METHODS: Mutex<Vec<(usize, &'static ffi::sqlite3_io_methods)>> = Mutex::new(Vec::new());

/// Registers the VFS (once; not as the default). Returns whether it can be used: where
/// it cannot, connections open with SQLite's default VFS.
pub fn available() -> bool {
    *REGISTERED.get_or_init(|| cfg!(target_os = "linux") && register().is_some())
}

fn register() -> Option<()> {
    // SAFETY: sqlite3_vfs_find with a null name returns the default VFS, a static table;
    // the struct registered is leaked, so it outlives every connection, as
    // sqlite3_vfs_register requires.
    unsafe {
        let inner = ffi::sqlite3_vfs_find(ptr::null());
        if inner.is_null() {
            return None;
        }
        let extra = extra_offset(&*inner);
        let size = c_int::try_from(extra + std::mem::size_of::<Extra>()).ok()?;
        EXTRA.store(extra, Ordering::Release);
        let mut vfs: ffi::sqlite3_vfs = ptr::read(inner);
        vfs.szOsFile = size;
        vfs.zName = NAME_C.as_ptr();
        vfs.pNext = ptr::null_mut();
        vfs.pAppData = inner.cast::<c_void>();
        vfs.xOpen = Some(open);
        let vfs = Box::leak(Box::new(vfs));
        (ffi::sqlite3_vfs_register(vfs, 0) == ffi::SQLITE_OK).then_some(())
    }
}

/// The [`Extra`] of a file this VFS opened.
///
/// # Safety
/// `file` must have been opened by [`open`].
unsafe fn extra(file: *mut ffi::sqlite3_file) -> *mut Extra {
    let offset = EXTRA.load(Ordering::Acquire);
    // SAFETY: the caller's file is `szOsFile` bytes long, which holds Extra at `offset`.
    unsafe { file.cast::<u8>().add(offset).cast::<Extra>() }
}

/// The default VFS's methods of a file this VFS opened, and its window if it has one.
///
/// # Safety
/// `file` must have been opened by [`open`] and not closed; the window is this file's
/// alone, used by one connection at a time.
unsafe fn parts<'f>(
    file: *mut ffi::sqlite3_file,
) -> (&'f ffi::sqlite3_io_methods, Option<&'f mut Window>) {
    // SAFETY: `open` set both fields of a file it opened.
    unsafe {
        let extra = extra(file);
        (&*(*extra).inner, (*extra).window.as_mut())
    }
}

/// Our method table for files whose default methods are `inner`.
fn methods_for(inner: &'static ffi::sqlite3_io_methods) -> &'static ffi::sqlite3_io_methods {
    let mut tables = METHODS.lock().unwrap_or_else(|e| e.into_inner());
    let key = ptr::from_ref(inner) as usize;
    if let Some((_, m)) = tables.iter().find(|(k, _)| *k == key) {
        return m;
    }
    let mut ours = *inner;
    ours.xClose = Some(close);
    ours.xRead = Some(read);
    ours.xWrite = Some(write);
    ours.xTruncate = Some(truncate);
    ours.xLock = Some(lock);
    let ours: &'static ffi::sqlite3_io_methods = Box::leak(Box::new(ours));
    tables.push((key, ours));
    ours
}

unsafe extern "C" fn open(
    vfs: *mut ffi::sqlite3_vfs,
    name: ffi::sqlite3_filename,
    file: *mut ffi::sqlite3_file,
    flags: c_int,
    out_flags: *mut c_int,
) -> c_int {
    // SAFETY: pAppData is the default VFS (set at registration); `file` is szOsFile
    // bytes, of which the default VFS's structure comes first.
    unsafe {
        let inner = (*vfs).pAppData.cast::<ffi::sqlite3_vfs>();
        let Some(x_open) = (*inner).xOpen else {
            return ffi::SQLITE_CANTOPEN;
        };
        let extra = extra(file);
        ptr::write(
            extra,
            Extra {
                inner: ptr::null(),
                window: ptr::null_mut(),
            },
        );
        let rc = x_open(inner, name, file, flags, out_flags);
        let methods = (*file).pMethods;
        if methods.is_null() {
            return rc;
        }
        (*extra).inner = methods;
        if flags & ffi::SQLITE_OPEN_MAIN_DB != 0 {
            (*extra).window = Box::into_raw(Box::default());
        }
        (*file).pMethods = methods_for(&*methods);
        rc
    }
}

unsafe extern "C" fn close(file: *mut ffi::sqlite3_file) -> c_int {
    // SAFETY: SQLite calls xClose once, on a file `open` set up.
    unsafe {
        let extra = extra(file);
        if !(*extra).window.is_null() {
            drop(Box::from_raw((*extra).window));
            (*extra).window = ptr::null_mut();
        }
        (*file).pMethods = (*extra).inner;
        match (*(*extra).inner).xClose {
            Some(f) => f(file),
            None => ffi::SQLITE_OK,
        }
    }
}

unsafe extern "C" fn read(
    file: *mut ffi::sqlite3_file,
    buf: *mut c_void,
    amt: c_int,
    off: ffi::sqlite3_int64,
) -> c_int {
    // SAFETY: `buf` has `amt` bytes (SQLite's contract); see `parts`.
    unsafe {
        let (inner, window) = parts(file);
        let Some(x_read) = inner.xRead else {
            return ffi::SQLITE_IOERR_READ;
        };
        let (Some(window), Ok(n)) = (window, usize::try_from(amt)) else {
            return x_read(file, buf, amt, off);
        };
        let end = off.saturating_add(i64::from(amt));
        let last = std::mem::replace(&mut window.last, (off, end));
        if let Some(bytes) = window.holds(off, n) {
            ptr::copy_nonoverlapping(bytes.as_ptr(), buf.cast::<u8>(), n);
            window.hits = window.hits.map(|h| h.saturating_add(1));
            return ffi::SQLITE_OK;
        }
        let size = || {
            let mut size: ffi::sqlite3_int64 = 0;
            let x_size = inner.xFileSize?;
            (x_size(file, &mut size) == ffi::SQLITE_OK).then_some(size)
        };
        let Some((start, fill)) = window.fill_for((off, end), last, size) else {
            return x_read(file, buf, amt, off);
        };
        let Ok(fill_c) = c_int::try_from(fill) else {
            return x_read(file, buf, amt, off);
        };
        window.empty();
        window.bytes.resize(WINDOW, 0);
        let rc = x_read(
            file,
            window.bytes.as_mut_ptr().cast::<c_void>(),
            fill_c,
            start,
        );
        if rc != ffi::SQLITE_OK {
            return x_read(file, buf, amt, off);
        }
        window.start = start;
        window.len = fill;
        window.hits = Some(0);
        let Some(bytes) = window.holds(off, n) else {
            return x_read(file, buf, amt, off);
        };
        ptr::copy_nonoverlapping(bytes.as_ptr(), buf.cast::<u8>(), n);
        ffi::SQLITE_OK
    }
}

unsafe extern "C" fn write(
    file: *mut ffi::sqlite3_file,
    buf: *const c_void,
    amt: c_int,
    off: ffi::sqlite3_int64,
) -> c_int {
    // SAFETY: `buf` holds `amt` bytes; see `parts`.
    unsafe {
        let (inner, window) = parts(file);
        let rc = inner
            .xWrite
            .map_or(ffi::SQLITE_IOERR_WRITE, |f| f(file, buf, amt, off));
        if let Some(window) = window {
            match usize::try_from(amt) {
                Ok(n) if rc == ffi::SQLITE_OK => {
                    window.written(off, std::slice::from_raw_parts(buf.cast::<u8>(), n));
                }
                _ => window.empty(),
            }
        }
        rc
    }
}

unsafe extern "C" fn truncate(file: *mut ffi::sqlite3_file, size: ffi::sqlite3_int64) -> c_int {
    // SAFETY: see `parts`.
    unsafe {
        let (inner, window) = parts(file);
        let rc = inner
            .xTruncate
            .map_or(ffi::SQLITE_IOERR_TRUNCATE, |f| f(file, size));
        if let Some(window) = window {
            if rc == ffi::SQLITE_OK {
                window.truncated(size);
            } else {
                window.empty();
            }
        }
        rc
    }
}

unsafe extern "C" fn lock(file: *mut ffi::sqlite3_file, level: c_int) -> c_int {
    // SAFETY: see `parts`.
    unsafe {
        let (inner, window) = parts(file);
        // SQLite takes its shared lock before it reads after another process may have
        // written: the window may be out of date too.
        if let (ffi::SQLITE_LOCK_SHARED, Some(window)) = (level, window) {
            window.empty();
        }
        inner
            .xLock
            .map_or(ffi::SQLITE_IOERR_LOCK, |f| f(file, level))
    }
}

/// Opens a connection to the database at `path` through this VFS where it is
/// available, else through SQLite's default one.
pub fn connect(path: &std::path::Path) -> rusqlite::Result<rusqlite::Connection> {
    if available() {
        rusqlite::Connection::open_with_flags_and_vfs(path, rusqlite::OpenFlags::default(), NAME)
    } else {
        rusqlite::Connection::open(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A database at a fresh path, and the connections to it by this VFS and by SQLite's
    /// own, with caches too small to hold it, so that every scan reads the file.
    fn both(
        name: &str,
    ) -> (
        rusqlite::Connection,
        rusqlite::Connection,
        std::path::PathBuf,
    ) {
        let dir = std::env::temp_dir().join(format!("readahead-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t.db");
        let ours = connect(&path).unwrap();
        ours.execute_batch("PRAGMA page_size=1024; PRAGMA cache_size=8; PRAGMA journal_mode=OFF;")
            .unwrap();
        let plain = rusqlite::Connection::open(&path).unwrap();
        (ours, plain, path)
    }

    fn contents(conn: &rusqlite::Connection) -> Vec<(i64, Vec<u8>)> {
        conn.prepare("SELECT id, v FROM t ORDER BY id")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap()
    }

    #[test]
    fn reads_after_writes_see_what_was_written() {
        assert!(available());
        let (ours, plain, path) = both("writes");
        ours.execute_batch(
            "CREATE TABLE t(id INTEGER PRIMARY KEY, v BLOB);
             WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 3000)
             INSERT INTO t SELECT i, randomblob(100 + i % 2500) FROM n;",
        )
        .unwrap();
        let before = contents(&ours);
        assert_eq!(before.len(), 3000);
        // Scans forward (and the check backward) fill windows; then every row changes in
        // place, each write landing in pages a window holds, and is read back.
        for round in 0..3 {
            ours.execute(
                "UPDATE t SET v = randomblob(length(v)) WHERE id % 3 = ?1",
                [round],
            )
            .unwrap();
            let check: String = ours
                .query_row("PRAGMA quick_check", [], |r| r.get(0))
                .unwrap();
            assert_eq!(check, "ok");
            let seen = contents(&ours);
            plain.execute_batch("PRAGMA cache_size=8").unwrap();
            // SQLite's own VFS, reading the file afresh, sees the same rows.
            assert_eq!(seen, contents(&plain), "round {round}");
            assert_ne!(seen, before);
        }
        // The file shrinks (VACUUM truncates it): nothing past its end is served.
        ours.execute_batch("DELETE FROM t WHERE id > 100; VACUUM;")
            .unwrap();
        assert_eq!(contents(&ours), contents(&plain));
        drop((ours, plain));
        let _ = std::fs::remove_dir_all(path.parent().unwrap());
    }
}
