//! `pager`: a zero-copy, damage-tolerant reader of the SQLite database file format.
//!
//! It turns bytes into typed, borrowed views and never trusts a byte: every defect is a
//! typed [`Finding`] carried next to the data, never a panic, and every chain walk has a
//! visited set and a budget. It knows the file format and nothing else: it accepts a
//! `&[u8]` and never learns whether the bytes came from a memory map or a `Vec`.
//!
//! Principal types:
//! - [`Database`]: the file with its geometry decided (page size, usable size, encoding),
//!   inferred from the pages when the header is damaged; hands out [`Page`]s.
//! - [`Page`], [`BtreePageHeader`], [`Cell`]: b-tree pages and their cells ("B-tree Pages").
//! - [`Record`], [`ValueRef`]: records and their values ("Record Format").
//! - [`BtreeWalk`]: a depth-first walk from a root page with key bounds and cycle checks.
//! - [`survey`]: classifies every page and walks every structure, for `salvage inspect`.
//!
//! ```
//! use pager::{Database, PageNo, read_schema};
//! # fn demo(bytes: &[u8]) -> Result<(), pager::OpenError> {
//! let db = Database::open(bytes)?;
//! for row in read_schema(&db).rows {
//!     println!("{} {} at {:?}", row.kind.as_str(), row.name, row.rootpage.map(PageNo::get));
//! }
//! # Ok(()) }
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod btree;
pub mod classify;
pub mod cursor;
pub mod database;
pub mod finding;
pub mod freelist;
pub mod header;
pub mod journal;
mod leaf;
pub mod overflow;
pub mod record;
pub mod schema;
pub mod search;
pub mod types;
pub mod value;
pub mod varint;
pub mod wal;
pub mod walk;

#[cfg(test)]
mod testing;

pub use btree::{
    BtreePageHeader, Cell, CellRef, CellSource, Freeblock, IndexInteriorCell, IndexLeafCell, Page,
    PageType, Payload, TableInteriorCell, TableLeafCell,
};
pub use classify::{
    survey, survey_observed, survey_with, survey_with_schema, PageClass, PageMap, Survey,
    SurveyChecks, TreeSurvey, OBSERVE_EVERY,
};
pub use database::{
    ptrmap_page_of, Database, EncodingSource, Observe, OpenError, PageSizeEvidence, PageSizeSource,
    LOCK_BYTE_OFFSET,
};
pub use finding::Finding;
pub use freelist::{read_freelist, Freelist, FreelistTrunkPage};
pub use header::{
    as_sqlite_reads, is_empty_database, DatabaseHeader, TextEncoding, EMPTY_DATABASE,
};
pub use journal::{read_journal, read_persisted_journal, Journal, JournalHeader};
pub use overflow::{AssembledPayload, OverflowChain};
pub use record::{Record, RecordHeader, SerialType, ValueRef};
pub use schema::{
    check_constraints, read_schema, scan_for_schema_rows, Schema, SchemaKind, SchemaRow,
};
pub use types::{CellIndex, Location, PageNo, PageSet, PageSize, RowId};
pub use value::{decode_cell, raw_cell, read_tree, DecodedRow, RawRow, Value};
pub use wal::{
    read_wal, read_wal_telling, FrameNo, StrayFrame, StrayKind, Wal, WalCommit, WalFrameHeader,
    WalHeader, WalHeaderDefect,
};
pub use walk::{BtreeWalk, KeyBounds, LostChild, TreeItem, TreePage};
