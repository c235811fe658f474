//! The write-ahead log ("The WAL File Format"): a header, then frames, each a frame
//! header and one page image. A frame is valid when its salts match the header's and its
//! cumulative checksum is right; the log's content is every valid frame up to the last
//! valid commit frame. Frames after it, or after the first broken one, are ignored and
//! counted.
//!
//! ```text
//! WAL header (32 bytes)                        frame header (24 bytes)
//! 0  magic 0x377f0682 / 0x377f0683             0  page number
//! 4  format version 3007000                    4  database size after commit, else 0
//! 8  page size                                 8  salt-1     12 salt-2
//! 12 checkpoint sequence                       16 checksum-1 20 checksum-2
//! 16 salt-1   20 salt-2
//! 24 checksum-1   28 checksum-2
//! ```

use std::collections::BTreeMap;

use crate::cursor::u32_at;
use crate::finding::Finding;
use crate::types::{PageNo, PageSize};

/// WAL header length.
pub const WAL_HEADER_LEN: usize = 32;
/// Frame header length.
pub const WAL_FRAME_HEADER_LEN: usize = 24;

/// The WAL header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WalHeader {
    /// Magic number: 0x377f0682 (checksums over little-endian words) or 0x377f0683 (big-endian).
    pub magic: u32,
    /// File format version (3007000).
    pub format_version: u32,
    /// Database page size.
    pub page_size: u32,
    /// Checkpoint sequence number.
    pub checkpoint_seq: u32,
    /// Salt-1: random, incremented with each checkpoint.
    pub salt1: u32,
    /// Salt-2: a different random number for each checkpoint.
    pub salt2: u32,
    /// Checksum-1 of the first 24 bytes.
    pub checksum1: u32,
    /// Checksum-2 of the first 24 bytes.
    pub checksum2: u32,
}

/// A frame header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WalFrameHeader {
    /// The page this frame holds an image of.
    pub page_no: u32,
    /// For commit frames, the database size in pages after the commit; 0 otherwise.
    pub db_size_after_commit: u32,
    /// Salt-1 copied from the header.
    pub salt1: u32,
    /// Salt-2 copied from the header.
    pub salt2: u32,
    /// Cumulative checksum-1.
    pub checksum1: u32,
    /// Cumulative checksum-2.
    pub checksum2: u32,
}

impl WalFrameHeader {
    /// Whether this frame ends a transaction.
    pub fn is_commit(&self) -> bool {
        self.db_size_after_commit != 0
    }
}

/// A 1-based frame number.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FrameNo(pub u32);

/// The committed content of a write-ahead log.
#[derive(Clone, Debug)]
pub struct Wal<'a> {
    /// The header.
    pub header: WalHeader,
    /// Frames present in the file (whole frames only).
    pub frames_present: u32,
    /// Valid frames up to and including the last valid commit frame.
    pub frames_committed: u32,
    /// For each page, the image from its newest committed frame, with that frame's number.
    pub pages: BTreeMap<PageNo, (FrameNo, &'a [u8])>,
    /// Database size in pages after the last valid commit, if any commit is valid.
    pub db_size: Option<u32>,
    /// The committed transactions, in commit order: the history the pages sum up.
    pub commits: Vec<WalCommit<'a>>,
    /// Frames that are not part of the database but are still evidence: valid frames of
    /// a transaction that never committed, and frames of an earlier generation of the log.
    pub strays: Vec<StrayFrame<'a>>,
    /// Why frames were ignored, and other damage.
    pub findings: Vec<Finding>,
    /// Of the log's current generation, the frames from the first that fails its checksum
    /// on that mark a commit (0 when none fails). One is a transaction the break lost.
    /// None: the frames past the break belong to one transaction that never committed, as
    /// a crash leaves it: SQLite writes a page again in place when an open transaction
    /// already put it in the log, and puts that frame's checksum right only at the commit,
    /// so the open transaction's frames fail their checksums meanwhile.
    pub commits_past_break: u32,
}

/// One committed transaction of the log: its frames, in log order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WalCommit<'a> {
    /// Its first frame.
    pub first: FrameNo,
    /// Its commit frame.
    pub last: FrameNo,
    /// The database size in pages after it.
    pub db_size: u32,
    /// Each page it wrote, with the frame and image; a page written twice in one
    /// transaction is listed twice (the later frame wins).
    pub frames: Vec<(PageNo, FrameNo, &'a [u8])>,
}

/// A frame outside the committed log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StrayFrame<'a> {
    /// Its number in the file.
    pub no: FrameNo,
    /// Its header, as stored.
    pub header: WalFrameHeader,
    /// The page image.
    pub image: &'a [u8],
    /// Why it is not part of the database.
    pub kind: StrayKind,
}

/// Why a frame with a page image is not part of the database.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StrayKind {
    /// Its checksum is right and its salts are the log's, but no commit frame follows:
    /// a transaction that never committed. Also a frame past a checksum break with no
    /// commit of its generation after it (`Wal::commits_past_break` 0): the open
    /// transaction's, whose checksums SQLite puts right only at its commit.
    Uncommitted,
    /// Its salts are not the log's: written before the log was last reset by a
    /// checkpoint, and overwritten from the start since. `chained` when its checksum
    /// follows from the frame before it (same salts): its bytes are as that generation
    /// wrote them. The first frame of such a run has no checksum to follow from.
    OlderGeneration {
        /// Whether its checksum was verified from the previous frame's.
        chained: bool,
    },
}

impl<'a> Wal<'a> {
    /// Whether the database whose header gives page size `database` (`None`: no valid
    /// one) may be read with this log: the log's page size agrees, the database gives
    /// none, or the log's own newest image of page 1 gives the log's. SQLite takes the
    /// page size from page 1 as the log leaves it, never from the log's header; frames of
    /// another size are not the database's pages.
    pub fn page_size_proven(&self, database: Option<PageSize>) -> bool {
        let Some(own) = PageSize::new(self.header.page_size) else {
            return false;
        };
        let page_one = self
            .pages
            .get(&PageNo::FIRST)
            .and_then(|(_, image)| Some(u16::from_be_bytes([*image.get(16)?, *image.get(17)?])))
            .and_then(PageSize::from_header_field);
        database.is_none_or(|d| d == own) || page_one == Some(own)
    }

    /// The log as it stood after its commit `n` (1-based; 0: before the first): what
    /// SQLite would have read at that moment, over a main file not yet checkpointed past
    /// it.
    pub fn as_of(&self, n: usize) -> Wal<'a> {
        let commits: Vec<WalCommit<'a>> = self.commits.iter().take(n).cloned().collect();
        let mut pages = BTreeMap::new();
        for c in &commits {
            for (p, no, image) in &c.frames {
                pages.insert(*p, (*no, *image));
            }
        }
        let db_size = commits.last().map(|c| c.db_size);
        if let Some(size) = db_size {
            pages.retain(|p, _| p.get() <= size);
        }
        Wal {
            header: self.header,
            frames_present: self.frames_present,
            frames_committed: commits.last().map_or(0, |c| c.last.0),
            pages,
            db_size,
            commits,
            strays: Vec::new(),
            findings: self.findings.clone(),
            commits_past_break: self.commits_past_break,
        }
    }
}

// SQLite: walChecksumBytes (wal.c). `big_endian` is true for magic 0x377f0683.
fn checksum(big_endian: bool, data: &[u8], seed: (u32, u32)) -> (u32, u32) {
    let (mut s1, mut s2) = seed;
    for pair in data.chunks_exact(8) {
        let word = |i: usize| -> u32 {
            let b: [u8; 4] = pair
                .get(i..i + 4)
                .and_then(|b| b.try_into().ok())
                .unwrap_or([0; 4]);
            if big_endian {
                u32::from_be_bytes(b)
            } else {
                u32::from_le_bytes(b)
            }
        };
        s1 = s1.wrapping_add(word(0)).wrapping_add(s2);
        s2 = s2.wrapping_add(word(4)).wrapping_add(s1);
    }
    (s1, s2)
}

/// Reads a write-ahead log. `Err` when the header itself is unusable (no frame can then
/// be trusted); frame damage is a finding and ends the committed content there.
pub fn read_wal(bytes: &[u8]) -> Result<Wal<'_>, Finding> {
    read_wal_telling(bytes, &mut |_| {})
}

/// [`read_wal`], telling `read` the bytes of each frame it reads, in file order, as it
/// reads them (a caller that maps the log keeps its resident pages bounded). Each frame
/// is read once, but for an earlier generation's frames past a broken frame, read again
/// as such (see `past_break`).
pub fn read_wal_telling<'a>(
    bytes: &'a [u8],
    read: &mut dyn FnMut(u64),
) -> Result<Wal<'a>, Finding> {
    let (header, big_endian, page_size, seed) = read_header(bytes)?;
    let frame_len = WAL_FRAME_HEADER_LEN + page_size.bytes();
    let body = bytes.get(WAL_HEADER_LEN..).unwrap_or_default();
    let frames_present = (body.len() / frame_len) as u32;
    let mut wal = Wal {
        header,
        frames_present,
        frames_committed: 0,
        pages: BTreeMap::new(),
        db_size: None,
        commits: Vec::new(),
        strays: Vec::new(),
        findings: Vec::new(),
        commits_past_break: 0,
    };
    // Frames of the transaction not committed yet, each with its header.
    let mut pending: Vec<(PageNo, FrameNo, &[u8], WalFrameHeader)> = Vec::new();
    let mut sum = seed;
    // The frames from the `skip`th on, each decoded as it is reached: the frames skipped
    // are not read (skipped after decoding, each frame's header is read, and a log of
    // gigabytes mapped whole where the optimizer does not take the reads out).
    let frames = |skip: usize| {
        body.chunks_exact(frame_len)
            .enumerate()
            .skip(skip)
            .map(|(i, frame)| {
                let image = frame.get(WAL_FRAME_HEADER_LEN..).unwrap_or_default();
                (FrameNo(i as u32 + 1), frame_header(frame), frame, image)
            })
    };
    // Where the current generation's frames end: an older frame, or a broken one.
    let mut rest = None;
    for (no, fh, frame, image) in frames(0) {
        read(frame_len as u64);
        if (fh.salt1, fh.salt2) != (header.salt1, header.salt2) {
            // Frames of an earlier generation of the log: normal after a checkpoint reset.
            wal.findings
                .push(Finding::WalFrameSaltMismatch { frame: no.0 });
            rest = Some(no);
            break;
        }
        sum = checksum(big_endian, frame.get(..8).unwrap_or_default(), sum);
        sum = checksum(big_endian, image, sum);
        if sum != (fh.checksum1, fh.checksum2) {
            wal.findings
                .push(Finding::WalFrameChecksumMismatch { frame: no.0 });
            let (later, run) = past_break(body, frame_len, no, &header, read);
            wal.commits_past_break = u32::from(fh.is_commit()) + later;
            if wal.commits_past_break == 0 {
                // The open transaction's frames: evidence of what it was writing, as its
                // frames before the break are (see `StrayKind::Uncommitted`); the frames
                // of an earlier generation after them, as after any current generation.
                rest = Some(FrameNo(no.0 + 1 + run.len() as u32));
                pending.extend(PageNo::new(fh.page_no).map(|p| (p, no, image, fh)));
                pending.extend(
                    run.into_iter()
                        .filter_map(|(n, h, image)| Some((PageNo::new(h.page_no)?, n, image, h))),
                );
            }
            break;
        }
        let Some(page) = PageNo::new(fh.page_no) else {
            // No page of SQLite's: the log ends here, as at a broken checksum.
            wal.findings
                .push(Finding::WalFrameChecksumMismatch { frame: no.0 });
            let (later, _) = past_break(body, frame_len, no, &header, read);
            wal.commits_past_break = u32::from(fh.is_commit()) + later;
            break;
        };
        pending.push((page, no, image, fh));
        if fh.is_commit() {
            let first = pending.first().map_or(no, |(_, n, _, _)| *n);
            for (p, n, img, _) in &pending {
                wal.pages.insert(*p, (*n, *img));
            }
            wal.commits.push(WalCommit {
                first,
                last: no,
                db_size: fh.db_size_after_commit,
                frames: pending
                    .drain(..)
                    .map(|(p, n, img, _)| (p, n, img))
                    .collect(),
            });
            wal.frames_committed = no.0;
            wal.db_size = Some(fh.db_size_after_commit);
        }
    }
    wal.strays
        .extend(pending.iter().map(|(_, no, image, header)| StrayFrame {
            no: *no,
            header: *header,
            image,
            kind: StrayKind::Uncommitted,
        }));
    let skip = rest.map_or(usize::MAX, |n| n.0 as usize - 1);
    wal.strays
        .extend(older_generation(frames(skip), &header, big_endian, read));
    let uncommitted = frames_present - wal.frames_committed;
    if uncommitted > 0 {
        wal.findings.push(Finding::WalFramesIgnored {
            first: wal.frames_committed + 1,
            count: uncommitted,
        });
    }
    // Pages beyond the committed database size are not part of the database.
    if let Some(size) = wal.db_size {
        wal.pages.retain(|p, _| p.get() <= size);
    }
    Ok(wal)
}

/// A frame's header, as stored.
fn frame_header(frame: &[u8]) -> WalFrameHeader {
    let f = |o: usize| u32_at(frame, o).unwrap_or(0);
    WalFrameHeader {
        page_no: f(0),
        db_size_after_commit: f(4),
        salt1: f(8),
        salt2: f(12),
        checksum1: f(16),
        checksum2: f(20),
    }
}

/// A frame as read: its number, header and page image.
type FrameRead<'a> = (FrameNo, WalFrameHeader, &'a [u8]);

/// After the frame `broken` (read already), where the log stops being read: how many
/// frames with the log's salts mark a commit, to the log's end (SQLite writes a generation
/// from its first frame on, so one of them past a frame of other salts is damage past
/// damage, not an earlier generation), and the frames with the log's salts that follow it
/// without a gap (frame, header, image). Each frame looked at is told to `read`.
fn past_break<'a>(
    body: &'a [u8],
    frame_len: usize,
    broken: FrameNo,
    header: &WalHeader,
    read: &mut dyn FnMut(u64),
) -> (u32, Vec<FrameRead<'a>>) {
    let (mut commits, mut run, mut gap) = (0u32, Vec::new(), false);
    for (i, frame) in body
        .chunks_exact(frame_len)
        .enumerate()
        .skip(broken.0 as usize)
    {
        read(frame_len as u64);
        let fh = frame_header(frame);
        if (fh.salt1, fh.salt2) != (header.salt1, header.salt2) {
            gap = true;
            continue;
        }
        commits += u32::from(fh.is_commit());
        if !gap {
            let image = frame.get(WAL_FRAME_HEADER_LEN..).unwrap_or_default();
            run.push((FrameNo(i as u32 + 1), fh, image));
        }
    }
    (commits, run)
}

/// The log's header ("The WAL File Format"), checked: its magic number (which names the
/// byte order of every checksum), its page size and its own checksum. Returns the header,
/// whether the checksums are big-endian, the page size, and the header's checksum (the
/// seed of the first frame's).
fn read_header(bytes: &[u8]) -> Result<(WalHeader, bool, PageSize, (u32, u32)), Finding> {
    let w = |o: usize| u32_at(bytes, o).unwrap_or(0);
    if bytes.len() < WAL_HEADER_LEN {
        return Err(Finding::WalHeaderInvalid {
            reason: WalHeaderDefect::TooShort,
        });
    }
    let header = WalHeader {
        magic: w(0),
        format_version: w(4),
        page_size: w(8),
        checkpoint_seq: w(12),
        salt1: w(16),
        salt2: w(20),
        checksum1: w(24),
        checksum2: w(28),
    };
    let big_endian = match header.magic {
        0x377f_0682 => false,
        0x377f_0683 => true,
        _ => {
            return Err(Finding::WalHeaderInvalid {
                reason: WalHeaderDefect::Magic(header.magic),
            })
        }
    };
    let Some(page_size) = PageSize::new(header.page_size) else {
        return Err(Finding::WalHeaderInvalid {
            reason: WalHeaderDefect::PageSize(header.page_size),
        });
    };
    let head = bytes.get(..24).unwrap_or_default();
    let seed = checksum(big_endian, head, (0, 0));
    if seed != (header.checksum1, header.checksum2) {
        return Err(Finding::WalHeaderInvalid {
            reason: WalHeaderDefect::Checksum,
        });
    }
    Ok((header, big_endian, page_size, seed))
}

/// The frames of an older generation of the log among `frames` (those after the current
/// generation's end), each checked against the frame before it (see
/// [`StrayKind::OlderGeneration`]); frames with the log's own salts or no page are skipped.
fn older_generation<'a>(
    frames: impl Iterator<Item = (FrameNo, WalFrameHeader, &'a [u8], &'a [u8])>,
    header: &WalHeader,
    big_endian: bool,
    read: &mut dyn FnMut(u64),
) -> Vec<StrayFrame<'a>> {
    let mut strays = Vec::new();
    let mut previous: Option<WalFrameHeader> = None;
    for (no, fh, frame, image) in frames {
        read(frame.len() as u64);
        let own = (fh.salt1, fh.salt2) == (header.salt1, header.salt2);
        if own || PageNo::new(fh.page_no).is_none() {
            previous = None;
            continue;
        }
        let chained = previous.is_some_and(|p| {
            let seed = (p.checksum1, p.checksum2);
            let s = checksum(big_endian, frame.get(..8).unwrap_or_default(), seed);
            (p.salt1, p.salt2) == (fh.salt1, fh.salt2)
                && checksum(big_endian, image, s) == (fh.checksum1, fh.checksum2)
        });
        strays.push(StrayFrame {
            no,
            header: fh,
            image,
            kind: StrayKind::OlderGeneration { chained },
        });
        previous = Some(fh);
    }
    strays
}

/// Why a WAL header is unusable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WalHeaderDefect {
    /// Shorter than 32 bytes.
    TooShort,
    /// Not one of the two magic numbers.
    Magic(u32),
    /// Not a valid page size.
    PageSize(u32),
    /// The header checksum does not match.
    Checksum,
}

impl std::fmt::Display for WalHeaderDefect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WalHeaderDefect::TooShort => f.write_str("shorter than 32 bytes"),
            WalHeaderDefect::Magic(m) => write!(f, "magic number {m:#010x}"),
            WalHeaderDefect::PageSize(p) => write!(f, "page size {p}"),
            WalHeaderDefect::Checksum => f.write_str("header checksum mismatch"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A log of `frames` (page number, commit size) over 512-byte pages, checksums right.
    fn log(frames: &[(u32, u32)]) -> Vec<u8> {
        log_with((11, 22), frames)
    }

    /// [`log`] with other salts.
    fn log_with(salts: (u32, u32), frames: &[(u32, u32)]) -> Vec<u8> {
        let mut b = vec![0u8; 32];
        b[0..4].copy_from_slice(&0x377f_0682u32.to_be_bytes());
        b[4..8].copy_from_slice(&3_007_000u32.to_be_bytes());
        b[8..12].copy_from_slice(&512u32.to_be_bytes());
        b[16..20].copy_from_slice(&salts.0.to_be_bytes());
        b[20..24].copy_from_slice(&salts.1.to_be_bytes());
        let (c1, c2) = checksum(false, &b[..24], (0, 0));
        b[24..28].copy_from_slice(&c1.to_be_bytes());
        b[28..32].copy_from_slice(&c2.to_be_bytes());
        let mut sum = (c1, c2);
        for (i, (page, commit)) in frames.iter().enumerate() {
            let mut fh = vec![0u8; 24];
            fh[0..4].copy_from_slice(&page.to_be_bytes());
            fh[4..8].copy_from_slice(&commit.to_be_bytes());
            fh[8..12].copy_from_slice(&salts.0.to_be_bytes());
            fh[12..16].copy_from_slice(&salts.1.to_be_bytes());
            let image = vec![i as u8 + 1; 512];
            sum = checksum(false, &fh[..8], sum);
            sum = checksum(false, &image, sum);
            fh[16..20].copy_from_slice(&sum.0.to_be_bytes());
            fh[20..24].copy_from_slice(&sum.1.to_be_bytes());
            b.extend_from_slice(&fh);
            b.extend_from_slice(&image);
        }
        b
    }

    /// Each frame is told once, in file order, as it is read: a caller letting go of the
    /// mapped log as it goes never has it all resident. The uncommitted frame's header is
    /// kept without reading the log again.
    #[test]
    fn each_frame_is_told_once_as_it_is_read() {
        let bytes = log(&[(2, 0), (3, 3), (4, 0)]);
        let mut told = Vec::new();
        let wal = read_wal_telling(&bytes, &mut |n| told.push(n)).unwrap();
        assert_eq!(told, [24 + 512; 3]);
        assert_eq!(wal.commits.len(), 1);
        assert_eq!(wal.strays.len(), 1);
        assert_eq!(wal.strays[0].header.page_no, 4);
        assert_eq!(wal.strays[0].kind, StrayKind::Uncommitted);
    }

    /// A log's page size is the database's only where they agree, where the database
    /// gives none, or where the log's own page 1 says so.
    #[test]
    fn a_log_proves_its_page_size_by_agreeing_or_by_its_page_one() {
        let mut first = [0u8; 512];
        first[16..18].copy_from_slice(&512u16.to_be_bytes());
        let bytes = log(&[(2, 3)]);
        let mut wal = read_wal(&bytes).unwrap();
        assert!(wal.page_size_proven(PageSize::new(512)));
        assert!(wal.page_size_proven(None));
        assert!(!wal.page_size_proven(PageSize::new(4096)));
        wal.pages.insert(PageNo::FIRST, (FrameNo(1), &first));
        assert!(wal.page_size_proven(PageSize::new(4096)));
    }

    #[test]
    fn newest_committed_frame_wins() {
        let bytes = log(&[(2, 0), (3, 3), (2, 3)]);
        let wal = read_wal(&bytes).unwrap();
        assert_eq!(wal.frames_committed, 3);
        assert_eq!(wal.db_size, Some(3));
        let (frame, image) = wal.pages[&PageNo::new(2).unwrap()];
        assert_eq!((frame, image[0]), (FrameNo(3), 3));
        assert!(wal.findings.is_empty());
    }

    #[test]
    fn commits_in_order_and_the_log_as_of_each() {
        let bytes = log(&[(2, 0), (3, 3), (2, 3), (4, 0), (4, 4), (5, 0)]);
        let wal = read_wal(&bytes).unwrap();
        let spans: Vec<_> = wal
            .commits
            .iter()
            .map(|c| (c.first.0, c.last.0, c.db_size, c.frames.len()))
            .collect();
        assert_eq!(spans, vec![(1, 2, 3, 2), (3, 3, 3, 1), (4, 5, 4, 2)]);
        let first = wal.as_of(1);
        assert_eq!((first.frames_committed, first.db_size), (2, Some(3)));
        assert_eq!(first.pages[&PageNo::new(2).unwrap()].0, FrameNo(1));
        let second = wal.as_of(2);
        assert_eq!(second.pages[&PageNo::new(2).unwrap()].0, FrameNo(3));
        assert!(!second.pages.contains_key(&PageNo::new(4).unwrap()));
        let none = wal.as_of(0);
        assert!(none.pages.is_empty() && none.db_size.is_none());
        assert_eq!(wal.as_of(9).pages, wal.pages);
        // The frame after the last commit is a stray, not part of any state.
        assert_eq!(wal.strays.len(), 1);
        assert_eq!(wal.strays[0].no, FrameNo(6));
        assert_eq!(wal.strays[0].kind, StrayKind::Uncommitted);
    }

    #[test]
    fn frames_of_an_older_generation_are_strays() {
        // Four frames of one generation, then the log reset and two frames written over
        // the start: frames 3 and 4 are the older generation's.
        let older = log_with((7, 8), &[(2, 0), (3, 3), (4, 4), (5, 5)]);
        let newer = log(&[(2, 2), (3, 3)]);
        let mut bytes = older.clone();
        bytes[..newer.len()].copy_from_slice(&newer);
        let wal = read_wal(&bytes).unwrap();
        assert_eq!(wal.commits.len(), 2);
        let strays: Vec<_> = wal.strays.iter().map(|s| (s.no.0, s.kind)).collect();
        assert_eq!(
            strays,
            vec![
                (3, StrayKind::OlderGeneration { chained: false }),
                (4, StrayKind::OlderGeneration { chained: true }),
            ]
        );
        // A changed byte breaks the chain.
        bytes[32 + 3 * 536 + 24 + 9] ^= 1;
        let wal = read_wal(&bytes).unwrap();
        assert_eq!(
            wal.strays[1].kind,
            StrayKind::OlderGeneration { chained: false }
        );
    }

    #[test]
    fn frames_after_the_last_commit_are_ignored() {
        let bytes = log(&[(2, 2), (3, 0)]);
        let wal = read_wal(&bytes).unwrap();
        assert_eq!(wal.frames_committed, 1);
        assert!(!wal.pages.contains_key(&PageNo::new(3).unwrap()));
        assert_eq!(
            wal.findings,
            vec![Finding::WalFramesIgnored { first: 2, count: 1 }]
        );
    }

    #[test]
    fn torn_frame_ends_the_log() {
        let mut bytes = log(&[(2, 2), (3, 3)]);
        let second_image = 32 + 536 + 24;
        bytes[second_image + 100] ^= 0xff;
        let wal = read_wal(&bytes).unwrap();
        assert_eq!(wal.frames_committed, 1);
        assert!(wal
            .findings
            .contains(&Finding::WalFrameChecksumMismatch { frame: 2 }));
    }

    /// A break with only an open transaction's frames past it (no commit mark up to the
    /// next generation's frames) loses no commit; one with a commit mark past it does.
    #[test]
    fn commits_past_a_break_are_counted_in_its_generation_only() {
        let image = |frame: usize| 32 + (frame - 1) * 536 + 24 + 100;
        let mut open = log(&[(2, 2), (3, 0), (4, 0)]);
        open[image(2)] ^= 0xff;
        let wal = read_wal(&open).unwrap();
        assert_eq!((wal.frames_committed, wal.commits_past_break), (1, 0));
        // The open transaction's frames, past the break too, are kept as evidence.
        let kinds = |wal: &Wal<'_>| -> Vec<(u32, StrayKind)> {
            wal.strays.iter().map(|s| (s.no.0, s.kind)).collect()
        };
        assert_eq!(
            kinds(&wal),
            vec![(2, StrayKind::Uncommitted), (3, StrayKind::Uncommitted)]
        );
        let mut lost = log(&[(2, 2), (3, 0), (4, 4)]);
        lost[image(2)] ^= 0xff;
        assert_eq!(read_wal(&lost).unwrap().commits_past_break, 1);
        let mut at_commit = log(&[(2, 2), (3, 3)]);
        at_commit[image(2)] ^= 0xff;
        assert_eq!(read_wal(&at_commit).unwrap().commits_past_break, 1);
        // Frames of an earlier generation after the open transaction's: their commit
        // marks are no commit of this generation.
        let mut older = log_with((5, 6), &[(2, 2), (3, 3), (4, 4), (5, 5)]);
        let current = log(&[(2, 2), (3, 0)]);
        older[..current.len()].copy_from_slice(&current);
        older[image(2)] ^= 0xff;
        let wal = read_wal(&older).unwrap();
        assert_eq!((wal.frames_present, wal.commits_past_break), (4, 0));
        assert_eq!(
            kinds(&wal),
            vec![
                (2, StrayKind::Uncommitted),
                (3, StrayKind::OlderGeneration { chained: false }),
                (4, StrayKind::OlderGeneration { chained: true }),
            ]
        );
        // With a commit past the break, nothing past it is vouched for.
        assert!(read_wal(&lost).unwrap().strays.is_empty());
        // A commit past a second break (a frame's header wiped with the end of the frame
        // before it) is still a commit lost.
        let mut wiped = log(&[(2, 2), (3, 0), (4, 0), (5, 5)]);
        wiped[image(2)] ^= 0xff;
        wiped[32 + 2 * 536..32 + 2 * 536 + 24].fill(0);
        assert_eq!(read_wal(&wiped).unwrap().commits_past_break, 1);
        // A frame of no page ends the log as a broken checksum does.
        let zero_page = log(&[(2, 2), (0, 0), (4, 4)]);
        let wal = read_wal(&zero_page).unwrap();
        assert_eq!((wal.frames_committed, wal.commits_past_break), (1, 1));
    }

    #[test]
    fn frame_of_an_older_generation() {
        let mut bytes = log(&[(2, 2), (3, 3)]);
        bytes[32 + 536 + 8] ^= 1; // salt-1 of frame 2
        let wal = read_wal(&bytes).unwrap();
        assert!(wal
            .findings
            .contains(&Finding::WalFrameSaltMismatch { frame: 2 }));
    }

    #[test]
    fn wal_header_damaged() {
        let mut bytes = log(&[(2, 2)]);
        bytes[0] = 0;
        assert!(matches!(
            read_wal(&bytes),
            Err(Finding::WalHeaderInvalid {
                reason: WalHeaderDefect::Magic(_)
            })
        ));
        let mut bytes = log(&[(2, 2)]);
        bytes[13] ^= 1;
        assert_eq!(
            read_wal(&bytes).unwrap_err(),
            Finding::WalHeaderInvalid {
                reason: WalHeaderDefect::Checksum
            }
        );
        assert!(matches!(
            read_wal(&bytes[..10]),
            Err(Finding::WalHeaderInvalid {
                reason: WalHeaderDefect::TooShort
            })
        ));
    }
}
