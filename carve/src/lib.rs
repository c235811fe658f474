//! `carve`: deleted records found in a file's free space, each rebuilt against the shape
//! of a table of the schema. Pure: it reads pages the caller gives and decides; it writes
//! nothing.
//!
//! Where deleted records stay ([`Source`]):
//! - **freeblocks**: a freed cell inside a live page; SQLite overwrites its first 4 bytes
//!   with the freeblock's header (next pointer and size), so the cell's payload length, its
//!   rowid and the start of its record header are gone or partial;
//! - **unallocated space** between a page's cell pointer array and its content area: cells
//!   freed at the start of the content area, and old copies left by defragmentation, whole;
//! - **freed pages** on the freelist (a dropped table's, a deleted subtree's): their cells,
//!   freeblocks and unallocated space as on a live page, or, when the page's header is
//!   gone, records anywhere in it;
//! - **stale freeblocks**: a freeblock that stopped being one (the content area moved past
//!   it, its page was freed) keeps its 4-byte header and its cells, found by the header.
//!
//! A record is kept only when it fits a table's shape ([`Template`]): its column count,
//! and for every column a serial type that column's affinity can hold. A header whose first
//! bytes were overwritten is completed by trying what the shape allows and checking that
//! the body decodes and ends exactly where the freeblock does ([`records`]).

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod page;
pub mod records;
pub mod template;
#[cfg(test)]
mod testing;

pub use page::{carve_page, PageRole};
pub use template::Template;

use pager::{PageNo, Value};

/// Where a carved record was found.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Source {
    /// A freeblock of a live b-tree page.
    Freeblock,
    /// The unallocated space of a live b-tree page.
    Unallocated,
    /// A freed page (on the freelist, or claimed by nothing).
    Freelist,
}

impl Source {
    /// Every source, in report order.
    pub const ALL: [Source; 3] = [Source::Freeblock, Source::Unallocated, Source::Freelist];

    /// The name used in the output and the reports.
    pub fn name(self) -> &'static str {
        match self {
            Source::Freeblock => "freeblock",
            Source::Unallocated => "unallocated",
            Source::Freelist => "freelist",
        }
    }
}

/// A deleted record carved from free space.
#[derive(Clone, Debug, PartialEq)]
pub struct Carved {
    /// Where it was found.
    pub source: Source,
    /// Its page.
    pub page: PageNo,
    /// Where its record (or, on a freed page, its cell) starts on the page.
    pub offset: u32,
    /// The template it is attributed to (an index into the caller's templates); `None`
    /// when it fits more than one and its page does not say which.
    pub table: Option<usize>,
    /// Its rowid, where the bytes that held it survive.
    pub rowid: Option<i64>,
    /// Its values in record order.
    pub values: Vec<Value>,
    /// Header bytes inferred rather than read (0: the record's own header was read whole).
    pub inferred: u32,
    /// Whether its page says which table it is (a live page's own table, a freed page
    /// whose live cells fit one table) rather than the shape alone.
    pub certain: bool,
}

impl Carved {
    /// How far the record can be trusted, from 0 to 1: every inferred header byte and an
    /// attribution by shape alone take some away.
    pub fn confidence(&self) -> f64 {
        let mut c = 1.0 - 0.1 * f64::from(self.inferred.min(5));
        if !self.certain {
            c -= 0.1;
        }
        if self.table.is_none() {
            c -= 0.2;
        }
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn carved(inferred: u32, table: Option<usize>, certain: bool) -> Carved {
        Carved {
            source: Source::Freeblock,
            page: PageNo::new(2).unwrap(),
            offset: 492,
            table,
            rowid: None,
            values: vec![Value::Integer(1)],
            inferred,
            certain,
        }
    }

    #[test]
    fn sources_in_report_order_with_their_names() {
        let names: Vec<&str> = Source::ALL.iter().map(|s| s.name()).collect();
        assert_eq!(names, ["freeblock", "unallocated", "freelist"]);
    }

    #[test]
    fn record_read_whole_on_its_tables_page_is_trusted_fully() {
        assert_eq!(carved(0, Some(0), true).confidence(), 1.0);
    }

    #[test]
    fn inferred_header_bytes_and_attribution_by_shape_take_confidence_away() {
        let near = |a: f64, b: f64| (a - b).abs() < 1e-9;
        assert!(near(carved(2, Some(0), true).confidence(), 0.8));
        assert!(near(carved(0, Some(0), false).confidence(), 0.9));
        assert!(near(carved(0, None, false).confidence(), 0.7));
        assert!(near(carved(2, None, false).confidence(), 0.5));
        // No more than 5 inferred bytes count.
        assert!(near(carved(9, Some(0), true).confidence(), 0.5));
    }
}
