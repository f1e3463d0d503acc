//! NEON kernels: 4 words per step (the SSE4.1 algorithm with `tbl` for the left-pack).

use core::arch::aarch64::*;

use core::ops::Range;

use crate::compress::Counts;
use crate::format::LOW_MASK;
use crate::pipeline::KernelResult;
use crate::scratch::Scratch;

use super::super::classify;
use super::super::lanes::Lanes;
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

/// Four words in a NEON register.
#[derive(Clone, Copy)]
pub(crate) struct Neon(uint32x4_t);

impl Lanes for Neon {
    const LANES: usize = 4;

    #[inline(always)]
    unsafe fn load(src: *const u8) -> Self {
        // SAFETY: the caller guarantees 16 readable bytes and NEON (little-endian host:
        // the lanes are the little-endian words).
        Neon(unsafe { vld1q_u32(src.cast()) })
    }

    #[inline(always)]
    unsafe fn zero_lanes(self) -> u32 {
        // SAFETY: the caller guarantees NEON.
        unsafe { mask(vceqq_u32(self.0, vdupq_n_u32(0))) }
    }

    #[inline(always)]
    unsafe fn equal_lanes(self, other: Self) -> u32 {
        // SAFETY: the caller guarantees NEON.
        unsafe { mask(vceqq_u32(self.0, other.0)) }
    }

    #[inline(always)]
    unsafe fn same_upper_lanes(self, other: Self) -> u32 {
        // SAFETY: the caller guarantees NEON.
        unsafe { mask(vceqq_u32(vshrq_n_u32::<10>(veorq_u32(self.0, other.0)), vdupq_n_u32(0))) }
    }

    #[inline(always)]
    unsafe fn store_packed(self, mask: u32, dst: *mut u32) {
        // SAFETY: the caller guarantees 4 writable words and NEON.
        unsafe { vst1q_u32(dst, left_pack(self.0, mask)) }
    }

    #[inline(always)]
    unsafe fn store_packed_lows(self, mask: u32, dst: *mut u16) {
        // SAFETY: the caller guarantees 4 writable items and NEON.
        unsafe { vst1_u16(dst, vmovn_u32(left_pack(vandq_u32(self.0, vdupq_n_u32(LOW_MASK)), mask))) }
    }

    #[inline(always)]
    unsafe fn store_packed_bytes(src: *const u8, mask: u32, dst: *mut u8) {
        // SAFETY: the caller guarantees 16 readable and 4 (of 16) writable bytes and NEON;
        // mask < 16 indexes the table, a 16-byte load of a [u8; 16].
        unsafe {
            let control = vld1q_u8(LEFT_PACK_BYTES[(mask & 15) as usize].as_ptr());
            let packed = vqtbl1q_u8(vld1q_u8(src), control);
            dst.cast::<u32>().write_unaligned(vgetq_lane_u32::<0>(vreinterpretq_u32_u8(packed)));
        }
    }
}

/// The NEON instance of [`classify::classify`], 4 lanes at a time.
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
    // SAFETY: NEON is enabled here, all that `Neon` uses.
    unsafe { classify::classify::<Neon, W>(page, s, early_abort, groups, counts) }
}
