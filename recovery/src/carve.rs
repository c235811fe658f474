//! `recover --carve`: deleted records from the source's free space (see the `carve` crate),
//! written to `salvage_carved` beside the recovered tables, never into them. A carved
//! record that is a live row as recovered (same rowid and values) is not deleted and is
//! left out; one whose rowid a live row holds with other values is an older version of it.

use std::collections::{BTreeMap, BTreeSet};

use carve::{carve_page, Carved, PageRole, Template};
use pager::{Database, PageClass, PageNo, Survey, Value};
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
    /// Per table with carved records, a view of them with the table's column names
    /// (`salvage_carved_TABLE`), by table.
    #[serde(default)]
    pub views: BTreeMap<String, String>,
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

/// A table the carver knows: its template, name, and how a carved record of it is told
/// from a live row.
struct Known {
    template: Template,
    name: String,
    live: LiveRows,
}

/// Where the live rows a carved record is compared with are.
enum LiveRows {
    /// A recovered table: the output's columns in record order (the rowid alias `NULL`).
    Table(Vec<String>),
    /// `sqlite_schema`: the schema rows read.
    Schema,
    /// A dropped table: none is live.
    Dropped,
}

/// The shape of `sqlite_schema` ("Storage Of The SQL Database Schema").
fn schema_template() -> Option<Template> {
    use reconstruct::{Column, ColumnDefault, ColumnKind, TableShape};
    let col = |name: &str, decl: &str| Column {
        name: name.into(),
        decl_type: decl.into(),
        not_null: false,
        pk: 0,
        kind: ColumnKind::Ordinary,
        default: ColumnDefault::None,
    };
    Template::of(&TableShape {
        name: "sqlite_schema".into(),
        columns: vec![
            col("type", "TEXT"),
            col("name", "TEXT"),
            col("tbl_name", "TEXT"),
            col("rootpage", "INTEGER"),
            col("sql", "TEXT"),
        ],
        without_rowid: false,
        strict: false,
    })
}

/// How each page is carved: a live table page's free space as its table's (`by_root`
/// gives the template of each root), freed and unclaimed pages whole.
fn roles(survey: &Survey, by_root: &BTreeMap<PageNo, usize>) -> Vec<(PageNo, PageRole)> {
    let mut out = Vec::new();
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
        out.extend(
            (first.get()..first.get().saturating_add(pages))
                .filter_map(PageNo::new)
                .map(|p| (p, role)),
        );
    }
    out
}

/// The tables dropped from the schema whose CREATE statements are still in its free space
/// (or on freed pages): their shapes, as SQLite parses the statements.
fn dropped_tables(
    db: &Database<'_>,
    survey: &Survey,
    schema: &Template,
    live: &BTreeSet<String>,
) -> Vec<Template> {
    let by_root = BTreeMap::from([(PageNo::FIRST, 0)]);
    let mut out: Vec<Template> = Vec::new();
    for (page, role) in roles(survey, &by_root) {
        if matches!(role, PageRole::Live(None)) {
            continue;
        }
        for c in carve_page(db, page, role, std::slice::from_ref(schema)) {
            let [Value::Text(kind), Value::Text(name), _, root, Value::Text(sql)] =
                c.values.as_slice()
            else {
                continue;
            };
            let name = String::from_utf8_lossy(name).into_owned();
            if kind.as_slice() != b"table"
                || live.contains(&name.to_lowercase())
                || name.to_lowercase().starts_with("sqlite_")
                || out.iter().any(|t| t.name.eq_ignore_ascii_case(&name))
            {
                continue;
            }
            let sql = String::from_utf8_lossy(sql);
            let Ok((shape, _)) = crate::output::scratch_shape(&sql) else {
                continue;
            };
            if let Some(mut t) = Template::of(&shape) {
                t.name = name;
                t.dropped = true;
                t.only_on = lone_leaf(db, survey, root);
                out.push(t);
            }
        }
    }
    out
}

/// The root page of a dropped table, when it was freed as a table leaf: the table had no
/// other page. (A root that a live table has taken since says nothing.)
fn lone_leaf(db: &Database<'_>, survey: &Survey, root: &Value) -> Option<PageNo> {
    let Value::Integer(n) = root else {
        return None;
    };
    let page = PageNo::new(u32::try_from(*n).ok()?)?;
    let freed = survey.page_map.class(page) == Some(PageClass::FreelistLeaf);
    let leaf = db
        .page(page)?
        .btree_header()
        .is_ok_and(|h| h.page_type() == pager::PageType::TableLeaf);
    (freed && leaf).then_some(page)
}

/// Carves every table page's free space and every freed page, and writes what is found.
/// `read` is told the bytes of each page read (to keep the mapped evidence's resident
/// pages bounded).
pub fn carve_into(
    db: &Database<'_>,
    out: &Output,
    tables: &Tables,
    survey: &Survey,
    taken: &BTreeSet<String>,
    read: &mut dyn FnMut(u64),
) -> rusqlite::Result<CarvedReport> {
    let mut known: Vec<Known> = Vec::new();
    let mut by_root: BTreeMap<PageNo, usize> = BTreeMap::new();
    let schema = schema_template();
    if let Some(t) = &schema {
        by_root.insert(PageNo::FIRST, known.len());
        known.push(Known {
            template: t.clone(),
            name: "sqlite_schema".into(),
            live: LiveRows::Schema,
        });
    }
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
            live: LiveRows::Table(record_columns),
        });
    }
    let live_names: BTreeSet<String> = survey
        .schema
        .rows
        .iter()
        .map(|r| r.name.to_lowercase())
        .chain(tables.iter().map(|t| t.name.to_lowercase()))
        .collect();
    if let Some(schema) = &schema {
        for template in dropped_tables(db, survey, schema, &live_names) {
            known.push(Known {
                name: template.name.clone(),
                template,
                live: LiveRows::Dropped,
            });
        }
    }
    let templates: Vec<Template> = known.iter().map(|k| k.template.clone()).collect();
    let mut carved: Vec<Carved> = Vec::new();
    let page_size = u64::from(db.page_size().get());
    for (page, role) in roles(survey, &by_root) {
        carved.extend(carve_page(db, page, role, &templates));
        read(page_size);
    }
    // The table is made even when nothing is found: a script reads an empty table.
    let mut report = CarvedReport::default();
    let mut seen: BTreeSet<(Option<usize>, Option<i64>, String)> = BTreeSet::new();
    let mut rows: Vec<(Carved, bool)> = Vec::new();
    for c in carved {
        if !seen.insert((c.table, c.rowid, format!("{:?}", c.values))) {
            report.duplicates += 1;
            continue;
        }
        let k = c.table.and_then(|i| known.get(i));
        let state = match k {
            Some(Known {
                name,
                live: LiveRows::Table(columns),
                ..
            }) => Some(live(out, name, columns, &c, db)?),
            Some(Known {
                live: LiveRows::Schema,
                ..
            }) => Some(schema_row_live(survey, &c)),
            _ => None,
        };
        match state {
            Some(Live::Same) => report.live_copies += 1,
            Some(Live::Older) => rows.push((c, true)),
            _ => rows.push((c, false)),
        }
    }
    let name = crate::output::registry_name("salvage_carved", taken);
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
        crate::output::insert_positional(
            &out.conn,
            &name,
            &[
                "tbl",
                "source",
                "page",
                "offset",
                "confidence",
                "status",
                "rowid",
                "nfield",
            ],
            &values,
        )?;
        *counts.entry((table, c.source.name())).or_default() += 1;
        report.rows += 1;
        report.previous_versions += u64::from(*older);
    }
    out.conn.execute_batch("COMMIT")?;
    let mut taken = taken.clone();
    taken.insert(name.to_lowercase());
    for k in known
        .iter()
        .filter(|k| counts.keys().any(|(t, _)| t.as_deref() == Some(&k.name)))
    {
        let view = crate::output::registry_name(&format!("salvage_carved_{}", k.name), &taken);
        taken.insert(view.to_lowercase());
        // The rowid alias is NULL in the record: the view reads it from the rowid.
        let columns: String = k
            .template
            .slots
            .iter()
            .zip(&k.template.names)
            .enumerate()
            .map(|(i, (s, n))| {
                let value = if s.rowid_alias {
                    "rowid".to_string()
                } else {
                    format!("c{i}")
                };
                format!(", {value} AS {}", quote(n))
            })
            .collect();
        out.conn.execute(
            &format!(
                "CREATE VIEW {} AS SELECT source, page, offset, confidence, status, rowid{columns} \
                 FROM {} WHERE tbl = ?1 AND nfield = {}",
                quote(&view),
                quote(&name),
                k.template.slots.len()
            )
            .replace("?1", &format!("'{}'", k.name.replace('\'', "''"))),
            [],
        )?;
        report.views.insert(k.name.clone(), view);
    }
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

/// Compares a carved record of `table` (whose columns in record order are `columns`) with
/// its live rows on the output.
fn live(
    out: &Output,
    table: &str,
    columns: &[String],
    c: &Carved,
    db: &Database<'_>,
) -> rusqlite::Result<Live> {
    let enc = db.encoding();
    let values: Vec<SqlValue<'_>> = c
        .values
        .iter()
        .map(|v| SqlValue::from_value(v, enc))
        .collect();
    let same: Vec<String> = columns
        .iter()
        .enumerate()
        .map(|(i, col)| format!("{col} IS ?{}", i + 2))
        .collect();
    let table = quote(table);
    let found = |sql: String, rowid: Option<i64>| -> rusqlite::Result<bool> {
        let mut params: Vec<SqlValue<'_>> = vec![rowid.map_or(SqlValue::Null, SqlValue::Integer)];
        params.extend(values.iter().cloned());
        out.conn
            .prepare_cached(&sql)?
            .exists(rusqlite::params_from_iter(params.iter()))
    };
    if columns.len() != c.values.len() {
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

/// Whether a carved schema record is a schema row as read: same name and statement.
fn schema_row_live(survey: &Survey, c: &Carved) -> Live {
    let [_, Value::Text(name), _, _, sql] = c.values.as_slice() else {
        return Live::No;
    };
    let sql = match sql {
        Value::Text(s) => Some(String::from_utf8_lossy(s).into_owned()),
        _ => None,
    };
    let name = String::from_utf8_lossy(name);
    let row = survey.schema.rows.iter().find(|r| r.name == name);
    match row {
        Some(r) if r.sql == sql => Live::Same,
        Some(_) => Live::Older,
        None => Live::No,
    }
}
