//! NEON kernels: the compress kernel, 4 words per step (the SSE4.1 algorithm with `tbl` for
//! the left-pack), and the decoder: validation's unpacking loops 4 and 8 stream words per
//! step, then the two stages of the SIMD decoders ([`expand`]), the first 16 words per step
//! with `tbl`.

use core::arch::aarch64::*;

use core::ops::Range;

use crate::compress::Counts;
use crate::decompress::{KEEP, ScalarUnpack, Unpack, validate_page};
use crate::format::LOW_MASK;
use crate::pipeline::{Dict, KernelResult};
use crate::scratch::Scratch;
use pagecodec::DecompressError;

use super::super::lanes::Lanes;
use super::super::{LEFT_PACK_4, LEFT_PACK_BYTES};
use super::super::{classify, expand};

#[inline]
#[target_feature(enable = "neon")]
fn left_pack(v: uint32x4_t, mask: u32) -> uint32x4_t {
    // SAFETY: mask < 16 indexes the table; a 16-byte load of a [u8; 16].
    let control = unsafe { vld1q_u8(LEFT_PACK_4[(mask & 15) as usize].as_ptr()) };
    vreinterpretq_u32_u8(vqtbl1q_u8(vreinterpretq_u8_u32(v), control))
}

/// One bit per lane of a compare result.
#[inline]
#[target_feature(enable = "neon")]
fn mask(v: uint32x4_t) -> u32 {
    let bits: [u32; 4] = [1, 2, 4, 8];
    // SAFETY: a 16-byte load of a [u32; 4].
    let bits = unsafe { vld1q_u32(bits.as_ptr()) };
    vaddvq_u32(vandq_u32(v, bits))
}

/// Four words in a NEON register.
#[derive(Clone, Copy)]
pub(crate) struct Neon(uint32x4_t);

impl Lanes for Neon {
    const LANES: usize = 4;

    #[inline(always)]
    unsafe fn load(src: *const u8) -> Self {
        // SAFETY: the caller guarantees 16 readable bytes and NEON (little-endian host:
        // the lanes are the little-endian words).
        Neon(unsafe { vld1q_u32(src.cast()) })
    }

    #[inline(always)]
    unsafe fn zero_lanes(self) -> u32 {
        // SAFETY: the caller guarantees NEON.
        unsafe { mask(vceqq_u32(self.0, vdupq_n_u32(0))) }
    }

    #[inline(always)]
    unsafe fn equal_lanes(self, other: Self) -> u32 {
        // SAFETY: the caller guarantees NEON.
        unsafe { mask(vceqq_u32(self.0, other.0)) }
    }

    #[inline(always)]
    unsafe fn same_upper_lanes(self, other: Self) -> u32 {
        // SAFETY: the caller guarantees NEON.
        unsafe { mask(vceqq_u32(vshrq_n_u32::<10>(veorq_u32(self.0, other.0)), vdupq_n_u32(0))) }
    }

    #[inline(always)]
    unsafe fn store_packed(self, mask: u32, dst: *mut u32) {
        // SAFETY: the caller guarantees 4 writable words and NEON.
        unsafe { vst1q_u32(dst, left_pack(self.0, mask)) }
    }

    #[inline(always)]
    unsafe fn store_packed_lows(self, mask: u32, dst: *mut u16) {
        // SAFETY: the caller guarantees 4 writable items and NEON.
        unsafe { vst1_u16(dst, vmovn_u32(left_pack(vandq_u32(self.0, vdupq_n_u32(LOW_MASK)), mask))) }
    }

    #[inline(always)]
    unsafe fn store_packed_bytes(src: *const u8, mask: u32, dst: *mut u8) {
        // SAFETY: the caller guarantees 16 readable and 4 (of 16) writable bytes and NEON;
        // mask < 16 indexes the table, a 16-byte load of a [u8; 16].
        unsafe {
            let control = vld1q_u8(LEFT_PACK_BYTES[(mask & 15) as usize].as_ptr());
            let packed = vqtbl1q_u8(vld1q_u8(src), control);
            dst.cast::<u32>().write_unaligned(vgetq_lane_u32::<0>(vreinterpretq_u32_u8(packed)));
        }
    }
}

/// The NEON instance of [`classify::classify`], 4 lanes at a time.
///
/// # Safety
///
/// The CPU must support NEON (always true on aarch64 with the `neon` target feature).
#[target_feature(enable = "neon")]
pub(crate) unsafe fn classify<const W: usize>(
    page: &[u8],
    s: &mut Scratch<W>,
    dict: &mut Dict,
    early_abort: bool,
    groups: Range<usize>,
    counts: Counts,
) -> KernelResult {
    // SAFETY: NEON is enabled here, all that `Neon` uses.
    unsafe { classify::classify::<Neon, W, 0>(page, s, dict, early_abort, groups, counts) }
}

/// `tbl` controls that spread byte `4j + l / 4` of a vector to byte `l` (lane `l / 4` of
/// output vector `j` reads the byte of word `4j + l / 4`), one per output vector `j`.
static SPREAD: [[u8; 16]; 4] = {
    let mut table = [[0u8; 16]; 4];
    let mut j = 0;
    while j < 4 {
        let mut l = 0;
        while l < 16 {
            table[j][l] = (4 * j + l / 4) as u8;
            l += 1;
        }
        j += 1;
    }
    table
};

/// Stage 1 of the decoder ([`expand`]'s module documentation), one tag word (16 words)
/// per step; [`expand::chain`] is stage 2.
///
/// Per step the 16 tags become one vector of bytes, and one prefix sum over it gives each
/// word its rank among the group's hits (low nibble) and misses (high nibble), a second its
/// rank among the partial hits: ranks below 16 fit a nibble. `tbl` then reads each word's
/// index or miss slot (its route), miss and low bits from the streams at those ranks, with
/// control 0xFF, which gives 0, for the words that take nothing from a stream. A 4-lane
/// version over [`expand::Expand`], as AVX2's, took 15 instructions per word here, with
/// three bit gathers and three population counts per 4 words; this step takes about 8.
///
/// # Safety
///
/// NEON is present; `s` holds what a successful `validate` of the stream whose tags area is
/// `tags` unpacked (so the counters never pass the unpacked counts).
#[inline(always)]
unsafe fn expand_streams<const W: usize>(tags: &[u8], misses: usize, s: &mut Scratch<W>, page: &mut [u8]) {
    assert!(page.len() == 4 * W && W % 16 == 0 && tags.len() == W / 4 && misses <= W);
    for (slot, &w) in s.miss_slots.iter_mut().zip(&s.misses[..misses]) {
        *slot = crate::format::slot(w) as u8;
    }
    let (miss_words, miss_slots, lows, indices) =
        (s.misses.as_ptr(), s.miss_slots.as_ptr(), s.lows.as_ptr(), s.indices.as_ptr());
    let (routes, keeps) = (s.word_routes.as_mut_ptr(), s.keeps.as_mut_ptr().cast::<u8>());
    let page = page.as_mut_ptr();
    let (mut mi, mut pi, mut hi) = (0usize, 0usize, 0usize);
    // SAFETY: NEON is present (the caller's contract). Reads: every counter is at most its
    // validated count, itself at most W, and each scratch array has W + SLACK readable items
    // (SLACK = 16), so the 16-item loads at the counters stay inside them; the items a load
    // takes past the count (stale ones of earlier pages) reach only lanes that `tbl` zeroes,
    // since a word's rank is below its group's count. Writes: group `g` writes words
    // 16g..16g + 16 < W of the page, the routes and the keep masks. Tables: 16-byte loads of
    // [u8; 16] and [u32; 4] rows.
    unsafe {
        let zero = vdupq_n_u8(0);
        let one = vdupq_n_u8(1);
        // Lane 4r + j takes byte j of the tag word, whose cell r (bits 2r, 2r + 1) is the
        // tag of word 4r + j (`format::sequential_tags`).
        let cell_shifts = vld1q_s8([0, 0, 0, 0, -2, -2, -2, -2, -4, -4, -4, -4, -6, -6, -6, -6].as_ptr());
        let byte_in_word = vld1q_u8([0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3].as_ptr());
        let low_high_bytes =
            vld1q_u8([0, 1, 255, 255, 0, 1, 255, 255, 0, 1, 255, 255, 0, 1, 255, 255].as_ptr());
        let keep_bytes = vreinterpretq_u8_u32(vld1q_u32(KEEP.as_ptr()));
        let dump = vdupq_n_u8(super::super::expand::ZERO_ROUTE);
        // Exclusive prefix sum of 16 bytes: lane L gets the sum of lanes 0..L.
        let ranks = |x: uint8x16_t| {
            let x = vextq_u8::<15>(zero, x);
            let x = vaddq_u8(x, vextq_u8::<15>(zero, x));
            let x = vaddq_u8(x, vextq_u8::<14>(zero, x));
            let x = vaddq_u8(x, vextq_u8::<12>(zero, x));
            vaddq_u8(x, vextq_u8::<8>(zero, x))
        };
        for (g, tag_word) in tags.chunks_exact(4).enumerate() {
            let raw = crate::format::le32(tag_word);
            let (route_dst, keep_dst, word_dst) = (routes.add(16 * g), keeps.add(64 * g), page.add(64 * g));
            if raw == 0 {
                // 16 zero words (common in real memory): no stream items, the dump entry.
                vst1q_u8(route_dst, dump);
                vst1q_u8_x4(keep_dst, uint8x16x4_t(zero, zero, zero, zero));
                vst1q_u8_x4(word_dst, uint8x16x4_t(zero, zero, zero, zero));
                continue;
            }
            let tags = vandq_u8(vshlq_u8(vreinterpretq_u8_u32(vdupq_n_u32(raw)), cell_shifts), vdupq_n_u8(3));
            // PARTIAL = 1, MISS = 2, EXACT = 3; the flags are 0 or 1 per word.
            let hit = vandq_u8(tags, one);
            let high = vshrq_n_u8::<1>(tags);
            let miss = vbicq_u8(high, hit);
            let partial = vbicq_u8(hit, high);
            let hit_miss_ranks = ranks(vsliq_n_u8::<4>(hit, miss));
            let partial_ranks = ranks(partial);
            // Each word's route: its index, its miss's slot, or the dump entry.
            let (hit_lanes, miss_lanes) = (vtstq_u8(hit, hit), vtstq_u8(miss, miss));
            let hit_control = vornq_u8(vandq_u8(hit_miss_ranks, vdupq_n_u8(15)), hit_lanes);
            let miss_ranks = vshrq_n_u8::<4>(hit_miss_ranks);
            let slot_control = vornq_u8(miss_ranks, miss_lanes);
            let route = vorrq_u8(
                vorrq_u8(
                    vqtbl1q_u8(vld1q_u8(indices.add(hi)), hit_control),
                    vqtbl1q_u8(vld1q_u8(miss_slots.add(mi)), slot_control),
                ),
                vandq_u8(vceqzq_u8(tags), dump),
            );
            vst1q_u8(route_dst, route);
            // Each word's value: its miss (bytes 4 * rank ..), its low bits (2 * rank ..),
            // or 0; and its keep mask (bytes 4 * tag .. of KEEP).
            let miss_control = vornq_u8(vshlq_n_u8::<2>(miss_ranks), miss_lanes);
            let low_control = vornq_u8(vshlq_n_u8::<1>(partial_ranks), vtstq_u8(partial, partial));
            let keep_control = vshlq_n_u8::<2>(tags);
            let stream_misses = vld1q_u8_x4(miss_words.cast::<u8>().add(4 * mi));
            let stream_lows = vld1q_u8_x2(lows.cast::<u8>().add(2 * pi));
            let quarter = |j: usize| {
                let spread = vld1q_u8(SPREAD[j].as_ptr());
                let missed =
                    vqtbl4q_u8(stream_misses, vorrq_u8(vqtbl1q_u8(miss_control, spread), byte_in_word));
                // Bytes 2 * rank and 2 * rank + 1, then 0xFF twice (a zero high half).
                let low = vqtbl2q_u8(stream_lows, vorrq_u8(vqtbl1q_u8(low_control, spread), low_high_bytes));
                let keep = vqtbl1q_u8(keep_bytes, vorrq_u8(vqtbl1q_u8(keep_control, spread), byte_in_word));
                (vorrq_u8(missed, low), keep)
            };
            let (v0, k0) = quarter(0);
            let (v1, k1) = quarter(1);
            let (v2, k2) = quarter(2);
            let (v3, k3) = quarter(3);
            vst1q_u8_x4(word_dst, uint8x16x4_t(v0, v1, v2, v3));
            vst1q_u8_x4(keep_dst, uint8x16x4_t(k0, k1, k2, k3));
            mi += usize::from(vaddvq_u8(miss));
            pi += usize::from(vaddvq_u8(partial));
            hi += usize::from(vaddvq_u8(hit));
        }
    }
}

/// Validation's unpacking loops: indices 4 stream words (32 indices) per step, low bits 8
/// words (24 values) per step with `st3`, which interleaves the three values of each word
/// as it stores; the scalar loops finish the last words.
impl Unpack for Neon {
    #[inline(always)]
    unsafe fn indices(area: &[u8], out: &mut [u8]) {
        let steps = area.len() / 16;
        // SAFETY: the caller guarantees NEON. Each step reads the 16 bytes of `src` and
        // writes the 32 of `dst`; the caller's lengths leave the scalar loop whole words and
        // twice their length of output.
        unsafe {
            let nibble = vdupq_n_u8(0x0F);
            for (dst, src) in out.chunks_exact_mut(32).zip(area.chunks_exact(16)) {
                let words = vld1q_u8(src.as_ptr());
                // Indices 0-3 of a word are its bytes' low nibbles, 4-7 the high ones:
                // `st2` on 32-bit elements writes each word's low then high nibbles.
                let low = vreinterpretq_u32_u8(vandq_u8(words, nibble));
                let high = vreinterpretq_u32_u8(vshrq_n_u8::<4>(words));
                vst2q_u32(dst.as_mut_ptr().cast(), uint32x4x2_t(low, high));
            }
            ScalarUnpack::indices(&area[16 * steps..], &mut out[32 * steps..]);
        }
    }

    #[inline(always)]
    unsafe fn lows(area: &[u8], out: &mut [u16]) -> u32 {
        let steps = area.len() / 32;
        // SAFETY: the caller guarantees NEON. Each step reads the 32 bytes of `src` and
        // writes the 24 items (48 bytes) of `dst`; the caller's lengths leave the scalar
        // loop whole words and 3 / 4 of their length of output.
        unsafe {
            let low_mask = vdupq_n_u32(LOW_MASK);
            let mut all_words = vdupq_n_u32(0);
            for (dst, src) in out.chunks_exact_mut(24).zip(area.chunks_exact(32)) {
                let first = vld1q_u32(src.as_ptr().cast());
                let second = vld1q_u32(src.as_ptr().add(16).cast());
                all_words = vorrq_u32(all_words, vorrq_u32(first, second));
                // The value at bit `shift` of the 8 words, narrowed to 16 bits.
                let values = |first: uint32x4_t, second: uint32x4_t| {
                    vmovn_high_u32(vmovn_u32(vandq_u32(first, low_mask)), vandq_u32(second, low_mask))
                };
                let lows = uint16x8x3_t(
                    values(first, second),
                    values(vshrq_n_u32::<10>(first), vshrq_n_u32::<10>(second)),
                    values(vshrq_n_u32::<20>(first), vshrq_n_u32::<20>(second)),
                );
                vst3q_u16(dst.as_mut_ptr(), lows);
            }
            let pair = vorr_u32(vget_low_u32(all_words), vget_high_u32(all_words));
            let word = vget_lane_u32::<0>(pair) | vget_lane_u32::<1>(pair);
            word | ScalarUnpack::lows(&area[32 * steps..], &mut out[24 * steps..])
        }
    }
}

/// The NEON decompressor: validation with the [`Unpack`] loops above, then the decoder's
/// two stages ([`expand_streams`], [`expand::chain`]).
///
/// # Safety
///
/// The CPU must support NEON (always true on aarch64 with the `neon` target feature).
#[target_feature(enable = "neon")]
pub(crate) unsafe fn decompress<const W: usize>(
    input: &[u8],
    s: &mut Scratch<W>,
    preload: u32,
    page: &mut [u8],
) -> Result<(), DecompressError> {
    // SAFETY: NEON is enabled here, all that `Neon` and `expand_streams` use;
    // `expand_streams` gets `v` and `s` from the validation of this stream.
    unsafe {
        let Some(v) = validate_page::<Neon, W>(input, s, page)? else {
            return Ok(());
        };
        expand_streams::<W>(v.tags, v.misses, s, page);
        expand::chain::<W>(v.zeros, s, preload, page);
    }
    Ok(())
}
