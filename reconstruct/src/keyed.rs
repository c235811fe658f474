//! WITHOUT ROWID tables named from their orphan b-trees when the schema is lost.
//!
//! A WITHOUT ROWID table's rows are the records of an index b-tree, its primary key's
//! values first, in key order. With page 1 lost, such a tree is an orphan index tree that
//! no inferred table's rows explain (`traced_groups` gives it none). It is named for a
//! WITHOUT ROWID table an identified application makes when every sampled record fits
//! that table's columns, full width, no two of them share its primary key, their last
//! values are not the rowids of one inferred table's rows (an index whose table's entries
//! its tracing missed), and it is the one such table the tree fits and the one such tree
//! the table fits. Anything less stays in `lost_and_found`.

use std::collections::BTreeSet;

use pager::{Database, Value};

use crate::naming::{compared, spread, KnownTable};
use crate::plan::{Confidence, Evidence, InferredTable, OrphanGroup};
use crate::rows::{RowEvent, TableRows};

/// An orphan index tree named for a known WITHOUT ROWID table.
#[derive(Clone, Debug, PartialEq)]
pub struct KeyedTable {
    /// The tree (its position in the groups given).
    pub group: usize,
    /// The table (its position in the known tables given).
    pub known: usize,
    /// Records sampled, all of which fit.
    pub sampled: u32,
    /// What proves it.
    pub evidence: Evidence,
    /// How sure.
    pub confidence: Confidence,
}

impl KeyedTable {
    /// The report's sentence: why the table is inferred and what named it.
    pub fn reason(&self, k: &KnownTable, group: &OrphanGroup) -> String {
        format!(
            "its CREATE statement is lost: {} knows it as a WITHOUT ROWID table, and the \
             {} sampled records of an orphan index b-tree ({} page{}, {} cells) fit its {} \
             columns, each primary key once; no other WITHOUT ROWID table of the \
             applications identified fits them, nor does another orphan tree fit it",
            k.origin,
            self.sampled,
            group.pages.len(),
            if group.pages.len() == 1 { "" } else { "s" },
            group.cells,
            k.shape.record_order().len(),
        )
    }
}

/// The orphan index trees in `groups` named for the WITHOUT ROWID tables in `known` (the
/// tables of applications already identified, not yet in the output); `inferred` are the
/// tables inferred from orphan table pages, whose rowids rule out an index's entries.
pub fn name_without_rowid(
    db: &Database<'_>,
    groups: &[OrphanGroup],
    known: &[KnownTable],
    inferred: &[InferredTable],
) -> Vec<KeyedTable> {
    let candidates: Vec<usize> = known
        .iter()
        .enumerate()
        .filter(|(_, k)| k.shape.without_rowid)
        .map(|(i, _)| i)
        .collect();
    if candidates.is_empty() || groups.is_empty() {
        return Vec::new();
    }
    let samples: Vec<Vec<Vec<Value>>> = groups
        .iter()
        .map(|g| spread(pager::search::index_records(db, g.top).map(compared)))
        .collect();
    let rowids = rowids_among(db, inferred, &samples);
    // Each tree's fitting tables, by name (two versions of one table are one candidate).
    let fits: Vec<Vec<usize>> = samples
        .iter()
        .map(|sample| {
            if sample.is_empty() || ends_in_rowids(sample, &rowids) {
                return Vec::new();
            }
            let mut names: BTreeSet<String> = BTreeSet::new();
            let mut found = Vec::new();
            for &k in &candidates {
                let Some(t) = known.get(k) else { continue };
                if holds_rows_of(sample, t) && names.insert(t.shape.name.to_ascii_lowercase()) {
                    found.push(k);
                }
            }
            found
        })
        .collect();
    let name = |k: usize| known.get(k).map(|t| t.shape.name.to_ascii_lowercase());
    fits.iter()
        .enumerate()
        .filter_map(|(g, fit)| {
            let [k] = fit.as_slice() else { return None };
            let rivals = fits
                .iter()
                .filter(|other| other.iter().any(|o| name(*o) == name(*k)))
                .count();
            (rivals == 1).then(|| {
                let sampled = samples.get(g).map_or(0, Vec::len) as u32;
                KeyedTable {
                    group: g,
                    known: *k,
                    sampled,
                    evidence: Evidence::KnownSchema {
                        origin: known.get(*k).map(|t| t.origin.clone()).unwrap_or_default(),
                        sampled,
                        fitting: sampled,
                        runner_up: None,
                        indexes: 0,
                        keyed_exactly: false,
                    },
                    confidence: Confidence::Medium,
                }
            })
        })
        .collect()
}

/// Whether every sampled record is a row of `t` as its b-tree holds one: as wide as its
/// stored columns, each value one its column holds, and no primary key twice.
fn holds_rows_of(sample: &[Vec<Value>], t: &KnownTable) -> bool {
    let width = t.shape.record_order().len();
    let key = t.shape.columns.iter().filter(|c| c.pk > 0).count();
    if key == 0 || key > width {
        return false;
    }
    // The records come in key order, and so does a sample spread over them: a key met
    // twice is met in two neighbours.
    sample
        .iter()
        .all(|r| r.len() == width && t.shape.fit(r).is_some())
        && sample
            .windows(2)
            .all(|w| w.first().and_then(|a| a.get(..key)) != w.get(1).and_then(|b| b.get(..key)))
}

/// Whether the sampled records all end in an integer that is the rowid of a row of one
/// inferred table: the entries of an index on it, not a WITHOUT ROWID table's rows.
fn ends_in_rowids(sample: &[Vec<Value>], rowids: &[BTreeSet<i64>]) -> bool {
    let last: Option<Vec<i64>> = sample.iter().map(|r| last_integer(r)).collect();
    last.is_some_and(|last| {
        rowids
            .iter()
            .any(|ids| last.iter().all(|id| ids.contains(id)))
    })
}

/// For each inferred table, which of the integers ending the sampled records are rowids
/// of its rows.
fn rowids_among(
    db: &Database<'_>,
    inferred: &[InferredTable],
    samples: &[Vec<Vec<Value>>],
) -> Vec<BTreeSet<i64>> {
    let wanted: BTreeSet<i64> = samples
        .iter()
        .flatten()
        .filter_map(|r| last_integer(r))
        .collect();
    inferred
        .iter()
        .map(|t| {
            TableRows::new(db, None, t.groups.iter())
                .filter_map(|e| match e {
                    RowEvent::Row(r) => r.rowid().filter(|id| wanted.contains(id)),
                    RowEvent::Unreadable { .. } => None,
                })
                .collect()
        })
        .collect()
}

/// A record's last value, when it is an integer (as an index entry's rowid is).
fn last_integer(record: &[Value]) -> Option<i64> {
    match record.last() {
        Some(Value::Integer(i)) => Some(*i),
        _ => None,
    }
}
