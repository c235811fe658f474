//! Pages a table's b-tree reaches that are another structure's ([`reconstruct::claims`]):
//! cut from the tree before its rows go in. Each cut becomes a lost child of the tree in
//! the survey (so the table's own page there, orphaned, is attributed by its key range),
//! the page is handed over to its holder in the page map, and the rows the bulk writer
//! already copied from it are taken back.

use std::collections::{BTreeMap, BTreeSet};

use pager::{BtreeWalk, Cell, LostChild, PageClass, PageNo, PageSet, Survey, TreeItem};
use reconstruct::{
    contested_roots, settle_claims, Claimant, Holder, IndexKeys, LossSignal, RowEvent, TableId,
    TableRows,
};

use crate::base::error::Error;
use crate::base::output::{quote, Output};
use crate::recover::evidence::Evidence;
use crate::recover::ledger::Ledger;
use crate::recover::tables::Tables;

/// Per tree (by root), the pages cut from it.
pub type Cuts = BTreeMap<PageNo, PageSet>;

/// Settles the pages two structures claim, and carries each cut out (see the module docs).
pub fn cut_foreign_pages<'s>(
    evidence: &Evidence<'s>,
    (survey, suspects): (&mut Survey, &[(PageNo, PageNo)]),
    out: &Output,
    tables: &mut Tables,
    deferred: &mut BTreeMap<TableId, Vec<reconstruct::RowPlace>>,
    ledger: &mut Ledger,
) -> Result<Cuts, Error> {
    let db = &evidence.db;
    let mut cuts = Cuts::new();
    let mut tops: BTreeMap<PageNo, Vec<PageNo>> = BTreeMap::new();
    // Only the trees that reach a page something else claims are weighed: only their
    // indexes are read.
    // (A suspect page of a table without an index to witness its rows is never weighed:
    // `settle_claims` passes over it.)
    let involved = contested_roots(survey, suspects);
    if involved.is_empty() {
        return Ok(cuts);
    }
    let indexes: Vec<(PageNo, Vec<IndexKeys>)> = tables
        .filled()
        .filter(|(_, shape)| !shape.without_rowid)
        .filter_map(|(t, _)| {
            let root = t.root.filter(|r| involved.contains(r))?;
            Some((
                root,
                crate::recover::evidence::indexes::witnesses(evidence, &t.name),
            ))
        })
        .collect();
    let claimants: Vec<Claimant<'_>> = tables
        .filled()
        .filter_map(|(t, shape)| {
            let (root, indexes) = indexes.iter().find(|(r, _)| Some(*r) == t.root)?;
            Some(Claimant {
                root: *root,
                shape,
                indexes,
            })
        })
        .collect();
    let settled = settle_claims(db, survey, &claimants, suspects);
    drop(claimants);
    let name_of = |tables: &Tables, root: PageNo| {
        tables
            .filled()
            .find(|(t, _)| t.root == Some(root))
            .map(|(t, _)| t.name.clone())
    };
    let trunks: BTreeSet<PageNo> = survey.freelist.trunks.iter().copied().collect();
    for cut in &settled {
        let Some(table) = name_of(tables, cut.tree) else {
            continue;
        };
        let holder = match cut.holder {
            Holder::Tree(root) => name_of(tables, root).map_or_else(
                || format!("the b-tree at page {root}"),
                |n| format!("`{n}`"),
            ),
            Holder::Freelist => "the freelist".to_string(),
            Holder::Nobody => "another table".to_string(),
        };
        let (looked_up, held) = cut.evidence.witnessed.unwrap_or((0, 0));
        ledger.roots.push(LossSignal::PageOfAnother {
            table,
            page: cut.page.get(),
            holder,
            cells: cut.evidence.cells,
            outside: cut.evidence.outside,
            sampled: cut.evidence.sampled,
            fitting: cut.evidence.fitting,
            looked_up,
            held,
        });
        if let Some(tree) = survey.trees.iter_mut().find(|t| t.root == cut.tree) {
            tree.lost.push(LostChild {
                parent: cut.parent,
                child: cut.page.get(),
                bounds: cut.bounds,
            });
        }
        for p in &cut.pages {
            let (class, owner) = match cut.holder {
                Holder::Tree(root) => (survey.page_map.class(*p), Some(root)),
                Holder::Freelist if trunks.contains(p) => (Some(PageClass::FreelistTrunk), None),
                Holder::Freelist => (Some(PageClass::FreelistLeaf), None),
                Holder::Nobody => (survey.page_map.class(*p), None),
            };
            if let Some(class) = class {
                survey.page_map.hand_over(*p, class, owner);
            }
        }
        let set = cuts
            .entry(cut.tree)
            .or_insert_with(|| PageSet::with_page_count(db.page_count()));
        for p in &cut.pages {
            set.insert(*p);
        }
        tops.entry(cut.tree).or_default().push(cut.page);
    }
    take_back(evidence, &cuts, &tops, out, tables, deferred)?;
    Ok(cuts)
}

/// The pages a tree reaches that something makes suspect, as `(root, page)`: those
/// holding a row SQLite's check of the source says the table's index lacks (`named`:
/// `(rowid, index)`), and those holding a key outside the range their parent assigns.
/// No other structure claims them; [`reconstruct::settle_claims`] weighs them against
/// the tree's own indexes alone.
pub fn suspects(
    evidence: &Evidence<'_>,
    survey: &Survey,
    tables: &Tables,
    named: &[(i64, String)],
) -> Vec<(PageNo, PageNo)> {
    let mut out: Vec<(PageNo, PageNo)> = survey
        .trees
        .iter()
        .flat_map(|t| {
            t.findings.iter().filter_map(|f| match f {
                pager::Finding::KeyOutOfRange { page, .. } => Some((t.root, *page)),
                _ => None,
            })
        })
        .collect();
    let mut by_root: BTreeMap<PageNo, BTreeSet<i64>> = BTreeMap::new();
    for (rowid, index) in named {
        let root = evidence.schema.table_of_index(index).and_then(|name| {
            tables
                .iter()
                .find(|t| t.name.eq_ignore_ascii_case(name))
                .and_then(|t| t.root)
        });
        if let Some(root) = root {
            by_root.entry(root).or_default().insert(*rowid);
        }
    }
    for (root, rowids) in by_root {
        for item in BtreeWalk::new(&evidence.db, root).flatten() {
            if let TreeItem::Cell(c) = item {
                if c.cell.rowid().is_some_and(|r| rowids.contains(&r)) {
                    out.push((root, c.location.page));
                }
            }
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}

/// Takes the rows of cut pages back out of the bulk-loaded tables, and out of the rows they
/// deferred; a row of the table's own pages under one of their rowids, which the bulk
/// writer deferred or did not reach, goes in through SQL with the deferred rows.
fn take_back<'s>(
    evidence: &Evidence<'s>,
    cuts: &Cuts,
    tops: &BTreeMap<PageNo, Vec<PageNo>>,
    out: &Output,
    tables: &mut Tables,
    deferred: &mut BTreeMap<TableId, Vec<reconstruct::RowPlace>>,
) -> Result<(), Error> {
    let db = &evidence.db;
    for (id, later) in deferred.iter_mut() {
        let Some(t) = tables.get_mut(*id) else {
            continue;
        };
        let (Some(cut), Some(tops)) = (
            t.root.and_then(|r| cuts.get(&r)),
            t.root.and_then(|r| tops.get(&r)),
        ) else {
            continue;
        };
        // SQL cannot take a row back from a table whose columns take every name of its
        // rowid: such a table keeps the rows.
        let Some(rowid_name) = t.shape.as_ref().and_then(|s| s.rowid_name()) else {
            continue;
        };
        later.retain(|place| !cut.contains(place.provenance.page()));
        let mut rowids = BTreeSet::new();
        // Each page once, however many cuts lead to it.
        let mut seen = PageSet::with_page_count(db.page_count());
        for top in tops {
            let mut walk = BtreeWalk::new(db, *top).after(seen);
            for item in walk.by_ref().flatten() {
                if let TreeItem::Cell(c) = item {
                    if let (Cell::TableLeaf(leaf), true) = (c.cell, cut.contains(c.location.page)) {
                        rowids.insert(leaf.rowid);
                    }
                }
            }
            seen = walk.into_visited();
        }
        let mut retaken = BTreeSet::new();
        let delete = format!(
            "DELETE FROM {} WHERE {} = ?1",
            quote(&t.name),
            quote(rowid_name)
        );
        let dberr = Error::db("taking back a row of another structure's page");
        out.conn.execute_batch("BEGIN").map_err(&dberr)?;
        for rowid in rowids {
            let removed = out
                .conn
                .prepare_cached(&delete)
                .and_then(|mut s| s.execute([rowid]))
                .map_err(&dberr)?;
            if removed > 0 {
                t.loss.from_tree = t.loss.from_tree.saturating_sub(1);
                retaken.insert(rowid);
            }
        }
        out.conn.execute_batch("COMMIT").map_err(&dberr)?;
        if retaken.is_empty() {
            continue;
        }
        t.written_rowids.remove_all(&retaken);
        t.spilled_rowids.remove_all(&retaken);
        t.spilled_values.retain(|r, _| !retaken.contains(r));
        let waiting: BTreeSet<i64> = later.iter().filter_map(|place| place.rowid).collect();
        for event in TableRows::new(db, t.root, std::iter::empty()).without(Some(cut.clone())) {
            if let RowEvent::Row(row) = event {
                if row
                    .rowid()
                    .is_some_and(|r| retaken.contains(&r) && !waiting.contains(&r))
                {
                    later.push(row.place());
                }
            }
        }
    }
    Ok(())
}
