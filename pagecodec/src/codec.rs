//! The [`PageCodec`] trait.

use crate::{CompressError, DecompressError, Page};

/// A page compressor: what zram calls a compression backend.
///
/// Contract (every codec in the family is checked against it by `testing::check_codec`,
/// feature `testing`):
///
/// - **Budget.** `compress` writes at most `out.len()` bytes. As soon as the result cannot
///   fit it stops and returns [`CompressError::Incompressible`]; callers pass 3/4 of a page
///   to get zram's early stop. Any `out.len()`, 0 included, is legal. After an error the
///   contents of `out` are unspecified.
/// - **Whole pages.** `decompress` fills the whole page or returns an error. Its result
///   never depends on what the page held before (no stale data is ever visible), and no
///   input, however malformed, makes it panic, read or write out of bounds, or loop forever.
/// - **No allocation.** Working memory (hash tables, dictionaries) lives inside the codec
///   value, so both calls are allocation-free and a codec value is reused across pages.
/// - **Determinism.** The same page compresses to the same bytes whatever was compressed
///   before with the same value.
///
/// The trait is dyn-compatible, so codecs can be chosen at run time:
///
/// ```
/// use pagecodec::{Page, PageCodec, Raw};
///
/// let mut codecs: Vec<Box<dyn PageCodec>> = vec![Box::new(Raw)];
/// let page = Page::filled(0xAB);
/// for codec in &mut codecs {
///     let mut out = vec![0u8; codec.max_compressed_len()];
///     let n = codec.compress(&page, &mut out)?;
///     let mut back = Page::zeroed();
///     codec.decompress(&out[..n], &mut back)?;
///     assert_eq!(back, page, "{}", codec.name());
/// }
/// # Ok::<(), Box<dyn core::error::Error>>(())
/// ```
pub trait PageCodec {
    /// A short, stable name for tables and statistics (`"wkdm"`, `"lzo-rle"`, ...).
    fn name(&self) -> &'static str;

    /// The largest stream `compress` can produce for any page: a budget of this size never
    /// fails for lack of room (a codec may still refuse a page early, see the codec's docs).
    fn max_compressed_len(&self) -> usize;

    /// Compresses `page` into `out`, returning the stream length (`<= out.len()`).
    ///
    /// # Errors
    ///
    /// [`CompressError::Incompressible`] when the stream does not fit in `out` (or the codec
    /// gave up early because it would not have).
    fn compress(&mut self, page: &Page, out: &mut [u8]) -> Result<usize, CompressError>;

    /// Decompresses the whole stream `input` into `page`.
    ///
    /// # Errors
    ///
    /// A [`DecompressError`] for any stream that does not decode to exactly one page. The
    /// page's contents are unspecified after an error.
    fn decompress(&mut self, input: &[u8], page: &mut Page) -> Result<(), DecompressError>;
}

/// Forwards every method to the codec behind a pointer, so `&mut C` and `Box<C>` (including
/// `Box<dyn PageCodec>`) are codecs too.
macro_rules! forward_page_codec {
    ($($pointer:ty),+) => {$(
        impl<C: PageCodec + ?Sized> PageCodec for $pointer {
            fn name(&self) -> &'static str {
                (**self).name()
            }
            fn max_compressed_len(&self) -> usize {
                (**self).max_compressed_len()
            }
            fn compress(&mut self, page: &Page, out: &mut [u8]) -> Result<usize, CompressError> {
                (**self).compress(page, out)
            }
            fn decompress(&mut self, input: &[u8], page: &mut Page) -> Result<(), DecompressError> {
                (**self).decompress(input, page)
            }
        }
    )+};
}

forward_page_codec!(&mut C);
#[cfg(feature = "alloc")]
forward_page_codec!(alloc::boxed::Box<C>);
