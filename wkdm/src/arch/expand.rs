//! The SIMD decoder, written over [`Expand`]: three stages after validation.
//!
//! 1. [`expand_streams`] (vector): expands the misses and low bits into their words of the
//!    page (0 elsewhere) and writes one *route* byte per word: the dictionary slot it reads
//!    and writes (the hit's index, the miss's hashed slot, or the dump entry 16 for a zero
//!    word) in bits 0-4 and its tag in bits 5-6.
//! 2. [`run_chains`] (scalar): the dictionary recurrence
//!    `d = dict[slot]; w = (d & keep) | value; dict[slot] = w` is one long store-to-load
//!    chain. It is split into [`CHUNKS`] runs of words whose chains are interleaved, each
//!    starting from an *unknown* dictionary whose entries are 0 with both taint bits set: a
//!    word inherits the taint of the bits it takes from the dictionary (a PARTIAL word keeps
//!    only the upper taint, a MISS none). On pages where more than a third of the words
//!    are zero it branches past them instead (see [`decode`]).
//! 3. [`Expand::fix_up`]: every word's tainted bits come from its chunk's true initial
//!    dictionary, which is the previous chunk's final dictionary fixed up the same way
//!    (chunk 0: the preload).

use core::ops::Range;

use crate::decompress::{DUMP_ENTRY, Validated};
use crate::format::{self, LOW_MASK};
use crate::scratch::Scratch;

use super::lanes::Lanes;

/// Independent dictionary chains the decoder's second stage runs interleaved.
const CHUNKS: usize = 8;
/// Taint bit of a decoded word: its upper 22 bits come from the chunk's initial dictionary.
const TAINT_UPPER: u64 = 1 << 32;
/// Taint bit of a decoded word: its low 10 bits come from the chunk's initial dictionary.
const TAINT_LOWER: u64 = 1 << 33;
/// Per tag (ZERO, PARTIAL, MISS, EXACT): the bits of the dictionary entry a word keeps.
const KEEP: [u64; 4] = [0, !(LOW_MASK as u64) & !TAINT_LOWER, 0, u64::MAX];

/// What the SIMD decoder ([`super::expand`]) needs beyond [`Lanes`].
///
/// Only AVX2 implements it. A 4-lane version (SSE4.1, with a scalar `fix_up`) was
/// measured slower than the scalar decoder here (pagebench, 3000 pages, median ticks:
/// 6370-6604 against 5850-6110), so SSE4.1 and NEON decode with the scalar path.
pub(crate) trait Expand: Lanes {
    /// The words at `src` moved to the lanes selected by `mask`, in order (the `j`-th
    /// selected lane gets `src[j]`); 0 in the other lanes.
    ///
    /// # Safety
    ///
    /// `src` is valid for reads of `LANES` words.
    unsafe fn expand_words(src: *const u32, mask: u32) -> Self;

    /// The same for `u16` values, widened to words.
    ///
    /// # Safety
    ///
    /// `src` is valid for reads of 8 items.
    unsafe fn expand_lows(src: *const u16, mask: u32) -> Self;

    /// Lane-wise or.
    unsafe fn or(self, other: Self) -> Self;

    /// Stores the `LANES` words (little-endian).
    ///
    /// # Safety
    ///
    /// `dst` is valid for writes of `4 * LANES` bytes.
    unsafe fn store(self, dst: *mut u8);

    /// The bytes at `src` moved to the bytes `k < LANES` selected by `mask`, in order, as
    /// a little-endian `u64`; 0 in the other bytes.
    ///
    /// # Safety
    ///
    /// `src` is valid for reads of 16 bytes.
    unsafe fn expand_bytes(src: *const u8, mask: u32) -> u64;

    /// Bits 0, 2, 4, ... of `x` (`2 * LANES` bits) gathered into bits 0, 1, 2, ...
    unsafe fn even_bits(x: u32) -> u32;

    /// The 2-bit cell `k < LANES` of `x` moved to bits `8k + 5`, `8k + 6` (beside a slot
    /// in a route byte).
    unsafe fn tags_to_bytes(x: u32) -> u64;

    /// Stage 3 of the decoder for the words `range` of one chunk (a multiple of 8 of
    /// them): each chained word of `s.wide`, its tainted bits taken from `initial` (the
    /// chunk's true initial dictionary, see [`resolve_word`]), into `page`; with `SKIP`
    /// (stage 2 skipped the zero words, whose `wide` items are stale) 0 for zero words.
    ///
    /// # Safety
    ///
    /// `range.end <= W`, and `s.wide` and `s.word_routes` hold the decoder's stages 1 and 2
    /// for `page` (`4 * W` bytes).
    unsafe fn fix_up<const W: usize, const SKIP: bool>(
        s: &Scratch<W>,
        initial: &[u32; 16],
        range: Range<usize>,
        page: &mut [u8],
    );
}

/// Decodes a validated stream into `page`.
///
/// # Safety
///
/// The CPU must have the instruction set of `V`; `v` and `s` must come from a successful
/// `validate` of the same stream (so the counters never pass the unpacked counts).
#[inline(always)]
pub(crate) unsafe fn decode<V: Expand, const W: usize>(
    v: Validated<'_>,
    s: &mut Scratch<W>,
    preload: u32,
    page: &mut [u8],
) {
    // SAFETY: the caller's contract, passed on.
    unsafe { expand_streams::<V, W>(v, s, page) };
    // Skipping zero words in stage 2 pays only where they are many (as in the scalar
    // decoder): with more than a third of the words zero, python pages 3224-3250 -> 2990-3016
    // ticks, node pages unchanged; on every page, node pages were 2-4% slower.
    // SAFETY: the caller's contract, passed on; stage 1 just ran.
    unsafe {
        if 3 * v.zeros > W {
            chain_and_fix_up::<V, W, true>(s, preload, page);
        } else {
            chain_and_fix_up::<V, W, false>(s, preload, page);
        }
    }
}

/// Stages 2 and 3. With `SKIP`, stage 2 branches past zero words (their `wide` items stay
/// stale) and stage 3 zeroes them; without, zero words run through the chain like the
/// others (through the dump entry, as 0).
///
/// # Safety
///
/// As for [`decode`], after stage 1.
#[inline(always)]
unsafe fn chain_and_fix_up<V: Expand, const W: usize, const SKIP: bool>(
    s: &mut Scratch<W>,
    preload: u32,
    page: &mut [u8],
) {
    // 32 entries: slot 16 is the dump entry; `& 31` keeps every index in bounds.
    let mut dicts = [[TAINT_UPPER | TAINT_LOWER; 32]; CHUNKS];
    run_chains::<W, SKIP>(s, page, &mut dicts);
    let mut initial = [preload; 16];
    let per_chunk = W / CHUNKS;
    for (c, dict) in dicts.iter().enumerate() {
        // SAFETY: the caller guarantees the instruction set; `s.wide` and the routes were
        // just written by the two stages above.
        unsafe { V::fix_up::<W, SKIP>(s, &initial, c * per_chunk..(c + 1) * per_chunk, page) };
        initial = core::array::from_fn(|slot| resolve_word(dict[slot], initial[slot]));
    }
}

/// The true value of a chained word (or final dictionary entry) `e` whose chunk began with
/// `initial` in its slot: its tainted bits come from `initial`.
#[inline(always)]
fn resolve_word(e: u64, initial: u32) -> u32 {
    let upper = 0u32.wrapping_sub((e >> 32) as u32 & 1) & !LOW_MASK;
    let lower = 0u32.wrapping_sub((e >> 33) as u32 & 1) & LOW_MASK;
    e as u32 | (initial & (upper | lower))
}

/// Stage 1, `LANES` words per step (see the module documentation).
///
/// # Safety
///
/// As for [`decode`].
#[inline(always)]
unsafe fn expand_streams<V: Expand, const W: usize>(v: Validated<'_>, s: &mut Scratch<W>, page: &mut [u8]) {
    assert!(page.len() == 4 * W && W % 16 == 0 && v.tags.len() == W / 4 && v.misses <= W);
    for (slot, &w) in s.miss_slots.iter_mut().zip(&s.misses[..v.misses]) {
        *slot = format::SLOT[((w >> 10) & 0xFF) as usize];
    }
    let dump_entry = u64::from(DUMP_ENTRY) * 0x0101_0101_0101_0101;
    let lane_bits = (1u32 << (2 * V::LANES)) - 1;
    let misses = s.misses.as_ptr();
    let miss_slots = s.miss_slots.as_ptr();
    let lows = s.lows.as_ptr();
    let indices = s.indices.as_ptr();
    let (mut mi, mut pi, mut hi) = (0usize, 0usize, 0usize);
    for (group, tag_word) in v.tags.chunks_exact(4).enumerate() {
        let tags = format::sequential_tags(format::le32(tag_word));
        for step in 0..16 / V::LANES {
            let i = 16 * group + V::LANES * step;
            // Tag k of these words at bits 2k, 2k + 1; PARTIAL = 1, MISS = 2, EXACT = 3.
            let lane_tags = (tags >> (2 * V::LANES * step)) & lane_bits;
            let (low, high) = (lane_tags & 0x5555, (lane_tags >> 1) & 0x5555);
            // SAFETY: the caller guarantees the instruction set. The counters are <= the
            // validated counts <= W, and the scratch arrays have SLACK >= 16 readable items
            // after their W items (stale values there land in unselected lanes, which are 0);
            // the page store covers words i..i + LANES <= W.
            let (miss, partial, hit, slots) = unsafe {
                let (miss, partial, hit) =
                    (V::even_bits(high & !low), V::even_bits(low & !high), V::even_bits(low));
                let values = V::expand_words(misses.add(mi), miss).or(V::expand_lows(lows.add(pi), partial));
                values.store(page.as_mut_ptr().add(4 * i));
                let slots = V::expand_bytes(indices.add(hi), hit) | V::expand_bytes(miss_slots.add(mi), miss);
                (miss, partial, hit, slots)
            };
            // Zero words read and write the dump entry (their value and keep mask are 0).
            let word_slots = slots | (dump_entry & !super::byte_mask(hit | miss));
            // SAFETY: the caller guarantees the instruction set.
            let routes = word_slots | unsafe { V::tags_to_bytes(lane_tags) };
            s.word_routes[i..i + V::LANES].copy_from_slice(&routes.to_le_bytes()[..V::LANES]);
            mi += miss.count_ones() as usize;
            pi += partial.count_ones() as usize;
            hi += hit.count_ones() as usize;
        }
    }
}

/// Stage 2 (see the module documentation): `page` holds each MISS word, the low bits of
/// each PARTIAL word and 0 elsewhere; `s.word_routes` each word's route; `dicts` the
/// unknown dictionaries. Leaves each word's chained value in `s.wide` and each chunk's
/// final dictionary in `dicts`.
#[inline(always)]
fn run_chains<const W: usize, const SKIP: bool>(
    s: &mut Scratch<W>,
    page: &[u8],
    dicts: &mut [[u64; 32]; CHUNKS],
) {
    assert!(page.len() == 4 * W && W % (8 * CHUNKS) == 0);
    let q = W / CHUNKS;
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
                if SKIP && route >> 5 == 0 {
                    continue;
                }
                let slot = route & 31;
                let value = u64::from(u32::from_le(values.add(4 * i).cast::<u32>().read_unaligned()));
                let w = (*dict.get_unchecked(slot) & *KEEP.get_unchecked(route >> 5 & 3)) | value;
                *dict.get_unchecked_mut(slot) = w;
                *wide.add(i) = w;
            }
        }
    }
}
