//! Naming a table whose schema row is lost from an index whose schema row survives.
//!
//! An index's CREATE statement names its table and the columns it keys on, and each of
//! its entries holds those columns' values and the rowid of its row. When the table's
//! own schema row is lost, its b-tree comes back as an inferred table (`c0, c1, …`); if
//! the rowids of the index entries are the rowids of that inferred table, the index names
//! it, and the values of its entries find which record position is which keyed column.
//! A match needs most entries' rows present and their values agreeing; otherwise the
//! table stays inferred.

use std::collections::{BTreeMap, BTreeSet};

use pager::{Database, PageNo, Value};

use crate::plan::InferredTable;
use crate::rows::{RowEvent, TableRows};

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
