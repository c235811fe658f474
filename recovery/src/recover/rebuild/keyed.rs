//! A damaged table's bounds taken in: the lost rows its index entries and rowid-keyed
//! text copies prove are rebuilt as partial rows, and its copies keyed by a column
//! (Chroma's documents, under their embedding's id) fill those rows or prove more.

use std::collections::{BTreeMap, BTreeSet};

use pager::Value;
use reconstruct::{Bounded, PartialRow, ResolvedCopy};

use super::partial::{self, Inserted};
use crate::base::output::{quote, Output, SqlValue};
use crate::recover::evidence::Evidence;
use crate::recover::ledger::Ledger;
use crate::recover::tables::Tables;

/// What taking bounds in needs.
pub struct Context<'c, 's> {
    pub evidence: &'c Evidence<'s>,
    pub out: &'c Output,
    pub taken: &'c BTreeSet<String>,
    pub copies: &'c [ResolvedCopy],
    /// Write the partial rows (otherwise they are only counted).
    pub write: bool,
}

impl<'c, 's> Context<'c, 's> {
    /// The rows of a full-text copy in the source: its rowid, and what it gives back of
    /// its row.
    fn copy_rows<'a>(
        &'a self,
        copy: &'a ResolvedCopy,
    ) -> impl Iterator<Item = (i64, Vec<(String, Value)>)> + use<'a, 'c, 's> {
        copy.rows(&self.evidence.db)
            .map(|row| (row.rowid, copy.row_values(&row)))
    }
}

/// Takes one table's bounds in, and writes the partial rows its evidence proves (when
/// `cx.write`), registered in the partial rows' registry.
pub fn take_bounds(
    cx: &Context<'_, '_>,
    mut b: Bounded,
    tables: &mut Tables,
    ledger: &mut Ledger,
    registry: &mut Option<String>,
) -> rusqlite::Result<()> {
    let Some(t) = tables.get(b.table) else {
        return Ok(());
    };
    let (name, rejected) = (
        t.name.clone(),
        t.loss.rejected.saturating_sub(t.loss.rejected_unproven),
    );
    let keyed: Vec<&ResolvedCopy> = cx
        .copies
        .iter()
        .filter(|c| c.copy.key.is_some() && c.copy.table.eq_ignore_ascii_case(&name))
        .collect();
    for copy in &keyed {
        copy.fill_keyed(&mut b.partial, cx.copy_rows(copy));
    }
    cx.out.conn.execute_batch("BEGIN")?;
    let done = (|| {
        let mut done = Inserted::default();
        if cx.write {
            done = partial::insert(
                cx.out,
                cx.evidence.encoding(),
                &name,
                b.partial.iter().map(|(rowid, row)| (Some(*rowid), row)),
                registry,
                cx.taken,
            )?;
        }
        let mut unkeyed = 0u64;
        for copy in &keyed {
            // A refused row (in lost_and_found) is not in the output either: with any, a
            // copy that no index entry places proves nothing.
            if rejected > 0 {
                ledger.warnings.push(format!(
                    "`{name}` refused {rejected} rows (kept in lost_and_found): copies in `{}` that no index entry places are not used, since they may stand for those rows",
                    copy.copy.fts
                ));
                continue;
            }
            let (n, more) = rows_from_keyed_copy(cx, &name, copy, &b.partial, registry)?;
            unkeyed += n;
            done.written += more.written;
            done.refused += more.refused;
            done.refused_rows.extend(more.refused_rows);
        }
        Ok::<_, rusqlite::Error>((done, unkeyed))
    })();
    let (done, unkeyed) = match done {
        Ok(d) => d,
        Err(e) => {
            let _ = cx.out.conn.execute_batch("ROLLBACK");
            return Err(e);
        }
    };
    cx.out.conn.execute_batch("COMMIT")?;
    b.bounds.add_text_proof(unkeyed, rejected);
    if let Some(t) = tables.get_mut(b.table) {
        t.bounds = Some(b.bounds);
        t.loss.partial_rows = done.written;
        t.loss.partial_refused = done.refused;
        t.proven_lost.extend(done.refused_rows);
    }
    Ok(())
}

/// Copies keyed by a column whose row is neither in the output nor proven by an index
/// entry (`partial`): each proves a lost row whose rowid is unknown. Counted, and (when
/// writing) rebuilt under a new rowid as they are read: what is held is the table's keys
/// (8 bytes a row), never the copies' text.
fn rows_from_keyed_copy(
    cx: &Context<'_, '_>,
    table: &str,
    copy: &ResolvedCopy,
    partial: &BTreeMap<i64, PartialRow>,
    registry: &mut Option<String>,
) -> rusqlite::Result<(u64, Inserted)> {
    let Some(key) = copy.copy.key.clone() else {
        return Ok((0, Inserted::default()));
    };
    let enc = cx.evidence.encoding();
    // The keys the table holds, in one pass (no index on the key is needed).
    let mut sql = format!(
        "SELECT {} FROM {} WHERE 1",
        quote(&key),
        quote(&copy.copy.table)
    );
    for (i, (c, _)) in copy.copy.when.iter().enumerate() {
        sql.push_str(&format!(" AND {} = ?{}", quote(c), i + 1));
    }
    let when: Vec<SqlValue<'_>> = copy
        .copy
        .when
        .iter()
        .map(|(_, v)| SqlValue::from_value(v, enc))
        .collect();
    let params: Vec<&dyn rusqlite::ToSql> =
        when.iter().map(|v| v as &dyn rusqlite::ToSql).collect();
    let mut held: Vec<i64> = {
        let mut stmt = cx.out.conn.prepare(&sql)?;
        let keys = stmt.query_map(params.as_slice(), |r| {
            r.get::<_, Option<i64>>(0).or(Ok(None))
        })?;
        keys.filter_map(|k| k.ok().flatten()).collect()
    };
    held.extend(
        partial
            .values()
            .filter(|row| copy.stands_for(row))
            .filter_map(|row| match row.values.get(&key) {
                Some(Value::Integer(k)) => Some(*k),
                _ => None,
            }),
    );
    held.sort_unstable();
    let (mut proven, mut done) = (0u64, Inserted::default());
    let mut batch: Vec<PartialRow> = Vec::new();
    let mut flush = |batch: &mut Vec<PartialRow>, done: &mut Inserted| -> rusqlite::Result<()> {
        let more = partial::insert(
            cx.out,
            enc,
            table,
            batch.iter().map(|row| (None, row)),
            registry,
            cx.taken,
        )?;
        batch.clear();
        done.written += more.written;
        done.refused += more.refused;
        Ok(())
    };
    for (k, values) in cx.copy_rows(copy) {
        if held.binary_search(&k).is_ok() {
            continue;
        }
        proven += 1;
        if !cx.write {
            continue;
        }
        let mut row = PartialRow::default();
        row.values.insert(key.as_str().into(), Value::Integer(k));
        row.add_text(copy, values);
        batch.push(row);
        if batch.len() >= 1024 {
            flush(&mut batch, &mut done)?;
        }
    }
    flush(&mut batch, &mut done)?;
    Ok((proven, done))
}
