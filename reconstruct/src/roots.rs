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
//! - a tree whose records fit its own table and another as well (two tables of one shape,
//!   their roots swapped) goes to the other when its own table's indexes do not hold its
//!   rows and exactly the other's do: the index entries decide what the records cannot;
//! - a tree that fits no table free to take it is kept apart, as a table of its own,
//!   never forced into the wrong one;
//! - a root two tables' schema rows name, whose records fit both, is the one table's whose
//!   index holds its rows, when the other's index does not ([`crate::claims`]): the other
//!   table's own tree is then an orphan, attributed as one.

use pager::{decode_cell, BtreeWalk, Database, PageNo, TreeItem, Value};

use crate::claims::{weigh_claim, Claimant};
use crate::partial::IndexKeys;
use crate::shape::{classes_of, TableShape};
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
        /// Where they fit both, the index entries that decided: rows looked up, how many
        /// the indexes of the table it fills hold, how many those of the table naming it.
        by_index: Option<[u32; 3]>,
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

/// The first complete records of the tree at `root`, in key order, as their storage
/// classes ([`classes_of`]).
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
        .map(|r| classes_of(r.values))
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
pub fn attribute_roots(
    db: &Database<'_>,
    named: &[NamedRoot],
    others: &[PageNo],
) -> Vec<RootDecision> {
    let mut out = not_table_trees(db, named);
    let mut assignment = Assignment::new(db, named, others);
    assignment.witnessed_moves();
    assignment.keep_own();
    assignment.make_moves();
    out.extend(assignment.decisions());
    out
}

/// Whether `root` is an index b-tree page.
fn is_index(db: &Database<'_>, root: PageNo) -> bool {
    db.page(root)
        .and_then(|p| p.btree_header().ok())
        .is_some_and(|h| !h.page_type().is_table())
}

/// The roots tables' schema rows name that are index b-tree pages: they hold index
/// entries, none of the table's rows.
fn not_table_trees(db: &Database<'_>, named: &[NamedRoot]) -> Vec<RootDecision> {
    named
        .iter()
        .filter_map(|n| Some((n.table, n.root?)))
        .filter(|(_, root)| is_index(db, *root))
        .map(|(named_by, root)| RootDecision::NotATableTree { root, named_by })
        .collect()
}

/// A table b-tree to give a table.
struct Tree {
    /// The table whose schema row names it (an index into the named roots); `None` for a
    /// stray tree.
    named_by: Option<usize>,
    /// Its root.
    root: PageNo,
    /// Its first records.
    sample: Vec<Vec<Value>>,
}

/// Which tree fills which table, as it is worked out: every tree, how its records fit
/// every table, and the pairs made so far.
struct Assignment<'a, 'db> {
    db: &'a Database<'db>,
    named: &'a [NamedRoot],
    trees: Vec<Tree>,
    /// `fits[t][j]`: tree `t` against table `j`.
    fits: Vec<Vec<Fit>>,
    /// `holder[j]`: the tree table `j` is filled from.
    holder: Vec<Option<usize>>,
    /// `fills[t]`: the table tree `t` fills.
    fills: Vec<Option<usize>>,
    /// `by_index[t]`: the index entries that gave tree `t` its table (see
    /// [`RootDecision::Moved`]).
    by_index: Vec<Option<[u32; 3]>>,
}

#[allow(clippy::indexing_slicing)]
// reason: `t` ranges over `trees` and `fits` (one entry per tree), `i` and `j` over
// `named` (one entry per table, the length of every `fits[t]`, `holder`); nothing indexed
// comes from the input.
impl<'a, 'db> Assignment<'a, 'db> {
    /// Every table b-tree a schema row names (a table's, then another kind's), sampled and
    /// fitted against every table; none given yet.
    fn new(db: &'a Database<'db>, named: &'a [NamedRoot], others: &[PageNo]) -> Self {
        let trees: Vec<Tree> = named
            .iter()
            .enumerate()
            .filter_map(|(i, n)| Some((Some(i), n.root?)))
            .chain(others.iter().map(|r| (None, *r)))
            .filter(|(_, root)| !is_index(db, *root))
            .map(|(named_by, root)| Tree {
                named_by,
                root,
                sample: sample(db, root),
            })
            .collect();
        let fits = trees
            .iter()
            .map(|tree| named.iter().map(|n| fit(&n.shape, &tree.sample)).collect())
            .collect();
        Assignment {
            db,
            named,
            holder: vec![None; named.len()],
            fills: vec![None; trees.len()],
            by_index: vec![None; trees.len()],
            trees,
            fits,
        }
    }

    /// How tree `t`'s records fit the table whose schema row names it. A stray tree has no
    /// table of its own: none of its records fit one.
    fn own(&self, t: usize) -> Fit {
        self.trees[t].named_by.map_or(
            Fit {
                sampled: self.trees[t].sample.len() as u32,
                fitting: 0,
                score: 0,
            },
            |i| self.fits[t][i],
        )
    }

    /// Whether tree `t`'s root is one another table's schema row also names, and its
    /// records are in that table's indexes while its own table's do not hold them: not its
    /// table's.
    fn refuted(&self, t: usize) -> bool {
        let Tree {
            named_by: Some(i),
            root,
            ..
        } = self.trees[t]
        else {
            return false;
        };
        let weigh = |j: usize| self.weigh(j, root);
        let rivals: Vec<usize> = self
            .trees
            .iter()
            .filter_map(|tree| tree.named_by.filter(|j| tree.root == root && *j != i))
            .collect();
        !rivals.is_empty()
            && !self.named[i].indexes.is_empty()
            && weigh(i).refutes()
            && rivals.iter().any(|&j| !weigh(j).refutes())
    }

    /// How the tree at `root` bears out table `j`'s claim to it: its records against the
    /// table's columns, its rows looked up in the table's indexes.
    fn weigh(&self, j: usize, root: PageNo) -> crate::claims::ClaimEvidence {
        let claimant = Claimant {
            root,
            shape: &self.named[j].shape,
            indexes: &self.named[j].indexes,
        };
        weigh_claim(self.db, &claimant, root, pager::KeyBounds::default())
    }

    /// Trees whose records fit their own table and another as well, where the other
    /// table's indexes hold their rows and their own table's do not: a root page swapped
    /// between two tables of one shape, which the records cannot tell apart and the index
    /// entries can. Each goes to the one table whose indexes hold it; with no index, or
    /// more than one table's holding it, nothing moves.
    fn witnessed_moves(&mut self) {
        for t in 0..self.trees.len() {
            let Some(i) = self.trees[t].named_by else {
                continue;
            };
            let root = self.trees[t].root;
            if self.trees[t].sample.is_empty()
                || !self.fits[t][i].fits()
                || self.named[i].indexes.is_empty()
            {
                continue;
            }
            let twins: Vec<usize> = (0..self.named.len())
                .filter(|&j| j != i && self.holder[j].is_none() && self.fits[t][j].fits())
                .filter(|&j| !self.named[j].indexes.is_empty())
                .collect();
            if twins.is_empty() {
                continue;
            }
            let own = self.weigh(i, root);
            if !own.refutes() {
                continue;
            }
            let holding: Vec<(usize, (u32, u32))> = twins
                .into_iter()
                .filter_map(|j| {
                    let e = self.weigh(j, root);
                    Some((j, e.by_value.filter(|_| e.witnessed())?))
                })
                .collect();
            if let [(j, (looked_up, held))] = holding.as_slice() {
                let held_named = own.witnessed.map_or(0, |(_, h)| h);
                self.holder[*j] = Some(t);
                self.fills[t] = Some(*j);
                self.by_index[t] = Some([*looked_up, *held, held_named]);
            }
        }
    }

    /// Each tree fills the table whose schema row names it, when its records fit that table
    /// (or it has none) and the table's indexes do not refute it; not a tree the indexes
    /// gave another table, nor a table they gave another tree.
    fn keep_own(&mut self) {
        for t in 0..self.trees.len() {
            let tree = &self.trees[t];
            if self.fills[t].is_some() {
                continue;
            }
            let own = tree
                .named_by
                .filter(|&i| self.holder[i].is_none())
                .filter(|_| (tree.sample.is_empty() || self.own(t).fits()) && !self.refuted(t));
            if let Some(i) = own {
                self.holder[i] = Some(t);
                self.fills[t] = Some(i);
            }
        }
    }

    /// Moves, best first, until none is left: a tree to a table it fits, that no tree
    /// fitting it holds, when its own table does not fit it or fits it clearly worse.
    fn make_moves(&mut self) {
        let mut budget = self.trees.len() * self.named.len() + 1;
        loop {
            budget = budget.saturating_sub(1);
            let Some((t, j)) = self.best_move().filter(|_| budget > 0) else {
                break;
            };
            if let Some(from) = self.fills[t] {
                self.holder[from] = None;
            }
            if let Some(h) = self.holder[j] {
                self.fills[h] = None;
            }
            self.holder[j] = Some(t);
            self.fills[t] = Some(j);
        }
    }

    /// The best move left: tree `t` to table `j`, where its records fit best per record.
    fn best_move(&self) -> Option<(usize, usize)> {
        let mut best: Option<(usize, usize, f64)> = None;
        for (t, tree) in self.trees.iter().enumerate() {
            if tree.sample.is_empty() {
                continue;
            }
            for (j, f) in self.fits[t].iter().enumerate() {
                let better =
                    !self.own(t).fits() || f.per_record() >= self.own(t).per_record() + 1.0;
                if Some(j) == tree.named_by
                    || self.fills[t] == Some(j)
                    || !f.fits()
                    || !self.free(j, t)
                    || !better
                {
                    continue;
                }
                if best.is_none_or(|(_, _, p)| f.per_record() > p) {
                    best = Some((t, j, f.per_record()));
                }
            }
        }
        best.map(|(t, j, _)| (t, j))
    }

    /// Whether table `j` is free for tree `t`: no tree holds it, or its tree's records are
    /// there and do not fit it (an empty table is not free: nothing says its tree is not
    /// its own).
    fn free(&self, j: usize, t: usize) -> bool {
        self.holder[j]
            .is_none_or(|h| h != t && !self.trees[h].sample.is_empty() && !self.fits[h][j].fits())
    }

    /// The table filled from `root`, to tell a root two schema rows name.
    fn filled_from(&self, root: PageNo) -> Option<TableId> {
        self.trees
            .iter()
            .zip(&self.fills)
            .find_map(|(tree, f)| {
                f.filter(|_| tree.root == root)
                    .and_then(|j| self.named.get(j))
            })
            .map(|n| n.table)
    }

    /// Where each tree goes.
    fn decisions(self) -> Vec<RootDecision> {
        let filled_roots: Vec<Option<TableId>> = self
            .trees
            .iter()
            .map(|tree| self.filled_from(tree.root))
            .collect();
        let owns: Vec<Fit> = (0..self.trees.len()).map(|t| self.own(t)).collect();
        let Assignment {
            named,
            trees,
            fits,
            fills,
            by_index,
            ..
        } = self;
        trees
            .into_iter()
            .enumerate()
            .filter_map(|(t, tree)| {
                let Tree {
                    named_by: i,
                    root,
                    sample: s,
                } = tree;
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
                        own: owns[t],
                        by_index: by_index[t],
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
                        own: owns[t],
                        sample: s,
                    },
                })
            })
            .collect()
    }
}
