//! The cells of a b-tree page ("B-tree Pages"): the four formats, read where a cell
//! pointer points, and the payload they carry ("Cell Payload Overflow Pages").
//!
//! ```text
//! table leaf (13)      payload size | rowid  | local payload | first overflow page
//!                      varint         varint                   4 bytes, when it spills
//! table interior (5)   left child page | rowid
//!                      4 bytes           varint
//! index leaf (10)      payload size | local payload | first overflow page
//! index interior (2)   left child page | payload size | local payload | first overflow page
//! ```
//!
//! How much of a payload stays local is SQLite's rule ([`local_payload_len`]); a cell is
//! never shorter than 4 bytes. A cell that runs past the usable end of its page, or a
//! pointer outside the content area, is a finding, and the next cell is still read.

use std::iter::FusedIterator;

use super::{BtreePageHeader, Page, PageType};
use crate::cursor::{u16_at, u32_at};
use crate::finding::Finding;
use crate::types::{CellIndex, Location, PageNo};
use crate::varint::read_varint;

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

impl<'a> Page<'a> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::btree::tests::{one_cell_leaf, page};

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
