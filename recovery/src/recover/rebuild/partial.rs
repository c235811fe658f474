//! Partial rows: a table row is lost, but index entries naming its rowid survive, or a
//! full-text table's own copy of its text does (`reconstruct::textcopy`). Each carries
//! some of the row's values, so the row is rebuilt from them (every other column NULL)
//! into its table and registered in `salvage_partial_rows`. The rows stay counted as
//! lost: their other columns are gone.

use std::collections::BTreeSet;

use pager::{TextEncoding, Value};
use reconstruct::PartialRow;

use crate::base::output::{quote, Output, SqlValue};

/// What inserting one table's partial rows did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Inserted {
    /// Rows written into the table (each also registered).
    pub written: u64,
    /// Rows the table's constraints refused (a NOT NULL column no index covers).
    pub refused: u64,
    /// The known values of the refused rows whose rowid is known, by rowid: a
    /// placeholder made for one of them takes them.
    pub refused_rows: Vec<(i64, reconstruct::KnownValues)>,
}

/// Inserts `rows` into `table` and registers every one in `registry` (created on first
/// use), also those the table refuses: their known values stay on record there. A row
/// without a rowid (only its key is known) gets a new one; refused, it is registered
/// with a NULL rowid.
pub fn insert<'r>(
    out: &Output,
    enc: TextEncoding,
    table: &str,
    rows: impl IntoIterator<Item = (Option<i64>, &'r PartialRow)>,
    registry: &mut Option<String>,
    taken: &BTreeSet<String>,
) -> rusqlite::Result<Inserted> {
    let mut done = Inserted::default();
    // A column whose default is the clock (or any expression) is NULL in a rebuilt row,
    // not the time of this run.
    let shape = out.shape(table, false)?;
    let varying = shape.varying_defaults();
    // A column may take the name `rowid`; a table whose columns take every name of the
    // rowid takes only rows whose rowid is not known (the others' values stay on record).
    let rowid_name = shape.rowid_name().map(quote);
    for (rowid, row) in rows {
        if row.values.is_empty() {
            continue;
        }
        let unknown: Vec<String> = varying
            .iter()
            .filter(|v| !row.values.keys().any(|k| k.eq_ignore_ascii_case(v)))
            .map(|v| v.to_string())
            .collect();
        let columns: Vec<&str> = row
            .values
            .keys()
            .chain(unknown.iter().map(String::as_str))
            .collect();
        let sql = format!(
            // OR ABORT overrides any ON CONFLICT clause of the (untrusted) schema: a
            // conflict refuses this row only, never replaces a recovered one or rolls back.
            // A NULL rowid lets SQLite choose one.
            "INSERT OR ABORT INTO {}({}{}) VALUES ({}{})",
            quote(table),
            rowid_name
                .as_deref()
                .map_or(String::new(), |r| format!("{r}, ")),
            columns
                .iter()
                .map(|c| quote(c))
                .collect::<Vec<_>>()
                .join(", "),
            if rowid_name.is_some() { "?1, " } else { "" },
            (2..columns.len() + 2)
                .map(|i| format!("?{i}"))
                .collect::<Vec<_>>()
                .join(", ")
        );
        let values: Vec<SqlValue<'_>> = row
            .values
            .values()
            .map(|v| SqlValue::from_value(v, enc))
            .chain(unknown.iter().map(|_| SqlValue::Null))
            .collect();
        let mut params: Vec<&dyn rusqlite::ToSql> = vec![&rowid];
        params.extend(values.iter().map(|v| v as &dyn rusqlite::ToSql));
        // A refused row leaves nothing behind: the statement is its own savepoint.
        let placeable = rowid_name.is_some() || rowid.is_none();
        // Rows of one table mostly know the same columns: their statement is compiled once.
        let in_table = placeable
            && matches!(
                out.conn
                    .prepare_cached(&sql)
                    .and_then(|mut insert| insert.execute(params.as_slice())),
                Ok(1)
            );
        let rowid = rowid.or_else(|| in_table.then(|| out.conn.last_insert_rowid()));
        if in_table {
            done.written += 1;
        } else {
            done.refused += 1;
            if let Some(rowid) = rowid {
                done.refused_rows.push((rowid, row.values.clone()));
            }
        }
        let name = match registry {
            Some(name) => name.clone(),
            None => {
                let name = out.registry_name("salvage_partial_rows", taken);
                out.conn.execute_batch(&format!(
                    "CREATE TABLE {}(tbl TEXT NOT NULL, rowid INTEGER, columns_known TEXT NOT NULL, source_index TEXT NOT NULL, in_table INTEGER NOT NULL, known_values TEXT NOT NULL)",
                    quote(&name)
                ))?;
                registry.insert(name).clone()
            }
        };
        let known: serde_json::Map<String, serde_json::Value> = row
            .values
            .iter()
            .map(|(c, v)| (c.to_string(), json_value(v, enc)))
            .collect();
        out.conn
            .prepare_cached(&format!(
                "INSERT INTO {}(tbl, rowid, columns_known, source_index, in_table, known_values) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                quote(&name)
            ))?
            .execute(rusqlite::params![
                table,
                rowid,
                row.values.keys().collect::<Vec<_>>().join(","),
                row.sources.iter().map(|s| &**s).collect::<Vec<_>>().join(","),
                in_table,
                serde_json::Value::Object(known).to_string()
            ])?;
    }
    Ok(done)
}

/// A value as JSON: text decoded from the database encoding (its bytes in hex when they
/// are not valid text), a BLOB as `{"blob_hex": …}`.
fn json_value(v: &Value, enc: TextEncoding) -> serde_json::Value {
    let hex = |b: &[u8]| b.iter().map(|x| format!("{x:02x}")).collect::<String>();
    match v {
        Value::Null => serde_json::Value::Null,
        Value::Integer(i) => (*i).into(),
        Value::Real(r) => {
            serde_json::Number::from_f64(*r).map_or(serde_json::Value::Null, Into::into)
        }
        Value::Text(t) => enc
            .decode(t)
            .map_or_else(|| serde_json::json!({ "text_hex": hex(t) }), Into::into),
        Value::Blob(b) => serde_json::json!({ "blob_hex": hex(b) }),
    }
}
