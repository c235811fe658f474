//! SQLite as the oracle: its own `PRAGMA integrity_check` of the database as read (the
//! main file with its log applied, as this run reads it), on a private copy in memory.
//! The evidence is never opened by SQLite; the copy is bounded ([`SQLITE_CHECK_LIMIT`]).

use std::collections::BTreeMap;

use pager::{Database, PageNo};
use reconstruct::{check_failed_in, FailingCheck, FAILING_ROWIDS_LISTED};
use rusqlite::{Connection, OptionalExtension};

use crate::base::output::quote;
use crate::base::sqlite::{budget, check_image, is_corrupt, CHECK_LINES};
use crate::report::{SqliteCheck, SqliteCheckState};

/// The largest database SQLite checks in a run (its copy is held in memory): 64 MiB.
pub const SQLITE_CHECK_LIMIT: u64 = 64 << 20;

/// Instructions SQLite's check may run, on top and per page.
const CHECK_STEPS_BASE: i64 = 20_000_000;
const CHECK_STEPS_PER_PAGE: i64 = 40_000;

/// What SQLite's own integrity check says of `db` as read.
pub fn sqlite_check(db: &Database<'_>) -> SqliteCheck {
    let page_size = db.page_size().bytes() as u64;
    let size = u64::from(db.page_count()) * page_size;
    if size > SQLITE_CHECK_LIMIT {
        return SqliteCheck::not_run(format!(
            "the database is {size} bytes, more than the {SQLITE_CHECK_LIMIT} SQLite's check copies into memory"
        ));
    }
    if size == 0 {
        return SqliteCheck::not_run("the database has no page");
    }
    let Ok(len) = usize::try_from(size) else {
        return SqliteCheck::not_run("the database is larger than this platform addresses");
    };
    // The check runs the file's own expressions (index expressions, CHECK constraints):
    // it may spend this many of SQLite's instructions, about a thousand times what a
    // plain page costs it.
    let steps = CHECK_STEPS_BASE + i64::from(db.page_count()) * CHECK_STEPS_PER_PAGE;
    match check_image(Image::new(db), len, steps) {
        Ok((answer, _)) if answer.faults.is_empty() => SqliteCheck {
            state: SqliteCheckState::Ok,
            ..SqliteCheck::default()
        },
        Ok((answer, mut conn)) => {
            let failing_checks = failing_checks(&mut conn, &answer.faults, answer.whole, steps);
            SqliteCheck {
                state: SqliteCheckState::Problems,
                failing_checks,
                problems: kept(answer.faults),
                not_run: None,
            }
        }
        Err(e) if is_corrupt(&e) => SqliteCheck {
            state: SqliteCheckState::Problems,
            problems: vec![e.to_string()],
            ..SqliteCheck::default()
        },
        Err(rusqlite::Error::SqliteFailure(e, _)) if e.code == rusqlite::ErrorCode::OperationInterrupted => {
            SqliteCheck::not_run(format!(
                "SQLite's check ran past its budget of {steps} instructions (the schema's own expressions run in it)"
            ))
        }
        Err(e) => SqliteCheck::not_run(format!("SQLite cannot check it: {e}")),
    }
}

/// The problems the report keeps: every one but the lines of rows failing a CHECK
/// constraint (a line a row, listed whole), and of those as many as leave the list at
/// SQLite's usual thousand; every other problem first (at most a thousand).
fn kept(problems: Vec<String>) -> Vec<String> {
    let limit = CHECK_LINES as usize;
    let (checks, mut kept): (Vec<String>, Vec<String>) = problems
        .into_iter()
        .partition(|p| check_failed_in(p).is_some());
    kept.truncate(limit);
    let room = limit.saturating_sub(kept.len()).max(1);
    kept.extend(checks.into_iter().take(room));
    kept
}

/// The rows failing their table's CHECK constraint, for each table SQLite's `problems`
/// say fails it, read from SQLite's own read of the copy (`conn`): each row where one of
/// the table's CHECK expressions (as its statement writes them) is false, as SQLite's
/// check judges them (NULL passes). A table whose expressions cannot be run, find no
/// row, or find other rows than SQLite lists (a line a row; `whole`: its list was not
/// cut short), is left out: its problem stays unexplained. The lookups share one more
/// budget of `steps` instructions.
fn failing_checks(
    conn: &mut Connection,
    problems: &[String],
    whole: bool,
    steps: i64,
) -> Vec<FailingCheck> {
    if budget(conn, steps).is_err() {
        return Vec::new();
    }
    let mut lines: BTreeMap<&str, u64> = BTreeMap::new();
    for table in problems.iter().filter_map(|p| check_failed_in(p)) {
        *lines.entry(table).or_default() += 1;
    }
    lines
        .into_iter()
        .filter_map(|(table, lines)| {
            failing_rows(&*conn, table)
                .ok()
                .flatten()
                .filter(|f| f.agrees(lines, whole))
        })
        .collect()
}

/// The rows of `table` failing one of its CHECK constraints; `None` when it has none
/// this can read, or no row fails.
fn failing_rows(conn: &Connection, table: &str) -> rusqlite::Result<Option<FailingCheck>> {
    let sql: Option<String> = conn
        .query_row(
            "SELECT sql FROM sqlite_schema WHERE type = 'table' AND name = ?1 COLLATE NOCASE",
            [table],
            |r| r.get(0),
        )
        .optional()?
        .flatten();
    // SQLite reads a statement to its first NUL.
    let Some(sql) = sql.map(|s| s.split('\0').next().unwrap_or_default().to_string()) else {
        return Ok(None);
    };
    let checks = pager::check_constraints(&sql);
    if checks.is_empty() {
        return Ok(None);
    }
    // Each expression on lines of its own (one may end in a `--` comment); the table
    // itself read, never an index holding the columns, as SQLite's check reads it.
    let failing: Vec<String> = checks.iter().map(|e| format!("NOT (\n{e}\n)")).collect();
    let (from, failing) = (
        format!("{} NOT INDEXED", quote(table)),
        failing.join(" OR "),
    );
    let rows: i64 = conn.query_row(
        &format!("SELECT count(*) FROM {from} WHERE {failing}"),
        [],
        |r| r.get(0),
    )?;
    if rows <= 0 {
        return Ok(None);
    }
    let mut rowids = Vec::new();
    let keyed = pager::schema::table_options(&sql)
        .iter()
        .any(|o| o == "WITHOUT ROWID");
    if !keyed {
        // The rowid by a name no column takes.
        let columns: Vec<String> = conn
            .prepare("SELECT lower(name) FROM pragma_table_xinfo(?1)")?
            .query_map([table], |r| r.get(0))?
            .collect::<rusqlite::Result<_>>()?;
        if let Some(rowid) = ["rowid", "_rowid_", "oid"]
            .into_iter()
            .find(|n| !columns.iter().any(|c| c == n))
        {
            rowids = conn
                .prepare(&format!(
                    "SELECT {rowid} FROM {from} WHERE {failing} ORDER BY {rowid} LIMIT {FAILING_ROWIDS_LISTED}"
                ))?
                .query_map([], |r| r.get(0))?
                .collect::<rusqlite::Result<_>>()?;
        }
    }
    Ok(Some(FailingCheck {
        table: table.to_string(),
        rows: rows as u64,
        rowids,
    }))
}

/// The database as read, page after page, each its page size long (a short last page
/// ends in zeros), as one stream of bytes. Page 1 says rollback mode where it said WAL:
/// the copy has no log of its own, its log's frames are in it already.
struct Image<'d> {
    db: &'d Database<'d>,
    /// The next page to copy.
    next: u32,
    /// The page being copied, and how much of it is copied.
    page: Vec<u8>,
    at: usize,
}

impl<'d> Image<'d> {
    fn new(db: &'d Database<'d>) -> Image<'d> {
        Image {
            db,
            next: 1,
            page: Vec::new(),
            at: 0,
        }
    }

    /// Loads the next page into `page`; false after the last.
    fn load(&mut self) -> bool {
        let Some(no) = PageNo::new(self.next).filter(|_| self.next <= self.db.page_count()) else {
            return false;
        };
        self.next += 1;
        let size = self.db.page_size().bytes();
        self.page.clear();
        if let Some(page) = self.db.page(no) {
            self.page.extend_from_slice(page.bytes());
        }
        self.page.resize(size, 0);
        if no.get() == 1 {
            // The file format's read and write versions: 2 (write-ahead log) reads as 1
            // (rollback journal) in the copy, which has no log of its own; any other value
            // is left for SQLite to judge.
            for b in self.page.get_mut(18..20).into_iter().flatten() {
                if *b == 2 {
                    *b = 1;
                }
            }
        }
        self.at = 0;
        true
    }
}

impl std::io::Read for Image<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.at >= self.page.len() && !self.load() {
            return Ok(0);
        }
        let rest = self.page.get(self.at..).unwrap_or_default();
        let n = rest.len().min(buf.len());
        if let (Some(to), Some(from)) = (buf.get_mut(..n), rest.get(..n)) {
            to.copy_from_slice(from);
        }
        self.at += n;
        Ok(n)
    }
}
