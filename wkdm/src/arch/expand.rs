//! The SIMD decoders' two stages after validation.
//!
//! 1. Stage 1 (vector): expands the misses and low bits into their words of the page (0
//!    elsewhere) and writes, per word, a *route* byte, the dictionary entries it reads and
//!    writes (the hit's index, the miss's hashed slot, or [`ZERO_ROUTE`] for a zero word;
//!    see [`MISS_ROUTE`]), and a *keep* mask, the bits of that entry it keeps (by tag, see
//!    [`KEEP`](crate::decompress::KEEP)). AVX2 runs [`expand_and_chain`], written over
//!    [`Expand`]; NEON has its own, 16 words per step (`aarch64::neon`).
//! 2. The chain (scalar): the dictionary recurrence `d = dict[slot]; w = (d & keep) |
//!    value; dict[slot] = w` over the words in order, each word's `value` read from and its
//!    result written back to the page. On pages where more than a third of the words are
//!    zero it branches past them.
//!
//! AVX2 interleaves the stages by 8-word step: stage 1 of a step, then the chain of the
//! step [`CHAIN_LAG`] steps before it. The core then overlaps one step's vector work with
//! an earlier step's loads and stores, which two passes over the page kept apart; the lag
//! lets the vector stores of a step complete before the chain loads their words (with no
//! lag the decoder was slower than with two passes), and steps of 8 words rather than
//! 16-word groups mix the two stages more finely in the core's window (docs/perf/wkdm.md).
//! NEON runs the stages one after the other (`chain`).
//!
//! Before stage 1, AVX2 unpacks the page's tags area in one vector pass
//! ([`Expand::unpack_tags`]): a tag byte per word, and per 8 words the bit masks of its
//! misses, partial hits and hits, which stage 1 reads as table indices and counts. Gathered
//! per 16-word group inside stage 1 (two delta swaps and three `pext`), those masks cost
//! about 29 instructions per group; the pass costs about 5, and the decoder took 3-7% less
//! time back to back on captured pages (docs/perf/wkdm.md). It also leaves no `pext` in the
//! decoder, which AMD's cores before Zen 3 run as microcode.
//!
//! Stage 1 computes the keep masks, 8 per vector instruction, so that the chain does not
//! look them up per word: that took its loop from 10 instructions per word to 8 and the
//! decoder's time down 3-4% on captured pages (SPEC.md section 4).
//!
//! The recurrence is one store-to-load chain only between words of the same slot, and on
//! AVX2 only through hits: a MISS or zero word reads an entry no word writes
//! ([`MISS_ROUTE`]). An earlier version split the page into 8 interleaved chains, each from
//! an unknown dictionary with taint bits, and fixed the tainted words up in a third, vector
//! stage; with zero words skipped, the single chain is faster on python pages and as fast
//! on node pages (SPEC.md section 4).

#[cfg(target_arch = "x86_64")]
use crate::decompress::Validated;
use crate::format;
use crate::scratch::Scratch;

#[cfg(target_arch = "x86_64")]
use super::lanes::Lanes;

/// The route of a zero word. A route names two dictionary entries: the one the word reads
/// (the whole byte) and, where the chain splits routes (AVX2), the one it writes (the byte's
/// [`STORE_BITS`]); a zero word reads entry 63 and writes the dump entry 31, which no word
/// reads. All six bits a route uses are set, so that a route can be formed by AND-ing a
/// hit's index and a miss's route with this value standing for "not selected".
pub(crate) const ZERO_ROUTE: u8 = 63;

/// Set in the route of a MISS word by AVX2's stage 1: the word reads entry `32 + slot`,
/// which no word writes, and writes its slot.
///
/// A MISS word's value does not depend on the entry it reads (its keep mask is 0), but the
/// core waits for the load that the chain's `&` reads all the same; read from its own slot,
/// each miss waited for the store of the word before it in that slot. Read from an entry no
/// word writes, it waits for none, and the store-to-load chain runs only from word to word
/// of one slot through hits. That made the decoder faster on captured pages in both orders
/// (docs/perf/wkdm.md, "Misses and zero words off the chain").
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
pub(crate) const MISS_ROUTE: u8 = 32;

/// The bits of a route that name the entry the word writes.
const STORE_BITS: u8 = 31;

/// What the SIMD decoder ([`super::expand`]) needs beyond [`Lanes`], 8 lanes wide.
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

    /// Unpacks the tags area `tags` (`W / 4` bytes) of a page of `W` words: each word's tag
    /// (0..4) into `s.tags`, and per step of 8 words the masks of its MISS, PARTIAL and hit
    /// (EXACT or PARTIAL) words into `s.step_masks` (see there).
    ///
    /// # Safety
    ///
    /// The CPU has the implementation's instruction set; `tags.len() == W / 4` and `W` is a
    /// multiple of 32.
    unsafe fn unpack_tags<const W: usize>(tags: &[u8], s: &mut Scratch<W>);

    /// Lane `k` holds [`KEEP`](crate::decompress::KEEP) of the tag `tags[k]`.
    ///
    /// # Safety
    ///
    /// `tags` is valid for reads of `LANES` bytes, each below 4.
    unsafe fn keep_masks(tags: *const u8) -> Self;

    /// Writes the route of each word of `misses` to `slots` (the same length): its
    /// dictionary slot with [`MISS_ROUTE`] set.
    ///
    /// # Safety
    ///
    /// The CPU has the implementation's instruction set.
    unsafe fn hash_slots(misses: &[u32], slots: &mut [u8]);
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
            chain_words::<W, 16, true, false>(&mut dict, s, 16 * group, page);
        }
    } else {
        for group in 0..W / 16 {
            chain_words::<W, 16, false, false>(&mut dict, s, 16 * group, page);
        }
    }
}

/// How many 8-word steps the chain runs behind stage 1 in [`expand_and_chain`].
///
/// Chained by 8-word step 3 steps behind, the decoder was faster than chained by 16-word
/// group one group behind, and than 1 or 2 steps behind; 4 to 8 steps measured as 3
/// (docs/perf/wkdm.md, "Chain by step").
#[cfg(target_arch = "x86_64")]
const CHAIN_LAG: usize = 3;

/// Stage 1 (see the module documentation), `LANES` words per step, each step followed by
/// stage 2 of the step [`CHAIN_LAG`] steps before it.
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
    const { assert!(V::LANES == 8) };
    assert!(
        page.len() == 4 * W && W % 32 == 0 && W / 8 > CHAIN_LAG && v.tags.len() == W / 4 && v.misses <= W
    );
    // SAFETY: the caller guarantees the instruction set; `v.misses <= W` items.
    unsafe { V::hash_slots(&s.misses[..v.misses], &mut s.miss_slots[..v.misses]) };
    // SAFETY: the caller guarantees the instruction set; the lengths are asserted above.
    unsafe { V::unpack_tags(v.tags, s) };
    let mut dict = new_dictionary(preload);
    let mut at = Cursor::default();
    // Stage 1 of the first CHAIN_LAG steps, then of each later step followed by the chain
    // of the step CHAIN_LAG before it, then the chain of the last CHAIN_LAG steps: loops
    // with no test inside (with a test for the first group inside the loop, the code took
    // about 10 instructions per group more; docs/perf/wkdm.md).
    for _ in 0..CHAIN_LAG {
        // SAFETY: the caller guarantees the instruction set and a stream validated into
        // `s`; the steps cover the W words 8 at a time (W / 8 > CHAIN_LAG, asserted).
        unsafe { step::<V, W>(s, page, &mut at) };
    }
    for k in CHAIN_LAG..W / 8 {
        // SAFETY: as above.
        unsafe { step::<V, W>(s, page, &mut at) };
        chain_words::<W, 8, SKIP, true>(&mut dict, s, 8 * (k - CHAIN_LAG), page);
    }
    for k in W / 8 - CHAIN_LAG..W / 8 {
        chain_words::<W, 8, SKIP, true>(&mut dict, s, 8 * k, page);
    }
}

/// Where stage 1 stands: the next word, and how many misses, low bits and indices the
/// words before it took.
#[cfg(target_arch = "x86_64")]
#[derive(Default)]
struct Cursor {
    word: usize,
    misses: usize,
    lows: usize,
    hits: usize,
}

/// Stage 1 of the 8 words from `at.word`, advancing `at` past them.
///
/// # Safety
///
/// The CPU has the instruction set of `V`; `s` holds a validated stream ([`decode`]) with
/// its tags unpacked, and `at.word + 8 <= W` (the counters then stay within the validated
/// counts).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn step<V: Expand, const W: usize>(s: &mut Scratch<W>, page: &mut [u8], at: &mut Cursor) {
    let i = at.word;
    debug_assert!(i + 8 <= W && page.len() == 4 * W);
    // SAFETY: the caller guarantees the instruction set, and i + 8 <= W. The counters are
    // <= the validated counts <= W, and the scratch arrays have SLACK >= 16 readable items
    // after their W items (stale values there land in unselected lanes, which are 0); the
    // page, route and keep stores cover words i..i + 8. Zero words read and write the dump
    // entry (their value and keep mask are 0), unless stage 2 skips them, which it
    // recognises by their route. `unpack_tags` wrote tags below 4.
    unsafe {
        let masks = s.step_masks.as_ptr().add(i / 8);
        let (miss, partial, hit) =
            (u32::from(*masks), u32::from(*masks.add(W / 8)), u32::from(*masks.add(W / 4)));
        let values =
            V::expand_values(s.misses.as_ptr().add(at.misses), miss, s.lows.as_ptr().add(at.lows), partial);
        values.store(page.as_mut_ptr().add(4 * i));
        let (indices, slots) = (s.indices.as_ptr().add(at.hits), s.miss_slots.as_ptr().add(at.misses));
        V::store_routes(indices, hit, slots, miss, s.word_routes.as_mut_ptr().add(i));
        V::keep_masks(s.tags.as_ptr().add(i)).store(s.keeps.as_mut_ptr().add(i).cast());
        at.word = i + 8;
        at.misses += miss.count_ones() as usize;
        at.lows += partial.count_ones() as usize;
        at.hits += hit.count_ones() as usize;
    }
}

/// The chain's dictionary at the start of a page: an entry per byte value, so that a route
/// indexes it without a mask or bounds check; slot [`ZERO_ROUTE`] is the dump entry. The
/// mask (`& 31` into 32 entries) cost an instruction per word that, once the stages
/// overlap, costs time; filling 1 KiB per page costs less (docs/perf/wkdm.md).
#[inline(always)]
fn new_dictionary(preload: u32) -> [u32; 256] {
    [preload; 256]
}

/// Stage 2 (see the module documentation) over the `N` words from word `first`: the page
/// holds each MISS word, the low bits of each PARTIAL word and 0 elsewhere, `s.word_routes`
/// each word's route and `s.keeps` its keep mask; every word's value replaces them. With
/// `SKIP` zero words are branched past (their 0 is already in the page); without, they run
/// through the chain like the others. With `SPLIT` a word writes the entry its route's
/// [`STORE_BITS`] name (see [`MISS_ROUTE`]); without, the entry it reads.
#[inline(always)]
fn chain_words<const W: usize, const N: usize, const SKIP: bool, const SPLIT: bool>(
    dict: &mut [u32; 256],
    s: &Scratch<W>,
    first: usize,
    page: &mut [u8],
) {
    let words = page[4 * first..4 * (first + N)].chunks_exact_mut(4);
    let routes = &s.word_routes[first..first + N];
    let keeps = &s.keeps[first..first + N];
    for ((word, &route), &keep) in words.zip(routes).zip(keeps) {
        if SKIP && route == ZERO_ROUTE {
            continue;
        }
        let value = format::le32(word);
        let w = (dict[usize::from(route)] & keep) | value;
        dict[usize::from(if SPLIT { route & STORE_BITS } else { route })] = w;
        word.copy_from_slice(&w.to_le_bytes());
    }
}
