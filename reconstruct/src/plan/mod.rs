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
//!
//! Its parts: `groups` finds the orphan groups ([`orphan_groups`]); `attribute` weighs the
//! evidence for each group against the tables ([`Evidence`], [`Confidence`]); `infer`
//! makes tables of the groups no known table fits ([`InferredTable`]). [`plan()`], here,
//! sends each group where its evidence says: to a table, to `lost_and_found`, to the
//! index data, or to an inferred table.

mod attribute;
mod groups;
mod infer;
mod lost;

pub use attribute::{Attribution, Confidence, Evidence};
pub use groups::{orphan_groups, OrphanGroup};
pub use infer::{sample_shape, InferredTable};

use pager::{Database, PageNo, Survey};

use crate::shape::TableShape;
use attribute::{attribute, Outcome};

/// A table the salvage will fill: its shape and, when it has one, its root page.
#[derive(Clone, Debug)]
pub struct TableTarget {
    /// The shape from the CREATE statement.
    pub shape: TableShape,
    /// Root page from `sqlite_schema`.
    pub root: Option<PageNo>,
    /// Its indexes in the source whose entries witness every row (no partial index):
    /// an orphan group whose rows one table's indexes hold is that table's.
    pub indexes: Vec<crate::partial::IndexKeys>,
}

/// Where every orphan group goes.
#[derive(Clone, Debug, Default)]
pub struct Plan {
    /// For each target table (same order as given), the orphan groups attributed to it.
    pub attributed: Vec<Vec<Attribution>>,
    /// Table-page groups no evidence settles: their rows go to `lost_and_found`.
    pub lost_and_found: Vec<OrphanGroup>,
    /// Of those, the groups whose records fit more than one table equally, each by its top
    /// page with the tables it could be (by index into the targets): every candidate is
    /// named, none is chosen.
    pub candidates: Vec<(PageNo, Vec<usize>)>,
    /// Index-page groups of ordinary indexes: index data, rebuilt from the tables.
    pub index_groups: Vec<OrphanGroup>,
    /// Tables whose CREATE statement is lost, inferred from orphan groups whose records no
    /// known table's columns fit: groups of one record shape whose rowid ranges do not
    /// overlap (the pieces of one tree) make one table; overlapping ones make more.
    pub inferred: Vec<InferredTable>,
}

/// Groups the orphan pages of `survey` and attributes each group: each group is walked
/// again for a sample of its records and looked up in the tables' indexes.
pub fn plan(db: &Database<'_>, survey: &Survey, targets: &[TableTarget]) -> Plan {
    let groups = orphan_groups(db, survey);
    // A table can lose its CREATE statement only when the schema itself is damaged; with
    // an intact schema, records no table fits belong to a dropped table.
    let schema_damaged = !survey.schema.findings.is_empty();
    let mut out = Plan {
        attributed: vec![Vec::new(); targets.len()],
        ..Plan::default()
    };
    let trees: Vec<lost::DamagedTree<'_>> =
        survey.trees.iter().map(lost::DamagedTree::new).collect();
    for group in groups {
        let candidates: Vec<usize> = (0..targets.len())
            .filter(|&i| {
                targets
                    .get(i)
                    .is_some_and(|t| t.shape.without_rowid != group.table_pages)
            })
            .collect();
        match attribute(db, (targets, &trees), &candidates, &group) {
            Outcome::NoTableFits(sample)
                if group.table_pages && !sample.is_empty() && schema_damaged =>
            {
                infer::join(&mut out.inferred, group, &sample)
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
            Outcome::Ambiguous(tables) if group.table_pages => {
                if tables.len() > 1 {
                    out.candidates.push((group.top, tables));
                }
                out.lost_and_found.push(group);
            }
            _ if group.table_pages => out.lost_and_found.push(group),
            _ => out.index_groups.push(group),
        }
    }
    out
}

#[cfg(test)]
mod testing {
    //! Files of 512-byte pages (see [`crate::testing`]) whose orphan pages the plan
    //! attributes. Table `a(id INTEGER PRIMARY KEY, name TEXT)` is rooted at page 2 in
    //! every one.

    use pager::survey;

    use super::*;
    use crate::testing::{schema_row, shape};

    pub const A_SQL: &str = "CREATE TABLE a(id INTEGER PRIMARY KEY, name TEXT)";

    pub fn p(n: u32) -> PageNo {
        PageNo::new(n).unwrap()
    }

    pub fn a_shape() -> TableShape {
        shape("a", &[("id", "INTEGER PRIMARY KEY"), ("name", "TEXT")])
    }

    pub fn a_schema() -> Vec<u8> {
        schema_row(1, "a", 2, A_SQL)
    }

    pub fn plan_of(bytes: &[u8], targets: &[TableTarget]) -> Plan {
        let db = Database::open(bytes).unwrap();
        plan(&db, &survey(&db), targets)
    }

    /// The group of orphan leaf `top` holding rows `lo..=hi` (and nothing else).
    pub fn leaf_group(top: u32, cells: u64, rowids: (i64, i64)) -> OrphanGroup {
        OrphanGroup {
            top: p(top),
            pages: vec![p(top)],
            table_pages: true,
            cells,
            rowids: Some(rowids),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::testing::{a_schema, a_shape, p, plan_of};
    use super::*;
    use crate::testing::{file, index_leaf, leaf, named_row, target};

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
}
