//! Newtypes for the numbers that get mixed up: page numbers, page sizes, rowids, cell
//! indexes, and locations in the input.

use std::fmt;
use std::num::NonZeroU32;

/// A 1-based page number ("Pages"). SQLite uses 0 for "no page", so pointers read from
/// disk decode to `Option<PageNo>` through [`PageNo::new`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PageNo(NonZeroU32);

impl PageNo {
    /// Page 1, the page that begins with the database header and holds the schema root.
    pub const FIRST: PageNo = PageNo(NonZeroU32::MIN);

    /// The page numbered `n`, or `None` for 0 ("no page").
    pub fn new(n: u32) -> Option<PageNo> {
        NonZeroU32::new(n).map(PageNo)
    }

    /// The page number as stored on disk.
    pub fn get(self) -> u32 {
        self.0.get()
    }

    /// Zero-based index of the page in the file.
    pub fn index(self) -> usize {
        (self.0.get() - 1) as usize
    }

    /// The byte offset of this page in the database file: the one place that maps a page
    /// to its file offset.
    pub fn file_offset(self, page_size: PageSize) -> u64 {
        u64::from(self.0.get() - 1) * u64::from(page_size.get())
    }
}

impl fmt::Display for PageNo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "page {}", self.0)
    }
}

/// The database page size in bytes: a power of two from 512 to 65536 ("The Database
/// Header", offset 16; the raw value 1 means 65536).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PageSize(u32);

impl PageSize {
    /// The smallest page size SQLite allows.
    pub const MIN: PageSize = PageSize(512);
    /// The largest page size SQLite allows.
    pub const MAX: PageSize = PageSize(65536);

    /// Every valid page size, smallest first.
    pub fn all() -> impl Iterator<Item = PageSize> {
        (9..=16).map(|shift| PageSize(1 << shift))
    }

    /// A page size in bytes, or `None` unless it is a power of two from 512 to 65536.
    pub fn new(bytes: u32) -> Option<PageSize> {
        (bytes.is_power_of_two() && (512..=65536).contains(&bytes)).then_some(PageSize(bytes))
    }

    /// Decodes the 2-byte header field at offset 16, where 1 stands for 65536.
    pub fn from_header_field(raw: u16) -> Option<PageSize> {
        if raw == 1 {
            Some(PageSize::MAX)
        } else {
            PageSize::new(u32::from(raw))
        }
    }

    /// The page size in bytes.
    pub fn get(self) -> u32 {
        self.0
    }

    /// The page size in bytes, as a `usize`.
    pub fn bytes(self) -> usize {
        self.0 as usize
    }
}

impl fmt::Display for PageSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} bytes", self.0)
    }
}

/// A table b-tree key ("rowid").
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RowId(pub i64);

impl fmt::Display for RowId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "rowid {}", self.0)
    }
}

/// The index of a cell in its page's cell pointer array.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CellIndex(pub u16);

impl fmt::Display for CellIndex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cell {}", self.0)
    }
}

/// A place in the input: a byte offset within a page of the database file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Location {
    /// The page.
    pub page: PageNo,
    /// Byte offset from the start of the page.
    pub offset: u32,
}

impl Location {
    /// Offset `offset` of page `page`.
    pub fn new(page: PageNo, offset: usize) -> Location {
        Location {
            page,
            offset: u32::try_from(offset).unwrap_or(u32::MAX),
        }
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} offset {}", self.page, self.offset)
    }
}

/// A compact set of page numbers (one bit a page) up to a page count. Every chain and tree
/// walk keeps one to detect cycles. The bits are kept in blocks of [`BLOCK_PAGES`] pages,
/// each allocated on its first member: a walk of a few pages in a file of millions (an
/// orphan group, a chain) costs a table of one pointer per block, not a bit per page (a
/// 20 GB file's orphan groups zeroed tens of gigabytes of bitmaps, one per walk).
#[derive(Clone, Debug, Default)]
pub struct PageSet {
    blocks: Vec<Option<Box<[u64; BLOCK_WORDS]>>>,
    /// Pages above it are never members.
    page_count: u32,
}

/// Words of one block of a [`PageSet`].
const BLOCK_WORDS: usize = 64;
/// Pages of one block of a [`PageSet`].
pub const BLOCK_PAGES: usize = BLOCK_WORDS * 64;

impl PageSet {
    /// An empty set able to hold pages 1..=`page_count`; larger pages are never members.
    pub fn with_page_count(page_count: u32) -> PageSet {
        PageSet {
            blocks: std::iter::repeat_with(|| None)
                .take((page_count as usize).div_ceil(BLOCK_PAGES))
                .collect(),
            page_count,
        }
    }

    /// Inserts `page`; returns `false` if it was already present or cannot be held.
    pub fn insert(&mut self, page: PageNo) -> bool {
        if page.get() > self.page_count {
            return false;
        }
        let i = page.index();
        let Some(block) = self.blocks.get_mut(i / BLOCK_PAGES) else {
            return false;
        };
        let words = block.get_or_insert_with(|| Box::new([0; BLOCK_WORDS]));
        let Some(word) = words.get_mut(i % BLOCK_PAGES / 64) else {
            return false;
        };
        let mask = 1u64 << (i % 64);
        let fresh = *word & mask == 0;
        *word |= mask;
        fresh
    }

    /// Whether `page` is in the set.
    pub fn contains(&self, page: PageNo) -> bool {
        let i = page.index();
        self.blocks
            .get(i / BLOCK_PAGES)
            .and_then(Option::as_deref)
            .and_then(|words| words.get(i % BLOCK_PAGES / 64))
            .is_some_and(|w| w & (1u64 << (i % 64)) != 0)
    }

    /// The number of pages in the set.
    pub fn len(&self) -> usize {
        self.words().map(|w| w.count_ones() as usize).sum()
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.words().all(|w| w == 0)
    }

    /// Every word of the blocks allocated.
    fn words(&self) -> impl Iterator<Item = u64> + '_ {
        self.blocks.iter().flatten().flat_map(|b| b.iter().copied())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_size_field_one_means_65536() {
        assert_eq!(PageSize::from_header_field(1), Some(PageSize::MAX));
        assert_eq!(
            PageSize::from_header_field(4096).map(PageSize::get),
            Some(4096)
        );
        assert_eq!(PageSize::from_header_field(0), None);
        assert_eq!(PageSize::from_header_field(1000), None);
        assert_eq!(PageSize::from_header_field(256), None);
        assert_eq!(PageSize::all().count(), 8);
    }

    #[test]
    fn page_zero_is_no_page() {
        assert_eq!(PageNo::new(0), None);
        let p = PageNo::new(3).unwrap();
        assert_eq!(p.file_offset(PageSize::new(1024).unwrap()), 2048);
        assert_eq!(p.to_string(), "page 3");
    }

    #[test]
    fn page_set_rejects_repeats_and_out_of_range_pages() {
        let mut set = PageSet::with_page_count(70);
        let p = PageNo::new(65).unwrap();
        assert!(set.insert(p));
        assert!(!set.insert(p));
        assert!(set.contains(p));
        assert!(!set.insert(PageNo::new(200).unwrap()));
        assert!(!set.insert(PageNo::new(71).unwrap()), "past the page count");
        assert_eq!(set.len(), 1);
    }

    #[test]
    fn page_set_holds_pages_across_its_blocks() {
        let count = 3 * BLOCK_PAGES as u32 + 5;
        let mut set = PageSet::with_page_count(count);
        assert!(set.is_empty());
        let pages = [1, 64, 65, 4096, 4097, 8192, 8193, 12_000, count];
        for &p in &pages {
            assert!(set.insert(PageNo::new(p).unwrap()), "{p}");
        }
        for p in 1..=count + 70 {
            let page = PageNo::new(p).unwrap();
            assert_eq!(set.contains(page), pages.contains(&p), "{p}");
        }
        assert_eq!(set.len(), pages.len());
        assert!(!set.is_empty());
        assert_eq!(
            set.blocks.iter().flatten().count(),
            4,
            "a block is made on its first page"
        );
    }
}
