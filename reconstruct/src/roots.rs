//! Whose b-tree is it? A schema row's `rootpage` is trusted only when the records under it
//! fit the row's table. An anti-forensic edit (or a flipped bit) can swap two tables'
//! root pages: written as named, each table's rows would land in the other, refused or
//! mangled. Each table's first records are sampled and fitted against every table's
//! declared columns ([`TableShape::fit`]):
//!
//! - a tree fits its own table when nearly every sampled record fits it (one damaged
//!   record in twenty is allowed);
//! - a tree moves to another table only when it fits that table, better than its own, and
//!   that table's own tree does not fit it (or it has none): in a healthy database every
//!   tree fits its own table and nothing moves, whatever two tables' shapes share;
//! - a tree that fits no table free to take it is kept apart, as a table of its own,
//!   never forced into the wrong one;
//! - a root two tables' schema rows name, whose records fit both, is the one table's whose
//!   index holds its rows, when the other's index does not ([`crate::claims`]): the other
//!   table's own tree is then an orphan, attributed as one.

use pager::{decode_cell, BtreeWalk, Database, PageNo, TreeItem, Value};

use crate::claims::{weigh_claim, Claimant};
use crate::partial::IndexKeys;
use crate::shape::TableShape;
use crate::table::TableId;

/// Records sampled from the start of each tree.
const SAMPLE: usize = 64;

/// A table of the schema and the root its schema row names.
#[derive(Clone, Debug)]
pub struct NamedRoot {
    /// The table.
    pub table: TableId,
    /// Its columns.
    pub shape: TableShape,
    /// The root page its schema row names.
    pub root: Option<PageNo>,
    /// Its indexes, where another table's schema row names the same root: their entries
    /// tell whose rows the tree holds when both tables' columns fit them.
    pub indexes: Vec<IndexKeys>,
}

/// How a tree's sampled records fit one table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fit {
    /// Records sampled.
    pub sampled: u32,
    /// Of those, records that fit the table.
    pub fitting: u32,
    /// Their summed fit score.
    pub score: u64,
}

impl Fit {
    /// Nearly every sampled record fits (one damaged record in twenty allowed).
    pub fn fits(&self) -> bool {
        self.sampled > 0 && self.fitting * 20 >= self.sampled * 19
    }

    fn per_record(&self) -> f64 {
        self.score as f64 / f64::from(self.fitting.max(1))
    }
}

/// Where one tree goes.
#[derive(Clone, Debug, PartialEq)]
pub enum RootDecision {
    /// The tree fills the table whose schema row names it.
    Kept {
        /// The table.
        table: TableId,
        /// The root.
        root: PageNo,
    },
    /// The tree fills another table than the one whose schema row names it.
    Moved {
        /// The root.
        root: PageNo,
        /// The table whose schema row names it; `None` for a stray tree (see
        /// [`attribute_roots`]).
        named_by: Option<TableId>,
        /// The table it fills.
        to: TableId,
        /// How its records fit the table it fills.
        fit: Fit,
        /// How they fit the table that names it.
        own: Fit,
    },
    /// The root is an index b-tree page: index entries, not this table's rows.
    NotATableTree {
        /// The root.
        root: PageNo,
        /// The table whose schema row names it.
        named_by: TableId,
    },
    /// The root another table's schema row also names, and whose records fit that table:
    /// they are its rows, and this table has none of its own there.
    Elsewhere {
        /// The root.
        root: PageNo,
        /// The table whose schema row also names it.
        named_by: TableId,
        /// The table the tree fills.
        holder: TableId,
    },
    /// The tree fits no table free to take it: its rows are kept as a table of their own.
    Apart {
        /// The root.
        root: PageNo,
        /// The table whose schema row names it; `None` for a stray tree.
        named_by: Option<TableId>,
        /// How its records fit that table.
        own: Fit,
        /// The sampled records, to infer its columns from.
        sample: Vec<Vec<Value>>,
    },
}

/// The first complete records of the tree at `root`, in key order.
fn sample(db: &Database<'_>, root: PageNo) -> Vec<Vec<Value>> {
    BtreeWalk::new(db, root)
        .flatten()
        .filter_map(|item| match item {
            TreeItem::Cell(c) => Some(c),
            _ => None,
        })
        .take(SAMPLE * 2)
        .filter_map(|c| decode_cell(db, &c).ok())
        .filter(|r| r.complete)
        .take(SAMPLE)
        .map(|r| r.values)
        .collect()
}

fn fit(shape: &TableShape, sample: &[Vec<Value>]) -> Fit {
    let mut f = Fit {
        sampled: sample.len() as u32,
        fitting: 0,
        score: 0,
    };
    for r in sample {
        if let Some(s) = shape.fit(r) {
            f.fitting += 1;
            f.score += u64::from(s);
        }
    }
    f
}

/// Decides which table each named tree fills (see the module docs). Trees with no sampled
/// record (empty or unreadable) stay where they are named, and their table takes no other.
/// `others`: the roots other kinds of schema rows name (indexes'); those that are table
/// b-trees (an index's root swapped with a table's) are stray trees: their records go to a
/// table they fit whose own tree is missing, or are kept apart.
#[allow(clippy::indexing_slicing)]
// reason: `t` ranges over `trees` and `fits` (one entry per tree), `i` and `j` over
// `named` (one entry per table, the length of every `fits[t]`, `holder`); nothing indexed
// comes from the input.
pub fn attribute_roots(
    db: &Database<'_>,
    named: &[NamedRoot],
    others: &[PageNo],
) -> Vec<RootDecision> {
    let is_index = |root: PageNo| {
        db.page(root)
            .and_then(|p| p.btree_header().ok())
            .is_some_and(|h| !h.page_type().is_table())
    };
    let mut out: Vec<RootDecision> = named
        .iter()
        .filter_map(|n| Some((n.table, n.root?)))
        .filter(|(_, root)| is_index(*root))
        .map(|(named_by, root)| RootDecision::NotATableTree { root, named_by })
        .collect();
    let trees: Vec<(Option<usize>, PageNo, Vec<Vec<Value>>)> = named
        .iter()
        .enumerate()
        .filter_map(|(i, n)| Some((Some(i), n.root?)))
        .chain(others.iter().map(|r| (None, *r)))
        .filter(|(_, root)| !is_index(*root))
        .map(|(i, root)| (i, root, sample(db, root)))
        .collect();
    // fits[t][j]: tree t against table j.
    let fits: Vec<Vec<Fit>> = trees
        .iter()
        .map(|(_, _, s)| named.iter().map(|n| fit(&n.shape, s)).collect())
        .collect();
    let owners: Vec<Option<usize>> = trees.iter().map(|(i, _, _)| *i).collect();
    // Trees whose root another table's schema row also names, and whose records that
    // table's indexes hold while their own table's do not: not their table's.
    let refuted = |t: usize| -> bool {
        let (Some(i), root) = (owners[t], trees[t].1) else {
            return false;
        };
        let weigh = |j: usize| {
            let claimant = Claimant {
                root,
                shape: &named[j].shape,
                indexes: &named[j].indexes,
            };
            weigh_claim(db, &claimant, root, pager::KeyBounds::default())
        };
        let rivals: Vec<usize> = trees
            .iter()
            .filter_map(|(j, r, _)| j.filter(|j| *r == root && *j != i))
            .collect();
        !rivals.is_empty()
            && !named[i].indexes.is_empty()
            && weigh(i).refutes()
            && rivals.iter().any(|&j| !weigh(j).refutes())
    };
    let sizes: Vec<u32> = trees.iter().map(|(_, _, s)| s.len() as u32).collect();
    // A stray tree has no table of its own: none of its records fit one.
    let own = |t: usize| -> Fit {
        owners[t].map_or(
            Fit {
                sampled: sizes[t],
                fitting: 0,
                score: 0,
            },
            |i| fits[t][i],
        )
    };
    // holder[j]: the tree table j is filled from; tree[t]: the table tree t fills.
    let mut holder: Vec<Option<usize>> = vec![None; named.len()];
    let mut fills: Vec<Option<usize>> = vec![None; trees.len()];
    for (t, (i, _, s)) in trees.iter().enumerate() {
        if let Some(i) = i.filter(|_| (s.is_empty() || own(t).fits()) && !refuted(t)) {
            holder[i] = Some(t);
            fills[t] = Some(i);
        }
    }
    // Moves, best first, until none is left: a tree to a table it fits, that no tree
    // fitting it holds, when its own table does not fit it or fits it clearly worse.
    let mut budget = trees.len() * named.len() + 1;
    loop {
        budget = budget.saturating_sub(1);
        let mut best: Option<(usize, usize, f64)> = None;
        for (t, (i, _, s)) in trees.iter().enumerate() {
            if s.is_empty() {
                continue;
            }
            for (j, f) in fits[t].iter().enumerate() {
                // A table is free when no tree holds it, or its tree's records are there
                // and do not fit it (an empty table is not free: nothing says its tree is
                // not its own).
                let free = holder[j]
                    .is_none_or(|h| h != t && !trees[h].2.is_empty() && !fits[h][j].fits());
                let better = !own(t).fits() || f.per_record() >= own(t).per_record() + 1.0;
                if Some(j) == *i || fills[t] == Some(j) || !f.fits() || !free || !better {
                    continue;
                }
                if best.is_none_or(|(_, _, p)| f.per_record() > p) {
                    best = Some((t, j, f.per_record()));
                }
            }
        }
        let Some((t, j, _)) = best.filter(|_| budget > 0) else {
            break;
        };
        if let Some(from) = fills[t] {
            holder[from] = None;
        }
        if let Some(h) = holder[j] {
            fills[h] = None;
        }
        holder[j] = Some(t);
        fills[t] = Some(j);
    }
    // The table filled from each root, to tell a root two schema rows name.
    let filled_from = |root: PageNo| -> Option<TableId> {
        trees
            .iter()
            .zip(&fills)
            .find_map(|((_, r, _), f)| f.filter(|_| *r == root).and_then(|j| named.get(j)))
            .map(|n| n.table)
    };
    let filled_roots: Vec<Option<TableId>> =
        trees.iter().map(|(_, r, _)| filled_from(*r)).collect();
    let decided = trees
        .into_iter()
        .enumerate()
        .filter_map(|(t, (i, root, s))| {
            let named_by = i.and_then(|i| named.get(i)).map(|n| n.table);
            Some(match fills[t] {
                Some(j) if Some(j) == i => RootDecision::Kept {
                    table: named_by?,
                    root,
                },
                Some(j) => RootDecision::Moved {
                    root,
                    named_by,
                    to: named.get(j)?.table,
                    fit: fits[t][j],
                    own: own(t),
                },
                None if filled_roots[t].is_some() => RootDecision::Elsewhere {
                    root,
                    // A stray root another table holds is simply that table's.
                    named_by: named_by?,
                    holder: filled_roots[t]?,
                },
                None => RootDecision::Apart {
                    root,
                    named_by,
                    own: own(t),
                    sample: s,
                },
            })
        })
        .collect::<Vec<_>>();
    out.extend(decided);
    out
}
