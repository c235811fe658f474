//! Partial rows: a table row is lost, but index entries naming its rowid survive, or a
//! full-text table's own copy of its text does ([`crate::textcopy`]). Each carries some of
//! the row's values, so the row can be rebuilt from them, every other column NULL. Such a
//! row stays counted as lost: its other columns are gone.

use std::collections::BTreeMap;
use std::sync::Arc;

use pager::{Database, PageNo, Value};

use crate::rows::{RecoveredRow, RowEvent, TableRows};
use crate::textcopy::TextCopy;

/// An index of a table: its root in the source and the table column behind each key
/// position (`None` for an expression, which proves no column's value).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IndexKeys {
    /// The index's name (shared by every partial row it proves).
    pub name: Arc<str>,
    /// Its root page in the source.
    pub root: PageNo,
    /// The column behind each key position (each name shared by every partial row).
    pub columns: Vec<Option<Arc<str>>>,
    /// Whether each key position sorts descending.
    pub desc: Vec<bool>,
    /// Whether every key position compares with the BINARY collation.
    pub binary: bool,
}

impl IndexKeys {
    /// Whether its entries can witness rows: keys of plain columns, compared with the
    /// BINARY collation (a search compares them as bytes).
    pub fn can_witness(&self) -> bool {
        self.binary && !self.columns.is_empty()
    }
}

/// What the index entries and text copies of one lost row prove: column values, and the
/// indexes and full-text tables that proved them.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PartialRow {
    /// Column values, by column name.
    pub values: KnownValues,
    /// The indexes and full-text tables that proved them, in name order.
    pub sources: Vec<Arc<str>>,
    /// An index entry names the row (otherwise only a text copy does).
    pub by_index: bool,
}

impl PartialRow {
    /// Takes in one index entry's key values (the record less its trailing rowid).
    pub fn add(&mut self, index: &IndexKeys, keys: &[Value]) {
        self.by_index = true;
        self.add_source(Arc::clone(&index.name));
        for (column, value) in index.columns.iter().zip(keys) {
            if let Some(column) = column {
                if self.values.get(column).is_none() {
                    self.values.insert(Arc::clone(column), value.clone());
                }
            }
        }
    }

    /// Takes in what a full-text copy holds of the row.
    pub fn add_text(&mut self, copy: &ResolvedCopy, values: Vec<(String, Value)>) {
        self.add_source(copy.copy.fts.as_str().into());
        for (column, value) in values {
            if self.values.get(&column).is_none() {
                self.values.insert(column.into(), value);
            }
        }
    }

    fn add_source(&mut self, name: Arc<str>) {
        if let Err(at) = self.sources.binary_search_by(|s| (**s).cmp(&name)) {
            // Most rows are proven by one index: no room kept for three more.
            self.sources.reserve_exact(1);
            self.sources.insert(at, name);
        }
    }
}

/// A row's known column values by column name, in name order: a short sorted list (a
/// lost row is proven a column or two at a time, by the thousand), where a map would give
/// each row a node with room for eleven. Names are shared: a hundred thousand rows an
/// index proves hold its column names once.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct KnownValues(Vec<(Arc<str>, Value)>);

impl KnownValues {
    fn position(&self, column: &str) -> Result<usize, usize> {
        self.0.binary_search_by(|(c, _)| (**c).cmp(column))
    }

    /// The value of `column` (its name as given, case and all).
    pub fn get(&self, column: &str) -> Option<&Value> {
        let i = self.position(column).ok()?;
        self.0.get(i).map(|(_, v)| v)
    }

    /// Sets the value of `column`.
    pub fn insert(&mut self, column: Arc<str>, value: Value) {
        match self.position(&column) {
            Ok(i) => {
                if let Some(slot) = self.0.get_mut(i) {
                    slot.1 = value;
                }
            }
            Err(i) => {
                // A row holds a few columns, one or two at a time: no room kept for more.
                self.0.reserve_exact(1);
                self.0.insert(i, (column, value));
            }
        }
    }

    /// Whether no value is known.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The column names, in order.
    pub fn keys(&self) -> impl Iterator<Item = &str> + '_ {
        self.0.iter().map(|(c, _)| &**c)
    }

    /// The values, in their columns' order.
    pub fn values(&self) -> impl Iterator<Item = &Value> + '_ {
        self.0.iter().map(|(_, v)| v)
    }

    /// (column, value), in the columns' order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Value)> + '_ {
        self.0.iter().map(|(c, v)| (&**c, v))
    }
}

impl FromIterator<(String, Value)> for KnownValues {
    fn from_iter<I: IntoIterator<Item = (String, Value)>>(items: I) -> Self {
        let mut known = KnownValues::default();
        for (column, value) in items {
            known.insert(column.into(), value);
        }
        known
    }
}

/// A full-text copy resolved against the source and the output: where its rows are, and
/// which of its columns holds each copied table column.
#[derive(Clone, Debug, PartialEq)]
pub struct ResolvedCopy {
    /// The copy, its names spelt as the tables spell them.
    pub copy: TextCopy,
    /// Root of the full-text table's own `NAME_content` shadow table in the source.
    pub content_root: PageNo,
    /// (table column, position among the full-text table's columns).
    pub positions: Vec<(String, usize)>,
}

/// One row of a full-text copy in the source, its record decoded only when asked.
pub struct CopyRow<'a> {
    /// The full-text rowid: the rowid, or the key, of the row it copies.
    pub rowid: i64,
    row: RecoveredRow<'a>,
}

impl ResolvedCopy {
    /// The columns a full-text row (its columns in order, the rowid left out) gives back,
    /// after the copy's fixed values. A damaged record proves the row but gives no text.
    pub fn values(&self, fts_values: &[Value], complete: bool) -> Vec<(String, Value)> {
        let text = self
            .positions
            .iter()
            .filter(|_| complete)
            .filter_map(|(column, at)| Some((column.clone(), fts_values.get(*at)?.clone())));
        self.copy.when.iter().cloned().chain(text).collect()
    }

    /// The copy's rows in the source (its `NAME_content` shadow table); unreadable cells
    /// are passed over.
    pub fn rows<'a>(&self, db: &'a Database<'a>) -> impl Iterator<Item = CopyRow<'a>> + 'a {
        TableRows::new(db, Some(self.content_root), std::iter::empty()).filter_map(move |event| {
            let RowEvent::Row(row) = event else {
                return None;
            };
            Some(CopyRow {
                rowid: row.rowid()?,
                row,
            })
        })
    }

    /// What a row of the copy gives back of its row (see [`ResolvedCopy::values`]).
    pub fn row_values(&self, row: &CopyRow<'_>) -> Vec<(String, Value)> {
        let (record, complete) = row.row.record();
        self.values(crate::vtab::content_columns(&record), complete)
    }

    /// Whether a partial row holds the copy's fixed values: it is a row the copy may
    /// stand for.
    pub fn stands_for(&self, row: &PartialRow) -> bool {
        self.copy
            .when
            .iter()
            .all(|(c, v)| row.values.get(c) == Some(v))
    }

    /// A copy keyed by a column (Chroma's documents, under their embedding's id): fills
    /// the `partial` rows index entries proved with the same key and fixed values, from
    /// the copy's `rows` (rowid = key, and what it gives back).
    pub fn fill_keyed(
        &self,
        partial: &mut BTreeMap<i64, PartialRow>,
        rows: impl Iterator<Item = (i64, Vec<(String, Value)>)>,
    ) {
        let Some(key) = self.copy.key.as_deref() else {
            return;
        };
        let by_key: BTreeMap<i64, i64> = partial
            .iter()
            .filter(|(_, row)| self.stands_for(row))
            .filter_map(|(rowid, row)| match row.values.get(key) {
                Some(Value::Integer(k)) => Some((*k, *rowid)),
                _ => None,
            })
            .collect();
        if by_key.is_empty() {
            return;
        }
        for (k, values) in rows {
            if let Some(p) = by_key.get(&k).and_then(|rowid| partial.get_mut(rowid)) {
                p.add_text(self, values);
            }
        }
    }
}
