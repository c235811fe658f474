//! Variable-length integers ("Varint" in the file-format document's "Record Format").
//!
//! A varint is 1 to 9 bytes. Each of the first eight bytes gives seven bits, high bit set
//! when another byte follows; a ninth byte gives all eight of its bits. Big-endian.
//!
//! ```text
//! 0xxxxxxx                                   1 byte, 7 bits
//! 1xxxxxxx 0xxxxxxx                          2 bytes, 14 bits
//! 1xxxxxxx × 8, then xxxxxxxx                9 bytes, 64 bits
//! ```

use nom::error::{Error, ErrorKind};
use nom::{Err, IResult};

/// Decodes one varint from the front of `input`, returning the value and its length in
/// bytes, or `None` when the input ends before the varint does.
// SQLite: sqlite3GetVarint (util.c). A 9-byte varint whose leading bits are zero is still
// a value, as SQLite reads it: non-canonical encodings are decoded, not rejected.
#[inline]
pub fn read_varint(input: &[u8]) -> Option<(u64, usize)> {
    let mut value: u64 = 0;
    for i in 0..8 {
        let byte = *input.get(i)?;
        value = (value << 7) | u64::from(byte & 0x7f);
        if byte & 0x80 == 0 {
            return Some((value, i + 1));
        }
    }
    let ninth = *input.get(8)?;
    Some(((value << 8) | u64::from(ninth), 9))
}

/// The nom form of [`read_varint`], for the record-header decoder.
pub(crate) fn varint(input: &[u8]) -> IResult<&[u8], u64> {
    match read_varint(input) {
        Some((value, len)) => Ok((input.get(len..).unwrap_or_default(), value)),
        None => Err(Err::Error(Error::new(input, ErrorKind::Eof))),
    }
}

/// The number of bytes the canonical varint encoding of `value` takes.
pub fn varint_len(value: u64) -> usize {
    if value > 0x00ff_ffff_ffff_ffff {
        return 9;
    }
    let bits = 64 - value.leading_zeros() as usize;
    bits.max(1).div_ceil(7)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_byte_varints() {
        assert_eq!(read_varint(&[0x00]), Some((0, 1)));
        assert_eq!(read_varint(&[0x7f, 0xff]), Some((127, 1)));
    }

    #[test]
    fn two_to_eight_byte_varints() {
        assert_eq!(read_varint(&[0x81, 0x00]), Some((128, 2)));
        assert_eq!(read_varint(&[0x82, 0x80, 0x01]), Some(((2 << 14) | 1, 3)));
        let eight = [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f];
        assert_eq!(read_varint(&eight), Some(((1u64 << 56) - 1, 8)));
        for len in 2..=8 {
            let mut bytes = vec![0x81; len - 1];
            bytes.push(0x01);
            assert_eq!(read_varint(&bytes).map(|v| v.1), Some(len));
        }
    }

    #[test]
    fn nine_byte_varint_uses_all_eight_bits_of_the_last_byte() {
        let nine = [0xff; 9];
        assert_eq!(read_varint(&nine), Some((u64::MAX, 9)));
        // Leading zero bits: not canonical, still a value.
        let padded = [0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x05];
        assert_eq!(read_varint(&padded), Some((5, 9)));
    }

    #[test]
    fn truncated_varint_is_none() {
        assert_eq!(read_varint(&[]), None);
        assert_eq!(read_varint(&[0x81]), None);
        assert_eq!(read_varint(&[0xff; 8]), None);
    }

    #[test]
    fn canonical_lengths() {
        assert_eq!(varint_len(0), 1);
        assert_eq!(varint_len(127), 1);
        assert_eq!(varint_len(128), 2);
        assert_eq!(varint_len(u64::MAX), 9);
    }
}
