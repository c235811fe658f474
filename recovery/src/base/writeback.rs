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
//! The bulk writer hands the helper its runs of pages to write as well
//! ([`Writeback::write`]): copying 2 GB into the page cache is a fifth of the bulk load's
//! time, and the helper does it on the second core while the load builds the next run.
//! The runs' buffers come back to be filled again, at most [`IN_FLIGHT`] of them out at
//! once.
//!
//! The helper shares the descriptor its [`Writeback`] was given, one of the output's own.
//! Closing any descriptor of a file drops every POSIX lock the process holds on it,
//! SQLite's included, so the helper is joined, and the descriptor closed, when the
//! [`Writeback`] is dropped: the caller drops it while SQLite has the output closed.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt as _;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread::JoinHandle;

/// Hands written ranges of one file to a helper thread that starts their writeback, and
/// runs of bytes for it to write. Dropping it skips what was not yet done and joins the
/// helper; [`Writeback::wait`] waits for every write handed over.
pub struct Writeback {
    /// The descriptor it was given, shared with the helper: closed once both are done.
    file: Arc<File>,
    /// None when the thread cannot start: runs are then written at once.
    helper: Option<Helper>,
}

/// The helper thread and what goes to it and comes back.
struct Helper {
    jobs: mpsc::Sender<Job>,
    /// Buffers it wrote, to be filled again.
    spare: mpsc::Receiver<Vec<u8>>,
    /// Buffers handed to it and not yet back.
    out: usize,
    /// Set when it is to skip what is left.
    stop: Arc<AtomicBool>,
    /// Its first failed write, until it is returned; it writes nothing after one.
    failed: Arc<Failed>,
    thread: JoinHandle<()>,
}

/// The helper's first failed write. The lock is taken only to store or take the error,
/// never while the helper writes.
#[derive(Default)]
struct Failed {
    ever: AtomicBool,
    error: Mutex<Option<io::Error>>,
}

/// What the helper is asked to do.
enum Job {
    /// Start the writeback of a range already written.
    Start(u64, u64),
    /// Write the bytes at the offset, then start their writeback.
    Write(u64, Vec<u8>),
}

/// Runs handed to the helper and not yet written, at most: with the one being filled,
/// what the writer holds in memory.
const IN_FLIGHT: usize = 2;

/// The helper's error when its thread is gone.
fn ended() -> io::Error {
    io::Error::other("the output's writer thread ended")
}

impl Writeback {
    /// A helper that owns `file`, a descriptor of its own (closed when this is dropped);
    /// none when the thread cannot start, and the writes then wait for the commit's sync.
    pub fn of(file: File) -> Writeback {
        let file = Arc::new(file);
        let helper = cfg!(target_os = "linux")
            .then(|| Helper::start(Arc::clone(&file)))
            .flatten();
        Writeback { file, helper }
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
        if let Some(h) = &self.helper {
            let _ = h.jobs.send(Job::Start(offset, len));
        }
    }

    /// Writes `run` at `offset` (from the helper, which then starts its writeback, or
    /// here when there is none) and returns an empty buffer to fill next: one the helper
    /// has written, once [`IN_FLIGHT`] were out (this waits for it). An error of an
    /// earlier write is returned here, or by [`Writeback::wait`].
    pub fn write(&mut self, offset: u64, run: Vec<u8>) -> io::Result<Vec<u8>> {
        let Some(h) = &mut self.helper else {
            self.file.write_all_at(&run, offset)?;
            let mut run = run;
            run.clear();
            return Ok(run);
        };
        h.failed()?;
        let next = if h.out >= IN_FLIGHT {
            let back = h.spare.recv().map_err(|_| ended())?;
            h.out -= 1;
            back
        } else {
            Vec::with_capacity(run.capacity())
        };
        h.failed()?;
        h.jobs.send(Job::Write(offset, run)).map_err(|_| ended())?;
        h.out += 1;
        Ok(next)
    }

    /// Waits until every run handed over is written; the first error of any.
    pub fn wait(&mut self) -> io::Result<()> {
        let Some(h) = &mut self.helper else {
            return Ok(());
        };
        while h.out > 0 {
            h.spare.recv().map_err(|_| ended())?;
            h.out -= 1;
        }
        h.failed()
    }
}

impl Helper {
    /// The helper thread, writing and starting writeback on `file`; none when it cannot
    /// start.
    fn start(file: Arc<File>) -> Option<Helper> {
        let (jobs, rx) = mpsc::channel::<Job>();
        let (spare_tx, spare) = mpsc::channel::<Vec<u8>>();
        let stop = Arc::new(AtomicBool::new(false));
        let failed = Arc::new(Failed::default());
        let (stopped, failing) = (Arc::clone(&stop), Arc::clone(&failed));
        let thread = std::thread::Builder::new()
            .name("salvage-writeback".into())
            .spawn(move || {
                for job in rx {
                    let skip = stopped.load(Ordering::Relaxed);
                    match job {
                        Job::Start(offset, len) if !skip => start(&file, offset, len),
                        Job::Start(..) => {}
                        Job::Write(offset, mut buf) => {
                            if !skip && !failing.ever.load(Ordering::Acquire) {
                                match file.write_all_at(&buf, offset) {
                                    Ok(()) => start(&file, offset, buf.len() as u64),
                                    Err(e) => failing.record(e),
                                }
                            }
                            buf.clear();
                            let _ = spare_tx.send(buf);
                        }
                    }
                }
            })
            .ok()?;
        Some(Helper {
            jobs,
            spare,
            out: 0,
            stop,
            failed,
            thread,
        })
    }

    /// The error of a write it made (itself the first time it is asked for).
    fn failed(&self) -> io::Result<()> {
        if !self.failed.ever.load(Ordering::Acquire) {
            return Ok(());
        }
        match self
            .failed
            .error
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
        {
            Some(e) => Err(e),
            None => Err(io::Error::other("an earlier write of the output failed")),
        }
    }
}

impl Failed {
    fn record(&self, e: io::Error) {
        *self.error.lock().unwrap_or_else(|e| e.into_inner()) = Some(e);
        self.ever.store(true, Ordering::Release);
    }
}

impl Drop for Writeback {
    fn drop(&mut self) {
        if let Some(Helper {
            jobs, stop, thread, ..
        }) = self.helper.take()
        {
            stop.store(true, Ordering::Relaxed);
            drop(jobs);
            let _ = thread.join();
        }
    }
}

#[cfg(target_os = "linux")]
fn start(file: &File, offset: u64, len: u64) {
    use std::os::fd::AsRawFd;
    let (Ok(offset), Ok(len)) = (i64::try_from(offset), i64::try_from(len)) else {
        return;
    };
    // SAFETY: a plain system call on a descriptor this thread holds (`file` outlives the
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
