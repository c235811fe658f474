//! Key rows as SQLite stored them ("Record Format"), and whether those bytes are still
//! somewhere in the database file: the oracle that tells a carving test which removed
//! rows a carver can find at all.
//!
//! ```text
//! record = header                                          body
//!          +-------------+--------------+-----+            +---------+---------+-----+
//!          | header size | serial type 0 | ... |            | value 0 | value 1 | ... |
//!          |  (varint)   |   (varint)    |     |            |  bytes  |  bytes  |     |
//!          +-------------+--------------+-----+            +---------+---------+-----+
//! ```
//!
//! A freed cell keeps its body but usually not its header: the first four bytes of a
//! freeblock are the next-freeblock pointer and the freeblock's size, written over the
//! cell's payload length, rowid and the front of the record header ("B-tree Pages"). So
//! a row counts as present when its body is in the file, and [`Presence::WholeRecord`]
//! notes the rows whose header survived as well.
//!
//! The key gives values as text only, so the storage class of each value is inferred from
//! the column's affinity ("Type Affinity"), as SQLite decided it on insert. Where the key
//! cannot tell (a number in a column without affinity), every plausible record is tried.

use pager::varint::varint_len;
use pager::TextEncoding;
use reconstruct::shape::Affinity;
use recovery::stages::load::bulk::put_varint;

use super::{KeyRow, KeyTable, KeyValue};

/// What the record format of a database depends on, from its header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecordFormat {
    /// The database text encoding (header offset 56).
    pub text_encoding: TextEncoding,
    /// The schema format number (header offset 44). From 4 on, the integers 0 and 1 take
    /// serial types 8 and 9 and no body bytes; format 1 to 3 stores them in one byte.
    pub schema_format: u32,
}

impl RecordFormat {
    /// Reads the text encoding and schema format number from the first 100 bytes of a
    /// database file. Any encoding but 2 and 3 (0 in a database with no schema yet) is
    /// taken as UTF-8.
    pub fn of(file: &[u8]) -> RecordFormat {
        let u32_at = |at: usize| {
            file.get(at..at + 4)
                .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
                .unwrap_or(0)
        };
        RecordFormat {
            text_encoding: TextEncoding::from_header_field(u32_at(56))
                .unwrap_or(TextEncoding::Utf8),
            schema_format: u32_at(44),
        }
    }
}

/// One value as a record holds it: its serial type and its body bytes.
#[derive(Clone, Debug, PartialEq)]
struct StoredValue {
    serial_type: u64,
    bytes: Vec<u8>,
}

/// A record rebuilt from a key row.
#[derive(Clone, Debug, PartialEq)]
pub struct Record {
    /// The record header: its size as a varint, then one serial type per value.
    pub header: Vec<u8>,
    /// The values' bytes, concatenated.
    pub body: Vec<u8>,
}

impl Record {
    fn new(values: &[&StoredValue]) -> Record {
        let mut types = Vec::new();
        for v in values {
            put_varint(&mut types, v.serial_type);
        }
        // The header size counts its own varint.
        let mut size = types.len() as u64 + 1;
        while varint_len(size) as u64 + types.len() as u64 != size {
            size = varint_len(size) as u64 + types.len() as u64;
        }
        let mut header = Vec::new();
        put_varint(&mut header, size);
        header.extend_from_slice(&types);
        Record {
            header,
            body: values
                .iter()
                .flat_map(|v| v.bytes.iter().copied())
                .collect(),
        }
    }

    /// Header and body, as they stand in a cell's payload.
    pub fn bytes(&self) -> Vec<u8> {
        [self.header.as_slice(), self.body.as_slice()].concat()
    }
}

/// The most records [`stored_records`] returns for one row; the corpus never needs more
/// than one (every removed row has one reading).
const MAX_READINGS: usize = 64;

/// Every record `row` of `t` can have been stored as: usually exactly one. Values follow
/// the column's affinity (see [`stored_values`]); the rowid-alias column, if any, is
/// stored as NULL (its value is the rowid, "Rowid Tables").
pub fn stored_records(
    t: &KeyTable,
    row: &KeyRow,
    rowid_alias: Option<usize>,
    format: RecordFormat,
) -> Vec<Record> {
    let per_column: Vec<Vec<StoredValue>> = row
        .values
        .iter()
        .enumerate()
        .map(|(i, v)| {
            if Some(i) == rowid_alias {
                return vec![null()];
            }
            // The key's `<columnTypeName>` (`INTEGER`, `REAL`, `TEXT`) names the declared
            // type; its `<attribute>` carries the constraints too, and SQLite's rules
            // would find the `INT` of a word such as `CONSTRAINT` in it.
            let declared = t.column_types.get(i).map(String::as_str).unwrap_or("");
            stored_values(v, Affinity::of_declared_type(declared), format)
        })
        .collect();
    // Cartesian product of the readings, in order, capped.
    let mut records: Vec<Vec<&StoredValue>> = vec![Vec::new()];
    for readings in &per_column {
        records = records
            .iter()
            .flat_map(|prefix| {
                readings.iter().map(move |v| {
                    let mut r = prefix.clone();
                    r.push(v);
                    r
                })
            })
            .take(MAX_READINGS)
            .collect();
    }
    records.iter().map(|values| Record::new(values)).collect()
}

/// The ways SQLite can have stored the key's `value` in a column of `affinity`, most
/// likely first ("Type Affinity"):
///
/// * TEXT: the text as written.
/// * INTEGER and NUMERIC: an integer literal as an integer; a real literal as a real,
///   or as an integer when it is integral and fits 64 bits; anything else as text.
/// * REAL: a number as a real, except that an integral real is written to disk as an
///   integer (SQLite's space optimization for REAL columns; it reads it back as a real).
///   Checked with SQLite: `12.0` in a `FLOAT` column is serial type 1, `0.0` type 8.
/// * BLOB (no affinity): the key cannot tell `'12'` from `12`; both.
///
/// A real is the `f64` nearest to the key's text; the key writes five decimals, as the
/// generating scripts do.
fn stored_values(value: &KeyValue, affinity: Affinity, format: RecordFormat) -> Vec<StoredValue> {
    let text = match value {
        KeyValue::Null => return vec![null()],
        KeyValue::Text(s) => s.as_str(),
    };
    let as_text = stored_text(text, format.text_encoding);
    let number = parse_number(text);
    match (affinity, number) {
        (Affinity::Text, _) | (_, None) => vec![as_text],
        (Affinity::Integer | Affinity::Numeric | Affinity::Real, Some(n)) => {
            vec![stored_number(n, affinity, format)]
        }
        (Affinity::Blob, Some(n)) => vec![stored_number(n, affinity, format), as_text],
    }
}

/// A number as the key writes it.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Number {
    Integer(i64),
    Real(f64),
}

/// An integer literal (`-123`) or a real literal with a decimal point (`4818407860.50000`);
/// anything else, including `1e5` or a number with spaces, is text to the tests.
fn parse_number(s: &str) -> Option<Number> {
    let digits = s.strip_prefix('-').unwrap_or(s);
    let (int_part, frac_part) = match digits.split_once('.') {
        Some((i, f)) => (i, Some(f)),
        None => (digits, None),
    };
    let all_digits = |p: &str| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit());
    if !all_digits(int_part) {
        return None;
    }
    match frac_part {
        None => match s.parse::<i64>() {
            Ok(i) => Some(Number::Integer(i)),
            // Beyond 64 bits SQLite takes an integer literal as a real.
            Err(_) => s.parse::<f64>().ok().map(Number::Real),
        },
        Some(f) if all_digits(f) => s.parse::<f64>().ok().map(Number::Real),
        Some(_) => None,
    }
}

fn stored_number(n: Number, affinity: Affinity, format: RecordFormat) -> StoredValue {
    match n {
        Number::Integer(i) => stored_integer(i, format),
        // Integral reals become integers in INTEGER, NUMERIC and (on disk) REAL columns,
        // when they fit 64 bits: -2^63 <= r < 2^63.
        Number::Real(r)
            if affinity != Affinity::Blob
                && r.fract() == 0.0
                && (-(2f64.powi(63))..2f64.powi(63)).contains(&r) =>
        {
            stored_integer(r as i64, format)
        }
        Number::Real(r) => StoredValue {
            serial_type: 7,
            bytes: r.to_be_bytes().to_vec(),
        },
    }
}

/// An integer in the fewest bytes of 1, 2, 3, 4, 6 or 8 (serial types 1 to 6), or no
/// bytes for 0 and 1 (serial types 8 and 9, schema format 4 and later).
fn stored_integer(i: i64, format: RecordFormat) -> StoredValue {
    if format.schema_format >= 4 && (i == 0 || i == 1) {
        return StoredValue {
            serial_type: 8 + i as u64,
            bytes: Vec::new(),
        };
    }
    let (serial_type, len) = [(1, 1), (2, 2), (3, 3), (4, 4), (5, 6), (6, 8)]
        .into_iter()
        .find(|&(_, len)| {
            let bits = 8 * len - 1;
            len == 8 || (-(1i64 << bits)..(1i64 << bits)).contains(&i)
        })
        .unwrap_or((6, 8));
    StoredValue {
        serial_type,
        bytes: i.to_be_bytes()[8 - len..].to_vec(),
    }
}

fn stored_text(s: &str, encoding: TextEncoding) -> StoredValue {
    let bytes = encoding.encode(s);
    StoredValue {
        serial_type: 13 + 2 * bytes.len() as u64,
        bytes,
    }
}

fn null() -> StoredValue {
    StoredValue {
        serial_type: 0,
        bytes: Vec::new(),
    }
}

/// Bodies shorter than this occur by chance anywhere in a file (4 bytes: one in 2^32 at
/// each offset, and the files are below 2^19 bytes), so their presence says nothing.
pub const MIN_TELLING_BODY: usize = 4;

/// Whether a removed row's bytes are still in the database file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Presence {
    /// Header and body, contiguous, start at `offset`.
    WholeRecord { offset: usize },
    /// The body starts at `offset`; the header is not in front of it (usually a freeblock
    /// header overwrote it).
    BodyOnly { offset: usize },
    /// The body is shorter than [`MIN_TELLING_BODY`]: found or not, it proves nothing.
    TooShort,
    /// The body is nowhere in the file.
    Absent,
}

impl Presence {
    /// The row's body is in the file, so a carver can return the row.
    pub fn is_present(self) -> bool {
        matches!(
            self,
            Presence::WholeRecord { .. } | Presence::BodyOnly { .. }
        )
    }
}

/// Where the first of `readings` found in `file` is: a whole record beats a body alone.
pub fn presence(file: &[u8], readings: &[Record]) -> Presence {
    if readings.iter().all(|r| r.body.len() < MIN_TELLING_BODY) {
        return Presence::TooShort;
    }
    let telling = || readings.iter().filter(|r| r.body.len() >= MIN_TELLING_BODY);
    if let Some(offset) = telling().find_map(|r| find(file, &r.bytes())) {
        return Presence::WholeRecord { offset };
    }
    match telling().find_map(|r| find(file, &r.body)) {
        Some(offset) => Presence::BodyOnly { offset },
        None => Presence::Absent,
    }
}

/// The first offset of `needle` in `haystack` (a plain scan: the corpus files are small).
fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    let (&first, rest) = needle.split_first()?;
    haystack
        .iter()
        .enumerate()
        .filter(|&(_, &b)| b == first)
        .map(|(i, _)| i)
        .find(|&i| haystack.get(i + 1..i + needle.len()) == Some(rest))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nemetz::KeyTableMeta;

    /// A key table of the corpus's shape: an `INTEGER PRIMARY KEY`, then one column of
    /// each affinity the key names, and one without a type.
    fn table(rows: &[[&str; 5]]) -> KeyTable {
        let strings = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        KeyTable {
            name: "t".into(),
            key_name: "t".into(),
            deleted: false,
            columns: strings(&["id", "i", "r", "s", "x"]),
            column_types: strings(&["INTEGER", "INTEGER", "REAL", "TEXT", ""]),
            column_attributes: strings(&["INTEGER PRIMARY KEY", "INT", "FLOAT", "TEXT", ""]),
            rows: rows
                .iter()
                .map(|r| KeyRow {
                    deleted: false,
                    values: r
                        .iter()
                        .map(|v| match *v {
                            "NULL" => KeyValue::Null,
                            v => KeyValue::Text(v.to_string()),
                        })
                        .collect(),
                })
                .collect(),
            meta: KeyTableMeta::default(),
        }
    }

    #[test]
    fn integral_reals_of_a_real_column_are_stored_as_integers() {
        let t = table(&[["7", "20001", "12.00000", "Clara", "0.00000"]]);
        let format = RecordFormat {
            text_encoding: TextEncoding::Utf8,
            schema_format: 4,
        };
        let records = stored_records(&t, &t.rows[0], Some(0), format);
        #[rustfmt::skip]
        let header = [
            0x06, // header size: 6 bytes
            0x00, // id: NULL, the rowid alias
            0x02, // i: 2-byte integer
            0x01, // r: 1-byte integer, though the value is the REAL 12.0
            0x17, // s: text of 5 bytes
            0x07, // x (no affinity): the real 0.0 as written ...
        ];
        #[rustfmt::skip]
        let body = [
            0x4e, 0x21,                   // 20001
            0x0c,                         // 12
            b'C', b'l', b'a', b'r', b'a', // Clara
            0, 0, 0, 0, 0, 0, 0, 0,       // 0.0
        ];
        assert_eq!(records[0].header, header);
        assert_eq!(records[0].body, body);
        // ... or the text '0.00000': without an affinity the key cannot tell.
        assert_eq!(records.len(), 2);
        assert_eq!(records[1].header.last(), Some(&(13 + 2 * 7)));
        assert!(records[1].body.ends_with(b"0.00000"));
    }

    /// SQLite writes the records: each rebuilt record must be in its file, header and all.
    #[test]
    fn rebuilt_records_are_the_bytes_sqlite_writes() -> crate::TestResult {
        let t = table(&[
            ["1", "20001", "12.00000", "Clara", "NULL"],
            ["2", "-1", "-843767763.97404", "Günther", "1.50000"],
            ["3", "4294967296", "1.00000", "", "abc"],
            ["4", "0", "0.00000", "自由", "12"],
            ["5", "-140737488355329", "1653469962.37220", "x", "NULL"],
        ]);
        let scratch = crate::Scratch::new("nemetz-record");
        for (encoding, pragma) in [
            (TextEncoding::Utf8, "UTF-8"),
            (TextEncoding::Utf16le, "UTF-16le"),
            (TextEncoding::Utf16be, "UTF-16be"),
        ] {
            let path = scratch.path(&format!("{pragma}.db"));
            let conn = rusqlite::Connection::open(&path)?;
            conn.execute_batch(&format!(
                "PRAGMA encoding = '{pragma}';
                 CREATE TABLE t (id INTEGER PRIMARY KEY, i INT, r FLOAT, s TEXT, x);"
            ))?;
            // Values as the corpus scripts write them: SQL literals, strings quoted.
            for row in &t.rows {
                let literals: Vec<String> = row
                    .values
                    .iter()
                    .zip(&t.column_types)
                    .map(|(v, ty)| match v.as_text() {
                        None => "NULL".to_string(),
                        Some(s) if ty == "TEXT" || s == "abc" => format!("'{s}'"),
                        Some(s) => s.to_string(),
                    })
                    .collect();
                conn.execute(
                    &format!("INSERT INTO t VALUES ({})", literals.join(", ")),
                    [],
                )?;
            }
            drop(conn);
            let file = std::fs::read(&path)?;
            let format = RecordFormat::of(&file);
            assert_eq!(format.text_encoding, encoding);
            for row in &t.rows {
                let readings = stored_records(&t, row, Some(0), format);
                assert!(
                    matches!(presence(&file, &readings), Presence::WholeRecord { .. }),
                    "{pragma}: {:?} not in the file",
                    row.values
                );
            }
        }
        Ok(())
    }
}
