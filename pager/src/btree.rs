//! B-tree pages ("B-tree Pages"): the page header, the cell pointer array, the four kinds
//! of cell (`cell`), and the freeblock chain (`freeblock`).
//!
//! ```text
//! +--------------+---------------+----------------+-------------+--------------+----------+
//! | (page 1: the | b-tree page   | cell pointer   | unallocated | cell content | reserved |
//! | database     | header: 8, or | array: 2 bytes | space       | area: cells, | space    |
//! | header)      | 12 interior   | per cell       |             | freeblocks   |          |
//! +--------------+---------------+----------------+-------------+--------------+----------+
//! ```
//!
//! Everything is bounds-checked against the page's usable size; a defect is a
//! [`Finding`] and the next cell is still read.

use std::fmt;

use crate::cursor::{u16_at, u32_at};
use crate::finding::Finding;
use crate::types::PageNo;

mod cell;
mod freeblock;

pub use cell::{
    local_payload_len, Cell, CellRef, CellSource, Cells, IndexInteriorCell, IndexLeafCell, Payload,
    TableInteriorCell, TableLeafCell,
};
pub use freeblock::{Freeblock, Freeblocks};

/// B-tree page header ("B-tree Pages"): 8 bytes on leaves, 12 on interior pages.
/// ```text
/// +------+-----------------+------------+--------------+-------+-------------------+
/// | type | first freeblock | cell count | content area | frag. | right-most (int.) |
/// +------+-----------------+------------+--------------+-------+-------------------+
///    0     1..3              3..5         5..7           7       8..12
/// ```
pub mod btree_header {
    /// The b-tree page type flag.
    pub const PAGE_TYPE: usize = 0;
    /// Start of the first freeblock, or 0.
    pub const FIRST_FREEBLOCK: usize = 1;
    /// Number of cells on the page.
    pub const CELL_COUNT: usize = 3;
    /// Start of the cell content area; 0 means 65536.
    pub const CELL_CONTENT_AREA: usize = 5;
    /// Number of fragmented free bytes within the cell content area.
    pub const FRAGMENTED_FREE_BYTES: usize = 7;
    /// Right-most pointer, interior pages only.
    pub const RIGHT_MOST_POINTER: usize = 8;
    /// Header length of a leaf page.
    pub const LEAF_LEN: usize = 8;
    /// Header length of an interior page.
    pub const INTERIOR_LEN: usize = 12;
}

/// Where the b-tree page header starts: after the 100-byte database header on page 1.
pub fn btree_header_offset(page: PageNo) -> usize {
    if page == PageNo::FIRST {
        100
    } else {
        0
    }
}

/// The b-tree page type flag at offset 0 of the b-tree page header.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum PageType {
    /// 2: interior index b-tree page.
    IndexInterior,
    /// 5: interior table b-tree page.
    TableInterior,
    /// 10: leaf index b-tree page.
    IndexLeaf,
    /// 13: leaf table b-tree page.
    TableLeaf,
}

impl PageType {
    /// Decodes the type byte; any value other than 2, 5, 10, 13 is not a b-tree page.
    pub fn from_byte(b: u8) -> Option<PageType> {
        match b {
            2 => Some(PageType::IndexInterior),
            5 => Some(PageType::TableInterior),
            10 => Some(PageType::IndexLeaf),
            13 => Some(PageType::TableLeaf),
            _ => None,
        }
    }

    /// Whether this is an interior page (with child pointers).
    pub fn is_interior(self) -> bool {
        matches!(self, PageType::IndexInterior | PageType::TableInterior)
    }

    /// Whether this page belongs to a table b-tree (as opposed to an index b-tree).
    pub fn is_table(self) -> bool {
        matches!(self, PageType::TableInterior | PageType::TableLeaf)
    }

    /// Length of the b-tree page header: 12 on interior pages, 8 on leaves.
    pub fn header_len(self) -> usize {
        if self.is_interior() {
            btree_header::INTERIOR_LEN
        } else {
            btree_header::LEAF_LEN
        }
    }
}

impl fmt::Display for PageType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PageType::IndexInterior => "index interior page",
            PageType::TableInterior => "table interior page",
            PageType::IndexLeaf => "index leaf page",
            PageType::TableLeaf => "table leaf page",
        })
    }
}

/// One database page borrowed from the input ("Pages"). Page 1 includes the 100-byte
/// database header; [`Page::btree_header`] skips it. `bytes` may be shorter than the
/// page size when the file is cut short; every read is checked.
#[derive(Clone, Copy, Debug)]
pub struct Page<'a> {
    no: PageNo,
    bytes: &'a [u8],
    usable_size: usize,
}

impl<'a> Page<'a> {
    /// A view of page `no` whose bytes are `bytes`, with `usable_size` bytes usable (page
    /// size less the reserved space).
    pub fn new(no: PageNo, bytes: &'a [u8], usable_size: usize) -> Page<'a> {
        Page {
            no,
            bytes,
            usable_size,
        }
    }

    /// The page number.
    pub fn no(&self) -> PageNo {
        self.no
    }

    /// The page's bytes, as present in the input.
    pub fn bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// The usable size U: page size less reserved space.
    pub fn usable_size(&self) -> usize {
        self.usable_size
    }

    /// Whether every byte of the page is zero.
    pub fn is_zeroed(&self) -> bool {
        // Compare in 8-byte words: this runs over every page that is not a b-tree page.
        let words = self.bytes.chunks_exact(8);
        let tail = words.remainder();
        tail.iter().all(|b| *b == 0)
            && words
                .into_iter()
                .all(|w| w.iter().fold(0u8, |a, b| a | b) == 0)
    }

    /// Decodes the b-tree page header, checking it against the page bounds.
    pub fn btree_header(&self) -> Result<BtreePageHeader, Finding> {
        let at = btree_header_offset(self.no);
        let page = self.no;
        let raw = *self.bytes.get(at).ok_or(Finding::PageTruncated {
            page,
            available: self.bytes.len() as u32,
        })?;
        let page_type = PageType::from_byte(raw).ok_or(Finding::InvalidPageType { page, raw })?;
        let truncated = Finding::PageTruncated {
            page,
            available: self.bytes.len() as u32,
        };
        let h = |off: usize| u16_at(self.bytes, at + off).ok_or_else(|| truncated.clone());
        let first_freeblock = h(btree_header::FIRST_FREEBLOCK)?;
        let cell_count = h(btree_header::CELL_COUNT)?;
        let raw_area = h(btree_header::CELL_CONTENT_AREA)?;
        // A zero content-area offset is 65536, as SQLite decodes it.
        let cell_content_area = if raw_area == 0 {
            65536
        } else {
            u32::from(raw_area)
        };
        let fragmented_free_bytes = *self
            .bytes
            .get(at + btree_header::FRAGMENTED_FREE_BYTES)
            .ok_or_else(|| truncated.clone())?;
        let right_most_pointer = if page_type.is_interior() {
            Some(u32_at(self.bytes, at + btree_header::RIGHT_MOST_POINTER).ok_or(truncated)?)
        } else {
            None
        };
        let cell_pointers_start = at + page_type.header_len();
        let cell_pointers_end = cell_pointers_start + 2 * usize::from(cell_count);
        if cell_pointers_end > self.usable_size {
            return Err(Finding::CellCountTooLarge {
                page,
                count: cell_count,
            });
        }
        Ok(BtreePageHeader {
            page_type,
            first_freeblock,
            cell_count,
            cell_content_area,
            fragmented_free_bytes,
            right_most_pointer,
            cell_pointers_start,
        })
    }

    /// Checks of the header that do not stop the cells from being read: content area and
    /// fragmented bytes out of range.
    pub fn header_findings(&self, header: &BtreePageHeader) -> Vec<Finding> {
        let mut out = Vec::new();
        let area = header.cell_content_area as usize;
        if area < header.cell_pointers_end() || area > self.usable_size {
            out.push(Finding::CellContentAreaOutOfRange {
                page: self.no,
                offset: header.cell_content_area,
            });
        }
        if header.fragmented_free_bytes > 60 {
            out.push(Finding::FragmentedBytesTooLarge {
                page: self.no,
                count: header.fragmented_free_bytes,
            });
        }
        out
    }

    /// The cell pointer array: offsets of the cells from the start of the page, in key order.
    pub fn cell_pointers(&self, header: &BtreePageHeader) -> impl Iterator<Item = u16> + 'a {
        let bytes = self.bytes;
        let start = header.cell_pointers_start;
        (0..usize::from(header.cell_count)).filter_map(move |i| u16_at(bytes, start + 2 * i))
    }

    /// The `i`-th cell pointer, read at once (`cell_pointers(h).nth(i)` reads the ones
    /// before it too); `None` past the array or the page.
    pub fn cell_pointer(&self, header: &BtreePageHeader, i: usize) -> Option<u16> {
        if i >= usize::from(header.cell_count) {
            return None;
        }
        u16_at(self.bytes, header.cell_pointers_start + 2 * i)
    }
}

/// A decoded b-tree page header (see [`btree_header`] for the layout).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BtreePageHeader {
    page_type: PageType,
    first_freeblock: u16,
    cell_count: u16,
    cell_content_area: u32,
    fragmented_free_bytes: u8,
    right_most_pointer: Option<u32>,
    cell_pointers_start: usize,
}

impl BtreePageHeader {
    /// The b-tree page type.
    pub fn page_type(&self) -> PageType {
        self.page_type
    }
    /// Offset of the first freeblock, or 0 when there is none.
    pub fn first_freeblock(&self) -> u16 {
        self.first_freeblock
    }
    /// Number of cells on the page.
    pub fn cell_count(&self) -> u16 {
        self.cell_count
    }
    /// Start of the cell content area (a stored 0 decodes as 65536).
    pub fn cell_content_area(&self) -> u32 {
        self.cell_content_area
    }
    /// Fragmented free bytes within the cell content area.
    pub fn fragmented_free_bytes(&self) -> u8 {
        self.fragmented_free_bytes
    }
    /// The right-most pointer of an interior page, raw (0 is possible on damaged pages).
    pub fn right_most_pointer(&self) -> Option<u32> {
        self.right_most_pointer
    }
    /// Offset of the cell pointer array from the start of the page.
    pub fn cell_pointers_start(&self) -> usize {
        self.cell_pointers_start
    }
    /// Offset just past the cell pointer array.
    pub fn cell_pointers_end(&self) -> usize {
        self.cell_pointers_start + 2 * usize::from(self.cell_count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(super) fn page(bytes: &[u8]) -> Page<'_> {
        Page::new(PageNo::new(2).unwrap(), bytes, bytes.len())
    }

    /// A 512-byte table leaf with one cell (rowid 7, 3-byte record: header 2, one 1-byte int).
    pub(super) fn one_cell_leaf() -> Vec<u8> {
        let mut p = vec![0u8; 512];
        #[rustfmt::skip]
        let header = [
            0x0d,       // page type: table b-tree leaf
            0x00, 0x00, // first freeblock: none
            0x00, 0x01, // cell count: 1
            0x01, 0xf8, // cell content area: 504
            0x00,       // fragmented free bytes
            0x01, 0xf8, // cell pointer 0: 504
        ];
        p[..10].copy_from_slice(&header);
        #[rustfmt::skip]
        let cell = [
            0x03,       // payload size: 3
            0x07,       // rowid: 7
            0x02, 0x01, // record header: size 2, serial type 1 (8-bit int)
            0x2a,       // value: 42
        ];
        p[504..509].copy_from_slice(&cell);
        p
    }

    #[test]
    fn page_cut_short_by_the_end_of_the_file() {
        let bytes = one_cell_leaf();
        let p = Page::new(PageNo::new(2).unwrap(), &bytes[..5], 512);
        assert_eq!(
            p.btree_header(),
            Err(Finding::PageTruncated {
                page: p.no(),
                available: 5
            })
        );
    }

    #[test]
    fn invalid_page_type() {
        let mut bytes = one_cell_leaf();
        bytes[0] = 0x07;
        assert_eq!(
            page(&bytes).btree_header(),
            Err(Finding::InvalidPageType {
                page: PageNo::new(2).unwrap(),
                raw: 7
            })
        );
    }

    #[test]
    fn cell_count_past_page_end() {
        let mut bytes = one_cell_leaf();
        bytes[3..5].copy_from_slice(&0x0200u16.to_be_bytes());
        assert!(matches!(
            page(&bytes).btree_header(),
            Err(Finding::CellCountTooLarge { count: 512, .. })
        ));
    }

    /// Each pointer read at once is the one the array's iterator gives, past the count and
    /// on a page cut short in the middle of the array too.
    #[test]
    fn a_cell_pointer_read_at_once_is_the_arrays() {
        for (count, len) in [
            (1u16, 512usize),
            (40, 512),
            (300, 512),
            (200, 300),
            (0, 512),
        ] {
            let mut bytes = one_cell_leaf();
            bytes[3..5].copy_from_slice(&count.to_be_bytes());
            bytes[5..7].copy_from_slice(&0u16.to_be_bytes());
            for (i, b) in bytes.iter_mut().enumerate().skip(8) {
                *b = (i * 7 % 251) as u8;
            }
            bytes.truncate(len);
            let p = Page::new(PageNo::new(2).unwrap(), &bytes, 512);
            let h = p.btree_header();
            let Ok(h) = h else { continue };
            for i in 0..usize::from(count) + 3 {
                assert_eq!(
                    p.cell_pointer(&h, i),
                    p.cell_pointers(&h).nth(i),
                    "{count} {len} {i}"
                );
            }
        }
    }

    #[test]
    fn content_area_inside_the_header() {
        let mut bytes = one_cell_leaf();
        bytes[5..7].copy_from_slice(&4u16.to_be_bytes());
        let p = page(&bytes);
        let h = p.btree_header().unwrap();
        assert_eq!(
            p.header_findings(&h),
            vec![Finding::CellContentAreaOutOfRange {
                page: p.no(),
                offset: 4
            }]
        );
    }

    #[test]
    fn zero_content_area_is_65536() {
        let mut bytes = one_cell_leaf();
        bytes[5..7].copy_from_slice(&[0, 0]);
        assert_eq!(
            page(&bytes).btree_header().unwrap().cell_content_area(),
            65536
        );
    }

    #[test]
    fn too_many_fragmented_bytes() {
        let mut bytes = one_cell_leaf();
        bytes[7] = 61;
        let p = page(&bytes);
        let h = p.btree_header().unwrap();
        assert_eq!(
            p.header_findings(&h),
            vec![Finding::FragmentedBytesTooLarge {
                page: p.no(),
                count: 61
            }]
        );
    }
}
