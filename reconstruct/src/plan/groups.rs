//! Orphan groups: every orphan b-tree page, under the orphan interior pages that reach it,
//! and a sample of each group's records.

use std::collections::BTreeSet;

use pager::{
    decode_cell, BtreeWalk, Database, PageClass, PageNo, PageSet, Survey, TreeItem, Value,
};

/// Records decoded per group to judge its shape.
const SHAPE_SAMPLE: usize = 64;

/// A group of orphan pages: an orphan page no other orphan reaches, and every orphan
/// b-tree page below it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OrphanGroup {
    /// The top page; a walk from it yields the group's cells.
    pub top: PageNo,
    /// Every page of the group, top first, then in walk order.
    pub pages: Vec<PageNo>,
    /// Whether the pages are table b-tree pages (index b-tree pages otherwise).
    pub table_pages: bool,
    /// Cells carrying a payload: rows of a table, entries of an index.
    pub cells: u64,
    /// Smallest and largest rowid of its cells (table pages).
    pub rowids: Option<(i64, i64)>,
}

/// Finds the orphan groups: every orphan b-tree page, grouped under the orphan interior
/// pages that reach it.
pub fn orphan_groups(db: &Database<'_>, survey: &Survey) -> Vec<OrphanGroup> {
    let orphans: Vec<(PageNo, PageClass)> = survey.page_map.orphans().collect();
    let is_orphan: BTreeSet<PageNo> = orphans.iter().map(|(p, _)| *p).collect();
    // Pages reached from an orphan interior page are not tops.
    let mut below = PageSet::with_page_count(db.page_count());
    for (p, c) in &orphans {
        if matches!(c, PageClass::TableInterior | PageClass::IndexInterior) {
            for item in BtreeWalk::new(db, *p).flatten() {
                if let TreeItem::Page(tp) = item {
                    if tp.page != *p && is_orphan.contains(&tp.page) {
                        below.insert(tp.page);
                    }
                }
            }
        }
    }
    let mut groups = Vec::new();
    for (top, class) in orphans {
        if below.contains(top) {
            continue;
        }
        let mut g = OrphanGroup {
            top,
            pages: Vec::new(),
            table_pages: matches!(class, PageClass::TableInterior | PageClass::TableLeaf),
            cells: 0,
            rowids: None,
        };
        for item in BtreeWalk::new(db, top).flatten() {
            match item {
                // Only orphans belong to the group; a pointer into a live tree is damage.
                TreeItem::Page(tp) if is_orphan.contains(&tp.page) => g.pages.push(tp.page),
                TreeItem::Cell(c) if is_orphan.contains(&c.location.page) => {
                    g.cells += 1;
                    if let Some(r) = c.cell.rowid() {
                        g.rowids = Some(g.rowids.map_or((r, r), |(lo, hi)| (lo.min(r), hi.max(r))));
                    }
                }
                _ => {}
            }
        }
        groups.push(g);
    }
    groups
}

/// Decodes up to [`SHAPE_SAMPLE`] records of a group, spread over it, as their storage
/// classes ([`crate::shape::classes_of`]).
pub(super) fn sample_records(db: &Database<'_>, group: &OrphanGroup) -> Vec<Vec<Value>> {
    let stride = (group.cells as usize / SHAPE_SAMPLE).max(1);
    BtreeWalk::new(db, group.top)
        .flatten()
        .filter_map(|item| match item {
            TreeItem::Cell(c) => Some(c),
            _ => None,
        })
        .step_by(stride)
        .filter_map(|c| decode_cell(db, &c).ok())
        .filter(|r| r.complete)
        .take(SHAPE_SAMPLE)
        .map(|r| crate::shape::classes_of(r.values))
        .collect()
}

#[cfg(test)]
mod tests {
    use pager::survey;

    use super::super::testing::{p, A_SQL};
    use super::*;
    use crate::testing::{file, interior, leaf, named_row, schema_row, zeroed};

    #[test]
    fn orphan_interior_page_and_the_orphans_below_it_are_one_group() {
        // Orphan interior page 4 over leaves 5 and 6; its pointer to page 3 leads into
        // a's live tree, which is not part of the group.
        let bytes = file(
            &[&schema_row(1, "a", 3, A_SQL)],
            &[
                zeroed(),
                leaf(&[&named_row(1, b'a')]),
                interior(&[(5, 20), (3, 25)], 6),
                leaf(&[&named_row(15, b'o'), &named_row(20, b't')]),
                leaf(&[&named_row(30, b'd')]),
            ],
        );
        let db = Database::open(&bytes).unwrap();
        assert_eq!(
            orphan_groups(&db, &survey(&db)),
            vec![OrphanGroup {
                top: p(4),
                pages: vec![p(4), p(5), p(6)],
                table_pages: true,
                cells: 3,
                rowids: Some((15, 30)),
            }]
        );
    }
}
