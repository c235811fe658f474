//! The output database: created with rusqlite (bundled SQLite), schema first, then rows
//! bound as parameters; identifiers quoted, never SQL assembled from recovered values.

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::Arc;

use pager::{TextEncoding, Value};
use reconstruct::TableShape;
use rusqlite::limits::Limit;
use rusqlite::types::{ToSqlOutput, ValueRef};
use rusqlite::{params_from_iter, Connection};

mod schema_sql;

use schema_sql::{configure, PROGRESS_EVERY, STEPS_BASE, STEPS_PER_ROW};
pub use schema_sql::{create_statement, plain_table, refuses_row, scratch_shape, table_shape};

/// The name a registry table of the run takes: `base`, or the first of `base_1`, `base_2`,
/// … that the schema does not use (`taken`: its names, lower-cased; SQLite compares names
/// without case).
pub fn registry_name(base: &str, taken: &std::collections::BTreeSet<String>) -> String {
    std::iter::once(base.to_string())
        .chain((1..).map(|i| format!("{base}_{i}")))
        .find(|n| !taken.contains(&n.to_lowercase()))
        .unwrap_or_default()
}

/// The base name of the output's list of the registries and views the run made
/// ([`Output::list_registries`], [`registries`]).
pub const REGISTRY_LIST: &str = "salvage_registries";

/// The registries and views a run made in an output ([`registries`]).
#[derive(Clone, Debug, Default)]
pub struct Registries {
    /// The list's own name, when the output has one.
    pub list: Option<String>,
    /// Each registry or view by its base name (`salvage_carved`, `salvage_rows_users`).
    pub by_kind: std::collections::BTreeMap<String, String>,
}

impl Registries {
    /// The name of the registry of base name `kind`, when the run made one.
    pub fn get(&self, kind: &str) -> Option<&str> {
        self.by_kind.get(kind).map(String::as_str)
    }

    /// Whether `name` is one of the run's registries or views, or its list (without
    /// case): never a table of the source.
    pub fn is_own(&self, name: &str) -> bool {
        self.list
            .iter()
            .chain(self.by_kind.values())
            .any(|n| n.eq_ignore_ascii_case(name))
    }
}

/// The registries and views a run made in the output at `conn`, by base name: the last
/// list the output's schema holds ([`Output::list_registries`]). A run writes its list
/// after every table of the source is made, and whenever the source has a table of a
/// list's name, so the list made last is the run's, whatever the source's tables are
/// named: a source table named `salvage_carved` is never read as the run's carved
/// records. Empty for a database no run made a registry in.
pub fn registries(conn: &Connection) -> Registries {
    // The list made last: sqlite_schema's rowids grow with each object made.
    let list: Option<String> = conn
        .prepare("SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY rowid")
        .and_then(|mut stmt| {
            stmt.query_map([], |r| r.get::<_, String>(0))?
                .collect::<rusqlite::Result<Vec<String>>>()
        })
        .ok()
        .and_then(|names| names.into_iter().rev().find(|n| is_registry_list(n)));
    let Some(list) = list else {
        return Registries::default();
    };
    let read = || -> rusqlite::Result<std::collections::BTreeMap<String, String>> {
        let mut stmt = conn.prepare(&format!("SELECT kind, name FROM {}", quote(&list)))?;
        let rows = stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))?;
        rows.collect()
    };
    Registries {
        by_kind: read().unwrap_or_default(),
        list: Some(list),
    }
}

/// Whether `name` is a name the list of registries takes ([`REGISTRY_LIST`], or it
/// followed by `_` and digits), without case.
fn is_registry_list(name: &str) -> bool {
    let name = name.to_lowercase();
    name == REGISTRY_LIST
        || name
            .strip_prefix(REGISTRY_LIST)
            .and_then(|rest| rest.strip_prefix('_'))
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// Quotes an identifier for SQL: `"name"` with inner quotes doubled.
pub fn quote(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// Inserts into `table` a row of `values`: the first fill the columns `named`, the rest
/// the positional columns `c0`, `c1`, … (a registry laid out like `lost_and_found`).
pub fn insert_positional(
    conn: &Connection,
    table: &str,
    named: &[&str],
    values: &[SqlValue<'_>],
) -> rusqlite::Result<()> {
    let columns: Vec<String> = named
        .iter()
        .map(|s| s.to_string())
        .chain((0..values.len().saturating_sub(named.len())).map(|i| format!("c{i}")))
        .collect();
    let ph: Vec<String> = (1..=values.len()).map(|i| format!("?{i}")).collect();
    conn.prepare_cached(&format!(
        "INSERT INTO {}({}) VALUES ({})",
        quote(table),
        columns.join(", "),
        ph.join(", ")
    ))?
    .execute(rusqlite::params_from_iter(values.iter()))?;
    Ok(())
}

/// The output database being written.
pub struct Output {
    /// The open connection to the output database.
    pub conn: Connection,
    path: std::path::PathBuf,
    /// Instructions the running statement may still use (see `configure`).
    budget: Arc<AtomicI64>,
    /// Whether a statement of the file's schema is being run (see `configure`).
    replaying: Arc<AtomicBool>,
    /// The registries and views named so far ([`Output::registry_name`]): base, name.
    named: std::sync::Mutex<Vec<(String, String)>>,
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

/// A database's auto-vacuum mode (header offsets 52 and 64).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Vacuum {
    /// Free pages stay in the file (no pointer-map pages).
    None,
    /// Free pages are given back at every commit.
    Full,
    /// Free pages are given back when `PRAGMA incremental_vacuum` asks.
    Incremental,
}

impl Vacuum {
    /// The mode a header states.
    pub fn of(header: &pager::DatabaseHeader) -> Vacuum {
        match (header.auto_vacuum(), header.incremental_vacuum != 0) {
            (false, _) => Vacuum::None,
            (true, false) => Vacuum::Full,
            (true, true) => Vacuum::Incremental,
        }
    }
}

impl Output {
    /// Creates the database at `path` (which must not exist) with the source's page size,
    /// text encoding, auto-vacuum mode, user version and application ID (what the
    /// application that opens it again reads or relies on: the user version is its schema's
    /// version, a mode of vacuum its files' upkeep), the journal off while loading (the
    /// file is not the destination until it is verified and renamed).
    pub fn create(
        path: &Path,
        page_size: u32,
        encoding: TextEncoding,
        vacuum: Vacuum,
        (user_version, application_id): (u32, u32),
    ) -> rusqlite::Result<Output> {
        let conn = crate::base::readahead::connect(path)?;
        conn.pragma_update(None, "page_size", i64::from(page_size))?;
        let enc = match encoding {
            TextEncoding::Utf8 => "UTF-8",
            TextEncoding::Utf16le => "UTF-16le",
            TextEncoding::Utf16be => "UTF-16be",
        };
        conn.pragma_update(None, "encoding", enc)?;
        // Before the first table: the mode is fixed once a table exists.
        let vacuum_mode = match vacuum {
            Vacuum::None => "NONE",
            Vacuum::Full => "FULL",
            Vacuum::Incremental => "INCREMENTAL",
        };
        conn.pragma_update(None, "auto_vacuum", vacuum_mode)?;
        // Both are signed 32-bit integers to SQLite: one of 2^31 or more given as it is
        // would be set to 0.
        conn.pragma_update(None, "user_version", i64::from(user_version as i32))?;
        conn.pragma_update(None, "application_id", i64::from(application_id as i32))?;
        if encoding != TextEncoding::Utf8 {
            // SQLite writes the encoding into the header with the first table: an output
            // left without one (the source's schema empty) would be read as UTF-8. A table
            // made and dropped writes it; the vacuum gives its page back.
            conn.execute_batch(
                "CREATE TABLE salvage_encoding(x); DROP TABLE salvage_encoding; VACUUM;",
            )?;
        }
        let budget = Arc::new(AtomicI64::new(i64::MAX));
        let replaying = Arc::new(AtomicBool::new(false));
        let mut conn = conn;
        configure(&mut conn, &budget, &replaying)?;
        Ok(Output {
            conn,
            path: path.to_owned(),
            budget,
            replaying,
            named: std::sync::Mutex::new(Vec::new()),
        })
    }

    /// The name a registry table or view of the run takes ([`registry_name`]), kept for
    /// the output's list of them ([`Output::list_registries`]).
    pub fn registry_name(&self, base: &str, taken: &std::collections::BTreeSet<String>) -> String {
        let name = registry_name(base, taken);
        if let Ok(mut named) = self.named.lock() {
            named.push((base.to_string(), name.clone()));
        }
        name
    }

    /// The registries and views named so far ([`Output::registry_name`]), before the
    /// list is written: what a step of the run leaves out of the source's tables.
    pub fn registries(&self) -> Registries {
        Registries {
            list: None,
            by_kind: self
                .named
                .lock()
                .map(|n| n.iter().cloned().collect())
                .unwrap_or_default(),
        }
    }

    /// Writes the list of the registries and views the run made ([`REGISTRY_LIST`]:
    /// `kind`, the base name, and `name`, the table or view), after every other table:
    /// when the run made any, or when the output has a table of a list's name (a source's,
    /// which [`registries`] must never take for the run's). Names given but never made are
    /// left out.
    pub fn list_registries(&self) -> rusqlite::Result<()> {
        let names: Vec<String> = {
            let mut stmt = self.conn.prepare("SELECT name FROM sqlite_schema")?;
            let rows = stmt.query_map([], |r| r.get::<_, String>(0))?;
            rows.collect::<rusqlite::Result<_>>()?
        };
        let taken: std::collections::BTreeSet<String> =
            names.iter().map(|n| n.to_lowercase()).collect();
        let made: Vec<(String, String)> = self
            .named
            .lock()
            .map(|n| n.clone())
            .unwrap_or_default()
            .into_iter()
            .filter(|(_, name)| taken.contains(&name.to_lowercase()))
            .collect();
        if made.is_empty() && !names.iter().any(|n| is_registry_list(n)) {
            return Ok(());
        }
        let list = registry_name(REGISTRY_LIST, &taken);
        self.conn.execute_batch(&format!(
            "CREATE TABLE {}(kind TEXT NOT NULL, name TEXT PRIMARY KEY)",
            quote(&list)
        ))?;
        let mut insert = self.conn.prepare(&format!(
            "INSERT OR IGNORE INTO {}(kind, name) VALUES (?1, ?2)",
            quote(&list)
        ))?;
        for (kind, name) in &made {
            insert.execute([kind, name])?;
        }
        Ok(())
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
        self.conn = crate::base::readahead::connect(&self.path).map_err(sqlite)?;
        configure(&mut self.conn, &self.budget, &self.replaying).map_err(sqlite)?;
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

    /// Runs one CREATE statement of an object of `kind` taken from the source schema (see
    /// [`create_statement`]).
    pub fn create_object(&self, kind: pager::SchemaKind, sql: &str) -> Result<(), String> {
        self.replaying.store(true, Ordering::Relaxed);
        let made = create_statement(&self.conn, sql, kind);
        self.replaying.store(false, Ordering::Relaxed);
        made
    }

    /// Runs a CREATE statement of the file's schema that computes over a table's `rows`
    /// rows (an index), within a budget of instructions proportional to them: a statement
    /// that needs more (a crafted expression) is interrupted and not made.
    pub fn create_derived(
        &self,
        kind: pager::SchemaKind,
        sql: &str,
        rows: u64,
    ) -> Result<(), String> {
        let steps = STEPS_BASE
            .saturating_add(STEPS_PER_ROW.saturating_mul(i64::try_from(rows).unwrap_or(i64::MAX)));
        self.budget
            .store(steps / i64::from(PROGRESS_EVERY), Ordering::Relaxed);
        let made = self.create_object(kind, sql);
        self.budget.store(i64::MAX, Ordering::Relaxed);
        made.map_err(|e| {
            if e.contains("interrupted") {
                format!("it needed more than its budget of {steps} SQLite instructions for {rows} rows, so it was not made (a crafted expression, or one too costly to replay)")
            } else {
                e
            }
        })
    }

    /// Limits the length of any text or BLOB SQLite makes from here on to `bytes`: no
    /// expression of the file's schema builds a value much longer than any the file holds.
    pub fn limit_length(&self, bytes: u64) -> rusqlite::Result<()> {
        let bytes = i32::try_from(bytes).unwrap_or(i32::MAX);
        self.conn
            .set_limit(Limit::SQLITE_LIMIT_LENGTH, bytes)
            .map(|_| ())
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
        let rowid = rowid_name.and(rowid);
        let sql = insert_statement(table, rowid_name.filter(|_| rowid.is_some()), columns);
        self.insert_with(&sql, rowid, values)
    }

    /// Inserts one row with `sql`, the [`insert_statement`] of its table and columns:
    /// `rowid` first when the statement names one, then `values`.
    pub fn insert_with(
        &self,
        sql: &str,
        rowid: Option<i64>,
        values: &[SqlValue<'_>],
    ) -> rusqlite::Result<Inserted> {
        // A statement SQLite cannot prepare for this table refuses its rows one by one,
        // like any other refusal that is about the row, not the output.
        let mut stmt = match self.conn.prepare_cached(sql) {
            Ok(stmt) => stmt,
            Err(e) if refuses_row(&e) => return Ok(Inserted::Rejected(e.to_string())),
            Err(e) => return Err(e),
        };
        let rowid = rowid.map(SqlValue::Integer);
        match stmt.execute(params_from_iter(rowid.iter().chain(values))) {
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

/// The statement that inserts a row into `table`: its rowid under `rowid_name` first when
/// there is one, then the values of `columns` (names, in order).
pub fn insert_statement(table: &str, rowid_name: Option<&str>, columns: &[&str]) -> String {
    let names: Vec<String> = rowid_name
        .into_iter()
        .chain(columns.iter().copied())
        .map(quote)
        .collect();
    let placeholders: Vec<String> = (1..=names.len()).map(|i| format!("?{i}")).collect();
    // OR ABORT over the table's own ON CONFLICT clauses: a row that collides is a
    // conflict to keep and report, never one SQLite drops (IGNORE) or writes over a
    // recovered row (REPLACE).
    if names.is_empty() {
        format!("INSERT OR ABORT INTO {} DEFAULT VALUES", quote(table))
    } else {
        format!(
            "INSERT OR ABORT INTO {} ({}) VALUES ({})",
            quote(table),
            names.join(", "),
            placeholders.join(", ")
        )
    }
}

/// A value ready to bind: text of a UTF-16 source re-encoded where it is valid text, as
/// a BLOB of its bytes otherwise; text of a UTF-8 source bound as stored (never lossily
/// transcoded).
#[derive(Clone, Debug, PartialEq)]
pub enum SqlValue<'v> {
    /// SQL NULL.
    Null,
    /// A 64-bit signed integer.
    Integer(i64),
    /// A 64-bit IEEE floating point number.
    Real(f64),
    /// Valid text, decoded from a UTF-16 source encoding (or made here).
    Text(std::borrow::Cow<'v, str>),
    /// The text of a UTF-8 source, bound as text as it is stored: SQLite keeps the bytes it
    /// is given, valid UTF-8 or not, so the check of each (some 3 % of `--carve`'s
    /// processor time) changed nothing.
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
                TextEncoding::Utf8 => SqlValue::RawText(t),
                _ => match enc.decode(t) {
                    Some(s) => SqlValue::Text(std::borrow::Cow::Owned(s)),
                    // Bound as text, SQLite would convert them from UTF-8: the same
                    // bytes, as a BLOB.
                    None => SqlValue::Blob(t),
                },
            },
        }
    }
}

impl SqlValue<'_> {
    /// The value as it is bound.
    pub fn value_ref(&self) -> ValueRef<'_> {
        match self {
            SqlValue::Null => ValueRef::Null,
            SqlValue::Integer(i) => ValueRef::Integer(*i),
            SqlValue::Real(r) => ValueRef::Real(*r),
            SqlValue::Text(s) => ValueRef::Text(s.as_bytes()),
            SqlValue::RawText(b) => ValueRef::Text(b),
            SqlValue::Blob(b) => ValueRef::Blob(b),
        }
    }
}

impl rusqlite::ToSql for SqlValue<'_> {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(ToSqlOutput::Borrowed(self.value_ref()))
    }
}

impl reconstruct::Columns for Output {
    fn columns(&self, table: &str) -> Result<Vec<String>, String> {
        Output::columns(self, table).map_err(|e| e.to_string())
    }
}
