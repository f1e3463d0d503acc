//! Fixed working memory shared by the compressor and the decompressor.

use core::ops::{Deref, DerefMut};

/// Elements of slack after each scratch array, so SIMD kernels may store a whole vector
/// at any position `<= W` without a bounds branch.
pub(crate) const SLACK: usize = 16;

/// `W` items followed by [`SLACK`] spare ones, contiguous (`repr(C)`, same element type).
#[derive(Clone)]
#[repr(C)]
pub(crate) struct Padded<T: Copy, const W: usize> {
    items: [T; W],
    slack: [T; SLACK],
}

impl<T: Copy, const W: usize> Padded<T, W> {
    const fn new(zero: T) -> Self {
        Padded { items: [zero; W], slack: [zero; SLACK] }
    }

    /// A pointer to item 0 valid for reads of `W + SLACK` items.
    #[cfg_attr(not(any(target_arch = "x86_64", target_arch = "aarch64")), allow(dead_code))]
    #[inline]
    pub(crate) fn as_ptr(&self) -> *const T {
        (self as *const Self).cast::<T>()
    }

    /// A pointer to item 0 valid for writes of `W + SLACK` items (it is derived from the
    /// whole struct, whose two arrays are contiguous).
    #[inline]
    pub(crate) fn as_mut_ptr(&mut self) -> *mut T {
        (self as *mut Self).cast::<T>()
    }

    /// All `W + SLACK` items, the slack included.
    #[inline]
    pub(crate) fn with_slack_mut(&mut self) -> &mut [T] {
        let items = W + SLACK;
        // SAFETY: `repr(C)` lays out `items` and `slack` contiguously with no padding (same
        // element type), so the struct is `W + SLACK` initialised `T`s, borrowed mutably.
        unsafe { core::slice::from_raw_parts_mut(self.as_mut_ptr(), items) }
    }
}

impl<T: Copy, const W: usize> Deref for Padded<T, W> {
    type Target = [T; W];
    #[inline]
    fn deref(&self) -> &[T; W] {
        &self.items
    }
}

impl<T: Copy, const W: usize> DerefMut for Padded<T, W> {
    #[inline]
    fn deref_mut(&mut self) -> &mut [T; W] {
        &mut self.items
    }
}

/// Per-word scratch arrays for pages of `W` words. It lives in the codec value so neither
/// direction allocates; one set serves both directions (a codec value does one thing at a
/// time).
#[derive(Clone)]
pub(crate) struct Scratch<const W: usize> {
    /// One tag (0..4) per word (scalar compressor, SIMD decoders), or the packed tags
    /// area (SIMD compressors).
    pub(crate) tags: [u8; W],
    /// Missed words, in page order.
    pub(crate) misses: Padded<u32, W>,
    /// Dictionary indices (0..16) of EXACT and PARTIAL words, in page order.
    pub(crate) indices: Padded<u8, W>,
    /// Low 10 bits of PARTIAL words, in page order.
    pub(crate) lows: Padded<u16, W>,
    /// SIMD compressor: for each non-zero word, the dictionary entry it is compared with
    /// (stale for zero words).
    #[cfg_attr(not(any(target_arch = "x86_64", target_arch = "aarch64")), allow(dead_code))]
    pub(crate) prev: [u32; W],
    /// SIMD paths: each word's dictionary slot (the compressor leaves zero words' stale),
    /// with [`SLACK`] bytes of slack for 8-byte loads.
    #[cfg_attr(not(any(target_arch = "x86_64", target_arch = "aarch64")), allow(dead_code))]
    pub(crate) slots: Padded<u8, W>,
    /// AVX2 and NEON decoders: per word, the dictionary entry it reads and writes (the
    /// dump entry for zero words).
    #[cfg_attr(not(any(target_arch = "x86_64", target_arch = "aarch64")), allow(dead_code))]
    pub(crate) word_routes: [u8; W],
    /// AVX2 and NEON decoders: per word, the bits of its dictionary entry it keeps (by tag).
    #[cfg_attr(not(any(target_arch = "x86_64", target_arch = "aarch64")), allow(dead_code))]
    pub(crate) keeps: [u32; W],
    /// AVX2 decoder: per step of 8 words, a byte with bit `k` set where word `k` of the
    /// step is a MISS; then, from `W / 8`, the same for PARTIAL words, and from `W / 4`
    /// for hits (EXACT or PARTIAL). The last `5 * W / 8` bytes are unused.
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    pub(crate) step_masks: [u8; W],
    /// AVX2 and NEON decoders: the slot of each missed word, with slack for 8- and 16-byte
    /// loads.
    #[cfg_attr(not(any(target_arch = "x86_64", target_arch = "aarch64")), allow(dead_code))]
    pub(crate) miss_slots: Padded<u8, W>,
}

impl<const W: usize> Scratch<W> {
    /// Zeroed scratch.
    pub(crate) const fn new() -> Self {
        Scratch {
            tags: [0; W],
            misses: Padded::new(0),
            indices: Padded::new(0),
            lows: Padded::new(0),
            prev: [0; W],
            slots: Padded::new(0),
            word_routes: [0; W],
            keeps: [0; W],
            step_masks: [0; W],
            miss_slots: Padded::new(0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_slack_view_is_the_items_then_the_slack() {
        let mut padded = Padded::<u16, 128>::new(7);
        padded[127] = 1;
        let all = padded.with_slack_mut();
        assert_eq!(all.len(), 128 + SLACK);
        assert_eq!((all[127], all[128], all[128 + SLACK - 1]), (1, 7, 7));
        all[128] = 2;
        assert_eq!(padded.slack[0], 2);
    }
}
