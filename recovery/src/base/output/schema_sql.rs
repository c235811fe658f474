//! The file's own SQL on the output, under limits: a damaged or hostile schema's CREATE
//! statements, and the expressions of its indexes, generated columns and defaults, run on
//! a connection that defends itself (an authorizer, a budget of instructions, bounded
//! memory and depth), and what SQLite parses them into read back.

use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::Arc;

use reconstruct::{Column, ColumnDefault, ColumnKind, TableShape};
use rusqlite::config::DbConfig;
use rusqlite::limits::Limit;
use rusqlite::Connection;

use super::quote;

/// SQLite calls the progress handler every this many virtual machine instructions.
pub(super) const PROGRESS_EVERY: i32 = 1000;

/// Instructions a statement of the file's schema may run per row of its table, and on top.
pub(super) const STEPS_PER_ROW: i64 = 20_000;
pub(super) const STEPS_BASE: i64 = 20_000_000;

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
pub(super) fn configure(
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
    // KiB: 8 MiB of pages, and as much for each sorted run of CREATE INDEX (SQLite sizes
    // them by the cache). More made no index faster on a 2 GB table: 16 MiB held 27 MiB
    // more at the peak of a 20 GB recovery (its index sorted beside the loss bounds), 64
    // MiB 100 MiB more.
    conn.pragma_update(None, "cache_size", -8_192)?;
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_DEFENSIVE, true)?;
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_TRUSTED_SCHEMA, false)?;
    crate::base::sqlite::register_stand_ins(conn)?;
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
    // SQLite itself says whether the key is the rowid: `INTEGER PRIMARY KEY DESC` on the
    // column is not, and gets an index of origin `pk` as any other primary key does.
    let pk_indexed: bool = conn.query_row(
        "SELECT count(*) > 0 FROM pragma_index_list(?1) WHERE origin = 'pk'",
        [name],
        |r| r.get(0),
    )?;
    Ok(TableShape {
        name: name.to_string(),
        columns,
        without_rowid,
        strict,
        pk_indexed,
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
