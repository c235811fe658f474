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

#[cfg(test)]
mod tests {
    //! Runs of free bytes laid out as "B-tree Pages" and "Record Format" describe them:
    //! a table b-tree leaf cell is a payload-length varint, a rowid varint and a record
    //! (header size, serial types, body); a freeblock starts with a 2-byte offset of the
    //! next freeblock and a 2-byte size, written over the first 4 bytes of the cell it was.

    use super::*;
    use crate::testing::{notes, template};

    /// Where the blocks of these tests lie on their page, and the page's usable size.
    const ON_PAGE: (usize, usize) = (300, 512);

    fn all(_: usize) -> bool {
        true
    }

    fn text(s: &str) -> Value {
        Value::Text(s.as_bytes().to_vec())
    }

    /// The records of freeblock `block` at [`ON_PAGE`].
    fn in_block(block: &[u8], templates: &[Template]) -> Vec<Found> {
        FreeblockRecords::new(block, ON_PAGE, templates, &all, TextEncoding::Utf8).records()
    }

    /// The whole records of an unallocated `run`, every byte of it intact.
    fn in_run(run: &[u8], templates: &[Template]) -> Vec<Found> {
        whole_records(run, 0, 0, templates, &all, TextEncoding::Utf8)
    }

    #[test]
    fn freeblock_header_over_payload_length_rowid_header_size_and_first_type() {
        // The cell of notes row ("hi", "yo", 3) with rowid 9 was
        // 09 09 04 11 11 01 'h' 'i' 'y' 'o' 03: payload length and rowid take 1 byte each,
        // so the freeblock header took the header size and the first serial type too.
        #[rustfmt::skip]
        let block = [
            0x00, 0x00, // next freeblock: none    (was payload length 9, rowid 9)
            0x00, 0x0b, // freeblock size: 11      (was header size 4, serial type 0x11)
            0x11,       // serial type: text of 2 bytes (body)
            0x01,       // serial type: 8-bit integer (stars)
            b'h', b'i', // title
            b'y', b'o', // body
            0x03,       // stars
        ];
        let found = in_block(&block, &[notes()]);
        assert_eq!(
            found,
            vec![Found {
                start: 2,
                end: 11,
                tables: vec![0],
                rowid: None,
                values: vec![text("hi"), text("yo"), Value::Integer(3)],
                inferred: 2,
            }]
        );
    }

    #[test]
    fn freeblock_header_over_payload_length_two_byte_rowid_and_header_size() {
        // Rowid 200 takes 2 bytes (81 48): the header starts at byte 3, and only its
        // header size was overwritten; every serial type is read.
        #[rustfmt::skip]
        let block = [
            0x00, 0x00, // next freeblock: none    (was payload length 9, rowid byte 0x81)
            0x00, 0x0c, // freeblock size: 12      (was rowid byte 0x48, header size 4)
            0x11,       // serial type: text of 2 bytes (title)
            0x11,       // serial type: text of 2 bytes (body)
            0x01,       // serial type: 8-bit integer (stars)
            b'h', b'i', b'y', b'o', 0x03,
        ];
        let found = in_block(&block, &[notes()]);
        assert_eq!(found.len(), 1);
        assert_eq!(
            (found[0].start, found[0].end, found[0].inferred),
            (3, 12, 1)
        );
        assert_eq!(
            found[0].values,
            vec![text("hi"), text("yo"), Value::Integer(3)]
        );
    }

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
    fn two_readings_of_an_overwritten_first_type_give_no_record() {
        // pair(a, b INTEGER): the lost first type of column `a` (no affinity) may have
        // been an 8-bit integer 5 or a 1-byte blob x'05'; both end the record where the
        // block ends, so neither is taken.
        let pair = template("pair", &[("a", ""), ("b", "INTEGER")]);
        #[rustfmt::skip]
        let block = [
            0x00, 0x00, // next freeblock: none
            0x00, 0x07, // freeblock size: 7
            0x01,       // serial type: 8-bit integer (b)
            0x05,       // a: integer 5, or blob x'05'
            0x07,       // b
        ];
        assert_eq!(in_block(&block, &[pair]), vec![]);
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

    #[test]
    fn whole_deleted_cell_in_unallocated_space_keeps_its_rowid() {
        #[rustfmt::skip]
        let run = [
            0x00, 0x00, 0x00, // never written
            0x09,       // payload length: 9
            0x07,       // rowid: 7
            0x04,       // header size: 4
            0x11, 0x11, // serial types: text of 2 bytes, twice
            0x01,       // serial type: 8-bit integer
            b'h', b'i', b'y', b'o', 0x03,
            0x00, 0x00, // never written
        ];
        assert_eq!(
            in_run(&run, &[notes()]),
            vec![Found {
                start: 5,
                end: 14,
                tables: vec![0],
                rowid: Some(7),
                values: vec![text("hi"), text("yo"), Value::Integer(3)],
                inferred: 0,
            }]
        );
    }

    #[test]
    fn no_rowid_is_read_from_overwritten_bytes() {
        // The same cell, but its first 2 bytes are known to be overwritten (`intact` 2).
        #[rustfmt::skip]
        let run = [
            0x09,       // payload length: 9 (overwritten)
            0x07,       // rowid: 7 (overwritten)
            0x04, 0x11, 0x11, 0x01, b'h', b'i', b'y', b'o', 0x03,
        ];
        let found = whole_records(&run, 0, 2, &[notes()], &all, TextEncoding::Utf8);
        assert_eq!(found.len(), 1);
        assert_eq!((found[0].start, found[0].rowid), (2, None));
    }

    #[test]
    fn old_copy_inside_a_record_is_kept_only_with_its_cell() {
        // A record whose title holds the bytes of another record: without a payload
        // length and rowid before it, that inner record is part of the outer one.
        #[rustfmt::skip]
        let run = [
            0x10,       // payload length: 16
            0x01,       // rowid: 1
            0x04,       // header size: 4
            0x1f,       // serial type: text of 9 bytes (title)
            0x11,       // serial type: text of 2 bytes (body)
            0x01,       // serial type: 8-bit integer (stars)
            0x04, 0x11, 0x11, 0x01, b'h', b'i', b'y', b'o', 0x03, // title: a record's bytes
            b'y', b'o', 0x03,
        ];
        let found = in_run(&run, &[notes()]);
        let spans: Vec<_> = found.iter().map(|f| (f.start, f.rowid)).collect();
        assert_eq!(spans, vec![(2, Some(1))]);

        // The same with the inner record's cell whole (payload length 9, rowid 5): an old
        // copy of a cell, taken too.
        #[rustfmt::skip]
        let run = [
            0x12,       // payload length: 18
            0x01,       // rowid: 1
            0x04,       // header size: 4
            0x23,       // serial type: text of 11 bytes (title)
            0x11,       // serial type: text of 2 bytes (body)
            0x01,       // serial type: 8-bit integer (stars)
            0x09, 0x05, 0x04, 0x11, 0x11, 0x01, b'h', b'i', b'y', b'o', 0x03, // title: a cell
            b'y', b'o', 0x03,
        ];
        let found = in_run(&run, &[notes()]);
        let spans: Vec<_> = found.iter().map(|f| (f.start, f.rowid)).collect();
        assert_eq!(spans, vec![(2, Some(1)), (8, Some(5))]);
    }

    #[test]
    fn record_header_that_fits_no_shape_is_no_record() {
        #[rustfmt::skip]
        let two_columns = [
            0x03,       // header size: 3
            0x11, 0x01, // serial types: text of 2 bytes, 8-bit integer
            b'h', b'i', 0x03,
        ];
        assert_eq!(in_run(&two_columns, &[notes()]), vec![]);
        #[rustfmt::skip]
        let text_for_stars = [
            0x04,             // header size: 4
            0x11, 0x11, 0x11, // serial types: text of 2 bytes, three times
            b'h', b'i', b'y', b'o', b'n', b'o',
        ];
        assert_eq!(in_run(&text_for_stars, &[notes()]), vec![]);
        #[rustfmt::skip]
        let reserved = [
            0x04,             // header size: 4
            0x11, 0x11, 0x0a, // serial type 10 is reserved
            b'h', b'i', b'y', b'o',
        ];
        assert_eq!(in_run(&reserved, &[notes()]), vec![]);
    }

    #[test]
    fn record_header_size_shorter_than_itself_is_no_record() {
        #[rustfmt::skip]
        let run = [
            0x01,       // header size: 1, only the size itself
            0x11, 0x11, 0x01, b'h', b'i', b'y', b'o', 0x03,
        ];
        assert_eq!(in_run(&run, &[notes()]), vec![]);
    }

    #[test]
    fn value_running_past_the_run_is_no_record() {
        #[rustfmt::skip]
        let run = [
            0x04,       // header size: 4
            0x11,       // serial type: text of 2 bytes
            0x2d,       // serial type: text of 16 bytes, past the run's end
            0x01,       // serial type: 8-bit integer
            b'h', b'i', b'y', b'o', 0x03,
        ];
        assert_eq!(in_run(&run, &[notes()]), vec![]);
    }

    #[test]
    fn text_of_nul_bytes_or_not_utf8_is_no_record() {
        #[rustfmt::skip]
        let wiped = [
            0x04, 0x11, 0x11, 0x01,
            b'h', b'i',
            0x00, 0x00, // body: what a wipe leaves
            0x03,
        ];
        assert_eq!(in_run(&wiped, &[notes()]), vec![]);
        #[rustfmt::skip]
        let not_utf8 = [
            0x04, 0x11, 0x11, 0x01,
            b'h', b'i',
            0xff, 0xfe, // body: no UTF-8
            0x03,
        ];
        assert_eq!(in_run(&not_utf8, &[notes()]), vec![]);
    }

    #[test]
    fn record_of_a_table_not_allowed_here_is_not_taken() {
        #[rustfmt::skip]
        let run = [0x04, 0x11, 0x11, 0x01, b'h', b'i', b'y', b'o', 0x03];
        let none = |_: usize| false;
        assert_eq!(
            whole_records(&run, 0, 0, &[notes()], &none, TextEncoding::Utf8),
            vec![]
        );
    }

    #[test]
    fn stale_freeblock_in_unallocated_space_is_read_by_its_header() {
        // A freeblock the content area moved past: its header is all that says where it
        // starts.
        #[rustfmt::skip]
        let run = [
            0x00, 0x00, 0x00, 0x00, // never written
            0x00, 0x00, // next freeblock: none
            0x00, 0x0b, // freeblock size: 11
            0x11, 0x01, b'h', b'i', b'y', b'o', 0x03,
            0x00, 0x00, 0x00, // never written
        ];
        let found = stale_freeblocks(&run, (200, 512), &[notes()], &all, TextEncoding::Utf8);
        let spans: Vec<_> = found.iter().map(|f| (f.start, f.end, f.inferred)).collect();
        assert_eq!(spans, vec![(6, 15, 2)]);
    }

    #[test]
    fn stale_freeblock_pointing_back_at_itself_is_no_freeblock() {
        // Its next pointer is its own offset (200 + 4): a chain that loops, which SQLite
        // never writes (freeblocks are kept in ascending order).
        #[rustfmt::skip]
        let run = [
            0x00, 0x00, 0x00, 0x00,
            0x00, 0xcc, // next freeblock: 204, itself
            0x00, 0x0b, // freeblock size: 11
            0x11, 0x01, b'h', b'i', b'y', b'o', 0x03,
        ];
        assert_eq!(
            stale_freeblocks(&run, (200, 512), &[notes()], &all, TextEncoding::Utf8),
            vec![]
        );
    }

    #[test]
    fn stale_freeblock_whose_size_runs_past_the_page_is_no_freeblock() {
        #[rustfmt::skip]
        let run = [
            0x00, 0x00, // next freeblock: none
            0x01, 0x0b, // freeblock size: 267, past the page's end at 512 - 300
            0x11, 0x01, b'h', b'i', b'y', b'o', 0x03,
        ];
        assert_eq!(
            stale_freeblocks(&run, (300, 512), &[notes()], &all, TextEncoding::Utf8),
            vec![]
        );
    }

    #[test]
    fn stale_freeblock_cut_short_by_the_content_area_gives_the_cells_it_still_holds() {
        // The block measured 27 bytes; the content area has since grown over its last 4.
        #[rustfmt::skip]
        let run = [
            0x00, 0x00, // next freeblock: none
            0x00, 0x1b, // freeblock size: 27, 4 past the run's end
            0x11, 0x01, b'h', b'i', b'y', b'o', 0x03, // first cell, overwritten
            0x0a, 0x0a, 0x04, 0x11, 0x13, 0x01, b'a', b'b', b'c', b'd', b'e', 0x04,
        ];
        let found = stale_freeblocks(&run, (300, 512), &[notes()], &all, TextEncoding::Utf8);
        let spans: Vec<_> = found.iter().map(|f| (f.start, f.end, f.rowid)).collect();
        assert_eq!(spans, vec![(2, 11, None), (13, 23, Some(10))]);
    }

    #[test]
    fn zero_bytes_of_free_space_hold_no_record() {
        assert_eq!(in_run(&[], &[notes()]), vec![]);
        assert_eq!(in_block(&[], &[notes()]), vec![]);
        assert_eq!(
            stale_freeblocks(&[], (300, 512), &[notes()], &all, TextEncoding::Utf8),
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
