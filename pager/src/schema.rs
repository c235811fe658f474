//! The schema table ("Storage Of The SQL Database Schema"): `sqlite_schema`, rooted at
//! page 1, read with the same walker as every other table.
//!
//! ```text
//! CREATE TABLE sqlite_schema(type text, name text, tbl_name text, rootpage integer, sql text);
//! ```

use crate::database::Database;
use crate::finding::Finding;
use crate::types::{Location, PageNo};
use crate::value::{read_tree, DecodedRow, Value};

/// The `type` column of a schema row.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SchemaKind {
    /// "table"
    Table,
    /// "index"
    Index,
    /// "view"
    View,
    /// "trigger"
    Trigger,
    /// Anything else, as found.
    Other(String),
}

impl SchemaKind {
    fn from_text(s: &str) -> SchemaKind {
        match s {
            "table" => SchemaKind::Table,
            "index" => SchemaKind::Index,
            "view" => SchemaKind::View,
            "trigger" => SchemaKind::Trigger,
            other => SchemaKind::Other(other.to_string()),
        }
    }

    /// The text stored in the `type` column.
    pub fn as_str(&self) -> &str {
        match self {
            SchemaKind::Table => "table",
            SchemaKind::Index => "index",
            SchemaKind::View => "view",
            SchemaKind::Trigger => "trigger",
            SchemaKind::Other(s) => s,
        }
    }
}

/// One row of `sqlite_schema`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SchemaRow {
    /// `type`: table, index, view or trigger.
    pub kind: SchemaKind,
    /// `name` of the object.
    pub name: String,
    /// `tbl_name`: the table the object belongs to.
    pub tbl_name: String,
    /// `rootpage` as a page of the file; `None` for views, triggers, virtual tables, or
    /// a value that is not a page of the file.
    pub rootpage: Option<PageNo>,
    /// `sql`: the CREATE statement; `None` for automatic indexes.
    pub sql: Option<String>,
    /// Where the schema record is.
    pub location: Location,
}

impl SchemaRow {
    /// Whether this row describes a b-tree (a table or index with a root page).
    pub fn has_btree(&self) -> bool {
        self.rootpage.is_some() && matches!(self.kind, SchemaKind::Table | SchemaKind::Index)
    }

    /// Whether the CREATE statement declares a WITHOUT ROWID table.
    pub fn is_without_rowid(&self) -> bool {
        self.kind == SchemaKind::Table
            && self
                .sql
                .as_deref()
                .is_some_and(|s| table_options(s).iter().any(|o| o == "WITHOUT ROWID"))
    }
}

/// The table options of a CREATE TABLE statement, upper-cased, each's words joined by
/// one space: what follows the column list's closing parenthesis, split at commas
/// (`WITHOUT ROWID`, `STRICT`, in any order). Strings, quoted names and comments are
/// skipped over; a statement without a column list has none.
pub fn table_options(sql: &str) -> Vec<String> {
    let b = sql.as_bytes();
    let (mut i, mut depth, mut end) = (0, 0usize, None);
    while i < b.len() {
        i = past_quoted(b, i);
        match b.get(i) {
            Some(b'(') => depth += 1,
            Some(b')') => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    end = Some(i + 1);
                    break;
                }
            }
            _ => {}
        }
        i += 1;
    }
    let Some(end) = end else {
        return Vec::new();
    };
    let tail = sql.get(end..).unwrap_or_default();
    // Comments in the options are rare; dropping them keeps the words.
    let mut text = String::new();
    let mut rest = tail;
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix("--") {
            rest = r.find('\n').map_or("", |n| &r[n..]);
        } else if let Some(r) = rest.strip_prefix("/*") {
            rest = r.find("*/").map_or("", |n| &r[n + 2..]);
        } else {
            let c = rest.chars().next().unwrap_or(' ');
            text.push(c);
            rest = rest.get(c.len_utf8()..).unwrap_or_default();
        }
    }
    text.trim_end()
        .trim_end_matches(';')
        .split(',')
        .map(|o| {
            o.split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
                .to_ascii_uppercase()
        })
        .filter(|o| !o.is_empty())
        .collect()
}

/// Where a string, a quoted name or a comment starting at `i` ends (the index of its last
/// byte); `i` itself for any other byte. One past the end when it is not closed.
fn past_quoted(b: &[u8], mut i: usize) -> usize {
    let at = |i: usize| b.get(i).copied().unwrap_or(0);
    match at(i) {
        q @ (b'\'' | b'"' | b'`') => {
            i += 1;
            while i < b.len() {
                if at(i) == q {
                    // A doubled quote is one quote character inside.
                    if at(i + 1) != q {
                        return i;
                    }
                    i += 1;
                }
                i += 1;
            }
            i
        }
        b'[' => {
            while i < b.len() && at(i) != b']' {
                i += 1;
            }
            i
        }
        b'-' if at(i + 1) == b'-' => {
            while i < b.len() && at(i) != b'\n' {
                i += 1;
            }
            i
        }
        b'/' if at(i + 1) == b'*' => {
            i += 2;
            while i + 1 < b.len() && !(at(i) == b'*' && at(i + 1) == b'/') {
                i += 1;
            }
            i + 1
        }
        _ => i,
    }
}

/// The expressions of a CREATE TABLE statement's CHECK constraints, a column's or the
/// table's, each as written between its parentheses, in the statement's order. Strings,
/// quoted names and comments are skipped over (a column may be named `"check"`); a
/// CHECK whose parenthesis is never closed gives nothing.
pub fn check_constraints(sql: &str) -> Vec<String> {
    let b = sql.as_bytes();
    let word = |c: u8| c.is_ascii_alphanumeric() || c == b'_' || c == b'$' || c >= 0x80;
    let mut checks = Vec::new();
    // Where the expression of the CHECK being read starts, and its depth.
    let mut open: Option<(usize, usize)> = None;
    let mut after_check = false;
    let (mut i, mut depth) = (0, 0usize);
    while i < b.len() {
        let next = past_quoted(b, i);
        if next != i {
            i = next + 1;
            continue;
        }
        let c = b.get(i).copied().unwrap_or(0);
        if word(c) {
            let start = i;
            while b.get(i).is_some_and(|&c| word(c)) {
                i += 1;
            }
            after_check = open.is_none()
                && depth > 0
                && b.get(start..i)
                    .is_some_and(|w| w.eq_ignore_ascii_case(b"CHECK"));
            continue;
        }
        match c {
            b'(' => {
                depth += 1;
                if after_check {
                    open = Some((i + 1, depth));
                }
            }
            b')' => {
                if let Some((start, _)) = open.filter(|&(_, at)| at == depth) {
                    let expr = b.get(start..i).unwrap_or_default();
                    checks.push(String::from_utf8_lossy(expr).trim().to_string());
                    open = None;
                }
                depth = depth.saturating_sub(1);
            }
            _ => {}
        }
        if !c.is_ascii_whitespace() {
            after_check = false;
        }
        i += 1;
    }
    checks
}

/// The schema as read from the file.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Schema {
    /// Every readable schema row, in b-tree order.
    pub rows: Vec<SchemaRow>,
    /// Damage met reading it.
    pub findings: Vec<Finding>,
}

impl Schema {
    /// The row of the table or index named `name` (ASCII case-insensitive, as SQLite compares names).
    pub fn get(&self, name: &str) -> Option<&SchemaRow> {
        self.rows.iter().find(|r| r.name.eq_ignore_ascii_case(name))
    }

    /// The table the index named `index` is on, as its schema row names it.
    pub fn table_of_index(&self, index: &str) -> Option<&str> {
        self.rows
            .iter()
            .find(|r| r.kind == SchemaKind::Index && r.name.eq_ignore_ascii_case(index))
            .map(|r| r.tbl_name.as_str())
    }
}

/// Reads `sqlite_schema` from page 1.
pub fn read_schema(db: &Database<'_>) -> Schema {
    let (rows, mut findings) = read_tree(db, PageNo::FIRST);
    let mut out = Vec::new();
    for row in rows {
        findings.extend(row.findings.iter().cloned());
        match schema_row(db, &row) {
            Ok((r, f)) => {
                findings.extend(f);
                out.push(r);
            }
            Err(f) => findings.push(f),
        }
    }
    Schema {
        rows: out,
        findings,
    }
}

/// The text of a schema column, decoded from the database encoding.
fn text(db: &Database<'_>, v: Option<&Value>) -> Option<String> {
    match v {
        Some(Value::Text(b)) => Some(
            db.encoding()
                .decode(b)
                .unwrap_or_else(|| String::from_utf8_lossy(b).into_owned()),
        ),
        _ => None,
    }
}

/// Reads a decoded `sqlite_schema` record as a schema row, with the finding of an invalid
/// root page beside it; `Err` when it is not a schema record.
fn schema_row(
    db: &Database<'_>,
    row: &DecodedRow,
) -> Result<(SchemaRow, Option<Finding>), Finding> {
    if row.values.len() != 5 {
        return Err(Finding::SchemaRecordMalformed {
            at: row.location,
            columns: row.values.len() as u32,
        });
    }
    let (Some(kind), Some(name)) = (text(db, row.values.first()), text(db, row.values.get(1)))
    else {
        return Err(Finding::SchemaRecordMalformed {
            at: row.location,
            columns: 5,
        });
    };
    let raw_root = match row.values.get(3) {
        Some(Value::Integer(i)) => *i,
        _ => 0,
    };
    let rootpage = u32::try_from(raw_root).ok().and_then(|n| db.page_no(n));
    let finding = (rootpage.is_none() && raw_root != 0).then_some(Finding::SchemaRootPageInvalid {
        at: row.location,
        rootpage: raw_root,
    });
    Ok((
        SchemaRow {
            kind: SchemaKind::from_text(&kind),
            name,
            tbl_name: text(db, row.values.get(2)).unwrap_or_default(),
            rootpage,
            sql: text(db, row.values.get(4)),
            location: row.location,
        },
        finding,
    ))
}

/// Searches every table leaf page outside `skip` (pass the freelist: dropped objects are
/// not live) for records shaped like `sqlite_schema` rows: five columns, a type of table,
/// index, view or trigger, names as text, an integer root page, and a CREATE statement or
/// NULL. When page 1 is damaged, the schema's other leaf pages still hold their rows.
pub fn scan_for_schema_rows(db: &Database<'_>, skip: &crate::types::PageSet) -> Vec<SchemaRow> {
    let enc = db.encoding();
    let kinds: Vec<Vec<u8>> = ["table", "index", "view", "trigger"]
        .iter()
        .map(|k| enc.encode(k))
        .collect();
    let create = enc.encode("CREATE");
    let mut out: Vec<SchemaRow> = Vec::new();
    for cell in db.table_leaf_cells() {
        if skip.contains(cell.location.page) {
            continue;
        }
        // A cheap look at the record header before decoding: five columns, the first
        // a short text.
        let Some(payload) = cell.cell.payload() else {
            continue;
        };
        let Ok(header) =
            crate::record::parse_record_header(payload.local, payload.total_len, cell.location)
        else {
            continue;
        };
        if header.serial_types.len() != 5
            || !matches!(header.serial_types.first(), Some(crate::record::SerialType::Text(n)) if (4..=14).contains(n))
        {
            continue;
        }
        let Ok(row) = crate::value::decode_cell(db, &cell) else {
            continue;
        };
        let first_is_kind =
            matches!(row.values.first(), Some(Value::Text(t)) if kinds.iter().any(|k| k == t));
        let sql_ok = match row.values.get(4) {
            Some(Value::Null) => true,
            Some(Value::Text(t)) => {
                let trimmed: &[u8] = t
                    .get(
                        t.iter()
                            .position(|b| !b.is_ascii_whitespace() && *b != 0)
                            .unwrap_or(0)..,
                    )
                    .unwrap_or_default();
                trimmed.len() >= create.len()
                    && trimmed
                        .iter()
                        .zip(&create)
                        .all(|(a, b)| a.eq_ignore_ascii_case(b))
            }
            _ => false,
        };
        if !(first_is_kind && sql_ok) {
            continue;
        }
        if let Ok((r, _)) = schema_row(db, &row) {
            if !out.iter().any(|o| o.name.eq_ignore_ascii_case(&r.name)) {
                out.push(r);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The options after the column list, in any order, whatever the list holds.
    #[test]
    fn table_options_in_any_order() {
        let options = |sql: &str| table_options(sql);
        assert_eq!(
            options("CREATE TABLE t(a INTEGER PRIMARY KEY) WITHOUT ROWID, STRICT"),
            ["WITHOUT ROWID", "STRICT"]
        );
        assert_eq!(
            options("create table t(a, b, primary key(a)) strict ,  without\n rowid ;"),
            ["STRICT", "WITHOUT ROWID"]
        );
        assert_eq!(
            options(
                "CREATE TABLE t(a TEXT DEFAULT ')' /* ) */, \"b)\" CHECK (a <> '(')) WITHOUT ROWID"
            ),
            ["WITHOUT ROWID"]
        );
        assert!(options("CREATE TABLE t(a) -- without rowid").is_empty());
        assert!(options("CREATE TABLE t AS SELECT 1").is_empty());
    }

    /// Every CHECK's expression, a column's and the table's, whatever surrounds them.
    #[test]
    fn check_constraints_of_columns_and_table() {
        assert_eq!(
            check_constraints(
                "CREATE TABLE t(a INT CHECK (a > 0), \"check\" TEXT DEFAULT 'CHECK(x)' /* CHECK(y) */, \n\
                 b check(length(b) < 9 AND b <> ')'), CONSTRAINT c CHECK((a, b) IS NOT (1, 2)))"
            ),
            ["a > 0", "length(b) < 9 AND b <> ')'", "(a, b) IS NOT (1, 2)"]
        );
        assert!(check_constraints("CREATE TABLE t(a, xcheck(a))").is_empty());
        assert!(check_constraints("CREATE TABLE t(a CHECK (a > (0)").is_empty());
        assert!(check_constraints("CREATE TABLE t(a) -- CHECK (a)").is_empty());
        assert!(check_constraints("CHECK (a)").is_empty());
    }

    /// Any text, however its quotes, comments and parentheses fall: no panic, and every
    /// expression given is a piece of it.
    #[test]
    fn check_constraints_of_any_text_are_pieces_of_it() {
        let pieces = [
            "CHECK", "check", "(", ")", "'", "\"", "`", "[", "]", "--", "/*", "*/", "\n", " ", "a",
            "é", "''", ",",
        ];
        let mut state = 0x5eed_u64;
        for _ in 0..20_000 {
            let mut sql = String::from("CREATE TABLE t(");
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1);
            for k in 0..(state >> 60) * 3 {
                let pick = (state.rotate_left(k as u32 * 5) >> 32) as usize % pieces.len();
                sql.push_str(pieces[pick]);
            }
            for expr in check_constraints(&sql) {
                assert!(sql.contains(&expr), "{expr:?} not in {sql:?}");
            }
            let _ = table_options(&sql);
        }
    }
    use crate::testing::Db;
    use crate::varint::read_varint;

    /// File offset of the first schema record's payload on page 1.
    fn first_schema_payload(db: &Db) -> usize {
        let opened = Database::open(&db.bytes).unwrap();
        let page = opened.page(PageNo::FIRST).unwrap();
        let h = page.btree_header().unwrap();
        let cell = usize::from(page.cell_pointers(&h).next().unwrap());
        let (_, n1) = read_varint(&db.bytes[cell..]).unwrap();
        let (_, n2) = read_varint(&db.bytes[cell + n1..]).unwrap();
        cell + n1 + n2
    }

    /// Body length of a value of a 1-byte serial type ("Record Format").
    fn body_len(serial_type: u8) -> usize {
        match serial_type {
            0 | 8 | 9 => 0,
            1..=4 => usize::from(serial_type),
            5 => 6,
            6 | 7 => 8,
            t => usize::from(t - 12) / 2,
        }
    }

    #[test]
    fn reads_every_schema_row() {
        let db = Db::named("generic-4096-utf8");
        let opened = Database::open(&db.bytes).unwrap();
        let schema = read_schema(&opened);
        assert!(schema.findings.is_empty());
        assert_eq!(schema.rows.len(), db.fixture.schema.len());
        for (row, expected) in schema.rows.iter().zip(&db.fixture.schema) {
            assert_eq!(row.name, expected.name);
            assert_eq!(row.rootpage.map_or(0, PageNo::get), expected.rootpage);
            assert_eq!(row.sql, expected.sql);
        }
        assert!(schema.get("kv").unwrap().is_without_rowid());
    }

    #[test]
    fn schema_root_page_past_the_end() {
        let mut db = Db::named("generic-4096-utf8");
        let p = first_schema_payload(&db);
        // Header: size, then serial types of type, name, tbl_name, rootpage (1 byte each here).
        let types: Vec<u8> = db.bytes[p + 1..p + 5].to_vec();
        assert_eq!(types[3], 1, "rootpage stored as an 8-bit integer");
        let root_at = p
            + usize::from(db.bytes[p])
            + body_len(types[0])
            + body_len(types[1])
            + body_len(types[2]);
        db.bytes[root_at] = 0x7f;
        assert!(db
            .findings()
            .iter()
            .any(|f| matches!(f, Finding::SchemaRootPageInvalid { rootpage: 127, .. })));
    }

    #[test]
    fn schema_type_column_not_text() {
        let mut db = Db::named("generic-4096-utf8");
        let p = first_schema_payload(&db);
        assert_eq!(db.bytes[p + 1] % 2, 1, "type is text");
        db.bytes[p + 1] -= 1; // serial type of `type`: text of n bytes -> blob of n bytes
        let at = Location::new(PageNo::FIRST, db.cell(1, 0).offset);
        let schema = read_schema(&Database::open(&db.bytes).unwrap());
        assert_eq!(
            schema.findings,
            vec![Finding::SchemaRecordMalformed { at, columns: 5 }]
        );
        assert_eq!(schema.rows.len(), db.fixture.schema.len() - 1);
    }

    #[test]
    fn schema_record_with_four_columns() {
        let mut db = Db::named("generic-4096-utf8");
        let p = first_schema_payload(&db);
        assert!(
            db.bytes[p + 1..p + 5].iter().all(|t| *t < 0x80),
            "type, name, tbl_name and rootpage have 1-byte serial types"
        );
        // Header size 5: the header ends after rootpage's serial type, and sql's is read as
        // body bytes. The record is one column short, and no longer adds up to its payload.
        db.bytes[p] = 5;
        let cell = db.cell(1, 0);
        let at = Location::new(PageNo::FIRST, cell.offset);
        let four_bodies: usize = db.bytes[p + 1..p + 5].iter().map(|t| body_len(*t)).sum();
        let schema = read_schema(&Database::open(&db.bytes).unwrap());
        assert_eq!(
            schema.findings,
            vec![
                Finding::RecordSizeMismatch {
                    at,
                    header_says: 5 + four_bodies as u64,
                    payload_len: cell.payload.unwrap().total_len
                },
                Finding::SchemaRecordMalformed { at, columns: 4 },
            ]
        );
        assert_eq!(schema.rows.len(), db.fixture.schema.len() - 1);
    }
}
