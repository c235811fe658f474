//! B-tree walks from a root page: depth-first over interior pages, with a visited set, a
//! depth limit, and the key range each child is bound to by its parent's divider keys.
//!
//! The walk yields every page it enters and every cell that carries a payload (table
//! leaf cells, index leaf and interior cells), each with its location. A damaged pointer
//! or page is yielded as a finding and the walk goes on with the next pointer.

use crate::btree::{BtreePageHeader, Cell, CellRef, CellSource, Page, PageType};
use crate::database::Database;
use crate::finding::Finding;
use crate::leaf::{self, Slot};
use crate::types::{CellIndex, PageNo, PageSet};

/// SQLite never builds a b-tree deeper than this (BTCURSOR_MAX_DEPTH, btreeInt.h).
pub const MAX_DEPTH: u32 = 20;

/// The key range a page's ancestors allow for table b-tree keys: `lower < key <= upper`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KeyBounds {
    /// Exclusive lower bound (the divider key to the left), if any.
    pub lower: Option<i64>,
    /// Inclusive upper bound (the divider key of this child), if any.
    pub upper: Option<i64>,
}

impl KeyBounds {
    /// Whether `key` lies in the range.
    pub fn contains(&self, key: i64) -> bool {
        self.lower.is_none_or(|l| key > l) && self.upper.is_none_or(|u| key <= u)
    }
}

/// A page entered by the walk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TreePage {
    /// The page.
    pub page: PageNo,
    /// The interior page that points to it; `None` for the root.
    pub parent: Option<PageNo>,
    /// Depth in the tree, root = 1.
    pub depth: u32,
    /// Its b-tree page type.
    pub page_type: PageType,
    /// The key range its ancestors allow (table b-trees only).
    pub bounds: KeyBounds,
    /// Its cell count.
    pub cell_count: u16,
}

/// A child pointer the walk could not follow: the subtree below it is lost to this walk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LostChild {
    /// The interior page holding the pointer.
    pub parent: PageNo,
    /// The raw pointer value (may be 0 or garbage).
    pub child: u32,
    /// The key range the lost subtree was bound to.
    pub bounds: KeyBounds,
}

/// One item of a b-tree walk.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum TreeItem<'a> {
    /// A page entered.
    Page(TreePage),
    /// A cell that carries a payload, with the depth of its page.
    Cell(CellRef<'a>),
    /// A child pointer that could not be followed, with the key range it covered.
    Lost(LostChild),
}

struct Frame<'a> {
    page: Page<'a>,
    header: BtreePageHeader,
    depth: u32,
    bounds: KeyBounds,
    /// Next cell pointer to process; `cell_count` means the right-most pointer.
    next: u32,
    /// The divider key of the previous child (table interior pages).
    prev_key: Option<i64>,
    /// An index interior cell whose left subtree is being walked: it is yielded after that
    /// subtree, so index entries come out in key order.
    pending: Option<CellRef<'a>>,
    /// The cells of a table leaf whose pointer array does not account for its content
    /// area, as the content area holds them; `None`: the pointer array, as it is.
    slots: Option<Vec<Slot>>,
}

/// A depth-first walk of the b-tree rooted at a page; see the module docs.
pub struct BtreeWalk<'a, 'd> {
    db: &'d Database<'a>,
    table: Option<bool>,
    visited: PageSet,
    stack: Vec<Frame<'a>>,
    pending_root: Option<PageNo>,
    queue: std::collections::VecDeque<Result<TreeItem<'a>, Finding>>,
    scratch: leaf::Scratch,
    /// Pages not entered: their pointers are lost children.
    cut: Option<PageSet>,
}

impl<'a, 'd> BtreeWalk<'a, 'd> {
    /// A walk of the tree rooted at `root`. Whether it is a table or an index b-tree is
    /// taken from the root's page type; children of the other kind are findings.
    pub fn new(db: &'d Database<'a>, root: PageNo) -> BtreeWalk<'a, 'd> {
        BtreeWalk {
            db,
            table: None,
            visited: PageSet::with_page_count(db.page_count()),
            stack: Vec::new(),
            pending_root: Some(root),
            queue: std::collections::VecDeque::new(),
            scratch: leaf::Scratch::default(),
            cut: None,
        }
    }

    /// The walk with the subtrees at `pages` cut off (pages found to be another
    /// structure's): a pointer to one is yielded as a lost child, and not followed.
    pub fn without(mut self, pages: PageSet) -> BtreeWalk<'a, 'd> {
        self.cut = Some(pages);
        self
    }

    /// The pages visited so far.
    pub fn visited(&self) -> &PageSet {
        &self.visited
    }

    /// The walk as if the pages of `seen` were entered already (by an earlier walk): a
    /// pointer to one is a cycle, not followed, so that walks handing the set on enter
    /// each page once between them.
    pub fn after(mut self, seen: PageSet) -> BtreeWalk<'a, 'd> {
        self.visited = seen;
        self
    }

    /// The pages the walk entered, with those it was given ([`BtreeWalk::after`]).
    pub fn into_visited(self) -> PageSet {
        self.visited
    }

    /// Enters the page that `raw` names (a child pointer of `parent`, or the root): queues
    /// the page and pushes its frame, or queues why it cannot be entered and the lost child.
    fn enter(
        &mut self,
        parent: Option<(PageNo, Option<CellIndex>)>,
        raw: u32,
        depth: u32,
        bounds: KeyBounds,
    ) {
        let Some((no, page, header)) = self.open_child(parent, raw, depth, bounds) else {
            return;
        };
        let parent_page = parent.map(|(p, _)| p);
        let lost = |parent: PageNo| lost_child(parent, raw, bounds);
        for f in page.header_findings(&header) {
            self.queue.push_back(Err(f));
        }
        let slots = (header.page_type() == PageType::TableLeaf)
            .then(|| leaf::account(&page, &header, self.db.page_count(), &mut self.scratch))
            .flatten()
            .map(|account| {
                self.queue.extend(account.findings.into_iter().map(Err));
                account.slots
            });
        // A table leaf's freeblocks are checked with its content area; other pages' chains
        // on their own.
        if header.page_type() != PageType::TableLeaf {
            let faults = page.freeblocks(&header).filter_map(Result::err);
            self.queue.extend(faults.map(Err));
        }
        let cells = slots
            .as_ref()
            .map_or(usize::from(header.cell_count()), Vec::len);
        // SQLite never leaves a non-root leaf empty: its key range lost its rows (or the
        // cell count lost them), which is what a lost child says.
        if let Some(p) = parent_page.filter(|_| !header.page_type().is_interior() && cells == 0) {
            self.queue.push_back(Err(Finding::EmptyNonRootPage {
                page: no,
                parent: p,
            }));
            self.queue.push_back(Ok(lost(p)));
        }
        self.queue.push_back(Ok(TreeItem::Page(TreePage {
            page: no,
            parent: parent_page,
            depth,
            page_type: header.page_type(),
            bounds,
            cell_count: header.cell_count(),
        })));
        self.stack.push(Frame {
            page,
            header,
            depth,
            bounds,
            next: 0,
            prev_key: bounds.lower,
            pending: None,
            slots,
        });
    }

    /// The page that `raw` names with its b-tree header, when the walk may enter it: a
    /// page of the file, not cut off, not entered before, not too deep, a b-tree page of
    /// the tree's kind. Otherwise the finding and the lost child are queued and `None`
    /// returned.
    fn open_child(
        &mut self,
        parent: Option<(PageNo, Option<CellIndex>)>,
        raw: u32,
        depth: u32,
        bounds: KeyBounds,
    ) -> Option<(PageNo, Page<'a>, BtreePageHeader)> {
        let lost = |parent: PageNo| lost_child(parent, raw, bounds);
        let Some(no) = PageNo::new(raw) else {
            if let Some((p, index)) = parent {
                self.queue
                    .push_back(Err(Finding::ChildPointerNull { page: p, index }));
                self.queue.push_back(Ok(lost(p)));
            }
            return None;
        };
        let Some(page) = self.db.page(no) else {
            if let Some((p, index)) = parent {
                self.queue.push_back(Err(Finding::ChildPointerPastEnd {
                    page: p,
                    index,
                    child: raw,
                }));
                self.queue.push_back(Ok(lost(p)));
            }
            return None;
        };
        let parent_page = parent.map(|(p, _)| p);
        if let Some(p) = parent_page.filter(|_| self.cut.as_ref().is_some_and(|c| c.contains(no))) {
            self.queue.push_back(Ok(lost(p)));
            return None;
        }
        if !self.visited.insert(no) {
            self.queue.push_back(Err(Finding::BtreeCycle {
                page: parent_page.unwrap_or(no),
                child: no,
            }));
            if let Some(p) = parent_page {
                self.queue.push_back(Ok(lost(p)));
            }
            return None;
        }
        if depth > MAX_DEPTH {
            self.queue
                .push_back(Err(Finding::BtreeTooDeep { page: no, depth }));
            if let Some(p) = parent_page {
                self.queue.push_back(Ok(lost(p)));
            }
            return None;
        }
        let header = match page.btree_header() {
            Ok(h) => h,
            Err(f) => {
                let raw_type = page
                    .bytes()
                    .get(crate::btree::btree_header_offset(no))
                    .copied()
                    .unwrap_or(0);
                match (parent_page, &f) {
                    (Some(p), Finding::InvalidPageType { .. }) => {
                        self.queue.push_back(Err(Finding::ChildNotBtreePage {
                            parent: p,
                            child: no,
                            raw_type,
                        }))
                    }
                    _ => self.queue.push_back(Err(f)),
                }
                if let Some(p) = parent_page {
                    self.queue.push_back(Ok(lost(p)));
                }
                return None;
            }
        };
        let is_table = header.page_type().is_table();
        match self.table {
            None => self.table = Some(is_table),
            Some(t) if t != is_table => {
                if let Some(p) = parent_page {
                    self.queue.push_back(Err(Finding::ChildPageKindMismatch {
                        parent: p,
                        child: no,
                        found: header.page_type(),
                    }));
                    self.queue.push_back(Ok(lost(p)));
                }
                return None;
            }
            Some(_) => {}
        }
        Some((no, page, header))
    }

    /// Advances the top frame by one step, queueing what it produced.
    fn step(&mut self) {
        let Some(frame) = self.stack.last_mut() else {
            return;
        };
        if let Some(cell) = frame.pending.take() {
            self.queue.push_back(Ok(TreeItem::Cell(cell)));
            return;
        }
        let page_type = frame.header.page_type();
        let count = frame
            .slots
            .as_ref()
            .map_or(u32::from(frame.header.cell_count()), |s| s.len() as u32);
        if frame.next > count || (!page_type.is_interior() && frame.next == count) {
            self.stack.pop();
            return;
        }
        let page = frame.page;
        let page_no = page.no();
        let depth = frame.depth;
        // The cell to read: the next pointer, or the next slot of a leaf whose content
        // area was read for its cells (a cell found there has no pointer, its offset known).
        let (i, source, found_at) = match frame
            .slots
            .as_ref()
            .and_then(|s| s.get(frame.next as usize))
        {
            Some(Slot::Listed(index)) => (u32::from(index.0), CellSource::Pointer, None),
            Some(Slot::Stray(index)) => (u32::from(index.0), CellSource::StrayPointer, None),
            Some(&Slot::Unlisted { offset, ordinal }) => {
                (u32::from(ordinal), CellSource::ContentArea, Some(offset))
            }
            None => (frame.next, CellSource::Pointer, None),
        };
        frame.next += 1;
        if frame.slots.is_none() && i == count {
            // The right-most pointer: keys above the last divider, up to the page's own bound.
            let bounds = KeyBounds {
                lower: frame.prev_key,
                upper: frame.bounds.upper,
            };
            let raw = frame.header.right_most_pointer().unwrap_or(0);
            self.enter(Some((page_no, None)), raw, depth + 1, bounds);
            return;
        }
        let index = CellIndex(i as u16);
        let header = frame.header;
        let Some(offset) = found_at.or_else(|| page.cell_pointer(&header, i as usize)) else {
            self.queue.push_back(Err(Finding::PageTruncated {
                page: page_no,
                available: page.bytes().len() as u32,
            }));
            return;
        };
        let first = header.cell_pointers_end();
        let last = page.usable_size().saturating_sub(4);
        if usize::from(offset) < first || usize::from(offset) > last {
            self.queue.push_back(Err(Finding::CellPointerOutOfRange {
                page: page_no,
                index,
                offset,
            }));
            if page_type.is_interior() {
                let lost = LostChild {
                    parent: page_no,
                    child: 0,
                    bounds: KeyBounds {
                        lower: frame.prev_key,
                        upper: None,
                    },
                };
                self.queue.push_back(Ok(TreeItem::Lost(lost)));
            }
            return;
        }
        let cell = match page.cell_at(page_type, index, offset) {
            Ok(c) => CellRef { source, ..c },
            Err(f) => {
                self.queue.push_back(Err(f));
                return;
            }
        };
        match cell.cell {
            Cell::TableLeaf(c) => {
                if !frame.bounds.contains(c.rowid) {
                    self.queue.push_back(Err(Finding::KeyOutOfRange {
                        page: page_no,
                        index,
                        rowid: c.rowid,
                        lower: frame.bounds.lower,
                        upper: frame.bounds.upper,
                    }));
                }
                self.queue.push_back(Ok(TreeItem::Cell(cell)));
            }
            Cell::IndexLeaf(_) => self.queue.push_back(Ok(TreeItem::Cell(cell))),
            Cell::TableInterior(c) => {
                let bounds = KeyBounds {
                    lower: frame.prev_key,
                    upper: Some(c.rowid),
                };
                frame.prev_key = Some(c.rowid);
                self.enter(
                    Some((page_no, Some(index))),
                    c.left_child,
                    depth + 1,
                    bounds,
                );
            }
            Cell::IndexInterior(c) => {
                frame.pending = Some(cell);
                self.enter(
                    Some((page_no, Some(index))),
                    c.left_child,
                    depth + 1,
                    KeyBounds::default(),
                );
            }
        }
    }
}

/// The child pointer `child` of `parent`, not followed: the subtree below it, bound to
/// `bounds`, is lost to the walk.
fn lost_child<'a>(parent: PageNo, child: u32, bounds: KeyBounds) -> TreeItem<'a> {
    TreeItem::Lost(LostChild {
        parent,
        child,
        bounds,
    })
}

impl<'a> Iterator for BtreeWalk<'a, '_> {
    type Item = Result<TreeItem<'a>, Finding>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(item) = self.queue.pop_front() {
                return Some(item);
            }
            if let Some(root) = self.pending_root.take() {
                self.enter(None, root.get(), 1, KeyBounds::default());
                continue;
            }
            if self.stack.is_empty() {
                return None;
            }
            self.step();
        }
    }
}

/// Once it has ended, a walk stays ended: nothing refills its queue or its stack.
impl std::iter::FusedIterator for BtreeWalk<'_, '_> {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{messages, no};

    #[test]
    fn right_most_pointer_zero() {
        let (mut db, root) = messages();
        db.set_u32(root, 8, 0); // right-most pointer: no page
        assert_eq!(
            db.walk_findings(root),
            vec![Finding::ChildPointerNull {
                page: no(root),
                index: None
            }]
        );
    }

    #[test]
    fn left_child_pointer_zero() {
        let (mut db, root) = messages();
        let cell = db.cell(root, 2);
        db.set_u32(root, cell.offset, 0); // cell 2's left child pointer: no page
        assert_eq!(
            db.walk_findings(root),
            vec![Finding::ChildPointerNull {
                page: no(root),
                index: Some(CellIndex(2))
            }]
        );
    }

    #[test]
    fn right_most_pointer_past_the_end() {
        let (mut db, root) = messages();
        db.set_u32(root, 8, 99_999); // right-most pointer: past the last page
        assert_eq!(
            db.walk_findings(root),
            vec![Finding::ChildPointerPastEnd {
                page: no(root),
                index: None,
                child: 99_999
            }]
        );
    }

    #[test]
    fn child_pointer_back_to_the_root() {
        let (mut db, root) = messages();
        db.set_u32(root, 8, root); // right-most pointer: the root itself
        assert_eq!(
            db.walk_findings(root),
            vec![Finding::BtreeCycle {
                page: no(root),
                child: no(root)
            }]
        );
    }

    /// A walk whose root is no b-tree page yields that finding, and then ends for good; a
    /// whole walk stays ended too.
    #[test]
    fn a_walk_stays_ended() {
        let (mut db, root) = messages();
        let opened = Database::open(&db.bytes).unwrap();
        let mut walk = BtreeWalk::new(&opened, no(root));
        assert!(walk.by_ref().count() > 2);
        assert!(walk.next().is_none());
        assert!(walk.next().is_none());
        db.set_u8(root, 0, 0x07); // page type: none of 2, 5, 10, 13
        let opened = Database::open(&db.bytes).unwrap();
        let mut walk = BtreeWalk::new(&opened, no(root));
        assert_eq!(
            walk.next(),
            Some(Err(Finding::InvalidPageType {
                page: no(root),
                raw: 7
            }))
        );
        assert_eq!(walk.next(), None);
        assert_eq!(walk.next(), None);
    }

    #[test]
    fn zeroed_child_page() {
        let (mut db, root) = messages();
        let leaf = db.walk("messages").pages.leaves[4];
        let (at, ps) = (db.at(leaf, 0), db.page_size());
        db.bytes[at..at + ps].fill(0);
        assert_eq!(
            db.walk_findings(root),
            vec![Finding::ChildNotBtreePage {
                parent: no(root),
                child: no(leaf),
                raw_type: 0
            }]
        );
    }

    #[test]
    fn index_leaf_inside_a_table_btree() {
        let (mut db, root) = messages();
        let leaf = db.walk("messages").pages.leaves[2];
        db.set_u8(leaf, 0, 0x0a); // page type: index b-tree leaf
        assert_eq!(
            db.walk_findings(root),
            vec![Finding::ChildPageKindMismatch {
                parent: no(root),
                child: no(leaf),
                found: PageType::IndexLeaf
            }]
        );
    }

    #[test]
    fn leaf_emptied_of_its_cells() {
        let (mut db, root) = messages();
        let leaf = db.walk("messages").pages.leaves[1];
        let area = usize::from(u16::from_be_bytes([
            db.bytes[db.at(leaf, 5)],
            db.bytes[db.at(leaf, 6)],
        ]));
        let (start, end) = (db.at(leaf, area), db.at(leaf, db.page_size()));
        db.bytes[start..end].fill(0);
        #[rustfmt::skip]
        let count = [
            0x00, 0x00, // cell count: 0, and no cell left in the content area
        ];
        let at = db.at(leaf, 3);
        db.bytes[at..at + 2].copy_from_slice(&count);
        assert_eq!(
            db.walk_findings(root),
            vec![
                Finding::ContentUnaccounted {
                    page: no(leaf),
                    bytes: (db.page_size() - area) as u32
                },
                Finding::EmptyNonRootPage {
                    page: no(leaf),
                    parent: no(root)
                }
            ]
        );
        // Its key range is a lost child: the rows between the dividers around it.
        let pdb = Database::open(&db.bytes).unwrap();
        let lost: Vec<LostChild> = BtreeWalk::new(&pdb, no(root))
            .filter_map(|i| match i {
                Ok(TreeItem::Lost(l)) => Some(l),
                _ => None,
            })
            .collect();
        let divider = |i: u16| db.cell(root, i).rowid;
        assert_eq!(
            lost,
            vec![LostChild {
                parent: no(root),
                child: leaf,
                bounds: KeyBounds {
                    lower: divider(0),
                    upper: divider(1)
                }
            }]
        );
    }

    #[test]
    fn rowid_below_the_range_its_parent_allows() {
        let (mut db, root) = messages();
        // The last leaf hangs from the right-most pointer: its keys lie above the root's
        // last divider key, with no upper bound.
        let leaf = *db.walk("messages").pages.leaves.last().unwrap();
        let last_divider = db
            .cell(root, db.btree_page(root).cell_count - 1)
            .rowid
            .unwrap();
        let cell = db.cell(leaf, 0);
        assert!(cell.rowid.unwrap() > last_divider);
        let payload_size_len = fixtures::format::read_varint(&db.bytes, db.at(leaf, cell.offset))
            .unwrap()
            .1;
        let rowid_at = db.at(leaf, cell.offset + payload_size_len);
        assert!(db.bytes[rowid_at] >= 0x80, "a 2-byte rowid varint");
        #[rustfmt::skip]
        let rowid = [
            0x80, 0x01, // rowid: 1, as a 2-byte varint with a leading zero group
        ];
        db.bytes[rowid_at..rowid_at + 2].copy_from_slice(&rowid);
        assert_eq!(
            db.walk_findings(root),
            vec![Finding::KeyOutOfRange {
                page: no(leaf),
                index: CellIndex(0),
                rowid: 1,
                lower: Some(last_divider),
                upper: None
            }]
        );
    }

    #[test]
    fn chain_of_interior_pages_deeper_than_sqlite_builds() {
        let (mut db, root) = messages();
        let leaves = db.walk("messages").pages.leaves;
        // The root keeps only its right-most pointer, to the first of 19 leaves rewritten
        // as empty interior pages, each pointing to the next: the root is depth 1, the
        // rewritten pages depths 2..=20, and the page they lead to depth 21.
        db.set_u16(root, 3, 0); // cell count: 0
        db.set_u32(root, 8, leaves[0]); // right-most pointer
        for w in leaves[..20].windows(2) {
            let (page, [n0, n1, n2, n3]) = (w[0], w[1].to_be_bytes());
            #[rustfmt::skip]
            let header = [
                0x05,           // page type: table b-tree interior
                0x00, 0x00,     // first freeblock: none
                0x00, 0x00,     // cell count: 0
                0x10, 0x00,     // cell content area: 4096, empty
                0x00,           // fragmented free bytes
                n0, n1, n2, n3, // right-most pointer: the next page of the chain
            ];
            let (at, ps) = (db.at(page, 0), db.page_size());
            db.bytes[at..at + ps].fill(0);
            db.bytes[at..at + header.len()].copy_from_slice(&header);
        }
        assert_eq!(
            db.walk_findings(root),
            vec![Finding::BtreeTooDeep {
                page: no(leaves[19]),
                depth: MAX_DEPTH + 1
            }]
        );
    }
}
