//! NEON kernels: 4 words per step (the SSE4.1 algorithm with `tbl` for the left-pack).

use core::arch::aarch64::*;

use core::ops::Range;

use crate::compress::Counts;
use crate::format::{self, EARLY_ABORT_WORDS, LOW_MASK};
use crate::pipeline::{self, KernelResult};
use crate::scratch::Scratch;

use super::super::{LEFT_PACK_4, LEFT_PACK_BYTES};

#[inline]
#[target_feature(enable = "neon")]
fn left_pack(v: uint32x4_t, mask: u32) -> uint32x4_t {
    // SAFETY: mask < 16 indexes the table; a 16-byte load of a [u8; 16].
    let control = unsafe { vld1q_u8(LEFT_PACK_4[(mask & 15) as usize].as_ptr()) };
    vreinterpretq_u32_u8(vqtbl1q_u8(vreinterpretq_u8_u32(v), control))
}

/// One bit per lane of a compare result.
#[inline]
#[target_feature(enable = "neon")]
fn mask(v: uint32x4_t) -> u32 {
    let bits: [u32; 4] = [1, 2, 4, 8];
    // SAFETY: a 16-byte load of a [u32; 4].
    let bits = unsafe { vld1q_u32(bits.as_ptr()) };
    vaddvq_u32(vandq_u32(v, bits))
}

/// Classifies and packs the words of the 16-word `groups` of the page, continuing from
/// `counts`, like the x86 kernels, 4 lanes at a time.
///
/// # Safety
///
/// The CPU must support NEON (always true on aarch64 with the `neon` target feature).
#[target_feature(enable = "neon")]
pub(crate) unsafe fn classify<const W: usize>(
    page: &[u8],
    s: &mut Scratch<W>,
    early_abort: bool,
    groups: Range<usize>,
    counts: Counts,
) -> KernelResult {
    assert!(page.len() == 4 * W && W % 16 == 0 && groups.end <= W / 16);
    let zero = vdupq_n_u32(0);
    let low_mask = vdupq_n_u32(LOW_MASK);
    let misses = s.misses.as_mut_ptr();
    let indices = s.indices.as_mut_ptr();
    let lows = s.lows.as_mut_ptr();
    let (mut m, mut h, mut p) = (counts.misses, counts.hits, counts.partials);
    for group in groups {
        let (mut low_bits, mut high_bits) = (0u32, 0u32);
        for quarter in 0..4 {
            let i = 16 * group + 4 * quarter;
            // SAFETY: i + 4 <= W: 4 words of the page (4 * W bytes, little-endian host), of
            // prev and of slots (whose 16 bytes of slack cover the 16-byte load).
            let (w, d, slots) = unsafe {
                (
                    vld1q_u32(page.as_ptr().add(4 * i).cast()),
                    vld1q_u32(s.prev.as_ptr().add(i)),
                    vld1q_u8(s.slots.as_ptr().add(i)),
                )
            };
            let nonzero = !mask(vceqq_u32(w, zero)) & 0xF;
            let exact = mask(vceqq_u32(w, d)) & nonzero;
            let near = vshrq_n_u32::<10>(veorq_u32(w, d));
            let hit = mask(vceqq_u32(near, zero)) & nonzero;
            let partial = hit & !exact;
            let miss = nonzero & !hit;
            low_bits |= hit << (4 * quarter);
            high_bits |= (miss | exact) << (4 * quarter);
            let packed_lows = vmovn_u32(left_pack(vandq_u32(w, low_mask), partial));
            // SAFETY: hit < 16 indexes the table; a 16-byte load of a [u8; 16].
            let control = unsafe { vld1q_u8(LEFT_PACK_BYTES[(hit & 15) as usize].as_ptr()) };
            let packed_slots = vqtbl1q_u8(slots, control);
            // SAFETY: m, p, h <= i <= W - 4 before these stores, and each array has
            // SLACK >= 16 items after its W items: every store stays inside.
            unsafe {
                vst1q_u32(misses.add(m), left_pack(w, miss));
                vst1_u16(lows.add(p), packed_lows);
                indices
                    .add(h)
                    .cast::<u32>()
                    .write_unaligned(vgetq_lane_u32::<0>(vreinterpretq_u32_u8(packed_slots)));
            }
            m += miss.count_ones() as usize;
            h += hit.count_ones() as usize;
            p += partial.count_ones() as usize;
            if early_abort
                && i + 4 == EARLY_ABORT_WORDS
                && pipeline::aborts_early(Counts { misses: m, hits: h, partials: p })
            {
                return KernelResult::EarlyAbort;
            }
        }
        let tag_word = format::tag_word(low_bits, high_bits);
        s.tags[4 * group..4 * group + 4].copy_from_slice(&tag_word.to_le_bytes());
    }
    KernelResult::Done(Counts { misses: m, hits: h, partials: p })
}
