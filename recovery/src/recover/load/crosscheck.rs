//! A table's rows against its own index entries. Each entry of an index holds a second
//! copy of its row's keyed columns and the row's rowid, on pages of its own. A row whose
//! payload was joined from overflow pages can read wrong without any trace when a page of
//! its chain was overwritten with other bytes: where its index entry disagrees with it,
//! the entry's value is written in its place and the value read is registered in
//! `salvage_damaged_fields` (`disagrees_with_index`).

use std::collections::{BTreeSet, HashMap, HashSet};

use pager::Value;
use reconstruct::{DamageReason, TableStatus};

use crate::base::output::{quote, Output, SqlValue};
use crate::recover::damaged::Field;
use crate::recover::evidence::Evidence;
use crate::recover::ledger::Ledger;
use crate::recover::plan::Work;
use crate::recover::tables::Tables;

/// Checks the spilled rows of every recovered table against the table's indexes in the
/// source, and corrects each value an index entry contradicts. Returns the values corrected.
///
/// Each spilled row is looked up in each index by its own key (a search down one path of
/// the index b-tree); only a row its index does not hold under its key is looked for in
/// the whole index, for the entry that names its rowid. A row read right costs one search.
pub fn cross_check(
    evidence: &Evidence<'_>,
    out: &Output,
    tables: &mut Tables,
    ledger: &mut Ledger,
    taken: &BTreeSet<String>,
) -> rusqlite::Result<u64> {
    // The searches read in one transaction: a statement per row would take and drop the
    // file's lock each time.
    out.conn.execute_batch("BEGIN")?;
    let mut corrected = 0;
    for t in tables.iter_mut() {
        // Read here only: let go of once the table is checked.
        let kept_values = std::mem::take(&mut t.spilled_values);
        let spilled = std::mem::take(&mut t.spilled_rowids);
        let Some(shape) = &t.shape else { continue };
        if spilled.is_empty() || shape.without_rowid || t.status != TableStatus::Recovered {
            continue;
        }
        let Some(rowid_name) = shape.rowid_name() else {
            continue;
        };
        let spilled = spilled.settled();
        let mut damaged_rows = BTreeSet::new();
        for (index, columns) in checkable_indexes(evidence, &t.name) {
            // Each column's position in the shape, where the bulk writer kept values by.
            let positions: Option<Vec<usize>> =
                columns.iter().map(|c| column_position(shape, c)).collect();
            let alias = shape.rowid_alias();
            // Rows whose key the index does not hold, with no damage on the search path.
            let mut disagreeing: HashSet<i64> = HashSet::new();
            for rowid in spilled.iter() {
                // The values as the bulk writer wrote them, unless a correction of this
                // run has changed the row since.
                let kept = positions
                    .as_deref()
                    .filter(|_| !damaged_rows.contains(&rowid))
                    .and_then(|p| kept_of(kept_values.get(&rowid)?, p, alias, rowid));
                // Every test run (debug builds) checks them against what SQLite reads back.
                #[cfg(debug_assertions)]
                if let (Some(kept), Ok(Some(stored))) = (
                    &kept,
                    stored_values(out, &t.name, rowid_name, rowid, &columns),
                ) {
                    // A column of REAL affinity reads an integer its record holds as
                    // the nearest real: 2^53 + 1 kept is 2^53 read back.
                    let read_back = |k: &Value, s: &Value| match (k, s) {
                        (Value::Integer(i), Value::Real(r)) => *i as f64 == *r,
                        _ => pager::search::compare(
                            std::slice::from_ref(k),
                            std::slice::from_ref(s),
                            &[],
                        )
                        .is_eq(),
                    };
                    debug_assert!(
                        kept.len() == stored.len()
                            && kept.iter().zip(&stored).all(|(k, s)| read_back(k, s)),
                        "row {rowid} of `{}`: kept {kept:?}, stored {stored:?}",
                        t.name
                    );
                }
                let key = match kept {
                    Some(key) => Some(key),
                    None => stored_values(out, &t.name, rowid_name, rowid, &columns)?,
                };
                let Some(mut key) = key else {
                    continue;
                };
                key.push(Value::Integer(rowid));
                if pager::search::index_holds(&evidence.db, index.root, &key, &index.desc)
                    == Some(false)
                {
                    disagreeing.insert(rowid);
                }
            }
            if disagreeing.is_empty() {
                continue;
            }
            // Corrections write, each on its own: with no rollback journal, a statement
            // that fails inside a transaction cannot be undone, and COMMIT would keep
            // what it half wrote.
            out.conn.execute_batch("COMMIT")?;
            let corrections = Correcting {
                evidence,
                out,
                taken,
                table: &t.name,
                rowid_name,
            }
            .all(
                index.root,
                &columns,
                &disagreeing,
                ledger,
                &mut damaged_rows,
            );
            out.conn.execute_batch("BEGIN")?;
            corrected += corrections?;
        }
        t.loss.damaged_rows += damaged_rows.len() as u64;
    }
    out.conn.execute_batch("COMMIT")?;
    Ok(corrected)
}

/// The rows SQLite's check of the source says an index lacks (`named`: `(rowid, index)`,
/// from [`reconstruct::rows_missing_from_index`]; `complete`: whether the check listed
/// every problem) checked against every index of their table as a spilled row is: a
/// record header that lies (serial types rewritten so that the record still reads whole)
/// shows only there. Only a row whose own page vouches that it is the table's is checked
/// ([`reconstruct::rows_in_place`]): a page of another table's rows would take that
/// table's values for its index's. Each value an index entry contradicts is corrected
/// and registered. Returns the values corrected.
pub fn named_rows(
    evidence: &Evidence<'_>,
    work: &mut Work,
    (named, complete): (&[(i64, String)], bool),
) -> rusqlite::Result<u64> {
    let mut by_table: HashMap<usize, BTreeSet<i64>> = HashMap::new();
    for (rowid, index) in named {
        let run = evidence.schema.table_of_index(index).and_then(|table| {
            work.tables
                .iter()
                .position(|t| t.name.eq_ignore_ascii_case(table))
        });
        if let Some(at) = run {
            by_table.entry(at).or_default().insert(*rowid);
        }
    }
    let mut any = false;
    for (t, run) in work.tables.iter_mut().enumerate() {
        let (Some(named), Some(root)) = (by_table.get(&t), run.root) else {
            continue;
        };
        let cells = pager::BtreeWalk::new(&evidence.db, root)
            .flatten()
            .filter_map(|item| match item {
                pager::TreeItem::Cell(c) => Some((c.location.page, c.cell.rowid()?)),
                _ => None,
            });
        for rowid in reconstruct::rows_in_place(cells, named, complete) {
            run.spilled_rowids.insert(rowid);
            any = true;
        }
    }
    if !any {
        return Ok(0);
    }
    let taken = work.names.taken().clone();
    let corrected = cross_check(
        evidence,
        &work.out,
        &mut work.tables,
        &mut work.ledger,
        &taken,
    )?;
    if let Some(name) = &work.ledger.damaged_fields.name {
        work.names.take(name);
    }
    Ok(corrected)
}

/// One table's rows corrected from its index entries: what the corrections read and
/// where they write.
struct Correcting<'a, 's> {
    /// The evidence, its index b-trees searched.
    evidence: &'a Evidence<'s>,
    /// The output.
    out: &'a Output,
    /// The names the output's tables take.
    taken: &'a BTreeSet<String>,
    /// The table.
    table: &'a str,
    /// How SQL names its rowid.
    rowid_name: &'a str,
}

impl Correcting<'_, '_> {
    /// Writes, for each row in `disagreeing`, the values its entry in the index at `root`
    /// holds where they differ from the row's (`columns`, in the index's key order).
    /// Returns the values corrected; each corrected row is added to `damaged_rows`.
    fn all(
        &self,
        root: pager::PageNo,
        columns: &[String],
        disagreeing: &HashSet<i64>,
        ledger: &mut Ledger,
        damaged_rows: &mut BTreeSet<i64>,
    ) -> rusqlite::Result<u64> {
        let mut corrected = 0;
        // Their entries, wherever the index holds them.
        for (keys, rowid) in pager::search::index_entries(&self.evidence.db, root) {
            if !disagreeing.contains(&rowid) {
                continue;
            }
            for (column, value) in columns.iter().zip(&keys) {
                if self.one(rowid, column, value, ledger)? {
                    corrected += 1;
                    damaged_rows.insert(rowid);
                }
            }
        }
        Ok(corrected)
    }

    /// Compares one column of one row with its index entry's value; when they disagree,
    /// writes the entry's value and registers the value read. Whether it corrected
    /// anything.
    fn one(
        &self,
        rowid: i64,
        column: &str,
        value: &Value,
        ledger: &mut Ledger,
    ) -> rusqlite::Result<bool> {
        let (out, table, rowid_name) = (self.out, self.table, self.rowid_name);
        let witness = SqlValue::from_value(value, self.evidence.encoding());
        let read: Option<(bool, rusqlite::types::Value)> = out
            .conn
            .query_row(
                &format!(
                    "SELECT {c} IS ?2, {c} FROM {t} WHERE {r} = ?1",
                    c = quote(column),
                    t = quote(table),
                    r = quote(rowid_name)
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
                "UPDATE {} SET {} = ?2 WHERE {} = ?1",
                quote(table),
                quote(column),
                quote(rowid_name)
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
            Field {
                table,
                rowid,
                column,
            },
            DamageReason::DisagreesWithIndex,
            original,
            self.taken,
        )?;
        Ok(true)
    }
}

/// The indexes of `table` a search can check rows against, with their columns: indexes
/// on plain columns with BINARY collation (a search compares keys as bytes).
fn checkable_indexes(
    evidence: &Evidence<'_>,
    table: &str,
) -> Vec<(reconstruct::IndexKeys, Vec<String>)> {
    crate::recover::evidence::indexes::table_indexes(evidence, table)
        .into_iter()
        .filter_map(|index| {
            let columns = index
                .columns
                .iter()
                .map(|c| c.as_deref().map(str::to_string))
                .collect::<Option<Vec<String>>>()
                .filter(|c| index.binary && !c.is_empty())?;
            Some((index, columns))
        })
        .collect()
}

/// The columns (positions in `shape`) the cross-check reads of a table's spilled rows:
/// those its checkable indexes key on.
pub fn keyed_columns(evidence: &Evidence<'_>, shape: &reconstruct::TableShape) -> Vec<usize> {
    let mut keyed: Vec<usize> = checkable_indexes(evidence, &shape.name)
        .iter()
        .flat_map(|(_, columns)| columns)
        .filter_map(|c| column_position(shape, c))
        .collect();
    keyed.sort_unstable();
    keyed.dedup();
    keyed
}

/// The position in `shape` of the column named `name` (SQL names ignore case).
fn column_position(shape: &reconstruct::TableShape, name: &str) -> Option<usize> {
    shape
        .columns
        .iter()
        .position(|s| s.name.eq_ignore_ascii_case(name))
}

/// The values of the columns at `positions` among those the bulk writer kept of row
/// `rowid` (the rowid alias is the rowid); `None` when one was not kept.
fn kept_of(
    kept: &[(usize, Value)],
    positions: &[usize],
    alias: Option<usize>,
    rowid: i64,
) -> Option<Vec<Value>> {
    positions
        .iter()
        .map(|&p| {
            if Some(p) == alias {
                return Some(Value::Integer(rowid));
            }
            kept.iter().find(|(c, _)| *c == p).map(|(_, v)| v.clone())
        })
        .collect()
}

/// The values of `columns` in the output row `rowid`, as stored: text as its bytes in
/// the database's encoding (the output's, which is the source's).
fn stored_values(
    out: &Output,
    table: &str,
    rowid_name: &str,
    rowid: i64,
    columns: &[String],
) -> rusqlite::Result<Option<Vec<Value>>> {
    let select: Vec<String> = columns
        .iter()
        .map(|c| format!("typeof({0}), CAST({0} AS BLOB), {0}", quote(c)))
        .collect();
    let sql = format!(
        "SELECT {} FROM {} WHERE {} = ?1",
        select.join(", "),
        quote(table),
        quote(rowid_name)
    );
    let row = out.conn.prepare_cached(&sql)?.query_row([rowid], |r| {
        (0..columns.len())
            .map(|i| {
                let kind: String = r.get(3 * i)?;
                Ok(match kind.as_str() {
                    "null" => Value::Null,
                    "integer" => Value::Integer(r.get(3 * i + 2)?),
                    "real" => Value::Real(r.get(3 * i + 2)?),
                    "text" => Value::Text(r.get(3 * i + 1)?),
                    _ => Value::Blob(r.get(3 * i + 1)?),
                })
            })
            .collect::<rusqlite::Result<Vec<Value>>>()
    });
    match row {
        Ok(values) => Ok(Some(values)),
        Err(rusqlite::Error::QueryReturnedNoRows) => Ok(None),
        Err(e) => Err(e),
    }
}
