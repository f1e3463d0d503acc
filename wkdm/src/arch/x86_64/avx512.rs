//! AVX-512 (F, BW, CD, VBMI) + GFNI: a decoder that resolves the dictionary 16 words at a
//! time in registers, so no word's value waits on a store to memory.
//!
//! The dictionary is the only sequential state of a decode, and its 16 entries fit one
//! 512-bit register. Each entry's upper 22 bits come from the last MISS word of its slot
//! and its low 10 bits from the last MISS or PARTIAL word of its slot (EXACT words change
//! nothing; the entry starts at the preload). So for each word of a 16-word group (one tag
//! word) it is enough to know, per half, the latest lane at or before it of the same slot
//! that set that half: that lane's stream value gives the half, and without one the
//! dictionary at the start of the group does. Those lanes depend only on slots and tags,
//! never on decoded values, so they are found with vector instructions:
//!
//! 1. the misses, low bits and indices are expanded into their lanes (`vpexpandd`), and the
//!    slot of each miss is looked up in [`SLOT`] with byte permutes;
//! 2. per half, the 16x16 bit matrix "lane `k` sets slot `s`" is transposed (one byte
//!    permute lays out both matrices, one `gf2p8affineqb` transposes their 8x8 blocks, one
//!    byte permute per half gathers the columns), giving per slot the lanes that set it;
//! 3. per word, that set for its slot, cut to the lanes at or before it, plus a marker bit
//!    for its slot: its highest set bit (`vplzcntd`) is the index of a two-table permute
//!    (`vpermt2d`) that reads either a lane's stream value or the group's dictionary;
//! 4. the same permutes with every lane included give the next group's dictionary.
//!
//! The only loop-carried dependency is the dictionary register: two permutes and one
//! `vpternlogd` per 16 words.
//!
//! On 3000 captured pages per corpus (pagebench, median TSC ticks) it decodes python pages
//! in 1222 ticks and node pages in 1222, against 2288 / 2834 for the AVX2 decoder and 1352-1456
//! / 1326-1378 for C LZ4 in the same runs.
//!
//! Validation is shared with the AVX2 path ([`Avx2`]'s [`Unpack`](crate::decompress::Unpack)
//! loops). The compressor of this path is the AVX2 one.

use core::arch::x86_64::*;

use crate::decompress::{Validated, decompress_with};
use crate::format::{self, LOW_MASK, SLOT};
use crate::scratch::Scratch;
use pagecodec::DecompressError;

use super::avx2::Avx2;

/// 64 bytes, aligned for one vector load.
#[repr(C, align(64))]
struct Bytes64([u8; 64]);

/// 16 words, aligned for one vector load.
#[repr(C, align(64))]
struct Words16([u32; 16]);

/// [`SLOT`] as four 64-entry byte tables.
static SLOT_TABLES: [Bytes64; 4] = {
    let mut tables = [Bytes64([0; 64]), Bytes64([0; 64]), Bytes64([0; 64]), Bytes64([0; 64])];
    let mut i = 0;
    while i < 256 {
        tables[i / 64].0[i % 64] = SLOT[i];
        i += 1;
    }
    tables
};

/// Byte permute (`vpermt2b`) that lays out the two 16x16 bit matrices (rows: lanes as
/// 16-bit one-hot slot masks, the miss rows in the first source and the writer rows in
/// the second) as eight 8x8 blocks, one per 64-bit word: block `q = 4t + 2rh + ch` of
/// matrix `t` holds the byte `ch` (slots `8ch..8ch + 8`) of lanes `8rh..8rh + 8`, lane
/// `8rh + r` in byte `7 - r`, the row order `gf2p8affineqb` transposes into bit `r`.
static ROWS_TO_BLOCKS: Bytes64 = {
    let mut table = [0u8; 64];
    let mut q = 0;
    while q < 8 {
        let (t, rh, ch) = (q / 4, (q / 2) % 2, q % 2);
        let mut r = 0;
        while r < 8 {
            table[8 * q + 7 - r] = (64 * t + 4 * (8 * rh + r) + ch) as u8;
            r += 1;
        }
        q += 1;
    }
    Bytes64(table)
};

/// Byte permutes (`vpermb`, bytes 0 and 1 of each 32-bit lane zeroed) from the transposed
/// blocks to one 32-bit lane per slot `s` of matrix `t` (0: misses, 1: writers): the lanes
/// that set `s`, lane `k` at bit `16 + k`.
static BLOCKS_TO_SLOTS: [Bytes64; 2] = {
    let mut tables = [Bytes64([0; 64]), Bytes64([0; 64])];
    let mut t = 0;
    while t < 2 {
        let mut s = 0;
        while s < 16 {
            let mut rh = 0;
            while rh < 2 {
                tables[t].0[4 * s + 2 + rh] = (8 * (4 * t + 2 * rh + s / 8) + s % 8) as u8;
                rh += 1;
            }
            s += 1;
        }
        t += 1;
    }
    tables
};

/// Lane `k`: bits `16..=16 + k`, the lanes at or before `k` in a [`BLOCKS_TO_SLOTS`] mask.
static UP_TO_LANE: Words16 = {
    let mut table = [0u32; 16];
    let mut k = 0;
    while k < 16 {
        table[k] = ((2u32 << k) - 1) << 16;
        k += 1;
    }
    Words16(table)
};

/// Lane `k`: `1 << k`.
static LANE_BIT: Words16 = {
    let mut table = [0u32; 16];
    let mut k = 0;
    while k < 16 {
        table[k] = 1 << k;
        k += 1;
    }
    Words16(table)
};

/// `gf2p8affineqb` data bytes that read column `j` of each 8x8 matrix into byte `j`.
const UNIT_BYTES: u64 = 0x8040_2010_0804_0201;

/// Loads 64 aligned bytes.
///
/// # Safety
///
/// The CPU has AVX-512F.
#[inline(always)]
unsafe fn load<T>(table: &T) -> __m512i {
    const { assert!(size_of::<T>() == 64 && align_of::<T>() == 64) };
    // SAFETY: `table` is 64 readable bytes aligned to 64 (checked above); AVX-512F is
    // the caller's guarantee.
    unsafe { _mm512_load_si512((table as *const T).cast()) }
}

/// Per word, the index (for `vpermt2d` with the group's dictionary first and the stream
/// values second) of the word that set its half of the entry: `setters` holds per slot the
/// lanes that set that half (lane `k` at bit `16 + k`), `slots` each word's slot and
/// `slot_bits` its `1 << slot`; `up_to` keeps the lanes at or before each word.
///
/// The highest set bit of `(setters[slot] & up_to) | slot_bits` is `16 + k` for the last
/// such lane `k`, or `slot` (an entry of the dictionary) if there is none: `31 - lzcnt`.
#[inline(always)]
unsafe fn source(setters: __m512i, slots: __m512i, up_to: __m512i, slot_bits: __m512i) -> __m512i {
    // SAFETY: the callers run with AVX-512F and CD.
    unsafe {
        let candidates =
            _mm512_ternarylogic_epi32::<0xEA>(_mm512_permutexvar_epi32(slots, setters), up_to, slot_bits);
        _mm512_xor_si512(_mm512_lzcnt_epi32(candidates), _mm512_set1_epi32(31))
    }
}

/// `v`, in a register: LLVM would otherwise fold the load of the misses into the memory
/// form of `vpexpandd`, which this machine's core (AMD family 26) runs so slowly that the
/// decoder took 2366 ticks per captured page instead of 1222.
#[target_feature(enable = "avx512f")]
#[inline]
fn in_register(mut v: __m512i) -> __m512i {
    // SAFETY: the template is empty, so no instruction runs and no memory or flag changes;
    // the operand only makes `v` a value in a `zmm` register at this point.
    unsafe {
        core::arch::asm!("/* {0} */", inout(zmm_reg) v, options(pure, nomem, nostack, preserves_flags))
    };
    v
}

/// Decodes a validated stream into `page`, 16 words per step (see the module
/// documentation).
///
/// # Safety
///
/// The CPU has AVX-512F, BW, CD, VBMI, GFNI, BMI2 and POPCNT; `v` and `s` come from a
/// successful `validate` of the same stream (so the counters never pass the unpacked
/// counts).
#[inline(always)]
unsafe fn decode<const W: usize>(v: Validated<'_>, s: &Scratch<W>, preload: u32, page: &mut [u8]) {
    assert!(page.len() == 4 * W && v.tags.len() == W / 4);
    let misses = s.misses.as_ptr();
    let lows = s.lows.as_ptr();
    let indices = s.indices.as_ptr();
    let (mut mi, mut pi, mut hi) = (0usize, 0usize, 0usize);
    // SAFETY: the caller guarantees the instruction sets. Each group reads 16 items at the
    // miss, low-bits and index counters, which stay <= the validated counts <= W, and the
    // scratch arrays have SLACK = 16 readable items after their W items (stale items there
    // are never selected: each expand takes as many items as it has mask bits, and the
    // counts were validated against the tags). The store covers the group's 64 bytes.
    unsafe {
        let slot_tables = SLOT_TABLES.each_ref().map(|t| load(t));
        let rows_to_blocks = load(&ROWS_TO_BLOCKS);
        let to_slots = [load(&BLOCKS_TO_SLOTS[0]), load(&BLOCKS_TO_SLOTS[1])];
        let up_to_lane = load(&UP_TO_LANE);
        let lane_bit = load(&LANE_BIT);
        let unit = _mm512_set1_epi64(UNIT_BYTES as i64);
        let high_bits = _mm512_set1_epi32(!LOW_MASK as i32);
        let nibble = _mm512_set1_epi32(15);
        let one = _mm512_set1_epi32(1);
        let k31 = _mm512_set1_epi32(31);
        let mut dict = _mm512_set1_epi32(preload as i32);
        for (tag_word, out) in v.tags.chunks_exact(4).zip(page.chunks_exact_mut(64)) {
            let tags = format::sequential_tags(format::le32(tag_word));
            if tags == 0 {
                // 16 zero words (common in real memory): the dictionary stays.
                _mm512_storeu_si512(out.as_mut_ptr().cast(), _mm512_setzero_si512());
                continue;
            }
            // Tag k at bits 2k, 2k + 1; PARTIAL = 1, MISS = 2, EXACT = 3.
            let (low, high) = (_pext_u32(tags, 0x5555_5555), _pext_u32(tags, 0xAAAA_AAAA));
            let (miss, partial, hit) = ((high & !low) as u16, (low & !high) as u16, low as u16);
            let (writer, nonzero) = ((low ^ high) as u16, (low | high) as u16);

            // The load stays a separate instruction (see `in_register`).
            let missed =
                _mm512_maskz_expand_epi32(miss, in_register(_mm512_loadu_si512(misses.add(mi).cast())));
            let low_bits = _mm512_maskz_expand_epi32(
                partial,
                _mm512_cvtepu16_epi32(_mm256_loadu_si256(lows.add(pi).cast())),
            );
            let index =
                _mm512_maskz_expand_epi32(hit, _mm512_cvtepu8_epi32(_mm_loadu_si128(indices.add(hi).cast())));
            mi += miss.count_ones() as usize;
            pi += partial.count_ones() as usize;
            hi += hit.count_ones() as usize;
            // Each lane's stream value: the miss, the low bits, or 0.
            let values = _mm512_or_si512(missed, low_bits);

            // Slots: the index, or for a miss SLOT[(w >> 10) & 0xFF] (byte 0 of each lane;
            // `vpermt2b` reads 7 index bits, so bit 7 picks one of two 128-entry lookups).
            let hash = _mm512_srli_epi32::<10>(missed);
            let first_half = _mm512_permutex2var_epi8(slot_tables[0], hash, slot_tables[1]);
            let second_half = _mm512_permutex2var_epi8(slot_tables[2], hash, slot_tables[3]);
            let hashed = _mm512_mask_blend_epi8(_mm512_movepi8_mask(hash), first_half, second_half);
            let slots = _mm512_mask_and_epi32(index, miss, hashed, nibble);
            let slot_bits = _mm512_sllv_epi32(one, slots);

            // Per slot, the lanes that set its upper bits (misses) and its low bits (misses
            // and partials): the transposed one-hot rows.
            let rows = _mm512_permutex2var_epi8(
                _mm512_maskz_mov_epi32(miss, slot_bits),
                rows_to_blocks,
                _mm512_maskz_mov_epi32(writer, slot_bits),
            );
            let columns = _mm512_gf2p8affine_epi64_epi8::<0>(unit, rows);
            let upper_setters = _mm512_maskz_permutexvar_epi8(0xCCCC_CCCC_CCCC_CCCC, to_slots[0], columns);
            let low_setters = _mm512_maskz_permutexvar_epi8(0xCCCC_CCCC_CCCC_CCCC, to_slots[1], columns);

            let upper =
                _mm512_permutex2var_epi32(dict, source(upper_setters, slots, up_to_lane, slot_bits), values);
            let low_part =
                _mm512_permutex2var_epi32(dict, source(low_setters, slots, up_to_lane, slot_bits), values);
            let words = _mm512_maskz_ternarylogic_epi32::<0xCA>(nonzero, high_bits, upper, low_part);
            _mm512_storeu_si512(out.as_mut_ptr().cast(), words);

            // The next group's dictionary: entry s is what a word of slot s after the group
            // would see (every lane counts, and the marker bit is s itself).
            let last =
                |setters| _mm512_xor_si512(_mm512_lzcnt_epi32(_mm512_or_si512(setters, lane_bit)), k31);
            let upper = _mm512_permutex2var_epi32(dict, last(upper_setters), values);
            let low_part = _mm512_permutex2var_epi32(dict, last(low_setters), values);
            dict = _mm512_ternarylogic_epi32::<0xCA>(high_bits, upper, low_part);
        }
    }
}

/// The AVX-512 decompressor: validation with the AVX2 [`Unpack`](crate::decompress::Unpack)
/// loops, then [`decode`].
///
/// # Safety
///
/// The CPU must have AVX2, BMI2, POPCNT, AVX-512F, BW, CD, VBMI and GFNI.
#[target_feature(enable = "avx2,bmi2,popcnt,avx512f,avx512bw,avx512cd,avx512vbmi,gfni")]
pub(crate) unsafe fn decompress<const W: usize>(
    input: &[u8],
    s: &mut Scratch<W>,
    preload: u32,
    page: &mut [u8],
) -> Result<(), DecompressError> {
    // SAFETY: every instruction set `Avx2` and `decode` use is enabled here; `decode` gets
    // `v` and `s` from the validation of this stream.
    unsafe { decompress_with::<Avx2, W>(input, s, page, |v, s, page| decode::<W>(v, s, preload, page)) }
}
