//! Records ("Record Format"): a header of serial types, then the column values.
//!
//! ```text
//! +-------------+---------------+-----+---------------+--------+-----+--------+
//! | header size | serial type 0 | ... | serial type n | body 0 | ... | body n |
//! | varint      | varint        |     | varint        |        |     |        |
//! +-------------+---------------+-----+---------------+--------+-----+--------+
//! ```
//!
//! Values borrow from the payload. Text stays bytes in the database text encoding: damaged
//! or UTF-16 text is still evidence. A record whose bytes run out is reported, not guessed.

use crate::finding::Finding;
use crate::types::Location;

/// A serial type code ("Serial Type Codes Of The Record Format").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SerialType {
    /// 0: NULL.
    Null,
    /// 1..6: big-endian twos-complement integer of 1, 2, 3, 4, 6 or 8 bytes.
    Integer(u8),
    /// 7: big-endian IEEE 754-2008 64-bit float.
    Float,
    /// 8: the integer 0 (schema format 4 and later).
    Zero,
    /// 9: the integer 1 (schema format 4 and later).
    One,
    /// 10, 11: reserved for internal use; never valid in a database file.
    Reserved(u8),
    /// N ≥ 12, even: a BLOB of (N-12)/2 bytes.
    Blob(u64),
    /// N ≥ 13, odd: a string of (N-13)/2 bytes in the database text encoding.
    Text(u64),
}

impl SerialType {
    /// Decodes a serial type code.
    pub fn from_code(code: u64) -> SerialType {
        match code {
            0 => SerialType::Null,
            1..=4 => SerialType::Integer(code as u8),
            5 => SerialType::Integer(6),
            6 => SerialType::Integer(8),
            7 => SerialType::Float,
            8 => SerialType::Zero,
            9 => SerialType::One,
            10 | 11 => SerialType::Reserved(code as u8),
            n if n % 2 == 0 => SerialType::Blob((n - 12) / 2),
            n => SerialType::Text((n - 13) / 2),
        }
    }

    /// The serial type code as stored in a record header.
    pub fn code(self) -> u64 {
        match self {
            SerialType::Null => 0,
            SerialType::Integer(6) => 5,
            SerialType::Integer(8) => 6,
            SerialType::Integer(n) => u64::from(n),
            SerialType::Float => 7,
            SerialType::Zero => 8,
            SerialType::One => 9,
            SerialType::Reserved(c) => u64::from(c),
            SerialType::Blob(n) => 12 + 2 * n,
            SerialType::Text(n) => 13 + 2 * n,
        }
    }

    /// The size of the value's body in bytes.
    pub fn body_len(self) -> u64 {
        match self {
            SerialType::Null | SerialType::Zero | SerialType::One | SerialType::Reserved(_) => 0,
            SerialType::Integer(n) => u64::from(n),
            SerialType::Float => 8,
            SerialType::Blob(n) | SerialType::Text(n) => n,
        }
    }
}

/// A value borrowed from a record.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ValueRef<'a> {
    /// SQL NULL.
    Null,
    /// A signed integer.
    Integer(i64),
    /// A 64-bit float.
    Real(f64),
    /// Text bytes in the database text encoding, exactly as stored.
    Text(&'a [u8]),
    /// A BLOB.
    Blob(&'a [u8]),
}

/// A decoded record header: the header size and every column's serial type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordHeader {
    /// Size of the header in bytes, its own varint included.
    pub header_size: u64,
    /// One serial type per column.
    pub serial_types: Vec<SerialType>,
}

impl RecordHeader {
    /// Header size plus the bodies it describes: what the payload size must be.
    pub fn record_len(&self) -> u64 {
        self.serial_types
            .iter()
            .fold(self.header_size, |acc, t| acc.saturating_add(t.body_len()))
    }
}

/// Decodes the record header at the start of `payload`. `payload_len` is the full payload
/// size from the cell (the slice may be only its local part); `at` locates the cell for findings.
pub fn parse_record_header(
    payload: &[u8],
    payload_len: u64,
    at: Location,
) -> Result<RecordHeader, Finding> {
    let mut serial_types = Vec::with_capacity(8);
    let header_size = visit_record_header(payload, payload_len, at, |t| serial_types.push(t))?;
    Ok(RecordHeader {
        header_size,
        serial_types,
    })
}

/// Walks the record header at the start of `payload` without allocating, calling `each`
/// with every serial type in order; returns the header size. The checks and findings
/// are those of [`parse_record_header`].
pub fn visit_record_header(
    payload: &[u8],
    payload_len: u64,
    at: Location,
    mut each: impl FnMut(SerialType),
) -> Result<u64, Finding> {
    let Some((header_size, size_len)) = crate::varint::read_varint(payload) else {
        return Err(Finding::TruncatedVarint { at });
    };
    let size_len = size_len as u64;
    if header_size < size_len || header_size > payload_len {
        return Err(Finding::RecordHeaderSizeInvalid {
            at,
            header_size,
            payload_len,
        });
    }
    let Some(rest) = payload.get(size_len as usize..header_size as usize) else {
        // The header runs past the local bytes we were given.
        return Err(Finding::TruncatedVarint { at });
    };
    // Most serial types are one byte (below 128: every type but text or a blob of 57
    // bytes or more): read at once, the rest as varints.
    let mut i = 0;
    while let Some(&byte) = rest.get(i) {
        let (code, len) = match byte {
            0..0x80 => (u64::from(byte), 1),
            _ => match crate::varint::read_varint(rest.get(i..).unwrap_or_default()) {
                Some(read) => read,
                None => return Err(Finding::TruncatedVarint { at }),
            },
        };
        let t = SerialType::from_code(code);
        if let SerialType::Reserved(_) = t {
            return Err(Finding::InvalidSerialType {
                at,
                serial_type: code,
            });
        }
        each(t);
        i += len;
    }
    Ok(header_size)
}

/// The last value of the record in `payload`, decoded without allocating (an index
/// entry's rowid, say); `None` when the header or the value's bytes are damaged.
pub fn last_value(payload: &[u8], at: Location) -> Option<ValueRef<'_>> {
    let mut last = None;
    let mut offset = 0u64;
    let header = visit_record_header(payload, payload.len() as u64, at, |t| {
        if let Some(prev) = last.replace(t) {
            offset = offset.saturating_add(SerialType::body_len(prev));
        }
    })
    .ok()?;
    decode_value(last?, payload, header.saturating_add(offset))
}

/// Column `index` of the record in `payload`, raw: its serial type and its body bytes,
/// without decoding anything else; `None` when the record has fewer columns or is damaged.
pub fn column_raw(payload: &[u8], at: Location, index: usize) -> Option<(SerialType, &[u8])> {
    let mut found = None;
    let mut offset = 0u64;
    let mut i = 0usize;
    let header = visit_record_header(payload, payload.len() as u64, at, |t| {
        if i < index {
            offset = offset.saturating_add(t.body_len());
        } else if i == index {
            found = Some(t);
        }
        i += 1;
    })
    .ok()?;
    let t = found?;
    let start = usize::try_from(header.checked_add(offset)?).ok()?;
    let body = payload.get(start..start.checked_add(usize::try_from(t.body_len()).ok()?)?)?;
    Some((t, body))
}

/// The length the record header at the start of `payload` describes: header plus bodies.
pub fn described_record_len(
    payload: &[u8],
    payload_len: u64,
    at: Location,
) -> Result<u64, Finding> {
    let mut bodies = 0u64;
    let header = visit_record_header(payload, payload_len, at, |t| {
        bodies = bodies.saturating_add(t.body_len())
    })?;
    Ok(header.saturating_add(bodies))
}

/// A record over payload bytes with its decoded header.
#[derive(Clone, Debug)]
pub struct Record<'a> {
    header: RecordHeader,
    payload: &'a [u8],
    at: Location,
}

impl<'a> Record<'a> {
    /// Decodes the header of a record whose complete payload is `payload`. A size mismatch
    /// between header and payload is returned as a finding beside the record, whose values
    /// are still read as far as the bytes go.
    pub fn parse(
        payload: &'a [u8],
        at: Location,
    ) -> Result<(Record<'a>, Option<Finding>), Finding> {
        let payload_len = payload.len() as u64;
        let header = parse_record_header(payload, payload_len, at)?;
        let described = header.record_len();
        let mismatch = (described != payload_len).then_some(Finding::RecordSizeMismatch {
            at,
            header_says: described,
            payload_len,
        });
        Ok((
            Record {
                header,
                payload,
                at,
            },
            mismatch,
        ))
    }

    /// The decoded header.
    pub fn header(&self) -> &RecordHeader {
        &self.header
    }

    /// Number of columns.
    pub fn len(&self) -> usize {
        self.header.serial_types.len()
    }

    /// Whether the record has no columns.
    pub fn is_empty(&self) -> bool {
        self.header.serial_types.is_empty()
    }

    /// The column values in order; a value whose bytes are missing is a finding and the
    /// values after it are still attempted (their offsets are known from the header).
    pub fn values(&self) -> impl Iterator<Item = Result<ValueRef<'a>, Finding>> + '_ {
        let mut offset = self.header.header_size;
        self.header
            .serial_types
            .iter()
            .enumerate()
            .map(move |(i, t)| {
                let start = offset;
                offset = offset.saturating_add(t.body_len());
                decode_value(*t, self.payload, start).ok_or(Finding::ValueTruncated {
                    at: self.at,
                    column: i as u32,
                })
            })
    }
}

/// Decodes one value of type `t` whose body starts at `start` in `payload`.
pub fn decode_value(t: SerialType, payload: &[u8], start: u64) -> Option<ValueRef<'_>> {
    // The header alone gives these: no body byte is needed, so none can be missing.
    match t {
        SerialType::Null | SerialType::Reserved(_) => return Some(ValueRef::Null),
        SerialType::Zero => return Some(ValueRef::Integer(0)),
        SerialType::One => return Some(ValueRef::Integer(1)),
        _ => {}
    }
    let start = usize::try_from(start).ok()?;
    let len = usize::try_from(t.body_len()).ok()?;
    let body = payload.get(start..start.checked_add(len)?)?;
    Some(match t {
        SerialType::Null | SerialType::Reserved(_) => ValueRef::Null,
        SerialType::Zero => ValueRef::Integer(0),
        SerialType::One => ValueRef::Integer(1),
        SerialType::Integer(_) => ValueRef::Integer(be_signed(body)),
        SerialType::Float => ValueRef::Real(f64::from_bits(be_signed(body) as u64)),
        SerialType::Blob(_) => ValueRef::Blob(body),
        SerialType::Text(_) => ValueRef::Text(body),
    })
}

/// A big-endian twos-complement integer of 1 to 8 bytes.
fn be_signed(body: &[u8]) -> i64 {
    let mut v: i64 = if body.first().is_some_and(|b| b & 0x80 != 0) {
        -1
    } else {
        0
    };
    for b in body {
        v = (v << 8) | i64::from(*b);
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::PageNo;

    fn at() -> Location {
        Location::new(PageNo::new(2).unwrap(), 100)
    }

    #[test]
    fn every_serial_type() {
        #[rustfmt::skip]
        let payload = [
            0x0c,             // header size: 12
            0x00,             // NULL
            0x01, 0x02, 0x03, // 8-, 16-, 24-bit ints
            0x04, 0x05, 0x06, // 32-, 48-, 64-bit ints
            0x07,             // float
            0x08, 0x09,       // 0, 1
            0x13,             // text, 3 bytes
            0xff,                                           // -1
            0x80, 0x00,                                     // -32768
            0x7f, 0xff, 0xff,                               // 2^23-1
            0x80, 0x00, 0x00, 0x00,                         // -2^31
            0x00, 0x00, 0x00, 0x00, 0x01, 0x00,             // 256
            0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, // i64::MAX
            0x3f, 0xf8, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // 1.5
            b'a', b'b', b'c',
        ];
        let (r, mismatch) = Record::parse(&payload, at()).unwrap();
        assert_eq!(mismatch, None);
        let values: Vec<_> = r.values().map(Result::unwrap).collect();
        assert_eq!(
            values,
            vec![
                ValueRef::Null,
                ValueRef::Integer(-1),
                ValueRef::Integer(-32768),
                ValueRef::Integer((1 << 23) - 1),
                ValueRef::Integer(-(1 << 31)),
                ValueRef::Integer(256),
                ValueRef::Integer(i64::MAX),
                ValueRef::Real(1.5),
                ValueRef::Integer(0),
                ValueRef::Integer(1),
                ValueRef::Text(b"abc"),
            ]
        );
    }

    #[test]
    fn blob_and_empty_values() {
        let payload = [0x03, 0x10, 0x0d, 0xde, 0xad];
        let (r, _) = Record::parse(&payload, at()).unwrap();
        let values: Vec<_> = r.values().map(Result::unwrap).collect();
        assert_eq!(
            values,
            vec![ValueRef::Blob(&[0xde, 0xad]), ValueRef::Text(b"")]
        );
    }

    #[test]
    fn serial_type_codes_round_trip() {
        for code in (0..=9).chain([12, 13, 14, 15, 100, 101]) {
            assert_eq!(SerialType::from_code(code).code(), code);
        }
        let payload = [0x04, 0x13, 0x01, 0x02, b'a', b'b', b'c', 0x07, 0x01, 0x00];
        assert_eq!(
            column_raw(&payload, at(), 0),
            Some((SerialType::Text(3), &b"abc"[..]))
        );
        assert_eq!(
            column_raw(&payload, at(), 2),
            Some((SerialType::Integer(2), &[0x01, 0x00][..]))
        );
        assert_eq!(column_raw(&payload, at(), 3), None);
    }

    #[test]
    fn last_value_without_decoding_the_rest() {
        let payload = [0x04, 0x13, 0x01, 0x02, b'a', b'b', b'c', 0x07, 0x01, 0x00];
        assert_eq!(last_value(&payload, at()), Some(ValueRef::Integer(256)));
        assert_eq!(last_value(&payload[..9], at()), None);
    }

    #[test]
    fn reserved_serial_type() {
        let payload = [0x02, 0x0a];
        assert_eq!(
            Record::parse(&payload, at()).unwrap_err(),
            Finding::InvalidSerialType {
                at: at(),
                serial_type: 10
            }
        );
    }

    #[test]
    fn header_size_larger_than_payload() {
        let payload = [0x09, 0x01, 0x01];
        assert_eq!(
            Record::parse(&payload, at()).unwrap_err(),
            Finding::RecordHeaderSizeInvalid {
                at: at(),
                header_size: 9,
                payload_len: 3
            }
        );
    }

    #[test]
    fn truncated_varint_in_header() {
        let payload = [0x03, 0x81, 0x81];
        assert_eq!(
            Record::parse(&payload, at()).unwrap_err(),
            Finding::TruncatedVarint { at: at() }
        );
    }

    #[test]
    fn value_bytes_missing() {
        // Header says two 32-bit ints; only one is present.
        let payload = [0x03, 0x04, 0x04, 0, 0, 0, 1];
        let (r, mismatch) = Record::parse(&payload, at()).unwrap();
        assert_eq!(
            mismatch,
            Some(Finding::RecordSizeMismatch {
                at: at(),
                header_says: 11,
                payload_len: 7
            })
        );
        let values: Vec<_> = r.values().collect();
        assert_eq!(values[0], Ok(ValueRef::Integer(1)));
        assert_eq!(
            values[1],
            Err(Finding::ValueTruncated {
                at: at(),
                column: 1
            })
        );
    }
}
