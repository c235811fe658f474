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
//! The helper holds a descriptor of the output of its own. Closing any descriptor of a
//! file drops every POSIX lock the process holds on it, SQLite's included, so the helper
//! is joined, and its descriptor closed, when its [`Writeback`] is dropped: the caller
//! drops it while SQLite has the output closed.

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
    jobs: Option<mpsc::Sender<Job>>,
    stop: Arc<AtomicBool>,
    helper: Option<JoinHandle<()>>,
    /// The file, kept here when there is no helper: runs are then written at once.
    file: Option<File>,
    /// Buffers written by the helper, to be filled again.
    spare: Option<mpsc::Receiver<Vec<u8>>>,
    /// Buffers handed to the helper and not yet back.
    out: usize,
    /// The first error of a write the helper made, until it is returned; the helper
    /// writes nothing after one.
    failed: Arc<Failed>,
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

impl Writeback {
    /// A helper that owns `file`, a descriptor of its own (closed when this is dropped);
    /// none when the thread cannot start, and the writes then wait for the commit's sync.
    pub fn of(file: File) -> Writeback {
        let mut writeback = Writeback {
            jobs: None,
            stop: Arc::new(AtomicBool::new(false)),
            helper: None,
            file: None,
            spare: None,
            out: 0,
            failed: Arc::new(Failed::default()),
        };
        if !cfg!(target_os = "linux") {
            writeback.file = Some(file);
            return writeback;
        }
        let (tx, rx) = mpsc::channel::<Job>();
        let (spare_tx, spare_rx) = mpsc::channel::<Vec<u8>>();
        let stopped = Arc::clone(&writeback.stop);
        let failed = Arc::clone(&writeback.failed);
        // The descriptor moves to the helper only once it runs: kept here otherwise.
        let (file_tx, file_rx) = mpsc::channel::<File>();
        let started = std::thread::Builder::new()
            .name("salvage-writeback".into())
            .spawn(move || {
                let Ok(file) = file_rx.recv() else { return };
                for job in rx {
                    let skip = stopped.load(Ordering::Relaxed);
                    match job {
                        Job::Start(offset, len) if !skip => start(&file, offset, len),
                        Job::Start(..) => {}
                        Job::Write(offset, mut buf) => {
                            if !skip && !failed.ever.load(Ordering::Acquire) {
                                match file.write_all_at(&buf, offset) {
                                    Ok(()) => start(&file, offset, buf.len() as u64),
                                    Err(e) => {
                                        *failed.error.lock().unwrap_or_else(|e| e.into_inner()) =
                                            Some(e);
                                        failed.ever.store(true, Ordering::Release);
                                    }
                                }
                            }
                            buf.clear();
                            let _ = spare_tx.send(buf);
                        }
                    }
                }
            });
        match started {
            Ok(helper) => {
                let _ = file_tx.send(file);
                writeback.jobs = Some(tx);
                writeback.helper = Some(helper);
                writeback.spare = Some(spare_rx);
            }
            Err(_) => writeback.file = Some(file),
        }
        writeback
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
        if let Some(tx) = &self.jobs {
            let _ = tx.send(Job::Start(offset, len));
        }
    }

    /// Writes `run` at `offset` (from the helper, which then starts its writeback, or
    /// here when there is none) and returns an empty buffer to fill next: one the helper
    /// has written, once [`IN_FLIGHT`] were out (this waits for it). An error of an
    /// earlier write is returned here, or by [`Writeback::wait`].
    pub fn write(&mut self, offset: u64, run: Vec<u8>) -> io::Result<Vec<u8>> {
        self.failed()?;
        let (Some(jobs), Some(spare)) = (&self.jobs, &self.spare) else {
            let Some(file) = &self.file else {
                return Err(io::Error::other("the output's descriptor is gone"));
            };
            file.write_all_at(&run, offset)?;
            let mut run = run;
            run.clear();
            return Ok(run);
        };
        let next = if self.out >= IN_FLIGHT {
            let back = spare
                .recv()
                .map_err(|_| io::Error::other("the output's writer thread ended"))?;
            self.out -= 1;
            back
        } else {
            Vec::with_capacity(run.capacity())
        };
        self.failed()?;
        jobs.send(Job::Write(offset, run))
            .map_err(|_| io::Error::other("the output's writer thread ended"))?;
        self.out += 1;
        Ok(next)
    }

    /// Waits until every run handed over is written; the first error of any.
    pub fn wait(&mut self) -> io::Result<()> {
        if let Some(spare) = &self.spare {
            while self.out > 0 {
                spare
                    .recv()
                    .map_err(|_| io::Error::other("the output's writer thread ended"))?;
                self.out -= 1;
            }
        }
        self.failed()
    }

    /// The error of a write the helper made (itself the first time it is asked for).
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

impl Drop for Writeback {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        self.jobs = None;
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
