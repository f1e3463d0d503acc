//! The LZO1X bitstream as constants: instruction limits, markers and the LZO-RLE token.
//!
//! See `SPEC.md` (section 5, `lzokit`) for the byte-by-byte table these numbers come from.

/// Longest match an M2 instruction (`01LDDDSS H` / `1LLDDDSS H`) encodes.
pub(crate) const M2_MAX_LEN: usize = 8;
/// Farthest distance an M2 instruction reaches.
pub(crate) const M2_MAX_OFFSET: usize = 0x0800;
/// Farthest distance an M3 instruction (`001LLLLL` LE16) reaches.
pub(crate) const M3_MAX_OFFSET: usize = 0x4000;
/// Longest M3 length that fits in the opcode without an extension.
pub(crate) const M3_MAX_LEN: usize = 33;
/// Longest M4 length that fits in the opcode without an extension.
pub(crate) const M4_MAX_LEN: usize = 9;
/// Farthest distance an M4 instruction reaches in a version-0 (plain LZO1X) stream.
pub(crate) const M4_MAX_OFFSET_V0: usize = 0xBFFF;
/// Farthest distance an M4 instruction reaches in a version-1 (LZO-RLE) stream: 0xBFFF is
/// the zero-run token's distance field.
pub(crate) const M4_MAX_OFFSET_V1: usize = 0xBFFE;

/// Opcode bits of an M3 instruction.
pub(crate) const M3_MARKER: u8 = 0x20;
/// Opcode bits of an M4 instruction.
pub(crate) const M4_MARKER: u8 = 0x10;

/// The end-of-stream instruction: an M4 with distance 16384.
pub(crate) const END_MARKER: [u8; 3] = [M4_MARKER | 1, 0, 0];

/// First byte of an LZO-RLE stream's bitstream-version header.
pub(crate) const VERSION_HEADER: u8 = 17;
/// The bitstream version LZO-RLE writes (1: zero-run tokens enabled).
pub(crate) const RLE_VERSION: u8 = 1;

/// Shortest zero run the LZO-RLE token encodes.
pub(crate) const MIN_ZERO_RUN: usize = 4;
/// Longest zero run one LZO-RLE token encodes (`R` is 11 bits).
pub(crate) const MAX_ZERO_RUN: usize = MIN_ZERO_RUN + 2047;

/// The first M4 length that collides with the zero-run token in LZO-RLE (see
/// [`rle_ambiguous`]).
pub(crate) const RLE_AMBIGUOUS_LEN: core::ops::RangeInclusive<usize> = 261..=264;

/// Whether an M4 match of `len` bytes with M4 offset field `m_off` (distance - 0x4000)
/// would be written with the same first three bytes as a zero-run token, so a version-1
/// decoder would misread it. The compressor shortens such matches to 260 bytes.
#[inline]
pub(crate) fn rle_ambiguous(len: usize, m_off: usize) -> bool {
    (m_off & 0x403F) == 0x403F && RLE_AMBIGUOUS_LEN.contains(&len)
}

/// The largest stream [`KernelCompressor`](crate::KernelCompressor) writes for `n` input bytes, in
/// either format (plain LZO1X and LZO-RLE): `n + n/16 + 64 + 3 + 2` bytes, the bound the
/// Linux kernel uses (`lzo1x_worst_compress`). A budget of this size never fails.
///
/// Saturates at `usize::MAX` instead of overflowing.
///
/// ```
/// assert_eq!(lzokit::max_compressed_len(4096), 4421);
/// assert_eq!(lzokit::max_compressed_len(0), 69);
/// ```
pub const fn max_compressed_len(n: usize) -> usize {
    n.saturating_add(n / 16).saturating_add(64 + 3 + 2)
}

/// Length and distance of a `0000DDSS H` instruction (opcode `t` < 16, second byte `h`):
/// the 3-byte match that may follow a literal run (`state` 4), else M1, a 2-byte match
/// after 1..3 literals.
#[inline(always)]
pub(crate) fn short_match(t: usize, h: usize, state: usize) -> (usize, usize) {
    if state == 4 { (3, (t >> 2) + (h << 2) + 2049) } else { (2, (t >> 2) + (h << 2) + 1) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn worst_case_saturates() {
        assert_eq!(max_compressed_len(usize::MAX), usize::MAX);
        assert_eq!(max_compressed_len(16), 16 + 1 + 69);
    }

    #[test]
    fn rle_ambiguity_rule() {
        assert!(rle_ambiguous(261, 0x403F));
        assert!(rle_ambiguous(264, 0x7FFF));
        assert!(!rle_ambiguous(260, 0x403F));
        assert!(!rle_ambiguous(265, 0x403F));
        assert!(!rle_ambiguous(262, 0x003F), "H bit clear: opcode is not 0x18..0x1F");
        assert!(!rle_ambiguous(262, 0x403E), "S bits cannot make 0xFF from 0xF8");
    }
}
