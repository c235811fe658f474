//! Streaming the rows of a table: its own b-tree first, then the orphan groups attributed
//! to it, one row at a time (its record as stored, decoded on demand), so memory stays
//! flat however large the table.

use std::collections::{BTreeSet, VecDeque};

use pager::{
    raw_cell, BtreeWalk, CellIndex, CellRef, CellSource, Database, Finding, Location, PageNo,
    PageSet, PageType, RawRow, TreeItem, Value,
};

use crate::plan::OrphanGroup;

/// Where a recovered row came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Provenance {
    /// A cell reached from the table's own root.
    Cell {
        /// The cell's page.
        page: PageNo,
        /// Its index on the page (see [`pager::CellRef::index`]).
        index: CellIndex,
        /// How the walk came to it.
        source: CellSource,
    },
    /// A cell on an orphan page attributed to the table (or left to `lost_and_found`).
    Orphan {
        /// The cell's page.
        page: PageNo,
        /// Its index on the page (see [`pager::CellRef::index`]).
        index: CellIndex,
        /// How the walk came to it.
        source: CellSource,
        /// The top page of its orphan group.
        group: PageNo,
    },
}

impl Provenance {
    /// The cell's page.
    pub fn page(&self) -> PageNo {
        match self {
            Provenance::Cell { page, .. } | Provenance::Orphan { page, .. } => *page,
        }
    }

    /// The cell's index on its page (see [`pager::CellRef::index`]).
    pub fn index(&self) -> CellIndex {
        match self {
            Provenance::Cell { index, .. } | Provenance::Orphan { index, .. } => *index,
        }
    }

    /// How the walk came to the cell: one the page's structure does not vouch for is a
    /// row only if its record fits the table.
    pub fn source(&self) -> CellSource {
        match self {
            Provenance::Cell { source, .. } | Provenance::Orphan { source, .. } => *source,
        }
    }
}

/// A row read from a cell: its record as stored, decoded on demand.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecoveredRow<'a> {
    /// The cell's rowid and payload.
    pub raw: RawRow<'a>,
    /// Where it came from.
    pub provenance: Provenance,
}

impl RecoveredRow<'_> {
    /// The rowid (rowid tables).
    pub fn rowid(&self) -> Option<i64> {
        self.raw.rowid
    }

    /// Where the row is, to read it again later ([`RowPlace::read`]).
    pub fn place(&self) -> RowPlace {
        RowPlace {
            at: self.raw.location,
            rowid: self.raw.rowid,
            provenance: self.provenance,
        }
    }

    /// The stored values in record order, damaged ones as `Null`, and whether all were
    /// read from intact bytes.
    pub fn record(&self) -> (Vec<Value>, bool) {
        let d = self.raw.decode();
        (d.values, d.complete)
    }
}

/// Where a row's cell is: a row set aside for later costs this, not its payload (joined
/// from its overflow pages, it may be the size of a page or many). A tree whose children
/// are out of order sets every row aside, and holding the rows held the table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RowPlace {
    /// The cell's page and offset.
    pub at: Location,
    /// Its rowid.
    pub rowid: Option<i64>,
    /// Where it came from.
    pub provenance: Provenance,
}

impl RowPlace {
    /// The row read again from its cell, as the walk first read it (the source's bytes do
    /// not change under a run; a run whose source did is never committed).
    pub fn read<'a>(&self, db: &Database<'a>) -> RowEvent<'a> {
        match self.cell(db).and_then(|cell| raw_cell(db, &cell)) {
            Ok(raw) => RowEvent::Row(RecoveredRow {
                raw,
                provenance: self.provenance,
            }),
            Err(finding) => RowEvent::Unreadable {
                at: self.at,
                finding,
            },
        }
    }

    /// The row's cell, decoded again from its page.
    pub fn cell<'a>(&self, db: &Database<'a>) -> Result<CellRef<'a>, Finding> {
        let index = self.provenance.index();
        let offset = u16::try_from(self.at.offset).unwrap_or(u16::MAX);
        let page = db.page(self.at.page).ok_or(Finding::CellPastPageEnd {
            page: self.at.page,
            index,
            offset,
        })?;
        let header = page.btree_header()?;
        page.cell_at(header.page_type(), index, offset)
    }
}

/// One step of a table's row stream.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RowEvent<'a> {
    /// A row.
    Row(RecoveredRow<'a>),
    /// A cell whose record could not be decoded at all.
    Unreadable {
        /// The cell.
        at: Location,
        /// Why.
        finding: Finding,
    },
}

struct Source {
    top: PageNo,
    /// The orphan group's pages; `None` for the table's own tree.
    group: Option<BTreeSet<PageNo>>,
}

/// The rows of one table; see the module docs.
pub struct TableRows<'a, 'd> {
    db: &'d Database<'a>,
    sources: VecDeque<Source>,
    current: Option<(Source, BtreeWalk<'a, 'd>)>,
    /// The table leaf the walk is in: a cell of it the walk cannot reach is a row lost.
    leaf: Option<PageNo>,
    /// Pages of the tree that are another structure's ([`crate::claims`]): not entered.
    cut: Option<PageSet>,
}

impl<'a, 'd> TableRows<'a, 'd> {
    /// The rows of the tree rooted at `root` (if any) followed by those of `groups`.
    pub fn new<'g>(
        db: &'d Database<'a>,
        root: Option<PageNo>,
        groups: impl IntoIterator<Item = &'g OrphanGroup>,
    ) -> TableRows<'a, 'd> {
        let mut sources: VecDeque<Source> = root
            .map(|top| Source { top, group: None })
            .into_iter()
            .collect();
        sources.extend(groups.into_iter().map(|g| Source {
            top: g.top,
            group: Some(g.pages.iter().copied().collect()),
        }));
        TableRows {
            db,
            sources,
            current: None,
            leaf: None,
            cut: None,
        }
    }

    /// The rows without those of `pages`, pages the table's tree reaches that are found to
    /// be another structure's ([`crate::claims::settle_claims`]).
    pub fn without(mut self, pages: Option<PageSet>) -> TableRows<'a, 'd> {
        self.cut = pages;
        self
    }
}

impl<'a> Iterator for TableRows<'a, '_> {
    type Item = RowEvent<'a>;

    fn next(&mut self) -> Option<RowEvent<'a>> {
        loop {
            if self.current.is_none() {
                let source = self.sources.pop_front()?;
                let walk = BtreeWalk::new(self.db, source.top);
                let walk = match (&source.group, &self.cut) {
                    (None, Some(cut)) => walk.without(cut.clone()),
                    _ => walk,
                };
                self.current = Some((source, walk));
            }
            let (source, walk) = self.current.as_mut()?;
            let Some(item) = walk.next() else {
                self.current = None;
                continue;
            };
            let cell = match item {
                Ok(TreeItem::Cell(cell)) => cell,
                Ok(TreeItem::Page(p)) => {
                    self.leaf = (p.page_type == PageType::TableLeaf).then_some(p.page);
                    continue;
                }
                // A cell of the leaf whose pointer leads nowhere, or that does not fit its
                // page, held a row: it is counted as unreadable, never dropped unseen.
                Err(
                    finding @ (Finding::CellPointerOutOfRange { page, offset, .. }
                    | Finding::CellPastPageEnd { page, offset, .. }),
                ) if Some(page) == self.leaf
                    && source.group.as_ref().is_none_or(|g| g.contains(&page)) =>
                {
                    return Some(RowEvent::Unreadable {
                        at: Location::new(page, usize::from(offset)),
                        finding,
                    });
                }
                _ => continue,
            };
            let page = cell.location.page;
            let provenance = match &source.group {
                None => Provenance::Cell {
                    page,
                    index: cell.index,
                    source: cell.source,
                },
                // A damaged pointer inside an orphan group may lead into a live tree:
                // those rows are that tree's.
                Some(pages) if !pages.contains(&page) => continue,
                Some(_) => Provenance::Orphan {
                    page,
                    index: cell.index,
                    source: cell.source,
                    group: source.top,
                },
            };
            return Some(match raw_cell(self.db, &cell) {
                Ok(raw) => RowEvent::Row(RecoveredRow { raw, provenance }),
                Err(finding) => RowEvent::Unreadable {
                    at: cell.location,
                    finding,
                },
            });
        }
    }
}
