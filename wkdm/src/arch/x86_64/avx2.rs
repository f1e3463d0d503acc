//! AVX2 + BMI2 kernels: 8 words per step.
//!
//! Left-pack and expand orders come from 256-entry tables rather than `pext`/`pdep`,
//! which measured markedly slower here (`pdep` is kept only for the tag bits).

use core::arch::x86_64::*;

use core::ops::Range;

use crate::compress::Counts;
use crate::decompress::{DUMP_ENTRY, Validated};
use crate::format::{self, LOW_MASK};
use crate::pipeline::KernelResult;
use crate::scratch::Scratch;

use super::super::classify::{self, Lanes};

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

/// Eight words in an AVX2 register.
#[derive(Clone, Copy)]
pub(crate) struct Avx2(__m256i);

impl Lanes for Avx2 {
    const LANES: usize = 8;

    #[inline(always)]
    unsafe fn load(src: *const u8) -> Self {
        // SAFETY: the caller guarantees 32 readable bytes and AVX2.
        Avx2(unsafe { _mm256_loadu_si256(src.cast()) })
    }

    #[inline(always)]
    unsafe fn zero_lanes(self) -> u32 {
        // SAFETY: the caller guarantees AVX2.
        unsafe { mask(_mm256_cmpeq_epi32(self.0, _mm256_setzero_si256())) }
    }

    #[inline(always)]
    unsafe fn equal_lanes(self, other: Self) -> u32 {
        // SAFETY: the caller guarantees AVX2.
        unsafe { mask(_mm256_cmpeq_epi32(self.0, other.0)) }
    }

    #[inline(always)]
    unsafe fn same_upper_lanes(self, other: Self) -> u32 {
        // SAFETY: the caller guarantees AVX2.
        unsafe {
            let near = _mm256_srli_epi32::<10>(_mm256_xor_si256(self.0, other.0));
            mask(_mm256_cmpeq_epi32(near, _mm256_setzero_si256()))
        }
    }

    #[inline(always)]
    unsafe fn store_packed(self, mask: u32, dst: *mut u32) {
        // SAFETY: the caller guarantees 8 writable words and AVX2.
        unsafe { _mm256_storeu_si256(dst.cast(), _mm256_permutevar8x32_epi32(self.0, left_pack(mask))) }
    }

    #[inline(always)]
    unsafe fn store_packed_lows(self, mask: u32, dst: *mut u16) {
        // SAFETY: the caller guarantees 8 writable items (16 bytes) and AVX2.
        unsafe {
            let lows = _mm256_and_si256(self.0, _mm256_set1_epi32(LOW_MASK as i32));
            let packed = _mm256_permutevar8x32_epi32(lows, left_pack(mask));
            let packed = _mm256_permute4x64_epi64::<0b1000>(_mm256_packus_epi32(packed, packed));
            _mm_storeu_si128(dst.cast(), _mm256_castsi256_si128(packed));
        }
    }

    #[inline(always)]
    unsafe fn store_packed_bytes(src: *const u8, mask: u32, dst: *mut u8) {
        // SAFETY: the caller guarantees 8 readable and 8 writable bytes and SSSE3 (AVX2).
        unsafe {
            let packed = shuffle_bytes(src.cast::<u64>().read_unaligned(), PACK_ORDER[mask as usize & 0xFF]);
            dst.cast::<u64>().write_unaligned(packed);
        }
    }

    #[inline(always)]
    unsafe fn tag_word(low: u32, high: u32) -> u32 {
        // BMI2: tag k's two bits to bits 2k, 2k + 1, then the stream's cell order.
        // SAFETY: the caller guarantees BMI2 (part of this path's features).
        let sequential = unsafe { _pdep_u32(low, 0x5555_5555) | _pdep_u32(high, 0xAAAA_AAAA) };
        format::sequential_tags(sequential)
    }
}

/// The AVX2 + BMI2 instance of [`classify::classify`], 8 lanes at a time.
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
    // SAFETY: AVX2 and BMI2 are enabled here, all that `Avx2` uses.
    unsafe { classify::classify::<Avx2, W>(page, s, early_abort, groups, counts) }
}

/// First stage of the decoder (see [`resolve_chunks`]): expands the validated misses and
/// low bits into their words of `page` (0 elsewhere) and writes each word's dictionary
/// slot and tag into `s.word_routes`, 8 words per step.
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
    let dump_entry = u64::from(DUMP_ENTRY) * 0x0101_0101_0101_0101;
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
            // Zero words read and write the dump entry (their value and keep mask are 0).
            let word_slots = slots | (dump_entry & !byte_mask(hit | miss));
            // Tag k to bits 5-6 of byte k, beside the slot (< 32).
            let word_tags = _pdep_u64(tags8 as u64, 0x6060_6060_6060_6060);
            s.word_routes[i..i + 8].copy_from_slice(&(word_slots | word_tags).to_le_bytes());
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

/// Independent dictionary chains the decoder's second stage runs interleaved.
const CHUNKS: usize = 8;
/// Taint bit of a decoded word: its upper 22 bits come from the chunk's initial dictionary.
const TAINT_UPPER: u64 = 1 << 32;
/// Taint bit of a decoded word: its low 10 bits come from the chunk's initial dictionary.
const TAINT_LOWER: u64 = 1 << 33;
/// Per tag (ZERO, PARTIAL, MISS, EXACT): the bits of the dictionary entry a word keeps.
const KEEP: [u64; 4] = [0, !(LOW_MASK as u64) & !TAINT_LOWER, 0, u64::MAX];

/// Second stage of the AVX2 decoder. `page` holds each MISS word, the low bits of each
/// PARTIAL word and 0 elsewhere; `s.word_routes` each word's slot (bits 0-4; the dump
/// entry for zero words) and tag (bits 5-6).
///
/// The dictionary recurrence `d = dict[slot]; w = (d & keep) | value; dict[slot] = w` is
/// one long store-to-load chain. It is split into [`CHUNKS`] runs of words whose chains are
/// interleaved, each starting from an *unknown* dictionary whose entries are 0 with both
/// taint bits set: a word inherits the taint of the bits it takes from the dictionary (a
/// PARTIAL word keeps only the upper taint, a MISS none). Afterwards every word is fixed
/// up with SIMD: its tainted bits come from the chunk's true initial dictionary, which is
/// the previous chunk's final dictionary fixed up the same way (chunk 0: `preload`).
///
/// # Safety
///
/// The CPU must support AVX2; `s.word_routes` must come from [`expand_streams`] for the
/// same page.
#[target_feature(enable = "avx2")]
pub(crate) unsafe fn resolve_chunks<const W: usize>(s: &mut Scratch<W>, preload: u32, page: &mut [u8]) {
    assert!(page.len() == 4 * W && W % (8 * CHUNKS) == 0);
    let q = W / CHUNKS;
    // 32 entries: slot 16 is the dump entry; `& 31` keeps every index in bounds.
    let mut dicts = [[TAINT_UPPER | TAINT_LOWER; 32]; CHUNKS];
    let routes = s.word_routes.as_ptr();
    let values = page.as_ptr();
    let wide = s.wide.as_mut_ptr();
    for j in 0..q {
        for (c, dict) in dicts.iter_mut().enumerate() {
            let i = c * q + j;
            // SAFETY: i < CHUNKS * q = W: item i of the W-item arrays and word i of the page
            // (4 * W bytes); `& 31` and `& 3` keep the table indices in bounds.
            unsafe {
                let route = usize::from(*routes.add(i));
                let slot = route & 31;
                let value = u64::from(u32::from_le(values.add(4 * i).cast::<u32>().read_unaligned()));
                let w = (*dict.get_unchecked(slot) & *KEEP.get_unchecked(route >> 5 & 3)) | value;
                *dict.get_unchecked_mut(slot) = w;
                *wide.add(i) = w;
            }
        }
    }
    let low_mask = _mm256_set1_epi32(LOW_MASK as i32);
    let seven = _mm256_set1_epi32(7);
    let thirty_one = _mm256_set1_epi32(31);
    let mut initial = [preload; 16];
    for (c, dict) in dicts.iter().enumerate() {
        // SAFETY: 8-word loads from the 16-word `initial`.
        let (first, second) = unsafe {
            (_mm256_loadu_si256(initial.as_ptr().cast()), _mm256_loadu_si256(initial.as_ptr().add(8).cast()))
        };
        for i in (c * q..(c + 1) * q).step_by(8) {
            // SAFETY: i + 8 <= W: 8 items of `wide` (u64), `word_routes` (u8) and words of the
            // page (4 * W bytes).
            unsafe {
                let a = _mm256_castsi256_ps(_mm256_loadu_si256(s.wide.as_ptr().add(i).cast()));
                let b = _mm256_castsi256_ps(_mm256_loadu_si256(s.wide.as_ptr().add(i + 4).cast()));
                // Low and high halves of the 8 u64 lanes, in word order.
                let low =
                    _mm256_permute4x64_epi64::<0b11_01_10_00>(_mm256_castps_si256(_mm256_shuffle_ps::<
                        0b10_00_10_00,
                    >(
                        a, b
                    )));
                let high =
                    _mm256_permute4x64_epi64::<0b11_01_10_00>(_mm256_castps_si256(_mm256_shuffle_ps::<
                        0b11_01_11_01,
                    >(
                        a, b
                    )));
                let routes = _mm256_cvtepu8_epi32(_mm_loadl_epi64(s.word_routes.as_ptr().add(i).cast()));
                let slots = _mm256_and_si256(routes, thirty_one);
                let d = _mm256_blendv_epi8(
                    _mm256_permutevar8x32_epi32(first, slots),
                    _mm256_permutevar8x32_epi32(second, slots),
                    _mm256_cmpgt_epi32(slots, seven),
                );
                let upper = _mm256_srai_epi32::<31>(_mm256_slli_epi32::<31>(high));
                let lower = _mm256_srai_epi32::<31>(_mm256_slli_epi32::<30>(high));
                let take =
                    _mm256_or_si256(_mm256_andnot_si256(low_mask, upper), _mm256_and_si256(low_mask, lower));
                let w = _mm256_or_si256(low, _mm256_and_si256(d, take));
                _mm256_storeu_si256(page.as_mut_ptr().add(4 * i).cast(), w);
            }
        }
        initial = core::array::from_fn(|slot| {
            let e = dict[slot];
            let mut take = 0;
            if e & TAINT_UPPER != 0 {
                take |= !LOW_MASK;
            }
            if e & TAINT_LOWER != 0 {
                take |= LOW_MASK;
            }
            e as u32 | (initial[slot] & take)
        });
    }
}
