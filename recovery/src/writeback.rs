//! The output on its way to the disk while the run goes on.
//!
//! The output is synced once, when it is committed. Left to itself the kernel would start
//! writing the gigabytes the load wrote only then (or after half a minute), and the run
//! would wait for all of them at its end. So each range written is handed to a helper
//! thread that asks the kernel to start writing it out (`sync_file_range` with
//! `SYNC_FILE_RANGE_WRITE`): that only starts the writes, it neither waits for them nor
//! takes an error from the file (the sync at the commit still sees every error), and
//! when the disk's queue is full it is the helper that waits, never the run.
//! Elsewhere than on Linux the writes wait for the commit's sync, as before.
//!
//! The helper holds a descriptor of the output of its own. Closing any descriptor of a
//! file drops every POSIX lock the process holds on it, SQLite's included, so the helper
//! is joined, and its descriptor closed, when its [`Writeback`] is dropped: the caller
//! drops it while SQLite has the output closed.

use std::fs::File;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;

/// Hands written ranges of one file to a helper thread that starts their writeback.
/// Dropping it skips the ranges not yet started and joins the helper.
pub struct Writeback {
    ranges: Option<mpsc::Sender<(u64, u64)>>,
    stop: Arc<AtomicBool>,
    helper: Option<JoinHandle<()>>,
}

impl Writeback {
    /// A helper that owns `file`, a descriptor of its own (closed when this is dropped);
    /// none when the thread cannot start, and the writes then wait for the commit's sync.
    pub fn of(file: File) -> Writeback {
        let stop = Arc::new(AtomicBool::new(false));
        let none = |stop| Writeback {
            ranges: None,
            stop,
            helper: None,
        };
        if !cfg!(target_os = "linux") {
            return none(stop);
        }
        let (tx, rx) = mpsc::channel::<(u64, u64)>();
        let stopped = Arc::clone(&stop);
        let started = std::thread::Builder::new()
            .name("salvage-writeback".into())
            .spawn(move || {
                for (offset, len) in rx {
                    if stopped.load(Ordering::Relaxed) {
                        break;
                    }
                    start(&file, offset, len);
                }
            });
        match started {
            Ok(helper) => Writeback {
                ranges: Some(tx),
                stop,
                helper: Some(helper),
            },
            Err(_) => none(stop),
        }
    }

    /// The writeback of the whole file at `path` started, from a helper thread; dropping
    /// what this returns closes the helper's descriptor.
    pub fn of_whole(path: &std::path::Path) -> Option<Writeback> {
        if !cfg!(target_os = "linux") {
            return None;
        }
        let writeback = Writeback::of(File::open(path).ok()?);
        writeback.written(0, 0);
        Some(writeback)
    }

    /// `len` bytes from `offset` were written: start writing them out. A `len` of 0 means
    /// to the end of the file.
    pub fn written(&self, offset: u64, len: u64) {
        if let Some(tx) = &self.ranges {
            let _ = tx.send((offset, len));
        }
    }
}

impl Drop for Writeback {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        self.ranges = None;
        if let Some(helper) = self.helper.take() {
            let _ = helper.join();
        }
    }
}

#[cfg(target_os = "linux")]
fn start(file: &File, offset: u64, len: u64) {
    use std::os::fd::AsRawFd;
    let (Ok(offset), Ok(len)) = (i64::try_from(offset), i64::try_from(len)) else {
        return;
    };
    // SAFETY: a plain system call on a descriptor this thread owns (`file` outlives the
    // call); it reads and writes no memory of this process. SYNC_FILE_RANGE_WRITE alone
    // only starts writes of dirty pages: it changes no data and consumes no error.
    #[allow(unsafe_code)]
    // reason: std has no binding for sync_file_range, and rustix has none either
    let _ = unsafe {
        libc::sync_file_range(file.as_raw_fd(), offset, len, libc::SYNC_FILE_RANGE_WRITE)
    };
}

#[cfg(not(target_os = "linux"))]
fn start(_file: &File, _offset: u64, _len: u64) {}
