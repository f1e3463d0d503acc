//! The classify-and-pack kernel of the SIMD compressors, written once over [`Lanes`].
//!
//! Each instruction set (AVX2, SSE4.1, NEON) only says how to load, compare and left-pack
//! a vector of words; the algorithm below is the same for all of them. The kernel is
//! `#[inline(always)]` and so are the [`Lanes`] methods: each instruction set's
//! `#[target_feature]` entry point instantiates it, and everything compiles into that one
//! function with its features enabled (the memchr pattern).

use core::ops::Range;

use crate::compress::Counts;
use crate::format::EARLY_ABORT_WORDS;
use crate::pipeline::{self, KernelResult};
use crate::scratch::Scratch;

/// A vector of [`Lanes::LANES`] 32-bit words of one instruction set.
///
/// # Safety
///
/// Every method may use the instruction set's intrinsics: call them only where the CPU has
/// it (in practice, from that instruction set's `#[target_feature]` kernel).
pub(crate) trait Lanes: Copy {
    /// Words per vector: 4 or 8 (a divisor of 16 and of [`EARLY_ABORT_WORDS`]).
    const LANES: usize;

    /// Loads `LANES` little-endian words.
    ///
    /// # Safety
    ///
    /// `src` is valid for reads of `4 * LANES` bytes.
    unsafe fn load(src: *const u8) -> Self;

    /// Bit `k` set where lane `k` is zero.
    unsafe fn zero_lanes(self) -> u32;

    /// Bit `k` set where lane `k` equals that of `other`.
    unsafe fn equal_lanes(self, other: Self) -> u32;

    /// Bit `k` set where lane `k` agrees with that of `other` in its upper 22 bits.
    unsafe fn same_upper_lanes(self, other: Self) -> u32;

    /// Writes the lanes selected by `mask` to `dst`, in order.
    ///
    /// # Safety
    ///
    /// `dst` is valid for writes of `LANES` words (those past the selected ones get junk).
    unsafe fn store_packed(self, mask: u32, dst: *mut u32);

    /// Writes the low 10 bits of the lanes selected by `mask` to `dst` as `u16`, in order.
    ///
    /// # Safety
    ///
    /// `dst` is valid for writes of `LANES` items.
    unsafe fn store_packed_lows(self, mask: u32, dst: *mut u16);

    /// Writes the bytes `src[k]` (`k < LANES`) selected by `mask` to `dst`, in order.
    ///
    /// # Safety
    ///
    /// `src` is valid for reads of 16 bytes and `dst` for writes of 8.
    unsafe fn store_packed_bytes(src: *const u8, mask: u32, dst: *mut u8);

    /// The stream tag word of 16 words from their tag-bit masks (see
    /// [`crate::format::tag_word`], the default).
    #[inline(always)]
    unsafe fn tag_word(low: u32, high: u32) -> u32 {
        crate::format::tag_word(low, high)
    }
}

/// Classifies and packs the words of the 16-word `groups` of the page, continuing from
/// `counts` (see [`pipeline`]): `s.prev` must hold the output of [`pipeline::recurrence`]
/// for `page` (`4 * W` bytes, little-endian words).
///
/// # Safety
///
/// The CPU must have the instruction set of `V`.
#[inline(always)]
pub(crate) unsafe fn classify<V: Lanes, const W: usize>(
    page: &[u8],
    s: &mut Scratch<W>,
    early_abort: bool,
    groups: Range<usize>,
    counts: Counts,
) -> KernelResult {
    assert!(page.len() == 4 * W && W % 16 == 0 && groups.end <= W / 16);
    let all = (1u32 << V::LANES) - 1;
    let misses = s.misses.as_mut_ptr();
    let indices = s.indices.as_mut_ptr();
    let lows = s.lows.as_mut_ptr();
    let (mut m, mut h, mut p) = (counts.misses, counts.hits, counts.partials);
    for group in groups {
        let (mut low_bits, mut high_bits) = (0u32, 0u32);
        for step in 0..16 / V::LANES {
            let i = 16 * group + V::LANES * step;
            // SAFETY: i + LANES <= W: words of the page (4 * W bytes) and of `prev`; the
            // caller guarantees the instruction set.
            let (w, d) =
                unsafe { (V::load(page.as_ptr().add(4 * i)), V::load(s.prev.as_ptr().add(i).cast())) };
            // SAFETY: the caller guarantees the instruction set.
            let (zero, equal, same_upper) =
                unsafe { (w.zero_lanes(), w.equal_lanes(d), w.same_upper_lanes(d)) };
            let nonzero = !zero & all;
            let exact = equal & nonzero;
            let hit = same_upper & nonzero;
            let partial = hit & !exact;
            let miss = nonzero & !hit;
            low_bits |= hit << (V::LANES * step);
            high_bits |= (miss | exact) << (V::LANES * step);
            // SAFETY: m, p, h <= i <= W - LANES before these stores, and each array has
            // SLACK >= 16 items after its W items, so every store (LANES <= 8 items, 8
            // bytes) stays inside; `slots` has 16 readable bytes at i <= W too.
            unsafe {
                w.store_packed(miss, misses.add(m));
                w.store_packed_lows(partial, lows.add(p));
                V::store_packed_bytes(s.slots.as_ptr().add(i), hit, indices.add(h));
            }
            m += miss.count_ones() as usize;
            h += hit.count_ones() as usize;
            p += partial.count_ones() as usize;
            if early_abort
                && i + V::LANES == EARLY_ABORT_WORDS
                && pipeline::aborts_early(Counts { misses: m, hits: h, partials: p })
            {
                return KernelResult::EarlyAbort;
            }
        }
        // SAFETY: the caller guarantees the instruction set.
        let tag_word = unsafe { V::tag_word(low_bits, high_bits) };
        s.tags[4 * group..4 * group + 4].copy_from_slice(&tag_word.to_le_bytes());
    }
    KernelResult::Done(Counts { misses: m, hits: h, partials: p })
}
