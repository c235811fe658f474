//! The one small cursor through which every fixed-width read of input bytes goes.
//!
//! Every read returns `None` on short input instead of panicking; callers turn that into
//! the [`Finding`](crate::Finding) that fits the structure they were decoding.

/// A forward-only reader over borrowed bytes.
#[derive(Clone, Copy, Debug)]
pub struct Cursor<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    /// A cursor at `pos` within `bytes` (a position past the end reads nothing).
    pub fn at(bytes: &'a [u8], pos: usize) -> Self {
        Cursor { bytes, pos }
    }

    /// The current position, from the start of the underlying bytes.
    pub fn position(&self) -> usize {
        self.pos
    }

    /// Takes the next `n` bytes.
    pub fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self.pos.checked_add(n)?;
        let out = self.bytes.get(self.pos..end)?;
        self.pos = end;
        Some(out)
    }

    /// Reads one byte.
    pub fn read_u8(&mut self) -> Option<u8> {
        let b = *self.bytes.get(self.pos)?;
        self.pos += 1;
        Some(b)
    }

    /// Reads a big-endian 16-bit integer.
    pub fn read_u16_be(&mut self) -> Option<u16> {
        let b = self.take(2)?;
        Some(u16::from_be_bytes([*b.first()?, *b.get(1)?]))
    }

    /// Reads a big-endian 32-bit integer.
    pub fn read_u32_be(&mut self) -> Option<u32> {
        let b = self.take(4)?;
        Some(u32::from_be_bytes(b.try_into().ok()?))
    }
}

/// Reads a big-endian `u16` at `pos` of `bytes`, or `None` past the end.
pub fn u16_at(bytes: &[u8], pos: usize) -> Option<u16> {
    Cursor::at(bytes, pos).read_u16_be()
}

/// Reads a big-endian `u32` at `pos` of `bytes`, or `None` past the end.
pub fn u32_at(bytes: &[u8], pos: usize) -> Option<u32> {
    Cursor::at(bytes, pos).read_u32_be()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_big_endian_and_stops_at_the_end() {
        let bytes = [0x01, 0x02, 0x03, 0x04, 0x05];
        let mut c = Cursor::at(&bytes, 0);
        assert_eq!(c.read_u8(), Some(1));
        assert_eq!(c.read_u16_be(), Some(0x0203));
        assert_eq!(c.read_u32_be(), None);
        assert_eq!(c.position(), 3);
        assert_eq!(c.take(2), Some(&[4u8, 5][..]));
        assert_eq!(c.read_u8(), None);
    }

    #[test]
    fn position_past_end_reads_nothing() {
        assert_eq!(u32_at(&[1, 2, 3], 1), None);
        assert_eq!(u16_at(&[1, 2, 3], usize::MAX), None);
    }
}
