//! Which table an orphan group belongs to: ancestry (a surviving pointer), then key range
//! (a range a table can no longer reach), then shape alone; with the evidence that decided
//! and how sure it is.

use pager::{Database, PageNo, Value};

use super::groups::{sample_records, OrphanGroup};
use super::lost::DamagedTree;
use super::TableTarget;

/// Why a group was given to a table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Evidence {
    /// A surviving interior page of the table points to the group's top page.
    ChildPointer {
        /// The interior page.
        parent: PageNo,
    },
    /// The group's rowids lie in the range a surviving interior page assigned to a child
    /// it can no longer reach.
    RowidRange {
        /// The interior page.
        parent: PageNo,
        /// Exclusive lower bound.
        lower: Option<i64>,
        /// Inclusive upper bound.
        upper: Option<i64>,
    },
    /// No table of the schema fits the group's records: its own table, whose CREATE
    /// statement is lost, is inferred from them.
    LostSchema {
        /// Records sampled.
        sampled: u32,
    },
    /// An index whose schema row survives names the table: its entries' rowids are the
    /// group's table's rows.
    NamedByIndex {
        /// The index.
        index: String,
        /// Its entries read.
        entries: u64,
        /// Of those, entries naming a row of the table.
        matched: u64,
    },
    /// The table's own indexes hold the group's rows (their key values and rowids), and
    /// no other candidate's do.
    IndexEntries {
        /// Rows looked up in the table's indexes.
        looked_up: u32,
        /// Of those, rows an index holds.
        held: u32,
    },
    /// The table's records fit a CREATE statement the application is known to write
    /// (a profile's schema), clearly better than any other known table's.
    KnownSchema {
        /// Where the statement is known from: "profile NAME".
        origin: String,
        /// Records sampled.
        sampled: u32,
        /// Of those, records that fit it.
        fitting: u32,
        /// The next best known table and how many sampled records fit it.
        runner_up: Option<(String, u32)>,
        /// Orphan index trees traced to the table, each keyed as one of the known
        /// table's indexes is.
        indexes: u32,
        /// Those trees are all its indexes (on columns), and not all the next best's.
        keyed_exactly: bool,
    },
    /// The sampled records fit the table's declared columns and no other table's as well.
    Shape {
        /// Records sampled.
        sampled: u32,
        /// Of those, records that fit this table.
        fitting: u32,
        /// The next best table and how many sampled records fit it.
        runner_up: Option<(String, u32)>,
    },
}

/// How sure an attribution is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Confidence {
    /// Only the shape decided, against close alternatives.
    Low,
    /// One kind of evidence, unopposed.
    Medium,
    /// Structure (a pointer or a key range) and shape agree.
    High,
}

impl Confidence {
    /// Lower-case name for reports.
    pub fn name(self) -> &'static str {
        match self {
            Confidence::Low => "low",
            Confidence::Medium => "medium",
            Confidence::High => "high",
        }
    }
}

/// An orphan group given to a table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Attribution {
    /// The group.
    pub group: OrphanGroup,
    /// What decided it.
    pub evidence: Vec<Evidence>,
    /// How sure.
    pub confidence: Confidence,
}

/// What the evidence says about a group.
pub(super) enum Outcome {
    /// Given to the table at this index.
    Decided(usize, Vec<Evidence>, Confidence),
    /// More than one table fits and nothing tells them apart: the tables that fit (by
    /// index into the targets), none when no record fits any table well enough.
    Ambiguous(Vec<usize>),
    /// No known table's columns fit the sampled records (which are returned).
    NoTableFits(Vec<Vec<Value>>),
    /// Only tables whose b-trees lost nothing fit: stale or deleted content.
    Stale,
}

/// How the sampled records of a group fit each candidate table.
struct Fits<'t> {
    /// (target index, records that fit, fit score), best first.
    fits: Vec<(usize, u32, u64)>,
    sampled: u32,
    targets: &'t [TableTarget],
}

impl<'t> Fits<'t> {
    fn new(sample: &[Vec<Value>], targets: &'t [TableTarget], candidates: &[usize]) -> Fits<'t> {
        let mut fits: Vec<(usize, u32, u64)> = candidates
            .iter()
            .filter_map(|&i| {
                let shape = &targets.get(i)?.shape;
                let mut n = 0u32;
                let mut score = 0u64;
                for r in sample {
                    if let Some(s) = shape.fit(r) {
                        n += 1;
                        score += u64::from(s);
                    }
                }
                Some((i, n, score))
            })
            .collect();
        fits.sort_by(|a, b| b.1.cmp(&a.1).then(b.2.cmp(&a.2)));
        Fits {
            fits,
            sampled: sample.len() as u32,
            targets,
        }
    }

    /// Whether `n` fitting records make a fit: all, allowing one damaged record in twenty.
    fn fitting(&self, n: u32) -> bool {
        self.sampled > 0 && n * 20 >= self.sampled * 19
    }

    /// Whether the sample fits table `i` (or there is no sample to say otherwise).
    fn ok(&self, i: usize) -> bool {
        self.sampled == 0
            || self
                .fits
                .iter()
                .any(|(j, n, _)| *j == i && self.fitting(*n))
    }

    /// The shape evidence for table `i`, with the next best table.
    fn evidence(&self, i: usize) -> Evidence {
        let fitting = self
            .fits
            .iter()
            .find(|(j, _, _)| *j == i)
            .map_or(0, |f| f.1);
        let runner_up = self
            .fits
            .iter()
            .find(|(j, _, _)| *j != i)
            .and_then(|(j, n, _)| self.targets.get(*j).map(|t| (t.shape.name.clone(), *n)));
        Evidence::Shape {
            sampled: self.sampled,
            fitting,
            runner_up,
        }
    }
}

pub(super) fn attribute(
    db: &Database<'_>,
    (targets, trees): (&[TableTarget], &[DamagedTree<'_>]),
    candidates: &[usize],
    group: &OrphanGroup,
) -> Outcome {
    let tree_of = |i: usize| tree_of(targets, trees, i);
    let sample = sample_records(db, group);
    let fits = Fits::new(&sample, targets, candidates);
    // Index entries: each entry is a second copy of its row's keyed values and rowid, on
    // pages of the table's own. Rows one table's indexes hold are its rows, whatever a
    // pointer or a key range says (either can be edited to lead elsewhere).
    if let Some((i, evidence)) = held_by_index(db, targets, candidates, group, &fits) {
        return Outcome::Decided(i, vec![evidence, fits.evidence(i)], Confidence::High);
    }
    // Ancestry: a surviving interior page of a table points straight at the group.
    for &i in candidates {
        let pointer = tree_of(i).and_then(|t| t.lost.pointing_at(group.top.get()));
        if let Some(l) = pointer.filter(|_| fits.ok(i)) {
            let evidence = vec![
                Evidence::ChildPointer { parent: l.parent },
                fits.evidence(i),
            ];
            return Outcome::Decided(i, evidence, Confidence::High);
        }
    }
    // Key range: the group's rowids sit inside a range a table can no longer reach.
    if let Some((lo, hi)) = group.rowids {
        let in_range: Vec<(usize, Evidence)> = candidates
            .iter()
            .filter(|&&i| fits.ok(i))
            .filter_map(|&i| {
                let l = tree_of(i)?.lost.covering(lo, hi, true)?;
                let range = Evidence::RowidRange {
                    parent: l.parent,
                    lower: l.bounds.lower,
                    upper: l.bounds.upper,
                };
                Some((i, range))
            })
            .collect();
        if let [(i, ev)] = in_range.as_slice() {
            let shape_unique = fits
                .fits
                .iter()
                .filter(|(_, n, _)| fits.fitting(*n))
                .count()
                == 1;
            let confidence = if fits.sampled > 0 && shape_unique {
                Confidence::High
            } else {
                Confidence::Medium
            };
            return Outcome::Decided(*i, vec![ev.clone(), fits.evidence(*i)], confidence);
        }
    }
    by_shape((targets, trees), &fits, group, sample)
}

/// The surveyed tree of target `i`, by its root page.
fn tree_of<'t, 's>(
    targets: &[TableTarget],
    trees: &'t [DamagedTree<'s>],
    i: usize,
) -> Option<&'t DamagedTree<'s>> {
    let root = targets.get(i).and_then(|t| t.root)?;
    trees.iter().find(|t| t.tree.root == root)
}

/// The one candidate whose indexes hold the group's rows (nine in ten of at least four
/// looked up), with the evidence; `None` when no candidate's do, or more than one's.
fn held_by_index(
    db: &Database<'_>,
    targets: &[TableTarget],
    candidates: &[usize],
    group: &OrphanGroup,
    fits: &Fits<'_>,
) -> Option<(usize, Evidence)> {
    let held: Vec<(usize, (u32, u32))> = candidates
        .iter()
        .filter(|&&i| fits.ok(i))
        .filter_map(|&i| {
            let t = targets.get(i).filter(|t| !t.indexes.is_empty())?;
            let claimant = crate::claims::Claimant {
                root: t.root.unwrap_or(group.top),
                shape: &t.shape,
                indexes: &t.indexes,
            };
            let weighed =
                crate::claims::weigh_claim(db, &claimant, group.top, pager::KeyBounds::default());
            Some((i, weighed.by_value?)).filter(|_| weighed.witnessed())
        })
        .collect();
    match held.as_slice() {
        [(i, (looked_up, held))] => Some((
            *i,
            Evidence::IndexEntries {
                looked_up: *looked_up,
                held: *held,
            },
        )),
        _ => None,
    }
}

/// Shape alone. A b-tree that lost nothing has no orphans: records that fit only intact
/// tables are stale copies (freed pages whose freelist is lost) or rows of a dropped table,
/// not rows to put back. So too a group whose rowids lie where the table's surviving tree
/// still reaches: the keys a lost child covered are the only ones a lost page can hold
/// (unless the tree's keys cannot be trusted, or its root is gone).
fn by_shape(
    (targets, trees): (&[TableTarget], &[DamagedTree<'_>]),
    fits: &Fits<'_>,
    group: &OrphanGroup,
    sample: Vec<Vec<Value>>,
) -> Outcome {
    let damaged = |i: usize| {
        let Some(t) = tree_of(targets, trees, i) else {
            return true;
        };
        let covered = |(lo, hi): (i64, i64)| t.lost.covering(lo, hi, false).is_some();
        t.tree.pages == 0
            || t.cells_disguised
            || (!t.tree.lost.is_empty() && group.rowids.is_none_or(covered))
    };
    let any_fit = fits.fits.iter().any(|(_, n, _)| fits.fitting(*n));
    let fitting_tables: Vec<&(usize, u32, u64)> = fits
        .fits
        .iter()
        .filter(|(i, n, _)| fits.fitting(*n) && damaged(*i))
        .collect();
    if any_fit && fitting_tables.is_empty() {
        return Outcome::Stale;
    }
    match fitting_tables.as_slice() {
        // Not one sampled record fits any table: a table whose schema row is lost.
        [] if !any_fit && fits.fits.iter().all(|(_, n, _)| *n == 0) => Outcome::NoTableFits(sample),
        [] => Outcome::Ambiguous(Vec::new()),
        [(i, _, _)] => Outcome::Decided(*i, vec![fits.evidence(*i)], Confidence::Medium),
        [(i, n1, s1), (_, n2, s2), ..] => {
            // Two tables fit: only a clearly better fit per record decides.
            let per = |s: u64, n: u32| s as f64 / f64::from(n.max(1));
            if per(*s1, *n1) >= per(*s2, *n2) + 1.0 {
                Outcome::Decided(*i, vec![fits.evidence(*i)], Confidence::Low)
            } else {
                Outcome::Ambiguous(fitting_tables.iter().map(|(i, _, _)| *i).collect())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{a_schema, a_shape, leaf_group, p, plan_of};
    use super::*;
    use crate::shape::TableShape;
    use crate::testing::{
        file, interior, leaf, named_row, schema_row, shape, target, three_ints, zeroed,
    };

    /// `a`'s twin: the same columns under another name.
    fn b_shape() -> TableShape {
        shape("b", &[("id", "INTEGER PRIMARY KEY"), ("name", "TEXT")])
    }

    /// A table of two integers, never NULL: no record of `a` fits it.
    fn c_shape() -> TableShape {
        shape("c", &[("n", "INTEGER NOT NULL"), ("m", "INTEGER NOT NULL")])
    }

    /// `a`'s root 2 lost its left child (page 3, zeroed), which held the rowids up to 10;
    /// its right-most leaf 4 holds rows 11 and 12. Page 5 is an orphan leaf of rows 3
    /// and 4.
    fn lost_left_child() -> Vec<u8> {
        file(
            &[&a_schema()],
            &[
                interior(&[(3, 10)], 4),
                zeroed(),
                leaf(&[&named_row(11, b'k'), &named_row(12, b'l')]),
                leaf(&[&named_row(3, b'c'), &named_row(4, b'd')]),
            ],
        )
    }

    #[test]
    fn orphan_in_the_key_range_of_a_lost_child_goes_to_its_table() {
        let plan = plan_of(
            &lost_left_child(),
            &[target(a_shape(), 2), target(c_shape(), 0)],
        );
        assert_eq!(
            plan.attributed[0],
            vec![Attribution {
                group: leaf_group(5, 2, (3, 4)),
                evidence: vec![
                    Evidence::RowidRange {
                        parent: p(2),
                        lower: None,
                        upper: Some(10),
                    },
                    Evidence::Shape {
                        sampled: 2,
                        fitting: 2,
                        runner_up: Some(("c".into(), 0)),
                    },
                ],
                // Structure and shape agree, and no other table's shape fits.
                confidence: Confidence::High,
            }]
        );
        assert_eq!(plan.attributed[1], vec![]);
        assert_eq!(plan.lost_and_found, vec![]);
    }

    #[test]
    fn key_range_with_another_table_of_the_same_shape_is_medium() {
        let plan = plan_of(
            &lost_left_child(),
            &[target(a_shape(), 2), target(b_shape(), 0)],
        );
        let given = &plan.attributed[0];
        assert_eq!(given.len(), 1);
        assert_eq!(given[0].confidence, Confidence::Medium);
        assert!(matches!(given[0].evidence[0], Evidence::RowidRange { .. }));
    }

    /// a's root page 2 overwritten by an index interior page whose right-most pointer
    /// leads to page 3, a table leaf of rows 1 and 2: the walk cannot follow a table page
    /// from an index page, and page 3 is an orphan the pointer names.
    fn index_root_over_table_leaf() -> Vec<u8> {
        #[rustfmt::skip]
        let index_root = {
            let mut page = zeroed();
            page[..12].copy_from_slice(&[
                0x02,       // page type: index b-tree interior
                0x00, 0x00, // first freeblock: none
                0x00, 0x00, // cell count: 0
                0x02, 0x00, // cell content area: 512
                0x00,       // fragmented free bytes
                0x00, 0x00, 0x00, 0x03, // right-most pointer: page 3
            ]);
            page
        };
        file(
            &[&a_schema()],
            &[
                index_root,
                leaf(&[&named_row(1, b'a'), &named_row(2, b'b')]),
            ],
        )
    }

    #[test]
    fn orphan_its_tables_interior_page_points_at_goes_to_that_table() {
        let plan = plan_of(&index_root_over_table_leaf(), &[target(a_shape(), 2)]);
        assert_eq!(plan.attributed[0].len(), 1);
        let given = &plan.attributed[0][0];
        assert_eq!(given.group, leaf_group(3, 2, (1, 2)));
        assert_eq!(
            given.evidence,
            vec![
                Evidence::ChildPointer { parent: p(2) },
                Evidence::Shape {
                    sampled: 2,
                    fitting: 2,
                    runner_up: None,
                },
            ]
        );
        assert_eq!(given.confidence, Confidence::High);
    }

    #[test]
    fn pointer_to_the_orphan_is_no_evidence_for_a_table_its_records_do_not_fit() {
        let plan = plan_of(&index_root_over_table_leaf(), &[target(c_shape(), 2)]);
        assert_eq!(plan.attributed, vec![vec![]]);
        assert_eq!(plan.lost_and_found, vec![leaf_group(3, 2, (1, 2))]);
    }

    /// Root pages 2 and 3 zeroed (no tree of theirs survives), orphan leaf 4 of rows
    /// 1 and 2 shaped like `a`.
    fn roots_lost() -> Vec<u8> {
        file(
            &[
                &a_schema(),
                &schema_row(2, "b", 3, "CREATE TABLE b(id INTEGER PRIMARY KEY, name)"),
            ],
            &[
                zeroed(),
                zeroed(),
                leaf(&[&named_row(1, b'a'), &named_row(2, b'b')]),
            ],
        )
    }

    #[test]
    fn shape_alone_gives_the_orphan_to_the_one_damaged_table_it_fits() {
        let plan = plan_of(&roots_lost(), &[target(a_shape(), 2), target(c_shape(), 3)]);
        assert_eq!(
            plan.attributed[0],
            vec![Attribution {
                group: leaf_group(4, 2, (1, 2)),
                evidence: vec![Evidence::Shape {
                    sampled: 2,
                    fitting: 2,
                    runner_up: Some(("c".into(), 0)),
                }],
                confidence: Confidence::Medium,
            }]
        );
    }

    #[test]
    fn records_fit_a_table_when_at_most_one_in_twenty_does_not() {
        // a's root page 2 is zeroed; orphan leaf 3 holds `good` rows shaped like a's and
        // one of three integers.
        let orphan = |good: u8| {
            let rows: Vec<[u8; 6]> = (1..=good).map(|r| named_row(r, b'n')).collect();
            let odd = three_ints(good + 1, 9);
            let mut cells: Vec<&[u8]> = rows.iter().map(|r| r.as_slice()).collect();
            cells.push(&odd);
            file(&[&a_schema()], &[zeroed(), leaf(&cells)])
        };
        let plan = plan_of(&orphan(19), &[target(a_shape(), 2)]);
        assert_eq!(plan.attributed[0].len(), 1);
        assert_eq!(
            plan.attributed[0][0].evidence,
            vec![Evidence::Shape {
                sampled: 20,
                fitting: 19,
                runner_up: None,
            }]
        );
        let plan = plan_of(&orphan(1), &[target(a_shape(), 2)]);
        assert_eq!(plan.attributed, vec![vec![]]);
        assert_eq!(plan.lost_and_found, vec![leaf_group(3, 2, (1, 2))]);
    }

    #[test]
    fn clearly_better_fit_of_two_decides_with_low_confidence() {
        // `b`'s name has no declared type: text fits it, but less well than a TEXT column.
        let b_untyped = shape("b", &[("id", "INTEGER PRIMARY KEY"), ("name", "")]);
        let plan = plan_of(&roots_lost(), &[target(a_shape(), 2), target(b_untyped, 3)]);
        assert_eq!(plan.attributed[0].len(), 1);
        assert_eq!(plan.attributed[0][0].confidence, Confidence::Low);
        assert_eq!(
            plan.attributed[0][0].evidence,
            vec![Evidence::Shape {
                sampled: 2,
                fitting: 2,
                runner_up: Some(("b".into(), 2)),
            }]
        );
        assert_eq!(plan.attributed[1], vec![]);
    }

    #[test]
    fn orphan_two_damaged_tables_fit_alike_goes_to_lost_and_found() {
        let plan = plan_of(&roots_lost(), &[target(a_shape(), 2), target(b_shape(), 3)]);
        assert_eq!(plan.attributed, vec![vec![], vec![]]);
        assert_eq!(plan.lost_and_found, vec![leaf_group(4, 2, (1, 2))]);
        // Both candidates are named; neither is chosen.
        assert_eq!(plan.candidates, vec![(p(4), vec![0, 1])]);
    }

    #[test]
    fn orphan_that_fits_only_an_intact_table_is_stale() {
        // a's tree lost nothing: records shaped like its rows elsewhere are stale copies
        // or a dropped table's rows, not rows to put back.
        let bytes = file(
            &[&a_schema()],
            &[leaf(&[&named_row(1, b'a')]), leaf(&[&named_row(7, b'g')])],
        );
        let plan = plan_of(&bytes, &[target(a_shape(), 2)]);
        assert_eq!(plan.attributed, vec![vec![]]);
        assert_eq!(plan.lost_and_found, vec![leaf_group(3, 1, (7, 7))]);
    }

    #[test]
    fn orphan_outside_every_lost_key_range_is_stale() {
        // a lost the keys up to 10; rows 20 and 21 lie where its surviving tree reaches.
        let bytes = file(
            &[&a_schema()],
            &[
                interior(&[(3, 10)], 4),
                zeroed(),
                leaf(&[&named_row(11, b'k'), &named_row(30, b'l')]),
                leaf(&[&named_row(20, b't'), &named_row(21, b'u')]),
            ],
        );
        let plan = plan_of(&bytes, &[target(a_shape(), 2)]);
        assert_eq!(plan.attributed, vec![vec![]]);
        assert_eq!(plan.lost_and_found, vec![leaf_group(5, 2, (20, 21))]);
    }

    #[test]
    fn confidences_are_ordered_and_named_for_reports() {
        assert!(Confidence::Low < Confidence::Medium && Confidence::Medium < Confidence::High);
        let names: Vec<&str> = [Confidence::Low, Confidence::Medium, Confidence::High]
            .iter()
            .map(|c| c.name())
            .collect();
        assert_eq!(names, ["low", "medium", "high"]);
    }
}
