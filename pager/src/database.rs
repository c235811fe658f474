//! The file as a database ("Database File Format"): the database header read, the
//! geometry decided (`geometry`: page size, usable size and text encoding, inferred
//! from the pages when the header's fields are damaged), the pages handed out
//! (`pages`), and the logs beside the file read over it: a hot rollback journal's
//! original images ("The Rollback Journal"), then a write-ahead log's committed frames
//! ("The WAL File Format"), and the states of a history one commit at a time.
//!
//! ```text
//! +---------------------+----------+----------+-- ... --+----------+
//! | page 1: database    | page 2   | page 3   |         | page N   |
//! | header (100 bytes), |          |          |         |          |
//! | then a b-tree page  |          |          |         |          |
//! +---------------------+----------+----------+-- ... --+----------+
//! ```
//!
//! A page a log holds an image of is read from that image instead of the file. Only an
//! empty input, or one with no header string and no page that fits any page size, is
//! refused ([`OpenError`]); every other defect is a finding. A cell's overflow chain is
//! followed by [`crate::overflow`].

use crate::finding::Finding;
use crate::header::{DatabaseHeader, TextEncoding};
use crate::types::{PageNo, PageSize};

mod geometry;
mod pages;

pub use crate::overflow::{AssembledPayload, OverflowChain};
pub use geometry::{EncodingSource, PageSizeEvidence, PageSizeSource};
pub use pages::{ptrmap_page_of, LOCK_BYTE_OFFSET};

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
    /// Told of each page image handed out (see [`Database::observed`]).
    observer: Observer<'a>,
    findings: Vec<Finding>,
}

/// What is told of each page image a database hands out, from the file or a log (see
/// [`Database::observed`]).
#[derive(Clone, Copy, Default)]
struct Observer<'a>(Option<&'a Observe<'a>>);

/// A function told of page images (see [`Database::observed`]).
pub type Observe<'a> = dyn Fn(&[u8]) + Sync + 'a;

impl std::fmt::Debug for Observer<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "observed"
        } else {
            "unobserved"
        })
    }
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
        // A journal whose page size the database disagrees with, unproven, is not rolled
        // back: it is reported, and the database read as it stands.
        let declared = PageSize::from_header_field(DatabaseHeader::parse(bytes).page_size_raw);
        let disagrees = journal
            .filter(|j| !j.page_size_proven(declared))
            .and_then(|j| Some((j.header?.page_size, declared?.get())));
        let journal = journal.filter(|_| disagrees.is_none());
        // So is a log whose frames are of another size than the database's pages.
        let wal_disagrees = wal
            .filter(|w| !w.page_size_proven(declared))
            .and_then(|w| Some((w.header.page_size, declared?.get())));
        let wal = wal.filter(|_| wal_disagrees.is_none());
        let mut db = Database::open_with_proven_logs(bytes, journal, wal)?;
        if let Some((journal, database)) = disagrees {
            db.findings
                .push(Finding::JournalPageSizeDisagrees { journal, database });
        }
        if let Some((wal, database)) = wal_disagrees {
            db.findings
                .push(Finding::WalPageSizeDisagrees { wal, database });
        }
        Ok(db)
    }

    /// [`Database::open_with_logs`] once the journal's page size is proven (or it is
    /// left out).
    fn open_with_proven_logs(
        bytes: &'a [u8],
        journal: Option<&crate::journal::Journal<'a>>,
        wal: Option<&crate::wal::Wal<'a>>,
    ) -> Result<Database<'a>, OpenError> {
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
        // A database no table was ever created in (an empty file made WAL, whose first
        // schema change is still in its log) has 0 for its schema format and text
        // encoding, which SQLite reads as format 1 and UTF-8: no finding then.
        let fresh = schema_is_empty(logged(PageNo::FIRST).unwrap_or(bytes));
        findings.extend(
            header
                .findings()
                .into_iter()
                .filter(|f| !(fresh && *f == Finding::InvalidSchemaFormat { raw: 0 })),
        );

        let from_log = overlay
            .as_ref()
            .and_then(|o| Some((o.page_size?, o.source.clone())));
        let (page_size, page_size_source) =
            geometry::decide_page_size(bytes, &header, from_log, &mut findings)
                .ok_or(OpenError::NotADatabase { len })?;
        let reserved_space = geometry::reserved_space(page_size, &header, &mut findings);

        let file_pages =
            u32::try_from(len.div_ceil(u64::from(page_size.get()))).unwrap_or(u32::MAX);
        // The size the log or journal records, but never past the file and the pages they
        // hold: a size field is input, not a licence to allocate.
        let reach = overlay.as_ref().map_or(file_pages, |o| {
            geometry::log_reach(o.pages.keys().map(|p| p.get()), file_pages)
        });
        let page_count = overlay
            .as_ref()
            .and_then(|o| Some(o.pages_in_use?.min(reach)))
            .unwrap_or(file_pages);
        // Pages the log's size would take in, past its reach.
        if let Some((o, size)) = overlay.as_ref().and_then(|o| Some((o, o.pages_in_use?))) {
            let out = o
                .pages
                .keys()
                .map(|p| p.get())
                .filter(|p| *p > reach && *p <= size);
            let count = out.clone().count() as u32;
            if let Some(first) = out.take(1).next() {
                findings.push(Finding::LogPagesOutOfReach {
                    first,
                    count,
                    reach,
                });
            }
        }
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

        let encoding = TextEncoding::from_header_field(header.text_encoding_raw);
        let mut db = Database {
            bytes,
            header,
            page_size,
            page_size_source,
            reserved_space,
            encoding: encoding.unwrap_or(TextEncoding::Utf8),
            encoding_source: EncodingSource::Header,
            page_count,
            overlay: std::sync::Arc::from(Vec::new()),
            versions: None,
            frame_limit: u32::MAX,
            observer: Observer::default(),
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
        if encoding.is_none() && !(fresh && db.header.text_encoding_raw == 0) {
            db.infer_encoding();
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

    /// This database telling `observer` of every page image it hands out (and every clone
    /// and state of it, [`Database::at_frame`]): the bytes of a mapped file or log, which
    /// a reader that jumps about them makes resident a folio at a time; the caller that
    /// mapped them counts, as each page is read, what its readers map.
    pub fn observed(&self, observer: &'a Observe<'a>) -> Database<'a> {
        let mut next = self.clone();
        next.observer = Observer(Some(observer));
        next
    }

    /// The function this database tells of the page images it hands out, if any (see
    /// [`Database::observed`]): for a reader that opens another database over the same
    /// bytes (a log's history) to tell it too.
    pub fn observer(&self) -> Option<&'a Observe<'a>> {
        self.observer.0
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
            observer: self.observer,
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

    /// Pages whose image comes from the write-ahead log (or the rollback journal, when
    /// the database was opened with one).
    pub fn pages_from_wal(&self) -> usize {
        self.overlay.len()
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
}

/// Whether page 1 (its image: the file's first bytes, or the log's) is a table leaf with
/// no cell: the schema of a database in which nothing was ever created.
fn schema_is_empty(page: &[u8]) -> bool {
    matches!(page.get(100..105), Some([13, _, _, 0, 0]))
}

#[cfg(test)]
mod observer_tests {
    use super::*;
    use crate::testing::Db;

    /// An observed database tells of every page image it hands out, from the file and
    /// from a log's versions, in its clones and in every state of its history; one not
    /// observed tells no one.
    #[test]
    fn an_observed_database_tells_of_every_page_it_hands_out() {
        let db = Db::named("agent-4096-utf8");
        let told = std::sync::Mutex::new(Vec::<(usize, usize)>::new());
        let observe = |image: &[u8]| {
            told.lock()
                .unwrap()
                .push((image.as_ptr().addr(), image.len()));
        };
        let plain = Database::open(&db.bytes).unwrap();
        let two = PageNo::new(2).unwrap();
        let newer = vec![7u8; 4096];
        {
            let observed = plain.observed(&observe);
            let page = observed.clone().page(two).unwrap();
            assert_eq!(page.bytes().as_ptr(), db.bytes[4096..].as_ptr());
            let history = observed.with_versions(vec![(two, 1, &newer)]);
            history.at_frame(1, None).page(two).unwrap();
            history.at_frame(0, None).page(PageNo::FIRST).unwrap();
        }
        plain.page(two).unwrap();
        let file = db.bytes.as_ptr().addr();
        // Each state reads its header from page 1 as it is made.
        let (one, newer) = ((file, 4096), (newer.as_ptr().addr(), 4096));
        assert_eq!(
            told.into_inner().unwrap(),
            [(file + 4096, 4096), one, newer, one, one]
        );
    }
}
