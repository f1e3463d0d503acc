//! Compression: the kernel's exact LZO1X-1 and LZO-RLE ([`KernelCompressor`], `kernel`) and
//! the page-tuned LZO1X-1 compressor behind [`Lzo1x`](crate::Lzo1x) (`page`), which shares
//! the kernel compressor's output writer and hashing; the fast compressor behind
//! [`Lzo1xFast`](crate::Lzo1xFast) (`fast`), probing every fourth position; the slow
//! minimum-cost compressor behind [`Lzo1x999`](crate::Lzo1x999) (`optimal`).

/// `Default` (the empty working memory `new()` makes) and a `Debug` that shows none of it,
/// for a compressor type with a `const fn new()`.
macro_rules! working_memory_impls {
    ($t:ident) => {
        impl Default for $t {
            fn default() -> Self {
                Self::new()
            }
        }

        impl core::fmt::Debug for $t {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                f.debug_struct(stringify!($t)).finish_non_exhaustive()
            }
        }
    };
}

mod fast;
mod kernel;
mod optimal;
mod output;
mod page;

pub(crate) use fast::FastCompressor;
pub use kernel::KernelCompressor;
pub(crate) use optimal::OptimalCompressor;
pub(crate) use page::PageCompressor;
