//! AVX2 + BMI2: the [`Lanes`] and [`Expand`] implementations (8 words per step) and the
//! entry points of the compress kernel and the decoder.
//!
//! Left-pack and expand orders come from 256-entry tables rather than `pext`/`pdep`,
//! which measured markedly slower here in front of `vpermd`; `pext`/`pdep` only move tag
//! bits.

use core::arch::x86_64::*;

use core::ops::Range;

use crate::compress::Counts;
use crate::decompress::{KEEP, ScalarUnpack, Unpack, count_tags, validate_page};
use crate::format::{self, LOW_MASK};
use crate::pipeline::{Dict, KernelResult};
use crate::scratch::Scratch;
use pagecodec::DecompressError;

use super::super::expand::{Expand, MISS_ROUTE, ZERO_ROUTE};
use super::super::lanes::Lanes;
use super::super::{classify, expand};

/// [`format::SLOT`] as 8 byte-shuffle tables for [`slots_of_32`], each 16 bytes twice (once
/// per 128-bit lane): byte `j` of table `h` holds `SLOT[16 h + j]` in its low nibble and
/// `SLOT[16 (h + 8) + j]` in its high nibble (slots are below 16).
static SLOT_ROWS: [[u8; 32]; 8] = {
    let mut rows = [[0u8; 32]; 8];
    let mut h = 0;
    while h < 8 {
        let mut j = 0;
        while j < 32 {
            rows[h][j] = format::SLOT[16 * h + j % 16] | format::SLOT[16 * (h + 8) + j % 16] << 4;
            j += 1;
        }
        h += 1;
    }
    rows
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

/// Per 8-bit mask (entries `0..256`): for each selected lane, its rank among the selected
/// lanes (expand order); `unselected` for the other lanes and in every byte of the entries
/// past 255.
const fn expand_orders<const N: usize>(unselected: u8) -> [u64; N] {
    let mut table = [u64::from_ne_bytes([unselected; 8]); N];
    let mut mask = 0;
    while mask < 256 {
        let (mut k, mut rank) = (0, 0);
        while k < 8 {
            if mask & (1 << k) != 0 {
                table[mask] &= !(0xFF << (8 * k));
                table[mask] |= (rank as u64) << (8 * k);
                rank += 1;
            }
            k += 1;
        }
        mask += 1;
    }
    table
}

/// [`expand_orders`] with 0x80 for the unselected lanes (`pshufb` zeroes them, `vpermd`
/// reads lane 0): each selected lane's rank among the selected ones.
static EXPAND_ORDER: [u64; 256] = expand_orders(0x80);

/// Per mask of 8 lanes, the `vpshufb` control that widens the `j`-th of 8 `u16` items (both
/// 128-bit halves holding the same 16 bytes) into the `j`-th selected 32-bit lane, 0 elsewhere
/// (index 0x80). [`Avx2::expand_values`] places the low bits with it: a `vpermd` of the
/// widened items followed by the zeroing of lanes that are neither MISS nor PARTIAL took
/// three instructions more per 8 words (docs/perf/wkdm.md, "Low bits by byte shuffle").
static LOW_SHUFFLE: [[u8; 32]; 256] = {
    let ranks = EXPAND_ORDER;
    let mut table = [[0x80u8; 32]; 256];
    let mut mask = 0;
    while mask < 256 {
        let mut k = 0;
        while k < 8 {
            let rank = (ranks[mask] >> (8 * k)) as u8;
            if rank != 0x80 {
                // Bytes 4k.. of the control fill lane k. `vpshufb` indexes within each
                // 128-bit half, and both halves hold the 8 items, so item `rank` is bytes
                // 2 * rank and 2 * rank + 1 whichever half lane k is in.
                table[mask][4 * k] = 2 * rank;
                table[mask][4 * k + 1] = 2 * rank + 1;
            }
            k += 1;
        }
        mask += 1;
    }
    table
};

/// [`expand_orders`] with 8 for the unselected lanes, where [`Avx2::store_routes`] keeps
/// [`ZERO_ROUTE`]. One entry more than masks, so that a 16-byte load at any mask stays
/// inside (only its first 8 bytes matter).
static ROUTE_ORDER: [u64; 257] = expand_orders(8);

/// `pshufb` on 8 bytes: byte `k` of the result is byte `order[k]` (0..8) of `v`.
#[inline]
#[target_feature(enable = "ssse3")]
// `unsafe` (and its body in a block) so that Rust 1.85, which has no safe
// `target_feature` functions, builds it; newer compilers see a needless block.
#[allow(unused_unsafe)]
unsafe fn shuffle_bytes(v: u64, order: u64) -> u64 {
    // SAFETY: the caller guarantees SSSE3, all these intrinsics need.
    unsafe {
        _mm_cvtsi128_si64(_mm_shuffle_epi8(_mm_cvtsi64_si128(v as i64), _mm_cvtsi64_si128(order as i64)))
            as u64
    }
}

/// Eight byte-sized lane numbers widened to `vpermd` indices.
#[inline]
#[target_feature(enable = "avx2")]
// `unsafe` (and its body in a block) so that Rust 1.85, which has no safe
// `target_feature` functions, builds it; newer compilers see a needless block.
#[allow(unused_unsafe)]
unsafe fn lane_indices(order: &u64) -> __m256i {
    // SAFETY: the caller guarantees AVX2, all these intrinsics need.
    unsafe {
        // SAFETY: an 8-byte load from a valid `u64`.
        _mm256_cvtepu8_epi32(unsafe { _mm_loadl_epi64((order as *const u64).cast()) })
    }
}

/// The `vpermd` indices that move the lanes selected by `mask` (8 bits) to the front, in
/// order.
#[inline]
#[target_feature(enable = "avx2")]
// `unsafe` (and its body in a block) so that Rust 1.85, which has no safe
// `target_feature` functions, builds it; newer compilers see a needless block.
#[allow(unused_unsafe)]
unsafe fn left_pack(mask: u32) -> __m256i {
    // SAFETY: the caller guarantees AVX2, all these intrinsics need.
    unsafe { lane_indices(&PACK_ORDER[(mask & 0xFF) as usize]) }
}

/// `v`, in a register (an empty `asm!`): given the sign-extended lane order of
/// [`Avx2::expand_values`], LLVM loaded it twice, zero-extended for the `vpermd` (which reads
/// only the low 3 bits) and sign-extended for the blend, an instruction more per 8 words.
#[inline]
#[target_feature(enable = "avx2")]
// `unsafe` (and its body in a block) so that Rust 1.85, which has no safe
// `target_feature` functions, builds it; newer compilers see a needless block.
#[allow(unused_unsafe)]
unsafe fn in_register(mut v: __m256i) -> __m256i {
    // SAFETY: the template is empty, so no instruction runs and no memory or flag changes;
    // the operand only makes `v` a value in a `ymm` register at this point.
    unsafe {
        core::arch::asm!("/* {0} */", inout(ymm_reg) v, options(pure, nomem, nostack, preserves_flags))
    };
    v
}

/// The sign bits of the 8 lanes.
#[inline]
#[target_feature(enable = "avx2")]
// `unsafe` (and its body in a block) so that Rust 1.85, which has no safe
// `target_feature` functions, builds it; newer compilers see a needless block.
#[allow(unused_unsafe)]
unsafe fn mask(v: __m256i) -> u32 {
    // SAFETY: the caller guarantees AVX2, all these intrinsics need.
    unsafe { _mm256_movemask_ps(_mm256_castsi256_ps(v)) as u32 }
}

/// Eight words in an AVX2 register.
#[derive(Clone, Copy)]
pub(crate) struct Avx2(__m256i);

impl Lanes for Avx2 {
    const LANES: usize = 8;

    #[inline(always)]
    unsafe fn hash_index(word: u32) -> usize {
        // One instruction for the copy, shift and mask of the replay's hottest line, which
        // made the compressor measurably faster on AMD Zen 3 (docs/perf/wkdm.md, "Slots
        // stored four at a time").
        // SAFETY: the caller guarantees BMI1 (the AVX2 path's features).
        unsafe { _bextr_u32(word, format::LOW_BITS, 8) as usize }
    }

    const VECTOR_SLOTS: bool = true;

    #[inline(always)]
    unsafe fn store_slots_of_32(words: *const u8, dst: *mut u8) {
        // SAFETY: the caller guarantees AVX2, 32 readable words at `words` and 32 writable
        // bytes at `dst`.
        unsafe { _mm256_storeu_si256(dst.cast(), slots_of_32(words.cast())) }
    }

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
            // Masked after the permute: masked before it, LLVM permuted the mask constant
            // as well, one `vpermd` more per 8 words.
            let packed = _mm256_and_si256(
                _mm256_permutevar8x32_epi32(self.0, left_pack(mask)),
                _mm256_set1_epi32(LOW_MASK as i32),
            );
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
    unsafe fn sequential_tag_word(low: u32, high: u32) -> u32 {
        // SAFETY: the caller guarantees BMI2 (part of this path's features).
        unsafe { _pdep_u32(low, 0x5555_5555) | _pdep_u32(high, 0xAAAA_AAAA) }
    }

    #[inline(always)]
    unsafe fn stream_order_tags(tags: &mut [u8]) {
        // `format::sequential_tags`'s two delta swaps on 8 tag words per step, the rest one
        // by one.
        let mut chunks = tags.chunks_exact_mut(32);
        for chunk in &mut chunks {
            // SAFETY: the caller guarantees AVX2; the chunk holds 32 bytes.
            unsafe {
                let x = _mm256_loadu_si256(chunk.as_ptr().cast());
                let t = _mm256_and_si256(
                    _mm256_xor_si256(x, _mm256_srli_epi32::<12>(x)),
                    _mm256_set1_epi32(0x0000_F0F0),
                );
                let x = _mm256_xor_si256(_mm256_xor_si256(x, t), _mm256_slli_epi32::<12>(t));
                let t = _mm256_and_si256(
                    _mm256_xor_si256(x, _mm256_srli_epi32::<6>(x)),
                    _mm256_set1_epi32(0x00CC_00CC),
                );
                let x = _mm256_xor_si256(_mm256_xor_si256(x, t), _mm256_slli_epi32::<6>(t));
                _mm256_storeu_si256(chunk.as_mut_ptr().cast(), x);
            }
        }
        format::sequential_tags_in_place(chunks.into_remainder());
    }
}

impl Expand for Avx2 {
    #[inline(always)]
    unsafe fn expand_values(misses: *const u32, miss: u32, lows: *const u16, partial: u32) -> Self {
        // SAFETY: the caller guarantees 8 readable words at `misses`, 8 readable items at
        // `lows`, and AVX2.
        unsafe {
            // Sign-extended `vpermd` indices: an unselected lane's index is 0x80, negative,
            // so its sign bit drives the blend (`vpermd` itself reads only the low 3 bits).
            let miss_order = in_register(signed_expand(miss));
            let missed = _mm256_permutevar8x32_epi32(_mm256_loadu_si256(misses.cast()), miss_order);
            let lows = _mm256_shuffle_epi8(
                _mm256_broadcastsi128_si256(_mm_loadu_si128(lows.cast())),
                _mm256_loadu_si256(LOW_SHUFFLE.as_ptr().add((partial & 0xFF) as usize).cast()),
            );
            // Lanes that are no MISS take the low bits, 0 in lanes that are neither.
            Avx2(blend_on_sign(missed, lows, miss_order))
        }
    }

    #[inline(always)]
    unsafe fn store(self, dst: *mut u8) {
        // SAFETY: the caller guarantees 32 writable bytes and AVX2.
        unsafe { _mm256_storeu_si256(dst.cast(), self.0) }
    }

    #[inline(always)]
    unsafe fn store_routes(indices: *const u8, hit: u32, slots: *const u8, miss: u32, dst: *mut u8) {
        // SAFETY: the caller guarantees 8 readable bytes at `indices` and `slots`, 8 writable
        // at `dst`, and AVX2; `ROUTE_ORDER` has an entry past every mask & 0xFF.
        unsafe {
            // Bytes 8-15 of each source are ZERO_ROUTE, which unselected lanes take: AND-ed
            // with the other source's byte (an index below 16, a miss's route, or ZERO_ROUTE
            // again) it leaves that byte.
            let fill = _mm_set_epi64x(i64::from_ne_bytes([ZERO_ROUTE; 8]), 0);
            let expand = |src: *const u8, mask: u32| {
                let order = _mm_loadu_si128(ROUTE_ORDER.as_ptr().add((mask & 0xFF) as usize).cast());
                _mm_shuffle_epi8(_mm_or_si128(_mm_loadl_epi64(src.cast()), fill), order)
            };
            _mm_storel_epi64(dst.cast(), _mm_and_si128(expand(indices, hit), expand(slots, miss)));
        }
    }

    #[inline(always)]
    unsafe fn unpack_tags<const W: usize>(tags: &[u8], s: &mut Scratch<W>) {
        let (bytes, masks) = (s.tags.as_mut_ptr(), s.step_masks.as_mut_ptr());
        // SAFETY: the caller guarantees AVX2 and `tags.len() == W / 4` with `W` a multiple
        // of 32: pair `q < W / 32` reads tag bytes 8q..8q + 8, writes tags 32q..32q + 32
        // and mask bytes 4q..4q + 4 of each of the three runs (below W / 8 each).
        unsafe {
            // Tag `4j + r` of a group is bits 2j, 2j + 1 of its byte `r`: a group's 4 bytes
            // go to each of its 4 words (lanes), word `j` is shifted right by 2j, and byte `r`
            // of word `j` then holds the tag of word 4j + r in its low 2 bits.
            let order = _mm256_setr_epi8(
                0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 4, 5, 6, 7, 4, 5, 6, 7, 4, 5, 6, 7, 4, 5, 6,
                7,
            );
            let shifts = _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6);
            let (three, miss, partial) = (
                _mm256_set1_epi8(3),
                _mm256_set1_epi8(format::MISS as i8),
                _mm256_set1_epi8(format::PARTIAL as i8),
            );
            for q in 0..W / 32 {
                // The tag words of groups 2q and 2q + 1, in both 128-bit halves.
                let pair = _mm256_set1_epi64x(tags.as_ptr().add(8 * q).cast::<i64>().read_unaligned());
                let t = _mm256_and_si256(_mm256_srlv_epi32(_mm256_shuffle_epi8(pair, order), shifts), three);
                _mm256_storeu_si256(bytes.add(32 * q).cast(), t);
                // A byte's sign bit is its bit 0 (the hit bit) after a 7-bit shift of the
                // 16-bit lanes: tags are below 4, so no other bit reaches a sign.
                let masks_of = |kind: __m256i| _mm256_movemask_epi8(kind).to_le_bytes();
                let at = |run: usize| masks.add(run * W / 8 + 4 * q).cast::<[u8; 4]>();
                at(0).write_unaligned(masks_of(_mm256_cmpeq_epi8(t, miss)));
                at(1).write_unaligned(masks_of(_mm256_cmpeq_epi8(t, partial)));
                at(2).write_unaligned(masks_of(_mm256_slli_epi16::<7>(t)));
            }
        }
    }

    #[inline(always)]
    unsafe fn hash_slots(misses: &[u32], slots: &mut [u8]) {
        // 32 misses at a time in vector code ([`slots_of_32`]), which took the decoder's
        // time down most on pages of many misses (docs/perf/wkdm.md, "Misses' slots in
        // vector code"); the rest one by one: BMI1 `bextr` takes the hash byte out of the
        // word straight from memory, then one table load per miss (the compiler's
        // vectorised loop took 37 instructions per 8 misses). With the OR of MISS_ROUTE
        // the compiler packs each 4 routes into one 4-byte store with vector inserts; a
        // table of routes, which leaves 4 byte stores, measured slower (docs/perf/wkdm.md,
        // "Misses and zero words off the chain").
        let n = misses.len().min(slots.len());
        let (src, dst) = (misses.as_ptr(), slots.as_mut_ptr());
        // SAFETY: the caller guarantees AVX2 and BMI1; `bextr` takes 8 bits, an index below
        // 256 = SLOT.len(); items k..k + 32 (then k..k + 4, then k) are below n, inside
        // both slices.
        unsafe {
            let mut k = 0;
            while k + 32 <= n {
                let routes = _mm256_or_si256(slots_of_32(src.add(k)), _mm256_set1_epi8(MISS_ROUTE as i8));
                _mm256_storeu_si256(dst.add(k).cast(), routes);
                k += 32;
            }
            while k + 4 <= n {
                let slot = |j: usize| Self::slot(*src.add(k + j)) | MISS_ROUTE;
                let (a, b, c, d) = (slot(0), slot(1), slot(2), slot(3));
                dst.add(k).cast::<[u8; 4]>().write([a, b, c, d]);
                k += 4;
            }
            while k < n {
                *dst.add(k) = Self::slot(*src.add(k)) | MISS_ROUTE;
                k += 1;
            }
        }
    }

    #[inline(always)]
    unsafe fn keep_masks(tags: *const u8) -> Self {
        // SAFETY: the caller guarantees AVX2 and 8 readable bytes at `tags`.
        unsafe {
            // `vpermd` reads 3 index bits; tags are below 4.
            let [zero, partial, miss, exact] = KEEP.map(|keep| keep as i32);
            let keeps = _mm256_setr_epi32(zero, partial, miss, exact, zero, partial, miss, exact);
            Avx2(_mm256_permutevar8x32_epi32(keeps, _mm256_cvtepu8_epi32(_mm_loadl_epi64(tags.cast()))))
        }
    }
}

/// The AVX2 + BMI1/BMI2 instance of [`classify::classify`], 8 lanes at a time.
///
/// # Safety
///
/// The CPU must support AVX2, BMI1, BMI2 and POPCNT.
#[target_feature(enable = "avx2,bmi1,bmi2,popcnt")]
pub(crate) unsafe fn classify<const W: usize>(
    page: &[u8],
    s: &mut Scratch<W>,
    dict: &mut Dict,
    early_abort: bool,
    groups: Range<usize>,
    counts: Counts,
) -> KernelResult {
    // The replay two groups ahead: its `prev` stores then have longer to complete before the
    // kernel's vector loads read them, which made the compressor faster than one group on
    // AMD Zen 3 (docs/perf/wkdm.md, "Replay distance").
    // SAFETY: AVX2, BMI1, BMI2 and POPCNT are enabled here, all that `Avx2` uses.
    unsafe { classify::classify::<Avx2, W, 2>(page, s, dict, early_abort, groups, counts) }
}

/// The `vpermd` indices that move lane `j` of a packed vector to the `j`-th lane selected
/// by `mask` (the inverse of [`left_pack`]), sign-extended: unselected lanes get a negative
/// index (0x80 sign-extended), of which `vpermd` reads lane 0.
#[inline]
#[target_feature(enable = "avx2")]
// `unsafe` (and its body in a block) so that Rust 1.85, which has no safe
// `target_feature` functions, builds it; newer compilers see a needless block.
#[allow(unused_unsafe)]
unsafe fn signed_expand(mask: u32) -> __m256i {
    // SAFETY: the caller guarantees AVX2, all these intrinsics need.
    unsafe {
        // SAFETY: an 8-byte load from a valid `u64`.
        _mm256_cvtepi8_epi32(unsafe {
            _mm_loadl_epi64((&raw const EXPAND_ORDER[(mask & 0xFF) as usize]).cast())
        })
    }
}

/// The slots of the 32 words at `words`, `SLOT[(w >> 10) & 0xFF]`, looked up in registers
/// (the decoder's misses, [`Expand::hash_slots`]; the compressor's words,
/// [`Lanes::store_slots_of_32`]). The hash bytes' low nibbles index 8 byte shuffles of
/// [`SLOT_ROWS`] (rows `h` and `h + 8` of the 16-by-16 table in each result's two nibbles);
/// a tree of 7 blends on bits 0-2 of the high nibble picks the shuffle, and bit 3 the
/// nibble.
///
/// # Safety
///
/// The CPU has AVX2; `words` is valid for reads of 32 words.
#[inline]
#[target_feature(enable = "avx2")]
// `unsafe` (and its body in a block) so that Rust 1.85, which has no safe
// `target_feature` functions, builds it; newer compilers see a needless block.
#[allow(unused_unsafe)]
unsafe fn slots_of_32(words: *const u32) -> __m256i {
    // SAFETY: the caller guarantees AVX2 and 32 readable words; each row is 32 bytes.
    unsafe {
        // The hash bytes in order: bits 10-17 of each word, packed from 32-bit to 8-bit
        // lanes (the packs interleave the two 128-bit lanes; `vpermd` puts them back).
        let byte = _mm256_set1_epi32(0xFF);
        let h0 = _mm256_and_si256(_mm256_srli_epi32::<10>(_mm256_loadu_si256(words.cast())), byte);
        let h1 = _mm256_and_si256(_mm256_srli_epi32::<10>(_mm256_loadu_si256(words.add(8).cast())), byte);
        let h2 = _mm256_and_si256(_mm256_srli_epi32::<10>(_mm256_loadu_si256(words.add(16).cast())), byte);
        let h3 = _mm256_and_si256(_mm256_srli_epi32::<10>(_mm256_loadu_si256(words.add(24).cast())), byte);
        let packed = _mm256_packus_epi16(_mm256_packus_epi32(h0, h1), _mm256_packus_epi32(h2, h3));
        let hash = _mm256_permutevar8x32_epi32(packed, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
        let nibble = _mm256_set1_epi8(0x0F);
        let low = _mm256_and_si256(hash, nibble);
        let high = _mm256_and_si256(_mm256_srli_epi16::<4>(hash), nibble);
        // Bit b of `high` to its byte's sign bit, for the blends (16-bit shifts: what
        // crosses into the next byte lands below its sign bit).
        let (bit0, bit1, bit2, bit3) = (
            _mm256_slli_epi16::<7>(high),
            _mm256_slli_epi16::<6>(high),
            _mm256_slli_epi16::<5>(high),
            _mm256_slli_epi16::<4>(high),
        );
        let rows = SLOT_ROWS.as_ptr();
        let r0 = _mm256_shuffle_epi8(_mm256_loadu_si256(rows.cast()), low);
        let r1 = _mm256_shuffle_epi8(_mm256_loadu_si256(rows.add(1).cast()), low);
        let r2 = _mm256_shuffle_epi8(_mm256_loadu_si256(rows.add(2).cast()), low);
        let r3 = _mm256_shuffle_epi8(_mm256_loadu_si256(rows.add(3).cast()), low);
        let r4 = _mm256_shuffle_epi8(_mm256_loadu_si256(rows.add(4).cast()), low);
        let r5 = _mm256_shuffle_epi8(_mm256_loadu_si256(rows.add(5).cast()), low);
        let r6 = _mm256_shuffle_epi8(_mm256_loadu_si256(rows.add(6).cast()), low);
        let r7 = _mm256_shuffle_epi8(_mm256_loadu_si256(rows.add(7).cast()), low);
        let (r01, r23) = (_mm256_blendv_epi8(r0, r1, bit0), _mm256_blendv_epi8(r2, r3, bit0));
        let (r45, r67) = (_mm256_blendv_epi8(r4, r5, bit0), _mm256_blendv_epi8(r6, r7, bit0));
        let (r03, r47) = (_mm256_blendv_epi8(r01, r23, bit1), _mm256_blendv_epi8(r45, r67, bit1));
        let both = _mm256_blendv_epi8(r03, r47, bit2);
        _mm256_and_si256(_mm256_blendv_epi8(both, _mm256_srli_epi16::<4>(both), bit3), nibble)
    }
}

/// `b` in the lanes whose `selector` has its sign bit set, `a` in the others.
#[inline]
#[target_feature(enable = "avx2")]
// `unsafe` (and its body in a block) so that Rust 1.85, which has no safe
// `target_feature` functions, builds it; newer compilers see a needless block.
#[allow(unused_unsafe)]
unsafe fn blend_on_sign(a: __m256i, b: __m256i, selector: __m256i) -> __m256i {
    // SAFETY: the caller guarantees AVX2, all these intrinsics need.
    unsafe {
        _mm256_castps_si256(_mm256_blendv_ps(
            _mm256_castsi256_ps(a),
            _mm256_castsi256_ps(b),
            _mm256_castsi256_ps(selector),
        ))
    }
}

/// Low-bits unpacking, per 8 stream words (24 values) in three vectors of 8 values: the
/// word each value lane reads and the shift that brings its value down.
static LOW_WORDS: [[i32; 8]; 3] =
    [[0, 0, 0, 1, 1, 1, 2, 2], [2, 3, 3, 3, 4, 4, 4, 5], [5, 5, 6, 6, 6, 7, 7, 7]];
static LOW_SHIFTS: [[i32; 8]; 3] =
    [[0, 10, 20, 0, 10, 20, 0, 10], [20, 0, 10, 20, 0, 10, 20, 0], [10, 20, 0, 10, 20, 0, 10, 20]];

/// Validation's loops: the tag count 32 tag bytes per step, the unpacking 8 stream words
/// per step (the scalar loops finish the rest). On captured pages the unpacking took 8-9%
/// of the decoder's time as scalar loops.
impl Unpack for Avx2 {
    #[inline(always)]
    unsafe fn count_tags(tags: &[u8]) -> (usize, usize, usize) {
        // 32 tag bytes per step instead of the scalar count's 8 (three `popcnt`): a little
        // faster on captured pages with many hits (docs/perf/wkdm.md, "Misses' slots in
        // vector code"). The tail of fewer than 32 bytes takes the scalar count.
        let steps = tags.len() / 32;
        // SAFETY: the caller guarantees AVX2; each step reads 32 bytes of `tags`.
        unsafe {
            let (mut misses, mut hits, mut partials) =
                (_mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256());
            let even = _mm256_set1_epi8(0x55);
            for k in 0..steps {
                // Bit 0 of each tag (the hit bit) in `low`, bit 1 in `high`, at even bits.
                let x = _mm256_loadu_si256(tags.as_ptr().add(32 * k).cast());
                let low = _mm256_and_si256(x, even);
                let high = _mm256_and_si256(_mm256_srli_epi16::<1>(x), even);
                misses = _mm256_add_epi64(misses, count_ones(_mm256_andnot_si256(low, high)));
                hits = _mm256_add_epi64(hits, count_ones(low));
                partials = _mm256_add_epi64(partials, count_ones(_mm256_andnot_si256(high, low)));
            }
            let (m, h, p) = count_tags(&tags[32 * steps..]);
            (sum_lanes(misses) + m, sum_lanes(hits) + h, sum_lanes(partials) + p)
        }
    }

    #[inline(always)]
    unsafe fn indices(area: &[u8], out: &mut [u8]) {
        let steps = area.len() / 32;
        // SAFETY: the caller guarantees AVX2. Each step reads the 32 bytes of `src` and
        // writes the 64 of `dst`; the caller's lengths leave the scalar loop whole words and
        // twice their length of output.
        unsafe {
            let nibble = _mm256_set1_epi8(0x0F);
            for (dst, src) in out.chunks_exact_mut(64).zip(area.chunks_exact(32)) {
                let words = _mm256_loadu_si256(src.as_ptr().cast());
                // Indices 0-3 of each word are its bytes' low nibbles, 4-7 the high ones.
                let first = _mm256_and_si256(words, nibble);
                let second = _mm256_and_si256(_mm256_srli_epi16::<4>(words), nibble);
                // Words 0, 1 (4, 5 in the upper half) and 2, 3 (6, 7), 8 bytes each.
                let even = _mm256_unpacklo_epi32(first, second);
                let odd = _mm256_unpackhi_epi32(first, second);
                let dst = dst.as_mut_ptr().cast::<__m256i>();
                _mm256_storeu_si256(dst, _mm256_permute2x128_si256::<0x20>(even, odd));
                _mm256_storeu_si256(dst.add(1), _mm256_permute2x128_si256::<0x31>(even, odd));
            }
            ScalarUnpack::indices(&area[32 * steps..], &mut out[64 * steps..]);
        }
    }

    #[inline(always)]
    unsafe fn lows(area: &[u8], out: &mut [u16]) -> u32 {
        let steps = area.len() / 32;
        // SAFETY: the caller guarantees AVX2. Each step reads the 32 bytes of `src` and
        // writes the 24 items (48 bytes) of `dst`; the tables have 8 lanes. The caller's
        // lengths leave the scalar loop whole words and 3 / 4 of their length of output.
        unsafe {
            let low_mask = _mm256_set1_epi32(LOW_MASK as i32);
            let mut all_words = _mm256_setzero_si256();
            for (dst, src) in out.chunks_exact_mut(24).zip(area.chunks_exact(32)) {
                let words = _mm256_loadu_si256(src.as_ptr().cast());
                all_words = _mm256_or_si256(all_words, words);
                let values = |k: usize| {
                    let spread =
                        _mm256_permutevar8x32_epi32(words, _mm256_loadu_si256(LOW_WORDS[k].as_ptr().cast()));
                    let shifts = _mm256_loadu_si256(LOW_SHIFTS[k].as_ptr().cast());
                    _mm256_and_si256(_mm256_srlv_epi32(spread, shifts), low_mask)
                };
                // `packus` works per 128-bit half; `permute4x64` puts the halves in order.
                let first =
                    _mm256_permute4x64_epi64::<0b11_01_10_00>(_mm256_packus_epi32(values(0), values(1)));
                let last =
                    _mm256_permute4x64_epi64::<0b11_01_10_00>(_mm256_packus_epi32(values(2), values(2)));
                let dst = dst.as_mut_ptr();
                _mm256_storeu_si256(dst.cast(), first);
                _mm_storeu_si128(dst.add(16).cast(), _mm256_castsi256_si128(last));
            }
            let halves =
                _mm_or_si128(_mm256_castsi256_si128(all_words), _mm256_extracti128_si256::<1>(all_words));
            let pairs = _mm_or_si128(halves, _mm_unpackhi_epi64(halves, halves));
            let word = _mm_or_si128(pairs, _mm_srli_epi64::<32>(pairs));
            _mm_cvtsi128_si32(word) as u32 | ScalarUnpack::lows(&area[32 * steps..], &mut out[24 * steps..])
        }
    }
}

/// The set bits of each 64-bit lane of `x`: per byte by two nibble lookups, then the
/// bytes of each lane added by `vpsadbw`.
#[inline]
#[target_feature(enable = "avx2")]
// `unsafe` (and its body in a block) so that Rust 1.85, which has no safe
// `target_feature` functions, builds it; newer compilers see a needless block.
#[allow(unused_unsafe)]
unsafe fn count_ones(x: __m256i) -> __m256i {
    // SAFETY: the caller guarantees AVX2, all these intrinsics need.
    unsafe {
        let ones = _mm256_setr_epi8(
            0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4, 0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4,
        );
        let nibble = _mm256_set1_epi8(0x0F);
        let low = _mm256_shuffle_epi8(ones, _mm256_and_si256(x, nibble));
        let high = _mm256_shuffle_epi8(ones, _mm256_and_si256(_mm256_srli_epi16::<4>(x), nibble));
        _mm256_sad_epu8(_mm256_add_epi8(low, high), _mm256_setzero_si256())
    }
}

/// The sum of the four 64-bit lanes of `x`.
#[inline]
#[target_feature(enable = "avx2")]
// `unsafe` (and its body in a block) so that Rust 1.85, which has no safe
// `target_feature` functions, builds it; newer compilers see a needless block.
#[allow(unused_unsafe)]
unsafe fn sum_lanes(x: __m256i) -> usize {
    // SAFETY: the caller guarantees AVX2, all these intrinsics need.
    unsafe {
        let halves = _mm_add_epi64(_mm256_castsi256_si128(x), _mm256_extracti128_si256::<1>(x));
        (_mm_cvtsi128_si64(halves) + _mm_extract_epi64::<1>(halves)) as usize
    }
}

/// The AVX2 + BMI2 decompressor: validation with the [`Unpack`] loops above, then the
/// decoder ([`expand::decode`]).
///
/// # Safety
///
/// The CPU must support AVX2, BMI1 and BMI2.
#[target_feature(enable = "avx2,bmi1,bmi2,popcnt")]
pub(crate) unsafe fn decompress<const W: usize>(
    input: &[u8],
    s: &mut Scratch<W>,
    preload: u32,
    page: &mut [u8],
) -> Result<(), DecompressError> {
    // SAFETY: AVX2, BMI1 and BMI2 are enabled here, all that `Avx2` uses; `expand::decode` gets
    // `v` and `s` from the validation of this stream.
    unsafe {
        let Some(v) = validate_page::<Avx2, W>(input, s, page)? else {
            return Ok(());
        };
        expand::decode::<Avx2, W>(v, s, preload, page);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use pagecodec::testing::Rng;

    use super::*;

    /// Whether the AVX2 path can run here; says so on stderr when it cannot, for `test`.
    #[cfg_attr(not(feature = "std"), allow(unused_variables))]
    fn avx2_here(test: &str) -> bool {
        let here = crate::arch::avx2_available();
        #[cfg(feature = "std")]
        if !here {
            std::eprintln!("{test}: no AVX2 path here, not run");
        }
        here
    }

    #[test]
    fn vector_tag_counts_are_the_scalar_counts() {
        if !avx2_here("vector_tag_counts_are_the_scalar_counts") {
            return;
        }
        // SAFETY: AVX2 is available (checked above).
        let vector = |tags: &[u8]| unsafe { Avx2::count_tags(tags) };
        let mut rng = Rng::new(9);
        let mut tags = [0u8; 1024 + 40];
        for len in [0, 1, 31, 32, 33, 256, 1000, 1024 + 40] {
            for fill in [0x00, 0x55, 0xAA, 0xFF] {
                tags.fill(fill);
                assert_eq!(vector(&tags[..len]), count_tags(&tags[..len]), "{len} {fill:#x}");
            }
            rng.fill(&mut tags);
            assert_eq!(vector(&tags[..len]), count_tags(&tags[..len]), "{len}");
        }
    }

    #[test]
    fn expanded_values_follow_the_masks() {
        if !avx2_here("expanded_values_follow_the_masks") {
            return;
        }
        // Distinct misses with their top and bottom bits set, distinct 10-bit low bits: a
        // value in the wrong lane, or a byte of the wrong item, shows.
        let misses: [u32; 8] = core::array::from_fn(|k| 0x8000_0001 | (k as u32 + 1) << 20 | 0x3FF << 1);
        let lows: [u16; 8] = core::array::from_fn(|k| 0x3FF - k as u16);
        // Every assignment of MISS, PARTIAL or neither to the 8 lanes.
        for code in 0..3u32.pow(8) {
            let (mut miss, mut partial, mut c) = (0, 0, code);
            for k in 0..8 {
                match c % 3 {
                    1 => miss |= 1 << k,
                    2 => partial |= 1 << k,
                    _ => {}
                }
                c /= 3;
            }
            // SAFETY: AVX2 is available (checked above); 8 readable items at each source.
            let got: [u32; 8] = unsafe {
                core::mem::transmute(Avx2::expand_values(misses.as_ptr(), miss, lows.as_ptr(), partial).0)
            };
            let (mut m, mut p) = (0, 0);
            for (k, &got) in got.iter().enumerate() {
                let want = if miss & 1 << k != 0 {
                    m += 1;
                    misses[m - 1]
                } else if partial & 1 << k != 0 {
                    p += 1;
                    u32::from(lows[p - 1])
                } else {
                    0
                };
                assert_eq!(got, want, "lane {k}, misses {miss:#010b}, partial {partial:#010b}");
            }
        }
    }

    #[test]
    fn vector_slots_are_the_slot_table() {
        if !avx2_here("vector_slots_are_the_slot_table") {
            return;
        }
        let mut rng = Rng::new(5);
        for round in 0..64 {
            // Every hash value once per 8 rounds, in a different order each time, with
            // random bits around it.
            let words: [u32; 32] = core::array::from_fn(|k| {
                let hash = (32 * (round % 8) + (k * 7 + round) % 32) as u32;
                (rng.next_u64() as u32 & !(0xFF << 10)) | hash << 10
            });
            // SAFETY: AVX2 is available (checked above); 32 readable words.
            let got: [u8; 32] = unsafe { core::mem::transmute(slots_of_32(words.as_ptr())) };
            for k in 0..32 {
                assert_eq!(got[k], format::slot(words[k]) as u8, "{:#x}", words[k]);
            }
        }
    }
}
