//! Which full-text tables hold a copy of another table's text in this database
//! (`reconstruct::textcopy`): learnt from the schema's triggers and from the profiles,
//! then resolved against the source (where the copy's rows are) and the output (which
//! columns exist, spelt as the tables spell them).
//!
//! A trigger is evidence only when it makes a faithful copy: an `AFTER INSERT` trigger
//! copies the new row's columns under a rowid taken from the row, `AFTER DELETE` and
//! `AFTER UPDATE` triggers on the same table keep the copy in step (otherwise deleted rows
//! and old text would come back), and no other table feeds the same full-text table.

use std::collections::BTreeMap;

use pager::{PageNo, SchemaKind};
use reconstruct::{read_trigger, TextCopy, TriggerEvent, TriggerInfo};

use crate::fts::Content;
use crate::output::Output;
use crate::partial::ResolvedCopy;

/// The text copies the schema's triggers and the profiles state, resolved; and one
/// sentence for each stated copy that cannot be used.
pub fn resolve(
    schema: &pager::Schema,
    out: &Output,
    profile_copies: Vec<TextCopy>,
    rowid_alias: impl Fn(&str) -> Option<String>,
) -> (Vec<ResolvedCopy>, Vec<String>) {
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
            .filter(|sql| crate::fts::classify(sql) == Some(Content::Own))
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
            let copy = trigger_copy(&t.table, insert, sql, out, &rowid_alias, &triggers, name);
            match copy {
                Ok(c) => copies.push(c),
                Err(why) => unusable.push(format!(
                    "trigger `{name}` copies `{}` into full-text table `{}`, but the copy is not used: {why}",
                    t.table, insert.target
                )),
            }
        }
    }
    // A full-text table fed by two tables mixes their rows: it is evidence for neither.
    let mut feeders: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let insert_triggers = triggers
        .iter()
        .filter(|(_, t)| t.event == TriggerEvent::Insert);
    for (fts, table) in insert_triggers
        .flat_map(|(_, t)| t.writes.iter().map(move |w| (w, &t.table)))
        .chain(copies.iter().map(|c| (&c.fts, &c.table)))
    {
        let tables = feeders.entry(fts.to_ascii_lowercase()).or_default();
        if !tables.iter().any(|t| t.eq_ignore_ascii_case(table)) {
            tables.push(table.clone());
        }
    }
    let mut resolved = Vec::new();
    for copy in copies {
        let shared = feeders
            .get(&copy.fts.to_ascii_lowercase())
            .filter(|tables| tables.len() > 1);
        let outcome = match shared {
            Some(tables) => Err(format!(
                "it is fed by {} tables ({})",
                tables.len(),
                tables.join(", ")
            )),
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
/// in step and its rowid comes from the row.
fn trigger_copy(
    table: &str,
    insert: &reconstruct::TriggerInsert,
    fts_sql: &str,
    out: &Output,
    rowid_alias: &impl Fn(&str) -> Option<String>,
    triggers: &[(String, TriggerInfo)],
    name: &str,
) -> Result<TextCopy, String> {
    for (event, what) in [
        (TriggerEvent::Delete, "DELETE"),
        (TriggerEvent::Update, "UPDATE"),
    ] {
        let kept = triggers.iter().any(|(_, t)| {
            t.event == event
                && t.after
                && t.table.eq_ignore_ascii_case(table)
                && t.writes
                    .iter()
                    .any(|w| w.eq_ignore_ascii_case(&insert.target))
        });
        if !kept {
            return Err(format!(
                "no AFTER {what} trigger on `{table}` keeps it in step"
            ));
        }
    }
    let fts_columns = out.columns(&insert.target).map_err(|e| e.to_string())?;
    let table_columns = out.columns(table).map_err(|e| e.to_string())?;
    // FTS3/4 also call the rowid `docid`; a real column of that name is a column.
    let docid = matches!(
        crate::fts::module(fts_sql).as_deref(),
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
    let key = row_key(key, &table_columns, rowid_alias(table).as_deref())
        .ok_or_else(|| format!("`{table}` has no column `{key}`"))?;
    Ok(TextCopy {
        fts: insert.target.clone(),
        table: table.to_string(),
        key,
        when: Vec::new(),
        columns: insert
            .pairs
            .iter()
            .filter(|(to, _)| !fts_rowid(to))
            .map(|(to, from)| (from.clone(), to.clone()))
            .collect(),
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
    out: &Output,
    fts_sql: &impl Fn(&str) -> Option<&'s str>,
    rowid_alias: &impl Fn(&str) -> Option<String>,
    root: impl Fn(&str) -> Option<PageNo>,
) -> Result<ResolvedCopy, String> {
    let sql = fts_sql(&copy.fts).ok_or("it is not a full-text table that stores its own text")?;
    if crate::fts::has_option(sql, "compress") {
        return Err("it stores its text compressed".into());
    }
    let content = format!("{}_content", copy.fts);
    let content_root = root(&content).ok_or_else(|| format!("`{content}` is not in the schema"))?;
    let fts_columns = out.columns(&copy.fts).map_err(|e| e.to_string())?;
    let table_columns = out.columns(&copy.table).map_err(|e| e.to_string())?;
    let missing = |c: &str| format!("`{}` has no column `{c}`", copy.table);
    let key = match &copy.key {
        None => None,
        Some(k) => row_key(k, &table_columns, rowid_alias(&copy.table).as_deref())
            .ok_or_else(|| missing(k))?,
    };
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
