//! In-band block layout inside a chunk.
//!
//! A chunk is a sequence of blocks, each a multiple of [`UNIT`] bytes, starting with a
//! 4-byte little-endian header:
//!
//! | bits | field |
//! |---|---|
//! | 0..15 | block size in units (header included) |
//! | 15..28 | allocated block: the object's length in bytes; free block: zero |
//! | 28 | DIRECT: an allocated block without a slot, named by its address |
//! | 29 | zero |
//! | 30 | PREV_FREE: the physically previous block is free |
//! | 31 | FREE |
//!
//! An allocated block holds the payload right after the header. Its exact length lives in
//! the header rather than in the slot table, so a slot is 8 bytes (generation and address)
//! instead of 12: the header is read anyway, in the cache line of the payload's start. A free block holds the
//! free-list links after the header: `next` at byte 4 and `prev` at byte 8, each a pool
//! address (u32, [`NIL`] = none), and its size in units again in its last 4 bytes (the
//! footer). Hence the smallest block is 2 units (16 bytes).
//!
//! Why a flag and a footer rather than the previous block's size in every header: `free`
//! reads the word in front of its own header, usually in the same cache line, only when
//! the flag says the previous block can be merged, instead of always reading the previous
//! block's header somewhere else in the chunk; and splitting a free block writes the
//! remainder's footer instead of reading and rewriting the following block's header.

/// Allocation granularity in bytes.
pub(crate) const UNIT: usize = 8;
/// Bytes of header in front of every block.
pub(crate) const HEADER: usize = 4;
/// Smallest block (header + two links, rounded to units).
pub(crate) const MIN_UNITS: u32 = 2;
/// "No block" in links and list heads.
pub(crate) const NIL: u32 = u32::MAX;

const SIZE_MASK: u32 = (1 << 15) - 1;
const LEN_SHIFT: u32 = 15;
/// 13 bits: lengths up to 8191 bytes, more than [`MAX_ALLOC`](crate::MAX_ALLOC).
const LEN_MASK: u32 = (1 << 13) - 1;
const _: () = assert!(crate::MAX_ALLOC as u32 <= LEN_MASK);
const DIRECT_BIT: u32 = 1 << 28;
const PREV_FREE_BIT: u32 = 1 << 30;
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
    /// Stands for "no block" beyond a chunk's edge: neither free nor preceded by a free block.
    pub(crate) const EDGE: Header = Header(0);

    /// An allocated block of `size` units holding `len` bytes, whose previous block is not
    /// free.
    #[inline]
    pub(crate) const fn allocated(size: u32, len: u32) -> Self {
        Header(size | (len & LEN_MASK) << LEN_SHIFT)
    }
    /// A free block of `size` units; its previous block is never free (free blocks merge).
    #[inline]
    pub(crate) const fn free(size: u32) -> Self {
        Header(size | FREE_BIT)
    }
    #[inline]
    pub(crate) const fn size(self) -> u32 {
        self.0 & SIZE_MASK
    }
    #[inline]
    pub(crate) const fn is_free(self) -> bool {
        self.0 & FREE_BIT != 0
    }
    /// The same allocated block, marked as a direct object (no slot).
    #[inline]
    pub(crate) const fn direct(self) -> Self {
        Header(self.0 | DIRECT_BIT)
    }
    /// Whether this allocated block is a direct object (no slot).
    #[inline]
    pub(crate) const fn is_direct(self) -> bool {
        self.0 & DIRECT_BIT != 0
    }
    /// The object's length in bytes (allocated blocks; 0 in free ones).
    #[inline]
    pub(crate) const fn len(self) -> u32 {
        self.0 >> LEN_SHIFT & LEN_MASK
    }
    /// Whether the physically previous block is free (and has a footer).
    #[inline]
    pub(crate) const fn prev_free(self) -> bool {
        self.0 & PREV_FREE_BIT != 0
    }
    #[inline]
    pub(crate) const fn with_prev_free(self, prev_free: bool) -> Self {
        Header(if prev_free { self.0 | PREV_FREE_BIT } else { self.0 & !PREV_FREE_BIT })
    }
    /// The same block marked free (flag only: no links or footer are written), its length
    /// cleared.
    #[inline]
    pub(crate) const fn marked_free(self) -> Self {
        Header(self.0 & !(LEN_MASK << LEN_SHIFT | DIRECT_BIT) | FREE_BIT)
    }
    /// Bit 29, which the pool always leaves zero.
    pub(crate) const fn reserved_bits(self) -> u32 {
        self.0 & !(SIZE_MASK | LEN_MASK << LEN_SHIFT | DIRECT_BIT | PREV_FREE_BIT | FREE_BIT)
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

/// Byte offset of the footer of the block at byte `at` of `size` units: its last 4 bytes.
#[inline(always)]
pub(crate) const fn footer_at(at: usize, size: u32) -> usize {
    // Wrapping: a header read from a chunk whose bytes changed under the pool (a source's
    // chunk may be any safe `DerefMut`) may say 0 units; the offset is masked when used.
    (at + size as usize * UNIT).wrapping_sub(HEADER)
}

/// Writes the header and footer of a free block of `size` units at byte `at` of `buf`
/// (its links are the caller's).
#[inline(always)]
pub(crate) fn write_free_block(buf: &mut [u8], at: usize, size: u32) {
    write_u32(buf, at, Header::free(size).bits());
    write_u32(buf, footer_at(at, size), size);
}

/// Reads the little-endian u32 at byte `at` of a chunk.
///
/// `at` is masked to `buf.len() - 4`, which keeps the access inside `buf` whatever `at` is
/// and changes no offset the pool uses: chunks are a power of two long and every field
/// starts at a multiple of 4 before the chunk's last 4 bytes, so its bits lie within the
/// mask. This replaces two compares and a branch per access (an overflow and a range
/// check) with one `and`; the hot paths make ~20 such accesses per alloc+free pair.
#[inline(always)]
pub(crate) fn read_u32(buf: &[u8], at: usize) -> u32 {
    let mask = word_mask(buf.len());
    debug_assert_eq!(at & mask, at, "field at {at} outside a chunk of {} bytes", buf.len());
    let at = at & mask;
    // SAFETY: `at <= mask` (an `and` never sets bits absent from `mask`) and
    // `mask == buf.len() - 4` (`word_mask` checked `buf.len() >= 4`), so the four bytes
    // `at..at + 4` lie inside `buf`; `read_unaligned` has no alignment requirement and any
    // four initialised bytes are a valid u32.
    let word = unsafe { buf.as_ptr().add(at).cast::<u32>().read_unaligned() };
    u32::from_le(word)
}

/// Writes `value` little-endian at byte `at` of a chunk (`at` masked as in [`read_u32`]).
#[inline(always)]
pub(crate) fn write_u32(buf: &mut [u8], at: usize, value: u32) {
    let mask = word_mask(buf.len());
    debug_assert_eq!(at & mask, at, "field at {at} outside a chunk of {} bytes", buf.len());
    let at = at & mask;
    // SAFETY: as in `read_u32`, `at..at + 4` lies inside `buf`, which we borrow mutably, so
    // nothing else reads or writes those bytes meanwhile; `write_unaligned` needs no alignment.
    unsafe { buf.as_mut_ptr().add(at).cast::<u32>().write_unaligned(value.to_le()) }
}

/// The mask keeping a 4-byte access inside a buffer of `len` bytes: `len - 4`.
///
/// # Panics
///
/// If `len < 4`, which no chunk is (the pool refuses chunks of any length but its chunk
/// size, at least 4096).
#[inline(always)]
fn word_mask(len: usize) -> usize {
    match len.checked_sub(4) {
        Some(mask) => mask,
        None => panic!("a chunk shorter than a word"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_fields_round_trip() {
        for size in [2, 513, 8192, SIZE_MASK] {
            for (h, free, len) in
                [(Header::allocated(size, 4096), false, 4096), (Header::free(size), true, 0)]
            {
                assert_eq!((h.size(), h.is_free(), h.prev_free(), h.len()), (size, free, false, len));
                assert_eq!(h.reserved_bits(), 0);
                assert_eq!(Header::from_bits(h.bits()), h);
                let h2 = h.with_prev_free(true);
                assert_eq!((h2.size(), h2.is_free(), h2.prev_free()), (size, free, true));
                assert_eq!(h2.with_prev_free(false), h);
                let h3 = h2.marked_free();
                assert_eq!((h3.size(), h3.is_free(), h3.prev_free(), h3.len()), (size, true, true, 0));
            }
        }
        assert_eq!((Header::EDGE.is_free(), Header::EDGE.prev_free()), (false, false));
    }

    #[test]
    fn setting_a_flag_twice_keeps_it_set() {
        let h = Header::allocated(7, 40);
        assert_eq!(h.direct().direct(), h.direct());
        assert!(h.direct().is_direct() && !h.is_direct());
        let p = h.with_prev_free(true);
        assert_eq!(p.with_prev_free(true), p);
        assert_eq!(Header::free(3).marked_free(), Header::free(3));
    }

    #[test]
    fn reserved_bit_29_is_reported() {
        assert_eq!(Header::from_bits(1 << 29).reserved_bits(), 1 << 29);
        let every_field = Header::allocated(SIZE_MASK, LEN_MASK).direct().with_prev_free(true);
        assert_eq!(every_field.reserved_bits(), 0);
        assert_eq!(Header::from_bits(every_field.bits() | 1 << 29).reserved_bits(), 1 << 29);
    }

    #[test]
    fn a_free_block_ends_with_its_size() {
        let mut buf = [0xEEu8; 32];
        write_free_block(&mut buf, 8, 3);
        assert_eq!(Header::from_bits(read_u32(&buf, 8)), Header::free(3));
        assert_eq!(footer_at(8, 3), 28);
        assert_eq!(read_u32(&buf, 28), 3);
        assert_eq!(buf[12..28], [0xEE; 16], "links and the rest are the caller's");
    }

    #[test]
    fn words_read_and_write_little_endian_in_place() {
        let mut buf = [0u8; 16];
        write_u32(&mut buf, 4, 0x0403_0201);
        write_u32(&mut buf, 12, 0xDDCC_BBAA);
        assert_eq!(buf, [0, 0, 0, 0, 1, 2, 3, 4, 0, 0, 0, 0, 0xAA, 0xBB, 0xCC, 0xDD]);
        assert_eq!((read_u32(&buf, 4), read_u32(&buf, 12), read_u32(&buf, 0)), (0x0403_0201, 0xDDCC_BBAA, 0));
    }

    #[test]
    #[cfg_attr(debug_assertions, ignore = "debug builds assert on such offsets instead")]
    fn words_outside_the_buffer_stay_inside_it() {
        // Offsets the pool never uses are folded into the buffer rather than reaching past it.
        let mut buf = [7u8; 8];
        write_u32(&mut buf, usize::MAX, 0);
        assert_eq!(buf, [7, 7, 7, 7, 0, 0, 0, 0]);
        assert_eq!(read_u32(&buf, 1 << 40), 0x0707_0707);
        assert_eq!(read_u32(&buf, 5), 0);
    }

    #[test]
    #[should_panic(expected = "shorter than a word")]
    fn words_refuse_buffers_shorter_than_a_word() {
        read_u32(&[0u8; 3], 0);
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
