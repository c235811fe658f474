//! The evidence walk behind a damaged table's loss bounds: its lost rowid ranges against
//! the rows recovered in them, its indexes' entries in the source whose rows the output
//! lacks, and the rows its full-text copies hold that the output lacks. Reads only the
//! source and what the load recorded, so it can run beside the output's work.

use std::collections::{BTreeMap, BTreeSet};

use pager::{Database, LostChild, Value};

use super::{bound_loss, KnownMissing, LossBounds, LostRange, Proven};
use crate::partial::{IndexKeys, PartialRow, ResolvedCopy};
use crate::table::TableId;

/// What bounding one table's loss needs.
#[derive(Clone, Debug)]
pub struct BoundsInput {
    /// The table.
    pub table: TableId,
    /// The table's `sqlite_sequence` counter in the source, unless a recovered rowid
    /// exceeds it.
    pub sequence: Option<i64>,
    /// Rows `sqlite_stat1` counted at the source's last ANALYZE.
    pub analyzed_rows: Option<u64>,
    /// Child pointers of its b-tree that could not be followed.
    pub lost: Vec<LostChild>,
    /// Its root page is unreadable.
    pub root_lost: bool,
    /// Rows found but not in the table.
    pub known: KnownMissing,
    /// Rowids of the rows its constraints refused.
    pub rejected_rowids: BTreeSet<i64>,
    /// Rowids of the rows written into the table (not placeholders).
    pub rowids: crate::Rowids,
    /// The table's indexes in the source, with the column behind each key.
    pub indexes: Vec<IndexKeys>,
    /// Full-text copies of the table's text keyed by its rowid.
    pub copies: Vec<ResolvedCopy>,
}

/// One table's loss bounds, and the lost rows its index entries and rowid-keyed text
/// copies prove, by rowid.
#[derive(Clone, Debug)]
pub struct Bounded {
    /// The table.
    pub table: TableId,
    /// The bounds.
    pub bounds: LossBounds,
    /// What the evidence holds of each proven row, by rowid.
    pub partial: BTreeMap<i64, PartialRow>,
}

/// Bounds the rows one damaged table lost.
pub fn bound_table(db: &Database<'_>, input: BoundsInput) -> Bounded {
    let rows = &input.rowids;
    // Rows written with lower < rowid <= upper.
    let ranges: Vec<LostRange> = input
        .lost
        .iter()
        .map(|l| LostRange {
            lost: *l,
            recovered: rows.count_within_bounds(l.bounds.lower, l.bounds.upper),
        })
        .collect();
    // Lost ranges sorted by their lower bound, to place an index entry's rowid.
    let mut spans: Vec<(i64, i64)> = input
        .lost
        .iter()
        .map(|l| {
            (
                l.bounds.lower.unwrap_or(i64::MIN),
                l.bounds.upper.unwrap_or(i64::MAX),
            )
        })
        .collect();
    spans.sort_unstable();
    let in_lost_range = |rowid: i64| {
        input.root_lost || {
            let i = spans.partition_point(|(lo, _)| *lo < rowid);
            i > 0 && spans.get(i - 1).is_some_and(|(_, hi)| rowid <= *hi)
        }
    };
    let gone = |rowid: i64| {
        in_lost_range(rowid) && !input.rejected_rowids.contains(&rowid) && !rows.contains(rowid)
    };
    let mut missing: BTreeMap<i64, PartialRow> = BTreeMap::new();
    for index in &input.indexes {
        index_evidence(db, index, &gone, &mut missing);
    }
    // A full-text copy under a rowid the output lacks proves that row too, and gives its
    // text back.
    for copy in &input.copies {
        for row in copy.rows(db) {
            if gone(row.rowid) {
                let values = copy.row_values(&row);
                missing.entry(row.rowid).or_default().add_text(copy, values);
            }
        }
    }
    // A counter below any rowid known to have existed (recovered, proven by an index
    // entry or a text copy, or refused) is contradicted by the file: it bounds nothing.
    let sequence = input.sequence.filter(|seq| {
        missing.keys().next_back().is_none_or(|m| m <= seq)
            && input.rejected_rowids.last().is_none_or(|r| r <= seq)
    });
    let by_index = missing.values().filter(|p| p.by_index).count() as u64;
    let mut bounds = bound_loss(
        &ranges,
        Proven {
            by_index,
            by_text: missing.len() as u64 - by_index,
        },
        input.known,
        input.root_lost,
        sequence,
    );
    // A count from the last ANALYZE is a hint, not a bound: rows may have come and gone
    // since.
    if let Some(n) = input.analyzed_rows.filter(|n| *n > rows.len()) {
        bounds.evidence.push(format!(
            "sqlite_stat1 counted {n} rows at the last ANALYZE; {} are recovered, {} fewer (a hint, not a bound: rows may have changed since)",
            rows.len(),
            n - rows.len()
        ));
    }
    Bounded {
        table: input.table,
        bounds,
        partial: missing,
    }
}

/// The entries of one index in the source whose row is `gone`: each proves its row, and
/// gives back the indexed columns' values.
fn index_evidence(
    db: &Database<'_>,
    index: &IndexKeys,
    gone: &impl Fn(i64) -> bool,
    missing: &mut BTreeMap<i64, PartialRow>,
) {
    for item in pager::BtreeWalk::new(db, index.root).flatten() {
        let pager::TreeItem::Cell(cell) = item else {
            continue;
        };
        // An index row whose root names a table's b-tree (a swapped root) proves nothing.
        if !matches!(
            cell.cell,
            pager::Cell::IndexLeaf(_) | pager::Cell::IndexInterior(_)
        ) {
            continue;
        }
        // Only the rowid, the record's last value, is needed; it lives in the local part
        // of the payload unless the entry is huge.
        let Some(payload) = cell.cell.payload() else {
            continue;
        };
        let rowid = match pager::record::last_value(payload.local, cell.location) {
            Some(pager::ValueRef::Integer(r)) => r,
            _ => match pager::raw_cell(db, &cell)
                .ok()
                .and_then(|raw| raw.decode().values.last().cloned())
            {
                Some(Value::Integer(r)) => r,
                _ => continue,
            },
        };
        // A refused row is counted as such, not again as proven by an index.
        if gone(rowid) {
            // The whole entry is decoded only for a row that is gone. A damaged entry
            // still proves the row; its values (NULL where damaged) do not.
            let keys = pager::raw_cell(db, &cell)
                .map(|raw| raw.decode())
                .ok()
                .filter(|d| d.complete)
                .map(|d| d.values)
                .unwrap_or_default();
            let keys = keys.split_last().map_or(&[][..], |(_, k)| k);
            missing.entry(rowid).or_default().add(index, keys);
        }
    }
}
