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

use std::cell::RefCell;
use std::collections::HashMap;

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

/// The longest record header the carver reads: 9-byte serial types for 2,000 columns
/// would be longer, but real headers of carved rows are short.
const MAX_HEADER: usize = 4096;

/// Every whole record in `run` from `from` on, left to right; bytes before `intact` are
/// known to be overwritten (a freeblock's header), so no rowid is read from them.
pub fn whole_records(
    run: &[u8],
    from: usize,
    intact: usize,
    templates: &[Template],
    allowed: &dyn Fn(usize) -> bool,
    enc: TextEncoding,
) -> Vec<Found> {
    let mut out = Vec::new();
    // Free space holds old copies of cells from earlier layouts of the page, which
    // overlap: a record starting inside one already found is taken only when its whole
    // cell (payload length and rowid before it) bears it out, not its header alone.
    let mut covered = 0;
    for at in from..run.len().saturating_sub(1) {
        let Some(found) = whole_record_at(run, at, intact, templates, allowed, enc) else {
            continue;
        };
        if at < covered && found.rowid.is_none() {
            continue;
        }
        covered = covered.max(found.end);
        out.push(found);
    }
    out
}

/// The whole record whose header starts at `at`, if one does and it fits a template.
fn whole_record_at(
    run: &[u8],
    at: usize,
    intact: usize,
    templates: &[Template],
    allowed: &dyn Fn(usize) -> bool,
    enc: TextEncoding,
) -> Option<Found> {
    let (header_size, size_len) = read_varint_at(run, at)?;
    let header_size = usize::try_from(header_size).ok()?;
    if header_size <= size_len || header_size > MAX_HEADER {
        return None;
    }
    // Most offsets of free space are no record: counted first, without allocating, the
    // serial types tell them apart before anything is decoded.
    let count = count_serial_types(run, at + size_len, at + header_size, templates)?;
    if !templates.iter().any(|t| t.slots.len() == count) {
        return None;
    }
    let types = serial_types(run, at + size_len, at + header_size)?;
    let body = at + header_size;
    let tables: Vec<usize> = (0..templates.len())
        .filter(|i| allowed(*i) && templates.get(*i).is_some_and(|t| t.fits(&types)))
        .collect();
    if tables.is_empty() {
        return None;
    }
    let (mut values, end) = decode(run, body, &types, enc)?;
    as_read(&mut values, templates, &tables);
    let record_len = (end - at) as u64;
    Some(Found {
        start: at,
        end,
        rowid: cell_before(run, at, record_len, intact).map(|(_, rowid)| rowid),
        tables,
        values,
        inferred: 0,
    })
}

/// How many serial types `run[from..to]` holds, exactly filling it; `None` when it holds
/// a reserved one, more than any template has columns, or does not end at `to`.
fn count_serial_types(run: &[u8], from: usize, to: usize, templates: &[Template]) -> Option<usize> {
    let most = templates.iter().map(|t| t.slots.len()).max()?;
    // Each type takes 1 to 9 bytes.
    if to - from > most * 9 || to - from < 1 {
        return None;
    }
    let (mut at, mut count) = (from, 0);
    while at < to {
        let (code, len) = read_varint_at(run, at)?;
        if code == 10 || code == 11 || count == most {
            return None;
        }
        count += 1;
        at += len;
    }
    (at == to).then_some(count)
}

/// The serial types in `run[from..to]`, exactly filling it.
fn serial_types(run: &[u8], from: usize, to: usize) -> Option<Vec<SerialType>> {
    let mut types = Vec::new();
    let mut at = from;
    while at < to {
        let (code, len) = read_varint_at(run, at)?;
        let t = SerialType::from_code(code);
        if matches!(t, SerialType::Reserved(_)) {
            return None;
        }
        types.push(t);
        at += len;
    }
    (at == to).then_some(types)
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

/// The cell whose record of `record_len` bytes starts at `at`: where it starts and its
/// rowid, read from the varint ending just before the record, preceded by a varint that
/// is the payload length. Bytes before `intact` are overwritten and prove nothing.
fn cell_before(run: &[u8], at: usize, record_len: u64, intact: usize) -> Option<(usize, i64)> {
    for rowid_len in 1..=9usize {
        let Some(rowid_at) = at.checked_sub(rowid_len).filter(|r| *r >= intact) else {
            break;
        };
        let Some((rowid, n)) = read_varint_at(run, rowid_at) else {
            continue;
        };
        if n != rowid_len {
            continue;
        }
        for size_len in 1..=3usize {
            let Some(size_at) = rowid_at.checked_sub(size_len).filter(|s| *s >= intact) else {
                break;
            };
            if read_varint_at(run, size_at) == Some((record_len, size_len)) {
                return Some((size_at, rowid as i64));
            }
        }
    }
    None
}

/// The records of one freeblock. Its first 4 bytes are its header, written over the
/// start of the freed cell; a freed neighbour joined to it keeps the header of its own
/// freeblock the same way, so a block holds cells one after another, each starting
/// whole or overwritten.
pub struct FreeblockRecords<'r> {
    run: &'r [u8],
    /// Where the block starts on its page, and the page's usable size.
    on_page: (usize, usize),
    templates: &'r [Template],
    allowed: &'r dyn Fn(usize) -> bool,
    enc: TextEncoding,
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
    pub fn new(
        run: &'r [u8],
        on_page: (usize, usize),
        templates: &'r [Template],
        allowed: &'r dyn Fn(usize) -> bool,
        enc: TextEncoding,
    ) -> FreeblockRecords<'r> {
        FreeblockRecords {
            run,
            on_page,
            templates,
            allowed,
            enc,
            overwritten: RefCell::new(HashMap::new()),
            endings: RefCell::new(vec![None; run.len() + 1]),
            cut: false,
        }
    }

    /// The reader of a stale block whose end lay past the end of `run`.
    fn cut(mut self) -> FreeblockRecords<'r> {
        self.cut = true;
        self
    }

    /// Every record of the block, in order: its cells one after another from its start,
    /// then whole records in whatever follows them.
    pub fn records(&self) -> Vec<Found> {
        let mut out = self.cells();
        let at = out.last().map_or(0, |f| f.end);
        let from = if out.is_empty() { 4 } else { at };
        out.extend(whole_records(
            self.run,
            from,
            from,
            self.templates,
            self.allowed,
            self.enc,
        ));
        out
    }

    /// The cells one after another from the block's start, the first overwritten.
    fn cells(&self) -> Vec<Found> {
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
        let f = whole_record_at(
            self.run,
            header_at,
            at,
            self.templates,
            self.allowed,
            self.enc,
        )?;
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
            for (i, t) in self.templates.iter().enumerate() {
                if !(self.allowed)(i) {
                    continue;
                }
                let borne_out = |end: usize| self.ending(at + end) != Ending::Unexplained;
                for mut found in rebuilt(cell, header_at, lost, t, self.enc, &borne_out) {
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
        as_read(&mut one.values, self.templates, &one.tables);
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
            let f = whole_record_at(
                self.run,
                header_at,
                at + 4,
                self.templates,
                self.allowed,
                self.enc,
            )?;
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
                .is_some_and(|rest| may_start_cell(rest, self.templates, self.allowed))
        {
            Ending::StaleHeader
        } else {
            Ending::Unexplained
        }
    }
}

/// The records of the freeblocks whose headers are still in `run`, a run of free bytes
/// starting at offset `base` of its page: a block that stopped being one (the content area
/// moved past it, the page was freed) keeps its header and its cells, the first of them
/// overwritten. A header is 4 bytes: the next block's offset (0, or further on the page)
/// and the block's size (within the run); the block is taken when its first cell is
/// rebuilt from it and every cell after it is borne out.
pub fn stale_freeblocks(
    run: &[u8],
    (base, page_len): (usize, usize),
    templates: &[Template],
    allowed: &dyn Fn(usize) -> bool,
    enc: TextEncoding,
) -> Vec<Found> {
    let mut out = Vec::new();
    let mut at = 0;
    // Bytes that look like a header are common in data: each block read costs a search of
    // its readings, so a run gives up after this many that come to nothing.
    let mut budget = STALE_BLOCKS_READ;
    while at + 4 <= run.len() && budget > 0 {
        let word = |i: usize| {
            run.get(i)
                .zip(run.get(i + 1))
                .map_or(0, |(a, b)| usize::from(u16::from_be_bytes([*a, *b])))
        };
        let (next, size) = (word(at), word(at + 2));
        // A block that ran on past the run: the content area has grown over its end
        // since (SQLite takes new cells from the top of the unallocated space), and what
        // is left of it is read up to the run's end.
        let cut = at + size > run.len() && base + at + size <= page_len;
        let plausible = size >= 6
            && (at + size <= run.len() || cut)
            && next_block_fits(next, base + at + size, page_len);
        let block = run
            .get(at..(at + size).min(run.len()))
            .filter(|_| plausible);
        if let Some(block) = block.filter(|b| may_start_cell(b, templates, allowed)) {
            {
                let reader =
                    FreeblockRecords::new(block, (base + at, page_len), templates, allowed, enc);
                let cells = if cut { reader.cut() } else { reader }.cells();
                let len = block.len();
                // Its cells must fill the block its header measures, up to a fragment; of
                // a block cut short, each cell is borne out by what follows it.
                let tiled =
                    cells.last().is_some_and(|f| f.end + 3 >= len) || (cut && !cells.is_empty());
                if tiled && cells.first().is_some_and(|f| f.inferred > 0) {
                    let end = cells.last().map_or(size, |f| f.end);
                    out.extend(cells.into_iter().map(|f| Found {
                        start: f.start + at,
                        end: f.end + at,
                        ..f
                    }));
                    at += end.max(1);
                    continue;
                }
                budget -= 1;
            }
        }
        at += 1;
    }
    out
}

/// Whether `next`, a freeblock's pointer to the next one, can be one on a page of
/// `page_len` usable bytes from a block that ends at `end`: 0 (the last), or a block of
/// at least its 4-byte header after this one (blocks are kept in order, and adjacent ones
/// are joined).
fn next_block_fits(next: usize, end: usize, page_len: usize) -> bool {
    next == 0 || (next > end && next + 4 <= page_len)
}

/// Candidate stale freeblocks a run of free bytes reads in vain before it stops looking
/// ([`stale_freeblocks`]).
const STALE_BLOCKS_READ: usize = 8;

/// Whether a freeblock `block` can start with an overwritten cell of an allowed template:
/// the serial types from its byte 4 on fit the template's columns (all of them, or all
/// but a first one lost). A cheap test before the readings are searched.
fn may_start_cell(block: &[u8], templates: &[Template], allowed: &dyn Fn(usize) -> bool) -> bool {
    templates.iter().enumerate().any(|(i, t)| {
        allowed(i)
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

/// The readings of a record of template `t` whose header started at `header_at`, with
/// `lost` serial types (0 or 1) in the overwritten bytes: one for each type the lost
/// column could have that the bytes bear out, and whose end `borne_out` accepts.
fn rebuilt(
    run: &[u8],
    header_at: usize,
    lost: usize,
    t: &Template,
    enc: TextEncoding,
    borne_out: &dyn Fn(usize) -> bool,
) -> Vec<Found> {
    let n = t.slots.len();
    let Some(known_count) = n.checked_sub(lost) else {
        return Vec::new();
    };
    // Types from byte 4 on: the header ends after the last one.
    let mut known = Vec::with_capacity(known_count);
    let mut at = 4;
    while known.len() < known_count {
        let Some((code, len)) = read_varint_at(run, at) else {
            return Vec::new();
        };
        known.push(SerialType::from_code(code));
        at += len;
    }
    let header_end = at;
    // Types that are all NULL say nothing: zeroed bytes read so.
    if known.iter().all(|t| *t == SerialType::Null) {
        return Vec::new();
    }
    // The lost bytes held the header size (1 byte) and 1-byte serial types.
    if header_end - header_at >= 0x80 {
        return Vec::new();
    }
    // A lost type of a TEXT column is not read as a blob: the same bytes would give two
    // readings, and a TEXT column holds blobs only when an application binds them so.
    let text_column = t
        .slots
        .first()
        .is_some_and(|s| s.affinity == Affinity::Text);
    // The known types are checked once; each candidate for the lost one costs a test of
    // its column and of where the record would end, before anything is decoded.
    if known.len() != known_count
        || !t
            .slots
            .iter()
            .skip(lost)
            .zip(&known)
            .all(|(s, ty)| s.admits(*ty))
    {
        return Vec::new();
    }
    let known_body: u64 = known.iter().map(|t| t.body_len()).sum();
    let first_slot = t.slots.first().copied();
    let firsts = (lost == 1)
        .then(lost_candidates)
        .into_iter()
        .flatten()
        .filter(|c| {
            first_slot.is_some_and(|s| s.admits(*c))
                && !(text_column && matches!(c, SerialType::Blob(_)))
        })
        .map(Some)
        .chain((lost == 0).then_some(None));
    // A value whose type was inferred is text a person wrote, not bytes that happen to
    // decode: no control characters but tab and line breaks.
    let control = |b: &u8| *b < 0x20 && !matches!(b, b'\t' | b'\n' | b'\r');
    // Whether the known values decode depends only on where they start, after the lost
    // value: worked out once per length of its body (at most 57 bytes).
    let mut tails = [None::<bool>; 58];
    let mut out = Vec::new();
    for first in firsts {
        let first_len = first.map_or(0, |f| f.body_len());
        let Some((tail, end)) = usize::try_from(first_len).ok().and_then(|l| {
            let tail = header_end.checked_add(l)?;
            Some((tail, tail.checked_add(usize::try_from(known_body).ok()?)?))
        }) else {
            continue;
        };
        if end > run.len() {
            continue;
        }
        // Whether the bytes decode is checked before whether what follows bears the end
        // out: that asks for the readings of the cells after it, and most candidates do
        // not decode.
        let Some(slot) = tails.get_mut(tail - header_end) else {
            continue;
        };
        let tail_decodes = *slot.get_or_insert_with(|| {
            walk_body(run, tail, known.iter().copied(), enc, |_, _| Some(())) == Some(end)
        });
        let first_decodes = first.is_none_or(|f| {
            let person = |t: SerialType, bytes: &[u8]| {
                (!matches!(t, SerialType::Text(_)) || !bytes.iter().any(control)).then_some(())
            };
            walk_body(run, header_end, [f], enc, person) == Some(tail)
        });
        if !tail_decodes || !first_decodes {
            continue;
        }
        if !borne_out(end) {
            continue;
        }
        let types: Vec<SerialType> = first.into_iter().chain(known.iter().copied()).collect();
        if let Some((values, end)) = decode(run, header_end, &types, enc) {
            out.push(Found {
                start: header_at,
                end,
                tables: Vec::new(),
                rowid: None,
                values,
                inferred: 1 + lost as u32,
            });
        }
    }
    out
}

/// The serial types a lost 1-byte serial type can be: every code below 0x80 but the
/// reserved ones (text and blobs of up to 57 bytes).
fn lost_candidates() -> impl Iterator<Item = SerialType> {
    (0u64..0x80)
        .filter(|c| *c != 10 && *c != 11)
        .map(SerialType::from_code)
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
