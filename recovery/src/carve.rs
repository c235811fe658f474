//! `recover --carve`: deleted records from the source's free space (see the `carve` crate),
//! written to `salvage_carved` beside the recovered tables, never into them. A carved
//! record that is a live row as recovered (same rowid and values) is not deleted and is
//! left out; one whose rowid a live row holds with other values is an older version of it.

use std::collections::{BTreeMap, BTreeSet};

use carve::{carve_page, Carved, PageRole, Template};
use pager::{Database, PageClass, PageNo, Survey};
use serde::{Deserialize, Serialize};

use crate::output::{quote, Output, SqlValue};
use crate::tables::Tables;

/// What the carving found, for the report.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CarvedReport {
    /// The table holding the carved records in the output (`salvage_carved`).
    pub registry: Option<String>,
    /// Records written to it.
    pub rows: u64,
    /// Per table the records are attributed to (`null`: unattributed) and source.
    pub by_source: Vec<CarvedCount>,
    /// Of the rows written, older versions of a live row (its rowid, other values).
    pub previous_versions: u64,
    /// Records found that are live rows as recovered: not deleted, not written.
    pub live_copies: u64,
    /// Records found more than once (the same table, rowid and values): written once.
    pub duplicates: u64,
}

/// Carved records of one table from one source.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CarvedCount {
    /// The table they are attributed to; `null` when unattributed.
    pub table: Option<String>,
    /// Where they were found: `freeblock`, `unallocated` or `freelist`.
    pub source: String,
    /// How many.
    pub rows: u64,
}

/// A table the carver knows: its template, name and record order on the output.
struct Known {
    template: Template,
    name: String,
    /// The output's columns in record order (the rowid alias as `NULL`).
    record_columns: Vec<String>,
}

/// Carves every table leaf's free space and every freed page, and writes what is found.
pub fn carve_into(
    db: &Database<'_>,
    out: &Output,
    tables: &Tables,
    survey: &Survey,
    taken: &BTreeSet<String>,
) -> rusqlite::Result<CarvedReport> {
    let mut known: Vec<Known> = Vec::new();
    let mut by_root: BTreeMap<PageNo, usize> = BTreeMap::new();
    for (t, shape) in tables.filled() {
        let Some(template) = Template::of(shape) else {
            continue;
        };
        let alias = shape.rowid_alias();
        let record_columns = shape
            .record_order()
            .into_iter()
            .filter_map(|i| {
                let c = shape.columns.get(i)?;
                Some(if alias == Some(i) {
                    "NULL".to_string()
                } else {
                    quote(&c.name)
                })
            })
            .collect();
        if let Some(root) = t.root {
            by_root.insert(root, known.len());
        }
        known.push(Known {
            template,
            name: t.name.clone(),
            record_columns,
        });
    }
    let templates: Vec<Template> = known.iter().map(|k| k.template.clone()).collect();
    let mut carved: Vec<Carved> = Vec::new();
    for (first, pages, class, owner) in survey.page_map.runs() {
        let role = match class {
            PageClass::TableLeaf | PageClass::TableInterior => match owner {
                Some(root) => PageRole::Live(by_root.get(&root).copied()),
                // Orphan leaves' rows are recovered as rows (their tables or lost_and_found).
                None => continue,
            },
            PageClass::FreelistLeaf | PageClass::FreelistTrunk => PageRole::Free,
            PageClass::Unrecognised if owner.is_none() => PageRole::Free,
            _ => continue,
        };
        for n in first.get()..first.get().saturating_add(pages) {
            if let Some(no) = PageNo::new(n) {
                carved.extend(carve_page(db, no, role, &templates));
            }
        }
    }
    let mut report = CarvedReport::default();
    if carved.is_empty() {
        return Ok(report);
    }
    let mut seen: BTreeSet<(Option<usize>, Option<i64>, String)> = BTreeSet::new();
    let mut rows: Vec<(Carved, bool)> = Vec::new();
    for c in carved {
        if !seen.insert((c.table, c.rowid, format!("{:?}", c.values))) {
            report.duplicates += 1;
            continue;
        }
        let k = c.table.and_then(|i| known.get(i));
        match k.map(|k| live(out, k, &c, db)).transpose()? {
            Some(Live::Same) => report.live_copies += 1,
            Some(Live::Older) => rows.push((c, true)),
            _ => rows.push((c, false)),
        }
    }
    let name = std::iter::once("salvage_carved".to_string())
        .chain((1..).map(|i| format!("salvage_carved_{i}")))
        .find(|n| !taken.contains(n))
        .unwrap_or_else(|| "salvage_carved".into());
    let width = rows.iter().map(|(c, _)| c.values.len()).max().unwrap_or(0);
    let cols: Vec<String> = (0..width).map(|i| format!("c{i}")).collect();
    out.conn.execute_batch(&format!(
        "CREATE TABLE {}(tbl TEXT, source TEXT, page INTEGER, offset INTEGER, \
         confidence REAL, status TEXT, rowid INTEGER, nfield INTEGER{}{})",
        quote(&name),
        if cols.is_empty() { "" } else { ", " },
        cols.join(", ")
    ))?;
    out.conn.execute_batch("BEGIN")?;
    let mut counts: BTreeMap<(Option<String>, &'static str), u64> = BTreeMap::new();
    for (c, older) in &rows {
        let table = c.table.and_then(|i| known.get(i)).map(|k| k.name.clone());
        let mut values: Vec<SqlValue<'_>> = vec![
            table
                .as_deref()
                .map_or(SqlValue::Null, |t| SqlValue::Text(t.into())),
            SqlValue::Text(c.source.name().into()),
            SqlValue::Integer(i64::from(c.page.get())),
            SqlValue::Integer(i64::from(c.offset)),
            SqlValue::Real((c.confidence() * 100.0).round() / 100.0),
            SqlValue::Text(
                if *older {
                    "previous version"
                } else {
                    "deleted"
                }
                .into(),
            ),
            c.rowid.map_or(SqlValue::Null, SqlValue::Integer),
            SqlValue::Integer(c.values.len() as i64),
        ];
        values.extend(
            c.values
                .iter()
                .map(|v| SqlValue::from_value(v, db.encoding())),
        );
        let ph: Vec<String> = (1..=values.len()).map(|i| format!("?{i}")).collect();
        let named: Vec<String> = [
            "tbl",
            "source",
            "page",
            "offset",
            "confidence",
            "status",
            "rowid",
            "nfield",
        ]
        .iter()
        .map(|s| s.to_string())
        .chain((0..c.values.len()).map(|i| format!("c{i}")))
        .collect();
        out.conn
            .prepare_cached(&format!(
                "INSERT INTO {}({}) VALUES ({})",
                quote(&name),
                named.join(", "),
                ph.join(", ")
            ))?
            .execute(rusqlite::params_from_iter(values.iter()))?;
        *counts.entry((table, c.source.name())).or_default() += 1;
        report.rows += 1;
        report.previous_versions += u64::from(*older);
    }
    out.conn.execute_batch("COMMIT")?;
    report.registry = Some(name);
    report.by_source = counts
        .into_iter()
        .map(|((table, source), rows)| CarvedCount {
            table,
            source: source.to_string(),
            rows,
        })
        .collect();
    Ok(report)
}

/// How a carved record stands to the live rows of its table.
enum Live {
    /// A live row has its rowid (or, without one, its values) and its values.
    Same,
    /// A live row has its rowid with other values.
    Older,
    /// No live row is it.
    No,
}

/// Compares a carved record with its table's live rows on the output.
fn live(out: &Output, k: &Known, c: &Carved, db: &Database<'_>) -> rusqlite::Result<Live> {
    let enc = db.encoding();
    let values: Vec<SqlValue<'_>> = c
        .values
        .iter()
        .map(|v| SqlValue::from_value(v, enc))
        .collect();
    let same: Vec<String> = k
        .record_columns
        .iter()
        .enumerate()
        .map(|(i, col)| format!("{col} IS ?{}", i + 2))
        .collect();
    let table = quote(&k.name);
    let found = |sql: String, rowid: Option<i64>| -> rusqlite::Result<bool> {
        let mut params: Vec<SqlValue<'_>> = vec![rowid.map_or(SqlValue::Null, SqlValue::Integer)];
        params.extend(values.iter().cloned());
        out.conn
            .prepare_cached(&sql)?
            .exists(rusqlite::params_from_iter(params.iter()))
    };
    if k.record_columns.len() != c.values.len() {
        return Ok(Live::No);
    }
    match c.rowid {
        Some(rowid) => {
            let exists = out
                .conn
                .prepare_cached(&format!("SELECT 1 FROM {table} WHERE rowid = ?1"))?
                .exists([rowid])?;
            if !exists {
                return Ok(Live::No);
            }
            let sql = format!(
                "SELECT 1 FROM {table} WHERE rowid = ?1 AND {}",
                same.join(" AND ")
            );
            Ok(if found(sql, Some(rowid))? {
                Live::Same
            } else {
                Live::Older
            })
        }
        None => {
            let sql = format!(
                "SELECT 1 FROM {table} WHERE ?1 IS NULL AND {}",
                same.join(" AND ")
            );
            Ok(if found(sql, None)? {
                Live::Same
            } else {
                Live::No
            })
        }
    }
}
