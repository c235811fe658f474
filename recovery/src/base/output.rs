//! The output database: created with rusqlite (bundled SQLite), schema first, then rows
//! bound as parameters; identifiers quoted, never SQL assembled from recovered values.

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::Arc;

use pager::{TextEncoding, Value};
use reconstruct::{Column, ColumnDefault, ColumnKind, TableShape};
use rusqlite::config::DbConfig;
use rusqlite::limits::Limit;
use rusqlite::types::{ToSqlOutput, ValueRef};
use rusqlite::{params_from_iter, Connection};

/// SQLite calls the progress handler every this many virtual machine instructions.
const PROGRESS_EVERY: i32 = 1000;

/// Instructions a statement of the file's schema may run per row of its table, and on top.
const STEPS_PER_ROW: i64 = 20_000;
const STEPS_BASE: i64 = 20_000_000;

/// The longest SQL statement the output runs, in bytes: a CREATE statement of a real
/// schema is a few kilobytes; 2,000 columns with long names stay under this.
const SQL_LENGTH: i32 = 256 * 1024;

/// The most memory SQLite may hold at once, in bytes (a sort larger than its cache
/// spills to temporary files, so a large index build stays within it).
const HEAP_LIMIT: i64 = 1 << 30;

/// Settings of every connection to the output: the journal off while loading (the file
/// is not the destination until it is verified and renamed), CHECK constraints and foreign
/// keys not enforced (recovered rows are kept as they were). The SQL of the damaged file
/// runs here (its CREATE statements, and the expressions of its indexes, generated
/// columns and defaults), so the connection defends itself: no writes to the schema
/// table, functions in the schema only when harmless, bounded expression depth and
/// trigger recursion, a hard limit on memory, and a budget of instructions that the
/// progress handler enforces (`budget`: instructions left, in units of
/// [`PROGRESS_EVERY`]; unbounded unless a statement of the file's schema runs). While one
/// does (`replaying`), an authorizer refuses what no CREATE statement of a schema needs
/// ([`replay_allows`]).
fn configure(
    conn: &mut Connection,
    budget: &Arc<AtomicI64>,
    replaying: &Arc<AtomicBool>,
) -> rusqlite::Result<()> {
    conn.pragma_update_and_check(None, "journal_mode", "OFF", |r| r.get::<_, String>(0))?;
    conn.pragma_update(None, "synchronous", "OFF")?;
    // The output is this run's alone until its commit: one lock, taken once and kept,
    // spares every statement's own lock, file check and cache reload.
    conn.pragma_update(None, "locking_mode", "EXCLUSIVE")?;
    conn.pragma_update(None, "ignore_check_constraints", 1)?;
    conn.pragma_update(None, "foreign_keys", 0)?;
    // KiB: 16 MiB of pages, and as much for each sorted run of CREATE INDEX (SQLite sizes
    // them by the cache). More made no index faster on a 2 GB table and cost 100 MiB.
    conn.pragma_update(None, "cache_size", -16_384)?;
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_DEFENSIVE, true)?;
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_TRUSTED_SCHEMA, false)?;
    conn.set_limit(Limit::SQLITE_LIMIT_EXPR_DEPTH, 256)?;
    conn.set_limit(Limit::SQLITE_LIMIT_TRIGGER_DEPTH, 16)?;
    // Compiling a statement runs no instruction the budget counts, and some of it grows
    // faster than the statement (constants are compared with each other): no statement
    // of the schema may be longer than a real one ever is.
    conn.set_limit(Limit::SQLITE_LIMIT_SQL_LENGTH, SQL_LENGTH)?;
    conn.pragma_update(None, "hard_heap_limit", HEAP_LIMIT)?;
    let left = Arc::clone(budget);
    conn.progress_handler(
        PROGRESS_EVERY,
        Some(move || left.fetch_sub(1, Ordering::Relaxed) <= 0),
    )?;
    let replay = Arc::clone(replaying);
    conn.authorizer(Some(move |ctx: rusqlite::hooks::AuthContext<'_>| {
        if !replay.load(Ordering::Relaxed) || replay_allows(&ctx.action) {
            rusqlite::hooks::Authorization::Allow
        } else {
            rusqlite::hooks::Authorization::Deny
        }
    }))?;
    Ok(())
}

/// Functions no statement of a schema may call while it is replayed: they load code,
/// touch files or register tokenizers by address.
const REFUSED_FUNCTIONS: [&str; 5] = [
    "load_extension",
    "fts3_tokenizer",
    "readfile",
    "writefile",
    "edit",
];

/// Whether an action may run while a CREATE statement of the file's schema is prepared
/// (SQLite asks for each thing the statement, and the statements a virtual table's
/// module runs to make its shadow tables, would do): creating objects of the database,
/// writing the schema table and a virtual table's own shadow tables, reading, and calling
/// functions other than [`REFUSED_FUNCTIONS`]. Never attaching or detaching a file, a
/// PRAGMA (but reading the page size), dropping or altering anything, TEMP objects, or what SQLite does not name.
fn replay_allows(action: &rusqlite::hooks::AuthAction<'_>) -> bool {
    use rusqlite::hooks::AuthAction as A;
    match action {
        A::CreateTable { .. }
        | A::CreateIndex { .. }
        | A::CreateView { .. }
        | A::CreateTrigger { .. }
        | A::CreateVtable { .. }
        | A::Insert { .. }
        | A::Update { .. }
        | A::Delete { .. }
        | A::Read { .. }
        | A::Select
        | A::Recursive
        // Filling a new index is a REINDEX of it.
        | A::Reindex { .. } => true,
        // The R-tree module reads the page size to size its nodes.
        A::Pragma {
            pragma_name,
            pragma_value: None,
        } => pragma_name.eq_ignore_ascii_case("page_size"),
        A::Function { function_name } => !REFUSED_FUNCTIONS
            .iter()
            .any(|f| f.eq_ignore_ascii_case(function_name)),
        _ => false,
    }
}

/// The shape of table `name` of `conn` as SQLite parsed its CREATE statement.
pub fn table_shape(
    conn: &Connection,
    name: &str,
    without_rowid: bool,
) -> rusqlite::Result<TableShape> {
    let strict: bool = conn
        .query_row(
            "SELECT strict FROM pragma_table_list WHERE schema = 'main' AND name = ?1",
            [name],
            |r| r.get(0),
        )
        .unwrap_or(false);
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
        strict,
    })
}

/// A plain CREATE TABLE statement for a table whose own cannot run here because it names a
/// function or collation this build lacks: its name and columns in order, each with its
/// declared type, the INTEGER PRIMARY KEY (the rowid alias) and the primary key of a
/// WITHOUT ROWID table kept, a stored generated column kept as a plain column (its value
/// is in the record), a virtual one left out (it is not), every other constraint and
/// expression dropped. The statement is parsed by SQLite in a scratch database where each
/// missing function returns NULL and each missing collation compares bytes. Returns the
/// table's name, the statement, and what was missing.
pub fn plain_table(sql: &str) -> Result<(String, String, Vec<String>), String> {
    let (shape, missing) = scratch_shape(sql)?;
    let (name, wr) = (shape.name.clone(), shape.without_rowid);
    let alias = shape.rowid_alias();
    let mut cols: Vec<String> = Vec::new();
    for (i, c) in shape.columns.iter().enumerate() {
        if c.kind == ColumnKind::VirtualGenerated {
            continue;
        }
        let mut col = format!("{} {}", quote(&c.name), c.decl_type);
        if Some(i) == alias {
            col.push_str(" PRIMARY KEY");
        }
        cols.push(col.trim_end().to_string());
    }
    if wr {
        let mut key: Vec<(u32, &str)> = shape
            .columns
            .iter()
            .filter(|c| c.pk > 0)
            .map(|c| (c.pk, c.name.as_str()))
            .collect();
        key.sort_unstable();
        let key: Vec<String> = key.iter().map(|(_, n)| quote(n)).collect();
        cols.push(format!("PRIMARY KEY({})", key.join(", ")));
    }
    let plain = format!(
        "CREATE TABLE {}({}){}",
        quote(&name),
        cols.join(", "),
        if wr { " WITHOUT ROWID" } else { "" }
    );
    Ok((name, plain, missing))
}

/// The shape of the table a CREATE TABLE statement makes, as SQLite parses it in a
/// scratch database (defensive, under the replay's limits) where each missing function
/// returns NULL and each missing collation compares bytes; with what was missing.
pub fn scratch_shape(sql: &str) -> Result<(TableShape, Vec<String>), String> {
    let conn = Connection::open_in_memory().map_err(|e| e.to_string())?;
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_DEFENSIVE, true)
        .map_err(|e| e.to_string())?;
    let mut missing: Vec<String> = Vec::new();
    // A TEMP table's schema row (refused as it stands) keeps its rows in a table of the
    // database like any other.
    let sql = &without_temp(sql);
    while let Err(e) = create_statement(&conn, sql, pager::SchemaKind::Table) {
        let stub = |prefix: &str| {
            e.strip_prefix(prefix)
                .map(|rest| rest.split_whitespace().next().unwrap_or("").to_string())
                .filter(|n| !n.is_empty() && !missing.contains(n))
        };
        if missing.len() >= 32 {
            return Err(e);
        }
        if let Some(name) = stub("no such function: ") {
            conn.create_scalar_function(
                name.as_str(),
                -1,
                rusqlite::functions::FunctionFlags::SQLITE_UTF8
                    | rusqlite::functions::FunctionFlags::SQLITE_DETERMINISTIC,
                |_| Ok(rusqlite::types::Value::Null),
            )
            .map_err(|e| e.to_string())?;
            missing.push(name);
        } else if let Some(name) = stub("no such collation sequence: ") {
            conn.create_collation(name.as_str(), |a: &str, b: &str| {
                a.as_bytes().cmp(b.as_bytes())
            })
            .map_err(|e| e.to_string())?;
            missing.push(name);
        } else {
            return Err(e);
        }
    }
    let (name, wr): (String, bool) = conn
        .query_row(
            "SELECT name, wr FROM pragma_table_list WHERE schema = 'main'
             AND lower(substr(name, 1, 7)) <> 'sqlite_' AND type = 'table'",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .map_err(|e| e.to_string())?;
    let shape = table_shape(&conn, &name, wr).map_err(|e| e.to_string())?;
    Ok((shape, missing))
}

/// The next word of SQL text `w` (letters, digits, `_`), upper-cased, past white space and
/// comments; `w` moves past it.
fn next_word(w: &mut &str) -> String {
    loop {
        let t = w.trim_start();
        if let Some(rest) = t.strip_prefix("--") {
            *w = rest.find('\n').map_or("", |i| &rest[i..]);
        } else if let Some(rest) = t.strip_prefix("/*") {
            *w = rest.find("*/").map_or("", |i| &rest[i + 2..]);
        } else {
            *w = t;
            break;
        }
    }
    let end = w
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(w.len());
    let (head, rest) = w.split_at(end);
    *w = rest;
    head.to_ascii_uppercase()
}

/// A CREATE statement without its `TEMP` or `TEMPORARY` word, if it has one.
fn without_temp(sql: &str) -> String {
    let mut rest = sql;
    if next_word(&mut rest) == "CREATE" {
        let head = &sql[..sql.len() - rest.len()];
        let mut after = rest;
        if matches!(next_word(&mut after).as_str(), "TEMP" | "TEMPORARY") {
            return format!("{head}{after}");
        }
    }
    sql.to_string()
}

/// The kind of object a CREATE statement makes, and whether it says TEMP, from its first
/// words; `None` when it is not a CREATE statement of a schema object.
pub fn statement_kind(sql: &str) -> Option<(pager::SchemaKind, bool)> {
    use pager::SchemaKind;
    let mut words = sql;
    if next_word(&mut words) != "CREATE" {
        return None;
    }
    let mut next = next_word(&mut words);
    let temp = next == "TEMP" || next == "TEMPORARY";
    if temp {
        next = next_word(&mut words);
    }
    if next == "UNIQUE" {
        return (next_word(&mut words) == "INDEX").then_some((SchemaKind::Index, temp));
    }
    if next == "VIRTUAL" {
        return (next_word(&mut words) == "TABLE").then_some((SchemaKind::Table, temp));
    }
    let kind = match next.as_str() {
        "TABLE" => SchemaKind::Table,
        "INDEX" => SchemaKind::Index,
        "VIEW" => SchemaKind::View,
        "TRIGGER" => SchemaKind::Trigger,
        _ => return None,
    };
    Some((kind, temp))
}

/// Whether `sql` is a `CREATE TABLE` whose name is followed by anything but its column
/// list: `AS SELECT …`, which would run a query (unbounded, on a hostile schema). SQLite
/// itself stores such a table as a plain column list, so a real schema never has one.
fn table_as_select(sql: &str) -> bool {
    let mut words = sql.trim_start();
    let word = next_word;
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
/// CREATE statement of an object of `kind` in the database itself: a schema row carrying a
/// further statement (an `ATTACH` that would write a file, say), a TEMP object (its rows
/// would go where the connection's end drops them) or an object of another kind than its
/// row's is refused, never run.
pub fn create_statement(
    conn: &Connection,
    sql: &str,
    kind: pager::SchemaKind,
) -> Result<(), String> {
    match statement_kind(sql) {
        None => return Err("not a CREATE statement".into()),
        Some((_, true)) => {
            return Err(
                "a TEMP object: a database's schema never stores one; refused, not run".into(),
            )
        }
        Some((made, false)) if made != kind => {
            return Err(format!(
                "the schema row of {} {} holds a CREATE {} statement; refused, not run",
                if kind == pager::SchemaKind::Index {
                    "an"
                } else {
                    "a"
                },
                kind.as_str(),
                made.as_str().to_ascii_uppercase()
            ))
        }
        Some(_) => {}
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
/// … that the schema does not use (`taken`: its names, lower-cased; SQLite compares names
/// without case).
pub fn registry_name(base: &str, taken: &std::collections::BTreeSet<String>) -> String {
    std::iter::once(base.to_string())
        .chain((1..).map(|i| format!("{base}_{i}")))
        .find(|n| !taken.contains(&n.to_lowercase()))
        .unwrap_or_default()
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
        let conn = crate::base::readahead::connect(path)?;
        conn.pragma_update(None, "page_size", i64::from(page_size))?;
        let enc = match encoding {
            TextEncoding::Utf8 => "UTF-8",
            TextEncoding::Utf16le => "UTF-16le",
            TextEncoding::Utf16be => "UTF-16be",
        };
        conn.pragma_update(None, "encoding", enc)?;
        conn.pragma_update(None, "user_version", i64::from(user_version))?;
        conn.pragma_update(None, "application_id", i64::from(application_id as i32))?;
        let budget = Arc::new(AtomicI64::new(i64::MAX));
        let replaying = Arc::new(AtomicBool::new(false));
        let mut conn = conn;
        configure(&mut conn, &budget, &replaying)?;
        Ok(Output {
            conn,
            path: path.to_owned(),
            budget,
            replaying,
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
    /// Text bytes that are not valid UTF-8 in a UTF-8 source, bound as text as they are.
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

#[cfg(test)]
mod tests {
    #[test]
    fn a_statement_says_what_it_makes() {
        use super::statement_kind as k;
        use pager::SchemaKind::*;
        assert_eq!(k("CREATE TABLE t(a)"), Some((Table, false)));
        assert_eq!(
            k("create /* x */ unique\n index i on t(a)"),
            Some((Index, false))
        );
        assert_eq!(
            k("CREATE VIRTUAL TABLE f USING fts5(a)"),
            Some((Table, false))
        );
        assert_eq!(
            k("CREATE -- note\n TEMPORARY VIEW v AS SELECT 1"),
            Some((View, true))
        );
        assert_eq!(
            k("CREATE TEMP TRIGGER r AFTER INSERT ON t BEGIN SELECT 1; END"),
            Some((Trigger, true))
        );
        assert_eq!(k("ATTACH 'x' AS y"), None);
        assert_eq!(k("CREATE UNIQUE TABLE t(a)"), None);
        assert_eq!(
            super::without_temp("CREATE TEMP TABLE t(a)"),
            "CREATE TABLE t(a)"
        );
    }

    #[test]
    fn replayed_schema_sql_may_not_reach_outside_the_output() {
        use rusqlite::hooks::AuthAction as A;
        let allows = super::replay_allows;
        assert!(allows(&A::CreateTable { table_name: "t" }));
        assert!(allows(&A::Insert {
            table_name: "sqlite_master"
        }));
        assert!(allows(&A::Function {
            function_name: "upper"
        }));
        assert!(allows(&A::Pragma {
            pragma_name: "page_size",
            pragma_value: None
        }));
        assert!(!allows(&A::Attach {
            filename: "/tmp/x.db"
        }));
        assert!(!allows(&A::Pragma {
            pragma_name: "page_size",
            pragma_value: Some("512")
        }));
        assert!(!allows(&A::Pragma {
            pragma_name: "writable_schema",
            pragma_value: None
        }));
        assert!(!allows(&A::CreateTempTable { table_name: "t" }));
        assert!(!allows(&A::DropTable { table_name: "t" }));
        assert!(!allows(&A::Function {
            function_name: "LOAD_EXTENSION"
        }));
    }

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
