//! SSE4.1 + SSSE3 kernels: 4 words per step.

use core::arch::x86_64::*;

use core::ops::Range;

use crate::compress::Counts;
use crate::format::LOW_MASK;
use crate::pipeline::{Dict, KernelResult};
use crate::scratch::Scratch;

use super::super::lanes::Lanes;
use super::super::{LEFT_PACK_4, LEFT_PACK_BYTES, classify};

/// Moves the 32-bit lanes of `v` selected by `mask` (4 bits) to the front.
#[inline]
#[target_feature(enable = "ssse3")]
// `unsafe` (and its body in a block) so that Rust 1.85, which has no safe
// `target_feature` functions, builds it; newer compilers see a needless block.
#[allow(unused_unsafe)]
unsafe fn left_pack(v: __m128i, mask: u32) -> __m128i {
    // SAFETY: the caller guarantees SSSE3, all these intrinsics need.
    unsafe { shuffle(v, &LEFT_PACK_4, mask) }
}

/// Moves the bytes of `v` selected by `mask` (4 bits) to the front.
#[inline]
#[target_feature(enable = "ssse3")]
// `unsafe` (and its body in a block) so that Rust 1.85, which has no safe
// `target_feature` functions, builds it; newer compilers see a needless block.
#[allow(unused_unsafe)]
unsafe fn left_pack_bytes(v: __m128i, mask: u32) -> __m128i {
    // SAFETY: the caller guarantees SSSE3, all these intrinsics need.
    unsafe { shuffle(v, &LEFT_PACK_BYTES, mask) }
}

#[inline]
#[target_feature(enable = "sse4.1")]
// `unsafe` (and its body in a block) so that Rust 1.85, which has no safe
// `target_feature` functions, builds it; newer compilers see a needless block.
#[allow(unused_unsafe)]
unsafe fn mask(v: __m128i) -> u32 {
    // SAFETY: the caller guarantees SSE4.1, all these intrinsics need.
    unsafe { _mm_movemask_ps(_mm_castsi128_ps(v)) as u32 }
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

/// `pshufb` of `v` with the control `table[mask]` (4-bit mask).
#[inline]
#[target_feature(enable = "ssse3")]
// `unsafe` (and its body in a block) so that Rust 1.85, which has no safe
// `target_feature` functions, builds it; newer compilers see a needless block.
#[allow(unused_unsafe)]
unsafe fn shuffle(v: __m128i, table: &[[u8; 16]; 16], mask: u32) -> __m128i {
    // SAFETY: the caller guarantees SSSE3, all these intrinsics need.
    unsafe {
        // SAFETY: mask & 15 indexes the table; an unaligned 16-byte load of a [u8; 16].
        let control = unsafe { _mm_loadu_si128(table[(mask & 15) as usize].as_ptr().cast()) };
        _mm_shuffle_epi8(v, control)
    }
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
    dict: &mut Dict,
    early_abort: bool,
    groups: Range<usize>,
    counts: Counts,
) -> KernelResult {
    // The replay one group ahead: two, as AVX2's, measured no faster here
    // (docs/perf/wkdm.md, "Replay distance").
    // SAFETY: SSE4.1 and SSSE3 are enabled here, all that `Sse41` uses.
    unsafe { classify::classify::<Sse41, W, 1>(page, s, dict, early_abort, groups, counts) }
}
