//! Naming a table whose schema row is lost from an index whose schema row survives.
//!
//! An index's CREATE statement names its table and the columns it keys on, and each of
//! its entries holds those columns' values and the rowid of its row. When the table's
//! own schema row is lost, its b-tree comes back as an inferred table (`c0, c1, …`); if
//! the rowids of the index entries are the rowids of that inferred table, the index names
//! it, and the values of its entries find which record position is which keyed column.
//! A match needs most entries' rows present and their values agreeing; otherwise the
//! table stays inferred.
//!
//! An application profile may also know the application's tables (their CREATE
//! statements, per schema version): an inferred table whose sampled records fit one known
//! table's columns, clearly better than any other's, takes its name and its statement.

use std::collections::{BTreeMap, BTreeSet};

use pager::{Database, PageNo, Value};

use crate::plan::InferredTable;
use crate::rows::{RowEvent, TableRows};
use crate::shape::{Affinity, TableShape};

/// Index entries sampled to map record positions to keyed columns.
const SAMPLE: usize = 64;

/// An index whose table's schema row is lost.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OrphanIndex {
    /// The index's name.
    pub name: String,
    /// The table its CREATE statement names.
    pub table: String,
    /// Its root page.
    pub root: PageNo,
    /// The columns it keys on, in order (see [`index_columns`]).
    pub columns: Vec<String>,
}

/// An inferred table the evidence names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Naming {
    /// Which inferred table (its position in the list given).
    pub inferred: usize,
    /// The table's name, from the index.
    pub table: String,
    /// The index that names it.
    pub index: String,
    /// Index entries read.
    pub entries: u64,
    /// Of those, entries whose rowid is a row of the inferred table.
    pub matched: u64,
    /// Record positions identified as keyed columns, by the values of sampled entries.
    pub columns: BTreeMap<usize, String>,
}

/// The column names of a `CREATE INDEX … ON table(columns)` statement, in key order;
/// `None` for an index on an expression (or a statement that does not parse that way).
pub fn index_columns(sql: &str) -> Option<Vec<String>> {
    // The first parenthesis opens the column list: `CREATE INDEX name ON table(`.
    let open = sql.find('(')?;
    let close = open + sql[open..].rfind(')')?;
    let list = &sql[open + 1..close];
    // A WHERE clause after the list (a partial index) lies beyond `close`, unless it
    // holds parentheses itself: then the list ends at the first ')' at depth 0.
    let mut depth = 0;
    let mut end = list.len();
    for (i, c) in list.char_indices() {
        match c {
            '(' => depth += 1,
            ')' if depth == 0 => {
                end = i;
                break;
            }
            ')' => depth -= 1,
            _ => {}
        }
    }
    let list = &list[..end];
    if list.contains('(') {
        return None;
    }
    list.split(',')
        .map(|term| {
            let term = term.trim_start();
            // A quoted name runs to its closing quote; a bare one to the first space.
            let close = match term.chars().next()? {
                '"' => Some('"'),
                '`' => Some('`'),
                '[' => Some(']'),
                '\'' => Some('\''),
                _ => None,
            };
            let name = match close {
                Some(q) => term.get(1..)?.split(q).next()?,
                None => term.split_whitespace().next()?,
            };
            (!name.is_empty()).then(|| name.to_string())
        })
        .collect()
}

/// Matches each orphan index against the inferred tables: the one holding the rows of
/// at least nine in ten of its entries is its table. Each inferred table and each table
/// name is given once; the index with the most entries decides first.
pub fn name_inferred(
    db: &Database<'_>,
    inferred: &[InferredTable],
    indexes: &[OrphanIndex],
) -> Vec<Naming> {
    if inferred.is_empty() || indexes.is_empty() {
        return Vec::new();
    }
    // Each inferred table's rows by rowid (records decoded on demand, for the sample).
    let rows: Vec<BTreeMap<i64, Vec<Value>>> = inferred
        .iter()
        .map(|t| {
            TableRows::new(db, None, t.groups.iter())
                .filter_map(|e| match e {
                    RowEvent::Row(r) => Some((r.rowid()?, r)),
                    RowEvent::Unreadable { .. } => None,
                })
                .map(|(rowid, r)| (rowid, r.record().0))
                .collect()
        })
        .collect();
    let mut entries: Vec<(usize, Entries)> = indexes
        .iter()
        .enumerate()
        .map(|(i, ix)| (i, pager::search::index_entries(db, ix.root).collect()))
        .collect();
    entries.sort_by_key(|(_, e)| std::cmp::Reverse(e.len()));
    let mut out: Vec<Naming> = Vec::new();
    for (i, list) in entries {
        let Some(ix) = indexes.get(i) else { continue };
        let taken = |t: usize, name: &str| {
            out.iter()
                .any(|n| n.inferred == t || n.table.eq_ignore_ascii_case(name))
        };
        let best = rows
            .iter()
            .enumerate()
            .filter(|(t, _)| !taken(*t, &ix.table))
            .map(|(t, r)| {
                (
                    t,
                    list.iter()
                        .filter(|(_, rowid)| r.contains_key(rowid))
                        .count(),
                )
            })
            .max_by_key(|(_, n)| *n);
        let Some((t, matched)) = best else { continue };
        if list.is_empty() || matched * 10 < list.len() * 9 {
            continue;
        }
        let Some(table_rows) = rows.get(t) else {
            continue;
        };
        let columns = map_columns(&ix.columns, &list, table_rows);
        out.push(Naming {
            inferred: t,
            table: ix.table.clone(),
            index: ix.name.clone(),
            entries: list.len() as u64,
            matched: matched as u64,
            columns,
        });
    }
    out
}

/// A table an application is known to create: its CREATE statement as SQLite stores it,
/// and the shape SQLite parsed from it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KnownTable {
    /// Where it is known from: "profile NAME".
    pub origin: String,
    /// The CREATE TABLE statement.
    pub sql: String,
    /// Its columns.
    pub shape: TableShape,
    /// The indexes the application makes on it: name and CREATE INDEX statement.
    pub indexes: Vec<(String, String)>,
}

/// An inferred table whose records fit a known table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KnownMatch {
    /// Which inferred table (its position in the list given).
    pub inferred: usize,
    /// Which known table (its position in the list given).
    pub known: usize,
    /// Records sampled.
    pub sampled: u32,
    /// Of those, records that fit the known table's columns.
    pub fitting: u32,
    /// The next best known table of another name and how many sampled records fit it.
    pub runner_up: Option<(String, u32)>,
}

/// Records sampled from each inferred table to match it against known tables.
const KNOWN_SAMPLE: usize = 256;

/// Matches inferred tables against the tables an application is known to create. A known
/// table fits when nine sampled records in ten fit its columns (`TableShape::fit`: the
/// rowid alias stored as NULL, NOT NULL columns holding a value, values their affinity
/// admits, a short record only where ALTER TABLE ADD COLUMN could have made it) and nine
/// values in ten that are not NULL have the storage class its declared types call for
/// (see [`typed_as_declared`]; a table's records are evidence of its types); of its
/// versions (known tables of one name), the best fitting one stands for the name. A known
/// table of fewer than two columns besides its INTEGER PRIMARY KEY is never matched (its
/// records are next to no evidence: a full-text table's content shadow table fits any
/// such (key, text) table). An
/// inferred table takes a name only when it fits clearly better than any other name (by a
/// point of `fit`'s score per record). `fixed` gives inferred tables already named (by an
/// index): those only take a known version of that name. `taken` names tables that exist;
/// they are never given again, and each name goes to one inferred table, the one whose
/// records fit it best.
pub fn match_known(
    db: &Database<'_>,
    inferred: &[InferredTable],
    known: &[KnownTable],
    fixed: &BTreeMap<usize, String>,
    taken: &dyn Fn(&str) -> bool,
) -> Vec<KnownMatch> {
    let samples = sample_inferred(db, inferred);
    match_sampled(&samples, inferred, known, fixed, taken, 2)
}

/// The records [`match_known`] samples from each inferred table (in `inferred`'s order),
/// read once for as many matches as a caller runs.
pub fn sample_inferred(db: &Database<'_>, inferred: &[InferredTable]) -> Vec<Vec<Vec<Value>>> {
    inferred.iter().map(|t| sample_records(db, t)).collect()
}

/// [`match_known`] over records sampled already ([`sample_inferred`]), matching known
/// tables of at least `least_columns` columns besides their INTEGER PRIMARY KEY
/// ([`match_known`] takes 2: fewer is next to no evidence, unless the known tables are
/// those of an application the database is known to be, as the caller decides).
pub fn match_sampled(
    samples: &[Vec<Vec<Value>>],
    inferred: &[InferredTable],
    known: &[KnownTable],
    fixed: &BTreeMap<usize, String>,
    taken: &dyn Fn(&str) -> bool,
    least_columns: usize,
) -> Vec<KnownMatch> {
    let candidates: Vec<(usize, &KnownTable)> = known
        .iter()
        .enumerate()
        // A record of one value besides the rowid is next to no evidence of its table.
        .filter(|(_, k)| {
            !k.shape.without_rowid
                && k.shape.columns.len() - usize::from(k.shape.rowid_alias().is_some())
                    >= least_columns.max(1)
        })
        .collect();
    if candidates.is_empty() {
        return Vec::new();
    }
    // Each match with its score per sampled record and its cells.
    let mut found: Vec<(KnownMatch, f64, u64)> = Vec::new();
    for (t, (table, sample)) in inferred.iter().zip(samples).enumerate() {
        let Ok(sampled) = u32::try_from(sample.len()) else {
            continue;
        };
        if sampled == 0 {
            continue;
        }
        // Per name: its best version as (known index, fitting records, total score).
        let mut by_name: BTreeMap<String, (usize, u32, u64)> = BTreeMap::new();
        for (k, table) in &candidates {
            let name = table.shape.name.to_ascii_lowercase();
            if fixed
                .get(&t)
                .is_some_and(|f| !f.eq_ignore_ascii_case(&name))
            {
                continue;
            }
            if !fixed.contains_key(&t) && taken(&name) {
                continue;
            }
            let (mut fitting, mut score, mut typed, mut values) = (0u32, 0u64, 0u64, 0u64);
            for record in sample {
                if let Some(s) = table.shape.fit(record) {
                    fitting += 1;
                    score += u64::from(s);
                    let (t, v) = typed_as_declared(&table.shape, record);
                    typed += t;
                    values += v;
                }
            }
            if fitting * 10 < sampled * 9 || typed * 10 < values * 9 {
                continue;
            }
            let better = by_name
                .get(&name)
                .is_none_or(|(_, f, s)| (fitting, score) > (*f, *s));
            if better {
                by_name.insert(name, (*k, fitting, score));
            }
        }
        let mut ranked: Vec<(usize, u32, u64)> = by_name.into_values().collect();
        ranked.sort_by_key(|(k, f, s)| (std::cmp::Reverse(*s), std::cmp::Reverse(*f), *k));
        let Some(&(k, fitting, score)) = ranked.first() else {
            continue;
        };
        let runner_up = ranked.get(1).copied();
        let per = |s: u64| s as f64 / f64::from(sampled);
        if runner_up.is_some_and(|(_, _, s2)| per(score) < per(s2) + 1.0) {
            continue;
        }
        let cells = table.groups.iter().map(|g| g.cells).sum();
        found.push((
            KnownMatch {
                inferred: t,
                known: k,
                sampled,
                fitting,
                runner_up: runner_up
                    .and_then(|(k2, f2, _)| Some((known.get(k2)?.shape.name.clone(), f2))),
            },
            per(score),
            cells,
        ));
    }
    // Each name once: the inferred table whose records fit it best (by score per record),
    // then the one with the most cells, takes it.
    found.sort_by(|(_, a, ca), (_, b, cb)| b.total_cmp(a).then(cb.cmp(ca)));
    let mut out: Vec<KnownMatch> = Vec::new();
    for (m, _, _) in found {
        let name = |m: &KnownMatch| {
            known
                .get(m.known)
                .map(|k| k.shape.name.to_ascii_lowercase())
        };
        if out.iter().any(|o| name(o) == name(&m)) {
            continue;
        }
        out.push(m);
    }
    out.sort_by_key(|m| m.inferred);
    out
}

/// Of a record's values that are not NULL (the rowid alias aside), how many have the
/// storage class its column's declared type calls for, and how many there are: text in
/// TEXT, integers in INTEGER, numbers in REAL, numbers or text (dates) in NUMERIC, anything
/// in a column without a type or declared BLOB.
pub fn typed_as_declared(shape: &TableShape, record: &[Value]) -> (u64, u64) {
    let alias = shape.rowid_alias();
    let (mut typed, mut values) = (0, 0);
    for (value, col) in record.iter().zip(shape.record_order()) {
        let Some(c) = shape.columns.get(col) else {
            continue;
        };
        if Some(col) == alias || *value == Value::Null {
            continue;
        }
        values += 1;
        typed += u64::from(matches!(
            (c.affinity(), value),
            (Affinity::Text, Value::Text(_))
                | (Affinity::Integer, Value::Integer(_))
                | (Affinity::Real, Value::Integer(_) | Value::Real(_))
                | (
                    Affinity::Numeric,
                    Value::Integer(_) | Value::Real(_) | Value::Text(_)
                )
                | (Affinity::Blob, _)
        ));
    }
    (typed, values)
}

/// Up to [`KNOWN_SAMPLE`] whole records of an inferred table, spread over its groups.
fn sample_records(db: &Database<'_>, table: &InferredTable) -> Vec<Vec<Value>> {
    let cells: u64 = table.groups.iter().map(|g| g.cells).sum();
    let stride = usize::try_from(cells / KNOWN_SAMPLE as u64)
        .unwrap_or(usize::MAX)
        .max(1);
    TableRows::new(db, None, table.groups.iter())
        .filter_map(|e| match e {
            RowEvent::Row(r) => Some(r),
            RowEvent::Unreadable { .. } => None,
        })
        .step_by(stride)
        .filter_map(|r| {
            let (values, complete) = r.record();
            complete.then_some(values)
        })
        .take(KNOWN_SAMPLE)
        .collect()
}

/// Index entries: each one's key values and its rowid.
type Entries = Vec<(Vec<Value>, i64)>;

/// For each keyed column, the record position whose values equal the entries' values in
/// nine sampled rows in ten (a position is given once, NULLs prove nothing).
fn map_columns(
    columns: &[String],
    entries: &[(Vec<Value>, i64)],
    rows: &BTreeMap<i64, Vec<Value>>,
) -> BTreeMap<usize, String> {
    let stride = (entries.len() / SAMPLE).max(1);
    let sample: Vec<(&Vec<Value>, &Vec<Value>)> = entries
        .iter()
        .step_by(stride)
        .filter_map(|(key, rowid)| Some((key, rows.get(rowid)?)))
        .take(SAMPLE)
        .collect();
    let mut out = BTreeMap::new();
    let mut used = BTreeSet::new();
    for (k, name) in columns.iter().enumerate() {
        let width = sample.iter().map(|(_, r)| r.len()).max().unwrap_or(0);
        let best = (0..width)
            .filter(|p| !used.contains(p))
            .map(|p| {
                let (mut agree, mut seen) = (0, 0);
                for (key, record) in &sample {
                    let (Some(a), Some(b)) = (key.get(k), record.get(p)) else {
                        continue;
                    };
                    if *a == Value::Null {
                        continue;
                    }
                    seen += 1;
                    agree += usize::from(a == b);
                }
                (p, agree, seen)
            })
            .filter(|(_, agree, seen)| *seen > 0 && agree * 10 >= seen * 9)
            .max_by_key(|(_, agree, _)| *agree);
        if let Some((p, _, _)) = best {
            used.insert(p);
            out.insert(p, name.clone());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_columns_an_index_keys_on() {
        let cols = |sql: &str| index_columns(sql);
        assert_eq!(
            cols("CREATE INDEX i ON t(a, b DESC)"),
            Some(vec!["a".into(), "b".into()])
        );
        assert_eq!(
            cols("CREATE UNIQUE INDEX \"i\" ON \"my t\" (\"x y\" COLLATE NOCASE, [z])"),
            Some(vec!["x y".into(), "z".into()])
        );
        assert_eq!(
            cols("CREATE INDEX i ON t(a) WHERE b IS NOT NULL AND (c > 1)"),
            Some(vec!["a".into()])
        );
        assert_eq!(cols("CREATE INDEX i ON t(lower(a))"), None);
    }
}
