//! SSE4.1 + SSSE3 kernels: 4 words per step.

use core::arch::x86_64::*;

use core::ops::Range;

use crate::compress::Counts;
use crate::format::{self, EARLY_ABORT_WORDS, LOW_MASK};
use crate::pipeline::{self, KernelResult};
use crate::scratch::Scratch;

use super::super::{LEFT_PACK_4, LEFT_PACK_BYTES};

#[inline]
#[target_feature(enable = "sse4.1,ssse3")]
fn left_pack(v: __m128i, mask: u32) -> __m128i {
    // SAFETY: mask < 16 indexes the table; an unaligned 16-byte load of a [u8; 16].
    let control = unsafe { _mm_loadu_si128(LEFT_PACK_4[(mask & 15) as usize].as_ptr().cast()) };
    _mm_shuffle_epi8(v, control)
}

#[inline]
#[target_feature(enable = "sse4.1,ssse3")]
fn left_pack_bytes(v: __m128i, mask: u32) -> __m128i {
    // SAFETY: mask < 16 indexes the table; an unaligned 16-byte load of a [u8; 16].
    let control = unsafe { _mm_loadu_si128(LEFT_PACK_BYTES[(mask & 15) as usize].as_ptr().cast()) };
    _mm_shuffle_epi8(v, control)
}

#[inline]
#[target_feature(enable = "sse4.1")]
fn mask(v: __m128i) -> u32 {
    _mm_movemask_ps(_mm_castsi128_ps(v)) as u32
}

/// Classifies and packs the words of the 16-word `groups` of the page, continuing from
/// `counts`, like the AVX2 kernel, 4 lanes at a time.
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
    assert!(page.len() == 4 * W && W % 16 == 0 && groups.end <= W / 16);
    let zero = _mm_setzero_si128();
    let low_mask = _mm_set1_epi32(LOW_MASK as i32);
    let misses = s.misses.as_mut_ptr();
    let indices = s.indices.as_mut_ptr();
    let lows = s.lows.as_mut_ptr();
    let (mut m, mut h, mut p) = (counts.misses, counts.hits, counts.partials);
    for group in groups {
        let (mut low_bits, mut high_bits) = (0u32, 0u32);
        for quarter in 0..4 {
            let i = 16 * group + 4 * quarter;
            // SAFETY: i + 4 <= W: 4 words of the page (4 * W bytes), of prev and of slots.
            let (w, d, slots) = unsafe {
                (
                    _mm_loadu_si128(page.as_ptr().add(4 * i).cast()),
                    _mm_loadu_si128(s.prev.as_ptr().add(i).cast()),
                    _mm_cvtsi32_si128(s.slots.as_ptr().add(i).cast::<i32>().read_unaligned()),
                )
            };
            let nonzero = !mask(_mm_cmpeq_epi32(w, zero)) & 0xF;
            let exact = mask(_mm_cmpeq_epi32(w, d)) & nonzero;
            let near = _mm_srli_epi32::<10>(_mm_xor_si128(w, d));
            let hit = mask(_mm_cmpeq_epi32(near, zero)) & nonzero;
            let partial = hit & !exact;
            let miss = nonzero & !hit;
            low_bits |= hit << (4 * quarter);
            high_bits |= (miss | exact) << (4 * quarter);
            let packed_lows = left_pack(_mm_and_si128(w, low_mask), partial);
            let packed_lows = _mm_packus_epi32(packed_lows, packed_lows);
            let packed_slots = left_pack_bytes(slots, hit);
            // SAFETY: m, p, h <= i <= W - 4 before these stores, and each array has
            // SLACK >= 16 items after its W items: every store stays inside.
            unsafe {
                _mm_storeu_si128(misses.add(m).cast(), left_pack(w, miss));
                _mm_storel_epi64(lows.add(p).cast(), packed_lows);
                indices.add(h).cast::<i32>().write_unaligned(_mm_cvtsi128_si32(packed_slots));
            }
            m += miss.count_ones() as usize;
            h += hit.count_ones() as usize;
            p += partial.count_ones() as usize;
            if early_abort
                && i + 4 == EARLY_ABORT_WORDS
                && pipeline::aborts_early(Counts { misses: m, hits: h, partials: p })
            {
                return KernelResult::EarlyAbort;
            }
        }
        let tag_word = format::tag_word(low_bits, high_bits);
        s.tags[4 * group..4 * group + 4].copy_from_slice(&tag_word.to_le_bytes());
    }
    KernelResult::Done(Counts { misses: m, hits: h, partials: p })
}
