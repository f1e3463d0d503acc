//! [`Lanes`]: what each instruction set provides to the SIMD kernels.
//!
//! Each instruction set (AVX-512, AVX2, SSE4.1, NEON) only says how to load, compare,
//! left-pack and expand a vector of words; the kernels ([`super::classify`],
//! [`super::expand`]) are written once over these traits. The kernels and the [`Lanes`]
//! methods are `#[inline(always)]`: each instruction set's `#[target_feature]` entry point
//! instantiates a kernel, and everything compiles into that one function with its features
//! enabled (the memchr pattern).

/// A vector of [`Lanes::LANES`] 32-bit words of one instruction set.
///
/// # Safety
///
/// Every method may use the instruction set's intrinsics: call them only where the CPU has
/// it (in practice, from that instruction set's `#[target_feature]` kernel).
pub(crate) trait Lanes: Copy {
    /// Words per vector: 4, 8 or 16 (a divisor of 16).
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
    /// `src` is valid for reads of 16 bytes and `dst` for writes of 16.
    unsafe fn store_packed_bytes(src: *const u8, mask: u32, dst: *mut u8);

    /// The index into [`crate::format::SLOT`] of `word`'s slot (its hash byte).
    #[inline(always)]
    unsafe fn hash_index(word: u32) -> usize {
        crate::format::hash_index(word)
    }

    /// The dictionary slot of `word` ([`crate::format::slot`]), its hash byte taken by
    /// [`Lanes::hash_index`]; not overridden.
    #[inline(always)]
    unsafe fn slot(word: u32) -> u8 {
        // The mask keeps the table load free of a bounds check whatever `hash_index`
        // returns (its 8 bits need none, and the compiler drops it).
        // SAFETY: the caller guarantees the instruction set.
        let index = unsafe { Self::hash_index(word) };
        crate::format::SLOT[index & 0xFF]
    }

    /// Whether the compressor takes its slots from [`Lanes::store_slots_of_32`], 32 words
    /// at a time, instead of the replay storing each word's (`pipeline::recurrence`).
    const VECTOR_SLOTS: bool = false;

    /// Writes the slots ([`Lanes::slot`]) of the 32 little-endian words at `words` to
    /// `dst`.
    ///
    /// # Safety
    ///
    /// `words` is valid for reads of 128 bytes and `dst` for writes of 32.
    #[inline(always)]
    unsafe fn store_slots_of_32(words: *const u8, dst: *mut u8) {
        for k in 0..32 {
            // SAFETY: the caller guarantees the instruction set, 128 readable bytes at
            // `words` and 32 writable at `dst`; k < 32.
            unsafe {
                *dst.add(k) = Self::slot(u32::from_le(words.add(4 * k).cast::<u32>().read_unaligned()))
            };
        }
    }

    /// The tags of 16 words from their tag-bit masks, in word order (see
    /// [`crate::format::sequential_tag_word`], the default).
    #[inline(always)]
    unsafe fn sequential_tag_word(low: u32, high: u32) -> u32 {
        crate::format::sequential_tag_word(low, high)
    }

    /// Puts tag words written in word order into the stream's cell order
    /// ([`crate::format::sequential_tags`], its own inverse), in place: the classify
    /// kernel's last step over a range of groups, so that it runs once per range instead of
    /// once per group inside the kernel's loop (docs/perf/wkdm.md, "Slots stored four at a
    /// time").
    ///
    /// # Safety
    ///
    /// `tags.len()` is a multiple of 4.
    #[inline(always)]
    unsafe fn stream_order_tags(tags: &mut [u8]) {
        crate::format::sequential_tags_in_place(tags);
    }
}
