//! The source's indexes as evidence: which indexes a table has and the columns they key
//! on (worked out by SQLite from the schema's own statements), and which of them witness
//! every row of the table.

use pager::{PageNo, SchemaKind};
use reconstruct::IndexKeys;
use rusqlite::Connection;

use super::Evidence;

/// The indexes of `table` in the source's schema, with the columns they key on (see
/// [`index_keys`]).
pub fn table_indexes(evidence: &Evidence<'_>, table: &str) -> Vec<IndexKeys> {
    let rows = &evidence.schema.rows;
    let indexes: Vec<(String, PageNo, Option<String>)> = rows
        .iter()
        .filter(|r| r.kind == SchemaKind::Index && r.tbl_name.eq_ignore_ascii_case(table))
        .filter_map(|r| Some((r.name.clone(), r.rootpage?, r.sql.clone())))
        .collect();
    let table_sql = rows
        .iter()
        .find(|r| r.kind == SchemaKind::Table && r.name.eq_ignore_ascii_case(table))
        .and_then(|r| r.sql.as_deref());
    let mut keys = index_keys(table_sql, &indexes);
    // Below schema format 4 (SQLite 3.0's file format, which SQLite still writes when
    // asked) SQLite reads a key declared DESC as ASC: the index is in ascending order.
    if evidence.db.header().schema_format < 4 {
        for k in &mut keys {
            k.desc.fill(false);
        }
    }
    keys
}

/// The columns each index keys on, with their order and collation, worked out by SQLite
/// itself on a scratch in-memory database holding only the table and its indexes
/// (automatic ones included). An index SQLite cannot parse there keeps its root (its
/// entries still prove rows) and names no column.
pub fn index_keys(
    table_sql: Option<&str>,
    indexes: &[(String, PageNo, Option<String>)],
) -> Vec<IndexKeys> {
    let scratch = Connection::open_in_memory().ok().filter(|c| {
        table_sql.is_some_and(|sql| {
            crate::base::output::create_statement(c, sql, pager::SchemaKind::Table).is_ok()
        })
    });
    indexes
        .iter()
        .map(|(name, root, sql)| {
            let keys: Vec<(Option<String>, bool, Option<String>)> = scratch
                .as_ref()
                // An automatic index (UNIQUE, PRIMARY KEY) has no SQL: the table's own
                // CREATE statement made it, under the same name, on the scratch database.
                .filter(|c| {
                    sql.as_deref()
                        .is_none_or(|sql| {
                            crate::base::output::create_statement(c, sql, pager::SchemaKind::Index).is_ok()
                        })
                })
                .and_then(|c| {
                    let mut stmt = c
                        .prepare(
                            "SELECT name, desc, coll FROM pragma_index_xinfo(?1) WHERE key = 1 ORDER BY seqno",
                        )
                        .ok()?;
                    let keys = stmt
                        .query_map([name], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
                        .ok()?;
                    keys.collect::<Result<Vec<_>, _>>().ok()
                })
                .unwrap_or_default();
            IndexKeys {
                name: name.as_str().into(),
                root: *root,
                binary: keys.iter().all(|(_, _, coll)| {
                    coll.as_deref().is_some_and(|c| c.eq_ignore_ascii_case("BINARY"))
                }),
                desc: keys.iter().map(|k| k.1).collect(),
                columns: keys.into_iter().map(|k| k.0.map(Into::into)).collect(),
            }
        })
        .collect()
}
/// The indexes of `table` whose entries witness every row: a partial index (`WHERE`)
/// holds only some, and is no witness that a row is not the table's.
pub fn witnesses(evidence: &Evidence<'_>, table: &str) -> Vec<IndexKeys> {
    let partial = |name: &str| {
        evidence.schema.rows.iter().any(|r| {
            r.name.eq_ignore_ascii_case(name)
                && r.sql
                    .as_deref()
                    .is_some_and(|sql| sql.to_ascii_uppercase().contains("WHERE"))
        })
    };
    table_indexes(evidence, table)
        .into_iter()
        .filter(|i| !partial(&i.name))
        .collect()
}
