//! The evidence file: validated, opened read-only, mapped. The one place the file map is made.

use std::fs::File;
use std::path::{Path, PathBuf};

use memmap2::Mmap;

use super::fault::Watch;
use crate::base::error::Error;
use crate::base::files::FileStamp;
use crate::base::paths::check_regular_file;

/// The source database, mapped read-only.
pub struct Source {
    /// The path as given.
    pub path: PathBuf,
    /// Catches a read past the end of a file that shrank under the map (declared before
    /// the map: it is dropped first).
    watch: Option<Watch>,
    map: Option<Mmap>,
    /// The file as the file system described it when it was mapped (none when it could
    /// not say: equal to no later description).
    opened: Option<FileStamp>,
    /// The descriptor, kept open as long as the map: closing any descriptor of a file
    /// drops the process's POSIX locks on it, SQLite's included (the output is hashed
    /// while SQLite still has it open).
    _file: File,
}

impl Source {
    /// Validates `path` (exists, regular file, readable) and maps it read-only.
    pub fn open(path: &Path) -> Result<Source, Error> {
        let meta = check_regular_file(path)?;
        let file = File::open(path).map_err(|e| Error::Source {
            path: path.to_owned(),
            source: e,
        })?;
        let opened = file.metadata().ok().map(|m| FileStamp::of(&m));
        if meta.len() == 0 {
            // A zero-length file cannot be mapped; it is simply empty.
            return Ok(Source {
                path: path.to_owned(),
                watch: None,
                map: None,
                opened,
                _file: file,
            });
        }
        // SAFETY: the evidence file is opened read-only and mapped read-only; nothing in this
        // process writes to it, and the salvage procedure requires that nothing else writes
        // to the evidence while we run (a quarantined copy). Bytes changed underneath us
        // could only give wrong findings, never memory unsafety in `pager`, which treats
        // every byte as untrusted and checks every bound.
        #[allow(unsafe_code)]
        // reason: memory-mapping is the only way to read a 2 GB file at 1 GB/s without copying it
        let map = unsafe { Mmap::map(&file) }.map_err(|e| Error::Source {
            path: path.to_owned(),
            source: e,
        })?;
        Ok(Source {
            path: path.to_owned(),
            watch: Some(Watch::new(&map)),
            map: Some(map),
            opened,
            _file: file,
        })
    }

    /// Whether a read found the file shorter than when it was mapped (what lay past its
    /// new end read as zeros).
    pub fn shrank(&self) -> bool {
        self.watch.as_ref().is_some_and(Watch::shrank)
    }

    /// How the file is known to have changed since it was mapped, if it did: a read
    /// found it shorter, or the file at its path has another inode, length or
    /// modification time. A hash read after a change sees the changed bytes, so a change
    /// made where the run had already read, but before the first hash got there, hashes
    /// the same twice: a write moves the modification time (to the kernel clock's tick:
    /// a write in the same tick as the one before it, just before the run opened the
    /// file, may not).
    pub fn changed(&self) -> Option<&'static str> {
        if self.shrank() {
            return Some("it was cut short while it was read");
        }
        match std::fs::metadata(&self.path) {
            Err(_) => Some("it cannot be found at its path any more"),
            Ok(m)
                if !self
                    .opened
                    .is_some_and(|o| o.same_bytes(&FileStamp::of(&m))) =>
            {
                Some("its modification time, length or inode changed during the run")
            }
            Ok(_) => None,
        }
    }

    /// The file's bytes.
    pub fn bytes(&self) -> &[u8] {
        self.map.as_deref().unwrap_or_default()
    }

    /// Asks the kernel to read the file into the page cache, in order, a window at a time,
    /// while `go_on` holds: readers that jump about the file (a walk of a tree, a load in
    /// key order) then find many of its pages read ahead at the disk's sequential speed.
    /// Linux reads at most the device's read-ahead size of each window (8 MiB of 32 on the
    /// bench machine), and its own read-ahead goes on from there as those pages are read.
    /// Asking for every byte did worse on a 20 GB file not in the cache: the requests ran
    /// ahead of the readers and pushed out of the cache what they had not read yet (87.7 s
    /// in steps of 128 KiB and 113.5 s in steps of 8 MiB, against 77.9 s). Nothing is
    /// mapped into this process (its resident memory does not grow), and pages already in
    /// the cache cost a lookup each.
    pub fn prefetch(&self, go_on: impl Fn() -> bool) {
        let Some(map) = &self.map else { return };
        let mut offset = 0;
        while offset < map.len() && go_on() {
            let len = PREFETCH.min(map.len() - offset);
            let _ = map.advise_range(memmap2::Advice::WillNeed, offset, len);
            offset += len;
        }
    }

    /// Lets go of the mapped pages this process holds (they stay in the page cache and are
    /// read back on the next access), so that reading a large file does not grow the
    /// process's resident memory with it.
    pub fn release_resident(&self) {
        self.release_range(0, self.bytes().len());
    }

    /// Lets go of the mapped pages of `len` bytes from `offset` (a multiple of the
    /// memory page size), as [`Source::release_resident`] does for the whole map: a
    /// sequential pass keeps only what it is reading resident, and pages another thread
    /// is reading elsewhere in the map stay mapped.
    fn release_range(&self, offset: usize, len: usize) {
        if let Some(map) = &self.map {
            // SAFETY: MADV_DONTNEED on a read-only shared file mapping only drops this
            // process's page-table entries; the next access faults the same file bytes in
            // again from the page cache. Nothing writes through the mapping, so no data can
            // be lost, and every slice borrowed from it keeps seeing the file's contents.
            #[allow(unsafe_code)]
            // reason: the advice is "unchecked" only because it is destructive for private or written mappings, which this is not
            let _ = unsafe {
                map.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, offset, len)
            };
        }
    }
}

/// Resident bytes of mapped evidence a run may hold before letting go of them.
pub const RESIDENT_LIMIT: u64 = 64 << 20;

/// Keeps the mapped pages a process holds under a limit. Reading through a map makes
/// every touched page resident, and the kernel maps more than the page read on each
/// fault: the pages around it ("fault-around"), and on newer kernels the whole folio of
/// the page cache that holds it, a megabyte or two where readahead filled the cache (one
/// byte read every 4 MiB of a 20 GB file mapped 1.1 MiB each). What is resident cannot
/// be counted from what was read: every megabyte reported read, and at least every
/// [`CHECK_PERIOD`] of reading, the process's resident file pages are measured
/// (`/proc/self/statm`), and all are let go of when they pass the limit.
pub struct Residency<'s> {
    sources: Vec<&'s Source>,
    since: u64,
    /// Reads reported since the clock was last looked at.
    calls: u32,
    /// When the resident pages were last measured.
    measured: std::time::Instant,
    limit: u64,
    /// `/proc/self/statm`, kept open: each measurement is one read.
    statm: Option<File>,
}

/// Bytes reported read between two measurements.
const CHECK_EVERY: u64 = 1 << 20;

/// The longest time between two measurements while reads are reported: a reader that
/// jumps about the file can map whole folios at tens of gigabytes a second.
const CHECK_PERIOD: std::time::Duration = std::time::Duration::from_millis(2);

/// Reported reads between two looks at the clock.
const CLOCK_EVERY: u32 = 8;

impl<'s> Residency<'s> {
    /// Keeps the resident pages of `sources` under about `limit` bytes.
    pub fn new(sources: Vec<&'s Source>, limit: u64) -> Residency<'s> {
        Residency {
            sources,
            since: 0,
            calls: 0,
            measured: std::time::Instant::now(),
            limit,
            statm: File::open("/proc/self/statm").ok(),
        }
    }

    /// Records that `bytes` more of the sources were read.
    pub fn read(&mut self, bytes: u64) {
        self.since += bytes;
        self.calls += 1;
        let clock = self.calls >= CLOCK_EVERY;
        if clock {
            self.calls = 0;
        }
        if self.since >= CHECK_EVERY || (clock && self.measured.elapsed() >= CHECK_PERIOD) {
            self.measure();
        }
    }

    /// Measures the resident pages now, and lets go of them all past the limit.
    fn measure(&mut self) {
        self.since = 0;
        self.calls = 0;
        self.measured = std::time::Instant::now();
        if resident_file_bytes(self.statm.as_ref()).is_none_or(|r| r > self.limit) {
            self.release();
        }
    }

    /// The write-ahead log `wal` read frame by frame, each frame told to this residency:
    /// a log of gigabytes does not stay resident.
    pub fn read_wal<'w>(&mut self, wal: &'w Source) -> Result<pager::Wal<'w>, pager::Finding> {
        pager::read_wal_telling(wal.bytes(), &mut |n| self.read(n))
    }

    /// Lets go of every resident page now.
    pub fn release(&mut self) {
        for s in &self.sources {
            s.release_resident();
        }
    }
}

/// The folios of the mapped evidence its readers entered since their maps were last let
/// go of, counted exactly: told of each page image a database hands out
/// ([`pager::Database::observed`]), on any thread. A reader that jumps about a file (the
/// survey's walk of a tree, the load's walk beside it, SQLite's check of the source, a
/// page read from a log of gigabytes) maps a whole folio (up to 2 MiB) at each page in
/// another one; counting what readers said they read and measuring the resident pages
/// every so often left the peaks between two measurements to chance (the kernel's
/// maximum 260 to 510 MiB on the 2 GB store with a log of 10,000 commits, where the
/// largest sample was some 170 MiB). Here every folio entered is counted as it is
/// entered, once until the maps are let go of, and the reader that enters one past
/// [`RESIDENT_LIMIT`] lets go of them all at once: one call per map, where letting go of
/// each folio a reader left behind (tried) cost a call and the other core's TLB flush
/// each, 400,000 calls on that store and twice the system time.
pub struct EnteredFolios<'s> {
    /// Each file's map: its first byte's address and its length.
    maps: Vec<(usize, usize, &'s Source)>,
    /// The folios entered since the maps were last let go of, by the address of their
    /// first byte.
    entered: std::sync::Mutex<Vec<usize>>,
    /// How many times the maps were let go of: a folio a thread entered before the last
    /// time is mapped again when it is read again, and counted again.
    released: std::sync::atomic::AtomicUsize,
}

thread_local! {
    /// The folio this thread entered last (its address, plus one; 0 for none), with the
    /// counter it was entered under (its address) and that counter's releases then: a
    /// page in the same folio as the page before it, no release between them, is told
    /// without taking the lock.
    static LAST_FOLIO: std::cell::Cell<(usize, usize, usize)> =
        const { std::cell::Cell::new((0, 0, 0)) };
}

/// Folios entered between two lets-go of the maps.
const FOLIOS_HELD: usize = RESIDENT_LIMIT as usize / FOLIO;

impl<'s> EnteredFolios<'s> {
    /// None entered yet, of the files `sources` map.
    pub fn new(sources: Vec<&'s Source>) -> EnteredFolios<'s> {
        EnteredFolios {
            maps: sources
                .into_iter()
                .map(|s| (s.bytes().as_ptr() as usize, s.bytes().len(), s))
                .collect(),
            entered: std::sync::Mutex::new(Vec::with_capacity(FOLIOS_HELD + 1)),
            released: std::sync::atomic::AtomicUsize::new(0),
        }
    }

    /// Records that `image` was read: its folio (and the next, for an image that runs
    /// into it: a log's frames do not start on a page boundary) is counted unless it was
    /// entered since the maps were last let go of; past the limit, every map is let go
    /// of. Bytes that are not in one of the maps (a log's page images held in memory)
    /// are not counted.
    pub fn entered(&self, image: &[u8]) {
        let first = image.as_ptr() as usize;
        let last = first + image.len().saturating_sub(1);
        let Some(&(base, _, _)) = self
            .maps
            .iter()
            .find(|(base, len, _)| first >= *base && first - base < *len)
        else {
            return;
        };
        // The folio in the file: the page cache's folios are aligned to their size there.
        let folio = |at: usize| base + (at - base) / FOLIO * FOLIO;
        self.enter(folio(first));
        if folio(last) != folio(first) {
            self.enter(folio(last));
        }
    }

    /// Counts the folio at address `folio`, letting go of every map past the limit.
    fn enter(&self, folio: usize) {
        use std::sync::atomic::Ordering::Relaxed;
        let me = (
            std::ptr::from_ref(self).addr(),
            folio + 1,
            self.released.load(Relaxed),
        );
        if LAST_FOLIO.with(|l| l.replace(me)) == me {
            return;
        }
        let mut entered = self
            .entered
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if entered.contains(&folio) {
            return;
        }
        entered.push(folio);
        if entered.len() > FOLIOS_HELD {
            // Under the lock: the next count starts once every map is let go of. Counted
            // from before (tried), a reader entered 30 folios while another let go of the
            // maps behind it: 128 MiB mapped where 64 were meant.
            for (_, _, source) in &self.maps {
                source.release_resident();
            }
            entered.clear();
            self.released.fetch_add(1, Relaxed);
        }
    }
}

/// Bytes of a memory-mapped file one read can make resident: on newer kernels (6.18) a
/// fault maps the whole folio of the page cache that holds the page, up to 2 MiB where
/// readahead filled the cache (older kernels map 64 KiB around it). Folios are aligned
/// to their size in the file.
pub const FOLIO: usize = 2 << 20;

/// How often the [`Governor`] measures the process's resident file pages.
const GOVERN_EVERY: std::time::Duration = std::time::Duration::from_millis(5);

/// Keeps the mapped pages a process holds under a limit whatever reads them: a thread
/// measures them every [`GOVERN_EVERY`] and lets go of them all when they pass the limit,
/// until the governor is dropped. Readers that tell a [`Residency`] what they read are
/// held closer to the limit; this holds the ones that do not, or not often enough (a
/// pass over a 20 GB file's orphan pages made 300 MB resident in 30 ms between two of its
/// measurements).
pub struct Governor {
    /// Dropped to stop the thread.
    stop: Option<std::sync::mpsc::Sender<()>>,
}

impl Governor {
    /// Starts governing `sources` at `limit` bytes on a thread of `scope`; with no thread
    /// (none can be started, or no `/proc/self/statm` to measure by) nothing is governed.
    pub fn start<'scope, 'env>(
        scope: &'scope std::thread::Scope<'scope, 'env>,
        sources: Vec<&'env Source>,
        limit: u64,
    ) -> Governor {
        use std::sync::mpsc::{channel, RecvTimeoutError};
        let (stop, stopped) = channel::<()>();
        let mut residency = Residency::new(sources, limit);
        if residency.statm.is_none() {
            return Governor { stop: None };
        }
        let spawned = std::thread::Builder::new()
            .name("salvage-residency".into())
            .spawn_scoped(scope, move || {
                while let Err(RecvTimeoutError::Timeout) = stopped.recv_timeout(GOVERN_EVERY) {
                    residency.measure();
                }
            });
        Governor {
            stop: spawned.ok().map(|_| stop),
        }
    }
}

impl Drop for Governor {
    fn drop(&mut self) {
        // The thread's channel is closed: it ends at once.
        self.stop.take();
    }
}

/// Reads a source ahead ([`Source::prefetch`]) on a thread of low priority until it is
/// dropped or `go_on` says no: it only helps the readers of a run, and ends with the run
/// however the run ends.
pub struct ReadAhead {
    /// Dropped to stop the thread.
    _stop: std::sync::mpsc::Sender<()>,
}

impl ReadAhead {
    /// Starts reading `source` ahead on a thread of `scope` (none, when no thread can be
    /// started: the readers then read the pages on their own faults).
    pub fn start<'scope, 'env>(
        scope: &'scope std::thread::Scope<'scope, 'env>,
        source: &'env Source,
        go_on: impl Fn() -> bool + Send + 'env,
    ) -> ReadAhead {
        use std::sync::mpsc::{channel, TryRecvError};
        let (stop, stopped) = channel::<()>();
        let _ = std::thread::Builder::new()
            .name("salvage-read-ahead".into())
            .spawn_scoped(scope, move || {
                crate::base::priority::background();
                source.prefetch(|| stopped.try_recv() == Err(TryRecvError::Empty) && go_on());
            });
        ReadAhead { _stop: stop }
    }
}

/// Bytes of file-backed (and shared) memory resident in this process, from
/// `/proc/self/statm` (read again from its start); `None` where that is not available.
fn resident_file_bytes(statm: Option<&File>) -> Option<u64> {
    use std::os::unix::fs::FileExt as _;
    let mut buf = [0u8; 128];
    let n = statm?.read_at(&mut buf, 0).ok()?;
    let text = std::str::from_utf8(buf.get(..n)?).ok()?;
    let shared: u64 = text.split_whitespace().nth(2)?.parse().ok()?;
    Some(shared * 4096)
}

/// The SHA-256 of the file at `path`, in lower-case hex: the file is opened and mapped
/// afresh (so a file replaced at that path is noticed), hashed through the map without
/// copying it, and the map's pages are let go of as the hash moves on, so that resident
/// memory stays flat.
pub fn sha256_file(path: &Path) -> Result<String, Error> {
    Ok(Source::open(path)?.sha256())
}

/// The two digests of a file read whole once: the SHA-256 that names it in a case file,
/// and the BLAKE3 that a second reading is compared with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Digests {
    /// SHA-256, lower-case hex.
    pub sha256: String,
    /// BLAKE3, lower-case hex.
    pub blake3: String,
}

/// Bytes [`Source::prefetch`] asks for at once.
const PREFETCH: usize = 32 << 20;

/// Bytes hashed between two releases of the map's pages.
const CHUNK: usize = 8 << 20;

impl Source {
    /// Runs `f` over the mapped bytes in order, a chunk at a time, letting go of each
    /// chunk's pages once `f` has read it, so that resident memory stays flat.
    fn each_chunk(&self, f: impl FnMut(&[u8])) {
        self.each_chunk_while(&|| true, f);
    }

    /// [`Source::each_chunk`], asking `go_on` before each chunk: false when it said no.
    fn each_chunk_while(&self, go_on: &dyn Fn() -> bool, mut f: impl FnMut(&[u8])) -> bool {
        for (i, chunk) in self.bytes().chunks(CHUNK).enumerate() {
            if !go_on() {
                return false;
            }
            f(chunk);
            self.release_range(i * CHUNK, chunk.len());
        }
        true
    }

    /// The SHA-256 of the mapped bytes, in lower-case hex.
    pub fn sha256(&self) -> String {
        use sha2::{Digest, Sha256};
        let mut h = Sha256::new();
        self.each_chunk(|c| h.update(c));
        hex(&h.finalize())
    }

    /// The BLAKE3 of the mapped bytes, in lower-case hex: a cryptographic hash as strong
    /// as SHA-256 for telling whether bytes changed, about four times as fast on one core
    /// (it hashes many blocks at once with the vector unit).
    pub fn blake3(&self) -> String {
        let mut h = blake3::Hasher::new();
        self.each_chunk(|c| {
            h.update(c);
        });
        h.finalize().to_hex().to_string()
    }

    /// Both digests, from one read (each chunk is hashed by the second while the first
    /// has just brought it into the processor's cache), asking `go_on` before each chunk:
    /// `None` when it said no.
    pub fn digests_while(&self, go_on: &dyn Fn() -> bool) -> Option<Digests> {
        use sha2::{Digest, Sha256};
        let (mut sha, mut b3) = (Sha256::new(), blake3::Hasher::new());
        let whole = self.each_chunk_while(go_on, |c| {
            sha.update(c);
            b3.update(c);
        });
        whole.then(|| Digests {
            sha256: hex(&sha.finalize()),
            blake3: b3.finalize().to_hex().to_string(),
        })
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    /// The resident bytes of the map that starts at `base`, from `/proc/self/smaps`.
    fn resident_of_map(base: usize) -> u64 {
        let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
        let mut lines = smaps.lines();
        while let Some(line) = lines.next() {
            let start = line.split('-').next().unwrap_or("");
            if usize::from_str_radix(start, 16).ok() != Some(base) {
                continue;
            }
            for line in lines.by_ref() {
                if let Some(kb) = line.strip_prefix("Rss:") {
                    let kb = kb.trim().trim_end_matches("kB").trim();
                    return kb.parse::<u64>().unwrap() * 1024;
                }
            }
        }
        panic!("no map at {base:#x}");
    }

    /// A file of two folios more than the limit holds, of 7s, in the temporary folder,
    /// mapped.
    fn mapped(name: &str) -> (std::path::PathBuf, Source) {
        let path = std::env::temp_dir().join(format!("salvage-{name}-{}", std::process::id()));
        std::fs::write(&path, vec![7u8; (FOLIOS_HELD + 2) * FOLIO]).unwrap();
        let source = Source::open(&path).unwrap();
        (path, source)
    }

    /// Pages read in as many folios as the limit holds stay mapped; the page read in the
    /// next folio lets go of them all first, so that only its own folio is mapped after
    /// it. A folio entered again, or bytes outside the maps, count nothing.
    #[test]
    fn the_folio_past_the_limit_lets_go_of_the_maps() {
        let (path, source) = mapped("folios");
        let bytes = source.bytes();
        let base = bytes.as_ptr() as usize;
        let entered = EnteredFolios::new(vec![&source]);
        let page = 4096;
        let mut sum = 0u64;
        let mut read = |i: usize, at: usize| {
            let image = &bytes[i * FOLIO + at..][..page];
            entered.entered(image);
            sum += u64::from(std::hint::black_box(image)[0]);
        };
        for i in 0..FOLIOS_HELD {
            read(i, 0);
            // Again, and another page of the same folio: counted once.
            read(i, page);
        }
        read(0, 2 * page);
        let elsewhere = vec![1u8; page];
        entered.entered(&elsewhere);
        let held = resident_of_map(base);
        assert!(held >= (FOLIOS_HELD * 2 * page) as u64, "{held}");
        read(FOLIOS_HELD, 0);
        let after = resident_of_map(base);
        assert!(after <= FOLIO as u64, "{held} then {after}");
        // The folio that passed the limit is the first of the next count: read again, it
        // counts nothing, and the 32nd after it lets go of the maps again.
        read(FOLIOS_HELD, page);
        for i in 0..FOLIOS_HELD - 1 {
            read(i, 0);
        }
        let held = resident_of_map(base);
        assert!(held >= (FOLIOS_HELD * page) as u64, "{held}");
        read(FOLIOS_HELD + 1, 0);
        let after = resident_of_map(base);
        assert!(after <= FOLIO as u64, "{held} then {after}");
        assert_eq!(sum, 7 * (3 * FOLIOS_HELD as u64 + 3));
        drop(source);
        let _ = std::fs::remove_file(&path);
    }

    /// An image that runs into the next folio (a log's frame) counts both.
    #[test]
    fn an_image_across_two_folios_counts_both() {
        let (path, source) = mapped("across");
        let bytes = source.bytes();
        let base = bytes.as_ptr() as usize;
        let entered = EnteredFolios::new(vec![&source]);
        let mut sum = 0u64;
        // Half the limit's images, each across a folio's end and the next one's start.
        for i in (1..FOLIOS_HELD).step_by(2) {
            let image = &bytes[i * FOLIO - 100..][..4096];
            entered.entered(image);
            sum += u64::from(std::hint::black_box(image)[0]);
        }
        let held = resident_of_map(base);
        assert!(held > 0);
        // The folios of those images, and this one: past the limit.
        let image = &bytes[FOLIOS_HELD * FOLIO + 8192..][..4096];
        entered.entered(image);
        sum += u64::from(std::hint::black_box(image)[0]);
        let after = resident_of_map(base);
        assert!(after <= FOLIO as u64, "{held} then {after}");
        assert!(sum > 0);
        drop(source);
        let _ = std::fs::remove_file(&path);
    }
}
