//! Protobuf wire primitives: varints, tags and length-delimited payloads read within a byte range.

pub const WIRE_VARINT: u64 = 0;
pub const WIRE_I64: u64 = 1;
pub const WIRE_LEN: u64 = 2;
pub const WIRE_START_GROUP: u64 = 3;
pub const WIRE_END_GROUP: u64 = 4;
pub const WIRE_I32: u64 = 5;
/// Protobuf's largest field number; 0 is never valid.
pub const MAX_FIELD_NUMBER: u64 = (1 << 29) - 1;
const MAX_VARINT_BYTES: usize = 10;

/// Why a varint could not be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VarintError {
    /// The range ended before a byte without the continuation bit.
    Unterminated,
    /// Ten bytes, all with the continuation bit.
    TooLong,
}

/// A read position in `buf` that never passes `end`.
#[derive(Debug, Clone, Copy)]
pub struct Cursor<'a> {
    pub buf: &'a [u8],
    pub pos: usize,
    pub end: usize,
}

impl<'a> Cursor<'a> {
    pub fn new(buf: &'a [u8], start: usize, end: usize) -> Self {
        Cursor { buf, pos: start, end }
    }

    pub fn at_end(&self) -> bool {
        self.pos >= self.end
    }

    /// A varint of at most ten bytes. Bits past the 64th are dropped, as protobuf runtimes drop them.
    #[inline(always)]
    pub fn varint(&mut self) -> Result<u64, VarintError> {
        if self.pos < self.end && self.buf[self.pos] < 0x80 {
            self.pos += 1;
            return Ok(u64::from(self.buf[self.pos - 1]));
        }
        self.long_varint()
    }

    fn long_varint(&mut self) -> Result<u64, VarintError> {
        let mut value = 0u64;
        for i in 0..MAX_VARINT_BYTES {
            if self.pos >= self.end {
                return Err(VarintError::Unterminated);
            }
            let byte = self.buf[self.pos];
            self.pos += 1;
            value |= u64::from(byte & 0x7f) << (7 * i);
            if byte < 0x80 {
                return Ok(value);
            }
        }
        Err(VarintError::TooLong)
    }

    /// The next `len` bytes as a cursor of their own, or None when they run past `end`.
    #[inline]
    pub fn take(&mut self, len: u64) -> Option<Cursor<'a>> {
        if len > (self.end - self.pos) as u64 {
            return None;
        }
        let start = self.pos;
        self.pos += len as usize;
        Some(Cursor::new(self.buf, start, self.pos))
    }

    /// Step over `len` bytes; false when they run past `end`.
    pub fn skip(&mut self, len: u64) -> bool {
        self.take(len).is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_of_one_to_ten_bytes() {
        let buf = [0x01, 0x96, 0x01, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01];
        let mut c = Cursor::new(&buf, 0, buf.len());
        assert_eq!(c.varint(), Ok(1));
        assert_eq!(c.varint(), Ok(150));
        assert_eq!(c.varint(), Ok(u64::MAX));
        assert!(c.at_end());
    }

    #[test]
    fn a_varint_stops_at_the_end_of_its_range_and_at_ten_bytes() {
        let buf = [0x96, 0x01];
        assert_eq!(Cursor::new(&buf, 0, 1).varint(), Err(VarintError::Unterminated));
        let long = [0x80; 11];
        assert_eq!(Cursor::new(&long, 0, 11).varint(), Err(VarintError::TooLong));
    }

    #[test]
    fn take_refuses_to_pass_the_end() {
        let buf = [1, 2, 3];
        let mut c = Cursor::new(&buf, 0, 3);
        assert_eq!(c.take(2).map(|p| (p.pos, p.end)), Some((0, 2)));
        assert!(c.take(2).is_none());
        assert!(c.take(u64::MAX).is_none());
    }
}
