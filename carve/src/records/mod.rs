//! Records found in a run of free bytes: whole ones (a header read as it is), and the one
//! at the start of a freeblock, whose first 4 bytes the freeblock's header overwrote.
//!
//! A freed table-leaf cell is laid out as
//!
//! ```text
//! | payload length | rowid  | header size | serial types ... | body ... |
//! | varint         | varint | varint      | varints          |          |
//! ```
//!
//! and a freeblock starts where the cell started. With a payload length and rowid of
//! 1 or 2 bytes, the header starts at byte 2 or 3, so the header size (and, at byte 2, the
//! first serial type) are lost: the shape gives the column count, so the remaining serial
//! types are read from byte 4 on, and a lost first type is the one of its column's types
//! whose body makes the record end exactly where the freeblock does.
//!
//! Its parts: `whole` reads records whose header is whole ([`whole_records`]); `freeblock`
//! reads a freeblock's cells one after another ([`FreeblockRecords`]); `overwritten` gives
//! the readings of a cell whose first bytes a freeblock header overwrote; `stale` finds by
//! their headers the freeblocks that stopped being ones ([`stale_freeblocks`]). This module
//! holds what they share: [`Found`], what a record may be ([`Shapes`]), and the decoding of
//! a record's body.

mod freeblock;
mod overwritten;
mod stale;
mod whole;

pub use freeblock::FreeblockRecords;
pub use stale::stale_freeblocks;
pub use whole::whole_records;

use pager::varint::read_varint;
use pager::{SerialType, TextEncoding, Value};
use reconstruct::shape::{text_in_encoding, Affinity};

use crate::template::Template;

/// A record found in a run of bytes, before it is placed on its page.
#[derive(Clone, Debug, PartialEq)]
pub struct Found {
    /// Where its record header starts in the run (for a rebuilt header, where it started).
    pub start: usize,
    /// Where it ends in the run.
    pub end: usize,
    /// The templates it fits.
    pub tables: Vec<usize>,
    /// Its rowid, when the cell's payload length and rowid before it survive.
    pub rowid: Option<i64>,
    /// Its values.
    pub values: Vec<Value>,
    /// Header bytes inferred.
    pub inferred: u32,
}

/// What a record found in free space may be: a row of one of the `templates` that
/// `allowed` lets be where it lies, its text in the database's encoding. Every reader of
/// free bytes is given one.
#[derive(Clone, Copy)]
pub struct Shapes<'r> {
    /// Every template; a record names those it fits by their index here.
    pub templates: &'r [Template],
    /// Whether a record of the template at this index may be here.
    pub allowed: &'r dyn Fn(usize) -> bool,
    /// The database's text encoding.
    pub enc: TextEncoding,
}

/// Decodes the body of a record of `types` starting at `body`; its values and where it
/// ends. Text must be valid in the database's encoding.
fn decode(
    run: &[u8],
    body: usize,
    types: &[SerialType],
    enc: TextEncoding,
) -> Option<(Vec<Value>, usize)> {
    let mut values = Vec::with_capacity(types.len());
    let end = walk_body(run, body, types.iter().copied(), enc, |t, bytes| {
        values.push(pager::record::decode_value(t, bytes, 0)?.into());
        Some(())
    })?;
    Some((values, end))
}

/// Where a body of `types` starting at `body` ends, when every value is in `run` and its
/// text is valid in the database's encoding and not only NUL bytes (what a wipe leaves);
/// `each` is given every value's type and bytes, and can refuse it.
fn walk_body<'r>(
    run: &'r [u8],
    body: usize,
    types: impl IntoIterator<Item = SerialType>,
    enc: TextEncoding,
    mut each: impl FnMut(SerialType, &'r [u8]) -> Option<()>,
) -> Option<usize> {
    let mut at = body;
    for t in types {
        let len = usize::try_from(t.body_len()).ok()?;
        let bytes = run.get(at..at.checked_add(len)?)?;
        if let SerialType::Text(_) = t {
            if !text_in_encoding(bytes, enc) || (!bytes.is_empty() && bytes.iter().all(|b| *b == 0))
            {
                return None;
            }
        }
        each(t, bytes)?;
        at += len;
    }
    Some(at)
}

/// The values as SQLite reads them back: an integer in a column of REAL affinity (where
/// SQLite stores a whole number as an integer to save space) is a real, when every table
/// the record fits agrees.
pub(crate) fn as_read(values: &mut [Value], templates: &[Template], tables: &[usize]) {
    for (i, v) in values.iter_mut().enumerate() {
        let real = tables.iter().all(|t| {
            templates
                .get(*t)
                .and_then(|t| t.slots.get(i))
                .is_some_and(|s| s.affinity == Affinity::Real)
        });
        if let (true, Value::Integer(n)) = (real && !tables.is_empty(), &*v) {
            *v = Value::Real(*n as f64);
        }
    }
}

/// The varint at `at` in `run`: its value and length.
fn read_varint_at(run: &[u8], at: usize) -> Option<(u64, usize)> {
    read_varint(run.get(at..)?)
}

#[cfg(test)]
mod testing {
    //! Runs of free bytes laid out as "B-tree Pages" and "Record Format" describe them:
    //! a table b-tree leaf cell is a payload-length varint, a rowid varint and a record
    //! (header size, serial types, body); a freeblock starts with a 2-byte offset of the
    //! next freeblock and a 2-byte size, written over the first 4 bytes of the cell it was.

    use super::*;

    /// Where the blocks of these tests lie on their page, and the page's usable size.
    pub const ON_PAGE: (usize, usize) = (300, 512);

    pub fn all(_: usize) -> bool {
        true
    }

    pub fn text(s: &str) -> Value {
        Value::Text(s.as_bytes().to_vec())
    }

    /// The records of freeblock `block` at [`ON_PAGE`].
    pub fn in_block(block: &[u8], templates: &[Template]) -> Vec<Found> {
        FreeblockRecords::new(block, ON_PAGE, shapes(templates, &all)).records()
    }

    /// The whole records of an unallocated `run`, every byte of it intact.
    pub fn in_run(run: &[u8], templates: &[Template]) -> Vec<Found> {
        whole_records(run, 0, 0, shapes(templates, &all))
    }

    /// `templates`, those `allowed`, in a UTF-8 database.
    pub fn shapes<'r>(templates: &'r [Template], allowed: &'r dyn Fn(usize) -> bool) -> Shapes<'r> {
        Shapes {
            templates,
            allowed,
            enc: TextEncoding::Utf8,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::testing::{all, in_block, in_run, shapes};
    use super::*;
    use crate::testing::{notes, template};

    #[test]
    fn zero_bytes_of_free_space_hold_no_record() {
        assert_eq!(in_run(&[], &[notes()]), vec![]);
        assert_eq!(in_block(&[], &[notes()]), vec![]);
        assert_eq!(
            stale_freeblocks(&[], (300, 512), shapes(&[notes()], &all)),
            vec![]
        );
        // And no template: nothing can fit.
        #[rustfmt::skip]
        let run = [0x04, 0x11, 0x11, 0x01, b'h', b'i', b'y', b'o', 0x03];
        assert_eq!(in_run(&run, &[]), vec![]);
    }

    #[test]
    fn integer_in_a_real_column_reads_back_as_real_when_every_table_agrees() {
        let real = template("m", &[("x", "REAL")]);
        let any = template("n", &[("x", "")]);
        let mut values = vec![Value::Integer(2)];
        as_read(&mut values, &[real.clone(), any], &[0]);
        assert_eq!(values, vec![Value::Real(2.0)]);
        let mut values = vec![Value::Integer(2)];
        as_read(
            &mut values,
            &[real.clone(), template("n", &[("x", "")])],
            &[0, 1],
        );
        assert_eq!(values, vec![Value::Integer(2)]);
        let mut values = vec![Value::Integer(2)];
        as_read(&mut values, &[real], &[]);
        assert_eq!(values, vec![Value::Integer(2)]);
    }
}
