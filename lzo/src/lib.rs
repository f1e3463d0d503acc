//! LZO1X-1 and LZO-RLE, compatible with liblzo2 and the Linux kernel, in safe `no_std` Rust.
//!
//! - [`Compressor`]: the LZO1X-1 compressor for inputs of any length, owning its working
//!   memory. [`Compressor::compress`] writes plain LZO1X (byte-identical to the kernel's
//!   `lzo1x_1_compress`, readable by liblzo2); [`Compressor::compress_rle`] writes LZO-RLE,
//!   zram's default format. The output buffer's length is the budget: the compressor never
//!   writes past it and stops as soon as the stream cannot fit.
//! - [`decompress()`]: a safe decompressor for every LZO1X instruction form (including the
//!   `M1` and 3-byte forms only `lzo1x_999` writes) and LZO-RLE, into an output buffer of
//!   any size, with typed errors mirroring liblzo2's ([`DecompressError`]).
//! - [`Lzo1x`] and [`LzoRle`]: the two as [`PageCodec`]s for page stores.
//!
//! ```
//! use lzokit::{decompress, worst_case_len, Compressor};
//!
//! let input = b"compressed memory, compressed memory, compressed memory!".repeat(10);
//! let mut stream = vec![0u8; worst_case_len(input.len())];
//! let n = Compressor::new().compress_rle(&input, &mut stream)?;
//! let mut back = vec![0u8; input.len()];
//! let len = decompress(&stream[..n], &mut back)?;
//! assert_eq!(&back[..len], &input[..]);
//! # Ok::<(), Box<dyn core::error::Error>>(())
//! ```
//!
//! The format, byte by byte, is in the crate's specification (`SPEC.md` (section 5, `lzokit`)).
#![no_std]
#![cfg_attr(docsrs, feature(doc_cfg))]

#[cfg(feature = "std")]
extern crate std;

mod compress;
mod decompress;
mod error;
mod fast;
mod format;
mod page_compressor;

pub use compress::Compressor;
pub use decompress::decompress;
pub use error::DecompressError;
pub use format::worst_case_len;
pub use pagecodec::CompressError;

use page_compressor::PageCompressor;
use pagecodec::{PAGE_SIZE, Page, PageCodec};

/// Decodes a whole page: the stream must decompress to exactly 4096 bytes.
fn decompress_page(input: &[u8], page: &mut Page) -> Result<(), pagecodec::DecompressError> {
    let n = decompress(input, page.as_bytes_mut())?;
    if n == PAGE_SIZE { Ok(()) } else { Err(pagecodec::DecompressError::WrongLength) }
}

/// Plain LZO1X-1 as a [`PageCodec`] (zram's `lzo`): streams liblzo2 and every LZO decoder
/// read. Its decoder also reads LZO-RLE streams.
///
/// Its compressor is page-specialised and faster than [`Compressor::compress`], but not
/// byte-identical to the kernel's: it scans as the kernel does, but tries the distances of
/// the last two matches before a different hash table (4096 entries that also hold the
/// first 6 bytes at their position, no clear per page), and gives a match of up to 32 bytes
/// up for one at least 2 bytes longer a byte later. On captured pages that finds fewer,
/// longer matches: its streams are 3-15% smaller than liblzo2's and decode faster. Use
/// [`Compressor`] for the kernel's exact bytes. It owns 32 KiB of working memory.
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

impl PageCodec for Lzo1x {
    fn name(&self) -> &'static str {
        "lzo"
    }

    fn max_compressed_len(&self) -> usize {
        worst_case_len(PAGE_SIZE)
    }

    fn compress(&mut self, page: &Page, out: &mut [u8]) -> Result<usize, CompressError> {
        self.compressor.compress(page.as_bytes(), out)
    }

    fn decompress(&mut self, input: &[u8], page: &mut Page) -> Result<(), pagecodec::DecompressError> {
        decompress_page(input, page)
    }
}

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
    compressor: Compressor,
}

impl PageCodec for LzoRle {
    fn name(&self) -> &'static str {
        "lzo-rle"
    }

    fn max_compressed_len(&self) -> usize {
        worst_case_len(PAGE_SIZE)
    }

    fn compress(&mut self, page: &Page, out: &mut [u8]) -> Result<usize, CompressError> {
        self.compressor.compress_rle_page(page.as_bytes(), out)
    }

    fn decompress(&mut self, input: &[u8], page: &mut Page) -> Result<(), pagecodec::DecompressError> {
        decompress_page(input, page)
    }
}
