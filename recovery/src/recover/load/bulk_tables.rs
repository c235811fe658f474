//! Which tables the bulk writer builds, and one table's bulk job: rowid tables with no
//! index SQLite keeps for a constraint, whose rows can be appended in rowid order. Their
//! indexes are created by SQLite after the load, from the rows: one it builds needs only
//! `PRAGMA quick_check`, where one the writer sorted itself needed SQLite's full
//! `integrity_check` (a search of the index for every row), which cost more than building
//! it (0.85 s more on the 2 GB store of `bench/speed.py`, and not linear in its size).

use std::collections::HashMap;

use pager::{SerialType, TextEncoding, Value};
use reconstruct::{
    text_in_encoding, Affinity, ColumnDefault, RecoveredRow, RowEvent, StrictType, TableId,
    TableRows, TableShape,
};

use super::bulk::BulkWriter;
use crate::base::output::Output;
use crate::recover::evidence::{Evidence, Reader};
use crate::recover::tables::Tables;

/// A table the bulk writer fills.
pub struct BulkTable {
    /// The table.
    pub id: TableId,
    /// Its (empty) root page in the output.
    pub root: u32,
    /// Its shape.
    pub shape: TableShape,
    /// Its root in the source.
    pub source_root: Option<pager::PageNo>,
    /// Columns (positions in the shape) whose values each row read from overflow pages
    /// keeps for the cross-check with the table's indexes (`load::crosscheck`).
    pub keyed: Vec<usize>,
    /// Whether to note where each row written was read (`--provenance`).
    pub provenance: bool,
}

/// Bytes the spilled rows of all tables keep at most, counted with the maps that hold
/// them (about: the row that passes the limit is kept whole; the rest are read back from
/// the output).
pub const KEPT_LIMIT: usize = 16 << 20;

/// Bytes a kept row costs beside its values: its rowid, its list and its map entry.
const KEPT_ROW: usize = 64;

/// Bytes a kept value costs beside its text or blob bytes.
const KEPT_VALUE: usize = 40;

/// Tables whose rows can be written straight into the file: rowid tables with a root in
/// the source and no index that SQLite keeps for a constraint (UNIQUE, or a PRIMARY KEY
/// that is not the rowid), so that nothing but the table's own b-tree must change.
/// A table SQLite cannot describe here is simply left to the SQL path.
pub fn bulk_tables(out: &Output, tables: &Tables) -> Vec<(TableId, u32)> {
    let mut found = Vec::new();
    for (t, shape) in tables.filled() {
        if shape.without_rowid || t.loss.root_lost || t.root.is_none() {
            continue;
        }
        let described: rusqlite::Result<(i64, Option<i64>)> = out.conn.query_row(
            "SELECT (SELECT count(*) FROM sqlite_schema WHERE type = 'index' AND tbl_name = ?1 COLLATE NOCASE),
                    (SELECT rootpage FROM sqlite_schema WHERE type = 'table' AND name = ?1 COLLATE NOCASE)",
            [&t.name],
            |r| Ok((r.get(0)?, r.get(1)?)),
        );
        if let Ok((0, Some(root))) =
            described.map(|(n, r)| (n, r.and_then(|r| u32::try_from(r).ok())))
        {
            found.push((t.id, root));
        }
    }
    found
}

/// What decides whether a table's records can be copied as they are, worked out once per
/// table: for each record position, whether NULL is refused there and the column's
/// affinity.
pub struct Appendable {
    /// Per record position: a NOT NULL column that is not the rowid alias.
    refuses_null: Vec<bool>,
    /// Per record position: the column's affinity.
    affinity: Vec<Affinity>,
    /// Per record position, in a STRICT table: the type its column holds.
    strict: Vec<Option<StrictType>>,
    /// The fewest values a record may hold: a column after them that it lacks reads as
    /// its default, and a NOT NULL column without one would read as NULL.
    shortest: usize,
    /// The database's text encoding, in which numeric-looking text is judged.
    encoding: TextEncoding,
}

impl Appendable {
    /// The rule for a table of this shape, in a database of this text encoding.
    pub fn new(shape: &TableShape, encoding: TextEncoding) -> Appendable {
        let alias = shape.rowid_alias();
        let order = shape.record_order();
        let refuses_null = order
            .iter()
            .map(|&col| Some(col) != alias && shape.columns.get(col).is_some_and(|c| c.not_null))
            .collect();
        let affinity = order
            .iter()
            .map(|&col| {
                shape
                    .columns
                    .get(col)
                    .map_or(Affinity::Blob, |c| c.affinity())
            })
            .collect();
        let strict = order
            .iter()
            .map(|&col| {
                shape
                    .columns
                    .get(col)
                    .filter(|_| shape.strict)
                    .map(|c| StrictType::of_declared_type(&c.decl_type))
            })
            .collect();
        let shortest = order
            .iter()
            .rposition(|&col| {
                Some(col) != alias
                    && shape
                        .columns
                        .get(col)
                        .is_some_and(|c| c.not_null && c.default != ColumnDefault::Constant)
            })
            .map_or(0, |i| i + 1);
        Appendable {
            refuses_null,
            affinity,
            strict,
            shortest,
            encoding,
        }
    }

    /// Whether a row's record can be stored exactly as it is: whole, no wider than the
    /// table, no shorter than its NOT NULL columns without a default need, no NULL in a
    /// NOT NULL column (those go through SQL, which refuses them), no text invalid in the
    /// database's encoding, and no value its column's affinity would have converted (a
    /// number in a TEXT column, numeric-looking text in a numeric one: SQLite never stores
    /// them, and its integrity check fails on them). The others go through SQL, which
    /// registers what it does not write as read.
    pub fn accepts(&self, row: &RecoveredRow<'_>) -> bool {
        // A cell found in the content area goes through SQL, which checks that it fits.
        if !row.raw.intact || row.raw.suspect_from.is_some() || !row.provenance.source().vouched() {
            return false;
        }
        let payload = &row.raw.payload;
        let Some((header_len, _)) = pager::varint::read_varint(payload) else {
            return false;
        };
        let mut position = 0usize;
        let mut at = header_len;
        let mut ok = true;
        let header = pager::record::visit_record_header(
            payload,
            payload.len() as u64,
            row.raw.location,
            |t| {
                let refuses = self.refuses_null.get(position).copied();
                ok &= match refuses {
                    None => false, // wider than the table
                    Some(refuses) => !(refuses && t == SerialType::Null),
                };
                let numeric = matches!(
                    t,
                    SerialType::Integer(_) | SerialType::Float | SerialType::Zero | SerialType::One
                );
                let affinity = self.affinity.get(position).copied();
                // A STRICT column refuses every other type (SQLite's check fails on one).
                if let Some(Some(strict)) = self.strict.get(position) {
                    ok &= match t {
                        SerialType::Null => true,
                        SerialType::Integer(_) | SerialType::Zero | SerialType::One => matches!(
                            strict,
                            StrictType::Integer | StrictType::Real | StrictType::Any
                        ),
                        SerialType::Float => {
                            matches!(strict, StrictType::Real | StrictType::Any)
                        }
                        SerialType::Text(_) => matches!(strict, StrictType::Text | StrictType::Any),
                        _ => matches!(strict, StrictType::Blob | StrictType::Any),
                    };
                }
                if numeric && affinity == Some(Affinity::Text) {
                    ok = false;
                }
                if let SerialType::Text(n) = t {
                    let start = at as usize;
                    let text = payload.get(start..start.saturating_add(n as usize));
                    let numeric_column = matches!(
                        affinity,
                        Some(Affinity::Integer | Affinity::Real | Affinity::Numeric)
                    );
                    ok &= text.is_some_and(|text| {
                        text_in_encoding(text, self.encoding)
                            && !(numeric_column && Affinity::text_converts_in(text, self.encoding))
                    });
                }
                at = at.saturating_add(t.body_len());
                position += 1;
            },
        );
        header.is_ok() && ok && position >= self.shortest
    }
}

/// What one table's bulk job wrote, and what it left to SQL.
pub struct Written {
    /// Rows written.
    pub rows: u64,
    /// Cells that could not be decoded.
    pub unreadable: u64,
    /// Rowids written.
    pub rowids: reconstruct::RowidSet,
    /// Of those, rows whose payload was joined from overflow pages.
    pub spilled: reconstruct::RowidSet,
    /// Of those, the values of the job's keyed columns, by rowid (none once the run's
    /// rows kept [`KEPT_LIMIT`] bytes).
    pub kept: HashMap<i64, Vec<(usize, Value)>>,
    /// Rows that go through SQL instead.
    pub later: Vec<reconstruct::RowPlace>,
    /// The kinds of the BLOBs of the rows written.
    pub blob_kinds: reconstruct::BlobKinds,
    /// Where each row written was read, in the order written (when asked for).
    pub places: Vec<crate::recover::whence::Place>,
}

/// Writes the tree rows of one table through `writer`. Rows that
/// cannot be appended as they are (out of rowid order, damaged, or refused by a NOT NULL
/// column) are returned to go through SQL.
pub fn write_table<'s>(
    writer: &mut BulkWriter,
    evidence: &Evidence<'s>,
    job: &BulkTable,
    reader: &Reader<'_>,
    kept: &mut usize,
) -> std::io::Result<Written> {
    let mut table = writer.table(job.root);
    let appendable = Appendable::new(&job.shape, evidence.db.encoding());
    let (mut unreadable, mut later) = (0u64, Vec::new());
    let (mut rowids, mut spilled) = (
        reconstruct::RowidSet::default(),
        reconstruct::RowidSet::default(),
    );
    let mut kept_here = HashMap::new();
    let mut blob_kinds = reconstruct::BlobKinds::default();
    let mut places = Vec::new();
    // Each keyed column's place in the record (the rowid alias is stored as NULL there:
    // the cross-check takes the rowid).
    let order = job.shape.record_order();
    let alias = job.shape.rowid_alias();
    let keyed: Vec<(usize, usize)> = job
        .keyed
        .iter()
        .filter(|&&col| Some(col) != alias)
        .filter_map(|&col| Some((col, order.iter().position(|&c| c == col)?)))
        .collect();
    for event in TableRows::new(&evidence.db, job.source_root, std::iter::empty()) {
        let row = match event {
            RowEvent::Row(row) => {
                reader.row(row.raw.location.page);
                if reader.stopped() {
                    break;
                }
                row
            }
            RowEvent::Unreadable { .. } => {
                unreadable += 1;
                continue;
            }
        };
        match row.rowid() {
            Some(rowid) if table.accepts(rowid) && appendable.accepts(&row) => {
                table.push(rowid, &row.raw.payload)?;
                blob_kinds.add_record(&row.raw.payload);
                if job.provenance {
                    places.extend(crate::recover::whence::Place::of(&row));
                }
                rowids.insert(rowid);
                if row.raw.spilled() {
                    spilled.insert(rowid);
                    let values = if *kept < KEPT_LIMIT {
                        keyed_values(&row, &keyed)
                    } else {
                        Vec::new()
                    };
                    if !values.is_empty() {
                        *kept += KEPT_ROW
                            + values
                                .iter()
                                .map(|(_, v)| KEPT_VALUE + v.held_bytes())
                                .sum::<usize>();
                        kept_here.insert(rowid, values);
                    }
                }
            }
            _ => later.push(row.place()),
        }
    }
    let rows = table.finish()?;
    Ok(Written {
        rows,
        unreadable,
        rowids,
        spilled,
        kept: kept_here,
        later,
        blob_kinds,
        places,
    })
}

/// The values of the keyed columns in a row's record, each with its position in the
/// shape; a column the record does not reach (it reads as its default) is left out.
fn keyed_values(row: &RecoveredRow<'_>, keyed: &[(usize, usize)]) -> Vec<(usize, Value)> {
    let payload = &row.raw.payload;
    keyed
        .iter()
        .filter_map(|&(col, pos)| {
            let (t, body) = pager::record::column_raw(payload, row.raw.location, pos)?;
            let value = match Value::from(pager::record::decode_value(t, body, 0)?) {
                // SQLite reads a NaN stored as a float as NULL.
                Value::Real(r) if r.is_nan() => Value::Null,
                v => v,
            };
            Some((col, value))
        })
        .collect()
}
