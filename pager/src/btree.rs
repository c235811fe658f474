//! B-tree pages ("B-tree Pages"): the page header, the cell pointer array, the four kinds
//! of cell, and the freeblock chain.
//!
//! ```text
//! +----------------------+--------------------+-----------------+---------------------+
//! | (page 1: 100-byte    | b-tree page header | cell pointer    | unallocated | cell  |
//! |  database header)    | 8 or 12 bytes      | array, 2n bytes | space       | content area ...  | reserved |
//! +----------------------+--------------------+-----------------+---------------------+
//! ```
//!
//! Everything is bounds-checked against the page's usable size; a defect is a
//! [`Finding`] and the next cell is still read.

use std::fmt;
use std::iter::FusedIterator;

use crate::cursor::{u16_at, u32_at};
use crate::finding::Finding;
use crate::types::{CellIndex, Location, PageNo};
use crate::varint::read_varint;

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

    /// The cells of this page, lazily decoded; each item is a cell or the finding that
    /// stopped it from being read. A bad cell never stops the next one.
    pub fn cells(&self, header: &BtreePageHeader) -> Cells<'a> {
        Cells {
            page: *self,
            header: *header,
            next: 0,
        }
    }

    /// Decodes the cell at `offset` on this page as a cell of `page_type`.
    pub fn cell_at(
        &self,
        page_type: PageType,
        index: CellIndex,
        offset: u16,
    ) -> Result<CellRef<'a>, Finding> {
        let page = self.no;
        let usable = self.usable_size;
        let start = usize::from(offset);
        let past_end = Finding::CellPastPageEnd {
            page,
            index,
            offset,
        };
        let region = self
            .bytes
            .get(start..usable.min(self.bytes.len()))
            .ok_or_else(|| past_end.clone())?;
        let (cell, len) = parse_cell(page_type, region, usable).ok_or(past_end)?;
        Ok(CellRef {
            location: Location::new(page, start),
            index,
            source: CellSource::Pointer,
            offset,
            len,
            cell,
        })
    }

    /// The freeblock chain: unallocated blocks inside the cell content area, in ascending
    /// order. A block out of range or out of order is yielded as a finding and ends the chain.
    pub fn freeblocks(&self, header: &BtreePageHeader) -> Freeblocks<'a> {
        Freeblocks {
            page: *self,
            next: header.first_freeblock,
            min: header.cell_pointers_end(),
            first: true,
            done: false,
        }
    }

    /// Checks that no two cells of the page share bytes; cells that cannot be read at all
    /// are left to [`Page::cells`], which reports them.
    pub fn overlap_findings(&self, header: &BtreePageHeader) -> Vec<Finding> {
        let mut spans: Vec<(usize, usize, CellIndex)> = self
            .cells(header)
            .flatten()
            .map(|c| {
                (
                    usize::from(c.offset),
                    usize::from(c.offset) + c.len,
                    c.index,
                )
            })
            .collect();
        spans.sort_unstable();
        let mut out = Vec::new();
        let mut furthest: Option<(usize, CellIndex)> = None;
        for (start, end, index) in spans {
            if let Some((prev_end, other)) = furthest {
                if start < prev_end {
                    out.push(Finding::CellOverlap {
                        page: self.no,
                        index,
                        other,
                        offset: start as u16,
                    });
                }
            }
            if furthest.is_none_or(|(e, _)| end > e) {
                furthest = Some((end, index));
            }
        }
        out
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

/// The payload of a cell ("Cell Payload Overflow Pages"): the bytes stored on the b-tree
/// page, the total length, and the first overflow page when the payload spills.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Payload<'a> {
    /// The part of the payload stored on the b-tree page.
    pub local: &'a [u8],
    /// The payload size from the cell header.
    pub total_len: u64,
    /// The first overflow page: `None` when the payload fits locally, or when the pointer is 0.
    pub first_overflow: Option<PageNo>,
}

impl Payload<'_> {
    /// Whether part of the payload lives on overflow pages.
    pub fn spills(&self) -> bool {
        self.total_len > self.local.len() as u64
    }
}

/// A table b-tree leaf cell: payload size, rowid, payload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TableLeafCell<'a> {
    /// The integer key.
    pub rowid: i64,
    /// The record.
    pub payload: Payload<'a>,
}

/// A table b-tree interior cell: left child pointer, integer key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TableInteriorCell {
    /// Raw left child page number.
    pub left_child: u32,
    /// The divider key: the largest key in the left child's subtree.
    pub rowid: i64,
}

/// An index b-tree leaf cell: payload size, payload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IndexLeafCell<'a> {
    /// The key record.
    pub payload: Payload<'a>,
}

/// An index b-tree interior cell: left child pointer, payload size, payload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IndexInteriorCell<'a> {
    /// Raw left child page number.
    pub left_child: u32,
    /// The key record.
    pub payload: Payload<'a>,
}

/// One cell of any of the four kinds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cell<'a> {
    /// On a table leaf.
    TableLeaf(TableLeafCell<'a>),
    /// On a table interior page.
    TableInterior(TableInteriorCell),
    /// On an index leaf.
    IndexLeaf(IndexLeafCell<'a>),
    /// On an index interior page.
    IndexInterior(IndexInteriorCell<'a>),
}

impl<'a> Cell<'a> {
    /// The payload, for the three kinds of cell that carry one.
    pub fn payload(&self) -> Option<&Payload<'a>> {
        match self {
            Cell::TableLeaf(c) => Some(&c.payload),
            Cell::IndexLeaf(c) => Some(&c.payload),
            Cell::IndexInterior(c) => Some(&c.payload),
            Cell::TableInterior(_) => None,
        }
    }

    /// The raw left child pointer of an interior cell.
    pub fn left_child(&self) -> Option<u32> {
        match self {
            Cell::TableInterior(c) => Some(c.left_child),
            Cell::IndexInterior(c) => Some(c.left_child),
            _ => None,
        }
    }

    /// The integer key of a table b-tree cell.
    pub fn rowid(&self) -> Option<i64> {
        match self {
            Cell::TableLeaf(c) => Some(c.rowid),
            Cell::TableInterior(c) => Some(c.rowid),
            _ => None,
        }
    }
}

/// A cell with its place on the page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CellRef<'a> {
    /// Page and byte offset of the cell.
    pub location: Location,
    /// Its index in the cell pointer array; for a cell no pointer names
    /// ([`CellSource::ContentArea`]), its ordinal among such cells of the page.
    pub index: CellIndex,
    /// How the walk came to it.
    pub source: CellSource,
    /// Its offset on the page (the cell pointer).
    pub offset: u16,
    /// Bytes the cell occupies on the page.
    pub len: usize,
    /// The decoded cell.
    pub cell: Cell<'a>,
}

/// How a walk came to a cell.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CellSource {
    /// A cell pointer names it, and the page bears the pointer out: its pointers account
    /// for its content area, or a well-formed cell starts where this one points.
    Pointer,
    /// No pointer names it: a well-formed cell found in the page's content area.
    ContentArea,
    /// A pointer names it on a page whose pointers do not account for its content area,
    /// and no well-formed cell starts where it points: what it reads may be no cell.
    StrayPointer,
}

impl CellSource {
    /// Whether the page's structure vouches for the cell, so that its record is the
    /// table's row without further checks.
    pub fn vouched(self) -> bool {
        self == CellSource::Pointer
    }
}

/// The number of payload bytes stored on the b-tree page ("Cell Payload Overflow Pages").
/// `payload_len` is P, `usable` is U; table leaves and index pages differ only in X.
// SQLite: btreeParseCellAdjustSizeForOverflow (btree.c)
pub fn local_payload_len(table_leaf: bool, payload_len: u64, usable: usize) -> usize {
    let u = usable as u64;
    let x = if table_leaf {
        u.saturating_sub(35)
    } else {
        ((u.saturating_sub(12)) * 64 / 255).saturating_sub(23)
    };
    if payload_len <= x {
        return payload_len as usize;
    }
    let m = ((u.saturating_sub(12)) * 32 / 255).saturating_sub(23);
    let k = m + (payload_len - m) % (u.saturating_sub(4)).max(1);
    (if k <= x { k } else { m }) as usize
}

/// Parses one cell at the start of `bytes` (which run to the usable end of the page),
/// returning the cell and its length on the page, or `None` if it runs past the end.
fn parse_cell(page_type: PageType, bytes: &[u8], usable: usize) -> Option<(Cell<'_>, usize)> {
    match page_type {
        PageType::TableInterior => {
            let left_child = u32_at(bytes, 0)?;
            let (key, n) = read_varint(bytes.get(4..)?)?;
            Some((
                Cell::TableInterior(TableInteriorCell {
                    left_child,
                    rowid: key as i64,
                }),
                4 + n,
            ))
        }
        PageType::TableLeaf => {
            let (total_len, n1) = read_varint(bytes)?;
            let (key, n2) = read_varint(bytes.get(n1..)?)?;
            let (payload, len) = parse_payload(true, bytes, n1 + n2, total_len, usable)?;
            Some((
                Cell::TableLeaf(TableLeafCell {
                    rowid: key as i64,
                    payload,
                }),
                len,
            ))
        }
        PageType::IndexLeaf => {
            let (total_len, n) = read_varint(bytes)?;
            let (payload, len) = parse_payload(false, bytes, n, total_len, usable)?;
            Some((Cell::IndexLeaf(IndexLeafCell { payload }), len))
        }
        PageType::IndexInterior => {
            let left_child = u32_at(bytes, 0)?;
            let (total_len, n) = read_varint(bytes.get(4..)?)?;
            let (payload, len) = parse_payload(false, bytes, 4 + n, total_len, usable)?;
            Some((
                Cell::IndexInterior(IndexInteriorCell {
                    left_child,
                    payload,
                }),
                len,
            ))
        }
    }
}

fn parse_payload(
    table_leaf: bool,
    bytes: &[u8],
    start: usize,
    total_len: u64,
    usable: usize,
) -> Option<(Payload<'_>, usize)> {
    let local_len = local_payload_len(table_leaf, total_len, usable);
    let end = start.checked_add(local_len)?;
    let local = bytes.get(start..end)?;
    let (first_overflow, len) = if (local_len as u64) < total_len {
        (PageNo::new(u32_at(bytes, end)?), end + 4)
    } else {
        (None, end)
    };
    // SQLite never allocates fewer than 4 bytes to a cell.
    Some((
        Payload {
            local,
            total_len,
            first_overflow,
        },
        len.max(4),
    ))
}

/// Iterator over the cells of one b-tree page; see [`Page::cells`]. A bad cell never
/// stops the next one, but a cell pointer array cut short by the end of the page's bytes
/// loses the cursor: that [`Finding::PageTruncated`] is yielded once, and the iterator is
/// fused after it.
#[derive(Clone, Debug)]
pub struct Cells<'a> {
    page: Page<'a>,
    header: BtreePageHeader,
    next: u16,
}

impl<'a> Iterator for Cells<'a> {
    type Item = Result<CellRef<'a>, Finding>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.next >= self.header.cell_count {
            return None;
        }
        let index = CellIndex(self.next);
        self.next += 1;
        let page = self.page.no;
        let at = self.header.cell_pointers_start + 2 * usize::from(index.0);
        let Some(offset) = u16_at(self.page.bytes, at) else {
            // Every later pointer lies further on, past the bytes too: the cursor is lost.
            self.next = self.header.cell_count;
            return Some(Err(Finding::PageTruncated {
                page,
                available: self.page.bytes.len() as u32,
            }));
        };
        // SQLite: the cell must start after the cell pointer array and leave room for a
        // 4-byte minimum cell before the usable end (btreeCellSizeCheck, btree.c).
        let first = self.header.cell_pointers_end();
        let last = self.page.usable_size.saturating_sub(4);
        if usize::from(offset) < first || usize::from(offset) > last {
            return Some(Err(Finding::CellPointerOutOfRange {
                page,
                index,
                offset,
            }));
        }
        Some(self.page.cell_at(self.header.page_type, index, offset))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = usize::from(self.header.cell_count - self.next.min(self.header.cell_count));
        (n, Some(n))
    }
}

impl FusedIterator for Cells<'_> {}

/// A freeblock: an unallocated run inside the cell content area, where the bytes of
/// deleted cells may still be.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Freeblock<'a> {
    /// Offset from the start of the page.
    pub offset: u16,
    /// Size in bytes, including its 4-byte header.
    pub size: u16,
    /// The block's bytes, header included.
    pub bytes: &'a [u8],
}

/// Iterator over a page's freeblock chain; see [`Page::freeblocks`]. Fused after a finding.
#[derive(Clone, Debug)]
pub struct Freeblocks<'a> {
    page: Page<'a>,
    next: u16,
    min: usize,
    first: bool,
    done: bool,
}

impl<'a> Iterator for Freeblocks<'a> {
    type Item = Result<Freeblock<'a>, Finding>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done || self.next == 0 {
            return None;
        }
        let page = self.page.no;
        let offset = self.next;
        let start = usize::from(offset);
        if start < self.min {
            self.done = true;
            return Some(Err(if self.first {
                Finding::FreeblockOutOfRange { page, offset }
            } else {
                Finding::FreeblockOutOfOrder { page, offset }
            }));
        }
        let (Some(next), Some(size)) = (
            u16_at(self.page.bytes, start),
            u16_at(self.page.bytes, start + 2),
        ) else {
            self.done = true;
            return Some(Err(Finding::FreeblockOutOfRange { page, offset }));
        };
        let end = start + usize::from(size);
        let bytes = match self.page.bytes.get(start..end) {
            Some(b) if size >= 4 && end <= self.page.usable_size => b,
            _ => {
                self.done = true;
                return Some(Err(Finding::FreeblockOutOfRange { page, offset }));
            }
        };
        // The next block must start after this one ends: ascending order, no cycle.
        self.min = end;
        self.first = false;
        self.next = next;
        Some(Ok(Freeblock {
            offset,
            size,
            bytes,
        }))
    }
}

impl FusedIterator for Freeblocks<'_> {}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(bytes: &[u8]) -> Page<'_> {
        Page::new(PageNo::new(2).unwrap(), bytes, bytes.len())
    }

    /// A 512-byte table leaf with one cell (rowid 7, 3-byte record: header 2, one 1-byte int).
    fn one_cell_leaf() -> Vec<u8> {
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
    fn reads_a_table_leaf_cell() {
        let bytes = one_cell_leaf();
        let p = page(&bytes);
        let h = p.btree_header().unwrap();
        assert_eq!(h.page_type(), PageType::TableLeaf);
        assert_eq!(h.cell_count(), 1);
        assert!(p.header_findings(&h).is_empty());
        let cells: Vec<_> = p.cells(&h).collect();
        let c = cells[0].as_ref().unwrap();
        assert_eq!(c.cell.rowid(), Some(7));
        assert_eq!(c.cell.payload().unwrap().local, &[0x02, 0x01, 0x2a]);
        assert!(p.overlap_findings(&h).is_empty());
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

    #[test]
    fn cell_pointer_past_page_end() {
        let mut bytes = one_cell_leaf();
        bytes[8..10].copy_from_slice(&0x1f40u16.to_be_bytes());
        let p = page(&bytes);
        let h = p.btree_header().unwrap();
        let first = p.cells(&h).next().unwrap();
        assert_eq!(
            first,
            Err(Finding::CellPointerOutOfRange {
                page: p.no(),
                index: CellIndex(0),
                offset: 0x1f40
            })
        );
        assert_eq!(
            first.unwrap_err().to_string(),
            "cell pointer out of range on page 2, cell 0: 0x1f40"
        );
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

    /// A pointer array cut short by the end of the page's bytes: the pointer that is not
    /// there is yielded once as the finding, and every later call is `None`, though the
    /// cell count names more cells.
    #[test]
    fn cells_end_for_good_at_a_pointer_array_cut_short() {
        let mut bytes = one_cell_leaf();
        bytes[3..5].copy_from_slice(&3u16.to_be_bytes()); // cell count: 3
        let cut = &bytes[..11]; // the page's bytes end after pointer 0 and half of pointer 1
        let p = Page::new(PageNo::new(2).unwrap(), cut, 512);
        let h = p.btree_header().unwrap();
        let mut cells = p.cells(&h);
        assert!(matches!(
            cells.next(),
            Some(Err(Finding::CellPastPageEnd { offset: 504, .. }))
        ));
        assert_eq!(
            cells.next(),
            Some(Err(Finding::PageTruncated {
                page: p.no(),
                available: 11
            }))
        );
        assert_eq!(cells.size_hint(), (0, Some(0)));
        for _ in 0..3 {
            assert_eq!(cells.next(), None);
        }
    }

    /// After its last cell the iterator stays ended.
    #[test]
    fn cells_stay_ended_after_the_last_cell() {
        let bytes = one_cell_leaf();
        let p = page(&bytes);
        let h = p.btree_header().unwrap();
        let mut cells = p.cells(&h);
        assert!(matches!(cells.next(), Some(Ok(_))));
        assert_eq!(cells.next(), None);
        assert_eq!(cells.next(), None);
    }

    /// A freeblock out of range ends the chain: the finding once, then `None` for good.
    #[test]
    fn freeblocks_end_for_good_after_a_block_out_of_range() {
        let mut bytes = one_cell_leaf();
        bytes[1..3].copy_from_slice(&0x01feu16.to_be_bytes()); // first freeblock: 510
        let p = page(&bytes);
        let h = p.btree_header().unwrap();
        let mut blocks = p.freeblocks(&h);
        assert!(matches!(
            blocks.next(),
            Some(Err(Finding::FreeblockOutOfRange { offset: 510, .. }))
        ));
        assert_eq!(blocks.next(), None);
        assert_eq!(blocks.next(), None);
    }

    #[test]
    fn cell_running_past_page_end() {
        let mut bytes = one_cell_leaf();
        bytes[504] = 0x40; // payload size 64: runs past 512
        let p = page(&bytes);
        let h = p.btree_header().unwrap();
        assert!(matches!(
            p.cells(&h).next(),
            Some(Err(Finding::CellPastPageEnd { offset: 504, .. }))
        ));
    }

    #[test]
    fn overlapping_cells() {
        let mut bytes = one_cell_leaf();
        bytes[4] = 2; // two cells
        bytes[10..12].copy_from_slice(&505u16.to_be_bytes()); // second cell starts inside the first
        bytes[505] = 0x01;
        let p = page(&bytes);
        let h = p.btree_header().unwrap();
        let f = p.overlap_findings(&h);
        assert!(
            f.iter().any(|f| matches!(f, Finding::CellOverlap { .. })),
            "{f:?}"
        );
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

    #[test]
    fn freeblock_chain() {
        let mut bytes = one_cell_leaf();
        bytes[1..3].copy_from_slice(&400u16.to_be_bytes());
        bytes[400..404].copy_from_slice(&[0x01, 0xc2, 0x00, 0x08]); // next 450, size 8
        bytes[450..454].copy_from_slice(&[0x00, 0x00, 0x00, 0x10]); // last, size 16
        let p = page(&bytes);
        let h = p.btree_header().unwrap();
        let blocks: Vec<_> = p.freeblocks(&h).map(|b| b.unwrap().offset).collect();
        assert_eq!(blocks, vec![400, 450]);
    }

    #[test]
    fn freeblock_cycle_is_out_of_order() {
        let mut bytes = one_cell_leaf();
        bytes[1..3].copy_from_slice(&400u16.to_be_bytes());
        bytes[400..404].copy_from_slice(&[0x01, 0x90, 0x00, 0x08]); // next: itself
        let p = page(&bytes);
        let h = p.btree_header().unwrap();
        let items: Vec<_> = p.freeblocks(&h).collect();
        assert_eq!(items.len(), 2);
        assert_eq!(
            items[1],
            Err(Finding::FreeblockOutOfOrder {
                page: p.no(),
                offset: 400
            })
        );
    }

    #[test]
    fn freeblock_past_page_end() {
        let mut bytes = one_cell_leaf();
        bytes[1..3].copy_from_slice(&500u16.to_be_bytes());
        bytes[500..504].copy_from_slice(&[0x00, 0x00, 0x00, 0x40]); // size 64 from 500: past 512
        let p = page(&bytes);
        let h = p.btree_header().unwrap();
        assert_eq!(
            p.freeblocks(&h).next(),
            Some(Err(Finding::FreeblockOutOfRange {
                page: p.no(),
                offset: 500
            }))
        );
    }

    #[test]
    fn local_payload_formula() {
        // U = 4096: table leaf X = 4061; index X = ((4096-12)*64/255)-23 = 1002; M = 489.
        assert_eq!(local_payload_len(true, 4061, 4096), 4061);
        assert_eq!(local_payload_len(true, 4062, 4096), 489); // K = 4062 > X
        assert_eq!(local_payload_len(false, 1002, 4096), 1002);
        assert_eq!(local_payload_len(false, 1003, 4096), 489); // K = 1003 > X
                                                               // K > X falls back to M.
        assert_eq!(local_payload_len(true, 489 + 4092 + 3000, 4096), 489 + 3000);
        assert_eq!(local_payload_len(true, 489 + 4092 + 4000, 4096), 489);
    }
}
