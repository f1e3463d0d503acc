//! In-band block layout inside a chunk.
//!
//! A chunk is a sequence of blocks, each a multiple of [`UNIT`] bytes, starting with a
//! 4-byte little-endian header:
//!
//! | bits | field |
//! |---|---|
//! | 0..15 | block size in units (header included) |
//! | 15..30 | size of the physically previous block in units (0 for the first block) |
//! | 31 | FREE |
//!
//! An allocated block holds the payload right after the header. A free block holds the
//! free-list links after the header: `next` at byte 4 and `prev` at byte 8, each a pool
//! address (u32, [`NIL`] = none). Hence the smallest block is 2 units (16 bytes).

/// Allocation granularity in bytes.
pub(crate) const UNIT: usize = 8;
/// Bytes of header in front of every block.
pub(crate) const HEADER: usize = 4;
/// Smallest block (header + two links, rounded to units).
pub(crate) const MIN_UNITS: u32 = 2;
/// "No block" in links and list heads.
pub(crate) const NIL: u32 = u32::MAX;

const SIZE_BITS: u32 = 15;
const SIZE_MASK: u32 = (1 << SIZE_BITS) - 1;
const FREE_BIT: u32 = 1 << 31;

/// Units needed for an object of `len` bytes (header and rounding included).
#[inline]
pub(crate) const fn units_for(len: usize) -> u32 {
    let units = (len + HEADER).div_ceil(UNIT) as u32;
    if units < MIN_UNITS { MIN_UNITS } else { units }
}

/// A decoded block header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Header(u32);

impl Header {
    #[inline]
    pub(crate) const fn new(size: u32, prev: u32, free: bool) -> Self {
        Header(size | prev << SIZE_BITS | if free { FREE_BIT } else { 0 })
    }
    #[inline]
    pub(crate) const fn size(self) -> u32 {
        self.0 & SIZE_MASK
    }
    #[inline]
    pub(crate) const fn prev(self) -> u32 {
        (self.0 >> SIZE_BITS) & SIZE_MASK
    }
    #[inline]
    pub(crate) const fn is_free(self) -> bool {
        self.0 & FREE_BIT != 0
    }
    #[inline]
    pub(crate) const fn with_prev(self, prev: u32) -> Self {
        Header(self.0 & !(SIZE_MASK << SIZE_BITS) | prev << SIZE_BITS)
    }
    #[inline]
    pub(crate) const fn bits(self) -> u32 {
        self.0
    }
    #[inline]
    pub(crate) const fn from_bits(bits: u32) -> Self {
        Header(bits)
    }
}

/// Reads the little-endian u32 at byte `at`.
#[inline]
pub(crate) fn read_u32(buf: &[u8], at: usize) -> u32 {
    let mut word = [0u8; 4];
    word.copy_from_slice(&buf[at..at + 4]);
    u32::from_le_bytes(word)
}

/// Writes `value` little-endian at byte `at`.
#[inline]
pub(crate) fn write_u32(buf: &mut [u8], at: usize, value: u32) {
    buf[at..at + 4].copy_from_slice(&value.to_le_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_fields_round_trip() {
        for (size, prev, free) in
            [(2, 0, false), (8192, 8190, true), (513, 2, true), (SIZE_MASK, SIZE_MASK, false)]
        {
            let h = Header::new(size, prev, free);
            assert_eq!((h.size(), h.prev(), h.is_free()), (size, prev, free));
            assert_eq!(Header::from_bits(h.bits()), h);
            let h2 = h.with_prev(7);
            assert_eq!((h2.size(), h2.prev(), h2.is_free()), (size, 7, free));
        }
    }

    #[test]
    fn units_include_header_and_rounding() {
        assert_eq!(units_for(1), 2);
        assert_eq!(units_for(12), 2);
        assert_eq!(units_for(13), 3);
        assert_eq!(units_for(4092), 512);
        assert_eq!(units_for(4096), 513);
    }
}
