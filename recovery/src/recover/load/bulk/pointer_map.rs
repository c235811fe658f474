//! The pointer map of an auto-vacuum output ("Pointer Map or Ptrmap Pages"): for every
//! page after the first, its kind and its parent, which SQLite reads to move a page
//! (every commit of a FULL database that freed one, `PRAGMA incremental_vacuum`, and
//! each `CREATE INDEX`, whose new root takes the place of the page after the last
//! root). The bulk writer records an entry for every page it writes; a map page is
//! written once every page it describes is allocated and has its entry, so that only
//! the map pages whose pages still wait for a parent (those of the interior levels not
//! written yet, a few per level) are held in memory.

use std::collections::BTreeMap;
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;

/// The kinds of entry ("Pointer Map or Ptrmap Pages"), as SQLite numbers them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// The first page of an overflow chain: its parent is the b-tree page of the cell.
    FirstOverflow = 3,
    /// A later page of an overflow chain: its parent is the page before it.
    Overflow = 4,
    /// A b-tree page other than a root: its parent is the page pointing to it.
    Btree = 5,
}

/// Where pointer-map pages are in a file of one usable page size.
pub struct Layout {
    usable: usize,
    /// Pages each map page describes (5 bytes each over the usable size), plus itself.
    span: u32,
    lock_byte_page: u32,
}

impl Layout {
    pub fn new(usable: usize, lock_byte_page: u32) -> Layout {
        Layout {
            usable,
            span: (usable / 5) as u32 + 1,
            lock_byte_page,
        }
    }

    /// The map page describing `page` ([`pager::ptrmap_page_of`]).
    pub fn map_of(&self, page: u32) -> u32 {
        pager::ptrmap_page_of(page, self.usable, self.lock_byte_page)
    }

    pub fn is_map(&self, page: u32) -> bool {
        page >= 2 && self.map_of(page) == page
    }

    /// The last page `map` describes: the one before the next map page's place.
    fn last_of(&self, map: u32) -> u32 {
        ((map - 2) / self.span + 1) * self.span + 1
    }
}

/// A map page with entries not yet on disk.
struct Open {
    image: Vec<u8>,
    /// Entries set in it by this writer.
    set: u32,
}

/// The entries of the pages a bulk writer appends.
pub struct PointerMap {
    pub layout: Layout,
    /// The first page the writer allocated: entries of pages before it are SQLite's.
    first_new: u32,
    open: BTreeMap<u32, Open>,
    /// The most map pages held at once, and how many were written.
    pub held: (usize, u32),
}

impl PointerMap {
    pub fn new(layout: Layout, first_new: u32) -> PointerMap {
        PointerMap {
            layout,
            first_new,
            open: BTreeMap::new(),
            held: (0, 0),
        }
    }

    /// Records the entry of `page`; writes its map page when that was the last entry it
    /// waited for (every page it describes allocated: `next` is the next to be).
    pub fn set(
        &mut self,
        file: &File,
        page_size: usize,
        next: u32,
        page: u32,
        (kind, parent): (Kind, u32),
    ) -> io::Result<()> {
        let map = self.layout.map_of(page);
        let Some(offset) = page
            .checked_sub(map + 1)
            .map(|i| 5 * i as usize)
            .filter(|o| o + 5 <= self.layout.usable)
        else {
            return Ok(());
        };
        let held = self.open.len() + 1;
        let open = match self.open.entry(map) {
            std::collections::btree_map::Entry::Occupied(o) => o.into_mut(),
            std::collections::btree_map::Entry::Vacant(v) => {
                self.held.0 = self.held.0.max(held);
                let mut image = vec![0u8; page_size];
                if map < self.first_new {
                    // SQLite's own map page, holding the entries of its pages: kept. (The
                    // last page of a file is never a map page: SQLite allocates the page
                    // after one with it.)
                    let _ = file.read_exact_at(&mut image, offset_of(map, page_size));
                }
                v.insert(Open { image, set: 0 })
            }
        };
        if let Some(entry) = open.image.get_mut(offset..offset + 5) {
            entry[0] = kind as u8;
            entry[1..].copy_from_slice(&parent.to_be_bytes());
        }
        open.set += 1;
        let last = self.layout.last_of(map);
        if next > last && open.set == self.expected(map, last) {
            if let Some(done) = self.open.remove(&map) {
                file.write_all_at(&done.image, offset_of(map, page_size))?;
                self.held.1 += 1;
            }
        }
        Ok(())
    }

    /// Entries this writer sets in `map`, whose pages are all allocated up to `last`.
    fn expected(&self, map: u32, last: u32) -> u32 {
        let first = (map + 1).max(self.first_new);
        let lock = u32::from((first..=last).contains(&self.layout.lock_byte_page));
        (last + 1).saturating_sub(first).saturating_sub(lock)
    }

    /// Writes the map pages still open: those of the last pages written.
    pub fn finish(&mut self, file: &File, page_size: usize) -> io::Result<()> {
        for (map, open) in std::mem::take(&mut self.open) {
            file.write_all_at(&open.image, offset_of(map, page_size))?;
            self.held.1 += 1;
        }
        Ok(())
    }
}

fn offset_of(page: u32, page_size: usize) -> u64 {
    u64::from(page - 1) * page_size as u64
}
