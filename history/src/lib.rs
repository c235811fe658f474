//! `history`: every version of every row that a write-ahead log or a rollback journal
//! still holds. Pure: it reads the bytes the caller gives and decides; it writes nothing.
//!
//! A write-ahead log is a sequence of committed transactions, each a set of page images
//! ("The WAL File Format"). The database after commit `k` is the main file with the images
//! of commits `1..=k` read over it. A row changes only on a page its commit wrote, so the
//! rows of those pages before and after each commit, compared by table and rowid, are
//! that commit's inserts, updates and deletes: a row that moved to another page (a split)
//! was written there by the same commit and is no change. Which table a leaf belongs to
//! is read from the schema and the trees of the state it is read in ([`Owners`]), again
//! only when a commit wrote more than leaves.
//!
//! Beyond the commits, a log holds frames of a transaction that never committed and
//! frames of an earlier generation of the log, overwritten from the start since: their
//! rows are evidence too, labelled so ([`StepKind::Uncommitted`], [`Stray`]).
//!
//! A rollback journal holds the images of the pages its transaction changed, as they were
//! before it ("The Rollback Journal"): a hot one (the transaction never committed) and a
//! persisted one (`journal_mode=PERSIST`: committed, header zeroed, records left) give
//! one step each, from the journal's images to the main file's.
//!
//! A log whose database is gone is still evidence of it: `image` ([`wal_image`],
//! [`journal_image`]) lays the pages it holds out as a database image, to be read as a
//! damaged database.
//!
//! Its parts: `wal` ([`wal_history`]) and `journal` ([`journal_history`]) read a log into
//! steps; `state` is a state of the database and the step between two; `owners`
//! ([`Owners`]) says which table each leaf belongs to. The types of a history are here.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

use pager::{FrameNo, PageNo, Value};

mod image;
mod journal;
mod owners;
mod state;
#[cfg(test)]
mod testing;
mod wal;

pub use image::{journal_image, wal_image, LogImage};
pub use journal::journal_history;
pub use owners::{Owners, SCHEMA_TABLE};
pub use wal::{wal_history, wal_history_each};

/// What a change did to a row.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Op {
    /// The row was not there before.
    Insert,
    /// The row was there with other values.
    Update,
    /// The row is not there after.
    Delete,
}

impl Op {
    /// The name the output and the report use.
    pub fn name(self) -> &'static str {
        match self {
            Op::Insert => "insert",
            Op::Update => "update",
            Op::Delete => "delete",
        }
    }
}

/// One row changed by one step.
#[derive(Clone, Debug, PartialEq)]
pub struct Change {
    /// Its table.
    pub table: String,
    /// Its rowid.
    pub rowid: i64,
    /// Its values before the step, in record order; `None` when it was not there.
    pub before: Option<Vec<Value>>,
    /// Its values after the step; `None` when it is not there.
    pub after: Option<Vec<Value>>,
    /// Where its values before the step were read.
    pub before_at: Option<At>,
    /// Where its values after the step were read.
    pub after_at: Option<At>,
}

/// Where a version of a row was read: its cell on a page image, and the log frame that
/// image is (none for the main file's page, or a journal's image).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct At {
    /// The page.
    pub page: PageNo,
    /// The cell's byte offset in the page.
    pub offset: u32,
    /// The frame of the write-ahead log whose image of the page holds the cell.
    pub frame: Option<FrameNo>,
}

impl Change {
    /// What the step did to the row.
    pub fn op(&self) -> Op {
        match (&self.before, &self.after) {
            (None, _) => Op::Insert,
            (Some(_), Some(_)) => Op::Update,
            (Some(_), None) => Op::Delete,
        }
    }
}

/// What a step of a history is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StepKind {
    /// A committed transaction of the log: its number in commit order (1-based), its
    /// frames, and the database size after it.
    Commit {
        /// Its number.
        no: u32,
        /// Its first frame.
        first: FrameNo,
        /// Its commit frame.
        last: FrameNo,
        /// Pages in the database after it.
        db_size: u32,
    },
    /// Frames after the last commit: a transaction that never committed.
    Uncommitted {
        /// The first of them.
        first: FrameNo,
        /// The last.
        last: FrameNo,
    },
    /// A rollback journal's transaction: from the journal's images to the main file's.
    /// `hot`: it never committed (SQLite rolls it back; the main file's versions were
    /// never committed); otherwise a persisted journal of a committed transaction.
    Journal {
        /// Whether the journal is hot.
        hot: bool,
    },
}

/// One step of a history: the pages it wrote and the rows that changed.
#[derive(Clone, Debug, PartialEq)]
pub struct Step {
    /// What it is.
    pub kind: StepKind,
    /// The pages it wrote, in page order.
    pub pages: Vec<PageNo>,
    /// The rows it changed, by table and rowid.
    pub changes: Vec<Change>,
    /// Cells on its pages (before or after) whose record could not be read.
    pub unreadable: u64,
}

/// A row on a page image of an earlier generation of the log that no state of the
/// history holds: a version from before the main file's.
#[derive(Clone, Debug, PartialEq)]
pub struct Stray {
    /// The table the page number belongs to now.
    pub table: String,
    /// Its rowid.
    pub rowid: i64,
    /// Its values, in record order.
    pub values: Vec<Value>,
    /// The frame holding it.
    pub frame: FrameNo,
    /// The page the frame is of.
    pub page: PageNo,
    /// The cell's byte offset in the frame's image.
    pub offset: u32,
    /// Whether the frame's checksum follows from the frame before it.
    pub chained: bool,
}

/// The history of a log.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct History {
    /// The steps, in order: each commit, then the uncommitted frames if any.
    pub steps: Vec<Step>,
    /// Rows only an earlier generation of the log holds.
    pub strays: Vec<Stray>,
    /// Pages the log wrote whose main-file image is one of the log's images: the main
    /// file was checkpointed past the log's start, so their state before the first
    /// commit that wrote them is not known (that commit shows no change for them).
    pub checkpointed: Vec<PageNo>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::x;

    #[test]
    fn change_says_what_the_step_did_to_the_row() {
        let c = |before: Option<u8>, after: Option<u8>| Change {
            table: "t".into(),
            rowid: 1,
            before: before.map(x),
            after: after.map(x),
            before_at: None,
            after_at: None,
        };
        assert_eq!(c(None, Some(b'a')).op(), Op::Insert);
        assert_eq!(c(Some(b'a'), Some(b'b')).op(), Op::Update);
        assert_eq!(c(Some(b'a'), None).op(), Op::Delete);
        let names: Vec<&str> = [Op::Insert, Op::Update, Op::Delete]
            .iter()
            .map(|o| o.name())
            .collect();
        assert_eq!(names, ["insert", "update", "delete"]);
    }
}
