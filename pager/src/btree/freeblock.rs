//! The freeblock chain of a b-tree page ("B-tree Pages"): unallocated runs inside the
//! cell content area, in ascending order, where the bytes of deleted cells may still be.
//!
//! ```text
//! +-----------------------+-------------------------+----------------------------+
//! | next freeblock        | size, these 4 bytes     | unallocated: what deleted  |
//! | (0: the last one)     | included                | cells left                 |
//! +-----------------------+-------------------------+----------------------------+
//!   0..2                    2..4                      4..size
//! ```
//!
//! A block that starts before the previous one ends (out of order, or a cycle) or runs
//! past the usable end of the page is a finding, and ends the chain.

use std::iter::FusedIterator;

use super::{BtreePageHeader, Page};
use crate::cursor::u16_at;
use crate::finding::Finding;

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

impl<'a> Page<'a> {
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::btree::tests::{one_cell_leaf, page};

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
}
