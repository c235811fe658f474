//! Assigning orphan pages to tables.
//!
//! An orphan is a b-tree page that no tree of the schema reaches: its parent interior page
//! is zeroed or overwritten, or a pointer to it is damaged. Orphans are grouped into
//! subtrees (an orphan interior page and the orphans below it), and each group is
//! attributed to the table it belongs to from the evidence the file still holds:
//!
//! - ancestry: a surviving interior page of a table points to the group's top page;
//! - key range: the rowids of the group lie inside the range that a surviving interior
//!   page assigned to a child it can no longer reach;
//! - shape: the records' column count and storage classes against each table's declared
//!   columns and affinities.
//!
//! A group no evidence settles goes to `lost_and_found`. Every attribution keeps its
//! evidence and a confidence for the report.

use std::collections::BTreeSet;

use pager::{
    decode_cell, BtreeWalk, Database, PageClass, PageNo, PageSet, Survey, TreeItem, Value,
};

use crate::shape::TableShape;

/// Records decoded per group to judge its shape.
const SHAPE_SAMPLE: usize = 64;

/// A table the salvage will fill: its shape and, when it has one, its root page.
#[derive(Clone, Debug)]
pub struct TableTarget {
    /// The shape from the CREATE statement.
    pub shape: TableShape,
    /// Root page from `sqlite_schema`.
    pub root: Option<PageNo>,
}

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

/// Where every orphan group goes.
#[derive(Clone, Debug, Default)]
pub struct Plan {
    /// For each target table (same order as given), the orphan groups attributed to it.
    pub attributed: Vec<Vec<Attribution>>,
    /// Table-page groups no evidence settles: their rows go to `lost_and_found`.
    pub lost_and_found: Vec<OrphanGroup>,
    /// Index-page groups of ordinary indexes: index data, rebuilt from the tables.
    pub index_groups: Vec<OrphanGroup>,
    /// Tables whose CREATE statement is lost, inferred from orphan groups whose records no
    /// known table's columns fit: groups of one record shape whose rowid ranges do not
    /// overlap (the pieces of one tree) make one table; overlapping ones make more.
    pub inferred: Vec<InferredTable>,
}

/// A table known only from its records: its schema row is lost.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InferredTable {
    /// Storage class seen most in each column, in record order: "integer", "real",
    /// "text", "blob", or "null" when only NULL was seen.
    pub columns: Vec<&'static str>,
    /// The orphan groups holding its rows.
    pub groups: Vec<OrphanGroup>,
    /// Records sampled to infer it.
    pub sampled: u32,
}

/// The storage class a record shape is keyed by.
fn class_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Integer(_) => "integer",
        Value::Real(_) => "real",
        Value::Text(_) => "text",
        Value::Blob(_) => "blob",
    }
}

/// The shape of a sample: per column, the storage class seen most (NULL only when
/// nothing else was seen).
pub fn sample_shape(sample: &[Vec<Value>]) -> Vec<&'static str> {
    let width = sample.iter().map(Vec::len).max().unwrap_or(0);
    (0..width)
        .map(|i| {
            let mut counts: std::collections::BTreeMap<&'static str, u32> =
                std::collections::BTreeMap::new();
            for r in sample {
                if let Some(v) = r.get(i).filter(|v| **v != Value::Null) {
                    *counts.entry(class_of(v)).or_default() += 1;
                }
            }
            counts
                .into_iter()
                .max_by_key(|(_, n)| *n)
                .map_or("null", |(c, _)| c)
        })
        .collect()
}

/// Groups the orphan pages of `survey` and attributes each group.
pub fn plan(db: &Database<'_>, survey: &Survey, targets: &[TableTarget]) -> Plan {
    let groups = orphan_groups(db, survey);
    // A table can lose its CREATE statement only when the schema itself is damaged; with
    // an intact schema, records no table fits belong to a dropped table.
    let schema_damaged = !survey.schema.findings.is_empty();
    let mut out = Plan {
        attributed: vec![Vec::new(); targets.len()],
        ..Plan::default()
    };
    for group in groups {
        let candidates: Vec<usize> = (0..targets.len())
            .filter(|&i| {
                targets
                    .get(i)
                    .is_some_and(|t| t.shape.without_rowid != group.table_pages)
            })
            .collect();
        match attribute(db, survey, targets, &candidates, &group) {
            Outcome::NoTableFits(sample)
                if group.table_pages && !sample.is_empty() && schema_damaged =>
            {
                let columns = sample_shape(&sample);
                // Groups of one lost tree split the key space between them; two groups
                // holding a rowid range in common are two tables, however alike.
                let overlaps = |g: &OrphanGroup| match (g.rowids, group.rowids) {
                    (Some((lo, hi)), Some((a, b))) => lo <= b && a <= hi,
                    _ => false,
                };
                let joins =
                    |t: &InferredTable| t.columns == columns && !t.groups.iter().any(overlaps);
                match out.inferred.iter_mut().find(|t| joins(t)) {
                    Some(t) => {
                        t.sampled += sample.len() as u32;
                        t.groups.push(group);
                    }
                    None => out.inferred.push(InferredTable {
                        columns,
                        groups: vec![group],
                        sampled: sample.len() as u32,
                    }),
                }
            }
            Outcome::Decided(i, evidence, confidence) => {
                if let Some(slot) = out.attributed.get_mut(i) {
                    slot.push(Attribution {
                        group,
                        evidence,
                        confidence,
                    });
                }
            }
            _ if group.table_pages => out.lost_and_found.push(group),
            _ => out.index_groups.push(group),
        }
    }
    out
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

/// Decodes up to [`SHAPE_SAMPLE`] records of a group, spread over it.
fn sample_records(db: &Database<'_>, group: &OrphanGroup) -> Vec<Vec<Value>> {
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
        .map(|r| r.values)
        .collect()
}

/// What the evidence says about a group.
enum Outcome {
    /// Given to the table at this index.
    Decided(usize, Vec<Evidence>, Confidence),
    /// More than one table fits and nothing tells them apart.
    Ambiguous,
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

fn attribute(
    db: &Database<'_>,
    survey: &Survey,
    targets: &[TableTarget],
    candidates: &[usize],
    group: &OrphanGroup,
) -> Outcome {
    let tree_of = |i: usize| {
        let root = targets.get(i).and_then(|t| t.root)?;
        survey.trees.iter().find(|t| t.root == root)
    };
    let sample = sample_records(db, group);
    let fits = Fits::new(&sample, targets, candidates);
    // Ancestry: a surviving interior page of a table points straight at the group.
    for &i in candidates {
        let pointer =
            tree_of(i).and_then(|tree| tree.lost.iter().find(|l| l.child == group.top.get()));
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
                let l = tree_of(i)?.lost.iter().find(|l| {
                    (l.bounds.lower.is_some() || l.bounds.upper.is_some())
                        && l.bounds.contains(lo)
                        && l.bounds.contains(hi)
                })?;
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
    by_shape(survey, targets, &fits, group, sample)
}

/// Shape alone. A b-tree that lost nothing has no orphans: records that fit only intact
/// tables are stale copies (freed pages whose freelist is lost) or rows of a dropped table,
/// not rows to put back. So too a group whose rowids lie where the table's surviving tree
/// still reaches: the keys a lost child covered are the only ones a lost page can hold
/// (unless the tree's keys cannot be trusted, or its root is gone).
fn by_shape(
    survey: &Survey,
    targets: &[TableTarget],
    fits: &Fits<'_>,
    group: &OrphanGroup,
    sample: Vec<Vec<Value>>,
) -> Outcome {
    let damaged = |i: usize| {
        let root = targets.get(i).and_then(|t| t.root);
        let Some(tree) = root.and_then(|r| survey.trees.iter().find(|t| t.root == r)) else {
            return true;
        };
        let covered = |(lo, hi): (i64, i64)| {
            tree.lost
                .iter()
                .any(|l| l.bounds.contains(lo) && l.bounds.contains(hi))
        };
        tree.pages == 0
            || tree.findings.iter().any(crate::bounds::disguises_cells)
            || (!tree.lost.is_empty() && group.rowids.is_none_or(covered))
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
        [] => Outcome::Ambiguous,
        [(i, _, _)] => Outcome::Decided(*i, vec![fits.evidence(*i)], Confidence::Medium),
        [(i, n1, s1), (_, n2, s2), ..] => {
            // Two tables fit: only a clearly better fit per record decides.
            let per = |s: u64, n: u32| s as f64 / f64::from(n.max(1));
            if per(*s1, *n1) >= per(*s2, *n2) + 1.0 {
                Outcome::Decided(*i, vec![fits.evidence(*i)], Confidence::Low)
            } else {
                Outcome::Ambiguous
            }
        }
    }
}

#[cfg(test)]
mod tests {
    //! Files of 512-byte pages (see [`crate::testing`]) whose orphan pages the plan
    //! attributes. Table `a(id INTEGER PRIMARY KEY, name TEXT)` is rooted at page 2 in
    //! every one.

    use pager::survey;

    use super::*;
    use crate::testing::{
        file, index_leaf, interior, leaf, named_row, schema_row, shape, target, three_ints, zeroed,
    };

    const A_SQL: &str = "CREATE TABLE a(id INTEGER PRIMARY KEY, name TEXT)";

    fn p(n: u32) -> PageNo {
        PageNo::new(n).unwrap()
    }

    fn a_shape() -> TableShape {
        shape("a", &[("id", "INTEGER PRIMARY KEY"), ("name", "TEXT")])
    }

    /// `a`'s twin: the same columns under another name.
    fn b_shape() -> TableShape {
        shape("b", &[("id", "INTEGER PRIMARY KEY"), ("name", "TEXT")])
    }

    /// A table of two integers, never NULL: no record of `a` fits it.
    fn c_shape() -> TableShape {
        shape("c", &[("n", "INTEGER NOT NULL"), ("m", "INTEGER NOT NULL")])
    }

    fn a_schema() -> Vec<u8> {
        schema_row(1, "a", 2, A_SQL)
    }

    fn plan_of(bytes: &[u8], targets: &[TableTarget]) -> Plan {
        let db = Database::open(bytes).unwrap();
        plan(&db, &survey(&db), targets)
    }

    /// The group of orphan leaf `top` holding rows `lo..=hi` (and nothing else).
    fn leaf_group(top: u32, cells: u64, rowids: (i64, i64)) -> OrphanGroup {
        OrphanGroup {
            top: p(top),
            pages: vec![p(top)],
            table_pages: true,
            cells,
            rowids: Some(rowids),
        }
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
    fn records_no_table_fits_go_to_lost_and_found_while_the_schema_is_intact() {
        let bytes = file(
            &[&a_schema()],
            &[zeroed(), leaf(&[&three_ints(1, 5), &three_ints(2, 6)])],
        );
        let plan = plan_of(&bytes, &[target(a_shape(), 2)]);
        assert_eq!(plan.inferred, vec![]);
        assert_eq!(plan.lost_and_found, vec![leaf_group(3, 2, (1, 2))]);
    }

    /// A damaged schema (a row naming root page 99 of a 5-page file) and orphan leaves
    /// 3, 4 and 5 of three integers, holding rowids 1-2, 3-4 and 2-3.
    fn lost_schema() -> Vec<u8> {
        file(
            &[&a_schema(), &schema_row(2, "z", 99, "CREATE TABLE z(v)")],
            &[
                zeroed(),
                leaf(&[&three_ints(1, 5), &three_ints(2, 6)]),
                leaf(&[&three_ints(3, 7), &three_ints(4, 8)]),
                leaf(&[&three_ints(2, 9), &three_ints(3, 9)]),
            ],
        )
    }

    #[test]
    fn records_no_table_fits_are_an_inferred_table_when_the_schema_is_damaged() {
        let plan = plan_of(&lost_schema(), &[target(a_shape(), 2)]);
        assert_eq!(plan.lost_and_found, vec![]);
        // Leaves 3 and 4 split the key space: one tree. Leaf 5 holds rowids both hold:
        // another table, however alike.
        assert_eq!(
            plan.inferred,
            vec![
                InferredTable {
                    columns: vec!["integer", "integer", "integer"],
                    groups: vec![leaf_group(3, 2, (1, 2)), leaf_group(4, 2, (3, 4))],
                    sampled: 4,
                },
                InferredTable {
                    columns: vec!["integer", "integer", "integer"],
                    groups: vec![leaf_group(5, 2, (2, 3))],
                    sampled: 2,
                },
            ]
        );
    }

    #[test]
    fn orphan_index_pages_are_index_data() {
        #[rustfmt::skip]
        let entry = [
            0x05,       // payload length: 5
            0x03,       // record header size: 3
            0x01, 0x01, // serial types: 8-bit integer, twice (the key, the rowid)
            0x05, 0x07,
        ];
        let bytes = file(
            &[&a_schema()],
            &[leaf(&[&named_row(1, b'a')]), index_leaf(&[&entry])],
        );
        let plan = plan_of(&bytes, &[target(a_shape(), 2)]);
        assert_eq!(
            plan.index_groups,
            vec![OrphanGroup {
                top: p(3),
                pages: vec![p(3)],
                table_pages: false,
                cells: 1,
                rowids: None,
            }]
        );
        assert_eq!(plan.lost_and_found, vec![]);
    }

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

    #[test]
    fn sample_shape_takes_each_columns_most_seen_storage_class() {
        let t = |s: &str| Value::Text(s.as_bytes().to_vec());
        let sample = vec![
            vec![Value::Integer(1), t("x"), Value::Null],
            vec![Value::Integer(2), Value::Real(1.5), Value::Null],
            vec![Value::Null, t("y"), Value::Blob(vec![1]), Value::Null],
        ];
        // NULL only where nothing else was seen, however often; as wide as the widest
        // record.
        assert_eq!(sample_shape(&sample), ["integer", "text", "blob", "null"]);
        assert_eq!(sample_shape(&[]), Vec::<&str>::new());
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
