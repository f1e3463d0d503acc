//! The XNU WKdm stream layout: constants, the hash table and small pure pack/unpack helpers.
//!
//! Everything here is shared by the compressor, the decompressor and every SIMD path, so
//! the format is written down exactly once.

/// Tag of a zero word (nothing else is emitted).
pub(crate) const ZERO: u8 = 0;
/// Tag of a word whose upper 22 bits match its dictionary entry (index + 10 low bits).
pub(crate) const PARTIAL: u8 = 1;
/// Tag of a word not found in the dictionary (the full word is emitted).
pub(crate) const MISS: u8 = 2;
/// Tag of a word equal to its dictionary entry (index only).
pub(crate) const EXACT: u8 = 3;

/// Words in the stream header.
pub(crate) const HEADER_WORDS: usize = 3;

/// Word 0 of the sparse ("mostly zero value") form.
pub(crate) const SPARSE_MAGIC: u32 = 0x4321;

/// Bytes per sparse entry: u32 value + u16 byte offset.
pub(crate) const SPARSE_ENTRY_BYTES: usize = 6;

/// Bits of a PARTIAL word carried in the low-bits area.
pub(crate) const LOW_BITS: u32 = 10;
/// Mask of those bits.
pub(crate) const LOW_MASK: u32 = (1 << LOW_BITS) - 1;

/// Words classified before XNU's early-abort check (416 bytes).
pub(crate) const EARLY_ABORT_WORDS: usize = 104;
/// XNU gives up when its size estimate after [`EARLY_ABORT_WORDS`] words exceeds this.
pub(crate) const EARLY_ABORT_LIMIT: usize = 426;

/// XNU's 256-entry hash table of dictionary *byte* offsets (row r holds 16r..16r+15).
/// It is not an arithmetic hash: the exact table is part of the format.
#[rustfmt::skip]
pub(crate) const HASH: [u8; 256] = [
     0, 52,  8, 56, 16, 12, 28, 20,  4, 36, 48, 24, 44, 40, 32, 60,
     8, 12, 28, 20,  4, 60, 16, 36, 24, 48, 44, 32, 52, 56, 40, 12,
     8, 48, 16, 52, 60, 28, 56, 32, 20, 24, 36, 40, 44,  4,  8, 40,
    60, 32, 20, 44,  4, 36, 52, 24, 16, 56, 48, 12, 28, 16,  8, 40,
    36, 28, 32, 12,  4, 44, 52, 20, 24, 48, 60, 56, 40, 48,  8, 32,
    28, 36,  4, 44, 20, 56, 60, 24, 52, 16, 12, 12,  4, 48, 20,  8,
    52, 16, 60, 24, 36, 44, 28, 56, 40, 32, 36, 20, 24, 60, 40, 44,
    52, 16, 32,  4, 48,  8, 28, 56, 12, 28, 32, 40, 52, 36, 16, 20,
    48,  8,  4, 60, 24, 56, 44, 12,  8, 36, 24, 28, 16, 60, 20, 56,
    32, 40, 48, 12,  4, 44, 52, 44, 40, 12, 56,  8, 36, 24, 60, 28,
    48,  4, 32, 20, 16, 52, 60, 12, 24, 36,  8,  4, 16, 56, 48, 44,
    40, 52, 32, 20, 28, 32, 12, 36, 28, 24, 56, 40, 16, 52, 44,  4,
    20, 60,  8, 48, 48, 52, 12, 20, 32, 44, 36, 28,  4, 40, 24,  8,
    56, 60, 16, 36, 32,  8, 40,  4, 52, 24, 44, 20, 12, 28, 48, 56,
    16, 60,  4, 52, 60, 48, 20, 16, 56, 44, 24,  8, 40, 12, 32, 28,
    36, 24, 32, 12,  4, 20, 16, 60, 36, 28,  8, 52, 40, 48, 44, 56,
];

/// [`HASH`] divided by 4: the dictionary slot (0..16) of each hash value.
pub(crate) const SLOT: [u8; 256] = {
    let mut slots = [0u8; 256];
    let mut i = 0;
    while i < 256 {
        slots[i] = HASH[i] / 4;
        i += 1;
    }
    slots
};

/// The dictionary slot of a word: `HASH[(w >> 10) & 0xFF] / 4`.
#[inline(always)]
pub(crate) fn slot(word: u32) -> usize {
    SLOT[hash_index(word)] as usize
}

/// The index into [`SLOT`] of `word`'s slot: its hash byte, bits 10-17.
#[inline(always)]
pub(crate) fn hash_index(word: u32) -> usize {
    ((word >> LOW_BITS) & 0xFF) as usize
}

/// The byte layout of one page size, in words of the page (`WORDS` = 1024 for 4 KiB,
/// 4096 for 16 KiB).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Layout {
    /// 32-bit words in the page.
    pub(crate) words: usize,
}

impl Layout {
    /// Bytes in the tags area (2 bits per word).
    pub(crate) const fn tag_bytes(self) -> usize {
        self.words / 4
    }

    /// Word offset of the first miss: header + tags (67 for 4 KiB, 259 for 16 KiB).
    pub(crate) const fn misses_start_word(self) -> usize {
        HEADER_WORDS + self.words / 16
    }

    /// Byte offset of the first miss (268 for 4 KiB, 1036 for 16 KiB).
    pub(crate) const fn misses_start(self) -> usize {
        self.misses_start_word() * 4
    }

    /// Normal-form stream length in bytes for `m` misses, `h` indices and `p` low values.
    pub(crate) const fn normal_len(self, m: usize, h: usize, p: usize) -> usize {
        self.misses_start() + 4 * m + 4 * h.div_ceil(8) + 4 * p.div_ceil(3)
    }

    /// The unbudgeted worst case: every word but one a miss, the last a partial
    /// (4368 bytes for 4 KiB). An all-miss page is never larger, and an all-partial page
    /// is much smaller.
    pub(crate) const fn max_normal_len(self) -> usize {
        self.normal_len(self.words - 1, 1, 1)
    }

    /// XNU's size estimate for the normal form, in bytes:
    /// `floor(2p * 1365 / 2048) + 4m + floor(h / 2) + header`.
    pub(crate) const fn normal_estimate(self, m: usize, h: usize, p: usize) -> usize {
        (2 * p * 1365) / 2048 + 4 * m + h / 2 + self.misses_start()
    }

    /// Length of the sparse form holding `nonzero` words.
    pub(crate) const fn sparse_len(nonzero: usize) -> usize {
        4 + SPARSE_ENTRY_BYTES * nonzero
    }
}

/// Packs the 2-bit tags of 16 consecutive words into one stream word: tag `k` lives in
/// byte `k % 4` at bit shift `2 * (k / 4)`. Each tag must be < 4.
#[inline(always)]
pub(crate) fn pack_tags(tags: &[u8; 16]) -> u32 {
    let quad = |j: usize| le32(&tags[4 * j..]);
    quad(0) | (quad(1) << 2) | (quad(2) << 4) | (quad(3) << 6)
}

/// The tags of 16 words given as two bit masks (bit `k` of `low` / `high` = bit 0 / bit 1
/// of tag `k`) in word order, tag `k` at bits `2k, 2k + 1`: [`sequential_tags`] of the
/// stream word that [`pack_tags`] makes of them. The SIMD paths get these masks from vector
/// compares.
#[cfg_attr(not(any(target_arch = "x86_64", target_arch = "aarch64")), allow(dead_code))]
#[inline(always)]
pub(crate) fn sequential_tag_word(low: u32, high: u32) -> u32 {
    // Spread each 16-bit mask to the even bits.
    let spread = |x: u32| {
        let x = (x | (x << 8)) & 0x00FF_00FF;
        let x = (x | (x << 4)) & 0x0F0F_0F0F;
        let x = (x | (x << 2)) & 0x3333_3333;
        (x | (x << 1)) & 0x5555_5555
    };
    spread(low & 0xFFFF) | (spread(high & 0xFFFF) << 1)
}

/// The tags of a stream tag word in word order: tag `k` at bits `2k, 2k + 1` (the 4x4
/// transpose of 2-bit cells is its own inverse).
#[inline(always)]
pub(crate) fn sequential_tags(word: u32) -> u32 {
    transpose_cells(word)
}

/// [`sequential_tags`] of each 4-byte tag word of `tags` (a whole number of them), in
/// place: word order to the stream's or back.
#[cfg_attr(not(any(target_arch = "x86_64", target_arch = "aarch64")), allow(dead_code))]
#[inline(always)]
pub(crate) fn sequential_tags_in_place(tags: &mut [u8]) {
    for word in tags.chunks_exact_mut(4) {
        word.copy_from_slice(&sequential_tags(le32(word)).to_le_bytes());
    }
}

/// Transposes the 4x4 matrix of 2-bit cells of `x` (cell (j, r) at bit 8j + 2r moves to
/// 8r + 2j) with two delta swaps.
#[inline(always)]
fn transpose_cells(x: u32) -> u32 {
    let t = (x ^ (x >> 12)) & 0x0000_F0F0;
    let x = x ^ t ^ (t << 12);
    let t = (x ^ (x >> 6)) & 0x00CC_00CC;
    x ^ t ^ (t << 6)
}

/// Packs 8 consecutive 4-bit dictionary indices into one stream word: index `k` lives in
/// byte `k % 4`, low nibble for `k < 4`, high nibble otherwise. Each index must be < 16.
#[inline(always)]
pub(crate) fn pack_indices(indices: &[u8; 8]) -> u32 {
    let lo = le32(&indices[..4]);
    let hi = le32(&indices[4..]);
    lo | (hi << 4)
}

/// The inverse of [`pack_indices`]: the 8 indices as the bytes of a little-endian `u64`
/// (indices 0-3 are the low nibbles of the word's bytes, 4-7 the high ones).
#[inline(always)]
pub(crate) fn unpack_indices(word: u32) -> u64 {
    let word = u64::from(word);
    (word & 0x0F0F_0F0F) | ((word & 0xF0F0_F0F0) << 28)
}

/// Packs three 10-bit values into one stream word at bits 0, 10 and 20 (bits 30-31 zero).
#[inline(always)]
pub(crate) fn pack_low_bits(values: [u16; 3]) -> u32 {
    u32::from(values[0]) | (u32::from(values[1]) << 10) | (u32::from(values[2]) << 20)
}

/// The inverse of [`pack_low_bits`] (bits 30-31 are ignored; the decoder checks them).
#[inline(always)]
pub(crate) fn unpack_low_bits(word: u32) -> [u16; 3] {
    [(word & LOW_MASK) as u16, ((word >> 10) & LOW_MASK) as u16, ((word >> 20) & LOW_MASK) as u16]
}

/// Reads the little-endian u32 at the start of `bytes` (which holds at least 4 bytes):
/// one load, unlike `from_le_bytes([b[0], b[1], b[2], b[3]])`, which LLVM may leave as
/// four byte loads.
#[inline(always)]
pub(crate) fn le32(bytes: &[u8]) -> u32 {
    u32::from_le_bytes(*bytes.first_chunk::<4>().expect("at least 4 bytes"))
}

/// Reads little-endian word `i` of `bytes` (caller guarantees `4 * i + 4 <= bytes.len()`).
#[inline(always)]
pub(crate) fn read_word(bytes: &[u8], i: usize) -> u32 {
    le32(&bytes[4 * i..])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_table_rows_and_slots() {
        // Spot checks against the published table (row, column).
        assert_eq!(HASH[1], 52);
        assert_eq!(HASH[16 + 5], 60);
        assert_eq!(HASH[255], 56);
        assert!(HASH.iter().all(|&h| h % 4 == 0 && h < 64));
        assert_eq!(slot(0x1234_5678), 15);
        assert_eq!(slot(5), 0);
        // Every slot is reachable.
        for s in 0..16u8 {
            assert!(SLOT.contains(&s), "slot {s}");
        }
    }

    #[test]
    fn layouts_of_both_page_sizes() {
        let small = Layout { words: 1024 };
        assert_eq!((small.tag_bytes(), small.misses_start()), (256, 268));
        assert_eq!(small.max_normal_len(), 4368);
        let large = Layout { words: 4096 };
        assert_eq!((large.tag_bytes(), large.misses_start()), (1024, 1036));
        assert_eq!(Layout::sparse_len(2), 16);
        assert_eq!(small.normal_estimate(0, 0, 3), 3 + 268);
    }

    #[test]
    fn packers_invert() {
        // Tag 1 alone at k = 5: byte 1, shift 2.
        let mut one = [0u8; 16];
        one[5] = 1;
        assert_eq!(pack_tags(&one), 1 << (8 + 2));
        for seed in 0..64u32 {
            let tags: [u8; 16] = core::array::from_fn(|k| ((seed.wrapping_mul(2654435761) >> k) & 3) as u8);
            let low = (0..16).fold(0, |m, k| m | (u32::from(tags[k] & 1) << k));
            let high = (0..16).fold(0, |m, k| m | (u32::from(tags[k] >> 1) << k));
            let sequential = sequential_tags(pack_tags(&tags));
            assert!((0..16).all(|k| (sequential >> (2 * k)) & 3 == u32::from(tags[k])));
            assert_eq!(sequential_tag_word(low, high), sequential);
            assert_eq!(sequential_tags(sequential), pack_tags(&tags));
        }
        let indices = [1, 2, 3, 4, 5, 6, 7, 15];
        assert_eq!(pack_indices(&indices), 0xF473_6251);
        assert_eq!(unpack_indices(pack_indices(&indices)).to_le_bytes(), indices);
        assert_eq!(pack_low_bits([1, 2, 1023]), 1 | (2 << 10) | (1023 << 20));
        assert_eq!(unpack_low_bits(pack_low_bits([1, 2, 1023])), [1, 2, 1023]);
    }
}
