//! AVX2 + BMI2 kernels: 8 words per step.
//!
//! Left-pack and expand orders come from 256-entry tables rather than `pext`/`pdep`,
//! which measured markedly slower here (`pdep` is kept only for the tag bits).

use core::arch::x86_64::*;

use core::ops::Range;

use crate::compress::Counts;
use crate::decompress::{DUMP_ENTRY, Validated, ZERO_ENTRY};
use crate::format::{self, EARLY_ABORT_WORDS, LOW_MASK};
use crate::pipeline::{self, KernelResult};
use crate::scratch::Scratch;

/// Per 8-bit mask: 0xFF in byte `k` for each set bit `k`.
static BYTE_MASKS: [u64; 256] = {
    let mut table = [0u64; 256];
    let mut mask = 0;
    while mask < 256 {
        let mut k = 0;
        while k < 8 {
            if mask & (1 << k) != 0 {
                table[mask] |= 0xFF << (8 * k);
            }
            k += 1;
        }
        mask += 1;
    }
    table
};

/// Per 8-bit mask: the selected lane numbers, in order, one per byte (left-pack order).
static PACK_ORDER: [u64; 256] = {
    let mut table = [0u64; 256];
    let mut mask = 0;
    while mask < 256 {
        let (mut k, mut out) = (0, 0);
        while k < 8 {
            if mask & (1 << k) != 0 {
                table[mask] |= (k as u64) << (8 * out);
                out += 1;
            }
            k += 1;
        }
        mask += 1;
    }
    table
};

/// Per 8-bit mask: for each selected lane, its rank among the selected lanes (expand
/// order); 0 for the other lanes.
static EXPAND_ORDER: [u64; 256] = {
    let mut table = [0u64; 256];
    let mut mask = 0;
    while mask < 256 {
        let (mut k, mut rank) = (0, 0);
        while k < 8 {
            if mask & (1 << k) != 0 {
                table[mask] |= (rank as u64) << (8 * k);
                rank += 1;
            }
            k += 1;
        }
        mask += 1;
    }
    table
};

/// 0xFF in byte `k` for each bit `k` of an 8-bit mask.
#[inline(always)]
fn byte_mask(mask: u32) -> u64 {
    BYTE_MASKS[(mask & 0xFF) as usize]
}

/// `pshufb` on 8 bytes: byte `k` of the result is byte `order[k]` (0..8) of `v`.
#[inline]
#[target_feature(enable = "ssse3")]
fn shuffle_bytes(v: u64, order: u64) -> u64 {
    _mm_cvtsi128_si64(_mm_shuffle_epi8(_mm_cvtsi64_si128(v as i64), _mm_cvtsi64_si128(order as i64))) as u64
}

/// Eight byte-sized lane numbers widened to `vpermd` indices.
#[inline]
#[target_feature(enable = "avx2")]
fn lane_indices(order: &u64) -> __m256i {
    // SAFETY: an 8-byte load from a valid `u64`.
    _mm256_cvtepu8_epi32(unsafe { _mm_loadl_epi64((order as *const u64).cast()) })
}

/// The `vpermd` indices that move the lanes selected by `mask` (8 bits) to the front, in
/// order.
#[inline]
#[target_feature(enable = "avx2")]
fn left_pack(mask: u32) -> __m256i {
    lane_indices(&PACK_ORDER[(mask & 0xFF) as usize])
}

/// The sign bits of the 8 lanes.
#[inline]
#[target_feature(enable = "avx2")]
fn mask(v: __m256i) -> u32 {
    _mm256_movemask_ps(_mm256_castsi256_ps(v)) as u32
}

/// Classifies and packs the words of the 16-word `groups` of the page, continuing from
/// `counts` (see [`pipeline`]): `s.prev` must hold the
/// output of [`pipeline::recurrence`] for `page` (`4 * W` bytes, little-endian words).
///
/// # Safety
///
/// The CPU must support AVX2 and BMI2.
#[target_feature(enable = "avx2,bmi2,popcnt")]
pub(crate) unsafe fn classify<const W: usize>(
    page: &[u8],
    s: &mut Scratch<W>,
    early_abort: bool,
    groups: Range<usize>,
    counts: Counts,
) -> KernelResult {
    assert!(page.len() == 4 * W && W % 16 == 0 && groups.end <= W / 16);
    let zero = _mm256_setzero_si256();
    let low_mask = _mm256_set1_epi32(LOW_MASK as i32);
    let misses = s.misses.as_mut_ptr();
    let indices = s.indices.as_mut_ptr();
    let lows = s.lows.as_mut_ptr();
    let (mut m, mut h, mut p) = (counts.misses, counts.hits, counts.partials);
    for group in groups {
        let (mut low_bits, mut high_bits) = (0u32, 0u32);
        for half in 0..2 {
            let i = 16 * group + 8 * half;
            // SAFETY: i + 8 <= W: 8 words of the page (4 * W bytes), of prev and of slots.
            let (w, d, slots) = unsafe {
                (
                    _mm256_loadu_si256(page.as_ptr().add(4 * i).cast()),
                    _mm256_loadu_si256(s.prev.as_ptr().add(i).cast()),
                    s.slots.as_ptr().add(i).cast::<u64>().read_unaligned(),
                )
            };
            let nonzero = !mask(_mm256_cmpeq_epi32(w, zero)) & 0xFF;
            let exact = mask(_mm256_cmpeq_epi32(w, d)) & nonzero;
            let near = _mm256_srli_epi32::<10>(_mm256_xor_si256(w, d));
            let hit = mask(_mm256_cmpeq_epi32(near, zero)) & nonzero;
            let partial = hit & !exact;
            let miss = nonzero & !hit;
            low_bits |= hit << (8 * half);
            high_bits |= (miss | exact) << (8 * half);
            let packed_misses = _mm256_permutevar8x32_epi32(w, left_pack(miss));
            let packed_lows = _mm256_permutevar8x32_epi32(_mm256_and_si256(w, low_mask), left_pack(partial));
            let packed_lows =
                _mm256_permute4x64_epi64::<0b1000>(_mm256_packus_epi32(packed_lows, packed_lows));
            let packed_slots = shuffle_bytes(slots, PACK_ORDER[hit as usize & 0xFF]);
            // SAFETY: m, p, h <= i <= W - 8 before these stores, and each array has
            // SLACK >= 16 items after its W items: every store stays inside.
            unsafe {
                _mm256_storeu_si256(misses.add(m).cast(), packed_misses);
                _mm_storeu_si128(lows.add(p).cast(), _mm256_castsi256_si128(packed_lows));
                indices.add(h).cast::<u64>().write_unaligned(packed_slots);
            }
            m += miss.count_ones() as usize;
            h += hit.count_ones() as usize;
            p += partial.count_ones() as usize;
            if early_abort
                && i + 8 == EARLY_ABORT_WORDS
                && pipeline::aborts_early(Counts { misses: m, hits: h, partials: p })
            {
                return KernelResult::EarlyAbort;
            }
        }
        // BMI2: tag k's two bits to bits 2k, 2k + 1, then the stream's cell order.
        let sequential = _pdep_u32(low_bits, 0x5555_5555) | _pdep_u32(high_bits, 0xAAAA_AAAA);
        let tag_word = format::sequential_tags(sequential);
        s.tags[4 * group..4 * group + 4].copy_from_slice(&tag_word.to_le_bytes());
    }
    KernelResult::Done(Counts { misses: m, hits: h, partials: p })
}

/// First stage of the decoder (see [`resolve_hits`](crate::decompress::resolve_hits)): expands the validated
/// misses and low bits into their words of `page` (0 elsewhere) and writes each word's
/// dictionary routes into `s.route`, 8 words per step.
///
/// # Safety
///
/// The CPU must support AVX2 and BMI2; `v` and `s` come from a successful `validate`
/// of the same stream (so the counters never pass the unpacked counts).
#[target_feature(enable = "avx2,bmi2,popcnt")]
pub(crate) unsafe fn expand_streams<const W: usize>(v: Validated<'_>, s: &mut Scratch<W>, page: &mut [u8]) {
    assert!(page.len() == 4 * W && W % 16 == 0 && v.tags.len() == W / 4 && v.misses <= W);
    for (slot, &w) in s.miss_slots.iter_mut().zip(&s.misses[..v.misses]) {
        *slot = format::SLOT[((w >> 10) & 0xFF) as usize];
    }
    let shifts = _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14);
    let three = _mm256_set1_epi32(3);
    let one = _mm256_set1_epi32(1);
    let two = _mm256_set1_epi32(2);
    let every_byte = |b: u8| u64::from(b) * 0x0101_0101_0101_0101;
    let (zero_entry, dump_entry) = (every_byte(ZERO_ENTRY), every_byte(DUMP_ENTRY));
    let misses = s.misses.as_ptr();
    let miss_slots = s.miss_slots.as_ptr();
    let lows = s.lows.as_ptr();
    let indices = s.indices.as_ptr();
    let (mut mi, mut pi, mut hi) = (0usize, 0usize, 0usize);
    for (group, tag_word) in v.tags.chunks_exact(4).enumerate() {
        let tags = format::sequential_tags(format::le32(tag_word));
        for half in 0..2 {
            let i = 16 * group + 8 * half;
            let tags8 = (tags >> (16 * half)) & 0xFFFF;
            let t = _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(tags8 as i32), shifts), three);
            let miss_lanes = _mm256_cmpeq_epi32(t, two);
            let partial_lanes = _mm256_cmpeq_epi32(t, one);
            let (miss, partial) = (mask(miss_lanes), mask(partial_lanes));
            let hit = mask(_mm256_cmpeq_epi32(_mm256_and_si256(t, one), one));
            let exact = hit & !partial;
            // SAFETY: the counters are <= the validated counts <= W, and the scratch
            // arrays have SLACK >= 16 readable items after their W items (stale values
            // there are masked off); the page store covers words i..i + 8 <= W.
            let slots = unsafe {
                let packed_misses = _mm256_loadu_si256(misses.add(mi).cast());
                let packed_lows = _mm256_cvtepu16_epi32(_mm_loadu_si128(lows.add(pi).cast()));
                let values = _mm256_or_si256(
                    _mm256_and_si256(_mm256_permutevar8x32_epi32(packed_misses, expand(miss)), miss_lanes),
                    _mm256_and_si256(
                        _mm256_permutevar8x32_epi32(packed_lows, expand(partial)),
                        partial_lanes,
                    ),
                );
                _mm256_storeu_si256(page.as_mut_ptr().add(4 * i).cast(), values);
                let hit_slots = indices.add(hi).cast::<u64>().read_unaligned();
                let miss_slots = miss_slots.add(mi).cast::<u64>().read_unaligned();
                (shuffle_bytes(hit_slots, EXPAND_ORDER[hit as usize & 0xFF]) & byte_mask(hit))
                    | (shuffle_bytes(miss_slots, EXPAND_ORDER[miss as usize & 0xFF]) & byte_mask(miss))
            };
            let route = |take: u32, otherwise: u64| {
                let take = byte_mask(take);
                (slots & take) | (otherwise & !take)
            };
            let routes = [
                route(hit, zero_entry),
                route(exact, zero_entry),
                route(miss, dump_entry),
                route(miss | partial, dump_entry),
            ];
            for (dst, r) in s.route.iter_mut().zip(routes) {
                dst[i..i + 8].copy_from_slice(&r.to_le_bytes());
            }
            mi += miss.count_ones() as usize;
            pi += partial.count_ones() as usize;
            hi += hit.count_ones() as usize;
        }
    }
}

/// The `vpermd` indices that move lane `j` of a packed vector to the `j`-th lane selected
/// by `mask` (the inverse of [`left_pack`]); unselected lanes get lane 0.
#[inline]
#[target_feature(enable = "avx2")]
fn expand(mask: u32) -> __m256i {
    lane_indices(&EXPAND_ORDER[(mask & 0xFF) as usize])
}
