//! Table shapes: the declared columns of a table, and how a stored record maps onto them.
//!
//! The shape comes from the CREATE statement as SQLite itself parses it (the salvage run
//! creates each table in the output database and reads `PRAGMA table_xinfo` back), so
//! no SQL parser lives here. What this module knows is the file format's side: which
//! columns a record stores, in which order, and where the rowid goes.
//!
//! Its parts: `column` is one declared column ([`Column`]: its [`Affinity`], its
//! [`StrictType`] in a STRICT table, its [`ColumnKind`], its [`ColumnDefault`]); this
//! module is the table ([`TableShape`]) and where a record stores each column; `record`
//! maps a stored record onto the columns ([`TableShape::map_record`], [`MappedRow`],
//! [`FieldDamage`]) and judges whether it can be one of the table's rows
//! ([`TableShape::fit`]).

mod column;
mod record;

pub use column::{Affinity, Column, ColumnDefault, ColumnKind, StrictType};
pub use record::{classes_of, text_in_encoding, DamageReason, FieldDamage, MappedRow};

/// A table's declared columns and storage layout.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TableShape {
    /// Table name.
    pub name: String,
    /// Columns in declared order.
    pub columns: Vec<Column>,
    /// Declared WITHOUT ROWID: the table is an index-shaped b-tree keyed by its primary key.
    pub without_rowid: bool,
    /// A STRICT table: each column holds only values of its declared type.
    pub strict: bool,
    /// The primary key is kept in an index of its own (SQLite's `sqlite_autoindex_…`, of
    /// origin `pk`), so no column is the rowid, whatever its type: a rowid table declared
    /// with `INTEGER PRIMARY KEY DESC` on the column (a documented quirk of SQLite), or a
    /// primary key that is not one INTEGER column.
    pub pk_indexed: bool,
}

/// The names SQL gives a rowid table's rowid, in the order they are tried here. A column
/// of one of these names hides the rowid under that name.
const ROWID_NAMES: [&str; 3] = ["rowid", "_rowid_", "oid"];

/// The first of [`ROWID_NAMES`] that is none of `columns` (any case): how SQL reaches the
/// rowid of a table with these columns, when a name is left.
pub fn rowid_name_among(columns: &[&str]) -> Option<&'static str> {
    ROWID_NAMES
        .into_iter()
        .find(|n| !columns.iter().any(|c| c.eq_ignore_ascii_case(n)))
}

impl TableShape {
    /// The name SQL reaches this table's rowid by: the first of `rowid`, `_rowid_` and
    /// `oid` that no column takes, else its INTEGER PRIMARY KEY column's. None for a
    /// WITHOUT ROWID table, or for one whose columns take all three names and that has
    /// no such column: SQL cannot name its rowid.
    pub fn rowid_name(&self) -> Option<&str> {
        if self.without_rowid {
            return None;
        }
        let names: Vec<&str> = self.columns.iter().map(|c| c.name.as_str()).collect();
        rowid_name_among(&names).or_else(|| {
            self.rowid_alias()
                .and_then(|i| self.columns.get(i))
                .map(|c| c.name.as_str())
        })
    }

    /// The column that aliases the rowid (INTEGER PRIMARY KEY on a rowid table, its key
    /// not in an index of its own), if any. Its value is stored as NULL in the record and
    /// is the cell's rowid.
    pub fn rowid_alias(&self) -> Option<usize> {
        if self.without_rowid || self.pk_indexed {
            return None;
        }
        let pk: Vec<usize> = (0..self.columns.len())
            .filter(|&i| self.columns.get(i).is_some_and(|c| c.pk > 0))
            .collect();
        match pk.as_slice() {
            [i] if self
                .columns
                .get(*i)
                .is_some_and(|c| c.decl_type.eq_ignore_ascii_case("INTEGER")) =>
            {
                Some(*i)
            }
            _ => None,
        }
    }

    /// Indexes of the columns a record stores, in record order: declared order for rowid
    /// tables; for WITHOUT ROWID tables the primary key columns in key order, then the
    /// others in declared order. Virtual generated columns are never stored.
    pub fn record_order(&self) -> Vec<usize> {
        let stored =
            |c: &Column| c.kind != ColumnKind::VirtualGenerated && c.kind != ColumnKind::Hidden;
        if !self.without_rowid {
            return (0..self.columns.len())
                .filter(|&i| self.columns.get(i).is_some_and(stored))
                .collect();
        }
        let mut pk: Vec<(u32, usize)> = self
            .columns
            .iter()
            .enumerate()
            .filter(|(_, c)| c.pk > 0)
            .map(|(i, c)| (c.pk, i))
            .collect();
        pk.sort_unstable();
        let mut order: Vec<usize> = pk.into_iter().map(|(_, i)| i).collect();
        order.extend(
            (0..self.columns.len())
                .filter(|i| self.columns.get(*i).is_some_and(|c| c.pk == 0 && stored(c))),
        );
        order
    }

    /// The column named `name` (as SQLite matches names: ASCII case aside).
    pub fn column(&self, name: &str) -> Option<&Column> {
        self.columns
            .iter()
            .find(|c| c.name.eq_ignore_ascii_case(name))
    }

    /// The columns whose default is not constant (see [`ColumnDefault`]), which a row
    /// rebuilt from evidence holds as NULL unless the evidence gives them: insertable
    /// columns other than the rowid alias.
    pub fn varying_defaults(&self) -> Vec<&str> {
        let alias = self.rowid_alias();
        self.columns
            .iter()
            .enumerate()
            .filter(|(i, c)| {
                Some(*i) != alias
                    && c.kind == ColumnKind::Ordinary
                    && c.default == ColumnDefault::Varying
            })
            .map(|(_, c)| c.name.as_str())
            .collect()
    }

    /// Indexes of the columns an INSERT names, in declared order (generated columns cannot
    /// be inserted).
    pub fn insert_columns(&self) -> Vec<usize> {
        (0..self.columns.len())
            .filter(|&i| {
                self.columns
                    .get(i)
                    .is_some_and(|c| c.kind == ColumnKind::Ordinary)
            })
            .collect()
    }
}

#[cfg(test)]
mod testing {
    use super::*;

    pub fn col(name: &str, t: &str, pk: u32) -> Column {
        Column {
            name: name.into(),
            decl_type: t.into(),
            not_null: false,
            pk,
            kind: ColumnKind::Ordinary,
            default: ColumnDefault::None,
        }
    }
}

#[cfg(test)]
mod tests {
    use pager::{TextEncoding, Value};

    use super::testing::col;
    use super::*;

    #[test]
    fn the_rowid_is_named_by_a_name_no_column_takes() {
        let shape = |columns: Vec<Column>, without_rowid| TableShape {
            name: "t".into(),
            columns,
            without_rowid,
            strict: false,
            pk_indexed: false,
        };
        let plain = shape(vec![col("body", "TEXT", 0)], false);
        assert_eq!(plain.rowid_name(), Some("rowid"));
        let hidden = shape(vec![col("ROWID", "TEXT", 0), col("oid", "", 0)], false);
        assert_eq!(hidden.rowid_name(), Some("_rowid_"));
        let all = ["rowid", "_rowid_", "oid"].map(|n| col(n, "TEXT", 0));
        assert_eq!(shape(all.to_vec(), false).rowid_name(), None);
        let mut aliased = all.to_vec();
        aliased.push(col("id", "INTEGER", 1));
        assert_eq!(shape(aliased, false).rowid_name(), Some("id"));
        assert_eq!(shape(vec![col("k", "TEXT", 1)], true).rowid_name(), None);
    }

    #[test]
    fn integer_primary_key_takes_the_rowid() {
        let t = TableShape {
            name: "m".into(),
            columns: vec![col("id", "INTEGER", 1), col("body", "TEXT", 0)],
            without_rowid: false,
            strict: false,
            pk_indexed: false,
        };
        assert_eq!(t.rowid_alias(), Some(0));
        // `id INTEGER PRIMARY KEY DESC`: SQLite keeps the key in an index, the value in
        // the record.
        let desc = TableShape {
            pk_indexed: true,
            ..t.clone()
        };
        assert_eq!(desc.rowid_alias(), None);
        assert_eq!(desc.record_order(), vec![0, 1]);
        let row = t.map_record(
            Some(42),
            vec![Value::Null, Value::Text(b"hi".to_vec())],
            &[],
            &[],
            TextEncoding::Utf8,
        );
        assert_eq!(
            row.values,
            vec![Some(Value::Integer(42)), Some(Value::Text(b"hi".to_vec()))]
        );
    }

    #[test]
    fn without_rowid_records_lead_with_the_key() {
        let t = TableShape {
            name: "kv".into(),
            columns: vec![
                col("v", "", 0),
                col("ns", "TEXT", 1),
                col("k", "INTEGER", 2),
            ],
            without_rowid: true,
            strict: false,
            pk_indexed: false,
        };
        assert_eq!(t.record_order(), vec![1, 2, 0]);
        assert_eq!(t.rowid_alias(), None);
        let row = t.map_record(
            None,
            vec![
                Value::Text(b"a".to_vec()),
                Value::Integer(1),
                Value::Real(0.5),
            ],
            &[],
            &[],
            TextEncoding::Utf8,
        );
        assert_eq!(row.values[0], Some(Value::Real(0.5)));
        assert_eq!(row.values[1], Some(Value::Text(b"a".to_vec())));
    }
}
