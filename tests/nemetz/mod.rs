//! Loader for the standardized SQLite forensic corpus of Nemetz, Schmitt and Freiling
//! (DFRWS EU 2018, CC0), vendored unchanged in `tests/nemetz/corpus/` (see its `README.md`
//! and `SHA256SUMS`): 77 databases `NN-MM.db` in folders `01`..`0E`, each with the `.sql`
//! script that built it and an `.xml` answer key. [`corpus_dir`] finds it;
//! `SALVAGE_NEMETZ_DIR` points the tests at another copy.
//!
//! No external crates: the keys are read with the small tolerant parser in [`xml`].
//!
//! # Answer key format (as found in the files)
//!
//! ```text
//! <database>
//!   <meta><tables/><indices/><views/><triggers/><entries/></meta>   totals for the file
//!   <description> Dublin Core: dc:subject = category, dc:description = subject </description>
//!   <element>                                        one per table / index / view / trigger
//!     <meta><type>table</type><name/><reference/><deleted>True|False</deleted>
//!           <columns/><rowsTotal/><rowsAlive/><rowsDeleted/></meta>
//!     <sql><columnDefinition><meta><name/><attribute/></meta><columnTypeName/></columnDefinition>…</sql>
//!     <entries><row [deleted="1"]><column><name/><content/></column>…</row>…</entries>
//!   </element>
//!   <element>  index/view/trigger: <meta> with type/name/reference, <sql><statement/>…</sql>, no rows
//! </database>
//! ```
//!
//! * Names and contents are raw text, never trimmed (a table may be called `" "` or
//!   `"\t"`, and text cells may start with a space). An empty name is written `<name />`.
//!   No entity references occur anywhere in the corpus (no `&`, `<` in data).
//! * SQL NULL is written as the text `NULL` (no real cell holds the string "NULL").
//! * Integers are written in decimal; reals with exactly five decimals (`4818407860.50000`).
//! * No key table contains a blob (blobs only exist in FTS/R-tree shadow tables, which
//!   the keys do not list); [`KeyValue::matches`] still accepts hex / `X'..'` notation.
//! * `<meta><indices>` counts automatic indices too (03-02/03-04/03-05), while only
//!   explicitly created indices get an `<element>` (05-04); `<entries>` is the sum of
//!   `rowsTotal` over tables (index rows are not counted).
//! * Two keys are not well-formed XML: `01-18` (raw U+000B U+000C in the table name) and
//!   `05-04` (the index element's `<sql>` is never closed). Both are parsed; the repair is
//!   recorded in [`Case::quirks`].
//!
//! # What an exact read-back test can assert (verified with Debian sqlite3 3.40.1)
//!
//! Every key table was compared with `SELECT * FROM <table>` on a copy of its database
//! (rows matched as a multiset, cells with [`KeyValue::matches`]):
//!
//! * 77 cases, 92 key tables, 19 696 key rows (19 487 flagged alive, 209 deleted).
//! * 82 tables exist in `sqlite_schema`; the other 10 were dropped (0A, 0B; see [`Case`]).
//! * 78 of the 82 agree exactly as the key stands; 09-01 agrees exactly once the 1148
//!   [`known_key_error`] rows are excluded; SQLite returns 18 269 live rows in total and
//!   [`readable_live_rows`] + [`row_matches`] accounts for every one of them in all 82 tables.
//! * Of the 19 487 rows the key flags alive, 18 101 match exactly; the 1386 others are
//!   1148 (09-01 key error) + 70 (alive rows of dropped tables) + 167 (R-tree f32, matched by
//!   [`KeyValue::matches_f32`]) + 1 (05-02 stale trigger timestamp, [`known_value_error`]).
//! * No key-deleted row is still live. Live rows appear in the key in rowid order (the
//!   R-tree's `SELECT *` returns node order instead).
//! * 01-18 only agrees under the corrected table name (see [`KeyTable::name`]).
//! * Virtual tables: 06-01/06-02 (R-tree) and 06-03 (FTS4) have rootpage 0; a page reader
//!   must decode their shadow tables (see [`Readback`]).
//!
//! [`readback`] classifies each table for a test: `Exact`, `Dropped`, `RTreeFloat32`,
//! `Fts4Content`, `StaleTriggerTimestamp`.

#![allow(dead_code)]

pub mod record;
pub mod xml;

use std::path::{Path, PathBuf};

/// Totals from the key's top-level `<meta>` section (absent fields are `None`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct KeyMeta {
    pub tables: Option<usize>,
    pub indices: Option<usize>,
    pub views: Option<usize>,
    pub triggers: Option<usize>,
    /// Sum of `rowsTotal` over all tables (live + deleted rows).
    pub entries: Option<usize>,
}

/// Counts from a table element's `<meta>` section.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct KeyTableMeta {
    pub columns: Option<usize>,
    pub rows_total: Option<usize>,
    pub rows_alive: Option<usize>,
    pub rows_deleted: Option<usize>,
}

/// One corpus case.
///
/// # Tables listed in the key that are not in the database schema
///
/// Every key table with `deleted == false` exists in `sqlite_schema` of the database under
/// exactly [`KeyTable::name`] (checked against Debian's sqlite3 3.40.1; for `01-18` only
/// after the name correction noted in its quirks). Key tables with `deleted == true` were
/// dropped by the generating script (`DROP TABLE`) and are **not** in the schema:
///
/// * category `0A` (deleted tables): every table of `0A-01`..`0A-05`; those databases have
///   an empty schema;
/// * category `0B` (overwritten tables): `users` in `0B-01` and `customers` in `0B-02`.
///
/// Rows of such tables are flagged "alive" (`deleted="0"`) in the key when they were not
/// deleted before the `DROP`, but a page reader that walks live tables from
/// `sqlite_schema` cannot return them as live rows; they are only recoverable from free
/// pages. Use [`readable_live_rows`] to get exactly the rows a live read-back must return.
///
/// Virtual tables (`06-01`, `06-02` R-tree, `06-03` FTS4) are listed in the key under the
/// virtual table's name only, with the columns the user declared; their shadow tables
/// (`coordinates_node`, `users_content`, …) are in the schema but not in the key. The
/// virtual table's own schema row has `rootpage = 0` — its data lives in the shadow tables.
#[derive(Debug, Clone)]
pub struct Case {
    /// `"01-01"` … `"0E-02"`.
    pub id: String,
    pub db_path: PathBuf,
    pub sql_path: PathBuf,
    pub xml_path: PathBuf,
    /// `dc:subject` of the key, e.g. `"Category: Keywords and identifiers"`.
    pub category: String,
    /// `dc:description` of the key, e.g. `"Weird table names"`.
    pub description: String,
    pub meta: KeyMeta,
    /// Elements of type `table`, in key order.
    pub tables: Vec<KeyTable>,
    /// Elements of any other type (index, view, trigger), in key order.
    pub objects: Vec<KeyObject>,
    /// Human notes about quirks of this case that the loader handled or that tests must
    /// know about (parser repairs, name corrections, key errors, stale values, …).
    pub quirks: Vec<String>,
}

#[derive(Debug, Clone)]
pub struct KeyTable {
    /// Table name as it is in the database schema. Equal to `key_name` except for
    /// `01-18`, where the key's `"\u{b}\u{c}\n"` is corrected to the real `"\u{b}\u{c}\r"`.
    pub name: String,
    /// Table name exactly as written in the key.
    pub key_name: String,
    /// The key's `<deleted>True</deleted>`: the table was dropped and is not in the schema.
    pub deleted: bool,
    /// Declared column names, in order (from `<columnDefinition>`).
    pub columns: Vec<String>,
    /// `<columnTypeName>` per column (`INTEGER`, `TEXT`, `REAL`, …).
    pub column_types: Vec<String>,
    /// `<attribute>` per column (declared type and constraints, e.g. `INT UNSIGNED NOT NULL`).
    pub column_attributes: Vec<String>,
    /// All rows in key order (alive and deleted). `values` follow `columns`.
    pub rows: Vec<KeyRow>,
    pub meta: KeyTableMeta,
}

#[derive(Debug, Clone, PartialEq)]
pub struct KeyRow {
    /// `<row deleted="1">`.
    pub deleted: bool,
    pub values: Vec<KeyValue>,
}

/// A non-table element of the key (index, view, trigger). These carry no rows.
#[derive(Debug, Clone)]
pub struct KeyObject {
    /// `index`, `view` or `trigger` (lower case, as in the key).
    pub kind: String,
    pub name: String,
    /// The table the object belongs to.
    pub reference: String,
    pub statement: Option<String>,
}

/// A cell of the key, in its textual form.
#[derive(Debug, Clone, PartialEq)]
pub enum KeyValue {
    /// The key's `NULL`.
    Null,
    /// Anything else, verbatim.
    Text(String),
}

/// A decoded value from the database, as the page reader will hand it to the comparison.
#[derive(Debug, Clone, PartialEq)]
pub enum Actual {
    Null,
    Integer(i64),
    Real(f64),
    Text(String),
    Blob(Vec<u8>),
}

impl KeyValue {
    pub fn as_text(&self) -> Option<&str> {
        match self {
            KeyValue::Null => None,
            KeyValue::Text(s) => Some(s),
        }
    }

    /// Does the key's textual form denote `actual`?
    ///
    /// * `NULL` matches only [`Actual::Null`].
    /// * Text matches text byte for byte (the key and SQLite agree on UTF-8 after decoding
    ///   UTF-16 databases).
    /// * An integer matches its decimal form (`20001`, `-85515699`). It also matches a
    ///   five-decimal real form of the same value (`12.00000`), because SQLite stores
    ///   integral REAL values as integers on disk and a raw page reader that does not apply
    ///   column affinity returns them as integers.
    /// * A real matches when the key equals `format!("{:.5}", r)` (the key's writer used
    ///   five decimals) or when the key text parses to exactly the same `f64`.
    /// * A blob matches the key text as hex (either case, optionally as `X'..'`), or the
    ///   same bytes as UTF-8 text. (No key in the corpus contains a blob, so this form is
    ///   a guess that nothing in the corpus contradicts.)
    pub fn matches(&self, actual: &Actual) -> bool {
        let k = match self {
            KeyValue::Null => return matches!(actual, Actual::Null),
            KeyValue::Text(k) => k.as_str(),
        };
        match actual {
            Actual::Null => false,
            Actual::Text(a) => a == k,
            Actual::Integer(i) => {
                *k == i.to_string() || (k.contains('.') && *k == format!("{:.5}", *i as f64))
            }
            Actual::Real(r) => {
                *k == format!("{:.5}", r) || k.parse::<f64>().map(|v| v == *r).unwrap_or(false)
            }
            Actual::Blob(b) => blob_matches(k, b),
        }
    }

    /// Like [`matches`](Self::matches) but accepts a real that equals the key's number
    /// after a round trip through `f32`, give or take two `f32` steps — which is how SQLite's
    /// R-tree module stores coordinates (32-bit floats, lower bounds rounded down, upper
    /// bounds rounded up). Needed for `06-01` and `06-02`.
    pub fn matches_f32(&self, actual: &Actual) -> bool {
        if self.matches(actual) {
            return true;
        }
        let (KeyValue::Text(k), Actual::Real(r)) = (self, actual) else {
            return false;
        };
        let Ok(v) = k.parse::<f64>() else {
            return false;
        };
        // The stored value is an f32 ...
        if (*r as f32) as f64 != *r {
            return false;
        }
        // ... and SQLite rounds it outwards by multiplying with 1 ± 1.2e-7 before the
        // conversion, so it can lie up to ~2 f32 epsilons (relative) away from the key.
        let tol = (v.abs() * 3.0 * f32::EPSILON as f64).max(f32::MIN_POSITIVE as f64);
        (r - v).abs() <= tol
    }
}

fn blob_matches(k: &str, b: &[u8]) -> bool {
    let hex: String = b.iter().map(|x| format!("{:02x}", x)).collect();
    let inner = k
        .strip_prefix("X'")
        .or_else(|| k.strip_prefix("x'"))
        .and_then(|s| s.strip_suffix('\''))
        .unwrap_or(k);
    inner.eq_ignore_ascii_case(&hex) || std::str::from_utf8(b).map(|s| s == k).unwrap_or(false)
}

impl Case {
    /// Category folder, e.g. `"0A"`.
    pub fn folder(&self) -> &str {
        &self.id[..2]
    }

    pub fn table(&self, name: &str) -> Option<&KeyTable> {
        self.tables.iter().find(|t| t.name == name)
    }

    /// Tables that exist in the database schema (i.e. not dropped).
    pub fn schema_tables(&self) -> impl Iterator<Item = &KeyTable> {
        self.tables.iter().filter(|t| !t.deleted)
    }
}

impl KeyTable {
    pub fn column_index(&self, name: &str) -> Option<usize> {
        self.columns.iter().position(|c| c == name)
    }
}

/// Rows the key marks as alive (`deleted` flag not set). For a dropped table (see
/// [`Case`]) these are rows that were alive when the table was dropped; they do not
/// include the 09-01 correction — use [`readable_live_rows`] for what a live read must return.
pub fn live_rows<'a>(t: &'a KeyTable) -> impl Iterator<Item = &'a KeyRow> + 'a {
    t.rows.iter().filter(|r| !r.deleted)
}

/// Rows the key marks as deleted.
pub fn deleted_rows<'a>(t: &'a KeyTable) -> impl Iterator<Item = &'a KeyRow> + 'a {
    t.rows.iter().filter(|r| r.deleted)
}

/// Every row of `t` that the database no longer holds as a live row: the rows the key
/// flags deleted, the rows of a dropped table (see [`Case`]) whatever their flag, and the
/// [`known_key_error`] rows of 09-01. These are the rows a carver may find in free space.
///
/// Over the corpus: 209 flagged deleted + 70 alive in dropped tables + 1148 of 09-01 =
/// 1427 rows (the "1,427 deleted rows" of the Nemetz v1 keys).
pub fn removed_rows<'a>(case: &'a Case, t: &'a KeyTable) -> impl Iterator<Item = &'a KeyRow> + 'a {
    t.rows
        .iter()
        .filter(move |r| r.deleted || t.deleted || known_key_error(case, &t.name, r))
}

/// Exactly the rows that a reader of live tables (walking `sqlite_schema`) must return
/// for `t`: none for a dropped table, otherwise the key's live rows minus
/// [`known_key_error`] rows.
pub fn readable_live_rows<'a>(
    case: &'a Case,
    t: &'a KeyTable,
) -> impl Iterator<Item = &'a KeyRow> + 'a {
    let dropped = t.deleted;
    live_rows(t).filter(move |r| !dropped && !known_key_error(case, &t.name, r))
}

/// `09-01` (pointer-map page, `auto_vacuum=FULL`): the script ends with
/// `DELETE FROM USERS where id > 21406 and id < 22555`, but the key lists all 5000 rows as
/// alive. The 1148 rows with ids 21407..=22554 are really deleted (and, the database being
/// auto-vacuumed with `secure_delete=0` at that point, their cells are partly gone).
const KEY_09_01_DELETED_IDS: std::ops::RangeInclusive<i64> = 21407..=22554;

/// Live rows that the key lists but which the generating script deleted (the 09-01
/// quirk), so tests can exclude them: returns true when the row must be treated as deleted.
pub fn known_key_error(case: &Case, table: &str, row: &KeyRow) -> bool {
    if case.id != "09-01" || table != "users" || row.deleted {
        return false;
    }
    let Some(t) = case.table(table) else {
        return false;
    };
    let Some(idx) = t.column_index("id") else {
        return false;
    };
    match row
        .values
        .get(idx)
        .and_then(|v| v.as_text())
        .and_then(|s| s.parse::<i64>().ok())
    {
        Some(id) => KEY_09_01_DELETED_IDS.contains(&id),
        None => false,
    }
}

/// How an exact live read-back of a key table compares with what SQLite itself returns
/// (verified with Debian sqlite3 3.40.1 on copies of all 77 databases).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Readback {
    /// Every row of [`readable_live_rows`] matches a row of the table with
    /// [`KeyValue::matches`], and the table has no other rows.
    Exact,
    /// The table was dropped (0A, 0B); it is not in the schema and has no live rows.
    Dropped,
    /// R-tree virtual table: values are 32-bit floats; compare with [`KeyValue::matches_f32`].
    /// The data is in the shadow tables `<name>_node` (packed in blobs), not in a b-tree
    /// of the virtual table (its rootpage is 0).
    RTreeFloat32,
    /// FTS4 virtual table: rootpage 0; the rows are in `<name>_content` (columns
    /// `docid, c0<col>, c1<col>, …`). Values match exactly once read from there.
    Fts4Content,
    /// 05-02: the key's `lastUpdate` of the row updated by the trigger holds a timestamp
    /// from a different run of the script (key `2016-08-10 13:23:31`, database
    /// `2017-10-05 21:37:05`). All other cells match.
    StaleTriggerTimestamp,
}

/// Read-back classification for `table` of `case` (see [`Readback`]).
pub fn readback(case: &Case, table: &str) -> Readback {
    if case.table(table).map(|t| t.deleted).unwrap_or(false) {
        return Readback::Dropped;
    }
    match (case.id.as_str(), table) {
        ("06-01", "coordinates") | ("06-02", "coordinates") => Readback::RTreeFloat32,
        ("06-03", "users") => Readback::Fts4Content,
        ("05-02", "users") => Readback::StaleTriggerTimestamp,
        _ => Readback::Exact,
    }
}

/// Cells whose key value is wrong for this database file (not a reading problem): only
/// `05-02` `users.lastUpdate` = `2016-08-10 13:23:31`, which the database holds as
/// `2017-10-05 21:37:05` (the key was presumably produced by another run of the script).
pub fn known_value_error(case: &Case, table: &str, column: &str, key: &KeyValue) -> bool {
    case.id == "05-02"
        && table == "users"
        && column == "lastUpdate"
        && key.as_text() == Some("2016-08-10 13:23:31")
}

/// Does `actual` (one decoded row, values in the key's column order, i.e. following
/// `t.columns`) agree with the key row, taking [`readback`] into account: R-tree tables are
/// compared with [`KeyValue::matches_f32`], and [`known_value_error`] cells are accepted
/// whatever their value. Everything else uses [`KeyValue::matches`].
pub fn row_matches(case: &Case, t: &KeyTable, row: &KeyRow, actual: &[Actual]) -> bool {
    row.values.len() == actual.len()
        && row
            .values
            .iter()
            .zip(actual)
            .enumerate()
            .all(|(column, (k, a))| cell_matches(case, t, column, k, a))
}

/// Does `actual` agree with the key's value `key` in column `column` of `t`: the cell
/// comparison of [`row_matches`].
pub fn cell_matches(
    case: &Case,
    t: &KeyTable,
    column: usize,
    key: &KeyValue,
    actual: &Actual,
) -> bool {
    if readback(case, &t.name) == Readback::RTreeFloat32 {
        return key.matches_f32(actual);
    }
    key.matches(actual)
        || t.columns
            .get(column)
            .is_some_and(|col| known_value_error(case, &t.name, col, key))
}

/// For each table of `case` (in [`Case::tables`] order), the column that is an alias for
/// the rowid, an `INTEGER PRIMARY KEY` ("Rowid Tables"): its value is the rowid and its
/// records hold NULL in its place. Decided by SQLite itself on the database, opened
/// read-only and immutable: the column is an alias when a lookup by it is planned as
/// `USING INTEGER PRIMARY KEY`. Only columns the key types `INTEGER` are asked.
///
/// A dropped table has no schema to ask and gets `None`; no dropped table of the corpus
/// declares an `INTEGER` column (their ids are `INT UNSIGNED`, never an alias). In the
/// corpus the only alias is `03-05` `users.id` (a table constraint `PRIMARY KEY (id)`);
/// `03-02` declares `INTEGER PRIMARY KEY DESC`, which SQLite does not make an alias, and
/// `03-01` is `WITHOUT ROWID`.
pub fn rowid_aliases(case: &Case) -> Vec<Option<usize>> {
    use rusqlite::{Connection, OpenFlags};
    let conn = Connection::open_with_flags(
        format!("file:{}?immutable=1", case.db_path.display()),
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_URI,
    )
    .unwrap_or_else(|e| panic!("{}: cannot open {}: {e}", case.id, case.db_path.display()));
    let quote = |name: &str| format!("\"{}\"", name.replace('"', "\"\""));
    let planned_as_rowid_lookup = |t: &KeyTable, column: &str| -> bool {
        let sql = format!(
            "EXPLAIN QUERY PLAN SELECT * FROM {} WHERE {} = 1",
            quote(&t.name),
            quote(column)
        );
        // A virtual table whose module this SQLite lacks cannot be planned; it has no
        // rowid alias the key would know of either.
        let Ok(mut stmt) = conn.prepare(&sql) else {
            return false;
        };
        let details: Vec<String> = stmt
            .query_map([], |r| r.get::<_, String>(3))
            .and_then(|rows| rows.collect())
            .unwrap_or_else(|e| panic!("{}: {sql}: {e}", case.id));
        details
            .iter()
            .any(|d| d.contains("USING INTEGER PRIMARY KEY"))
    };
    case.tables
        .iter()
        .map(|t| {
            if t.deleted {
                return None;
            }
            (0..t.columns.len()).find(|&i| {
                t.column_types[i].eq_ignore_ascii_case("INTEGER")
                    && planned_as_rowid_lookup(t, &t.columns[i])
            })
        })
        .collect()
}

/// The corpus vendored in the repository, `tests/nemetz/corpus` seen from the workspace
/// root: the test crate's manifest dir is `<workspace>/salvage`, so this is
/// `CARGO_MANIFEST_DIR/../tests/nemetz/corpus`. Its `SHA256SUMS` lists every vendored file
/// with its SHA-256 (checked by the test `vendored_corpus_matches_sha256sums`).
pub fn vendored_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/nemetz/corpus")
}

/// Where the tests read the corpus: the environment variable `SALVAGE_NEMETZ_DIR` when set
/// (another copy with the same `NN/NN-MM.{db,sql,xml}` layout), otherwise the vendored copy,
/// [`vendored_dir`]. Nothing beside the checkout is needed.
pub fn corpus_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("SALVAGE_NEMETZ_DIR") {
        return PathBuf::from(dir);
    }
    vendored_dir()
}

fn require_corpus() -> PathBuf {
    let dir = corpus_dir();
    if !dir.join("01").is_dir() {
        panic!(
            "Nemetz SQLite forensic corpus not found at {} (expected folders 01..0E with NN-MM.db/.sql/.xml); \
             it is vendored in tests/nemetz/corpus, or SALVAGE_NEMETZ_DIR names another copy",
            dir.display()
        );
    }
    dir
}

/// All cases, sorted by id, parsed once per process and shared (see [`load_all`]).
pub fn all() -> &'static [Case] {
    static ALL: std::sync::OnceLock<Vec<Case>> = std::sync::OnceLock::new();
    ALL.get_or_init(load_all_uncached)
}

/// All 77 cases, sorted by id. Panics with a clear message if the corpus is missing or a
/// key cannot be read. (Clones the process-wide cache of [`all`].)
pub fn load_all() -> Vec<Case> {
    all().to_vec()
}

fn load_all_uncached() -> Vec<Case> {
    let dir = require_corpus();
    let mut ids = Vec::new();
    let mut folders: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
        .filter_map(|e| e.ok())
        .filter(|e| e.path().is_dir())
        .collect();
    folders.sort_by_key(|e| e.file_name());
    for folder in folders {
        for f in std::fs::read_dir(folder.path())
            .unwrap_or_else(|e| panic!("cannot list {}: {e}", folder.path().display()))
        {
            let p = f.unwrap().path();
            if p.extension().map(|x| x == "xml").unwrap_or(false) {
                ids.push(p.file_stem().unwrap().to_string_lossy().into_owned());
            }
        }
    }
    ids.sort();
    if ids.is_empty() {
        panic!("no answer keys (*.xml) found under {}", dir.display());
    }
    ids.iter().map(|id| load_from(&dir, id)).collect()
}

/// One case by id (`"01-18"`). Panics if it is missing or unreadable.
pub fn load(id: &str) -> Case {
    let dir = require_corpus();
    load_from(&dir, id)
}

/// Sorted ids of all cases present in the corpus.
pub fn case_ids() -> Vec<String> {
    all().iter().map(|c| c.id.clone()).collect()
}

fn load_from(dir: &Path, id: &str) -> Case {
    assert!(
        id.len() == 5 && id.as_bytes()[2] == b'-',
        "bad case id {id:?}, expected like \"01-01\""
    );
    let folder = dir.join(&id[..2]);
    let xml_path = folder.join(format!("{id}.xml"));
    let db_path = folder.join(format!("{id}.db"));
    let sql_path = folder.join(format!("{id}.sql"));
    for p in [&xml_path, &db_path, &sql_path] {
        assert!(p.is_file(), "corpus case {id}: missing {}", p.display());
    }
    let bytes = std::fs::read(&xml_path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", xml_path.display()));
    let mut quirks = Vec::new();
    let text = match String::from_utf8(bytes) {
        Ok(s) => s,
        Err(e) => {
            quirks.push("key is not valid UTF-8; decoded lossily".to_string());
            String::from_utf8_lossy(e.as_bytes()).into_owned()
        }
    };
    let mut case = parse_key(id, &text, quirks).unwrap_or_else(|e| {
        panic!(
            "corpus case {id}: cannot interpret {}: {e}",
            xml_path.display()
        )
    });
    case.db_path = db_path;
    case.sql_path = sql_path;
    case.xml_path = xml_path;
    case
}

fn parse_count(el: &xml::Element, name: &str) -> Option<usize> {
    el.child_text(name).and_then(|s| s.trim().parse().ok())
}

/// Interpret the text of an answer key. Public so that tests can feed snippets.
pub fn parse_key(id: &str, text: &str, mut quirks: Vec<String>) -> Result<Case, String> {
    let parsed = xml::parse(text);
    for w in &parsed.warnings {
        quirks.push(format!("key is not well-formed XML: {w}"));
    }
    let db = parsed
        .document
        .child("database")
        .ok_or("no <database> root element")?;
    let meta = db
        .child("meta")
        .map(|m| KeyMeta {
            tables: parse_count(m, "tables"),
            indices: parse_count(m, "indices"),
            views: parse_count(m, "views"),
            triggers: parse_count(m, "triggers"),
            entries: parse_count(m, "entries"),
        })
        .unwrap_or_default();
    let (category, description) = db
        .child("description")
        .map(|d| {
            (
                d.child_text("dc:subject").unwrap_or("").to_string(),
                d.child_text("dc:description").unwrap_or("").to_string(),
            )
        })
        .unwrap_or_default();

    let mut tables = Vec::new();
    let mut objects = Vec::new();
    for el in db.children_named("element") {
        let m = el.child("meta").ok_or("<element> without <meta>")?;
        let kind = m.child_text("type").unwrap_or("").trim().to_string();
        let key_name = m.child_text("name").unwrap_or("").to_string();
        if kind != "table" {
            objects.push(KeyObject {
                kind,
                name: key_name,
                reference: m.child_text("reference").unwrap_or("").to_string(),
                statement: el
                    .child("sql")
                    .and_then(|s| s.child_text("statement"))
                    .map(str::to_string),
            });
            continue;
        }
        let deleted = m
            .child_text("deleted")
            .map(|s| s.trim().eq_ignore_ascii_case("true"))
            .unwrap_or(false);
        let mut columns = Vec::new();
        let mut column_types = Vec::new();
        let mut column_attributes = Vec::new();
        if let Some(sql) = el.child("sql") {
            for cd in sql.children_named("columnDefinition") {
                let cm = cd.child("meta");
                columns.push(
                    cm.and_then(|c| c.child_text("name"))
                        .unwrap_or("")
                        .to_string(),
                );
                column_attributes.push(
                    cm.and_then(|c| c.child_text("attribute"))
                        .unwrap_or("")
                        .to_string(),
                );
                column_types.push(cd.child_text("columnTypeName").unwrap_or("").to_string());
            }
        }
        let mut rows = Vec::new();
        let mut order_note = false;
        if let Some(entries) = el.child("entries") {
            for (ri, row) in entries.children_named("row").enumerate() {
                let row_deleted = row
                    .attr("deleted")
                    .map(|v| v.trim() == "1" || v.eq_ignore_ascii_case("true"))
                    .unwrap_or(false);
                let cells: Vec<(&str, &str)> = row
                    .children_named("column")
                    .map(|c| {
                        (
                            c.child_text("name").unwrap_or(""),
                            c.child_text("content").unwrap_or(""),
                        )
                    })
                    .collect();
                let mut values = vec![KeyValue::Null; columns.len()];
                let by_name = cells.len() == columns.len()
                    && cells.iter().enumerate().all(|(i, (n, _))| columns[i] == *n);
                if by_name {
                    for (i, (_, v)) in cells.iter().enumerate() {
                        values[i] = key_value(v);
                    }
                } else {
                    // Fall back to name lookup; note it once per table.
                    if !order_note {
                        order_note = true;
                        quirks.push(format!(
                            "table {key_name:?} row {ri}: cell names differ from the column definitions; matched by name"
                        ));
                    }
                    for (n, v) in &cells {
                        match columns.iter().position(|c| c == n) {
                            Some(i) => values[i] = key_value(v),
                            None => {
                                return Err(format!(
                                    "table {key_name:?} row {ri}: unknown column {n:?}"
                                ))
                            }
                        }
                    }
                }
                rows.push(KeyRow {
                    deleted: row_deleted,
                    values,
                });
            }
        }
        let tmeta = KeyTableMeta {
            columns: parse_count(m, "columns"),
            rows_total: parse_count(m, "rowsTotal"),
            rows_alive: parse_count(m, "rowsAlive"),
            rows_deleted: parse_count(m, "rowsDeleted"),
        };
        let mut name = key_name.clone();
        if id == "01-18" && key_name == "\u{b}\u{c}\n" {
            name = "\u{b}\u{c}\r".to_string();
            quirks.push(
                "table name: the key (and the .sql script as distributed) write U+000B U+000C U+000A, \
                 but the database's table is named U+000B U+000C U+000D (hex 0B0C0D); KeyTable::name \
                 holds the database's name, KeyTable::key_name the key's"
                    .to_string(),
            );
        }
        if deleted {
            quirks.push(format!(
                "table {name:?} is marked deleted in the key (dropped by the script): it is not in \
                 sqlite_schema, and its {} rows flagged alive cannot be read as live rows",
                rows.iter().filter(|r| !r.deleted).count()
            ));
        }
        tables.push(KeyTable {
            name,
            key_name,
            deleted,
            columns,
            column_types,
            column_attributes,
            rows,
            meta: tmeta,
        });
    }

    match id {
        "09-01" => quirks.push(
            "key error: the key lists all 5000 users rows as alive, but the script ends with \
             DELETE ... WHERE id > 21406 AND id < 22555; the 1148 rows with ids 21407..=22554 are \
             deleted (see known_key_error)"
                .to_string(),
        ),
        "05-02" => quirks.push(
            "stale value: the trigger-set lastUpdate of the updated row (Simon Neumann-Richter) is \
             '2016-08-10 13:23:31' in the key but '2017-10-05 21:37:05' in the database (key presumably written \
             from another run of the script); compare that cell loosely"
                .to_string(),
        ),
        "06-01" | "06-02" => quirks.push(
            "R-tree virtual table: the key writes the script's 5-decimal coordinates, the database \
             holds 32-bit floats (min rounded down, max rounded up); use KeyValue::matches_f32. \
             The virtual table has rootpage 0; data lives in coordinates_node/_rowid/_parent"
                .to_string(),
        ),
        "06-03" => quirks.push(
            "FTS4 virtual table: rootpage 0; the rows live in users_content (docid, c0name, \
             c1surname); users_segments/_segdir/_docsize/_stat are not in the key"
                .to_string(),
        ),
        "06-04" => quirks.push(
            "the script creates a TEMP table, which would never reach the file; the database \
             actually holds an ordinary table `users` (CREATE TABLE users (name TEXT, surname TEXT)) \
             with the two rows, so it reads like any other table"
                .to_string(),
        ),
        "04-01" | "04-05" => quirks.push("database text encoding is UTF-16le".to_string()),
        "04-02" | "04-06" => quirks.push("database text encoding is UTF-16be".to_string()),
        "08-01" => quirks.push("pages have reserved bytes at the end (header byte 20 != 0)".to_string()),
        _ => {}
    }

    Ok(Case {
        id: id.to_string(),
        db_path: PathBuf::new(),
        sql_path: PathBuf::new(),
        xml_path: PathBuf::new(),
        category,
        description,
        meta,
        tables,
        objects,
        quirks,
    })
}

fn key_value(raw: &str) -> KeyValue {
    if raw == "NULL" {
        KeyValue::Null
    } else {
        KeyValue::Text(raw.to_string())
    }
}

#[cfg(test)]
mod tests;
