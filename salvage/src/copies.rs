//! Which full-text tables hold a copy of another table's text in this database
//! (`reconstruct::textcopy`): learnt from the schema's copying triggers and from the
//! profiles, then resolved against the source (where the copy's rows are) and the output
//! (which columns exist).

use pager::{PageNo, SchemaKind};
use reconstruct::{is_rowid_name, TextCopy};

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
    let own_content = |name: &str| {
        find(name)
            .filter(|r| r.kind == SchemaKind::Table)
            .and_then(|r| r.sql.as_deref())
            .and_then(crate::fts::classify)
            == Some(Content::Own)
    };
    let mut copies = profile_copies;
    for row in schema.rows.iter().filter(|r| r.kind == SchemaKind::Trigger) {
        let Some(sql) = row.sql.as_deref() else {
            continue;
        };
        for insert in reconstruct::trigger_inserts(sql) {
            if !own_content(&insert.target) {
                continue;
            }
            let Some((_, key)) = insert.pairs.iter().find(|(to, _)| is_rowid_name(to)) else {
                continue; // the full-text table chose its own rowids: they name nothing
            };
            let alias = rowid_alias(&insert.table);
            let key = (!is_rowid_name(key)
                && !alias
                    .as_deref()
                    .is_some_and(|a| a.eq_ignore_ascii_case(key)))
            .then(|| key.clone());
            copies.push(TextCopy {
                fts: insert.target.clone(),
                table: insert.table.clone(),
                key,
                when: Vec::new(),
                columns: insert
                    .pairs
                    .iter()
                    .filter(|(to, _)| !is_rowid_name(to))
                    .map(|(to, from)| (from.clone(), to.clone()))
                    .collect(),
                origin: format!("trigger {}", row.name),
            });
        }
    }
    let mut resolved = Vec::new();
    let mut unusable = Vec::new();
    for copy in copies {
        match resolve_one(&copy, out, &own_content, |n| {
            find(n).and_then(|r| r.rootpage)
        }) {
            Ok(r) => resolved.push(r),
            Err(why) => unusable.push(format!(
                "the copy of `{}` in full-text table `{}` ({}) is not used: {why}",
                copy.table, copy.fts, copy.origin
            )),
        }
    }
    (resolved, unusable)
}

fn resolve_one(
    copy: &TextCopy,
    out: &Output,
    own_content: &impl Fn(&str) -> bool,
    root: impl Fn(&str) -> Option<PageNo>,
) -> Result<ResolvedCopy, String> {
    if !own_content(&copy.fts) {
        return Err("it is not a full-text table that stores its own text".into());
    }
    let content = format!("{}_content", copy.fts);
    let content_root = root(&content).ok_or_else(|| format!("`{content}` is not in the schema"))?;
    let fts_columns = out.columns(&copy.fts).map_err(|e| e.to_string())?;
    let table_columns = out.columns(&copy.table).map_err(|e| e.to_string())?;
    let has = |cols: &[String], c: &str| cols.iter().any(|x| x.eq_ignore_ascii_case(c));
    for c in copy
        .key
        .iter()
        .chain(copy.when.iter().map(|(c, _)| c))
        .chain(copy.columns.iter().map(|(c, _)| c))
    {
        if !has(&table_columns, c) {
            return Err(format!("`{}` has no column `{c}`", copy.table));
        }
    }
    let positions = copy
        .columns
        .iter()
        .map(|(column, fts_column)| {
            fts_columns
                .iter()
                .position(|c| c.eq_ignore_ascii_case(fts_column))
                .map(|at| (column.clone(), at))
                .ok_or_else(|| format!("`{}` has no column `{fts_column}`", copy.fts))
        })
        .collect::<Result<Vec<_>, String>>()?;
    Ok(ResolvedCopy {
        copy: copy.clone(),
        content_root,
        positions,
    })
}
