//! Whether a child key with no parent row names a row its parent table lost, or a row the
//! source never held.
//!
//! SQLite enforces foreign keys only when an application turns them on
//! (`PRAGMA foreign_keys`, off by default): a healthy database may hold child rows whose
//! parent was deleted. Such a reference is dangling in the source itself. A placeholder
//! parent stands for a row the children prove existed and the salvage lost, so it is made
//! only where the parent table could have lost that row:
//!
//! - a parent table whose own b-tree was read whole, every row of it written as read, and
//!   nothing else saying a row is missing, lost no row ([`ParentRows::Whole`]);
//! - a table whose only loss is subtrees of its b-tree that could not be followed lost
//!   only rows whose rowids lie in the ranges their pointers covered (each pointer's
//!   divider keys bound its subtree, "B-tree Pages"): every other row was read and
//!   written under its rowid, even one whose values are damaged
//!   ([`ParentRows::RowidsIn`]). This trusts the divider keys of the surviving interior
//!   pages, as the loss bounds do (`crate::bounds`); a range whose keys are out of order,
//!   or any finding a lost pointer does not explain, gives it up;
//! - anything else may have lost any row ([`ParentRows::Any`]).

use pager::{Finding, KeyBounds, LostChild, PageNo, Value};

use super::Relationship;
use crate::bounds::{disguises_cells, LossBounds};
use crate::loss::{table_signals, TableLoss};
use crate::shape::TableShape;
use crate::table::TableStatus;

/// Which of its rows a parent table could have lost, as the placeholder loop asks it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ParentRows {
    /// Its b-tree was read whole and every row written as read: it lost no row.
    Whole,
    /// Only rows whose rowid lies in one of these ranges can be lost (the ranges of the
    /// child pointers that could not be followed); every other row is in the output
    /// under its rowid, though its other values may be damaged.
    RowidsIn(Vec<KeyBounds>),
    /// Any row may be lost.
    Any,
}

/// What the run knows of a table when it is a parent: its fate, its counts, its loss
/// bounds and its b-tree as surveyed.
#[derive(Clone, Copy, Debug)]
pub struct ParentFacts<'a> {
    /// The table's name.
    pub name: &'a str,
    /// What became of it.
    pub status: TableStatus,
    /// Its counts.
    pub loss: &'a TableLoss,
    /// Its loss bounds, when anything says it lost rows.
    pub bounds: Option<&'a LossBounds>,
    /// The child pointers of its b-tree that could not be followed.
    pub lost: &'a [LostChild],
    /// The findings in its b-tree.
    pub findings: &'a [Finding],
    /// A signal of the run says its b-tree is not wholly its own: its schema row names
    /// another table's root or an index's, it is filled from a root another row names,
    /// or a page its tree reaches is another structure's.
    pub tree_questioned: bool,
    /// The file may mix two states: records of a hot rollback journal are damaged and
    /// their pages keep an interrupted transaction's changes, which may have deleted a
    /// parent whose children the rolled-back pages still hold.
    pub mixed_states: bool,
}

/// Which rows the table of `facts` could have lost.
pub fn parent_rows(facts: &ParentFacts<'_>) -> ParentRows {
    let ParentFacts {
        status,
        loss,
        bounds,
        lost,
        findings,
        ..
    } = *facts;
    if status != TableStatus::Recovered || facts.tree_questioned || facts.mixed_states {
        return ParentRows::Any;
    }
    let bounds_say_lost = bounds.is_some_and(|b| b.lower > 0 || b.upper != Some(0));
    let rebuilt = loss.partial_rows > 0 || loss.partial_refused > 0;
    if table_signals(facts.name, loss).is_empty() && !bounds_say_lost && !rebuilt {
        return ParentRows::Whole;
    }
    // Every row read was written, under its rowid: what is missing was in a lost subtree.
    let written_as_read = loss.unreadable_cells == 0
        && loss.rejected == 0
        && loss.unwritable == 0
        && loss.conflicts == 0;
    // The interior pages holding a lost pointer, looked up once per finding: a large
    // damaged tree has tens of thousands of each.
    let holding: std::collections::HashSet<PageNo> = lost.iter().map(|l| l.parent).collect();
    let ranges_hold = !loss.root_lost
        && lost.iter().all(|l| ordered(l.bounds))
        && findings
            .iter()
            .all(|f| !disguises_cells(f) && explained_by(f, &holding));
    // Rows proven missing (index entries, text copies) where no subtree was lost: the
    // tree read whole contradicts them, and nothing says where they were.
    let unplaced = (bounds_say_lost || rebuilt) && lost.is_empty();
    if written_as_read && ranges_hold && !unplaced {
        ParentRows::RowidsIn(lost.iter().map(|l| l.bounds).collect())
    } else {
        ParentRows::Any
    }
}

/// A lost pointer's range as SQLite's divider keys make it: its lower bound below its
/// upper. Dividers out of order are damage, and bound nothing.
fn ordered(b: KeyBounds) -> bool {
    match (b.lower, b.upper) {
        (Some(lo), Some(hi)) => lo < hi,
        _ => true,
    }
}

/// Whether finding `f` is the one a pointer that could not be followed gives (the walk
/// reports it with the lost pointer on the interior page that holds it): then the cells
/// it concerns are those of that pointer's range. Any other finding may hide a cell of a
/// page that was read, whatever its rowid. `holding`: the pages holding a lost pointer.
fn explained_by(f: &Finding, holding: &std::collections::HashSet<PageNo>) -> bool {
    use Finding::*;
    let page = match f {
        ChildPointerNull { page, .. }
        | ChildPointerPastEnd { page, .. }
        | BtreeCycle { page, .. }
        // On an interior page, a pointer out of range is a lost child of that page; on a
        // leaf, a lost cell, and a leaf holds no child pointer to match it.
        | CellPointerOutOfRange { page, .. } => *page,
        ChildNotBtreePage { parent, .. }
        | ChildPageKindMismatch { parent, .. }
        | EmptyNonRootPage { parent, .. } => *parent,
        _ => return false,
    };
    holding.contains(&page)
}

impl ParentRows {
    /// Whether the parent row the children of `rel` reference by `key` could be among
    /// the rows the table `parent` lost. Only a single integer key that is the table's
    /// rowid can be placed outside the lost rowid ranges.
    pub fn could_hold(&self, parent: &TableShape, rel: &Relationship, key: &[Value]) -> bool {
        match self {
            ParentRows::Whole => false,
            ParentRows::Any => true,
            ParentRows::RowidsIn(ranges) => match super::synthesize::rowid_key(parent, rel, key) {
                Some(rowid) => ranges.iter().any(|r| r.contains(rowid)),
                None => true,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{bookshop, written_by};
    use super::*;
    use pager::{CellIndex, PageNo};

    fn page(n: u32) -> PageNo {
        PageNo::new(n).unwrap()
    }

    fn facts<'a>(
        loss: &'a TableLoss,
        lost: &'a [LostChild],
        findings: &'a [Finding],
    ) -> ParentFacts<'a> {
        ParentFacts {
            name: "authors",
            status: TableStatus::Recovered,
            loss,
            bounds: None,
            lost,
            findings,
            tree_questioned: false,
            mixed_states: false,
        }
    }

    fn lost_leaf(parent: u32, lower: Option<i64>, upper: Option<i64>) -> LostChild {
        LostChild {
            parent: page(parent),
            child: 9,
            bounds: KeyBounds { lower, upper },
        }
    }

    fn not_a_page(parent: u32) -> Finding {
        Finding::ChildNotBtreePage {
            parent: page(parent),
            child: page(9),
            raw_type: 0,
        }
    }

    fn authors() -> TableShape {
        bookshop().swap_remove(0)
    }

    #[test]
    fn a_table_read_whole_lost_no_row() {
        let loss = TableLoss {
            from_tree: 2,
            texts_not_in_encoding: 1,
            ..TableLoss::default()
        };
        let rows = parent_rows(&facts(&loss, &[], &[]));
        assert_eq!(rows, ParentRows::Whole);
        assert!(!rows.could_hold(&authors(), &written_by("id"), &[Value::Integer(7)]));
        assert!(!rows.could_hold(
            &authors(),
            &written_by("name"),
            &[Value::Text(b"x".to_vec())]
        ));
    }

    #[test]
    fn any_row_may_be_lost_where_a_row_read_was_not_written_or_cells_are_unsure() {
        let cases = [
            TableLoss {
                unreadable_cells: 1,
                ..TableLoss::default()
            },
            TableLoss {
                rejected: 1,
                ..TableLoss::default()
            },
            TableLoss {
                conflicts: 1,
                ..TableLoss::default()
            },
            TableLoss {
                unwritable: 1,
                ..TableLoss::default()
            },
            TableLoss {
                root_lost: true,
                ..TableLoss::default()
            },
        ];
        for loss in &cases {
            assert_eq!(
                parent_rows(&facts(loss, &[], &[])),
                ParentRows::Any,
                "{loss:?}"
            );
        }
        let overlap = [Finding::CellOverlap {
            page: page(3),
            index: CellIndex(0),
            other: CellIndex(1),
            offset: 40,
        }];
        let findings = TableLoss {
            tree_findings: 1,
            ..TableLoss::default()
        };
        assert_eq!(
            parent_rows(&facts(&findings, &[], &overlap)),
            ParentRows::Any
        );
    }

    /// Damaged values and rows from orphan pages are signs of loss, but every rowid the
    /// tree holds was read and written: only a key that is not the rowid is unsure.
    #[test]
    fn damaged_values_leave_the_rowids_whole() {
        for loss in [
            TableLoss {
                damaged_rows: 1,
                ..TableLoss::default()
            },
            TableLoss {
                from_orphans: 1,
                ..TableLoss::default()
            },
        ] {
            let rows = parent_rows(&facts(&loss, &[], &[]));
            assert_eq!(rows, ParentRows::RowidsIn(vec![]), "{loss:?}");
            assert!(!rows.could_hold(&authors(), &written_by("id"), &[Value::Integer(7)]));
            assert!(rows.could_hold(
                &authors(),
                &written_by("name"),
                &[Value::Text(b"x".to_vec())]
            ));
        }
    }

    #[test]
    fn bounds_rows_rebuilt_or_a_questioned_tree_may_have_lost_any_row() {
        let loss = TableLoss::default();
        let bounds = LossBounds {
            lower: 1,
            upper: Some(1),
            ..LossBounds::default()
        };
        let base = facts(&loss, &[], &[]);
        let with = |x: ParentFacts<'_>| parent_rows(&x);
        assert_eq!(
            with(ParentFacts {
                bounds: Some(&bounds),
                ..base
            }),
            ParentRows::Any
        );
        assert_eq!(
            with(ParentFacts {
                tree_questioned: true,
                ..base
            }),
            ParentRows::Any
        );
        assert_eq!(
            with(ParentFacts {
                mixed_states: true,
                ..base
            }),
            ParentRows::Any
        );
        let inferred = ParentFacts {
            status: TableStatus::Inferred,
            ..base
        };
        assert_eq!(with(inferred), ParentRows::Any);
        let rebuilt = TableLoss {
            partial_rows: 1,
            ..TableLoss::default()
        };
        assert_eq!(parent_rows(&facts(&rebuilt, &[], &[])), ParentRows::Any);
        // Bounds that say nothing is missing say nothing.
        let nothing = LossBounds {
            upper: Some(0),
            ..LossBounds::default()
        };
        assert_eq!(
            with(ParentFacts {
                bounds: Some(&nothing),
                ..base
            }),
            ParentRows::Whole
        );
    }

    #[test]
    fn a_lost_leaf_loses_only_its_rowid_range() {
        let loss = TableLoss {
            from_tree: 90,
            lost_subtrees: 1,
            tree_findings: 1,
            damaged_rows: 2,
            ..TableLoss::default()
        };
        let lost = [lost_leaf(2, Some(100), Some(200))];
        let rows = parent_rows(&facts(&loss, &lost, &[not_a_page(2)]));
        assert_eq!(rows, ParentRows::RowidsIn(vec![lost[0].bounds]));
        let (shape, by_id) = (authors(), written_by("id"));
        assert!(rows.could_hold(&shape, &by_id, &[Value::Integer(150)]));
        assert!(rows.could_hold(&shape, &by_id, &[Value::Integer(200)]));
        assert!(!rows.could_hold(&shape, &by_id, &[Value::Integer(100)]));
        assert!(!rows.could_hold(&shape, &by_id, &[Value::Integer(7)]));
        // Text that SQLite would compare as the number, and a key that is not the rowid,
        // cannot be placed outside the range.
        assert!(rows.could_hold(&shape, &by_id, &[Value::Text(b"7".to_vec())]));
        assert!(rows.could_hold(&shape, &written_by("name"), &[Value::Text(b"x".to_vec())]));
    }

    #[test]
    fn ranges_are_given_up_where_they_may_not_hold() {
        let loss = TableLoss {
            lost_subtrees: 1,
            tree_findings: 2,
            ..TableLoss::default()
        };
        let lost = [lost_leaf(2, Some(100), Some(200))];
        // A finding no lost pointer explains: a leaf's cell may be gone, rowid unknown.
        let stray = Finding::CellPointerOutOfRange {
            page: page(5),
            index: CellIndex(0),
            offset: 3,
        };
        assert_eq!(
            parent_rows(&facts(&loss, &lost, &[not_a_page(2), stray])),
            ParentRows::Any
        );
        // The lost pointer's own page, though, is explained.
        let on_interior = Finding::CellPointerOutOfRange {
            page: page(2),
            index: CellIndex(0),
            offset: 3,
        };
        assert_eq!(
            parent_rows(&facts(&loss, &lost, &[not_a_page(2), on_interior])),
            ParentRows::RowidsIn(vec![lost[0].bounds])
        );
        // Dividers out of order bound nothing.
        let inverted = [lost_leaf(2, Some(300), Some(200))];
        assert_eq!(
            parent_rows(&facts(&loss, &inverted, &[not_a_page(2)])),
            ParentRows::Any
        );
        // A row read but not written is missing outside any range.
        let refused = TableLoss {
            rejected: 1,
            ..loss.clone()
        };
        assert_eq!(
            parent_rows(&facts(&refused, &lost, &[not_a_page(2)])),
            ParentRows::Any
        );
        // An open range reaches as far as it is open.
        let open = [lost_leaf(2, Some(100), None)];
        let rows = parent_rows(&facts(&loss, &open, &[not_a_page(2)]));
        assert!(rows.could_hold(&authors(), &written_by("id"), &[Value::Integer(i64::MAX)]));
    }
}
