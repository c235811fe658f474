//! Whole records: a record header read as it is, anywhere in a run of free bytes, and the
//! cell's payload length and rowid before it where they survive.

use pager::SerialType;

use super::{as_read, decode, read_varint_at, Found, Shapes};
use crate::template::Template;

/// The longest record header the carver reads: 9-byte serial types for 2,000 columns
/// would be longer, but real headers of carved rows are short.
const MAX_HEADER: usize = 4096;

/// Every whole record in `run` from `from` on, left to right; bytes before `intact` are
/// known to be overwritten (a freeblock's header), so no rowid is read from them.
pub fn whole_records(run: &[u8], from: usize, intact: usize, shapes: Shapes<'_>) -> Vec<Found> {
    let mut out = Vec::new();
    // Free space holds old copies of cells from earlier layouts of the page, which
    // overlap: a record starting inside one already found is taken only when its whole
    // cell (payload length and rowid before it) bears it out, not its header alone.
    let mut covered = 0;
    for at in from..run.len().saturating_sub(1) {
        let Some(found) = whole_record_at(run, at, intact, shapes) else {
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
pub(super) fn whole_record_at(
    run: &[u8],
    at: usize,
    intact: usize,
    shapes: Shapes<'_>,
) -> Option<Found> {
    let Shapes {
        templates,
        allowed,
        enc,
    } = shapes;
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

/// The cell whose record of `record_len` bytes starts at `at`: where it starts and its
/// rowid, read from the varint ending just before the record, preceded by a varint that
/// is the payload length. Bytes before `intact` are overwritten and prove nothing.
pub(super) fn cell_before(
    run: &[u8],
    at: usize,
    record_len: u64,
    intact: usize,
) -> Option<(usize, i64)> {
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

#[cfg(test)]
mod tests {
    use pager::Value;

    use super::super::testing::{all, in_run, shapes, text};
    use super::*;
    use crate::testing::notes;

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
        let found = whole_records(&run, 0, 2, shapes(&[notes()], &all));
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
        assert_eq!(whole_records(&run, 0, 0, shapes(&[notes()], &none)), vec![]);
    }
}
