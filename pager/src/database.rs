//! The whole file as a database: header, page geometry (page size, usable size, page
//! count), text encoding, and page access.
//!
//! When the header's page size or text encoding is missing or garbage, they are inferred
//! from the file itself and the evidence that decided is kept for the report.

use std::borrow::Cow;
use std::collections::HashSet;

use crate::btree::{btree_header_offset, local_payload_len, Page, PageType, Payload};
use crate::classify::PageClass;
use crate::cursor::{u16_at, u32_at};
use crate::finding::Finding;
use crate::header::{DatabaseHeader, TextEncoding};
use crate::record::{self, Record, SerialType, ValueRef};
use crate::types::{Location, PageNo, PageSize};

/// The byte offset that SQLite's lock-byte page covers ("The Lock-Byte Page"): 2^30.
pub const LOCK_BYTE_OFFSET: u64 = 1 << 30;

/// How many zero bytes of a value must come just before a zeroed last overflow page for
/// the page to be read as zeros written (see `Database::zeros_are_values`).
const ZERO_RUN_EVIDENCE: usize = 32;

/// When inferring the page size, every page of the file's first this many bytes is
/// examined at each candidate size (where a database padded or cut short keeps its pages)…
const PAGE_SIZE_PREFIX: u64 = 4 << 20;

/// …and this many more pages spread evenly over the rest of the file. Few: a read through
/// a map makes resident the whole cached folio around it (up to 2 MiB on Linux 6.18), and
/// the sample is read before anything can let go of the map's pages.
const PAGE_SIZE_SAMPLE: u64 = 64;

/// The sampled pages of every candidate size start at the same offsets, multiples of the
/// largest page size: the sample reads the same few bytes of a large file whatever the
/// number of candidates (sampling each size elsewhere, and 65,536 pages of each, once made
/// the whole of a 16 GiB file resident).
const SAMPLE_ALIGN: u64 = 65_536;

/// Why the input cannot be read as a database at all.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OpenError {
    /// The input is empty.
    Empty,
    /// No header string and no page of any size parses as a b-tree page.
    NotADatabase {
        /// Length of the input.
        len: u64,
    },
}

impl std::fmt::Display for OpenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OpenError::Empty => f.write_str("the file is empty"),
            OpenError::NotADatabase { len } => write!(
                f,
                "not a SQLite database: no header string and no b-tree page at any page size in {len} bytes"
            ),
        }
    }
}

/// How well the file's pages fit one candidate page size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PageSizeEvidence {
    /// The candidate.
    pub page_size: PageSize,
    /// Pages examined at this size.
    pub pages_checked: u64,
    /// Pages whose b-tree header parses at this size.
    pub btree_headers: u64,
    /// Of those, pages whose cells end exactly at the usable end of a page of this size.
    pub exact_fits: u64,
}

/// Where the page size in use came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PageSizeSource {
    /// The header's value, confirmed by page 1.
    Header,
    /// From the write-ahead log's header, which SQLite writes with the page size in use.
    Wal,
    /// From a hot rollback journal's header: the page size before the interrupted
    /// transaction, which SQLite restores when it rolls the journal back.
    Journal,
    /// Inferred by scanning the file at every candidate size; the header's value was
    /// invalid, or did not fit the file's pages.
    Inferred {
        /// One entry per candidate size, smallest first.
        evidence: Vec<PageSizeEvidence>,
    },
}

/// Where the text encoding in use came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EncodingSource {
    /// The header's value.
    Header,
    /// Inferred: from the `type` column of the schema records on page 1 when any decode,
    /// else from how often "CREATE " appears in each encoding.
    Inferred {
        /// Votes for UTF-8, UTF-16le, UTF-16be.
        counts: [u64; 3],
    },
}

/// The input read as a SQLite database: geometry decided, ready to hand out pages.
#[derive(Clone, Debug)]
pub struct Database<'a> {
    bytes: &'a [u8],
    header: DatabaseHeader,
    page_size: PageSize,
    page_size_source: PageSizeSource,
    reserved_space: u8,
    encoding: TextEncoding,
    encoding_source: EncodingSource,
    page_count: u32,
    /// Page images read instead of the file's, sorted by page: a write-ahead log's
    /// committed frames, or a hot journal's original images; empty when neither is read.
    /// As long as the log, not the file: a log over a huge file costs what it holds.
    overlay: std::sync::Arc<[(PageNo, &'a [u8])]>,
    /// Every image of every page a log wrote, sorted by page and frame, shared by the
    /// states of a history (see [`Database::with_versions`]); read over `overlay` up to
    /// `frame_limit`.
    versions: Option<Versions<'a>>,
    /// The last frame of `versions` this state reads.
    frame_limit: u32,
    findings: Vec<Finding>,
}

/// Every image of every page a log wrote, with its frame number, sorted by page and frame.
type Versions<'a> = std::sync::Arc<[(PageNo, u32, &'a [u8])]>;

/// Page images read instead of the main file's (see [`Database::open_with_overlay`]).
struct Overlay<'a> {
    pages: std::collections::BTreeMap<PageNo, &'a [u8]>,
    /// The page size the images were written with, when it decides the geometry.
    page_size: Option<PageSize>,
    /// What that page size is called in [`Database::page_size_source`].
    source: PageSizeSource,
    /// The database size in pages the images belong to.
    pages_in_use: Option<u32>,
}

impl<'a> Database<'a> {
    /// Reads the header and decides the page geometry and text encoding. Fails only when
    /// nothing in the input looks like a SQLite database; every defect short of that is a
    /// finding in [`Database::findings`].
    pub fn open(bytes: &'a [u8]) -> Result<Database<'a>, OpenError> {
        Database::open_with_wal(bytes, None)
    }

    /// [`Database::open`], reading each page from the newest committed frame of `wal`
    /// where the log has one ("The WAL File Format"). The log's page size and committed
    /// database size decide the geometry; page 1's image, when logged, gives the header.
    pub fn open_with_wal(
        bytes: &'a [u8],
        wal: Option<&crate::wal::Wal<'a>>,
    ) -> Result<Database<'a>, OpenError> {
        Database::open_with_logs(bytes, None, wal)
    }

    /// [`Database::open`], rolled back by a hot `journal` ("The Rollback Journal"): each
    /// journaled page is read from its original image, at the journal's page size, and the
    /// database has its size from before the transaction. A journal that is not hot
    /// changes nothing.
    pub fn open_with_journal(
        bytes: &'a [u8],
        journal: &crate::journal::Journal<'a>,
    ) -> Result<Database<'a>, OpenError> {
        Database::open_with_logs(bytes, Some(journal), None)
    }

    /// The database as SQLite opens it with both beside it: a hot `journal` rolled back
    /// first, then the committed frames of `wal` read over the result.
    pub fn open_with_logs(
        bytes: &'a [u8],
        journal: Option<&crate::journal::Journal<'a>>,
        wal: Option<&crate::wal::Wal<'a>>,
    ) -> Result<Database<'a>, OpenError> {
        let journal = journal.filter(|j| j.header.is_some());
        if journal.is_none() && wal.is_none() {
            return Database::open_with_overlay(bytes, None);
        }
        let mut pages: std::collections::BTreeMap<PageNo, &'a [u8]> =
            journal.map(|j| j.pages.clone()).unwrap_or_default();
        if let Some(w) = wal {
            pages.extend(w.pages.iter().map(|(no, (_, image))| (*no, *image)));
        }
        let (page_size, source) = match (wal, journal) {
            (Some(w), _) => (PageSize::new(w.header.page_size), PageSizeSource::Wal),
            (None, Some(j)) => (j.page_size(), PageSizeSource::Journal),
            (None, None) => (None, PageSizeSource::Header),
        };
        Database::open_with_overlay(
            bytes,
            Some(Overlay {
                pages,
                page_size,
                source,
                pages_in_use: wal
                    .and_then(|w| w.db_size)
                    .or_else(|| journal.and_then(|j| j.original_pages())),
            }),
        )
    }

    /// Opens `bytes` with some pages read from elsewhere (a log's newer images, a
    /// journal's older ones). The overlay's page size, when it has one, decides the
    /// geometry; its page 1, when it has one, gives the header.
    fn open_with_overlay(
        bytes: &'a [u8],
        overlay: Option<Overlay<'a>>,
    ) -> Result<Database<'a>, OpenError> {
        let logged = |no: PageNo| overlay.as_ref().and_then(|o| o.pages.get(&no)).copied();
        if bytes.is_empty() && logged(PageNo::FIRST).is_none() {
            return Err(OpenError::Empty);
        }
        let len = bytes.len() as u64;
        let header = DatabaseHeader::parse(logged(PageNo::FIRST).unwrap_or(bytes));
        let mut findings = Vec::new();
        if len < 100 {
            findings.push(Finding::FileTooSmall { len });
        }
        findings.extend(header.findings());

        let declared = PageSize::from_header_field(header.page_size_raw);
        if declared.is_none() {
            findings.push(Finding::InvalidPageSize {
                raw: header.page_size_raw,
            });
        }
        let reserved_hint = header.reserved_space;
        let from_wal = overlay
            .as_ref()
            .and_then(|o| Some((o.page_size?, o.source.clone())));
        let (page_size, page_size_source) = match (declared, from_wal) {
            (_, Some((size, source))) => {
                if let Some(d) = declared.filter(|d| *d != size) {
                    findings.push(Finding::PageSizeDisagrees {
                        declared: d.get(),
                        inferred: size.get(),
                    });
                }
                (size, source)
            }
            (Some(size), None) if page_one_fits(bytes, size, reserved_hint) => {
                (size, PageSizeSource::Header)
            }
            (_, None) => {
                let evidence: Vec<PageSizeEvidence> = PageSize::all()
                    .map(|s| page_size_evidence(bytes, s, reserved_hint))
                    .collect();
                match best_page_size(&evidence) {
                    Some(inferred) => {
                        if let Some(d) = declared {
                            if d != inferred {
                                findings.push(Finding::PageSizeDisagrees {
                                    declared: d.get(),
                                    inferred: inferred.get(),
                                });
                            }
                        }
                        (inferred, PageSizeSource::Inferred { evidence })
                    }
                    None if header.has_header_string() => (
                        declared.unwrap_or(PageSize::new(4096).unwrap_or(PageSize::MIN)),
                        PageSizeSource::Header,
                    ),
                    None => return Err(OpenError::NotADatabase { len }),
                }
            }
        };

        let mut reserved_space = header.reserved_space;
        if page_size.get() - u32::from(reserved_space) < 480 {
            findings.push(Finding::ReservedSpaceTooLarge {
                reserved: reserved_space,
                page_size: page_size.get(),
            });
            reserved_space = 0;
        }

        let file_pages =
            u32::try_from(len.div_ceil(u64::from(page_size.get()))).unwrap_or(u32::MAX);
        // The size the log or journal records, but never past the file and the pages they
        // hold: a size field is input, not a licence to allocate.
        let page_count = overlay
            .as_ref()
            .and_then(|o| {
                let held = o.pages.keys().next_back().map_or(0, |p| p.get());
                Some(o.pages_in_use?.min(file_pages.max(held)))
            })
            .unwrap_or(file_pages);
        if !len.is_multiple_of(u64::from(page_size.get())) {
            findings.push(Finding::FileNotPageMultiple {
                len,
                page_size: page_size.get(),
            });
        }
        if header.database_size_valid() && header.database_size != page_count {
            findings.push(Finding::DatabaseSizeMismatch {
                declared: header.database_size,
                actual: page_count,
            });
        }

        let raw_encoding = header.text_encoding_raw;
        let mut db = Database {
            bytes,
            header,
            page_size,
            page_size_source,
            reserved_space,
            encoding: TextEncoding::from_header_field(raw_encoding).unwrap_or(TextEncoding::Utf8),
            encoding_source: EncodingSource::Header,
            page_count,
            overlay: std::sync::Arc::from(Vec::new()),
            versions: None,
            frame_limit: u32::MAX,
            findings,
        };
        if let Some(o) = overlay {
            // The map is in page order, so the images are sorted for the search in `page`.
            db.overlay = o
                .pages
                .into_iter()
                .filter(|(no, _)| no.get() <= page_count)
                .collect();
        }
        if TextEncoding::from_header_field(raw_encoding).is_none() {
            db.findings
                .push(Finding::InvalidTextEncoding { raw: raw_encoding });
            let counts = db.encoding_evidence();
            let mut best = (TextEncoding::Utf8, 0);
            for (e, n) in ENCODINGS.into_iter().zip(counts) {
                if n > best.1 {
                    best = (e, n);
                }
            }
            db.encoding = best.0;
            db.encoding_source = EncodingSource::Inferred { counts };
        }
        Ok(db)
    }

    /// The whole input.
    pub fn bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// The decoded database header, raw values.
    pub fn header(&self) -> &DatabaseHeader {
        &self.header
    }

    /// The page size in use.
    pub fn page_size(&self) -> PageSize {
        self.page_size
    }

    /// Where the page size in use came from.
    pub fn page_size_source(&self) -> &PageSizeSource {
        &self.page_size_source
    }

    /// Reserved bytes at the end of each page, as used (0 when the header's value was impossible).
    pub fn reserved_space(&self) -> u8 {
        self.reserved_space
    }

    /// The usable size U: page size less reserved space.
    pub fn usable_size(&self) -> usize {
        self.page_size.bytes() - usize::from(self.reserved_space)
    }

    /// The text encoding in use.
    pub fn encoding(&self) -> TextEncoding {
        self.encoding
    }

    /// Where the text encoding in use came from.
    pub fn encoding_source(&self) -> &EncodingSource {
        &self.encoding_source
    }

    /// Pages in the file (a cut-short last page counts).
    pub fn page_count(&self) -> u32 {
        self.page_count
    }

    /// Findings about the header and the file as a whole.
    pub fn findings(&self) -> &[Finding] {
        &self.findings
    }

    /// Decodes a page pointer read from disk: `None` for 0 or a page past the end of the file.
    pub fn page_no(&self, raw: u32) -> Option<PageNo> {
        PageNo::new(raw).filter(|p| p.get() <= self.page_count)
    }

    /// The page numbered `no`, or `None` past the end of the file.
    pub fn page(&self, no: PageNo) -> Option<Page<'a>> {
        if no.get() > self.page_count {
            return None;
        }
        if let Some(versions) = &self.versions {
            // The newest image of the page up to the frame limit, if any.
            let end = versions.partition_point(|(p, f, _)| (*p, *f) <= (no, self.frame_limit));
            if let Some((p, _, image)) = end.checked_sub(1).and_then(|i| versions.get(i)) {
                if *p == no {
                    return Some(Page::new(no, image, self.usable_size().min(image.len())));
                }
            }
        }
        if !self.overlay.is_empty() {
            if let Ok(i) = self.overlay.binary_search_by_key(&no, |(p, _)| *p) {
                if let Some((_, image)) = self.overlay.get(i) {
                    return Some(Page::new(no, image, self.usable_size().min(image.len())));
                }
            }
        }
        let start = usize::try_from(no.file_offset(self.page_size)).ok()?;
        let end = start
            .saturating_add(self.page_size.bytes())
            .min(self.bytes.len());
        let bytes = self.bytes.get(start..end)?;
        Some(Page::new(no, bytes, self.usable_size().min(bytes.len())))
    }

    /// This database with `images` read instead of the pages they are of (a later image
    /// of a page listed twice wins) and, when given, `pages_in_use` pages (never past the
    /// file and the images): the next state of a history, without reading the header or
    /// deciding the geometry again. Costs what the images held so far cost.
    pub fn with_images(
        &self,
        images: &[(PageNo, &'a [u8])],
        pages_in_use: Option<u32>,
    ) -> Database<'a> {
        let mut next = self.clone();
        let mut merged: std::collections::BTreeMap<PageNo, &'a [u8]> =
            next.overlay.iter().copied().collect();
        merged.extend(images.iter().copied());
        if let Some(size) = pages_in_use {
            let held = merged.keys().next_back().map_or(0, |p| p.get());
            next.page_count = size.min(self.file_pages().max(held));
        }
        if let Some(first) = merged.get(&PageNo::FIRST) {
            next.header = DatabaseHeader::parse(first);
        }
        next.overlay = merged
            .into_iter()
            .filter(|(no, _)| no.get() <= next.page_count)
            .collect();
        next
    }

    /// This database with a log's page images kept as versions (each with its frame
    /// number), read over its own pages up to a frame limit that [`Database::at_frame`]
    /// sets: every state of a history shares them, and a state costs no copy. The limit
    /// starts past every frame.
    pub fn with_versions(&self, mut versions: Vec<(PageNo, u32, &'a [u8])>) -> Database<'a> {
        versions.sort_by_key(|(p, f, _)| (*p, *f));
        let mut next = self.clone();
        next.versions = Some(std::sync::Arc::from(versions));
        next.frame_limit = u32::MAX;
        next
    }

    /// This database as of frame `last` of the versions it was given (see
    /// [`Database::with_versions`]), with `pages_in_use` pages when given (never past the
    /// file and the versions held). Page 1's image of that state gives the header.
    pub fn at_frame(&self, last: u32, pages_in_use: Option<u32>) -> Database<'a> {
        // A state is a view of this database: the findings of opening it stay its own, and
        // are not copied once a commit.
        let mut next = Database {
            bytes: self.bytes,
            header: self.header.clone(),
            page_size: self.page_size,
            page_size_source: self.page_size_source.clone(),
            reserved_space: self.reserved_space,
            encoding: self.encoding,
            encoding_source: self.encoding_source.clone(),
            page_count: self.page_count,
            overlay: std::sync::Arc::clone(&self.overlay),
            versions: self.versions.clone(),
            frame_limit: last,
            findings: Vec::new(),
        };
        if let Some(size) = pages_in_use {
            let held = next
                .versions
                .as_ref()
                .and_then(|v| v.last())
                .map_or(0, |(p, _, _)| p.get());
            next.page_count = size.min(self.file_pages().max(held));
        }
        if let Some(first) = next.page(PageNo::FIRST) {
            next.header = DatabaseHeader::parse(first.bytes());
        }
        next
    }

    /// Pages the file holds (a last one cut short counts).
    fn file_pages(&self) -> u32 {
        let len = self.bytes.len() as u64;
        u32::try_from(len.div_ceil(u64::from(self.page_size.get()))).unwrap_or(u32::MAX)
    }

    /// Every page, in file order.
    pub fn pages(&self) -> impl Iterator<Item = Page<'a>> + '_ {
        (1..=self.page_count).filter_map(move |n| PageNo::new(n).and_then(|p| self.page(p)))
    }

    /// Every cell its pointer names on every table leaf page, in page order: where rows
    /// are searched for without a tree to lead to them.
    pub fn table_leaf_cells(&self) -> impl Iterator<Item = crate::btree::CellRef<'a>> + '_ {
        self.pages().flat_map(|page| {
            page.btree_header()
                .ok()
                .filter(|h| h.page_type() == PageType::TableLeaf)
                .map(|h| page.cells(&h).flatten())
                .into_iter()
                .flatten()
        })
    }

    /// The lock-byte page: the page holding file offset 2^30, when the file reaches it.
    pub fn lock_byte_page(&self) -> Option<PageNo> {
        let n = LOCK_BYTE_OFFSET / u64::from(self.page_size.get()) + 1;
        u32::try_from(n).ok().and_then(|n| self.page_no(n))
    }

    /// Pages whose image comes from the write-ahead log (or the rollback journal, when
    /// the database was opened with one).
    pub fn pages_from_wal(&self) -> usize {
        self.overlay.len()
    }

    /// Whether `page` is a pointer-map page ("Pointer Map or Ptrmap Pages"); only
    /// auto-vacuum databases have them.
    // SQLite: ptrmapPageno (btree.c)
    pub fn is_ptrmap_page(&self, page: PageNo) -> bool {
        if !self.header.auto_vacuum() || page.get() < 2 {
            return false;
        }
        let per_map = (self.usable_size() / 5 + 1) as u32;
        let n = page.get();
        let mut map = (n - 2) / per_map * per_map + 2;
        if Some(map) == self.lock_byte_page().map(PageNo::get) {
            map += 1;
        }
        map == n
    }

    /// What a page is by its position alone: the lock-byte page or a pointer-map page.
    pub fn positional_class(&self, page: PageNo) -> Option<PageClass> {
        if Some(page) == self.lock_byte_page() {
            Some(PageClass::LockByte)
        } else if self.is_ptrmap_page(page) {
            Some(PageClass::Ptrmap)
        } else {
            None
        }
    }

    /// Walks the overflow chain of `payload`, the payload of the cell at `cell`, and
    /// returns its pages and, when the chain is damaged, the finding that says how. Never
    /// reads past the pages the payload needs, but checks that the last one ends the chain.
    pub fn overflow_chain(&self, payload: &Payload<'a>, cell: Location) -> OverflowChain {
        self.overflow_chain_until(payload, cell, |_| None)
    }

    /// [`Database::overflow_chain`], stopping before any page for which `taken` names
    /// another role (a page another chain or tree already holds): the chain ends there with
    /// [`Finding::OverflowIntoNonOverflowPage`]. A caller that walks every chain of a file
    /// passes the pages it has seen, so that the total work stays linear in the file size
    /// whatever the chains claim.
    pub fn overflow_chain_until(
        &self,
        payload: &Payload<'a>,
        cell: Location,
        mut taken: impl FnMut(PageNo) -> Option<PageClass>,
    ) -> OverflowChain {
        let mut chain = OverflowChain {
            pages: Vec::new(),
            finding: None,
            missing: 0,
        };
        let mut need = payload.total_len.saturating_sub(payload.local.len() as u64);
        let per_page = (self.usable_size() as u64).saturating_sub(4).max(1);
        let mut seen: HashSet<u32> = HashSet::new();
        let mut next = payload.first_overflow.map_or(0, PageNo::get);
        while need > 0 {
            let Some(page_no) = self.page_no(next) else {
                chain.finding = Some(if next == 0 {
                    Finding::OverflowChainShort {
                        cell,
                        missing: need,
                    }
                } else {
                    Finding::OverflowPastEnd { cell, next }
                });
                break;
            };
            if !seen.insert(next) {
                chain.finding = Some(Finding::OverflowCycle {
                    cell,
                    repeated: page_no,
                });
                break;
            }
            let other_role = self
                .positional_class(page_no)
                .or((page_no == PageNo::FIRST).then_some(PageClass::TableLeaf))
                .or_else(|| taken(page_no));
            if let Some(class) = other_role {
                chain.finding = Some(Finding::OverflowIntoNonOverflowPage {
                    cell,
                    page: page_no,
                    class,
                });
                break;
            }
            let Some(page) = self.page(page_no) else {
                break;
            };
            // A page of nothing but zeros has lost its content (a page before the last
            // holds its next pointer, the last one the payload's end): reading it would
            // invent zeros as values, so the chain is taken to end before it. Unless the
            // values there are zeros by evidence: see `zeros_are_values`.
            if page.is_zeroed()
                && !(need <= per_page && self.zeros_are_values(payload, cell, &chain.pages, need))
            {
                chain.finding = Some(Finding::OverflowIntoNonOverflowPage {
                    cell,
                    page: page_no,
                    class: PageClass::Zeroed,
                });
                break;
            }
            chain.pages.push(page_no);
            need -= need.min(per_page);
            next = u32_at(page.bytes(), 0).unwrap_or(0);
            if need == 0 && next != 0 {
                // The last page must end the chain (SQLite's integrity check follows it).
                chain.finding = Some(match PageNo::new(next) {
                    Some(p) if seen.contains(&next) => Finding::OverflowCycle { cell, repeated: p },
                    _ => Finding::OverflowChainTooLong {
                        cell,
                        last: page_no,
                        next,
                    },
                });
            }
        }
        chain.missing = need;
        if need > 0 && chain.finding.is_none() {
            chain.finding = Some(Finding::OverflowChainShort {
                cell,
                missing: need,
            });
        }
        chain
    }

    /// Whether a zeroed page that holds the last `need` bytes of `payload` (after the
    /// local bytes and the chain's `before` pages) is those bytes, zeros written as values,
    /// rather than a page wiped. A value of zeros (`zeroblob(N)`, a buffer allocated and
    /// not yet filled, text padded with NULs) ends its chain on such a page, and its bytes
    /// just before it are zeros too; a wiped page follows whatever the values held. So the
    /// page is read as values only when it holds nothing but the end of one BLOB or text
    /// whose [`ZERO_RUN_EVIDENCE`] bytes just before the page are zeros: every value after
    /// it has no bytes (NULL, 0, 1), for nothing vouches for a value that begins on the
    /// page. And only in a table's row: an index entry read so could be taken as evidence
    /// against its row's value. Without that evidence the page stays lost, and a healthy
    /// value of that kind (a float 0.0 after zeros, an index key ending in zeros) is
    /// reported as damaged: never a wiped page read as zeros.
    fn zeros_are_values(
        &self,
        payload: &Payload<'a>,
        at: Location,
        before: &[PageNo],
        need: u64,
    ) -> bool {
        let in_table_row = self
            .page(at.page)
            .and_then(|p| p.btree_header().ok())
            .is_some_and(|h| h.page_type() == PageType::TableLeaf);
        if !in_table_row {
            return false;
        }
        let start = payload.total_len - need;
        let Ok(header) = record::parse_record_header(payload.local, payload.total_len, at) else {
            return false;
        };
        // The one value that runs from before the page into it, and what begins on it.
        let mut crossing = None;
        let mut only_empty_after = true;
        let mut to = header.header_size;
        for t in &header.serial_types {
            let from = to;
            to = to.saturating_add(t.body_len());
            if from < start && to > start {
                crossing = Some((from, *t));
            } else if from >= start && t.body_len() > 0 {
                only_empty_after = false;
            }
        }
        // The header must describe the payload to the byte, and the zero run before the
        // page must lie inside the crossing BLOB or text.
        let evidence = ZERO_RUN_EVIDENCE as u64;
        let vouched = matches!(crossing, Some((from, SerialType::Blob(_) | SerialType::Text(_)))
            if from.saturating_add(evidence) <= start);
        if !vouched || !only_empty_after || to != payload.total_len {
            return false;
        }
        // The bytes just before `start`: the previous overflow page's, or the local ones.
        let previous: &[u8] = match before.last() {
            Some(&no) => {
                let per_page = self.usable_size().saturating_sub(4);
                match self.page(no) {
                    Some(page) => page.bytes().get(4..4 + per_page).unwrap_or_default(),
                    None => return false,
                }
            }
            None => payload.local,
        };
        previous
            .get(previous.len().saturating_sub(ZERO_RUN_EVIDENCE)..)
            .is_some_and(|run| run.len() == ZERO_RUN_EVIDENCE && run.iter().all(|&b| b == 0))
    }

    /// The complete payload of the cell at `cell`: the local bytes borrowed when nothing
    /// spills, or the local bytes and the overflow pages' content copied together. A
    /// damaged chain gives the bytes that could be read and `complete == false`, never a
    /// silently short payload.
    pub fn assemble(&self, payload: &Payload<'a>, cell: Location) -> AssembledPayload<'a> {
        if !payload.spills() {
            return AssembledPayload {
                bytes: Cow::Borrowed(payload.local),
                complete: true,
                finding: None,
                suspect_from: None,
            };
        }
        let chain = self.overflow_chain(payload, cell);
        let per_page = self.usable_size().saturating_sub(4);
        let total = usize::try_from(payload.total_len).unwrap_or(usize::MAX);
        // Capacity from the pages actually found, never from the claimed length.
        let mut out = Vec::with_capacity(payload.local.len() + chain.pages.len() * per_page);
        out.extend_from_slice(payload.local);
        let mut last_start = None;
        for page_no in &chain.pages {
            last_start = Some(out.len());
            let remaining = total.saturating_sub(out.len());
            if let Some(page) = self.page(*page_no) {
                out.extend_from_slice(
                    page.bytes()
                        .get(4..4 + per_page.min(remaining))
                        .unwrap_or_default(),
                );
            }
        }
        let complete = out.len() == total;
        let suspect_from = last_start
            .filter(|_| matches!(chain.finding, Some(Finding::OverflowChainTooLong { .. })));
        AssembledPayload {
            bytes: Cow::Owned(out),
            complete,
            finding: chain.finding,
            suspect_from,
        }
    }

    /// The local-payload size SQLite would store for a payload of `len` bytes.
    pub fn local_payload_len(&self, page_type: PageType, len: u64) -> usize {
        local_payload_len(page_type == PageType::TableLeaf, len, self.usable_size())
    }
}

/// The pages of one overflow chain.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OverflowChain {
    /// Overflow pages in chain order.
    pub pages: Vec<PageNo>,
    /// The damage that ended the chain early, if any.
    pub finding: Option<Finding>,
    /// Payload bytes the chain could not provide.
    pub missing: u64,
}

/// A cell's payload with its overflow content joined on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AssembledPayload<'a> {
    /// The payload bytes that could be read.
    pub bytes: Cow<'a, [u8]>,
    /// Whether all `total_len` bytes were read.
    pub complete: bool,
    /// The damage that made it partial.
    pub finding: Option<Finding>,
    /// Where in `bytes` the last overflow page's content starts, when that page does not
    /// end the chain as SQLite ends one (its next pointer is not 0): its bytes may be
    /// another page's, read as this payload's tail.
    pub suspect_from: Option<usize>,
}

/// How well page `no` parses as a b-tree page of size `size`: `None`, a b-tree header
/// that fits, or a header whose cells also end exactly at the usable end of the page.
fn fit(bytes: &[u8], no: PageNo, size: PageSize, reserved: u8) -> Fit {
    let start = match usize::try_from(no.file_offset(size)) {
        Ok(s) => s,
        Err(_) => return Fit::None,
    };
    let Some(page_bytes) = bytes.get(start..start.saturating_add(size.bytes()).min(bytes.len()))
    else {
        return Fit::None;
    };
    if page_bytes.len() < size.bytes() {
        return Fit::None;
    }
    let usable = size.bytes() - usize::from(reserved);
    let page = Page::new(no, page_bytes, usable);
    let Ok(h) = page.btree_header() else {
        return Fit::None;
    };
    let area = h.cell_content_area() as usize;
    if area < h.cell_pointers_end() || area > usable {
        return Fit::None;
    }
    if h.cell_count() == 0 {
        return if area == usable {
            Fit::Exact
        } else {
            Fit::Header
        };
    }
    let mut max_end = 0usize;
    for cell in page.cells(&h) {
        match cell {
            Ok(c) if usize::from(c.offset) >= area => {
                max_end = max_end.max(usize::from(c.offset) + c.len)
            }
            _ => return Fit::None,
        }
    }
    // Deleted cells at the end of the area leave a freeblock that reaches the end instead.
    let mut offset = h.first_freeblock();
    let mut hops = 0;
    while offset != 0 && hops < 64 {
        let o = usize::from(offset);
        match (u16_at(page_bytes, o), u16_at(page_bytes, o + 2)) {
            (Some(next), Some(sz)) => {
                max_end = max_end.max(o + usize::from(sz));
                offset = next;
            }
            _ => break,
        }
        hops += 1;
    }
    if max_end == usable {
        Fit::Exact
    } else {
        Fit::Header
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fit {
    None,
    Header,
    Exact,
}

/// Whether page 1 parses as a b-tree page at `size` whose cells end exactly at the usable
/// end of the page.
fn page_one_fits(bytes: &[u8], size: PageSize, reserved: u8) -> bool {
    let reserved = if size.get() - u32::from(reserved) < 480 {
        0
    } else {
        reserved
    };
    if bytes.len() < size.bytes() {
        // A file shorter than one page: the header's size is all the evidence there is.
        return bytes.len() >= btree_header_offset(PageNo::FIRST) + 8;
    }
    // An exact fit: at a wrong, larger size page 1's cells would end short of the page end.
    fit(bytes, PageNo::FIRST, size, reserved) == Fit::Exact
}

/// Examines the pages of the first [`PAGE_SIZE_PREFIX`] bytes and up to
/// [`PAGE_SIZE_SAMPLE`] more spread over the rest of the file at `size`.
fn page_size_evidence(bytes: &[u8], size: PageSize, reserved: u8) -> PageSizeEvidence {
    let reserved = if size.get() - u32::from(reserved) < 480 {
        0
    } else {
        reserved
    };
    let len = bytes.len() as u64;
    let pages = len / u64::from(size.get());
    let mut ev = PageSizeEvidence {
        page_size: size,
        pages_checked: 0,
        btree_headers: 0,
        exact_fits: 0,
    };
    // Every page of the prefix, then pages at evenly spread aligned offsets.
    let prefix = (PAGE_SIZE_PREFIX / u64::from(size.get())).min(pages);
    let at = move |k: u64| {
        let offset = (u128::from(len) * u128::from(k) / u128::from(PAGE_SIZE_SAMPLE)) as u64;
        offset / SAMPLE_ALIGN * SAMPLE_ALIGN / u64::from(size.get()) + 1
    };
    let mut last = prefix;
    let spread = (0..PAGE_SIZE_SAMPLE).map(at).filter(move |n| {
        let new = *n > last && *n <= pages;
        last = last.max(*n);
        new
    });
    for n in (1..=prefix).chain(spread) {
        if let Some(no) = u32::try_from(n).ok().and_then(PageNo::new) {
            ev.pages_checked += 1;
            match fit(bytes, no, size, reserved) {
                Fit::Exact => {
                    ev.btree_headers += 1;
                    ev.exact_fits += 1;
                }
                Fit::Header => ev.btree_headers += 1,
                Fit::None => {}
            }
        }
    }
    ev
}

/// The size with the most exact fits; `None` when no size has any, or when the best fits
/// too few of the pages examined to be more than chance (random bytes).
fn best_page_size(evidence: &[PageSizeEvidence]) -> Option<PageSize> {
    let best = evidence
        .iter()
        .max_by_key(|e| (e.exact_fits, std::cmp::Reverse(e.page_size)))?;
    // Random input produces the odd accidental fit; a real database has many.
    let plausible = best.exact_fits >= 2 || (best.exact_fits == 1 && best.pages_checked <= 4);
    plausible.then_some(best.page_size)
}

/// The three text encodings, in header-value order.
const ENCODINGS: [TextEncoding; 3] = [
    TextEncoding::Utf8,
    TextEncoding::Utf16le,
    TextEncoding::Utf16be,
];

/// Schema records examined at most when inferring the text encoding.
const ENCODING_SAMPLE: usize = 1000;

impl Database<'_> {
    /// Evidence for each text encoding (UTF-8, UTF-16le, UTF-16be). First, the `type`
    /// column of the `sqlite_schema` records: a whole value that must read "table",
    /// "index", "view" or "trigger", which only the right encoding gives. When no schema
    /// record is readable, occurrences of "CREATE " over the first pages, then the whole
    /// file (a weaker count: UTF-16le and UTF-16be text each contain the other's pattern
    /// shifted by a byte, so a tie is possible and goes to the earlier encoding).
    fn encoding_evidence(&self) -> [u64; 3] {
        let votes = self.schema_type_votes();
        if votes.iter().any(|n| *n > 0) {
            return votes;
        }
        let needles: Vec<Vec<u8>> = ENCODINGS.iter().map(|e| e.encode("CREATE ")).collect();
        let count = |hay: &[u8]| -> [u64; 3] {
            let mut c = [0u64; 3];
            for (slot, needle) in c.iter_mut().zip(&needles) {
                *slot = hay.windows(needle.len()).filter(|w| w == needle).count() as u64;
            }
            c
        };
        let head = self
            .bytes
            .get(..self.bytes.len().min(self.page_size.bytes() * 16))
            .unwrap_or(self.bytes);
        let c = count(head);
        if c.iter().any(|n| *n > 0) {
            return c;
        }
        let c = count(self.bytes);
        if c.iter().any(|n| *n > 0) {
            c
        } else {
            self.text_value_votes()
        }
    }

    /// Counts, per encoding, the text values of table leaf cells that read as text in it:
    /// the last evidence, for a file with no schema text left. A value without a zero
    /// byte is UTF-8 when it is valid UTF-8; one with zero bytes is UTF-16, little-endian
    /// when they sit at odd offsets (ASCII-range characters: the high byte follows),
    /// big-endian when at even ones.
    fn text_value_votes(&self) -> [u64; 3] {
        let mut votes = [0u64; 3];
        let mut seen = 0;
        for cell in self.table_leaf_cells() {
            let Some(payload) = cell.cell.payload() else {
                continue;
            };
            let Ok((record, _)) = Record::parse(payload.local, cell.location) else {
                continue;
            };
            for value in record.values() {
                let Ok(ValueRef::Text(t)) = value else {
                    continue;
                };
                if t.len() < 4 || seen >= ENCODING_SAMPLE {
                    continue;
                }
                seen += 1;
                let zero_at = |parity: usize| {
                    t.iter()
                        .enumerate()
                        .filter(|(i, b)| i % 2 == parity && **b == 0)
                        .count()
                };
                let (even, odd) = (zero_at(0), zero_at(1));
                let slot = if even + odd == 0 {
                    std::str::from_utf8(t).is_ok().then_some(0)
                } else if t.len() % 2 == 1 {
                    None
                } else if odd > even {
                    Some(1)
                } else {
                    Some(2)
                };
                if let Some(v) = slot.and_then(|i| votes.get_mut(i)) {
                    *v += 1;
                }
            }
            if seen >= ENCODING_SAMPLE {
                return votes;
            }
        }
        votes
    }

    /// Counts, per encoding, the schema records whose first column is a schema type word
    /// in that encoding.
    fn schema_type_votes(&self) -> [u64; 3] {
        let words: Vec<[Vec<u8>; 4]> = ENCODINGS
            .iter()
            .map(|e| {
                [
                    e.encode("table"),
                    e.encode("index"),
                    e.encode("view"),
                    e.encode("trigger"),
                ]
            })
            .collect();
        let mut votes = [0u64; 3];
        let cells =
            crate::walk::BtreeWalk::new(self, PageNo::FIRST).filter_map(|item| match item {
                Ok(crate::walk::TreeItem::Cell(c)) => Some(c),
                _ => None,
            });
        for cell in cells.take(ENCODING_SAMPLE) {
            let Some(payload) = cell.cell.payload() else {
                continue;
            };
            let Ok((record, _)) = Record::parse(payload.local, cell.location) else {
                continue;
            };
            let Some(Ok(ValueRef::Text(t))) = record.values().next() else {
                continue;
            };
            for (vote, w) in votes.iter_mut().zip(&words) {
                if w.iter().any(|word| word.as_slice() == t) {
                    *vote += 1;
                }
            }
        }
        votes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_input_is_refused() {
        assert_eq!(Database::open(&[]).unwrap_err(), OpenError::Empty);
    }

    #[test]
    fn text_file_is_not_a_database() {
        let text = "just some text, not a database\n".repeat(200);
        assert!(matches!(
            Database::open(text.as_bytes()),
            Err(OpenError::NotADatabase { .. })
        ));
    }

    #[test]
    fn random_bytes_are_not_a_database() {
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let bytes: Vec<u8> = (0..1 << 20)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        assert!(matches!(
            Database::open(&bytes),
            Err(OpenError::NotADatabase { .. })
        ));
    }
}

#[cfg(test)]
mod damage_tests {
    use super::*;
    use crate::testing::Db;

    #[test]
    fn file_shorter_than_the_header() {
        let db = Db::named("agent-4096-utf8");
        let short = &db.bytes[..60];
        let opened = Database::open(short).unwrap();
        assert!(opened
            .findings()
            .contains(&Finding::FileTooSmall { len: 60 }));
    }

    #[test]
    fn page_size_field_garbage() {
        let mut db = Db::named("agent-512-utf8");
        db.bytes[16..18].copy_from_slice(&1000u16.to_be_bytes());
        let opened = Database::open(&db.bytes).unwrap();
        assert_eq!(opened.page_size().get(), 512);
        assert!(opened
            .findings()
            .contains(&Finding::InvalidPageSize { raw: 1000 }));
        let PageSizeSource::Inferred { evidence } = opened.page_size_source() else {
            panic!("not inferred")
        };
        let best = evidence.iter().max_by_key(|e| e.exact_fits).unwrap();
        assert_eq!(best.page_size.get(), 512);
    }

    #[test]
    fn page_size_field_valid_but_wrong() {
        let mut db = Db::named("agent-4096-utf8");
        db.bytes[16..18].copy_from_slice(&1024u16.to_be_bytes());
        let opened = Database::open(&db.bytes).unwrap();
        assert_eq!(opened.page_size().get(), 4096);
        assert!(opened.findings().contains(&Finding::PageSizeDisagrees {
            declared: 1024,
            inferred: 4096
        }));
    }

    #[test]
    fn page_size_inferred_when_page_one_is_zeroed() {
        // Page 1 (header and schema root) gone: the size comes from the other pages alone.
        let mut db = Db::named("agent-65536-utf8");
        let ps = db.page_size();
        db.bytes[..ps].fill(0);
        let opened = Database::open(&db.bytes).unwrap();
        assert_eq!(opened.page_size().get(), 65536);
    }

    #[test]
    fn file_cut_mid_page() {
        let db = Db::named("agent-4096-utf8");
        let cut = &db.bytes[..db.bytes.len() - 100];
        let opened = Database::open(cut).unwrap();
        let len = cut.len() as u64;
        assert!(opened.findings().contains(&Finding::FileNotPageMultiple {
            len,
            page_size: 4096
        }));
    }

    #[test]
    fn reserved_space_leaves_too_little() {
        let mut db = Db::named("agent-512-utf8");
        db.bytes[20] = 200;
        let opened = Database::open(&db.bytes).unwrap();
        assert!(opened.findings().contains(&Finding::ReservedSpaceTooLarge {
            reserved: 200,
            page_size: 512
        }));
        assert_eq!(opened.usable_size(), 512);
    }

    #[test]
    fn text_encoding_field_garbage() {
        let mut db = Db::named("generic-512-utf16be");
        db.bytes[56..60].copy_from_slice(&9u32.to_be_bytes());
        let opened = Database::open(&db.bytes).unwrap();
        assert!(opened
            .findings()
            .contains(&Finding::InvalidTextEncoding { raw: 9 }));
        assert_eq!(opened.encoding(), TextEncoding::Utf16be);
    }

    /// With page 1 zeroed at 4096-byte pages no schema text is left anywhere: the text
    /// values of the table leaves give the encoding (once taken as UTF-8, the UTF-16 text
    /// copied as bytes).
    #[test]
    fn text_encoding_of_a_file_without_schema_text_is_read_from_its_values() {
        for (name, want) in [
            ("agent-4096-utf16le", TextEncoding::Utf16le),
            ("agent-4096-utf16be", TextEncoding::Utf16be),
            ("agent-4096-utf8", TextEncoding::Utf8),
        ] {
            let mut db = Db::named(name);
            db.bytes[..4096].fill(0);
            let opened = Database::open(&db.bytes).unwrap();
            assert_eq!(opened.encoding(), want, "{name}");
            assert!(matches!(
                opened.encoding_source(),
                EncodingSource::Inferred { .. }
            ));
        }
    }

    #[test]
    fn in_header_database_size_differs_from_the_file() {
        let mut db = Db::named("agent-4096-utf8");
        let pages = db.fixture.page_count();
        db.bytes[28..32].copy_from_slice(&(pages + 5).to_be_bytes());
        let opened = Database::open(&db.bytes).unwrap();
        assert!(opened.findings().contains(&Finding::DatabaseSizeMismatch {
            declared: pages + 5,
            actual: pages
        }));
    }

    /// The first overflow chain of `messages` with at least two pages, as the fixtures'
    /// reader sees it, and the cell that owns it.
    fn long_chain(db: &Db) -> (fixtures::format::OverflowChain, fixtures::format::Cell) {
        let chain = db
            .walk("messages")
            .chains
            .into_iter()
            .find(|c| c.pages.len() >= 2)
            .expect("a chain of 2+ pages");
        let cell = db.cell(chain.page, chain.cell);
        (chain, cell)
    }

    /// The overflow chain of the cell at `cell` of page `page`, walked by this crate.
    fn walk_chain(bytes: &[u8], page: u32, cell: u16) -> OverflowChain {
        let db = Database::open(bytes).unwrap();
        let page = db.page(PageNo::new(page).unwrap()).unwrap();
        let h = page.btree_header().unwrap();
        let cell = page.cells(&h).nth(usize::from(cell)).unwrap().unwrap();
        db.overflow_chain(cell.cell.payload().unwrap(), cell.location)
    }

    fn no(n: u32) -> PageNo {
        PageNo::new(n).unwrap()
    }

    #[test]
    fn overflow_pointer_past_the_end() {
        let mut db = Db::named("agent-4096-utf8");
        let (chain, cell) = long_chain(&db);
        db.set_u32(chain.pages[0], 0, 99_999); // next overflow page: past the last page
        assert_eq!(
            walk_chain(&db.bytes, chain.page, chain.cell).finding,
            Some(Finding::OverflowPastEnd {
                cell: Location::new(no(chain.page), cell.offset),
                next: 99_999
            })
        );
    }

    #[test]
    fn overflow_pointer_into_page_one() {
        let mut db = Db::named("agent-4096-utf8");
        let (chain, cell) = long_chain(&db);
        db.set_u32(chain.pages[0], 0, 1); // next overflow page: page 1, the schema's root
        assert_eq!(
            walk_chain(&db.bytes, chain.page, chain.cell).finding,
            Some(Finding::OverflowIntoNonOverflowPage {
                cell: Location::new(no(chain.page), cell.offset),
                page: PageNo::FIRST,
                class: PageClass::TableLeaf
            })
        );
    }

    #[test]
    fn overflow_chain_ends_early() {
        let mut db = Db::named("agent-4096-utf8");
        let (chain, cell) = long_chain(&db);
        // What the first overflow page cannot hold: it holds U - 4 bytes (U is the page
        // size here, no reserved space).
        assert_eq!(db.fixture.options.reserved_bytes, 0);
        let payload = cell.payload.unwrap();
        let missing = payload.total_len - payload.local_len as u64 - (db.page_size() as u64 - 4);
        db.set_u32(chain.pages[0], 0, 0); // next overflow page: none
        let walked = walk_chain(&db.bytes, chain.page, chain.cell);
        assert_eq!(walked.pages, vec![no(chain.pages[0])]);
        assert_eq!(
            walked.finding,
            Some(Finding::OverflowChainShort {
                cell: Location::new(no(chain.page), cell.offset),
                missing
            })
        );
    }

    #[test]
    fn overflow_chain_runs_on_past_its_last_page() {
        let mut db = Db::named("agent-4096-utf8");
        let (chain, cell) = long_chain(&db);
        let last = *chain.pages.last().unwrap();
        db.set_u32(last, 0, 3); // next overflow page of the last page the payload needs
        assert_eq!(
            walk_chain(&db.bytes, chain.page, chain.cell).finding,
            Some(Finding::OverflowChainTooLong {
                cell: Location::new(no(chain.page), cell.offset),
                last: no(last),
                next: 3
            })
        );
    }

    #[test]
    fn overflow_chain_last_page_leads_back_to_the_first() {
        let mut db = Db::named("agent-4096-utf8");
        let (chain, cell) = long_chain(&db);
        let last = *chain.pages.last().unwrap();
        db.set_u32(last, 0, chain.pages[0]); // next overflow page: the chain's first
        assert_eq!(
            walk_chain(&db.bytes, chain.page, chain.cell).finding,
            Some(Finding::OverflowCycle {
                cell: Location::new(no(chain.page), cell.offset),
                repeated: no(chain.pages[0])
            })
        );
    }

    #[test]
    fn overflow_page_points_to_itself_mid_payload() {
        let mut db = Db::named("agent-4096-utf8");
        let (chain, cell) = long_chain(&db);
        let first = chain.pages[0];
        db.set_u32(first, 0, first); // next overflow page: itself, payload still unread
        let walked = walk_chain(&db.bytes, chain.page, chain.cell);
        assert_eq!(walked.pages, vec![no(first)]);
        assert_eq!(
            walked.finding,
            Some(Finding::OverflowCycle {
                cell: Location::new(no(chain.page), cell.offset),
                repeated: no(first)
            })
        );
    }
}

#[cfg(test)]
mod zeroed_overflow_tests {
    use super::*;
    use crate::testing::Db;

    #[test]
    fn zeroed_last_overflow_page_is_missing_not_zeros() {
        let mut db = Db::named("agent-4096-utf8");
        let chain = db
            .walk("messages")
            .chains
            .into_iter()
            .find(|c| c.pages.len() >= 2)
            .unwrap();
        let last = *chain.pages.last().unwrap();
        let (at, ps) = (db.at(last, 0), db.page_size());
        db.bytes[at..at + ps].fill(0);
        let opened = Database::open(&db.bytes).unwrap();
        let page = opened.page(PageNo::new(chain.page).unwrap()).unwrap();
        let h = page.btree_header().unwrap();
        let cell = page
            .cells(&h)
            .nth(usize::from(chain.cell))
            .unwrap()
            .unwrap();
        let row = crate::value::decode_cell(&opened, &cell).unwrap();
        assert!(!row.complete);
        // The timestamp after the content lived on the zeroed page: NULL, never 0.
        assert_eq!(row.values.last(), Some(&crate::Value::Null));
        assert!(row.findings.iter().any(|f| matches!(
            f,
            Finding::OverflowIntoNonOverflowPage {
                class: PageClass::Zeroed,
                ..
            }
        )));
    }
}
