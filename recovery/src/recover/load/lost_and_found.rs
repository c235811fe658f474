//! `lost_and_found`: rows no table could be given (orphan page groups no evidence
//! attributes) and rows a table's constraints refused, laid out as SQLite's `.recover`
//! lays it out (`rootpgno, pgno, nfield, id, c0, c1, …`) so that its readers read ours.
//! A record of any width is kept: its first [`COLUMNS`] values as columns, the values
//! after them in one more column, `rest`, as a JSON array (see `docs/report.md`).

use std::collections::BTreeSet;

use pager::{Database, PageNo, TextEncoding};
use reconstruct::{OrphanGroup, RecoveredRow, RowEvent, TableRows};

use crate::base::output::{quote, Output, SqlValue};

/// Values of a record kept as columns of their own (`c0` … `c999`); SQLite allows a
/// table 2,000 columns, and a record may hold far more values.
pub const COLUMNS: usize = 1000;

/// The `lost_and_found` table of a run, created on first use.
#[derive(Debug, Default)]
pub struct LostAndFound {
    /// Its name in the output, once created (`lost_and_found`, or a free variant).
    pub name: Option<String>,
    /// Rows written to it.
    pub rows: u64,
    /// Of those, rows from unattributed orphan groups.
    pub orphan_rows: u64,
    /// Orphan rows it refused (a value too big for any table): not in the output.
    pub unwritable: u64,
    /// The most values a record kept in it holds.
    pub widest: u64,
}

impl LostAndFound {
    /// The table, created (or widened) to hold records of `width` values. `taken`: the
    /// names the schema uses.
    fn ensure(
        &mut self,
        out: &Output,
        width: usize,
        taken: &BTreeSet<String>,
    ) -> rusqlite::Result<String> {
        let rest = width > COLUMNS;
        let width = width.min(COLUMNS);
        if let Some(name) = &self.name {
            let has_rest = out.conn.query_row(
                "SELECT count(*) > 0 FROM pragma_table_info(?1) WHERE name = 'rest'",
                [name],
                |r| r.get::<_, bool>(0),
            )?;
            let cols_before_rest = usize::from(has_rest);
            let have: usize = out
                .conn
                .prepare(&format!("PRAGMA table_info({})", quote(name)))?
                .query_map([], |_| Ok(()))?
                .count();
            for i in have.saturating_sub(4 + cols_before_rest)..width {
                out.conn.execute_batch(&format!(
                    "ALTER TABLE {} ADD COLUMN {}",
                    quote(name),
                    quote(&format!("c{i}"))
                ))?;
            }
            if rest && !has_rest {
                out.conn
                    .execute_batch(&format!("ALTER TABLE {} ADD COLUMN rest", quote(name)))?;
            }
            return Ok(name.clone());
        }
        let name = std::iter::once("lost_and_found".to_string())
            .chain((0..).map(|i| format!("lost_and_found_{i}")))
            .find(|n| !taken.contains(n))
            .unwrap_or_else(|| "lost_and_found".into());
        let mut cols: Vec<String> = (0..width).map(|i| quote(&format!("c{i}"))).collect();
        if rest {
            cols.push("rest".into());
        }
        let sep = if cols.is_empty() { "" } else { ", " };
        out.conn.execute_batch(&format!(
            "CREATE TABLE {}(rootpgno INTEGER, pgno INTEGER, nfield INTEGER, id INTEGER{sep}{})",
            quote(&name),
            cols.join(", ")
        ))?;
        self.name = Some(name.clone());
        Ok(name)
    }

    /// Keeps one row, under the root page of the table it came from when known.
    pub fn keep(
        &mut self,
        out: &Output,
        enc: TextEncoding,
        root: Option<PageNo>,
        row: &RecoveredRow<'_>,
        taken: &BTreeSet<String>,
    ) -> rusqlite::Result<()> {
        let (record, _) = row.record();
        let name = self.ensure(out, record.len(), taken)?;
        let (columns, beyond) = record.split_at(record.len().min(COLUMNS));
        let mut names = vec![
            "rootpgno".to_string(),
            "pgno".into(),
            "nfield".into(),
            "id".into(),
        ];
        names.extend((0..columns.len()).map(|i| format!("c{i}")));
        let mut values: Vec<SqlValue<'_>> = vec![
            root.map_or(SqlValue::Null, |r| SqlValue::Integer(i64::from(r.get()))),
            SqlValue::Integer(i64::from(row.provenance.page().get())),
            SqlValue::Integer(record.len() as i64),
            row.rowid().map_or(SqlValue::Null, SqlValue::Integer),
        ];
        values.extend(columns.iter().map(|v| SqlValue::from_value(v, enc)));
        if !beyond.is_empty() {
            names.push("rest".into());
            values.push(SqlValue::Text(rest_json(beyond, enc).into()));
        }
        let quoted: Vec<String> = names.iter().map(|n| quote(n)).collect();
        let ph: Vec<String> = (1..=values.len()).map(|i| format!("?{i}")).collect();
        let sql = format!(
            "INSERT INTO {} ({}) VALUES ({})",
            quote(&name),
            quoted.join(", "),
            ph.join(", ")
        );
        out.conn
            .prepare_cached(&sql)?
            .execute(rusqlite::params_from_iter(values.iter()))?;
        self.rows += 1;
        self.widest = self.widest.max(record.len() as u64);
        Ok(())
    }

    /// Writes every row of the orphan groups no evidence gave a table.
    pub fn keep_orphans(
        &mut self,
        out: &Output,
        db: &Database<'_>,
        groups: &[OrphanGroup],
        taken: &BTreeSet<String>,
    ) -> rusqlite::Result<()> {
        if groups.is_empty() {
            return Ok(());
        }
        // First pass: the widest record decides the table's width.
        let width = TableRows::new(db, None, groups.iter())
            .filter_map(|e| match e {
                RowEvent::Row(r) => Some(r.record().0.len()),
                RowEvent::Unreadable { .. } => None,
            })
            .max()
            .unwrap_or(0);
        self.ensure(out, width, taken)?;
        out.conn.execute_batch("BEGIN")?;
        for event in TableRows::new(db, None, groups.iter()) {
            if let RowEvent::Row(row) = event {
                match self.keep(out, db.encoding(), None, &row, taken) {
                    Ok(()) => self.orphan_rows += 1,
                    Err(e) if crate::base::output::refuses_row(&e) => self.unwritable += 1,
                    Err(e) => return Err(e),
                }
            }
        }
        out.conn.execute_batch("COMMIT")
    }
}

/// The values of a record past its first [`COLUMNS`], as a JSON array: NULL, numbers and
/// text as JSON has them, a BLOB (and text not valid in its encoding) as an object
/// `{"blob": "<hex>"}` of its bytes.
fn rest_json(values: &[pager::Value], enc: TextEncoding) -> String {
    let hex = |b: &[u8]| b.iter().map(|x| format!("{x:02x}")).collect::<String>();
    let one = |v: &pager::Value| match v {
        pager::Value::Null => serde_json::Value::Null,
        pager::Value::Integer(n) => serde_json::Value::from(*n),
        pager::Value::Real(r) => serde_json::Number::from_f64(*r)
            .map_or(serde_json::Value::Null, serde_json::Value::Number),
        pager::Value::Text(t) => match enc.decode(t) {
            Some(s) => serde_json::Value::String(s),
            None => serde_json::json!({ "blob": hex(t) }),
        },
        pager::Value::Blob(b) => serde_json::json!({ "blob": hex(b) }),
    };
    serde_json::Value::Array(values.iter().map(one).collect()).to_string()
}
