//! The cells of one freeblock, one after another: the first overwritten by the block's
//! header, each after it whole or overwritten by the header of the freeblock it once was;
//! each reading's end borne out by what follows it.

use std::cell::RefCell;
use std::collections::HashMap;

use pager::SerialType;

use super::overwritten::rebuilt;
use super::whole::{cell_before, whole_record_at, whole_records};
use super::{as_read, read_varint_at, Found, Shapes};

/// The records of one freeblock. Its first 4 bytes are its header, written over the
/// start of the freed cell; a freed neighbour joined to it keeps the header of its own
/// freeblock the same way, so a block holds cells one after another, each starting
/// whole or overwritten.
pub struct FreeblockRecords<'r> {
    run: &'r [u8],
    /// Where the block starts on its page, and the page's usable size.
    on_page: (usize, usize),
    shapes: Shapes<'r>,
    /// The reading of an overwritten cell at each offset, once worked out.
    overwritten: RefCell<HashMap<usize, Option<Found>>>,
    /// How the end at each offset is borne out, once worked out (by offset: a block is
    /// at most a page).
    endings: RefCell<Vec<Option<Ending>>>,
    /// Whether the block ran on past the end of `run` (a stale block in unallocated space,
    /// whose end the content area has since grown over): the sizes of freed neighbours
    /// inside it may reach past the run too.
    cut: bool,
}

impl<'r> FreeblockRecords<'r> {
    /// The reader of freeblock `run` (its bytes, header included), at offset `on_page.0`
    /// of a page of `on_page.1` usable bytes.
    pub fn new(run: &'r [u8], on_page: (usize, usize), shapes: Shapes<'r>) -> FreeblockRecords<'r> {
        FreeblockRecords {
            run,
            on_page,
            shapes,
            overwritten: RefCell::new(HashMap::new()),
            endings: RefCell::new(vec![None; run.len() + 1]),
            cut: false,
        }
    }

    /// The reader of a stale block whose end lay past the end of `run`.
    pub(super) fn cut(mut self) -> FreeblockRecords<'r> {
        self.cut = true;
        self
    }

    /// Every record of the block, in order: its cells one after another from its start,
    /// then whole records in whatever follows them.
    pub fn records(&self) -> Vec<Found> {
        let mut out = self.cells();
        let at = out.last().map_or(0, |f| f.end);
        let from = if out.is_empty() { 4 } else { at };
        out.extend(whole_records(self.run, from, from, self.shapes));
        out
    }

    /// The cells one after another from the block's start, the first overwritten.
    pub(super) fn cells(&self) -> Vec<Found> {
        let mut out = Vec::new();
        let mut at = 0;
        while let Some(f) = self.overwritten_at(at).or_else(|| self.whole_cell_at(at)) {
            if f.end <= at {
                break;
            }
            at = f.end;
            out.push(f);
        }
        out
    }

    /// The whole cell (payload length, rowid, record) starting at `at`.
    fn whole_cell_at(&self, at: usize) -> Option<Found> {
        // The payload length (at most 3 bytes) and the rowid say where the header starts.
        let (_, size_len) = read_varint_at(self.run, at).filter(|(_, n)| *n <= 3)?;
        let (_, rowid_len) = read_varint_at(self.run, at + size_len)?;
        let header_at = at + size_len + rowid_len;
        let f = whole_record_at(self.run, header_at, at, self.shapes)?;
        let start = cell_before(self.run, header_at, (f.end - header_at) as u64, 0);
        (f.rowid.is_some() && start.map(|(s, _)| s) == Some(at)).then_some(f)
    }

    /// The record of the cell at `at` whose first 4 bytes a freeblock header overwrote,
    /// rebuilt from what is left (or read whole, when its header starts after them): one
    /// reading or none.
    fn overwritten_at(&self, at: usize) -> Option<Found> {
        // Most offsets hold no freeblock header: told apart before anything is kept.
        self.old_block(at)?;
        if let Some(known) = self.overwritten.borrow().get(&at) {
            return known.clone();
        }
        let reading = self
            .read_overwritten(at)
            .or_else(|| self.header_after_overwrite(at));
        self.overwritten.borrow_mut().insert(at, reading.clone());
        reading
    }

    fn read_overwritten(&self, at: usize) -> Option<Found> {
        let cell = self.run.get(at..at + self.old_block(at)?)?;
        // Every reading the bytes allow, with how well its end is borne out.
        let mut answers: Vec<(Ending, Found)> = Vec::new();
        // The header starts after a payload length and a rowid of 1 or 2 bytes together.
        for header_at in [2usize, 3] {
            // Serial types that stood in the overwritten bytes (after the header size).
            let lost = 3 - header_at;
            for (i, t) in self.shapes.templates.iter().enumerate() {
                if !(self.shapes.allowed)(i) {
                    continue;
                }
                let borne_out = |end: usize| self.ending(at + end) != Ending::Unexplained;
                for mut found in rebuilt(cell, header_at, lost, t, self.shapes.enc, &borne_out) {
                    found.start += at;
                    found.end += at;
                    let ending = self.ending(found.end);
                    match answers
                        .iter_mut()
                        .find(|(e, a)| *e == ending && a.values == found.values)
                    {
                        Some((_, same)) => same.tables.push(i),
                        None => answers.push((
                            ending,
                            Found {
                                tables: vec![i],
                                ..found
                            },
                        )),
                    }
                }
            }
        }
        // The best-borne-out ending decides; two different readings there, and none is taken.
        let best = answers.iter().map(|(e, _)| *e).min()?;
        let mut at_best = answers.into_iter().filter(|(e, _)| *e == best);
        let (_, mut one) = at_best.next()?;
        if at_best.next().is_some() {
            return None;
        }
        as_read(&mut one.values, self.shapes.templates, &one.tables);
        Some(one)
    }

    /// How many bytes from `at` on the freeblock whose header is at `at` held, within
    /// this one: the whole block at its start; for a freed neighbour, the size field of
    /// the freeblock it once was (it ends inside this one, and its next pointer is 0 or
    /// a block past it on the page). A cell read at `at` ends within them: the freed cell lay in its block,
    /// and bytes past a block that shrank (SQLite hands out a block's last bytes) were
    /// written since.
    fn old_block(&self, at: usize) -> Option<usize> {
        let left = self.run.len().checked_sub(at)?;
        if at == 0 {
            return Some(left);
        }
        let word = |i: usize| {
            let b = self.run.get(at + i..at + i + 2)?;
            Some(usize::from(u16::from_be_bytes([*b.first()?, *b.get(1)?])))
        };
        let (next, size) = (word(0)?, word(2)?);
        let (offset, page_len) = self.on_page;
        // In a block cut at the run's end, a neighbour's old extent may reach past it
        // too (within the page): what is read of it stops at the run's end.
        let within = size <= left || (self.cut && offset + at + size <= page_len);
        (size >= 4 && within && next_block_fits(next, offset + at + size, page_len))
            .then_some(size.min(left))
    }

    /// The record of the cell at `at` whose payload length and rowid took 4 bytes or more,
    /// so that the freeblock header overwrote only them: its header is whole, and what
    /// follows it bears out its end.
    fn header_after_overwrite(&self, at: usize) -> Option<Found> {
        let limit = at + self.old_block(at)?;
        (at + 4..=(at + 12).min(limit)).find_map(|header_at| {
            let f = whole_record_at(self.run, header_at, at + 4, self.shapes)?;
            (f.end <= limit && self.ending(f.end) != Ending::Unexplained).then_some(f)
        })
    }

    /// How the bytes after `end` bear out a record ending there.
    fn ending(&self, end: usize) -> Ending {
        if let Some(Some(known)) = self.endings.borrow().get(end) {
            return *known;
        }
        let ending = self.work_out_ending(end);
        if let Some(slot) = self.endings.borrow_mut().get_mut(end) {
            *slot = Some(ending);
        }
        ending
    }

    fn work_out_ending(&self, end: usize) -> Ending {
        // No cell fits in 3 bytes.
        let left = self.run.len().saturating_sub(end);
        // A block cut short ends where the content area starts, not where a record did:
        // reaching it bears nothing out.
        if self.cut && left <= 3 {
            Ending::Unexplained
        } else if left == 0 {
            Ending::Exact
        } else if left <= 3 {
            Ending::Fragment
        } else if self.whole_cell_at(end).is_some() {
            Ending::Neighbour
        } else if self.overwritten_at(end).is_some() {
            Ending::FreedNeighbour
        } else if self.cut
            && self.old_block(end).is_some()
            && self
                .run
                .get(end..)
                .is_some_and(|rest| may_start_cell(rest, self.shapes))
        {
            Ending::StaleHeader
        } else {
            Ending::Unexplained
        }
    }
}

/// Whether `next`, a freeblock's pointer to the next one, can be one on a page of
/// `page_len` usable bytes from a block that ends at `end`: 0 (the last), or a block of
/// at least its 4-byte header after this one (blocks are kept in order, and adjacent ones
/// are joined).
pub(super) fn next_block_fits(next: usize, end: usize, page_len: usize) -> bool {
    next == 0 || (next > end && next + 4 <= page_len)
}

/// Whether a freeblock `block` can start with an overwritten cell of an allowed template:
/// the serial types from its byte 4 on fit the template's columns (all of them, or all
/// but a first one lost). A cheap test before the readings are searched.
pub(super) fn may_start_cell(block: &[u8], shapes: Shapes<'_>) -> bool {
    shapes.templates.iter().enumerate().any(|(i, t)| {
        (shapes.allowed)(i)
            && [0usize, 1].iter().any(|&lost| {
                let mut at = 4;
                let mut not_null = false;
                t.slots.len() > lost
                    && t.slots.iter().skip(lost).all(|slot| {
                        let Some((code, len)) = read_varint_at(block, at) else {
                            return false;
                        };
                        at += len;
                        let ty = SerialType::from_code(code);
                        not_null |= ty != SerialType::Null;
                        slot.admits(ty)
                    })
                    && not_null
            })
    })
}

/// How the end of a rebuilt record is borne out by what follows it in the freeblock.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Ending {
    /// It ends where the freeblock does: the freed cell was the whole block.
    Exact,
    /// A whole cell starts right after it: a neighbour joined the block.
    Neighbour,
    /// A cell starts right after it whose start the header of its own earlier freeblock
    /// overwrote: a neighbour freed first, then joined.
    FreedNeighbour,
    /// At most 3 bytes follow: a fragment the block absorbed.
    Fragment,
    /// In a block cut short, the header of an earlier freeblock follows, over the start
    /// of a cell of an allowed table whose record cannot be read whole (the content area
    /// has since grown over its end).
    StaleHeader,
    /// Anything else.
    Unexplained,
}

#[cfg(test)]
mod tests {
    use pager::Value;

    use super::super::testing::{in_block, text};
    use super::*;
    use crate::testing::notes;

    #[test]
    fn payload_length_and_rowid_of_four_bytes_leave_the_record_header_whole() {
        // Rowid 16384 takes 3 bytes (81 80 00): the freeblock header took the payload
        // length and the rowid only, so the record is read whole from byte 4, its rowid
        // lost with them.
        #[rustfmt::skip]
        let block = [
            0x00, 0x00, // next freeblock: none    (was payload length 9, rowid byte 0x81)
            0x00, 0x0d, // freeblock size: 13      (was rowid bytes 0x80 0x00)
            0x04,       // header size: 4
            0x11, 0x11, // serial types: text of 2 bytes, twice
            0x01,       // serial type: 8-bit integer
            b'h', b'i', b'y', b'o', 0x03,
        ];
        let found = in_block(&block, &[notes()]);
        assert_eq!(found.len(), 1);
        assert_eq!((found[0].start, found[0].end), (4, 13));
        assert_eq!((found[0].inferred, found[0].rowid), (0, None));
    }

    #[test]
    fn freeblock_joined_with_a_whole_neighbour_gives_both_cells() {
        // SQLite joins adjacent free space: the first cell's end is borne out by a whole
        // cell starting right after it.
        #[rustfmt::skip]
        let block = [
            0x00, 0x00, // next freeblock: none
            0x00, 0x17, // freeblock size: 23
            0x11, 0x01, b'h', b'i', b'y', b'o', 0x03, // first cell, overwritten
            0x0a,       // payload length: 10
            0x0a,       // rowid: 10
            0x04,       // header size: 4
            0x11,       // serial type: text of 2 bytes
            0x13,       // serial type: text of 3 bytes
            0x01,       // serial type: 8-bit integer
            b'a', b'b', b'c', b'd', b'e', 0x04,
        ];
        let found = in_block(&block, &[notes()]);
        assert_eq!(found.len(), 2);
        assert_eq!(
            (found[0].start, found[0].end, found[0].rowid),
            (2, 11, None)
        );
        assert_eq!(
            found[1],
            Found {
                start: 13,
                end: 23,
                tables: vec![0],
                rowid: Some(10),
                values: vec![text("ab"), text("cde"), Value::Integer(4)],
                inferred: 0,
            }
        );
    }

    #[test]
    fn freed_neighbour_keeps_the_header_of_its_own_freeblock() {
        // The neighbour was freed first: its first 4 bytes are the header of the
        // freeblock it was (next 0, size 11) when the block grew over it.
        #[rustfmt::skip]
        let block = [
            0x00, 0x00, // next freeblock: none
            0x00, 0x16, // freeblock size: 22
            0x11, 0x01, b'h', b'i', b'y', b'o', 0x03, // first cell, overwritten
            0x00, 0x00, // the neighbour's old next freeblock: none
            0x00, 0x0b, // the neighbour's old size: 11
            0x11, 0x01, b'a', b'b', b'c', b'd', 0x05, // second cell, overwritten
        ];
        let found = in_block(&block, &[notes()]);
        let spans: Vec<_> = found.iter().map(|f| (f.start, f.end, f.inferred)).collect();
        assert_eq!(spans, vec![(2, 11, 2), (13, 22, 2)]);
        assert_eq!(
            found[1].values,
            vec![text("ab"), text("cd"), Value::Integer(5)]
        );
    }
}
