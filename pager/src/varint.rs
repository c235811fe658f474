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

/// Decodes one varint from the front of `input`, returning the value and its length in
/// bytes, or `None` when the input ends before the varint does.
// SQLite: sqlite3GetVarint (util.c). A 9-byte varint whose leading bits are zero is still
// a value, as SQLite reads it: non-canonical encodings are decoded, not rejected.
#[inline(always)]
pub fn read_varint(input: &[u8]) -> Option<(u64, usize)> {
    // One and two bytes, most varints of a page (serial types, payload sizes, rowids
    // under 16,384), without the loop.
    match input {
        [a, ..] if *a < 0x80 => Some((u64::from(*a), 1)),
        [a, b, ..] if *b < 0x80 => Some(((u64::from(*a & 0x7f) << 7) | u64::from(*b), 2)),
        _ => read_long_varint(input),
    }
}

/// [`read_varint`] of three bytes or more, or cut short.
fn read_long_varint(input: &[u8]) -> Option<(u64, usize)> {
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

    /// The short paths read what the loop reads, for every first two bytes, with a tail
    /// and without one.
    #[test]
    fn the_one_and_two_byte_paths_read_as_the_loop_does() {
        for a in 0..=255u8 {
            for b in 0..=255u8 {
                for tail in [&[][..], &[0x01][..], &[0x80, 0x80, 0x00][..]] {
                    let mut bytes = vec![a, b];
                    bytes.extend_from_slice(tail);
                    assert_eq!(
                        read_varint(&bytes),
                        read_long_varint(&bytes),
                        "{bytes:02x?}"
                    );
                }
            }
            assert_eq!(read_varint(&[a]), read_long_varint(&[a]));
        }
        assert_eq!(read_varint(&[]), None);
    }

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
