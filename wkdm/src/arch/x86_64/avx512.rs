//! AVX-512 (F, BW, CD, VL, VBMI, VBMI2) + GFNI: a decoder and the compressor's dictionary
//! replay, both resolving the dictionary 16 words at a time in registers, so no word waits
//! on a store to memory; and the 16-lane [`Lanes`] of the compressor's classify kernel.
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
//! On 3000 captured pages per corpus (pagebench, median TSC ticks,
//! `benches/results/corpus-runs.txt`) it decodes python and node pages in 1170 and 1196
//! ticks, against 2236 / 2782 for the AVX2 decoder and 1378 / 1326 for C LZ4 in the same run.
//!
//! Validation is shared with the AVX2 path ([`Avx2`]'s [`Unpack`](crate::decompress::Unpack)
//! loops).
//!
//! The compressor's replay ([`replay`]) is the same resolution with one bit matrix (every
//! non-zero word sets its entry) and the strictly earlier lanes. It took the compressor
//! from 1872 to 1352-1378 ticks per python page and from 2262 to 1404 per node page (C LZ4
//! 5252-5564 in the same runs). The shared classify kernel at 16 lanes ([`Avx512`]) then
//! took it to 1092-1144 on both corpora.

use core::arch::x86_64::*;
use core::ops::Range;

use crate::compress::Counts;
use crate::decompress::{Validated, validate_page};
use crate::format::{self, LOW_MASK, SLOT};
use crate::pipeline::{Dict, KernelResult};
use crate::scratch::Scratch;
use pagecodec::DecompressError;

use super::super::classify;
use super::super::lanes::Lanes;
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

/// Byte permute (`vpermt2b`) that lays out two 16x16 bit matrices (rows: lanes as 16-bit
/// slot masks; matrix `t` in source `t`, in the decoder the misses and the writers) as
/// eight 8x8 blocks, one per 64-bit word: block `q = 4t + 2rh + ch` of
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
/// blocks to one 32-bit lane per slot `s` of matrix `t`: the lanes whose row has bit `s`,
/// lane `k` at bit `16 + k`.
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

/// Lane `k`: bits `16 + j` for the lanes `j < k` (`STRICT`) or `j <= k`, the lanes before
/// or at `k` in a [`BLOCKS_TO_SLOTS`] mask.
const fn lanes_before<const STRICT: bool>() -> Words16 {
    let mut table = [0u32; 16];
    let mut k = 0;
    while k < 16 {
        let lanes = if STRICT { (1u32 << k) - 1 } else { (2u32 << k) - 1 };
        table[k] = lanes << 16;
        k += 1;
    }
    Words16(table)
}

/// Lane `k`: the lanes at or before `k` (the decoder: a word's own MISS or PARTIAL sets
/// its entry).
static UP_TO_LANE: Words16 = lanes_before::<false>();

/// Lane `k`: the lanes before `k` (the compressor: a word is compared with the entry
/// before it).
static BEFORE_LANE: Words16 = lanes_before::<true>();

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

/// The tables in registers, and the steps the decoder and the compressor's replay share.
#[derive(Clone, Copy)]
struct Consts {
    slot_tables: [__m512i; 4],
    rows_to_blocks: __m512i,
    to_slots: [__m512i; 2],
    lane_bit: __m512i,
    low_byte: __m512i,
    unit: __m512i,
    one: __m512i,
    k31: __m512i,
}

impl Consts {
    /// # Safety
    ///
    /// The CPU has AVX-512F.
    #[inline(always)]
    unsafe fn load() -> Consts {
        // SAFETY: the caller guarantees AVX-512F.
        unsafe {
            Consts {
                // Written out, not `map`ped: a closure run by `array::map` lacks this
                // function's target features, so with several codegen units the intrinsics
                // in it are compiled as calls (see docs/perf/wkdm.md, cargo's default
                // release profile).
                slot_tables: [
                    load(&SLOT_TABLES[0]),
                    load(&SLOT_TABLES[1]),
                    load(&SLOT_TABLES[2]),
                    load(&SLOT_TABLES[3]),
                ],
                rows_to_blocks: load(&ROWS_TO_BLOCKS),
                to_slots: [load(&BLOCKS_TO_SLOTS[0]), load(&BLOCKS_TO_SLOTS[1])],
                lane_bit: load(&LANE_BIT),
                low_byte: _mm512_set1_epi32(0xFF),
                unit: _mm512_set1_epi64(UNIT_BYTES as i64),
                one: _mm512_set1_epi32(1),
                k31: _mm512_set1_epi32(31),
            }
        }
    }

    /// Each lane's slot: `SLOT[(w >> 10) & 0xFF]` of the lane's word `w`. `vpermt2b` reads 7
    /// index bits, so bit 7 picks one of two 128-entry lookups (into byte 0 of each lane;
    /// the mask clears the others).
    ///
    /// # Safety
    ///
    /// The CPU has AVX-512F, BW and VBMI.
    #[inline(always)]
    unsafe fn hashed_slots(self, words: __m512i) -> __m512i {
        // SAFETY: the caller guarantees the instruction sets.
        unsafe {
            let hash = _mm512_srli_epi32::<10>(words);
            let first_half = _mm512_permutex2var_epi8(self.slot_tables[0], hash, self.slot_tables[1]);
            let second_half = _mm512_permutex2var_epi8(self.slot_tables[2], hash, self.slot_tables[3]);
            let looked_up = _mm512_mask_blend_epi8(_mm512_movepi8_mask(hash), first_half, second_half);
            _mm512_and_si512(looked_up, self.low_byte)
        }
    }

    /// Per slot `s` (lane `s` of each result), the lanes `k` whose row in `rows[t]` has bit
    /// `s` set, at bit `16 + k`: the transposes of two 16x16 bit matrices, rows as lanes.
    ///
    /// # Safety
    ///
    /// The CPU has AVX-512F, BW, VBMI and GFNI.
    #[inline(always)]
    unsafe fn setters(self, rows: [__m512i; 2]) -> [__m512i; 2] {
        // SAFETY: the caller guarantees the instruction sets.
        unsafe {
            let blocks = _mm512_permutex2var_epi8(rows[0], self.rows_to_blocks, rows[1]);
            let columns = _mm512_gf2p8affine_epi64_epi8::<0>(self.unit, blocks);
            // Written out, not `map`ped (see `Consts::load`).
            let upper_halves = 0xCCCC_CCCC_CCCC_CCCC; // bytes 2 and 3 of each lane
            [
                _mm512_maskz_permutexvar_epi8(upper_halves, self.to_slots[0], columns),
                _mm512_maskz_permutexvar_epi8(upper_halves, self.to_slots[1], columns),
            ]
        }
    }

    /// Per word, the index (for `vpermt2d` with the group's dictionary first and the group's
    /// words or stream values second) of the word that last set its half of the entry:
    /// `setters` holds per slot the lanes that set that half (see [`Consts::setters`]),
    /// `slots` each word's slot and `slot_bits` its `1 << slot`; `lanes` keeps, per word,
    /// the lanes that count ([`UP_TO_LANE`] or [`BEFORE_LANE`]).
    ///
    /// The highest set bit of `(setters[slot] & lanes) | slot_bits` is `16 + k` for the
    /// last such lane `k`, or `slot` (an entry of the dictionary) if there is none:
    /// `31 - lzcnt`.
    ///
    /// # Safety
    ///
    /// The CPU has AVX-512F and CD.
    #[inline(always)]
    unsafe fn source(self, setters: __m512i, slots: __m512i, lanes: __m512i, slot_bits: __m512i) -> __m512i {
        // SAFETY: the caller guarantees the instruction sets.
        unsafe {
            let candidates =
                _mm512_ternarylogic_epi32::<0xEA>(_mm512_permutexvar_epi32(slots, setters), lanes, slot_bits);
            _mm512_xor_si512(_mm512_lzcnt_epi32(candidates), self.k31)
        }
    }

    /// Per slot `s`, the same index for the entry after the group: what a word of slot `s`
    /// after the group would see (every lane counts, and the marker bit is `s` itself).
    ///
    /// # Safety
    ///
    /// The CPU has AVX-512F and CD.
    #[inline(always)]
    unsafe fn last(self, setters: __m512i) -> __m512i {
        // SAFETY: the caller guarantees the instruction sets.
        unsafe { _mm512_xor_si512(_mm512_lzcnt_epi32(_mm512_or_si512(setters, self.lane_bit)), self.k31) }
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
        let c = Consts::load();
        let up_to_lane = load(&UP_TO_LANE);
        let high_bits = _mm512_set1_epi32(!LOW_MASK as i32);
        let mut dict = _mm512_set1_epi32(preload as i32);
        // Indexed rather than two zipped chunk iterators: built with cargo's default release
        // profile (16 codegen units, no LTO), `Iterator::zip` stayed a call, the chunk sizes
        // became run-time values and the loop reloaded its constants from the stack in every
        // group (docs/perf/wkdm.md, "Built from a user's crate").
        for group in 0..W / 16 {
            let tags = format::sequential_tags(format::le32(&v.tags[4 * group..4 * group + 4]));
            let out = &mut page[64 * group..64 * group + 64];
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
            // Slots: the index, or the miss's hashed slot.
            let slots = _mm512_mask_mov_epi32(index, miss, c.hashed_slots(missed));
            let slot_bits = _mm512_sllv_epi32(c.one, slots);

            // Per slot, the lanes that set its upper bits (misses) and its low bits (misses
            // and partials).
            let [upper_setters, low_setters] = c.setters([
                _mm512_maskz_mov_epi32(miss, slot_bits),
                _mm512_maskz_mov_epi32(writer, slot_bits),
            ]);
            let upper = _mm512_permutex2var_epi32(
                dict,
                c.source(upper_setters, slots, up_to_lane, slot_bits),
                values,
            );
            let low_part =
                _mm512_permutex2var_epi32(dict, c.source(low_setters, slots, up_to_lane, slot_bits), values);
            let words = _mm512_maskz_ternarylogic_epi32::<0xCA>(nonzero, high_bits, upper, low_part);
            _mm512_storeu_si512(out.as_mut_ptr().cast(), words);

            let upper = _mm512_permutex2var_epi32(dict, c.last(upper_setters), values);
            let low_part = _mm512_permutex2var_epi32(dict, c.last(low_setters), values);
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
    unsafe {
        let Some(v) = validate_page::<Avx2, W>(input, s, page)? else {
            return Ok(());
        };
        decode::<W>(v, s, preload, page);
    }
    Ok(())
}

/// The compressor's dictionary replay, with the contract of
/// [`recurrence`](crate::pipeline::recurrence), 16 words per step: each word's `prev` is the
/// last earlier non-zero word of its slot in the group, or the group's dictionary entry,
/// found as in the decoder with one bit matrix (the non-zero words; `setters` lays out two,
/// and the second, a copy, is not used). The dictionary travels in `dict.entries[..16]`
/// between calls. Zero words get a `prev` and a slot too, which the kernels ignore.
///
/// # Safety
///
/// The CPU must have AVX-512F, BW, CD, VBMI and GFNI.
#[target_feature(enable = "avx512f,avx512bw,avx512cd,avx512vbmi,gfni")]
pub(crate) unsafe fn replay<const W: usize>(
    page: &[u8],
    prev: &mut [u32; W],
    slots: &mut [u8; W],
    dict: &mut Dict,
    groups: Range<usize>,
) {
    let words = 16 * groups.start..16 * groups.end;
    assert!(page.len() == 4 * W && words.end <= W);
    // SAFETY: the instruction sets are enabled here. Each step reads the group's 64 bytes of
    // `page` and writes its 16 items of `prev` and `slots` (`16 * group + 16 <= W`); the
    // dictionary is the first 64 bytes of `dict`.
    unsafe {
        let c = Consts::load();
        let before_lane = load(&BEFORE_LANE);
        let mut entries = _mm512_loadu_si512(dict.entries.as_ptr().cast());
        for i in words.step_by(16) {
            let group = _mm512_loadu_si512(page.as_ptr().add(4 * i).cast());
            let nonzero = _mm512_test_epi32_mask(group, group);
            let group_slots = c.hashed_slots(group);
            let slot_bits = _mm512_sllv_epi32(c.one, group_slots);
            let rows = _mm512_maskz_mov_epi32(nonzero, slot_bits);
            let [setters, _] = c.setters([rows, rows]);
            let compared = c.source(setters, group_slots, before_lane, slot_bits);
            _mm512_storeu_si512(
                prev.as_mut_ptr().add(i).cast(),
                _mm512_permutex2var_epi32(entries, compared, group),
            );
            _mm_storeu_si128(slots.as_mut_ptr().add(i).cast(), _mm512_cvtepi32_epi8(group_slots));
            entries = _mm512_permutex2var_epi32(entries, c.last(setters), group);
        }
        _mm512_storeu_si512(dict.entries.as_mut_ptr().cast(), entries);
    }
}

/// Sixteen words in an AVX-512 register: the compressor's classify kernel
/// ([`classify::classify`]) at 16 lanes, with masks from compares into mask registers and
/// left-packs by the register forms of `vpcompressd` and `vpcompressb`.
#[derive(Clone, Copy)]
pub(crate) struct Avx512(__m512i);

impl Lanes for Avx512 {
    const LANES: usize = 16;

    #[inline(always)]
    unsafe fn load(src: *const u8) -> Self {
        // SAFETY: the caller guarantees 64 readable bytes and AVX-512F.
        Avx512(unsafe { _mm512_loadu_si512(src.cast()) })
    }

    #[inline(always)]
    unsafe fn zero_lanes(self) -> u32 {
        // SAFETY: the caller guarantees AVX-512F.
        u32::from(unsafe { _mm512_testn_epi32_mask(self.0, self.0) })
    }

    #[inline(always)]
    unsafe fn equal_lanes(self, other: Self) -> u32 {
        // SAFETY: the caller guarantees AVX-512F.
        u32::from(unsafe { _mm512_cmpeq_epi32_mask(self.0, other.0) })
    }

    #[inline(always)]
    unsafe fn same_upper_lanes(self, other: Self) -> u32 {
        // SAFETY: the caller guarantees AVX-512F.
        unsafe {
            let near = _mm512_srli_epi32::<10>(_mm512_xor_si512(self.0, other.0));
            u32::from(_mm512_testn_epi32_mask(near, near))
        }
    }

    #[inline(always)]
    unsafe fn store_packed(self, mask: u32, dst: *mut u32) {
        // SAFETY: the caller guarantees 16 writable words and AVX-512F; `mask` has 16 bits.
        unsafe { _mm512_storeu_si512(dst.cast(), _mm512_maskz_compress_epi32(mask as u16, self.0)) }
    }

    #[inline(always)]
    unsafe fn store_packed_lows(self, mask: u32, dst: *mut u16) {
        // SAFETY: the caller guarantees 16 writable items (32 bytes) and AVX-512F.
        unsafe {
            let lows = _mm512_and_si512(self.0, _mm512_set1_epi32(LOW_MASK as i32));
            let packed = _mm512_maskz_compress_epi32(mask as u16, lows);
            _mm256_storeu_si256(dst.cast(), _mm512_cvtepi32_epi16(packed));
        }
    }

    #[inline(always)]
    unsafe fn store_packed_bytes(src: *const u8, mask: u32, dst: *mut u8) {
        // SAFETY: the caller guarantees 16 readable and 16 writable bytes, AVX-512VL and
        // VBMI2.
        unsafe {
            _mm_storeu_si128(dst.cast(), _mm_maskz_compress_epi8(mask as u16, _mm_loadu_si128(src.cast())))
        }
    }

    #[inline(always)]
    unsafe fn sequential_tag_word(low: u32, high: u32) -> u32 {
        // SAFETY: the caller guarantees BMI2, all that AVX2's version uses.
        unsafe { Avx2::sequential_tag_word(low, high) }
    }

    #[inline(always)]
    unsafe fn stream_order_tags(tags: &mut [u8]) {
        // SAFETY: the caller guarantees AVX-512F, which includes AVX2, all that AVX2's
        // version uses; whole tag words (the caller's).
        unsafe { Avx2::stream_order_tags(tags) }
    }
}

/// The AVX-512 instance of [`classify::classify`], 16 lanes at a time.
///
/// # Safety
///
/// The CPU must have AVX-512F, BW, VL and VBMI2, BMI2 and POPCNT.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vbmi2,bmi2,popcnt")]
pub(crate) unsafe fn classify<const W: usize>(
    page: &[u8],
    s: &mut Scratch<W>,
    dict: &mut Dict,
    early_abort: bool,
    groups: Range<usize>,
    counts: Counts,
) -> KernelResult {
    // SAFETY: the instruction sets `Avx512` uses are enabled here.
    unsafe { classify::classify::<Avx512, W, 0>(page, s, dict, early_abort, groups, counts) }
}

#[cfg(test)]
mod tests {
    use pagecodec::testing::Rng;

    use super::*;

    /// The lane's words of a vector.
    fn lanes(v: __m512i) -> [u32; 16] {
        // SAFETY: `__m512i` and `[u32; 16]` have the same size, and every bit pattern is a
        // valid `[u32; 16]`.
        unsafe { core::mem::transmute(v) }
    }

    fn vector(words: [u32; 16]) -> __m512i {
        // SAFETY: as above, the other way round.
        unsafe { core::mem::transmute(words) }
    }

    /// `Consts::hashed_slots` of 16 words.
    #[target_feature(enable = "avx512f,avx512bw,avx512vbmi")]
    fn hashed(words: [u32; 16]) -> [u32; 16] {
        // SAFETY: the instruction sets are enabled here.
        lanes(unsafe { Consts::load().hashed_slots(vector(words)) })
    }

    /// Per half (miss rows, writer rows): `Consts::setters`, then `Consts::source` with the
    /// lanes up to each word and before it, and `Consts::last`.
    #[target_feature(enable = "avx512f,avx512bw,avx512cd,avx512vbmi,gfni")]
    fn resolve(slots: [u32; 16], sets: [u16; 2]) -> [[[u32; 16]; 4]; 2] {
        // SAFETY: the instruction sets are enabled here.
        unsafe {
            let c = Consts::load();
            let slots = vector(slots);
            let slot_bits = _mm512_sllv_epi32(c.one, slots);
            let rows = sets.map(|set| _mm512_maskz_mov_epi32(set, slot_bits));
            c.setters(rows).map(|setters| {
                [
                    lanes(setters),
                    lanes(c.source(setters, slots, load(&UP_TO_LANE), slot_bits)),
                    lanes(c.source(setters, slots, load(&BEFORE_LANE), slot_bits)),
                    lanes(c.last(setters)),
                ]
            })
        }
    }

    #[test]
    fn hashed_slots_are_the_slot_table() {
        if !crate::arch::avx512_available() {
            return;
        }
        let mut rng = Rng::new(7);
        for first in (0..256).step_by(16) {
            // Hash value `first + k` in lane k, random bits around it.
            let words: [u32; 16] = core::array::from_fn(|k| {
                let noise = rng.next_u64() as u32 & !(0xFF << 10);
                noise | ((first + k as u32) << 10)
            });
            // SAFETY: AVX-512 F, BW and VBMI are available (checked above).
            let got = unsafe { hashed(words) };
            for k in 0..16 {
                assert_eq!(got[k] as usize, format::slot(words[k]), "hash {}", first as usize + k);
            }
        }
    }

    /// The lane-by-lane model: the last lane `j` in `range` whose slot is `slot` and whose
    /// bit is set in `set`, as `16 + j`, else `slot`.
    fn model_source(slots: &[u32; 16], set: u16, slot: u32, range: core::ops::Range<usize>) -> u32 {
        range.rev().find(|&j| slots[j] == slot && set & (1 << j) != 0).map_or(slot, |j| 16 + j as u32)
    }

    #[test]
    fn transposed_setters_give_the_last_setting_lane() {
        if !crate::arch::avx512_available() {
            return;
        }
        let mut rng = Rng::new(11);
        for round in 0..2000 {
            // Few distinct slots in some rounds (long same-slot runs), any in others.
            let spread = [1, 2, 4, 16][round % 4];
            let slots: [u32; 16] = core::array::from_fn(|_| rng.below(spread) as u32 * (16 / spread) as u32);
            let sets = [rng.next_u64() as u16, rng.next_u64() as u16];
            // SAFETY: the instruction sets are available (checked above).
            let got = unsafe { resolve(slots, sets) };
            for (half, &set) in sets.iter().enumerate() {
                let [setters, up_to, before, last] = got[half];
                for s in 0..16 {
                    let lanes = (0..16).filter(|&k| slots[k] == s && set & (1 << k) != 0);
                    assert_eq!(
                        setters[s as usize],
                        lanes.fold(0, |m, k| m | 1 << (16 + k)),
                        "{slots:?} {set:#x}"
                    );
                    assert_eq!(last[s as usize], model_source(&slots, set, s, 0..16), "{slots:?} {set:#x}");
                }
                for k in 0..16 {
                    assert_eq!(up_to[k], model_source(&slots, set, slots[k], 0..k + 1), "{slots:?} {set:#x}");
                    assert_eq!(before[k], model_source(&slots, set, slots[k], 0..k), "{slots:?} {set:#x}");
                }
            }
        }
    }
}
