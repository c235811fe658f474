//! SQLite as a tool on files salvage made or copies it holds (never on the evidence):
//! URI filenames that keep every byte of a path a name, read-only opening, and its own
//! checks (`quick_check`, `integrity_check`) read the way every caller reads them.

use std::path::Path;

use rusqlite::OpenFlags;

/// A value SQLite read, as stored (`pager::Value`): text keeps its bytes, valid UTF-8 or not
/// (a damaged key is still a key).
pub fn value_of(v: rusqlite::types::ValueRef<'_>) -> pager::Value {
    use pager::Value;
    use rusqlite::types::ValueRef;
    match v {
        ValueRef::Null => Value::Null,
        ValueRef::Integer(i) => Value::Integer(i),
        ValueRef::Real(r) => Value::Real(r),
        ValueRef::Text(t) => Value::Text(t.to_vec()),
        ValueRef::Blob(b) => Value::Blob(b.to_vec()),
    }
}

/// Read-only open flags, URI filenames allowed.
pub fn read_only() -> OpenFlags {
    OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_URI | OpenFlags::SQLITE_OPEN_NO_MUTEX
}

/// `path` as a SQLite URI filename with `query` ("URI Filenames"): every byte but the
/// unreserved ones and `/` percent-encoded, so that `?`, `#` and `%` in a name are names.
pub fn uri(path: &Path, query: &str) -> String {
    use std::os::unix::ffi::OsStrExt;
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut s = String::from("file:");
    for &b in absolute.as_os_str().as_bytes() {
        if b.is_ascii_alphanumeric() || b"/-._~".contains(&b) {
            s.push(char::from(b));
        } else {
            s.push_str(&format!("%{b:02X}"));
        }
    }
    s.push('?');
    s.push_str(query);
    s
}

/// How many problems a check lists at first: when all are text an older SQLite left (see
/// [`sqlite_check`]), it runs again listing every one, so that none hides another.
pub const CHECK_LINES: u32 = 1000;

/// The start of a check's line for a TEXT value in a column of numeric affinity that this
/// SQLite would convert on the way in.
const CONVERTIBLE_TEXT: &str = "TEXT value in ";

/// What SQLite's `quick_check` or `integrity_check` said of a database.
pub struct CheckAnswer {
    /// Every line, "ok" alone when nothing is wrong.
    pub lines: Vec<String>,
    /// The columns (`table.column`, each once) holding text this SQLite would convert:
    /// an older SQLite stored such text as text (`'1\0'` before 3.44), so they are the
    /// data as it was, not a fault of the file's structure.
    pub convertible: Vec<String>,
    /// Every other problem; an answer of no line at all is one.
    pub faults: Vec<String>,
    /// Whether SQLite listed every problem it found (its list stops at the limit it is
    /// given); unknown, and so false, for lines read elsewhere.
    pub whole: bool,
}

impl CheckAnswer {
    /// Takes out of the faults the full-text checks of `tables` (see
    /// [`stand_in_full_text`]), and returns them.
    pub fn leave_out_full_text(&mut self, tables: &[String]) -> Vec<String> {
        let (left_out, faults) = std::mem::take(&mut self.faults)
            .into_iter()
            .partition(|line| {
                line.starts_with("malformed inverted index for FTS")
                    && tables
                        .iter()
                        .any(|t| line.ends_with(&format!(" table main.{t}")))
            });
        self.faults = faults;
        left_out
    }
}

/// Runs `pragma` (`PRAGMA quick_check` or `PRAGMA integrity_check`) on `conn`.
pub fn sqlite_check(conn: &rusqlite::Connection, pragma: &str) -> rusqlite::Result<CheckAnswer> {
    let run = |limit: u32| -> rusqlite::Result<Vec<String>> {
        conn.prepare(&format!("{pragma}({limit})"))?
            .query_map([], |r| r.get::<_, String>(0))?
            .collect()
    };
    let run = |limit: u32| run(limit).map(unheaded);
    let mut limit = CHECK_LINES;
    let mut lines = run(limit)?;
    // SQLite checks a row's CHECK constraints before its index entries: a thousand rows
    // failing them could hide every other problem.
    let per_row =
        |l: &String| l.starts_with(CONVERTIBLE_TEXT) || reconstruct::check_failed_in(l).is_some();
    if lines.len() >= limit as usize && lines.iter().all(per_row) {
        // One line per value or row, at most the rows of the database: every one, once.
        limit = i32::MAX as u32;
        lines = run(limit)?;
    }
    let mut answer = CheckAnswer::of_lines(lines, pragma);
    answer.whole = answer.lines.len() < limit as usize;
    Ok(answer)
}

/// SQLite gives the problems of the b-tree check in one result, a line each, headed by
/// the database's name on a line of its own ("*** in database main ***"): each line is
/// a problem, the heading none.
fn unheaded(lines: Vec<String>) -> Vec<String> {
    lines
        .iter()
        .flat_map(|l| l.split('\n'))
        .filter(|l| !(l.starts_with("*** in database ") && l.ends_with(" ***")))
        .map(str::to_string)
        .collect()
}

impl CheckAnswer {
    /// The answer of `pragma`, given its result's lines.
    pub fn of_lines(lines: Vec<String>, pragma: &str) -> CheckAnswer {
        let lines = unheaded(lines);
        let mut convertible: Vec<String> = lines
            .iter()
            .filter_map(|l| l.strip_prefix(CONVERTIBLE_TEXT).map(str::to_string))
            .collect();
        convertible.sort_unstable();
        convertible.dedup();
        let mut faults: Vec<String> = lines
            .iter()
            .filter(|l| *l != "ok" && !l.starts_with(CONVERTIBLE_TEXT))
            .cloned()
            .collect();
        if lines.is_empty() {
            faults.push(format!("{pragma} said nothing"));
        }
        CheckAnswer {
            lines,
            convertible,
            faults,
            whole: false,
        }
    }
}

/// SQLite's `PRAGMA integrity_check` of the database at `path`, opened read-only and
/// immutable (no lock taken, no sidecar made or read): `Ok(())` or the first problems it
/// names. Text an older SQLite left in a numeric column, which this one would convert,
/// is the data as it was, not a fault (see `finish::verify`).
pub fn integrity(path: &Path) -> Result<(), String> {
    integrity_with(path, false)
}

/// [`integrity`] of an output this tool wrote: a collation its schema names that this
/// build lacks has the stand-in the output was written with ([`register_stand_ins`]).
/// (SQLite's check of a read-only connection leaves CHECK constraints out: a row failing
/// one, the source's as read and named by the recovery's report, is no fault here.)
pub fn integrity_of_output(path: &Path) -> Result<(), String> {
    integrity_with(path, true)
}

fn integrity_with(path: &Path, stand_ins: bool) -> Result<(), String> {
    use crate::base::sqlite::{read_only, uri};
    let conn = rusqlite::Connection::open_with_flags(uri(path, "immutable=1"), read_only())
        .map_err(|e| e.to_string())?;
    if stand_ins {
        register_stand_ins(&conn).map_err(|e| e.to_string())?;
    }
    let mut answer = crate::base::sqlite::sqlite_check(&conn, "PRAGMA integrity_check")
        .map_err(|e| e.to_string())?;
    if stand_ins {
        answer.leave_out_full_text(&stand_in_full_text(&conn));
    }
    match answer.faults.as_slice() {
        [] => Ok(()),
        faults => Err(faults
            .iter()
            .take(20)
            .cloned()
            .collect::<Vec<_>>()
            .join("; ")),
    }
}

/// Gives `conn` a stand-in for every collation a statement names that this build lacks
/// (an application's own, such as Android's `PHONEBOOK` or `LOCALIZED`): it compares
/// bytes, BINARY's order, so that a table and its indexes are made with their declared
/// SQL and read back as they are. An index on such a collation is then in binary order,
/// not the application's: the report says so ([`stand_ins`]).
///
/// Never on a connection that checks the evidence: an index the application ordered by
/// its own collation would look out of order under the stand-in.
pub fn stand_in_collations(conn: &rusqlite::Connection) -> rusqlite::Result<()> {
    // Any name met in a UTF-8 database (rusqlite asks only for UTF-8 ones)…
    conn.collation_needed(|conn, name| stand_in(conn, [name.to_string()]))?;
    // … and, for every encoding, those the database's own schema names.
    let sql = schema_sql(conn);
    stand_in(
        conn,
        sql.iter().flat_map(|s| reconstruct::collations_named(s)),
    )
}

/// Gives a connection to an output this tool writes or wrote the stand-ins it was written
/// with: [`stand_in_collations`] and [`stand_in_tokenizers`] for the schema's names.
pub fn register_stand_ins(conn: &rusqlite::Connection) -> rusqlite::Result<()> {
    stand_in_collations(conn)?;
    stand_in_tokenizers(
        conn,
        schema_sql(conn)
            .iter()
            .filter_map(|s| reconstruct::vtab::fts3_tokenizer(s)),
    )
}

/// The full-text tables of `conn`'s schema made over a stand-in tokenizer: each holds the
/// index the application's tokenizer built, so SQLite's check of it, which tokenizes the
/// text again with the stand-in, finds it wrong ([`CheckAnswer::leave_out_full_text`]).
pub fn stand_in_full_text(conn: &rusqlite::Connection) -> Vec<String> {
    let rows: Vec<(String, String)> = conn
        .prepare("SELECT name, sql FROM sqlite_schema WHERE type = 'table' AND sql IS NOT NULL")
        .and_then(|mut s| s.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?.collect())
        .unwrap_or_default();
    rows.into_iter()
        .filter(|(_, sql)| {
            reconstruct::vtab::fts3_tokenizer(sql).is_some_and(|t| !tokenizer_shipped(&t))
        })
        .map(|(name, _)| name)
        .collect()
}

/// Every CREATE statement of `conn`'s schema.
fn schema_sql(conn: &rusqlite::Connection) -> Vec<String> {
    conn.prepare("SELECT sql FROM sqlite_schema WHERE sql IS NOT NULL")
        .and_then(|mut s| s.query_map([], |r| r.get(0))?.collect())
        .unwrap_or_default()
}

/// Gives `conn` a stand-in, a copy of SQLite's `simple`, for each FTS3/FTS4 tokenizer of
/// `names` this build lacks (an application's own, such as Thunderbird's `mozporter`), so
/// that its full-text tables are made with their declared SQL; their shadow tables are then
/// copied as stored, the index the application's tokenizer built. Registering one takes
/// the two-argument `fts3_tokenizer()` with the pointer as a bound parameter, the one form
/// SQLite allows without turning the function on for every statement (the file's too).
///
/// Only on connections to an output: a check of one leaves such a table's full-text check
/// out ([`stand_in_full_text`]).
pub fn stand_in_tokenizers(
    conn: &rusqlite::Connection,
    names: impl IntoIterator<Item = String>,
) -> rusqlite::Result<()> {
    let mut missing: Vec<String> = names
        .into_iter()
        .filter(|n| !tokenizer_shipped(n))
        .collect();
    missing.sort();
    missing.dedup();
    if missing.is_empty() {
        return Ok(());
    }
    // `fts3_tokenizer()` gives and takes a pointer: SQLite allows it, without
    // SQLITE_DBCONFIG_ENABLE_FTS3_TOKENIZER, only with its arguments bound, as here.
    // `simple`'s pointer (the module is the process's, whatever the connection) is asked
    // of a UTF-8 connection of its own: in a UTF-16 database the bound name is translated
    // into its encoding, and the copy no longer counts as bound.
    let simple: Vec<u8> = rusqlite::Connection::open_in_memory()?.query_row(
        "SELECT fts3_tokenizer(?1)",
        ["simple"],
        |r| r.get(0),
    )?;
    for name in &missing {
        conn.query_row(
            "SELECT fts3_tokenizer(?1, ?2)",
            rusqlite::params![name, simple],
            |_| Ok(()),
        )?;
    }
    Ok(())
}

/// Whether this build ships the FTS3 tokenizer `name` (`simple`, `porter`, `unicode61`):
/// a new connection finds it.
pub fn tokenizer_shipped(name: &str) -> bool {
    static SHIPPED: std::sync::OnceLock<std::sync::Mutex<std::collections::HashMap<String, bool>>> =
        std::sync::OnceLock::new();
    let cache = SHIPPED.get_or_init(Default::default);
    // FTS3 finds a tokenizer by its name as written: `Porter` is not `porter`.
    let key = name.to_string();
    if let Some(known) = cache.lock().ok().and_then(|c| c.get(&key).copied()) {
        return known;
    }
    let shipped = rusqlite::Connection::open_in_memory()
        .and_then(|c| c.query_row("SELECT fts3_tokenizer(?1)", [name], |_| Ok(())))
        .is_ok();
    if let Ok(mut c) = cache.lock() {
        c.insert(key, shipped);
    }
    shipped
}

/// Gives `conn` a stand-in comparing bytes for each of `names` SQLite does not ship (see
/// [`stand_in_collations`]). Whether the connection already has one cannot be asked:
/// `collation_list` also lists the names a schema it read merely mentions.
pub fn stand_in(
    conn: &rusqlite::Connection,
    names: impl IntoIterator<Item = String>,
) -> rusqlite::Result<()> {
    let shipped = shipped_collations();
    for name in names {
        if !shipped.iter().any(|s| s.eq_ignore_ascii_case(&name)) {
            conn.create_collation(name.as_str(), |a: &str, b: &str| {
                a.as_bytes().cmp(b.as_bytes())
            })?;
        }
    }
    Ok(())
}

/// The collations this SQLite ships: those a new connection has.
fn shipped_collations() -> &'static [String] {
    static SHIPPED: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    SHIPPED.get_or_init(|| {
        rusqlite::Connection::open_in_memory()
            .and_then(|c| {
                c.prepare("SELECT name FROM pragma_collation_list")
                    .and_then(|mut s| s.query_map([], |r| r.get(0))?.collect())
            })
            .unwrap_or_else(|_| vec!["BINARY".into(), "NOCASE".into(), "RTRIM".into()])
    })
}

/// The stand-in collations on `conn`: the collations it knows that SQLite does not ship,
/// each named by the schema and given a stand-in, in the order first met.
pub fn stand_ins(conn: &rusqlite::Connection) -> Vec<String> {
    let shipped = shipped_collations();
    conn.prepare("SELECT name FROM pragma_collation_list ORDER BY seq DESC")
        .and_then(|mut s| s.query_map([], |r| r.get::<_, String>(0))?.collect())
        .unwrap_or_else(|_| Vec::new())
        .into_iter()
        .filter(|n: &String| !shipped.iter().any(|b| b.eq_ignore_ascii_case(n)))
        .collect()
}

/// SQLite's own `PRAGMA integrity_check` of the database image `image` gives (`size`
/// bytes), deserialized into a private connection in memory, read-only: SQLite never
/// opens the evidence. Its answer (the problems in `faults`), and the connection holding
/// the image (to look up what they name); an error when it cannot read the image
/// at all (`SQLITE_CORRUPT` or `SQLITE_NOTADB`: a problem of the file) or cannot run the
/// check (anything else: a module, function or collation the schema names and this
/// build lacks).
///
/// The file's schema runs in the check (index expressions, CHECK constraints), so the
/// check runs under limits: no value longer than the image itself, and at most `steps`
/// instructions of SQLite's machine (past them it is interrupted: an error).
pub fn check_image(
    image: impl std::io::Read,
    size: usize,
    steps: i64,
) -> rusqlite::Result<(CheckAnswer, rusqlite::Connection)> {
    let mut conn = rusqlite::Connection::open_in_memory()?;
    conn.set_limit(
        rusqlite::limits::Limit::SQLITE_LIMIT_LENGTH,
        i32::try_from(size).unwrap_or(i32::MAX).max(1 << 20),
    )?;
    budget(&mut conn, steps)?;
    conn.deserialize_read_exact(rusqlite::MAIN_DB, image, size, true)?;
    let answer = sqlite_check(&conn, "PRAGMA integrity_check")?;
    Ok((answer, conn))
}

/// Gives what `conn` runs from now on `steps` of SQLite's instructions: past them, the
/// statement running is interrupted.
pub fn budget(conn: &mut rusqlite::Connection, steps: i64) -> rusqlite::Result<()> {
    let mut left = steps / i64::from(CHECK_PROGRESS_EVERY);
    conn.progress_handler(
        CHECK_PROGRESS_EVERY,
        Some(move || {
            left -= 1;
            left <= 0
        }),
    )
}

/// Instructions between two calls of the check's progress handler.
const CHECK_PROGRESS_EVERY: i32 = 1000;

/// Whether SQLite's error says the file is malformed (rather than that SQLite lacks
/// something to read it with).
pub fn is_corrupt(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(rusqlite::ErrorCode::DatabaseCorrupt | rusqlite::ErrorCode::NotADatabase)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uri_escapes_what_sqlite_would_read_as_syntax() {
        assert_eq!(
            uri(Path::new("/a b/c?d#e%f.db"), "mode=ro"),
            "file:/a%20b/c%3Fd%23e%25f.db?mode=ro"
        );
    }
}

#[cfg(test)]
mod tokenizer_tests {
    #[test]
    fn a_stand_in_tokenizer_makes_its_table() {
        // Registered without turning the two-argument form on for every statement.
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        // In a UTF-16 database too.
        conn.execute_batch("PRAGMA encoding = 'UTF-16le'").unwrap();
        super::stand_in_tokenizers(&conn, ["mozporter".to_string()]).unwrap();
        let forged = conn.query_row("SELECT fts3_tokenizer('x', x'00')", [], |_| Ok(()));
        assert!(forged.is_err(), "the file's SQL cannot register a pointer");
        conn.execute_batch("CREATE VIRTUAL TABLE t USING fts4(a, tokenize=mozporter)")
            .unwrap();
    }
}
