//! The classify-and-pack kernel of the SIMD compressors, written once over [`Lanes`].

use core::ops::Range;

use crate::compress::Counts;
use crate::decompress::count_tags;
use crate::format::EARLY_ABORT_WORDS;
use crate::pipeline::{self, Dict, KernelResult};
use crate::scratch::Scratch;

use super::lanes::Lanes;

/// Classifies and packs the words of the 16-word `groups` of the page, continuing from
/// `counts` (see [`pipeline`]): `s.prev` must hold the output of [`pipeline::recurrence`]
/// for `page` (`4 * W` bytes, little-endian words). The items of zero words are stale and
/// must not affect the result: zero lanes are masked out of every hit, miss and partial.
///
/// With `AHEAD` above 0 it fills them itself, continuing from `dict`: the first `AHEAD`
/// groups of the page first, then, before classifying each group, the one `AHEAD` groups
/// on, so that no group is classified right after its items were stored (`pipeline`); with
/// `AHEAD` 0 (a path that replays in a pass of its own), `dict` is not used.
///
/// With `early_abort`, a range holding word 103 reports [`KernelResult::EarlyAbort`] if
/// the first 104 words abort (XNU's early abort), after classifying the whole range.
///
/// # Safety
///
/// The CPU must have the instruction set of `V`.
#[inline(always)]
pub(crate) unsafe fn classify<V: Lanes, const W: usize, const AHEAD: usize>(
    page: &[u8],
    s: &mut Scratch<W>,
    dict: &mut Dict,
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
    if AHEAD > 0 && groups.start == 0 {
        // SAFETY: the caller guarantees V's instruction set.
        unsafe { pipeline::recurrence::<W, V>(page, &mut s.prev, &mut s.slots, dict, 0..AHEAD.min(W / 16)) };
    }
    let tag_bytes = 4 * groups.start..4 * groups.end;
    let end = groups.end;
    // The group that holds the last word counted (word 104's tag starts a byte of the
    // tags, which the check below reads from).
    const { assert!(EARLY_ABORT_WORDS % 4 == 0) };
    let abort_group = (EARLY_ABORT_WORDS - 1) / 16;
    let checks_abort = early_abort && groups.contains(&abort_group);
    for group in groups {
        let next = group + AHEAD;
        if AHEAD > 0 && next < W / 16 {
            // SAFETY: the caller guarantees V's instruction set.
            unsafe { pipeline::recurrence::<W, V>(page, &mut s.prev, &mut s.slots, dict, next..next + 1) };
        }
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
            // SLACK >= 16 items after its W items, so every store (LANES <= 16 items) stays
            // inside; `slots` has 16 readable bytes at i <= W too.
            unsafe {
                w.store_packed(miss, misses.add(m));
                w.store_packed_lows(partial, lows.add(p));
                V::store_packed_bytes(s.slots.as_ptr().add(i), hit, indices.add(h));
            }
            m += miss.count_ones() as usize;
            h += hit.count_ones() as usize;
            p += partial.count_ones() as usize;
        }
        // SAFETY: the caller guarantees the instruction set.
        let tag_word = unsafe { V::sequential_tag_word(low_bits, high_bits) };
        s.tags[4 * group..4 * group + 4].copy_from_slice(&tag_word.to_le_bytes());
    }
    if checks_abort {
        // XNU's verdict on the counts of the first 104 words, taken once per range rather
        // than tested at every step, which cost the loop instructions and registers: the
        // counts at the range's end less those of the words from 104 on, whose tags (in
        // word order here, four to a byte) the decoder's tag count reads.
        let (later_m, later_h, later_p) = count_tags(&s.tags[EARLY_ABORT_WORDS / 4..4 * end]);
        let at = Counts { misses: m - later_m, hits: h - later_h, partials: p - later_p };
        if pipeline::aborts_early(at) {
            return KernelResult::EarlyAbort;
        }
    }
    // SAFETY: the caller guarantees the instruction set; whole tag words.
    unsafe { V::stream_order_tags(&mut s.tags[tag_bytes]) };
    KernelResult::Done(Counts { misses: m, hits: h, partials: p })
}
