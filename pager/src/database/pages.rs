//! Page access ("Pages", "The Lock-Byte Page", "Pointer Map or Ptrmap Pages"): the file
//! is a run of pages of one size P, numbered from 1; page N starts at byte (N - 1) * P,
//! and its last bytes up to P are the reserved space.
//!
//! ```text
//! 0                 P                 2P                    (N-1)P
//! +-----------------+-----------------+-- ... --+-----------------+
//! | page 1: header  | page 2          |         | page N          |
//! | + schema root   |                 |         | (maybe cut off) |
//! +-----------------+-----------------+-- ... --+-----------------+
//! ```
//!
//! A page is read from the newest image a log gives for it, else from the file. Two kinds
//! of page are known by their position alone: the lock-byte page (the one holding byte
//! 2^30, never used) and, in auto-vacuum databases, the pointer-map pages.

use super::Database;
use crate::btree::{Page, PageType};
use crate::classify::PageClass;
use crate::types::PageNo;

/// The byte offset that SQLite's lock-byte page covers ("The Lock-Byte Page"): 2^30.
pub const LOCK_BYTE_OFFSET: u64 = 1 << 30;

impl<'a> Database<'a> {
    /// Decodes a page pointer read from disk: `None` for 0 or a page past the end of the file.
    pub fn page_no(&self, raw: u32) -> Option<PageNo> {
        PageNo::new(raw).filter(|p| p.get() <= self.page_count)
    }

    /// The page numbered `no`, or `None` past the end of the file.
    pub fn page(&self, no: PageNo) -> Option<Page<'a>> {
        if no.get() > self.page_count {
            return None;
        }
        let image = self.image(no)?;
        if let Some(observer) = self.observer.0 {
            observer(image);
        }
        Some(Page::new(no, image, self.usable_size().min(image.len())))
    }

    /// The bytes of page `no` (within the file), from the newest image a log gives, else
    /// the file.
    fn image(&self, no: PageNo) -> Option<&'a [u8]> {
        if let Some(versions) = &self.versions {
            // The newest image of the page up to the frame limit, if any.
            let end = versions.partition_point(|(p, f, _)| (*p, *f) <= (no, self.frame_limit));
            if let Some((p, _, image)) = end.checked_sub(1).and_then(|i| versions.get(i)) {
                if *p == no {
                    return Some(image);
                }
            }
        }
        if !self.overlay.is_empty() {
            if let Ok(i) = self.overlay.binary_search_by_key(&no, |(p, _)| *p) {
                if let Some((_, image)) = self.overlay.get(i) {
                    return Some(image);
                }
            }
        }
        let start = usize::try_from(no.file_offset(self.page_size)).ok()?;
        let end = start
            .saturating_add(self.page_size.bytes())
            .min(self.bytes.len());
        self.bytes.get(start..end)
    }

    /// The frame of the log versions (see [`Database::with_versions`]) whose image this
    /// state reads for page `no`; `None` when the page is read from the main file (or an
    /// image given otherwise).
    pub fn frame_of(&self, no: PageNo) -> Option<u32> {
        let versions = self.versions.as_ref()?;
        let end = versions.partition_point(|(p, f, _)| (*p, *f) <= (no, self.frame_limit));
        let (p, f, _) = versions.get(end.checked_sub(1)?)?;
        (*p == no && no.get() <= self.page_count).then_some(*f)
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

    /// Whether `page` is a pointer-map page ("Pointer Map or Ptrmap Pages"); only
    /// auto-vacuum databases have them.
    pub fn is_ptrmap_page(&self, page: PageNo) -> bool {
        let lock_byte_page = self.lock_byte_page().map_or(0, PageNo::get);
        self.header.auto_vacuum()
            && page.get() >= 2
            && ptrmap_page_of(page.get(), self.usable_size(), lock_byte_page) == page.get()
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
}

/// The pointer-map page that describes `page` (2 or more) in an auto-vacuum file of this
/// usable page size: page 2 and every `usable / 5 + 1` pages after it, the one after the
/// lock-byte page where that falls on one.
// SQLite: ptrmapPageno (btree.c)
pub fn ptrmap_page_of(page: u32, usable: usize, lock_byte_page: u32) -> u32 {
    let span = (usable / 5 + 1) as u32;
    let map = page.saturating_sub(2) / span * span + 2;
    if map == lock_byte_page {
        map + 1
    } else {
        map
    }
}
