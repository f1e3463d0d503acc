//! How the store calls codecs: [`EntryCodec`], implemented by every
//! [`PageCodec`] and by [`Hybrid`].

use alloc::boxed::Box;

use pagecodec::{CompressError, DecompressError, Page, PageCodec};

/// A boxed codec that can move between threads (secondary codecs, `ShardedStore`'s codecs).
pub type SendCodec = Box<dyn EntryCodec + Send>;

/// A codec as the store sees it: compression also returns a *variant* (which of several
/// inner codecs produced the stream), recorded per entry and handed back to `decompress`.
///
/// Every [`PageCodec`] (including `Box<dyn PageCodec>`, so codecs can be chosen at run
/// time) is an `EntryCodec` with the single variant 0; [`Hybrid`] has two.
pub trait EntryCodec {
    /// A short name for tables.
    fn name(&self) -> &'static str;

    /// The name of the inner codec that produces `variant`.
    fn variant_name(&self, variant: u8) -> &'static str;

    /// Compresses `page` into `out` (the budget), returning the stream length and variant.
    ///
    /// # Errors
    ///
    /// [`CompressError::Incompressible`] when no variant fits in `out`.
    fn compress(&mut self, page: &Page, out: &mut [u8]) -> Result<(usize, u8), CompressError>;

    /// Decompresses a stream produced by `variant`.
    ///
    /// # Errors
    ///
    /// Any [`DecompressError`] of the inner codec, or `Corrupt` for an unknown variant.
    fn decompress(&mut self, variant: u8, input: &[u8], page: &mut Page) -> Result<(), DecompressError>;
}

impl<C: PageCodec> EntryCodec for C {
    fn name(&self) -> &'static str {
        PageCodec::name(self)
    }
    fn variant_name(&self, _variant: u8) -> &'static str {
        PageCodec::name(self)
    }
    fn compress(&mut self, page: &Page, out: &mut [u8]) -> Result<(usize, u8), CompressError> {
        PageCodec::compress(self, page, out).map(|n| (n, 0))
    }
    fn decompress(&mut self, variant: u8, input: &[u8], page: &mut Page) -> Result<(), DecompressError> {
        if variant != 0 {
            return Err(DecompressError::corrupt("unknown codec variant"));
        }
        PageCodec::decompress(self, input, page)
    }
}

/// "Try `A`, fall back to `B`": XNU's policy (WKdm first, LZ4 when WKdm fails or yields
/// 2048 bytes or more), generic over any two codecs.
///
/// `A` gets a budget of `min(threshold - 1, budget)` bytes, so it stops early once its
/// stream would reach `threshold`; then `B` gets the whole budget. Variant 0 = `A`,
/// 1 = `B`.
///
/// ```
/// use pagecodec::{Page, Raw};
/// use pagestore::{EntryCodec, Hybrid};
///
/// // Raw never fits under 2048 bytes, so the fallback (also Raw here) is used.
/// let mut hybrid = Hybrid::new(Raw, Raw, 2048);
/// let mut out = [0u8; 4096];
/// assert_eq!(hybrid.compress(&Page::filled(1), &mut out), Ok((4096, 1)));
/// ```
#[derive(Clone, Debug, Default)]
pub struct Hybrid<A, B> {
    /// The codec tried first.
    pub first: A,
    /// The fallback.
    pub fallback: B,
    /// `first`'s stream must be shorter than this many bytes.
    pub threshold: usize,
}

impl<A: PageCodec, B: PageCodec> Hybrid<A, B> {
    /// A hybrid trying `first`, falling back to `fallback` when `first` fails or its
    /// stream would be `threshold` bytes or more.
    pub const fn new(first: A, fallback: B, threshold: usize) -> Self {
        Hybrid { first, fallback, threshold }
    }
}

impl<A: PageCodec, B: PageCodec> EntryCodec for Hybrid<A, B> {
    fn name(&self) -> &'static str {
        "hybrid"
    }
    fn variant_name(&self, variant: u8) -> &'static str {
        if variant == 0 { self.first.name() } else { self.fallback.name() }
    }
    fn compress(&mut self, page: &Page, out: &mut [u8]) -> Result<(usize, u8), CompressError> {
        let first_budget = out.len().min(self.threshold.saturating_sub(1));
        if let Ok(n) = self.first.compress(page, &mut out[..first_budget]) {
            return Ok((n, 0));
        }
        self.fallback.compress(page, out).map(|n| (n, 1))
    }
    fn decompress(&mut self, variant: u8, input: &[u8], page: &mut Page) -> Result<(), DecompressError> {
        match variant {
            0 => self.first.decompress(input, page),
            1 => self.fallback.decompress(input, page),
            _ => Err(DecompressError::corrupt("unknown hybrid variant")),
        }
    }
}
