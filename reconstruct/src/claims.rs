//! Whose page is it, when two structures claim it? In a file SQLite wrote, every b-tree
//! page is reached from one root by one path, and no page of the freelist is in a tree.
//! An anti-forensic edit (or a flipped pointer) can aim a child pointer of one table's
//! interior page at a leaf of another table, or at a freed leaf still holding old cells:
//! followed as it stands, that page's rows are written into the wrong table, and the
//! table's own page, now unreachable, loses every key conflict against them.
//!
//! The survey says which pages two trees reach (`Finding::PageInTwoTrees`) and which
//! pages a tree reaches that the freelist lists. For each, every claiming tree is weighed
//! against the page's cells:
//!
//! - keys: a child of an interior page holds only the keys its parent's divider keys
//!   assign to it; one key outside that range refutes the claim;
//! - shape: nearly every record must fit the table's declared columns;
//! - witnesses: where the table has an index whose entries read as stored (plain columns,
//!   BINARY collation), the rows of its own pages are in it: most sampled rows missing from
//!   it refutes the claim.
//!
//! A page is cut from a tree whose claim is refuted when the rival's is not (a rival
//! tree), or outright (the freelist, which needs no proof to hold a freed page). A cut
//! page is a lost child of the tree it is cut from, with the key range its pointer
//! covered, so that the tree's own page, orphaned by the edit, is attributed there by
//! that range. Two claims that both stand, or both fall, are left as they are.

use std::collections::BTreeMap;

use pager::search::index_holds;
use pager::{
    decode_cell, BtreeWalk, Cell, Database, Finding, KeyBounds, PageNo, PageSet, Survey, TreeItem,
    Value,
};

use crate::partial::IndexKeys;
use crate::roots::Fit;
use crate::shape::TableShape;

/// Cells read from a claimed page (and the pages below it) to weigh a claim.
const CELLS: usize = 256;

/// Rows of those looked up in each witnessing index.
const WITNESSED: usize = 64;

/// A table whose tree may claim a page: its root, its columns and its indexes.
#[derive(Clone, Copy, Debug)]
pub struct Claimant<'s> {
    /// The root of its b-tree.
    pub root: PageNo,
    /// Its declared columns.
    pub shape: &'s TableShape,
    /// Its indexes in the source.
    pub indexes: &'s [IndexKeys],
}

impl Claimant<'_> {
    /// Whether an index of the table can witness its rows: one on plain columns with the
    /// BINARY collation (a search compares keys as bytes).
    pub fn can_witness(&self) -> bool {
        self.indexes.iter().any(IndexKeys::can_witness)
    }
}

/// What holds a page cut from a tree.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Holder {
    /// The tree rooted at this page, whose claim stands.
    Tree(PageNo),
    /// The freelist: a freed page, its cells stale.
    Freelist,
    /// No structure: a page no other tree reaches whose rows the tree's own indexes do
    /// not hold (a child pointer crossed into another table's tree). Its rows are an
    /// orphan's, for the evidence (their index entries) to give to their table.
    Nobody,
}

/// What else may hold a page a tree reaches.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Rival {
    /// Another tree that reaches it, by its root.
    Tree(PageNo),
    /// The freelist, which lists it.
    Freelist,
    /// Nothing that reaches it: the page is suspect (SQLite's check names rows of it that
    /// the tree's index lacks, or a key of it lies outside its range).
    Suspect,
}

/// How a page's cells bear out one tree's claim to it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ClaimEvidence {
    /// Table cells read.
    pub cells: u32,
    /// Of those, cells whose key lies outside the range the tree's pointer assigns.
    pub outside: u32,
    /// Records read whole.
    pub sampled: u32,
    /// Of those, records that fit the tree's table.
    pub fitting: u32,
    /// Rows looked up in the table's indexes, and how many an index holds.
    pub witnessed: Option<(u32, u32)>,
    /// Of those, the look-ups in indexes keyed on a value of the row, not on its rowid
    /// alone: only they bear a claim out. An index of the rowid alias alone holds the
    /// rows of any tree whose rowids the table has, another table's as well; its missing
    /// entries still refute.
    pub by_value: Option<(u32, u32)>,
}

impl ClaimEvidence {
    /// Whether the cells refute the claim: a key out of range, records that do not fit,
    /// or rows the table's own index does not hold.
    pub fn refutes(&self) -> bool {
        self.refutes_structurally() || self.unwitnessed()
    }

    /// Whether the table's indexes refute the claim: at least four rows looked up, and
    /// most of them missing.
    pub fn unwitnessed(&self) -> bool {
        self.witnessed
            .is_some_and(|(checked, held)| checked >= 4 && held * 2 < checked)
    }

    /// Whether the table's indexes keyed on the rows' values bear the claim out: at least
    /// four rows looked up, and nine in ten of them held.
    pub fn witnessed(&self) -> bool {
        self.by_value
            .is_some_and(|(checked, held)| checked >= 4 && held * 10 >= checked * 9)
    }

    /// Whether the page's own structure refutes the claim (a key out of range, records
    /// that do not fit), not the indexes alone: needed where nothing else weighs the
    /// rival's claim (the freelist's, a root's).
    pub fn refutes_structurally(&self) -> bool {
        let fit = Fit {
            sampled: self.sampled,
            fitting: self.fitting,
            score: 0,
        };
        self.outside > 0 || (self.sampled > 0 && !fit.fits())
    }
}

/// A page cut from a tree that reaches it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PageCut {
    /// The root of the tree it is cut from.
    pub tree: PageNo,
    /// The page.
    pub page: PageNo,
    /// The interior page whose pointer reaches it.
    pub parent: PageNo,
    /// The key range that pointer assigns.
    pub bounds: KeyBounds,
    /// What holds it.
    pub holder: Holder,
    /// Its cells against the tree's claim.
    pub evidence: ClaimEvidence,
    /// The page and every page below it.
    pub pages: Vec<PageNo>,
}

/// The pages to cut from the claimants' trees (see the module docs).
///
/// `suspects`: pages no other structure claims that a tree (by its root) reaches and
/// that something else makes suspect (SQLite's check names rows of them that the
/// tree's index lacks, a key lies outside its range): cut, to no holder, only where
/// the tree's own indexes refute it.
pub fn settle_claims(
    db: &Database<'_>,
    survey: &Survey,
    claimants: &[Claimant<'_>],
    suspects: &[(PageNo, PageNo)],
) -> Vec<PageCut> {
    let by_root: BTreeMap<PageNo, &Claimant<'_>> = claimants.iter().map(|c| (c.root, c)).collect();
    // Only a tree with an index to witness its rows can have a suspect page taken away:
    // the others' are not weighed (nor read).
    let suspects: Vec<(PageNo, PageNo)> = suspects
        .iter()
        .copied()
        .filter(|(root, _)| by_root.get(root).is_some_and(|c| c.can_witness()))
        .collect();
    let contested = contested(survey, |r| by_root.contains_key(&r), &suspects);
    // Each contested page as each of its trees reaches it: (parent, bounds).
    let mut placed: BTreeMap<(PageNo, PageNo), (PageNo, KeyBounds)> = BTreeMap::new();
    for (root, pages) in &contested {
        let mut wanted: Vec<PageNo> = pages.iter().map(|(p, _)| *p).collect();
        wanted.sort_unstable();
        wanted.dedup();
        for (page, at) in place_in_tree(db, *root, &wanted) {
            placed.insert((*root, page), at);
        }
    }
    let weigh = |root: PageNo, page: PageNo| -> Option<(PageNo, KeyBounds, ClaimEvidence)> {
        let (parent, bounds) = *placed.get(&(root, page))?;
        let claimant = by_root.get(&root)?;
        Some((parent, bounds, weigh_claim(db, claimant, page, bounds)))
    };
    let mut cuts = Vec::new();
    let mut cut_once = std::collections::BTreeSet::new();
    for (root, pages) in &contested {
        for (page, rival) in pages {
            // A root is not reached through a pointer: whose tree it is, is the schema's
            // question (`attribute_roots`).
            let Some((parent, bounds, own)) = weigh(*root, *page) else {
                continue;
            };
            if !own.refutes() {
                continue;
            }
            let holder = match rival {
                // The freelist's claim and a root's are not weighed here: the page must
                // refute this tree's by its own keys or records.
                Rival::Freelist if own.refutes_structurally() => Holder::Freelist,
                Rival::Freelist => continue,
                // Nothing else claims it: only the tree's own indexes may take it away.
                Rival::Suspect if own.unwitnessed() => Holder::Nobody,
                Rival::Suspect => continue,
                // The rival's own root: its claim is its schema row's, which
                // `attribute_roots` has weighed.
                Rival::Tree(rival) if rival == page && own.refutes_structurally() => {
                    Holder::Tree(*rival)
                }
                Rival::Tree(rival) if rival == page => continue,
                Rival::Tree(rival) => match weigh(*rival, *page) {
                    Some((_, _, theirs)) if !theirs.refutes() => Holder::Tree(*rival),
                    _ => continue,
                },
            };
            if !cut_once.insert((*root, *page)) {
                continue;
            }
            cuts.push(PageCut {
                tree: *root,
                page: *page,
                parent,
                bounds,
                holder,
                evidence: own,
                pages: Vec::new(),
            });
        }
    }
    // The pages each cut takes along: those below it the tree reaches through no other
    // pointer (a freed interior page's stale pointers may name live leaves), each page
    // walked once however many cuts lead to it.
    let mut tops: BTreeMap<PageNo, PageSet> = BTreeMap::new();
    for c in &cuts {
        tops.entry(c.tree)
            .or_insert_with(|| PageSet::with_page_count(db.page_count()))
            .insert(c.page);
    }
    for (root, tops) in tops {
        let mut walk = BtreeWalk::new(db, root).without(tops);
        walk.by_ref().for_each(drop);
        let mut taken = walk.into_visited();
        for cut in cuts.iter_mut().filter(|c| c.tree == root) {
            let mut walk = BtreeWalk::new(db, cut.page).after(taken);
            cut.pages = reached(&mut walk);
            taken = walk.into_visited();
        }
    }
    cuts
}

/// The roots of the trees that reach a page something else claims: the only claimants
/// [`settle_claims`] weighs (so only their indexes need reading).
pub fn contested_roots(survey: &Survey, suspects: &[(PageNo, PageNo)]) -> Vec<PageNo> {
    contested(survey, |_| true, suspects).into_keys().collect()
}

/// Per tree for which `claims` holds, the pages it reaches that something else claims,
/// each with the rival tree's root (`None`: the freelist), sorted.
fn contested(
    survey: &Survey,
    claims: impl Fn(PageNo) -> bool,
    suspects: &[(PageNo, PageNo)],
) -> BTreeMap<PageNo, Vec<(PageNo, Rival)>> {
    let mut contested: BTreeMap<PageNo, Vec<(PageNo, Rival)>> = BTreeMap::new();
    for f in &survey.findings {
        if let Finding::PageInTwoTrees {
            page,
            first_root,
            second_root,
        } = f
        {
            if claims(*first_root) && claims(*second_root) {
                contested
                    .entry(*first_root)
                    .or_default()
                    .push((*page, Rival::Tree(*second_root)));
                contested
                    .entry(*second_root)
                    .or_default()
                    .push((*page, Rival::Tree(*first_root)));
            }
        }
    }
    // A freed page a tree reaches: the survey gave it to the tree.
    for page in survey.freelist.trunks.iter().chain(&survey.freelist.leaves) {
        if let Some(root) = survey.page_map.owner(*page).filter(|r| claims(*r)) {
            contested
                .entry(root)
                .or_default()
                .push((*page, Rival::Freelist));
        }
    }
    for &(root, page) in suspects.iter().filter(|(r, p)| claims(*r) && r != p) {
        contested
            .entry(root)
            .or_default()
            .push((page, Rival::Suspect));
    }
    for pages in contested.values_mut() {
        pages.sort_unstable();
        pages.dedup();
    }
    contested
}

/// The pages `wanted` (sorted) of the tree at `root` (the root itself left out), each with
/// the interior page that reaches it and the key range it is assigned. A wanted page below
/// another is left out: a cut of the upper one takes it along, and each subtree is weighed
/// once however many of its pages are claimed twice.
fn place_in_tree(
    db: &Database<'_>,
    root: PageNo,
    wanted: &[PageNo],
) -> BTreeMap<PageNo, (PageNo, KeyBounds)> {
    let is_wanted = |p: PageNo| wanted.binary_search(&p).is_ok();
    // Pages below a wanted one (a parent is entered before its children).
    let mut below = PageSet::with_page_count(db.page_count());
    let mut found = BTreeMap::new();
    for item in BtreeWalk::new(db, root).flatten() {
        let TreeItem::Page(p) = item else { continue };
        let Some(parent) = p.parent else { continue };
        if is_wanted(parent) || below.contains(parent) {
            below.insert(p.page);
        } else if is_wanted(p.page) {
            found.insert(p.page, (parent, p.bounds));
        }
    }
    found
}

/// Every page a walk enters, in walk order.
fn reached(walk: &mut BtreeWalk<'_, '_>) -> Vec<PageNo> {
    walk.flatten()
        .filter_map(|item| match item {
            TreeItem::Page(p) => Some(p.page),
            _ => None,
        })
        .collect()
}

/// An index whose entries witness a table's rows.
struct Witness<'s> {
    /// Its root.
    root: PageNo,
    /// Where each key value comes from: a field of the record, or (`None`) the rowid.
    key: Vec<Option<usize>>,
    /// Whether each key position sorts descending.
    desc: &'s [bool],
}

/// The cells of the subtree at `page` against `claimant`'s claim to it under `bounds`.
pub(crate) fn weigh_claim(
    db: &Database<'_>,
    claimant: &Claimant<'_>,
    page: PageNo,
    bounds: KeyBounds,
) -> ClaimEvidence {
    let shape = claimant.shape;
    let order = shape.record_order();
    let alias = shape.rowid_alias();
    let witnesses: Vec<Witness<'_>> = claimant
        .indexes
        .iter()
        .filter(|i| i.can_witness())
        .filter_map(|i| {
            let key = i
                .columns
                .iter()
                .map(|name| {
                    let name = name.as_deref()?;
                    let column = shape
                        .columns
                        .iter()
                        .position(|c| c.name.eq_ignore_ascii_case(name))?;
                    // The rowid alias is NULL in the record: its value is the rowid.
                    Some(match alias {
                        Some(a) if a == column => None,
                        _ => Some(order.iter().position(|&o| o == column)?),
                    })
                })
                .collect::<Option<Vec<Option<usize>>>>()?;
            Some(Witness {
                root: i.root,
                key,
                desc: &i.desc,
            })
        })
        .collect();
    let mut e = ClaimEvidence::default();
    let (mut checked, mut held) = (0u32, 0u32);
    let (mut checked_by_value, mut held_by_value) = (0u32, 0u32);
    let cells = BtreeWalk::new(db, page)
        .flatten()
        .filter_map(|item| match item {
            TreeItem::Cell(c) => Some(c),
            _ => None,
        })
        .take(CELLS);
    for cell in cells {
        let Cell::TableLeaf(leaf) = cell.cell else {
            continue;
        };
        e.cells += 1;
        if !bounds.contains(leaf.rowid) {
            e.outside += 1;
        }
        let Ok(record) = decode_cell(db, &cell) else {
            continue;
        };
        if !record.complete {
            continue;
        }
        e.sampled += 1;
        if shape.fit(&record.values).is_some() {
            e.fitting += 1;
        }
        if (e.sampled as usize) > WITNESSED {
            continue;
        }
        for Witness { root, key, desc } in &witnesses {
            let values: Option<Vec<Value>> = key
                .iter()
                .map(|k| match k {
                    None => Some(Value::Integer(leaf.rowid)),
                    // A record shorter than the key (a column added since, its default
                    // in the index) is not looked up.
                    Some(at) => record.values.get(*at).cloned(),
                })
                .chain(std::iter::once(Some(Value::Integer(leaf.rowid))))
                .collect();
            let Some(values) = values else { continue };
            if let Some(found) = index_holds(db, *root, &values, desc) {
                checked += 1;
                held += u32::from(found);
                if key.iter().any(Option::is_some) {
                    checked_by_value += 1;
                    held_by_value += u32::from(found);
                }
            }
        }
    }
    e.witnessed = (!witnesses.is_empty()).then_some((checked, held));
    e.by_value = witnesses
        .iter()
        .any(|w| w.key.iter().any(Option::is_some))
        .then_some((checked_by_value, held_by_value));
    e
}

#[cfg(test)]
mod tests {
    use super::ClaimEvidence;

    /// 40 cells read, in range, 39 fitting the table; 38 of them in its indexes.
    const FINE: ClaimEvidence = ClaimEvidence {
        cells: 40,
        outside: 0,
        sampled: 40,
        fitting: 39,
        witnessed: Some((40, 38)),
        by_value: Some((40, 38)),
    };

    #[test]
    fn one_key_out_of_range_or_rows_the_index_lacks_refute_a_claim() {
        let fine = FINE;
        assert!(!fine.refutes());
        assert!(ClaimEvidence { outside: 1, ..fine }.refutes());
        assert!(ClaimEvidence {
            fitting: 30,
            ..fine
        }
        .refutes());
        assert!(ClaimEvidence {
            witnessed: Some((40, 19)),
            ..fine
        }
        .refutes());
        // Too few rows looked up to say; no index to ask.
        assert!(!ClaimEvidence {
            witnessed: Some((3, 0)),
            ..fine
        }
        .refutes());
        assert!(!ClaimEvidence {
            witnessed: None,
            ..fine
        }
        .refutes());
    }

    #[test]
    fn only_an_index_keyed_on_the_rows_values_bears_a_claim_out() {
        let held = FINE;
        assert!(held.witnessed());
        // An index of the rowid alias alone holds any tree's rows whose rowids the table
        // has: no proof that the rows are the table's.
        assert!(!ClaimEvidence {
            by_value: None,
            ..held
        }
        .witnessed());
        // Its missing entries still refute.
        assert!(ClaimEvidence {
            witnessed: Some((40, 0)),
            by_value: None,
            ..held
        }
        .refutes());
    }
}
