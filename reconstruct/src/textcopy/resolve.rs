//! Which full-text tables hold a copy of another table's text in this database: learnt
//! from the schema's triggers and from the profiles, then resolved against the source
//! (where the copy's rows are) and the columns the tables really have, spelt as the
//! tables spell them ([`Columns`]: the output database answers).
//!
//! A trigger is evidence only when it makes a faithful copy: an `AFTER INSERT` trigger
//! copies the new row's columns under a rowid taken from the row (a stable one: the
//! INTEGER PRIMARY KEY, which VACUUM never renumbers, or a NOT NULL integer column);
//! `AFTER DELETE` and `AFTER UPDATE` triggers on the same table, without `WHEN` and for
//! every copied column, keep the copy in step (otherwise deleted rows and old text would
//! come back); and no trigger on another table writes to the same full-text table.

use std::collections::BTreeMap;

use pager::{PageNo, SchemaKind};

use super::{read_trigger, TextCopy, TriggerEvent, TriggerInfo, TriggerInsert};
use crate::partial::ResolvedCopy;
use crate::shape::{Affinity, TableShape};
use crate::vtab::Content;

/// The column names a table really has, in order (virtual tables included), as the
/// database that holds them reports them.
pub trait Columns {
    /// The columns of `table`, or why they cannot be read.
    fn columns(&self, table: &str) -> Result<Vec<String>, String>;
}

/// The text copies the schema's triggers and the profiles state, resolved; and one
/// sentence for each stated copy that cannot be used.
pub fn resolve(
    schema: &pager::Schema,
    out: &impl Columns,
    profile_copies: Vec<TextCopy>,
    shapes: &[TableShape],
) -> (Vec<ResolvedCopy>, Vec<String>) {
    let shape = |table: &str| shapes.iter().find(|s| s.name.eq_ignore_ascii_case(table));
    let rowid_alias = |table: &str| {
        let shape = shape(table)?;
        Some(shape.columns.get(shape.rowid_alias()?)?.name.clone())
    };
    let find = |name: &str| {
        schema
            .rows
            .iter()
            .find(|r| r.name.eq_ignore_ascii_case(name))
    };
    let fts_sql = |name: &str| {
        find(name)
            .filter(|r| r.kind == SchemaKind::Table)
            .and_then(|r| r.sql.as_deref())
            .filter(|sql| crate::vtab::classify(sql) == Some(Content::Own))
    };
    let triggers: Vec<(String, TriggerInfo)> = schema
        .rows
        .iter()
        .filter(|r| r.kind == SchemaKind::Trigger)
        .filter_map(|r| Some((r.name.clone(), read_trigger(r.sql.as_deref()?)?)))
        .collect();
    let mut unusable = Vec::new();
    let mut copies = profile_copies;
    for (name, t) in &triggers {
        for insert in &t.copies {
            let Some(sql) = fts_sql(&insert.target) else {
                continue; // not a table that keeps text: an index of another kind
            };
            let copy = trigger_copy(&t.table, insert, sql, out, shape(&t.table), &triggers, name);
            match copy {
                Ok(c) => copies.push(c),
                Err(why) => unusable.push(format!(
                    "trigger `{name}` copies `{}` into full-text table `{}`, but the copy is not used: {why}",
                    t.table, insert.target
                )),
            }
        }
    }
    // A full-text table that triggers on two tables write to mixes their rows: it is
    // evidence for neither.
    let mut feeders: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (fts, table) in triggers
        .iter()
        .flat_map(|(_, t)| t.writes.iter().map(move |w| (w, &t.table)))
        .chain(copies.iter().map(|c| (&c.fts, &c.table)))
    {
        let tables = feeders.entry(fts.to_ascii_lowercase()).or_default();
        if !tables.iter().any(|t| t.eq_ignore_ascii_case(table)) {
            tables.push(table.clone());
        }
    }
    let mut resolved: Vec<ResolvedCopy> = Vec::new();
    for copy in copies {
        // Rows rebuilt from two copies keyed by a column could not be merged: one is used.
        let keyed_twice = copy.key.is_some()
            && resolved
                .iter()
                .any(|r| r.copy.key.is_some() && r.copy.table.eq_ignore_ascii_case(&copy.table));
        let shared = feeders
            .get(&copy.fts.to_ascii_lowercase())
            .filter(|tables| tables.len() > 1);
        let outcome = match shared {
            Some(tables) => Err(format!(
                "it is fed by {} tables ({})",
                tables.len(),
                tables.join(", ")
            )),
            None if keyed_twice => {
                Err("another copy keyed by a column of the same table is used".into())
            }
            None => resolve_one(&copy, out, &fts_sql, &rowid_alias, |n| {
                find(n).and_then(|r| r.rootpage)
            }),
        };
        match outcome {
            Ok(r) => resolved.push(r),
            Err(why) => unusable.push(format!(
                "the copy of `{}` in full-text table `{}` ({}) is not used: {why}",
                copy.table, copy.fts, copy.origin
            )),
        }
    }
    (resolved, unusable)
}

/// The copy an `AFTER INSERT` trigger's plain insert makes, if the other triggers keep it
/// in step and its rowid comes stably from the row.
fn trigger_copy(
    table: &str,
    insert: &TriggerInsert,
    fts_sql: &str,
    out: &impl Columns,
    shape: Option<&TableShape>,
    triggers: &[(String, TriggerInfo)],
    name: &str,
) -> Result<TextCopy, String> {
    let shape = shape.ok_or_else(|| format!("`{table}` is not recovered"))?;
    let fts_columns = out.columns(&insert.target)?;
    let table_columns: Vec<String> = shape.columns.iter().map(|c| c.name.clone()).collect();
    // FTS3/4 also call the rowid `docid`; a real column of that name is a column.
    let docid = matches!(
        crate::vtab::module(fts_sql).as_deref(),
        Some("fts3" | "fts4")
    );
    let fts_rowid = |c: &str| {
        !has(&fts_columns, c)
            && (["rowid", "oid", "_rowid_"]
                .iter()
                .any(|n| n.eq_ignore_ascii_case(c))
                || (docid && c.eq_ignore_ascii_case("docid")))
    };
    let Some((_, key)) = insert.pairs.iter().find(|(to, _)| fts_rowid(to)) else {
        return Err("the full-text table chooses its own rowids, which name no row".into());
    };
    let alias = shape
        .rowid_alias()
        .and_then(|i| shape.columns.get(i))
        .map(|c| c.name.as_str());
    let key = row_key(key, &table_columns, alias)
        .ok_or_else(|| format!("`{table}` has no column `{key}`"))?;
    match &key {
        None if alias.is_none() => {
            return Err(format!(
                "`{table}` has no INTEGER PRIMARY KEY: VACUUM may renumber its rowids, and the copy would not follow"
            ))
        }
        Some(k) => {
            let column = shape.columns.iter().find(|c| c.name == *k);
            if !column.is_some_and(|c| c.not_null && c.affinity() == Affinity::Integer) {
                return Err(format!(
                    "its rowid comes from `{k}`, which is not a NOT NULL integer column: a row without one has a rowid of the full-text table's choosing"
                ));
            }
        }
        None => {}
    }
    let columns: Vec<(String, String)> = insert
        .pairs
        .iter()
        .filter(|(to, _)| !fts_rowid(to))
        .map(|(to, from)| (from.clone(), to.clone()))
        .collect();
    for (event, what) in [
        (TriggerEvent::Delete, "DELETE"),
        (TriggerEvent::Update, "UPDATE"),
    ] {
        let kept = triggers.iter().any(|(_, t)| {
            t.event == event
                && t.after
                && !t.when
                && t.table.eq_ignore_ascii_case(table)
                && t.writes.iter().any(|w| w.eq_ignore_ascii_case(&insert.target))
                // `UPDATE OF` must cover every copied column and the key.
                && columns
                    .iter()
                    .map(|(from, _)| from)
                    .chain(key.iter())
                    .all(|c| t.update_of.is_empty() || has(&t.update_of, c))
        });
        if !kept {
            return Err(format!(
                "no AFTER {what} trigger on `{table}` keeps it in step for every row and copied column"
            ));
        }
    }
    Ok(TextCopy {
        fts: insert.target.clone(),
        table: table.to_string(),
        key,
        when: Vec::new(),
        columns,
        origin: format!("trigger {name}"),
    })
}

/// What a column name of a table stands for as a copy's key: `Some(None)` the rowid (a
/// rowid name that is no real column, or the INTEGER PRIMARY KEY), `Some(Some(column))`
/// another column, spelt as the table spells it; `None` nothing.
fn row_key(name: &str, columns: &[String], alias: Option<&str>) -> Option<Option<String>> {
    if alias.is_some_and(|a| a.eq_ignore_ascii_case(name)) {
        return Some(None);
    }
    if let Some(column) = spelt(columns, name) {
        return Some(Some(column));
    }
    ["rowid", "oid", "_rowid_"]
        .iter()
        .any(|n| n.eq_ignore_ascii_case(name))
        .then_some(None)
}

fn has(columns: &[String], name: &str) -> bool {
    spelt(columns, name).is_some()
}

/// `name` as `columns` spell it.
fn spelt(columns: &[String], name: &str) -> Option<String> {
    columns
        .iter()
        .find(|c| c.eq_ignore_ascii_case(name))
        .cloned()
}

fn resolve_one<'s>(
    copy: &TextCopy,
    out: &impl Columns,
    fts_sql: &impl Fn(&str) -> Option<&'s str>,
    rowid_alias: &impl Fn(&str) -> Option<String>,
    root: impl Fn(&str) -> Option<PageNo>,
) -> Result<ResolvedCopy, String> {
    let sql = fts_sql(&copy.fts).ok_or("it is not a full-text table that stores its own text")?;
    if crate::vtab::has_option(sql, "compress") {
        return Err("it stores its text compressed".into());
    }
    let content = format!("{}_content", copy.fts);
    let content_root = root(&content).ok_or_else(|| format!("`{content}` is not in the schema"))?;
    let fts_columns = out.columns(&copy.fts)?;
    let table_columns = out.columns(&copy.table)?;
    let missing = |c: &str| format!("`{}` has no column `{c}`", copy.table);
    let alias = rowid_alias(&copy.table);
    let key = match &copy.key {
        None => None,
        Some(k) => row_key(k, &table_columns, alias.as_deref()).ok_or_else(|| missing(k))?,
    };
    if key.is_none() && alias.is_none() {
        return Err(format!(
            "`{}` has no INTEGER PRIMARY KEY: VACUUM may renumber its rowids, and the copy would not follow",
            copy.table
        ));
    }
    let when = copy
        .when
        .iter()
        .map(|(c, v)| {
            Ok((
                spelt(&table_columns, c).ok_or_else(|| missing(c))?,
                v.clone(),
            ))
        })
        .collect::<Result<Vec<_>, String>>()?;
    let mut columns = Vec::new();
    let mut positions = Vec::new();
    for (column, fts_column) in &copy.columns {
        let column = spelt(&table_columns, column).ok_or_else(|| missing(column))?;
        let at = fts_columns
            .iter()
            .position(|c| c.eq_ignore_ascii_case(fts_column))
            .ok_or_else(|| format!("`{}` has no column `{fts_column}`", copy.fts))?;
        if columns.iter().any(|(c, _): &(String, String)| *c == column) {
            return Err(format!("`{column}` is copied twice"));
        }
        columns.push((column.clone(), fts_column.clone()));
        positions.push((column, at));
    }
    Ok(ResolvedCopy {
        copy: TextCopy {
            key,
            when,
            columns,
            ..copy.clone()
        },
        content_root,
        positions,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_names_the_rowid_only_where_no_real_column_does() {
        let cols = |c: &[&str]| c.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let docs = cols(&["id", "docid", "K", "rowid"]);
        // A real column is a column, whatever its name.
        assert_eq!(
            row_key("docid", &docs, Some("id")),
            Some(Some("docid".into()))
        );
        assert_eq!(
            row_key("ROWID", &docs, Some("id")),
            Some(Some("rowid".into()))
        );
        // Spelt as the table spells it.
        assert_eq!(row_key("k", &docs, Some("id")), Some(Some("K".into())));
        // The INTEGER PRIMARY KEY and the rowid's own names are the rowid.
        assert_eq!(row_key("Id", &docs, Some("id")), Some(None));
        assert_eq!(row_key("oid", &docs, None), Some(None));
        assert_eq!(row_key("docid", &cols(&["id"]), None), None);
        assert_eq!(row_key("nothing", &docs, None), None);
    }
}
