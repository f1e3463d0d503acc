//! Fixed working memory shared by the compressor and the decompressor.

/// Per-word scratch arrays for pages of `W` words. It lives in the codec value so neither
/// direction allocates; one set serves both directions (a codec value does one thing at a
/// time).
#[derive(Clone)]
pub(crate) struct Scratch<const W: usize> {
    /// One tag (0..4) per word (compressor only).
    pub(crate) tags: [u8; W],
    /// Missed words, in page order.
    pub(crate) misses: [u32; W],
    /// Dictionary indices (0..16) of EXACT and PARTIAL words, in page order.
    pub(crate) indices: [u8; W],
    /// Low 10 bits of PARTIAL words, in page order.
    pub(crate) lows: [u16; W],
}

impl<const W: usize> Scratch<W> {
    /// Zeroed scratch.
    pub(crate) const fn new() -> Self {
        Scratch { tags: [0; W], misses: [0; W], indices: [0; W], lows: [0; W] }
    }
}
