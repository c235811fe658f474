//! Table shapes: the declared columns of a table, and how a stored record maps onto them.
//!
//! The shape comes from the CREATE statement as SQLite itself parses it (the salvage run
//! creates each table in the output database and reads `PRAGMA table_xinfo` back), so
//! no SQL parser lives here. What this module knows is the file format's side: which
//! columns a record stores, in which order, and where the rowid goes.

use pager::{TextEncoding, Value};

/// Column affinity ("Determination Of Column Affinity", datatype3.html).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Affinity {
    /// Declared type contains "INT".
    Integer,
    /// Contains "CHAR", "CLOB" or "TEXT".
    Text,
    /// Contains "BLOB", or no declared type.
    Blob,
    /// Contains "REAL", "FLOA" or "DOUB".
    Real,
    /// Anything else.
    Numeric,
}

impl Affinity {
    /// The affinity of a declared type, by SQLite's rules in their order.
    pub fn of_declared_type(decl: &str) -> Affinity {
        let t = decl.to_ascii_uppercase();
        if t.contains("INT") {
            Affinity::Integer
        } else if t.contains("CHAR") || t.contains("CLOB") || t.contains("TEXT") {
            Affinity::Text
        } else if t.contains("BLOB") || t.trim().is_empty() {
            Affinity::Blob
        } else if t.contains("REAL") || t.contains("FLOA") || t.contains("DOUB") {
            Affinity::Real
        } else {
            Affinity::Numeric
        }
    }

    /// Whether a value of this storage class can sit in a column of this affinity as
    /// SQLite would have stored it: an INTEGER-affinity column never stores text that
    /// looks like a number, but may store other text; the check is for plausibility.
    pub fn admits(self, v: &Value) -> bool {
        match (self, v) {
            (_, Value::Null) => true,
            (
                Affinity::Integer | Affinity::Real | Affinity::Numeric,
                Value::Integer(_) | Value::Real(_),
            ) => true,
            (
                Affinity::Integer | Affinity::Real | Affinity::Numeric,
                Value::Text(_) | Value::Blob(_),
            ) => true,
            (Affinity::Text, Value::Text(_) | Value::Blob(_)) => true,
            // TEXT affinity converts numbers to text on the way in.
            (Affinity::Text, Value::Integer(_) | Value::Real(_)) => false,
            (Affinity::Blob, _) => true,
        }
    }

    /// Whether SQLite could have stored this value in a column of this affinity: every
    /// value it writes has been through the column's affinity, so a number in a TEXT
    /// column, or text that numeric affinity converts in an INTEGER, REAL or NUMERIC one,
    /// is never there (UTF-8 text is judged; other encodings are given the benefit).
    pub fn could_store(self, v: &Value) -> bool {
        match (self, v) {
            (Affinity::Text, Value::Integer(_) | Value::Real(_)) => false,
            (Affinity::Integer | Affinity::Real | Affinity::Numeric, Value::Text(t)) => {
                !Affinity::text_converts(t)
            }
            _ => true,
        }
    }

    /// Whether INTEGER, REAL and NUMERIC affinity turn this text into a number on the way
    /// in (so that SQLite never stores it as text in such a column): a decimal number,
    /// optionally signed, with a fraction and an exponent, between spaces.
    // SQLite: sqlite3AtoF (util.c), as applyNumericAffinity uses it
    pub fn text_converts(text: &[u8]) -> bool {
        let t = text.trim_ascii();
        let t = t
            .strip_prefix(b"+")
            .or_else(|| t.strip_prefix(b"-"))
            .unwrap_or(t);
        let digits = |s: &[u8]| s.iter().take_while(|b| b.is_ascii_digit()).count();
        let whole = digits(t);
        let mut rest = t.get(whole..).unwrap_or_default();
        let mut fraction = 0;
        if let Some(r) = rest.strip_prefix(b".") {
            fraction = digits(r);
            rest = r.get(fraction..).unwrap_or_default();
        }
        if whole + fraction == 0 {
            return false;
        }
        if let Some(r) = rest.strip_prefix(b"e").or_else(|| rest.strip_prefix(b"E")) {
            let r = r
                .strip_prefix(b"+")
                .or_else(|| r.strip_prefix(b"-"))
                .unwrap_or(r);
            let n = digits(r);
            if n == 0 {
                return false;
            }
            rest = r.get(n..).unwrap_or_default();
        }
        rest.is_empty()
    }
}

/// The values a column of a STRICT table holds, by its declared type: SQLite refuses any
/// other on the way in (an integral REAL may be stored as an integer in the record).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StrictType {
    /// INT or INTEGER: integers.
    Integer,
    /// REAL: numbers.
    Real,
    /// TEXT: text.
    Text,
    /// BLOB: BLOBs.
    Blob,
    /// ANY (or a type STRICT does not know): anything.
    Any,
}

impl StrictType {
    /// The type of a STRICT column declared `decl`.
    pub fn of_declared_type(decl: &str) -> StrictType {
        match decl.trim().to_ascii_uppercase().as_str() {
            "INT" | "INTEGER" => StrictType::Integer,
            "REAL" => StrictType::Real,
            "TEXT" => StrictType::Text,
            "BLOB" => StrictType::Blob,
            _ => StrictType::Any,
        }
    }

    /// Whether a column of this type can hold `v` (NULL aside: NOT NULL decides it).
    pub fn holds(self, v: &Value) -> bool {
        matches!(
            (self, v),
            (_, Value::Null)
                | (StrictType::Any, _)
                | (StrictType::Integer, Value::Integer(_))
                | (StrictType::Real, Value::Integer(_) | Value::Real(_))
                | (StrictType::Text, Value::Text(_))
                | (StrictType::Blob, Value::Blob(_))
        )
    }
}

/// How a column is stored (`hidden` in `PRAGMA table_xinfo`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ColumnKind {
    /// An ordinary column, stored in the record.
    Ordinary,
    /// A hidden column of a virtual table.
    Hidden,
    /// A VIRTUAL generated column: not stored, computed on read.
    VirtualGenerated,
    /// A STORED generated column: in the record, but never inserted.
    StoredGenerated,
}

impl ColumnKind {
    /// Decodes `table_xinfo.hidden`.
    pub fn from_hidden(hidden: i64) -> ColumnKind {
        match hidden {
            1 => ColumnKind::Hidden,
            2 => ColumnKind::VirtualGenerated,
            3 => ColumnKind::StoredGenerated,
            _ => ColumnKind::Ordinary,
        }
    }
}

/// One declared column.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Column {
    /// Column name.
    pub name: String,
    /// Declared type, as written.
    pub decl_type: String,
    /// Declared NOT NULL.
    pub not_null: bool,
    /// 1-based position in the PRIMARY KEY, 0 when not part of it.
    pub pk: u32,
    /// Ordinary, hidden or generated.
    pub kind: ColumnKind,
    /// Its DEFAULT, as far as a recovered row may use it.
    pub default: ColumnDefault,
}

/// A column's DEFAULT clause, judged by whether it may fill a recovered row: only a
/// constant may. A default that depends on the clock or on anything else (CURRENT_TIMESTAMP,
/// CURRENT_DATE, CURRENT_TIME, an expression in parentheses) would write the time of the
/// salvage, or some other invention, into a row of the past.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ColumnDefault {
    /// No DEFAULT clause: NULL.
    None,
    /// A literal: a number, a string, a blob, NULL, TRUE or FALSE.
    Constant,
    /// Anything else.
    Varying,
}

impl ColumnDefault {
    /// Judges a DEFAULT expression as `PRAGMA table_xinfo` gives it (`dflt_value`).
    pub fn of(expr: Option<&str>) -> ColumnDefault {
        let Some(mut e) = expr.map(str::trim) else {
            return ColumnDefault::None;
        };
        while let Some(inner) = e.strip_prefix('(').and_then(|x| x.strip_suffix(')')) {
            e = inner.trim();
        }
        let quoted = |q: char| {
            e.len() >= 2
                && e.starts_with(q)
                && e.ends_with(q)
                && !e[1..e.len() - 1]
                    .replace(&format!("{q}{q}"), "")
                    .contains(q)
        };
        let blob = (e.starts_with("x'") || e.starts_with("X'"))
            && e.ends_with('\'')
            && e[2..e.len() - 1].bytes().all(|b| b.is_ascii_hexdigit());
        let hex = e
            .trim_start_matches(['+', '-'])
            .strip_prefix("0x")
            .or_else(|| e.trim_start_matches(['+', '-']).strip_prefix("0X"))
            .is_some_and(|h| !h.is_empty() && h.bytes().all(|b| b.is_ascii_hexdigit()));
        let keyword = ["NULL", "TRUE", "FALSE"]
            .iter()
            .any(|k| e.eq_ignore_ascii_case(k));
        if keyword || quoted('\'') || blob || hex || Affinity::text_converts(e.as_bytes()) {
            ColumnDefault::Constant
        } else {
            ColumnDefault::Varying
        }
    }
}

impl Column {
    /// The column's affinity.
    pub fn affinity(&self) -> Affinity {
        Affinity::of_declared_type(&self.decl_type)
    }
}

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

    /// The column that aliases the rowid (INTEGER PRIMARY KEY on a rowid table), if any.
    /// Its value is stored as NULL in the record and is the cell's rowid.
    pub fn rowid_alias(&self) -> Option<usize> {
        if self.without_rowid {
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

    /// Maps a stored record's values onto the insert columns. The rowid alias takes the
    /// cell's rowid. A record with fewer values than stored columns (a table altered by
    /// ADD COLUMN after the row was written) gives `None` for the missing ones, so that
    /// their declared default applies; extra values are returned as surplus.
    ///
    /// Every value that is not the file's bytes as SQLite wrote them is NULL in the row
    /// and listed in `damage` with its reason: a field whose bytes could not be read (its
    /// position in `unreadable`), a field read from a last overflow page that does not end
    /// its chain (in `suspect`), a value its column's affinity would have converted on
    /// the way in (a number in a TEXT column, numeric text in a numeric one: SQLite never
    /// stores them, so a serial type was damaged), and a value beyond the table's columns.
    ///
    /// Text not valid UTF-8 in a UTF-8 file is the file's bytes and stays: SQLite stores
    /// whatever bytes an application binds as text (Latin-1 through the UTF-8 API) and
    /// reads them back as they are, so they are no sign of damage by themselves; they are
    /// counted in `texts_not_in_encoding`. Text not valid UTF-16 in a UTF-16 file is
    /// damage (its bytes kept in the registry): SQL cannot write it back as the same text
    /// (SQLite converts it, or drops an odd last byte), and an odd length is a sign of
    /// damage itself.
    pub fn map_record(
        &self,
        rowid: Option<i64>,
        record: Vec<Value>,
        unreadable: &[usize],
        suspect: &[usize],
        encoding: TextEncoding,
    ) -> MappedRow {
        let order = self.record_order();
        let mut by_column: Vec<Option<Value>> = vec![None; self.columns.len()];
        let surplus = record.len().saturating_sub(order.len());
        let mut damage = Vec::new();
        let mut texts_not_in_encoding = 0;
        for (position, value) in record.into_iter().enumerate() {
            let text_invalid = matches!(&value, Value::Text(t) if !text_in_encoding(t, encoding));
            let Some(column) = order.get(position).and_then(|c| self.columns.get(*c)) else {
                damage.push(FieldDamage {
                    column: None,
                    reason: DamageReason::BeyondColumns,
                    original: value,
                });
                continue;
            };
            let reason = if unreadable.contains(&position) {
                Some(DamageReason::Unreadable)
            } else if suspect.contains(&position) {
                Some(DamageReason::OverflowPageSuspect)
            } else if text_invalid && encoding != TextEncoding::Utf8 {
                Some(DamageReason::TextNotInEncoding)
            } else if self.strict && !StrictType::of_declared_type(&column.decl_type).holds(&value)
            {
                Some(DamageReason::StrictTypeNeverStores)
            } else if !self.strict && !column.affinity().could_store(&value) {
                Some(DamageReason::AffinityNeverStores)
            } else {
                None
            };
            let value = match reason {
                Some(reason) => {
                    damage.push(FieldDamage {
                        column: Some(column.name.clone()),
                        reason,
                        original: value,
                    });
                    Value::Null
                }
                None => {
                    texts_not_in_encoding += u64::from(text_invalid);
                    value
                }
            };
            if let Some(slot) = order.get(position).and_then(|c| by_column.get_mut(*c)) {
                *slot = Some(value);
            }
        }
        if let (Some(alias), Some(rowid)) = (self.rowid_alias(), rowid) {
            if let Some(slot) = by_column.get_mut(alias) {
                if matches!(slot, None | Some(Value::Null)) {
                    *slot = Some(Value::Integer(rowid));
                }
            }
        }
        let values = self
            .insert_columns()
            .into_iter()
            .map(|i| by_column.get(i).cloned().flatten())
            .collect();
        MappedRow {
            values,
            surplus,
            damage,
            texts_not_in_encoding,
        }
    }

    /// How well a record fits this table: `None` when it cannot be one of its rows,
    /// else a score (higher is better) from how many values sit plausibly in their columns.
    ///
    /// A record shorter than the table was written before its last columns were added by
    /// ALTER TABLE ADD COLUMN, so it fits only when every column it lacks is one that
    /// statement can add: no PRIMARY KEY, and NULL allowed or a default given (SQLite
    /// refuses a NOT NULL column without one).
    pub fn fit(&self, record: &[Value]) -> Option<u32> {
        let order = self.record_order();
        if record.is_empty() || record.len() > order.len() {
            return None;
        }
        let addable = |i: &usize| {
            self.columns.get(*i).is_some_and(|c| {
                // ALTER TABLE refuses a key, a NOT NULL column without a default, and
                // a default that is not constant.
                c.pk == 0
                    && c.default != ColumnDefault::Varying
                    && (!c.not_null || c.default == ColumnDefault::Constant)
            })
        };
        if !order
            .get(record.len()..)
            .unwrap_or_default()
            .iter()
            .all(addable)
        {
            return None;
        }
        let alias = self.rowid_alias();
        let mut score = 0;
        for (value, col) in record.iter().zip(&order) {
            let c = self.columns.get(*col)?;
            if Some(*col) == alias {
                // The rowid alias is always stored as NULL.
                if *value != Value::Null {
                    return None;
                }
                score += 2;
                continue;
            }
            if c.not_null && *value == Value::Null {
                return None;
            }
            if !c.affinity().admits(value) {
                return None;
            }
            score += match (c.affinity(), value) {
                (Affinity::Integer, Value::Integer(_))
                | (Affinity::Real, Value::Real(_) | Value::Integer(_)) => 2,
                (Affinity::Text, Value::Text(_)) => 2,
                (_, Value::Null) => 0,
                _ => 1,
            };
        }
        // A full-width record is better evidence than a short one.
        Some(score + if record.len() == order.len() { 3 } else { 0 })
    }
}

/// A record mapped onto a table's insert columns.
#[derive(Clone, Debug, PartialEq)]
pub struct MappedRow {
    /// One entry per insert column; `None` where the record holds no value (use the default).
    pub values: Vec<Option<Value>>,
    /// Values the record holds beyond the table's stored columns.
    pub surplus: usize,
    /// Every value that is not the file's bytes as SQLite wrote them, with its reason
    /// (see [`TableShape::map_record`]).
    pub damage: Vec<FieldDamage>,
    /// Text values written as the file holds them though not valid in its encoding.
    pub texts_not_in_encoding: u64,
}

/// A value of a recovered row that is not in its table as the record holds it.
#[derive(Clone, Debug, PartialEq)]
pub struct FieldDamage {
    /// Its column; `None` for a value beyond the table's columns.
    pub column: Option<String>,
    /// Why it is not in the table as read.
    pub reason: DamageReason,
    /// The value as the record holds it (NULL when its bytes could not be read).
    pub original: Value,
}

/// Why a value of a recovered row is not in its table as read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DamageReason {
    /// Its bytes could not be read (an overflow chain broken, the record cut short): NULL.
    Unreadable,
    /// Text not valid UTF-16 in a UTF-16 file: NULL (its bytes in the registry).
    TextNotInEncoding,
    /// A value its column's affinity never stores (see [`Affinity::could_store`]): NULL.
    AffinityNeverStores,
    /// A value of another type than its STRICT column's (see [`StrictType::holds`]),
    /// which SQLite refuses: NULL.
    StrictTypeNeverStores,
    /// A value beyond the table's columns: not written.
    BeyondColumns,
    /// A value that disagrees with the table's own index entry for the row (read from
    /// pages of their own): the index's value is written in its place.
    DisagreesWithIndex,
    /// A value read from the last overflow page of a chain that does not end there as
    /// SQLite ends a chain (its next pointer is not 0): the page may be another's, its
    /// bytes read as this row's: NULL.
    OverflowPageSuspect,
}

impl DamageReason {
    /// Its name in the `salvage_damaged_fields` registry.
    pub fn name(self) -> &'static str {
        match self {
            DamageReason::Unreadable => "unreadable",
            DamageReason::TextNotInEncoding => "text_not_in_encoding",
            DamageReason::AffinityNeverStores => "affinity_never_stores",
            DamageReason::StrictTypeNeverStores => "strict_type_never_stores",
            DamageReason::BeyondColumns => "beyond_columns",
            DamageReason::DisagreesWithIndex => "disagrees_with_index",
            DamageReason::OverflowPageSuspect => "overflow_page_suspect",
        }
    }
}

/// Whether text bytes are valid in the database's text encoding: UTF-8, or UTF-16 of
/// an even length with every surrogate paired.
pub fn text_in_encoding(bytes: &[u8], encoding: TextEncoding) -> bool {
    let units = |be: bool| {
        bytes.chunks_exact(2).map(move |p| {
            let pair = [
                p.first().copied().unwrap_or(0),
                p.get(1).copied().unwrap_or(0),
            ];
            if be {
                u16::from_be_bytes(pair)
            } else {
                u16::from_le_bytes(pair)
            }
        })
    };
    match encoding {
        TextEncoding::Utf8 => simdutf8::basic::from_utf8(bytes).is_ok(),
        TextEncoding::Utf16le => {
            bytes.len().is_multiple_of(2) && char::decode_utf16(units(false)).all(|c| c.is_ok())
        }
        TextEncoding::Utf16be => {
            bytes.len().is_multiple_of(2) && char::decode_utf16(units(true)).all(|c| c.is_ok())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn col(name: &str, t: &str, pk: u32) -> Column {
        Column {
            name: name.into(),
            decl_type: t.into(),
            not_null: false,
            pk,
            kind: ColumnKind::Ordinary,
            default: ColumnDefault::None,
        }
    }

    #[test]
    fn affinity_rules_in_order() {
        assert_eq!(
            Affinity::of_declared_type("INT UNSIGNED"),
            Affinity::Integer
        );
        assert_eq!(Affinity::of_declared_type("VARCHAR(10)"), Affinity::Text);
        assert_eq!(Affinity::of_declared_type(""), Affinity::Blob);
        assert_eq!(
            Affinity::of_declared_type("DOUBLE PRECISION"),
            Affinity::Real
        );
        assert_eq!(Affinity::of_declared_type("DECIMAL"), Affinity::Numeric);
        // "POINT" contains "INT".
        assert_eq!(
            Affinity::of_declared_type("FLOATING POINT"),
            Affinity::Integer
        );
    }

    #[test]
    fn the_rowid_is_named_by_a_name_no_column_takes() {
        let shape = |columns: Vec<Column>, without_rowid| TableShape {
            name: "t".into(),
            columns,
            without_rowid,
            strict: false,
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
        };
        assert_eq!(t.rowid_alias(), Some(0));
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

    #[test]
    fn short_records_leave_added_columns_to_their_default() {
        let t = TableShape {
            name: "t".into(),
            columns: vec![col("a", "INT", 0), col("b", "INT", 0)],
            without_rowid: false,
            strict: false,
        };
        let row = t.map_record(
            Some(1),
            vec![Value::Integer(5)],
            &[],
            &[],
            TextEncoding::Utf8,
        );
        assert_eq!(row.values, vec![Some(Value::Integer(5)), None]);
    }

    #[test]
    fn fit_rejects_wrong_shapes() {
        let t = TableShape {
            name: "m".into(),
            columns: vec![col("id", "INTEGER", 1), col("n", "INTEGER", 0)],
            without_rowid: false,
            strict: false,
        };
        assert!(t.fit(&[Value::Null, Value::Integer(3)]).is_some());
        assert!(
            t.fit(&[Value::Integer(9), Value::Integer(3)]).is_none(),
            "alias must be NULL"
        );
        assert!(
            t.fit(&[Value::Null, Value::Integer(3), Value::Integer(4)])
                .is_none(),
            "too wide"
        );
    }

    #[test]
    fn text_that_numeric_affinity_converts() {
        for yes in ["1", " 12 ", "-3.5", "+.5", "7.", "1e9", "2.5E-3"] {
            assert!(Affinity::text_converts(yes.as_bytes()), "{yes}");
        }
        for no in [
            "", "abc", "1a", "0x10", ".", "e5", "1e", "inf", "NaN", "1 2",
        ] {
            assert!(!Affinity::text_converts(no.as_bytes()), "{no}");
        }
    }

    #[test]
    fn every_value_not_as_sqlite_wrote_it_is_null_with_its_reason() {
        let t = TableShape {
            name: "t".into(),
            columns: vec![
                col("id", "INTEGER", 1),
                col("a", "TEXT", 0),
                col("b", "TEXT", 0),
                col("c", "INTEGER", 0),
                col("d", "TEXT", 0),
            ],
            without_rowid: false,
            strict: false,
        };
        let record = vec![
            Value::Null,
            Value::Text(vec![0xff, 0xfe]),
            Value::Integer(7),
            Value::Null,
            Value::Text(b"fine".to_vec()),
            Value::Integer(9),
        ];
        let row = t.map_record(Some(3), record, &[3], &[], TextEncoding::Utf8);
        let reasons: Vec<(Option<&str>, DamageReason)> = row
            .damage
            .iter()
            .map(|d| (d.column.as_deref(), d.reason))
            .collect();
        assert_eq!(
            reasons,
            vec![
                (Some("b"), DamageReason::AffinityNeverStores),
                (Some("c"), DamageReason::Unreadable),
                (None, DamageReason::BeyondColumns),
            ]
        );
        assert_eq!(row.damage[0].original, Value::Integer(7));
        // Text not valid UTF-8 is the file's bytes, kept and counted.
        assert_eq!(row.texts_not_in_encoding, 1);
        assert_eq!(
            row.values,
            vec![
                Some(Value::Integer(3)),
                Some(Value::Text(vec![0xff, 0xfe])),
                Some(Value::Null),
                Some(Value::Null),
                Some(Value::Text(b"fine".to_vec()))
            ]
        );
        assert!(text_in_encoding(&[0x41, 0x00], TextEncoding::Utf16le));
        assert!(!text_in_encoding(&[0x41], TextEncoding::Utf16le));
        assert!(
            !text_in_encoding(&[0xd8, 0x00], TextEncoding::Utf16be),
            "a lone surrogate"
        );
    }

    #[test]
    fn only_a_literal_default_is_constant() {
        use ColumnDefault::{Constant, Varying};
        for (expr, want) in [
            (Option::None, ColumnDefault::None),
            (Some("0"), Constant),
            (Some("-1.5"), Constant),
            (Some("'chat'"), Constant),
            (Some("'it''s'"), Constant),
            (Some("NULL"), Constant),
            (Some("x'00ff'"), Constant),
            (Some("0x10"), Constant),
            (Some("(0)"), Constant),
            (Some("CURRENT_TIMESTAMP"), Varying),
            (Some("current_date"), Varying),
            (Some("(datetime('now'))"), Varying),
            (Some("(strftime('%s','now') * 1000)"), Varying),
            (Some("'a' || 'b'"), Varying),
        ] {
            assert_eq!(ColumnDefault::of(expr), want, "{expr:?}");
        }
    }

    #[test]
    fn values_no_affinity_would_have_stored() {
        let text = |s: &str| Value::Text(s.as_bytes().to_vec());
        assert!(!Affinity::Text.could_store(&Value::Integer(3)));
        assert!(!Affinity::Text.could_store(&Value::Real(0.5)));
        assert!(Affinity::Text.could_store(&text("3")));
        assert!(!Affinity::Integer.could_store(&text(" 42")));
        assert!(!Affinity::Numeric.could_store(&text("1e3")));
        assert!(Affinity::Integer.could_store(&text("n/a")));
        assert!(Affinity::Real.could_store(&Value::Integer(2)));
        assert!(Affinity::Blob.could_store(&text("7")));
    }

    #[test]
    fn a_short_record_fits_only_columns_alter_table_could_add() {
        let mut t = TableShape {
            name: "m".into(),
            columns: vec![
                col("id", "INTEGER", 1),
                col("body", "TEXT", 0),
                col("flag", "INTEGER", 0),
            ],
            without_rowid: false,
            strict: false,
        };
        let short = [Value::Null, Value::Text("hi".into())];
        assert!(t.fit(&short).is_some(), "`flag` may have been added later");
        t.columns[2].not_null = true;
        assert!(
            t.fit(&short).is_none(),
            "NOT NULL without a default: never added"
        );
        t.columns[2].default = ColumnDefault::Constant;
        assert!(t.fit(&short).is_some(), "NOT NULL DEFAULT 0 can be added");
        t.columns[2].pk = 2;
        assert!(t.fit(&short).is_none(), "a key column is never added");
    }
}
