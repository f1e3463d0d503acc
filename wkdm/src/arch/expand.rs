//! The SIMD decoders' two stages after validation.
//!
//! 1. Stage 1 (vector): expands the misses and low bits into their words of the page (0
//!    elsewhere) and writes, per word, a *route* byte, the dictionary slot it reads and
//!    writes (the hit's index, the miss's hashed slot, or [`ZERO_ROUTE`] for a zero
//!    word), and a *keep* mask, the bits of that entry it keeps (by tag, see
//!    [`KEEP`](crate::decompress::KEEP)). AVX2 runs [`expand_and_chain`], written over
//!    [`Expand`]; NEON has its own, 16 words per step (`aarch64::neon`).
//! 2. The chain (scalar): the dictionary recurrence `d = dict[slot]; w = (d & keep) |
//!    value; dict[slot] = w` over the words in order, each word's `value` read from and its
//!    result written back to the page. On pages where more than a third of the words are
//!    zero it branches past them.
//!
//! AVX2 interleaves the stages by 16-word group: stage 1 of a group, then the chain of the
//! group before it. The core then overlaps one group's vector work with the previous
//! group's loads and stores, which two passes over the page kept apart; the lag of one group
//! lets the vector stores of a group complete before the chain loads their words (with no
//! lag the decoder was slower than with two passes; docs/perf/wkdm.md). NEON runs the
//! stages one after the other (`chain`).
//!
//! Stage 1 computes the keep masks, 8 per vector instruction, so that the chain does not
//! look them up per word: that took its loop from 10 instructions per word to 8 and the
//! decoder's time down 3-4% on captured pages (SPEC.md section 4).
//!
//! The recurrence is one store-to-load chain only between words of the same slot. An
//! earlier version split the page into 8 interleaved chains, each from an unknown
//! dictionary with taint bits, and fixed the tainted words up in a third, vector stage; with
//! zero words skipped, the single chain is faster on python pages and as fast on node
//! pages (SPEC.md section 4).

#[cfg(target_arch = "x86_64")]
use crate::decompress::Validated;
use crate::format;
use crate::scratch::Scratch;

#[cfg(target_arch = "x86_64")]
use super::lanes::Lanes;

/// The route of a zero word: the chain's dump entry, which absorbs its load and store. All
/// five bits a route uses are set, so that a route can be formed by AND-ing a hit's index
/// and a miss's slot with this value standing for "not selected".
pub(crate) const ZERO_ROUTE: u8 = 31;

/// What the SIMD decoder ([`super::expand`]) needs beyond [`Lanes`].
///
/// Only AVX2 implements it. A 4-lane SSE4.1 version decoded no faster than the scalar
/// decoder (python pages 5% faster, node pages 2% slower; SPEC.md section 4), so SSE4.1
/// decodes with the scalar path. NEON does not implement it either: written over these
/// 4-lane steps its stage 1 took 15 instructions per word, its own 16-word step takes far
/// fewer (`aarch64::neon`).
#[cfg(target_arch = "x86_64")]
pub(crate) trait Expand: Lanes {
    /// The values of `LANES` words: the words at `misses` moved to the lanes selected by
    /// `miss`, in order (the `j`-th selected lane gets `misses[j]`), the `u16` items at
    /// `lows` widened and moved the same way to the lanes selected by `partial` (disjoint
    /// from `miss`), 0 in the other lanes.
    ///
    /// # Safety
    ///
    /// `misses` is valid for reads of `LANES` words and `lows` of 8 items.
    unsafe fn expand_values(misses: *const u32, miss: u32, lows: *const u16, partial: u32) -> Self;

    /// Stores the `LANES` words (little-endian).
    ///
    /// # Safety
    ///
    /// `dst` is valid for writes of `4 * LANES` bytes.
    unsafe fn store(self, dst: *mut u8);

    /// Stores the routes of `LANES` words: the bytes at `indices` moved to the lanes
    /// selected by `hit`, those at `slots` to the lanes selected by `miss` (disjoint from
    /// `hit`), each in order, and [`ZERO_ROUTE`] in the other lanes.
    ///
    /// # Safety
    ///
    /// `indices` and `slots` are valid for reads of 8 bytes, `dst` for writes of 8.
    unsafe fn store_routes(indices: *const u8, hit: u32, slots: *const u8, miss: u32, dst: *mut u8);

    /// Bits 0, 2, 4, ... of `x` gathered into bits 0, 1, 2, ...
    unsafe fn even_bits(x: u32) -> u32;

    /// Lane `k` holds [`KEEP`](crate::decompress::KEEP) of the tag in the 2-bit cell
    /// `k < LANES` of `tags` (higher cells are ignored).
    unsafe fn keep_masks(tags: u32) -> Self;
}

/// Decodes a validated stream into `page`.
///
/// # Safety
///
/// The CPU must have the instruction set of `V`; `v` and `s` must come from a successful
/// `validate` of the same stream (so the counters never pass the unpacked counts).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(crate) unsafe fn decode<V: Expand, const W: usize>(
    v: Validated<'_>,
    s: &mut Scratch<W>,
    preload: u32,
    page: &mut [u8],
) {
    if skips_zeros::<W>(v.zeros) {
        // SAFETY: the caller's contract, passed on.
        unsafe { expand_and_chain::<V, W, true>(v, s, preload, page) };
    } else {
        // SAFETY: as above.
        unsafe { expand_and_chain::<V, W, false>(v, s, preload, page) };
    }
}

/// Whether the chain branches past the zero words of a page with `zeros` of them: on pages
/// where more than a third of the words are zero.
///
/// It pays only where there are enough of them (as in the scalar decoder), and a branch the
/// core has not learnt costs more once the chain is interleaved with stage 1: above a sixth
/// of the words, as the two-pass decoder skipped, GCC's pages decoded markedly slower in
/// sweeps shared with other codecs (docs/perf/wkdm.md). NEON uses the same threshold: no
/// aarch64 hardware has timed another.
#[inline(always)]
fn skips_zeros<const W: usize>(zeros: usize) -> bool {
    3 * zeros > W
}

/// Stage 2 (see the module documentation) for a page with `zeros` zero words, after stage 1
/// has run over the whole page.
#[cfg(target_arch = "aarch64")]
#[inline(always)]
pub(crate) fn chain<const W: usize>(zeros: usize, s: &Scratch<W>, preload: u32, page: &mut [u8]) {
    let mut dict = new_dictionary(preload);
    if skips_zeros::<W>(zeros) {
        for group in 0..W / 16 {
            chain_group::<W, true>(&mut dict, s, group, page);
        }
    } else {
        for group in 0..W / 16 {
            chain_group::<W, false>(&mut dict, s, group, page);
        }
    }
}

/// Stage 1 (see the module documentation), `LANES` words per step, each 16-word group
/// followed by stage 2 of the group before it.
///
/// # Safety
///
/// As for [`decode`].
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn expand_and_chain<V: Expand, const W: usize, const SKIP: bool>(
    v: Validated<'_>,
    s: &mut Scratch<W>,
    preload: u32,
    page: &mut [u8],
) {
    assert!(page.len() == 4 * W && W % 16 == 0 && v.tags.len() == W / 4 && v.misses <= W);
    for (slot, &w) in s.miss_slots.iter_mut().zip(&s.misses[..v.misses]) {
        *slot = format::slot(w) as u8;
    }
    let lane_bits = (1u32 << V::LANES) - 1;
    let misses = s.misses.as_ptr();
    let miss_slots = s.miss_slots.as_ptr();
    let lows = s.lows.as_ptr();
    let indices = s.indices.as_ptr();
    let routes = s.word_routes.as_mut_ptr();
    let (mut mi, mut pi, mut hi) = (0usize, 0usize, 0usize);
    let mut dict = new_dictionary(preload);
    for (group, tag_word) in v.tags.chunks_exact(4).enumerate() {
        // Tag k of the group's words at bits 2k, 2k + 1; PARTIAL = 1, MISS = 2, EXACT = 3.
        let tags = format::sequential_tags(format::le32(tag_word));
        let (low, high) = (tags & 0x5555_5555, (tags >> 1) & 0x5555_5555);
        // SAFETY: the caller guarantees the instruction set.
        let (misses_16, partials_16, hits_16) =
            unsafe { (V::even_bits(high & !low), V::even_bits(low & !high), V::even_bits(low)) };
        for step in 0..16 / V::LANES {
            let i = 16 * group + V::LANES * step;
            let shift = V::LANES * step;
            let (miss, partial, hit) = (
                (misses_16 >> shift) & lane_bits,
                (partials_16 >> shift) & lane_bits,
                (hits_16 >> shift) & lane_bits,
            );
            // SAFETY: the caller guarantees the instruction set. The counters are <= the
            // validated counts <= W, and the scratch arrays have SLACK >= 16 readable items
            // after their W items (stale values there land in unselected lanes, which are 0);
            // the page and route stores cover words i..i + LANES <= W. Zero words read and
            // write the dump entry (their value and keep mask are 0), unless stage 2 skips
            // them, which it recognises by their route.
            unsafe {
                let values = V::expand_values(misses.add(mi), miss, lows.add(pi), partial);
                values.store(page.as_mut_ptr().add(4 * i));
                V::store_routes(indices.add(hi), hit, miss_slots.add(mi), miss, routes.add(i));
            }
            // SAFETY: the caller guarantees the instruction set; i + LANES <= W.
            unsafe { V::keep_masks(tags >> (2 * shift)).store(s.keeps.as_mut_ptr().add(i).cast()) };
            mi += miss.count_ones() as usize;
            pi += partial.count_ones() as usize;
            hi += hit.count_ones() as usize;
        }
        if group > 0 {
            chain_group::<W, SKIP>(&mut dict, s, group - 1, page);
        }
    }
    chain_group::<W, SKIP>(&mut dict, s, W / 16 - 1, page);
}

/// The chain's dictionary at the start of a page: an entry per byte value, so that a route
/// indexes it without a mask or bounds check; slot [`ZERO_ROUTE`] is the dump entry. The
/// mask (`& 31` into 32 entries) cost an instruction per word that, once the stages
/// overlap, costs time; filling 1 KiB per page costs less (docs/perf/wkdm.md).
#[inline(always)]
fn new_dictionary(preload: u32) -> [u32; 256] {
    [preload; 256]
}

/// Stage 2 (see the module documentation) over the 16 words of `group`: the page holds
/// each MISS word, the low bits of each PARTIAL word and 0 elsewhere, `s.word_routes` each
/// word's route and `s.keeps` its keep mask; every word's value replaces them. With `SKIP`
/// zero words are branched past (their 0 is already in the page); without, they run
/// through the dump entry like the others.
#[inline(always)]
fn chain_group<const W: usize, const SKIP: bool>(
    dict: &mut [u32; 256],
    s: &Scratch<W>,
    group: usize,
    page: &mut [u8],
) {
    let words = page[64 * group..64 * group + 64].chunks_exact_mut(4);
    let routes = &s.word_routes[16 * group..16 * group + 16];
    let keeps = &s.keeps[16 * group..16 * group + 16];
    for ((word, &route), &keep) in words.zip(routes).zip(keeps) {
        if SKIP && route == ZERO_ROUTE {
            continue;
        }
        let slot = usize::from(route);
        let value = format::le32(word);
        let w = (dict[slot] & keep) | value;
        dict[slot] = w;
        word.copy_from_slice(&w.to_le_bytes());
    }
}
