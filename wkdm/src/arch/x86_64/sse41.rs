//! SSE4.1 + SSSE3 kernels: 4 words per step.

use core::arch::x86_64::*;

use core::ops::Range;

use crate::compress::Counts;
use crate::decompress::Validated;
use crate::format::LOW_MASK;
use crate::pipeline::KernelResult;
use crate::scratch::Scratch;

use super::super::expand::{self, Expand};
use super::super::lanes::Lanes;
use super::super::{EXPAND_BYTES_4, EXPAND_LOWS_4, EXPAND_WORDS_4, LEFT_PACK_4, LEFT_PACK_BYTES, classify};

/// Moves the 32-bit lanes of `v` selected by `mask` (4 bits) to the front.
#[inline]
#[target_feature(enable = "ssse3")]
fn left_pack(v: __m128i, mask: u32) -> __m128i {
    shuffle(v, &LEFT_PACK_4, mask)
}

/// Moves the bytes of `v` selected by `mask` (4 bits) to the front.
#[inline]
#[target_feature(enable = "ssse3")]
fn left_pack_bytes(v: __m128i, mask: u32) -> __m128i {
    shuffle(v, &LEFT_PACK_BYTES, mask)
}

#[inline]
#[target_feature(enable = "sse4.1")]
fn mask(v: __m128i) -> u32 {
    _mm_movemask_ps(_mm_castsi128_ps(v)) as u32
}

/// Four words in an SSE register.
#[derive(Clone, Copy)]
pub(crate) struct Sse41(__m128i);

impl Lanes for Sse41 {
    const LANES: usize = 4;

    #[inline(always)]
    unsafe fn load(src: *const u8) -> Self {
        // SAFETY: the caller guarantees 16 readable bytes and SSE4.1.
        Sse41(unsafe { _mm_loadu_si128(src.cast()) })
    }

    #[inline(always)]
    unsafe fn zero_lanes(self) -> u32 {
        // SAFETY: the caller guarantees SSE4.1.
        unsafe { mask(_mm_cmpeq_epi32(self.0, _mm_setzero_si128())) }
    }

    #[inline(always)]
    unsafe fn equal_lanes(self, other: Self) -> u32 {
        // SAFETY: the caller guarantees SSE4.1.
        unsafe { mask(_mm_cmpeq_epi32(self.0, other.0)) }
    }

    #[inline(always)]
    unsafe fn same_upper_lanes(self, other: Self) -> u32 {
        // SAFETY: the caller guarantees SSE4.1.
        unsafe {
            mask(_mm_cmpeq_epi32(_mm_srli_epi32::<10>(_mm_xor_si128(self.0, other.0)), _mm_setzero_si128()))
        }
    }

    #[inline(always)]
    unsafe fn store_packed(self, mask: u32, dst: *mut u32) {
        // SAFETY: the caller guarantees 4 writable words, SSE4.1 and SSSE3.
        unsafe { _mm_storeu_si128(dst.cast(), left_pack(self.0, mask)) }
    }

    #[inline(always)]
    unsafe fn store_packed_lows(self, mask: u32, dst: *mut u16) {
        // SAFETY: the caller guarantees 4 writable items (8 bytes), SSE4.1 and SSSE3.
        unsafe {
            let packed = left_pack(_mm_and_si128(self.0, _mm_set1_epi32(LOW_MASK as i32)), mask);
            _mm_storel_epi64(dst.cast(), _mm_packus_epi32(packed, packed));
        }
    }

    #[inline(always)]
    unsafe fn store_packed_bytes(src: *const u8, mask: u32, dst: *mut u8) {
        // SAFETY: the caller guarantees 4 readable and 4 writable bytes, SSE4.1 and SSSE3.
        unsafe {
            let bytes = _mm_cvtsi32_si128(src.cast::<i32>().read_unaligned());
            dst.cast::<i32>().write_unaligned(_mm_cvtsi128_si32(left_pack_bytes(bytes, mask)));
        }
    }
}

impl Expand for Sse41 {
    #[inline(always)]
    unsafe fn expand_values(misses: *const u32, miss: u32, lows: *const u16, partial: u32) -> Self {
        // SAFETY: the caller guarantees 4 readable words at `misses`, 4 readable items at
        // `lows` (of the 8 it promises), SSE4.1 and SSSE3. Unselected lanes get 0x80
        // control bytes, which `pshufb` turns into zeros.
        unsafe {
            let missed = shuffle(_mm_loadu_si128(misses.cast()), &EXPAND_WORDS_4, miss);
            let lows = shuffle(_mm_loadl_epi64(lows.cast()), &EXPAND_LOWS_4, partial);
            Sse41(_mm_or_si128(missed, lows))
        }
    }

    #[inline(always)]
    unsafe fn store(self, dst: *mut u8) {
        // SAFETY: the caller guarantees 16 writable bytes and SSE4.1.
        unsafe { _mm_storeu_si128(dst.cast(), self.0) }
    }

    #[inline(always)]
    unsafe fn expand_bytes(src: *const u8, mask: u32) -> u64 {
        // SAFETY: the caller guarantees 4 (of 16) readable bytes, SSE4.1 and SSSE3.
        unsafe {
            let bytes = _mm_cvtsi32_si128(src.cast::<i32>().read_unaligned());
            u64::from(_mm_cvtsi128_si32(shuffle(bytes, &EXPAND_BYTES_4, mask)) as u32)
        }
    }

    #[inline(always)]
    unsafe fn even_bits(x: u32) -> u32 {
        // Bits 0, 2, 4, 6 to bits 0-3 (no BMI2 on this path).
        let x = x & 0x55;
        let x = (x | (x >> 1)) & 0x33;
        (x | (x >> 2)) & 0x0F
    }

    #[inline(always)]
    unsafe fn tags_to_bytes(x: u32) -> u64 {
        // 2-bit cell k (bits 2k, 2k + 1) to bits 8k + 5, 8k + 6.
        let x = x & 0xFF;
        let x = (x | (x << 12)) & 0x000F_000F;
        let x = (x | (x << 6)) & 0x0303_0303;
        u64::from(x << 5)
    }
}

/// `pshufb` of `v` with the control `table[mask]` (4-bit mask).
#[inline]
#[target_feature(enable = "ssse3")]
fn shuffle(v: __m128i, table: &[[u8; 16]; 16], mask: u32) -> __m128i {
    // SAFETY: mask & 15 indexes the table; an unaligned 16-byte load of a [u8; 16].
    let control = unsafe { _mm_loadu_si128(table[(mask & 15) as usize].as_ptr().cast()) };
    _mm_shuffle_epi8(v, control)
}

/// The SSE4.1 + SSSE3 instance of [`classify::classify`], 4 lanes at a time.
///
/// # Safety
///
/// The CPU must support SSE4.1, SSSE3 and POPCNT.
#[target_feature(enable = "sse4.1,ssse3,popcnt")]
pub(crate) unsafe fn classify<const W: usize>(
    page: &[u8],
    s: &mut Scratch<W>,
    early_abort: bool,
    groups: Range<usize>,
    counts: Counts,
) -> KernelResult {
    // SAFETY: SSE4.1 and SSSE3 are enabled here, all that `Sse41` uses.
    unsafe { classify::classify::<Sse41, W>(page, s, early_abort, groups, counts) }
}

/// The SSE4.1 + SSSE3 instance of the decoder ([`expand::decode`]).
///
/// # Safety
///
/// The CPU must support SSE4.1, SSSE3 and POPCNT; `v` and `s` come from a successful
/// `validate` of the same stream.
#[target_feature(enable = "sse4.1,ssse3,popcnt")]
pub(crate) unsafe fn decode<const W: usize>(
    v: Validated<'_>,
    s: &mut Scratch<W>,
    preload: u32,
    page: &mut [u8],
) {
    // SAFETY: SSE4.1 and SSSE3 are enabled here, all that `Sse41` uses; the rest is the
    // caller's contract.
    unsafe { expand::decode::<Sse41, W>(v, s, preload, page) }
}
