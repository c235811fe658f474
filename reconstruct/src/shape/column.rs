//! One declared column: its affinity ("Determination Of Column Affinity"), its type in a
//! STRICT table, how it is stored, and whether its DEFAULT may fill a recovered row.

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
    /// is never there. Text is judged as the database's encoding spells it.
    pub fn could_store(self, v: &Value, encoding: TextEncoding) -> bool {
        match (self, v) {
            (Affinity::Text, Value::Integer(_) | Value::Real(_)) => false,
            (Affinity::Integer | Affinity::Real | Affinity::Numeric, Value::Text(t)) => {
                !Affinity::text_converts_in(t, encoding)
            }
            _ => true,
        }
    }

    /// Whether INTEGER, REAL and NUMERIC affinity turn this text into a number on the way
    /// in (so that SQLite never stores it as text in such a column): a decimal number,
    /// optionally signed, with a fraction and an exponent, between spaces.
    // SQLite: sqlite3AtoF (util.c), as applyNumericAffinity uses it
    pub fn text_converts(text: &[u8]) -> bool {
        // SQLite's white space (sqlite3Isspace) is ASCII's and the vertical tab.
        let space = |b: &u8| b.is_ascii_whitespace() || *b == 0x0b;
        let start = text.iter().position(|b| !space(b)).unwrap_or(text.len());
        let end = text
            .iter()
            .rposition(|b| !space(b))
            .map_or(start, |i| i + 1);
        let t = text.get(start..end).unwrap_or_default();
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

    /// [`Affinity::text_converts`] for text in the database's encoding: UTF-16 text is a
    /// number only when every character is ASCII (SQLite reads the low bytes, and an odd
    /// last byte is no character).
    pub fn text_converts_in(text: &[u8], encoding: TextEncoding) -> bool {
        let high = match encoding {
            TextEncoding::Utf8 => return Affinity::text_converts(text),
            TextEncoding::Utf16le => 1,
            TextEncoding::Utf16be => 0,
        };
        let units = text.chunks_exact(2);
        if units.clone().any(|u| u.get(high) != Some(&0)) {
            return false;
        }
        let ascii: Vec<u8> = units.filter_map(|u| u.get(1 - high).copied()).collect();
        Affinity::text_converts(&ascii)
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

#[cfg(test)]
mod tests {
    use super::*;

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
    fn utf16_text_converts_as_its_characters_read() {
        let utf16 = |s: &str, be: bool| -> Vec<u8> {
            s.encode_utf16()
                .flat_map(|u| if be { u.to_be_bytes() } else { u.to_le_bytes() })
                .collect()
        };
        for be in [false, true] {
            let enc = if be {
                TextEncoding::Utf16be
            } else {
                TextEncoding::Utf16le
            };
            assert!(Affinity::text_converts_in(&utf16(" 42", be), enc));
            assert!(Affinity::text_converts_in(&utf16("\u{b}-1.5e3", be), enc));
            assert!(!Affinity::text_converts_in(&utf16("4\u{662}", be), enc));
        }
        // U+370D is 0D 37 in UTF-16le: "\r7" read as single bytes, a number; not as text.
        assert!(Affinity::text_converts(b"\r7"));
        assert!(!Affinity::text_converts_in(
            &utf16("\u{370d}", false),
            TextEncoding::Utf16le
        ));
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
        let utf8 = TextEncoding::Utf8;
        assert!(!Affinity::Text.could_store(&Value::Integer(3), utf8));
        assert!(!Affinity::Text.could_store(&Value::Real(0.5), utf8));
        assert!(Affinity::Text.could_store(&text("3"), utf8));
        assert!(!Affinity::Integer.could_store(&text(" 42"), utf8));
        assert!(!Affinity::Numeric.could_store(&text("1e3"), utf8));
        assert!(Affinity::Integer.could_store(&text("n/a"), utf8));
        assert!(Affinity::Real.could_store(&Value::Integer(2), utf8));
        assert!(Affinity::Blob.could_store(&text("7"), utf8));
    }
}
