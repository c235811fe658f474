//! The output database: created with rusqlite (bundled SQLite), schema first, then rows
//! bound as parameters; identifiers quoted, never SQL assembled from recovered values.

use std::path::Path;

use pager::{TextEncoding, Value};
use reconstruct::{Column, ColumnDefault, ColumnKind, TableShape};
use rusqlite::types::{ToSqlOutput, ValueRef};
use rusqlite::{params_from_iter, Connection};

/// Settings of every connection to the output: the journal off while loading (the file
/// is not the destination until it is verified and renamed), CHECK constraints and foreign
/// keys not enforced (recovered rows are kept as they were).
fn configure(conn: &Connection) -> rusqlite::Result<()> {
    conn.pragma_update_and_check(None, "journal_mode", "OFF", |r| r.get::<_, String>(0))?;
    conn.pragma_update(None, "synchronous", "OFF")?;
    conn.pragma_update(None, "ignore_check_constraints", 1)?;
    conn.pragma_update(None, "foreign_keys", 0)?;
    conn.pragma_update(None, "cache_size", -65_536)?; // KiB: 64 MiB
    Ok(())
}

/// The shape of table `name` of `conn` as SQLite parsed its CREATE statement.
pub fn table_shape(
    conn: &Connection,
    name: &str,
    without_rowid: bool,
) -> rusqlite::Result<TableShape> {
    let mut stmt = conn.prepare(&format!("PRAGMA table_xinfo({})", quote(name)))?;
    let columns = stmt
        .query_map([], |r| {
            Ok(Column {
                name: r.get(1)?,
                decl_type: r.get::<_, Option<String>>(2)?.unwrap_or_default(),
                not_null: r.get::<_, i64>(3)? != 0,
                pk: u32::try_from(r.get::<_, i64>(5)?).unwrap_or(0),
                kind: ColumnKind::from_hidden(r.get(6)?),
                default: ColumnDefault::of(r.get::<_, Option<String>>(4)?.as_deref()),
            })
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(TableShape {
        name: name.to_string(),
        columns,
        without_rowid,
    })
}

/// Whether `sql` is a `CREATE TABLE` whose name is followed by anything but its column
/// list: `AS SELECT …`, which would run a query (unbounded, on a hostile schema). SQLite
/// itself stores such a table as a plain column list, so a real schema never has one.
fn table_as_select(sql: &str) -> bool {
    let mut words = sql.trim_start();
    let word = |w: &mut &str| -> String {
        let t = w.trim_start();
        let end = t
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(t.len());
        let (head, rest) = t.split_at(end);
        *w = rest;
        head.to_ascii_uppercase()
    };
    if word(&mut words) != "CREATE" {
        return false;
    }
    let mut next = word(&mut words);
    if next == "TEMP" || next == "TEMPORARY" {
        next = word(&mut words);
    }
    if next != "TABLE" {
        return false;
    }
    let save = words;
    if word(&mut words) == "IF" {
        let _ = (word(&mut words), word(&mut words)); // NOT EXISTS
    } else {
        words = save;
    }
    // The name: quoted or bare, optionally `schema.name`.
    for _ in 0..2 {
        let t = words.trim_start();
        let close = match t.chars().next() {
            Some('"') => Some('"'),
            Some('`') => Some('`'),
            Some('[') => Some(']'),
            Some('\'') => Some('\''),
            _ => None,
        };
        words = match close {
            Some(c) => {
                // A doubled quote is part of the name.
                let mut rest = t.get(1..).unwrap_or("");
                loop {
                    match rest.find(c) {
                        None => break "",
                        Some(i) => {
                            let after = rest.get(i + 1..).unwrap_or("");
                            if c != ']' && after.starts_with(c) {
                                rest = after.get(1..).unwrap_or("");
                            } else {
                                break after;
                            }
                        }
                    }
                }
            }
            None => {
                let end = t
                    .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == '$'))
                    .unwrap_or(t.len());
                &t[end..]
            }
        };
        match words.trim_start().strip_prefix('.') {
            Some(rest) => words = rest,
            None => break,
        }
    }
    !words.trim_start().starts_with('(')
}

/// Runs `sql`, text from the (untrusted) source schema, on `conn` only if it is exactly one
/// CREATE statement: a schema row carrying a further statement (an `ATTACH` that would
/// write a file, say) is refused, never run.
pub fn create_statement(conn: &Connection, sql: &str) -> Result<(), String> {
    let head = sql.trim_start().get(..6).unwrap_or("");
    if !head.eq_ignore_ascii_case("CREATE") {
        return Err("not a CREATE statement".into());
    }
    if table_as_select(sql) {
        return Err("CREATE TABLE … AS SELECT runs a query; SQLite never stores one in its schema; refused, not run".into());
    }
    use rusqlite::fallible_iterator::FallibleIterator as _;
    // Statements are prepared one at a time and nothing runs until all are counted: a
    // second one (even one that fails to prepare) refuses the row.
    let mut batch = rusqlite::Batch::new(conn, sql);
    let Some(mut stmt) = batch.next().map_err(|e| e.to_string())? else {
        return Err("an empty statement".into());
    };
    if !matches!(batch.next(), Ok(None)) {
        return Err("the schema row holds more than one statement; refused, not run".into());
    }
    stmt.raw_execute().map(|_| ()).map_err(|e| e.to_string())
}

/// Whether SQLite refused a statement for a reason about the row or the table's own
/// definition (a value of the wrong type for an INTEGER PRIMARY KEY or a STRICT column, a
/// value too big, a constraint, an expression of the schema that fails on this row), not
/// about the output file: the row is kept elsewhere and the run goes on. I/O, a full disk,
/// memory, locks and a corrupt output end the run.
pub fn refuses_row(e: &rusqlite::Error) -> bool {
    use rusqlite::ErrorCode::*;
    match e {
        rusqlite::Error::SqliteFailure(f, _) => matches!(
            f.code,
            ConstraintViolation | TypeMismatch | TooBig | ParameterOutOfRange | Unknown
        ),
        rusqlite::Error::ToSqlConversionFailure(_) | rusqlite::Error::InvalidParameterCount(..) => {
            true
        }
        _ => false,
    }
}

/// The name a registry table of the run takes: `base`, or the first of `base_1`, `base_2`,
/// … that the schema does not use (`taken`: its names, lower-cased).
pub fn registry_name(base: &str, taken: &std::collections::BTreeSet<String>) -> String {
    std::iter::once(base.to_string())
        .chain((1..).map(|i| format!("{base}_{i}")))
        .find(|n| !taken.contains(n))
        .unwrap_or_default()
}

/// Quotes an identifier for SQL: `"name"` with inner quotes doubled.
pub fn quote(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// The output database being written.
pub struct Output {
    /// The open connection to the output database.
    pub conn: Connection,
    path: std::path::PathBuf,
}

/// Outcome of inserting one row.
#[derive(Debug, PartialEq, Eq)]
pub enum Inserted {
    /// Written.
    Ok,
    /// A row with the same key (rowid, primary key or UNIQUE columns) is already there.
    Conflict(String),
    /// A constraint other than a key refused it (NOT NULL on a damaged field).
    Rejected(String),
}

impl Output {
    /// Creates the database at `path` (which must not exist) with the source's page size
    /// and text encoding, the journal off while loading (the file is not the destination
    /// until it is verified and renamed).
    pub fn create(
        path: &Path,
        page_size: u32,
        encoding: TextEncoding,
        user_version: u32,
        application_id: u32,
    ) -> rusqlite::Result<Output> {
        let conn = Connection::open(path)?;
        conn.pragma_update(None, "page_size", i64::from(page_size))?;
        let enc = match encoding {
            TextEncoding::Utf8 => "UTF-8",
            TextEncoding::Utf16le => "UTF-16le",
            TextEncoding::Utf16be => "UTF-16be",
        };
        conn.pragma_update(None, "encoding", enc)?;
        conn.pragma_update(None, "user_version", i64::from(user_version))?;
        conn.pragma_update(None, "application_id", i64::from(application_id as i32))?;
        configure(&conn)?;
        Ok(Output {
            conn,
            path: path.to_owned(),
        })
    }

    /// Closes the database so that pages can be written into the file directly, runs
    /// `write`, and opens it again.
    pub fn with_file_closed<T>(
        &mut self,
        write: impl FnOnce(&Path) -> std::io::Result<T>,
    ) -> std::io::Result<T> {
        let sqlite = |e: rusqlite::Error| std::io::Error::other(e.to_string());
        let placeholder = Connection::open_in_memory().map_err(sqlite)?;
        let conn = std::mem::replace(&mut self.conn, placeholder);
        conn.close().map_err(|(_, e)| sqlite(e))?;
        let out = write(&self.path)?;
        self.conn = Connection::open(&self.path).map_err(sqlite)?;
        configure(&self.conn).map_err(sqlite)?;
        Ok(out)
    }

    /// The column names of the table `name` (virtual tables included), in order.
    pub fn columns(&self, name: &str) -> rusqlite::Result<Vec<String>> {
        self.conn
            .prepare("SELECT name FROM pragma_table_info(?1) ORDER BY cid")?
            .query_map([name], |r| r.get(0))?
            .collect()
    }

    /// Whether the output has a table named `name` (any case).
    pub fn has_table(&self, name: &str) -> bool {
        self.conn
            .query_row(
                "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND lower(name) = lower(?1)",
                [name],
                |r| r.get::<_, i64>(0),
            )
            .is_ok_and(|n| n > 0)
    }

    /// Runs one CREATE statement taken from the source schema (see [`create_statement`]).
    pub fn create_object(&self, sql: &str) -> Result<(), String> {
        create_statement(&self.conn, sql)
    }

    /// The name of the object of `kind` (`table` or `index`) the last CREATE statement
    /// made, as SQLite recorded it: the name the statement gives, which a damaged schema
    /// row may spell otherwise. New schema rows take the largest rowid; a table's own row
    /// comes before its automatic indexes and a virtual table's before its shadow tables;
    /// SQLite's own tables (`sqlite_sequence`, made with the first AUTOINCREMENT table)
    /// are never the object made.
    pub fn created_name(&self, kind: &str, is_virtual: bool) -> Option<String> {
        let sql = "SELECT name FROM sqlite_schema WHERE type = ?1 AND sql IS NOT NULL
                   AND (?2 = 0 OR sql LIKE 'CREATE VIRTUAL TABLE%')
                   AND lower(substr(name, 1, 7)) <> 'sqlite_'
                   ORDER BY rowid DESC LIMIT 1";
        self.conn
            .query_row(sql, rusqlite::params![kind, is_virtual], |r| r.get(0))
            .ok()
    }

    /// The shape of a table as SQLite parsed its CREATE statement.
    pub fn shape(&self, name: &str, without_rowid: bool) -> rusqlite::Result<TableShape> {
        table_shape(&self.conn, name, without_rowid)
    }

    /// Inserts one row into `table`: `rowid` (when the table keeps one outside its
    /// columns, under `rowid_name`) and the values of `columns` (names, in order).
    pub fn insert(
        &self,
        table: &str,
        rowid_name: Option<&str>,
        rowid: Option<i64>,
        columns: &[&str],
        values: &[SqlValue<'_>],
    ) -> rusqlite::Result<Inserted> {
        let mut names: Vec<String> = Vec::with_capacity(columns.len() + 1);
        let mut params: Vec<SqlValue<'_>> = Vec::with_capacity(columns.len() + 1);
        if let (Some(name), Some(rowid)) = (rowid_name, rowid) {
            names.push(quote(name));
            params.push(SqlValue::Integer(rowid));
        }
        names.extend(columns.iter().map(|c| quote(c)));
        params.extend(values.iter().cloned());
        let placeholders: Vec<String> = (1..=params.len()).map(|i| format!("?{i}")).collect();
        let sql = if names.is_empty() {
            format!("INSERT INTO {} DEFAULT VALUES", quote(table))
        } else {
            format!(
                "INSERT INTO {} ({}) VALUES ({})",
                quote(table),
                names.join(", "),
                placeholders.join(", ")
            )
        };
        // A statement SQLite cannot prepare for this table refuses its rows one by one,
        // like any other refusal that is about the row, not the output.
        let mut stmt = match self.conn.prepare_cached(&sql) {
            Ok(stmt) => stmt,
            Err(e) if refuses_row(&e) => return Ok(Inserted::Rejected(e.to_string())),
            Err(e) => return Err(e),
        };
        match stmt.execute(params_from_iter(params.iter())) {
            Ok(_) => Ok(Inserted::Ok),
            Err(rusqlite::Error::SqliteFailure(e, msg))
                if e.code == rusqlite::ErrorCode::ConstraintViolation =>
            {
                let text = msg.unwrap_or_else(|| e.to_string());
                let key = matches!(
                    e.extended_code,
                    rusqlite::ffi::SQLITE_CONSTRAINT_PRIMARYKEY
                        | rusqlite::ffi::SQLITE_CONSTRAINT_ROWID
                        | rusqlite::ffi::SQLITE_CONSTRAINT_UNIQUE
                );
                Ok(if key {
                    Inserted::Conflict(text)
                } else {
                    Inserted::Rejected(text)
                })
            }
            Err(e) if refuses_row(&e) => Ok(Inserted::Rejected(e.to_string())),
            Err(e) => Err(e),
        }
    }
}

/// A value ready to bind: text re-encoded from the source encoding where it is valid
/// text, raw bytes otherwise (never lossily transcoded).
#[derive(Clone, Debug, PartialEq)]
pub enum SqlValue<'v> {
    /// SQL NULL.
    Null,
    /// A 64-bit signed integer.
    Integer(i64),
    /// A 64-bit IEEE floating point number.
    Real(f64),
    /// Valid text, decoded from the source encoding.
    Text(std::borrow::Cow<'v, str>),
    /// Text bytes that are not valid in the source encoding, bound as-is.
    RawText(&'v [u8]),
    /// A BLOB, bound as stored.
    Blob(&'v [u8]),
}

impl<'v> SqlValue<'v> {
    /// Prepares `v`, decoded from the source encoding `enc`.
    pub fn from_value(v: &'v Value, enc: TextEncoding) -> SqlValue<'v> {
        match v {
            Value::Null => SqlValue::Null,
            Value::Integer(i) => SqlValue::Integer(*i),
            Value::Real(r) => SqlValue::Real(*r),
            Value::Blob(b) => SqlValue::Blob(b),
            Value::Text(t) => match enc {
                TextEncoding::Utf8 => match std::str::from_utf8(t) {
                    Ok(s) => SqlValue::Text(std::borrow::Cow::Borrowed(s)),
                    Err(_) => SqlValue::RawText(t),
                },
                _ => match enc.decode(t) {
                    Some(s) => SqlValue::Text(std::borrow::Cow::Owned(s)),
                    None => SqlValue::RawText(t),
                },
            },
        }
    }
}

impl rusqlite::ToSql for SqlValue<'_> {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(ToSqlOutput::Borrowed(match self {
            SqlValue::Null => ValueRef::Null,
            SqlValue::Integer(i) => ValueRef::Integer(*i),
            SqlValue::Real(r) => ValueRef::Real(*r),
            SqlValue::Text(s) => ValueRef::Text(s.as_bytes()),
            SqlValue::RawText(b) => ValueRef::Text(b),
            SqlValue::Blob(b) => ValueRef::Blob(b),
        }))
    }
}

impl reconstruct::Columns for Output {
    fn columns(&self, table: &str) -> Result<Vec<String>, String> {
        Output::columns(self, table).map_err(|e| e.to_string())
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_table_created_from_a_query_is_told_from_a_column_list() {
        use super::table_as_select as q;
        assert!(!q("CREATE TABLE t(a, b)"));
        assert!(!q("create temp table if not exists \"my t\" (a)"));
        assert!(!q("CREATE TABLE main.[x y](a)"));
        assert!(!q("CREATE INDEX i ON t(a)"));
        assert!(!q("CREATE VIEW v AS SELECT 1"));
        assert!(q("CREATE TABLE t AS SELECT 1"));
        assert!(q(
            "CREATE TABLE \"t\" AS WITH c(x) AS (SELECT 1) SELECT x FROM c"
        ));
        assert!(q("CREATE TABLE main.t AS SELECT 1"));
        assert!(!q("CREATE TABLE \"a\"\"b\"(x)"));
        assert!(q("CREATE TABLE \"a\"\"b\" AS SELECT 1"));
    }
}
