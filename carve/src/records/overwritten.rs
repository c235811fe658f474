//! The readings of a record whose header's first bytes a freeblock header overwrote: the
//! header size and at most one serial type are lost, and the shape supplies them.

use pager::{SerialType, TextEncoding};
use reconstruct::shape::Affinity;

use super::{decode, read_varint_at, walk_body, Found};
use crate::template::Template;

/// The readings of a record of template `t` whose header started at `header_at`, with
/// `lost` serial types (0 or 1) in the overwritten bytes: one for each type the lost
/// column could have that the bytes bear out, and whose end `borne_out` accepts.
pub(super) fn rebuilt(
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

#[cfg(test)]
mod tests {
    use pager::Value;

    use super::super::testing::{in_block, text};
    use super::*;
    use crate::testing::{notes, template};

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
}
