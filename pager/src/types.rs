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

/// A compact set of page numbers (one bit a page), sized once from the page count. Every
/// chain walk keeps one to detect cycles.
#[derive(Clone, Debug, Default)]
pub struct PageSet {
    bits: Vec<u64>,
}

impl PageSet {
    /// An empty set able to hold pages 1..=`page_count`; larger pages are never members.
    pub fn with_page_count(page_count: u32) -> PageSet {
        PageSet {
            bits: vec![0; (page_count as usize).div_ceil(64)],
        }
    }

    /// Inserts `page`; returns `false` if it was already present or cannot be held.
    pub fn insert(&mut self, page: PageNo) -> bool {
        let i = page.index();
        match self.bits.get_mut(i / 64) {
            Some(word) => {
                let mask = 1u64 << (i % 64);
                let fresh = *word & mask == 0;
                *word |= mask;
                fresh
            }
            None => false,
        }
    }

    /// Whether `page` is in the set.
    pub fn contains(&self, page: PageNo) -> bool {
        let i = page.index();
        self.bits
            .get(i / 64)
            .is_some_and(|w| w & (1u64 << (i % 64)) != 0)
    }

    /// The number of pages in the set.
    pub fn len(&self) -> usize {
        self.bits.iter().map(|w| w.count_ones() as usize).sum()
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.bits.iter().all(|w| *w == 0)
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
        assert_eq!(set.len(), 1);
    }
}
