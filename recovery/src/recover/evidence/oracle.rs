//! SQLite as the oracle: its own `PRAGMA integrity_check` of the database as read (the
//! main file with its log applied, as this run reads it), on a private copy in memory.
//! The evidence is never opened by SQLite; the copy is bounded ([`SQLITE_CHECK_LIMIT`]).

use pager::{Database, PageNo};

use crate::base::sqlite::{check_image, is_corrupt};
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
        Ok(problems) if problems.is_empty() => SqliteCheck {
            state: SqliteCheckState::Ok,
            ..SqliteCheck::default()
        },
        Ok(problems) => SqliteCheck {
            state: SqliteCheckState::Problems,
            problems,
            not_run: None,
        },
        Err(e) if is_corrupt(&e) => SqliteCheck {
            state: SqliteCheckState::Problems,
            problems: vec![e.to_string()],
            not_run: None,
        },
        Err(rusqlite::Error::SqliteFailure(e, _)) if e.code == rusqlite::ErrorCode::OperationInterrupted => {
            SqliteCheck::not_run(format!(
                "SQLite's check ran past its budget of {steps} instructions (the schema's own expressions run in it)"
            ))
        }
        Err(e) => SqliteCheck::not_run(format!("SQLite cannot check it: {e}")),
    }
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
