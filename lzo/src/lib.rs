//! LZO1X-1 and LZO-RLE for compressed memory: the Linux kernel's compressors byte for byte,
//! a faster page-tuned LZO1X-1 compressor, and a decoder that is safe on any input.
//!
//! - [`KernelCompressor`]: the kernel's LZO1X-1 for inputs of any length, owning its working
//!   memory. [`KernelCompressor::compress`] writes plain LZO1X (byte-identical to the
//!   kernel's `lzo1x_1_compress`, readable by liblzo2); [`KernelCompressor::compress_rle`]
//!   writes LZO-RLE, zram's default format. The output buffer's length is the budget: the
//!   compressor never writes past it and stops as soon as the stream cannot fit.
//! - [`decompress()`]: a decoder for every LZO1X instruction form (including the `M1` and
//!   3-byte forms only `lzo1x_999` writes) and LZO-RLE, into an output buffer of any size,
//!   with typed errors mirroring liblzo2's ([`StreamError`]). No input makes it panic, read
//!   or write out of bounds, loop forever or return stale bytes.
//! - [`Lzo1x`] (the page-tuned compressor, zram's `lzo`), [`Lzo1xFast`] (the fast level:
//!   larger streams in less time), [`Lzo1xKernel`] (the kernel's exact `lzo` bytes),
//!   [`LzoRle`] (the kernel's `lzo-rle` bytes) and [`Lzo1x999`] (a slow minimum-cost
//!   compressor, LZO1X-999-class ratios) as [`PageCodec`]s.
//!
//! # `unsafe`
//!
//! The decoder runs a fast loop that copies with unchecked wide loads and stores, and the
//! compressors read their input with unchecked loads; every such block states why it stays
//! in bounds (`// SAFETY:`), and the fast decoder's results are tested to equal those of the
//! checked reference decoder on every input, under Miri and by fuzzing. With the
//! `safe-decode` feature, [`decompress()`] is the reference decoder alone, compiled under
//! `forbid(unsafe_code)`, for readers of untrusted data who want no `unsafe` on that path;
//! it takes about 1.7x-1.8x the fast decoder's time on real pages (docs/perf/lzokit.md).
//!
//! ```
//! use lzokit::{KernelCompressor, decompress, max_compressed_len};
//!
//! let input = b"compressed memory, compressed memory, compressed memory!".repeat(10);
//! let mut stream = vec![0u8; max_compressed_len(input.len())];
//! let n = KernelCompressor::new().compress_rle(&input, &mut stream)?;
//! let mut back = vec![0u8; input.len()];
//! let len = decompress(&stream[..n], &mut back)?;
//! assert_eq!(&back[..len], &input[..]);
//! # Ok::<(), Box<dyn core::error::Error>>(())
//! ```
//!
//! The format, byte by byte, is in the family's specification (`SPEC.md`, section 4).
#![no_std]
#![cfg_attr(docsrs, feature(doc_cfg))]

// The README's example runs as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

#[cfg(feature = "std")]
extern crate std;

mod compress;
// Under `safe-decode` the decoder is the reference decoder alone, and no `unsafe` may appear
// in it.
#[cfg_attr(feature = "safe-decode", forbid(unsafe_code))]
mod decompress;
mod error;
mod format;

pub use compress::KernelCompressor;
pub use decompress::decompress;
#[doc(hidden)]
pub use decompress::{DecodeLoop, decompress_on};
pub use error::StreamError;
pub use format::max_compressed_len;
pub use pagecodec::CompressError;

use compress::{FastCompressor, OptimalCompressor, PageCompressor};
use pagecodec::{PAGE_SIZE, Page, PageCodec};

/// The `PageCodec` methods the codecs share (their name, the largest stream, the decoder,
/// which reads both formats); `compress` is each codec's own.
macro_rules! page_codec {
    ($codec:ty, $name:literal, |$this:ident, $page:ident, $out:ident| $compress:expr) => {
        impl PageCodec for $codec {
            fn name(&self) -> &'static str {
                $name
            }

            fn max_compressed_len(&self) -> usize {
                max_compressed_len(PAGE_SIZE)
            }

            fn compress(&mut self, $page: &Page, $out: &mut [u8]) -> Result<usize, CompressError> {
                let $this = self;
                $compress
            }

            fn decompress(
                &mut self,
                input: &[u8],
                page: &mut Page,
            ) -> Result<(), pagecodec::DecompressError> {
                decompress_page(input, page)
            }
        }
    };
}

/// Decodes a whole page: the stream must decompress to exactly 4096 bytes.
fn decompress_page(input: &[u8], page: &mut Page) -> Result<(), pagecodec::DecompressError> {
    let n = decompress(input, page.as_bytes_mut())?;
    if n == PAGE_SIZE { Ok(()) } else { Err(pagecodec::DecompressError::WrongLength) }
}

/// Plain LZO1X-1 as a [`PageCodec`] (zram's `lzo`): streams liblzo2 and every LZO decoder
/// read. Its decoder also reads LZO-RLE streams.
///
/// Its compressor is page-specialised and faster than [`KernelCompressor::compress`], but not
/// byte-identical to the kernel's: it scans as the kernel does, but tries the distances of
/// the last two matches before a different hash table (4096 entries that also hold the
/// first 6 bytes at their position, no clear per page), and gives a match of up to 32 bytes
/// up for one at least 2 bytes longer a byte later. On captured pages that finds fewer,
/// longer matches: its streams are smaller than liblzo2's and decode faster
/// (docs/perf/lzokit.md). Use [`Lzo1xKernel`] for the kernel's exact bytes. It owns 32 KiB
/// of working memory.
///
/// ```
/// use lzokit::Lzo1x;
/// use pagecodec::{Page, PageCodec};
///
/// let mut codec = Lzo1x::default();
/// let page = Page::filled(0x5A);
/// let mut out = vec![0u8; codec.max_compressed_len()];
/// let n = codec.compress(&page, &mut out)?;
/// let mut back = Page::zeroed();
/// codec.decompress(&out[..n], &mut back)?;
/// assert_eq!(back, page);
/// # Ok::<(), Box<dyn core::error::Error>>(())
/// ```
#[derive(Clone, Debug, Default)]
pub struct Lzo1x {
    compressor: PageCompressor,
}

page_codec!(Lzo1x, "lzo", |codec, page, out| codec.compressor.compress(page.as_bytes(), out));

/// Plain LZO1X-1 as a [`PageCodec`], the fast level: it compresses in well under C
/// liblzo2's `lzo1x_1` time on every measured corpus, whether or not the core has seen the
/// page before, where [`Lzo1x`] is as slow as liblzo2 on pages it has not. Every LZO decoder
/// reads its streams (liblzo2, Linux, this crate's [`decompress`]).
///
/// It looks for a match only at every fourth position (memory pages repeat aligned fields)
/// and extends each match backwards over the bytes it skipped. Fewer probes mean fewer
/// branches that depend on the page's bytes, and those, not instructions, bound every LZO
/// compressor on a page the core has not learnt, as in a page store, which sees each page
/// once. The price is size: its streams are larger than liblzo2's on most pages and than
/// [`Lzo1x`]'s on all (about C LZ4's sizes), and they take a little longer to decode than
/// [`Lzo1x`]'s. Figures: docs/perf/lzokit.md, "A faster level".
///
/// Choose it where compression time matters more than memory, as in a store under write
/// pressure. [`Lzo1x`] stays the default: its streams are smaller and decode faster, and on
/// pages of long repeats it compresses faster too. It owns 4 KiB of working memory.
///
/// ```
/// use lzokit::{Lzo1x, Lzo1xFast};
/// use pagecodec::{Page, PageCodec};
///
/// let mut fast = Lzo1xFast::default();
/// let mut page = Page::zeroed();
/// for (i, b) in page.as_bytes_mut().iter_mut().enumerate() {
///     *b = (i / 8 % 7) as u8;
/// }
/// let mut out = vec![0u8; fast.max_compressed_len()];
/// let n = fast.compress(&page, &mut out)?;
/// // Plain LZO1X: any LZO codec reads it.
/// let mut back = Page::zeroed();
/// Lzo1x::default().decompress(&out[..n], &mut back)?;
/// assert_eq!(back, page);
/// # Ok::<(), Box<dyn core::error::Error>>(())
/// ```
#[derive(Clone, Debug, Default)]
pub struct Lzo1xFast {
    compressor: FastCompressor,
}

page_codec!(Lzo1xFast, "lzo-fast", |codec, page, out| codec.compressor.compress(page.as_bytes(), out));

/// Plain LZO1X-1 as a [`PageCodec`] with the Linux kernel's exact bytes (its
/// `lzo1x_1_compress`, zram's `lzo` as the kernel writes it), for stores that must hold the
/// kernel's streams; [`Lzo1x`] writes smaller streams faster. Its decoder also reads LZO-RLE.
///
/// ```
/// use lzokit::{KernelCompressor, Lzo1xKernel};
/// use pagecodec::{Page, PageCodec};
///
/// let mut page = Page::zeroed();
/// page.as_bytes_mut()[..26].copy_from_slice(b"abcdefghijklmnopqrstuvwxyz");
/// let mut out = vec![0u8; 4096];
/// let n = Lzo1xKernel::default().compress(&page, &mut out)?;
/// let mut kernel = vec![0u8; 4096];
/// let k = KernelCompressor::new().compress(page.as_bytes(), &mut kernel)?;
/// assert_eq!(out[..n], kernel[..k]);
/// # Ok::<(), Box<dyn core::error::Error>>(())
/// ```
#[derive(Clone, Debug, Default)]
pub struct Lzo1xKernel {
    compressor: KernelCompressor,
}

page_codec!(Lzo1xKernel, "lzo-kernel", |codec, page, out| codec.compressor.compress(page.as_bytes(), out));

/// A slow, strong LZO1X compressor for pages as a [`PageCodec`] (`lzo-999`): LZO1X-999-class
/// ratios with the same decoder, for recompressing pages that stay in memory a long time.
///
/// It searches hash chains of every earlier position with the same 3-byte prefix (up to
/// [`depth`](Self::depth) of them, default 16) for the longest match and the longest within
/// a 2-byte instruction's reach, then picks the cheapest sequence of literal runs and
/// matches for the whole page by dynamic programming over the instruction costs. Its
/// streams are plain LZO1X (M2 and M3 instructions, lengths from 3) that every LZO1X decoder
/// reads; they are not liblzo2's `lzo1x_999` bytes. Several times slower than [`Lzo1x`]; it
/// owns about 56 KiB of working memory.
///
/// ```
/// use lzokit::{Lzo1x, Lzo1x999};
/// use pagecodec::{Page, PageCodec};
///
/// let mut page = Page::zeroed();
/// for (i, b) in page.as_bytes_mut().iter_mut().enumerate() {
///     *b = b"the quick brown fox jumps over the lazy dog, "[i % 45] ^ (i / 700) as u8;
/// }
/// let mut strong = vec![0u8; 4096];
/// let n = Lzo1x999::default().compress(&page, &mut strong)?;
/// let mut fast = vec![0u8; 4096];
/// let m = Lzo1x::default().compress(&page, &mut fast)?;
/// assert!(n <= m, "{n} > {m}");
/// let mut back = Page::zeroed();
/// Lzo1x::default().decompress(&strong[..n], &mut back)?; // any LZO1X decoder
/// assert_eq!(back, page);
/// # Ok::<(), Box<dyn core::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct Lzo1x999 {
    compressor: OptimalCompressor,
}

impl Lzo1x999 {
    /// A compressor walking up to `depth` candidates per position (at least 1): deeper
    /// finds longer matches, slower.
    pub const fn with_depth(depth: usize) -> Self {
        Lzo1x999 { compressor: OptimalCompressor::new(depth) }
    }

    /// Candidates walked per position.
    pub fn depth(&self) -> usize {
        self.compressor.depth()
    }
}

impl Default for Lzo1x999 {
    fn default() -> Self {
        Self::with_depth(OptimalCompressor::DEFAULT_DEPTH)
    }
}

impl core::fmt::Debug for Lzo1x999 {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Lzo1x999").field("depth", &self.depth()).finish_non_exhaustive()
    }
}

page_codec!(Lzo1x999, "lzo-999", |codec, page, out| codec.compressor.compress(page.as_bytes(), out));

/// LZO-RLE as a [`PageCodec`] (zram's `lzo-rle`, its default since Linux 5.1): byte-identical
/// to the kernel's `lzorle1x_1_compress`. Its decoder also reads plain LZO1X streams.
///
/// ```
/// use lzokit::LzoRle;
/// use pagecodec::{Page, PageCodec};
///
/// let mut codec = LzoRle::default();
/// let mut page = Page::zeroed();
/// page.as_bytes_mut()[100] = 1;
/// let mut out = [0u8; 64];
/// let n = codec.compress(&page, &mut out)?;
/// assert!(n < 48, "zero runs become 4-byte tokens, {n} bytes");
/// let mut back = Page::filled(0xFF);
/// codec.decompress(&out[..n], &mut back)?;
/// assert_eq!(back, page);
/// # Ok::<(), Box<dyn core::error::Error>>(())
/// ```
#[derive(Clone, Debug, Default)]
pub struct LzoRle {
    compressor: KernelCompressor,
}

page_codec!(LzoRle, "lzo-rle", |codec, page, out| codec.compressor.compress_rle_page(page.as_bytes(), out));
