//! A table's rows against its own index entries. Each entry of an index holds a second
//! copy of its row's keyed columns and the row's rowid, on pages of its own. A row whose
//! payload was joined from overflow pages can read wrong without any trace when a page of
//! its chain was overwritten with other bytes: where its index entry disagrees with it,
//! the entry's value is written in its place and the value read is registered in
//! `salvage_damaged_fields` (`disagrees_with_index`).

use std::collections::{BTreeSet, HashSet};

use pager::{decode_cell, BtreeWalk, SchemaKind, TextEncoding, TreeItem, Value};
use reconstruct::{DamageReason, TableStatus};

use crate::evidence::Evidence;
use crate::ledger::Ledger;
use crate::output::{quote, Output, SqlValue};
use crate::tables::Tables;

/// Checks the spilled rows of every recovered table against the table's indexes in the
/// source, and corrects each value an index entry contradicts. Returns the values corrected.
pub fn cross_check(
    evidence: &Evidence<'_>,
    out: &Output,
    tables: &mut Tables,
    ledger: &mut Ledger,
    taken: &BTreeSet<String>,
) -> rusqlite::Result<u64> {
    let enc = evidence.encoding();
    let mut corrected = 0;
    for t in tables.iter_mut() {
        let Some(shape) = &t.shape else { continue };
        if t.spilled_rowids.is_empty() || shape.without_rowid || t.status != TableStatus::Recovered
        {
            continue;
        }
        let spilled: HashSet<i64> = t.spilled_rowids.iter().copied().collect();
        let indexes: Vec<(String, pager::PageNo, Option<String>)> = evidence
            .schema
            .rows
            .iter()
            .filter(|r| r.kind == SchemaKind::Index && r.tbl_name.eq_ignore_ascii_case(&t.name))
            .filter_map(|r| Some((r.name.clone(), r.rootpage?, r.sql.clone())))
            .collect();
        if indexes.is_empty() {
            continue;
        }
        let table_sql = evidence
            .schema
            .rows
            .iter()
            .find(|r| r.kind == SchemaKind::Table && r.name.eq_ignore_ascii_case(&t.name))
            .and_then(|r| r.sql.as_deref());
        let mut damaged_rows = BTreeSet::new();
        for index in crate::rebuild::partial::index_keys(table_sql, &indexes) {
            for item in BtreeWalk::new(&evidence.db, index.root).flatten() {
                let TreeItem::Cell(cell) = item else { continue };
                let Ok(entry) = decode_cell(&evidence.db, &cell) else {
                    continue;
                };
                // Only an entry read whole from its own pages is a witness.
                if !entry.complete || !entry.findings.is_empty() {
                    continue;
                }
                let Some((Value::Integer(rowid), keys)) = entry.values.split_last() else {
                    continue;
                };
                if !spilled.contains(rowid) {
                    continue;
                }
                for (column, value) in index.columns.iter().zip(keys) {
                    let Some(column) = column else { continue };
                    if correct(out, enc, &t.name, *rowid, column, value, ledger, taken)? {
                        corrected += 1;
                        damaged_rows.insert(*rowid);
                    }
                }
            }
        }
        t.loss.damaged_rows += damaged_rows.len() as u64;
    }
    Ok(corrected)
}

/// Compares one column of one row with its index entry's value; when they disagree,
/// writes the entry's value and registers the value read. Whether it corrected anything.
#[allow(clippy::too_many_arguments)]
fn correct(
    out: &Output,
    enc: TextEncoding,
    table: &str,
    rowid: i64,
    column: &str,
    value: &Value,
    ledger: &mut Ledger,
    taken: &BTreeSet<String>,
) -> rusqlite::Result<bool> {
    let witness = SqlValue::from_value(value, enc);
    let read: Option<(bool, rusqlite::types::Value)> = out
        .conn
        .query_row(
            &format!(
                "SELECT {c} IS ?2, {c} FROM {t} WHERE rowid = ?1",
                c = quote(column),
                t = quote(table)
            ),
            rusqlite::params![rowid, witness],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .ok();
    let Some((false, original)) = read else {
        return Ok(false);
    };
    let written = out.conn.execute(
        &format!(
            "UPDATE {} SET {} = ?2 WHERE rowid = ?1",
            quote(table),
            quote(column)
        ),
        rusqlite::params![rowid, witness],
    );
    if written.is_err() {
        ledger.warnings.push(format!(
            "row {rowid} of `{table}` disagrees with its index entry in `{column}`, and the output refused the index's value: the value read is kept"
        ));
        return Ok(false);
    }
    ledger.damaged_fields.keep_read(
        out,
        table,
        rowid,
        column,
        DamageReason::DisagreesWithIndex,
        original,
        taken,
    )?;
    Ok(true)
}
