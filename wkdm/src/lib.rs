//! WKdm, the page compressor of Apple's XNU memory compressor, bit-exact with its current
//! format and safe on any input.
//!
//! WKdm (Wilson & Kaplan) reads a page as little-endian 32-bit words against a 16-entry
//! direct-mapped dictionary and emits a 2-bit tag per word (zero, exact match, partial
//! match of the upper 22 bits, miss) plus indices, low bits and missed words. This crate
//! writes exactly the bytes XNU's compressor writes (dictionary preload 0, zero test first,
//! XNU's hash table, its budget, early-abort and "mostly zero value" sparse form), and
//! decodes them after validating every offset and count.
//!
//! - [`Wkdm`]: 4 KiB pages through [`PageCodec`] (the buffer length is the budget).
//! - [`WkdmCodec`]: any supported page size through the crate's own API
//!   ([`Wkdm16K`] for Apple arm64's 16 KiB pages), with XNU's exact budget rules on request
//!   and zero / single-value pages reported like XNU (no stream, just the value).
//! - [`Isa`]: the instruction sets with a code path of their own (scalar, SSE4.1, AVX2, AVX-512, NEON), which all
//!   write the same bytes; a new codec takes the fastest one available, detected once at
//!   run time under `std` and from the compile-time target features without it.
//!
//! ```
//! use pagecodec::{Page, PageCodec};
//! use wkdm::Wkdm;
//!
//! let mut page = Page::zeroed();
//! for (i, w) in page.words_mut().iter_mut().enumerate() {
//!     *w = [0x7f00_2c00u32, 0, 0x7f00_1000, 42][i % 4].to_le(); // pointers, NULLs, integers
//! }
//! let mut codec = Wkdm::default();
//! let mut out = [0u8; 4368];
//! let n = codec.compress(&page, &mut out)?;
//! assert!(n < 1024);
//! let mut back = Page::zeroed();
//! codec.decompress(&out[..n], &mut back)?;
//! assert_eq!(back, page);
//! # Ok::<(), Box<dyn core::error::Error>>(())
//! ```
#![no_std]
#![cfg_attr(docsrs, feature(doc_cfg))]

// The README's example runs as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

#[cfg(feature = "std")]
extern crate std;

mod arch;
mod compress;
mod decompress;
mod format;
mod isa;
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
mod pipeline;
mod scratch;

pub use isa::{Isa, UnavailableIsa};

use pagecodec::{CompressError, DecompressError, PAGE_WORDS, Page, PageCodec};

/// XNU's byte limit for a 4 KiB page in a fresh compressor segment (4096 - 4).
pub const XNU_LIMIT_4K: usize = 4092;

/// What [`WkdmCodec::compress_page`] produced.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Compressed {
    /// A stream of this many bytes at the start of the output buffer (normal or sparse
    /// form).
    Stream(usize),
    /// Every word of the page is zero. XNU returns length 0 and stores nothing.
    Zero,
    /// Every 32-bit word of the page equals this non-zero value. XNU returns length 0 and
    /// the caller stores the value; nothing was written to the output buffer.
    SingleValue(u32),
}

impl Compressed {
    /// The stream length as XNU reports it: 0 for zero and single-value pages.
    pub const fn stream_len(self) -> usize {
        match self {
            Compressed::Stream(n) => n,
            Compressed::Zero | Compressed::SingleValue(_) => 0,
        }
    }

    /// The repeated 32-bit value of a zero (0) or single-value page, `None` for a stream.
    pub const fn same_value(self) -> Option<u32> {
        match self {
            Compressed::Stream(_) => None,
            Compressed::Zero => Some(0),
            Compressed::SingleValue(v) => Some(v),
        }
    }
}

/// Compressor settings: XNU's early abort and, optionally, XNU's exact budget rules.
///
/// Every call is bounded by the output buffer: the stream is written only if it fits in
/// `out.len()` bytes (the [`PageCodec`] budget). On top of that, [`xnu_limit`](Self::xnu_limit)
/// applies the kernel's integer rules for a byte limit, which are slightly stricter than
/// "fits": XNU refuses a normal stream that would end exactly at the limit after a miss or
/// a low-bits word. With `out.len() >= limit` the result is exactly XNU's (same bytes, same
/// refusals); `4092` (= [`XNU_LIMIT_4K`]) is what the kernel passes for 4 KiB pages.
///
/// ```
/// use wkdm::CompressOptions;
///
/// let xnu = CompressOptions::new().xnu_limit(Some(wkdm::XNU_LIMIT_4K));
/// assert!(xnu.is_early_abort());
/// let thorough = CompressOptions::new().early_abort(false);
/// assert_eq!(thorough.limit(), None);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CompressOptions {
    pub(crate) early_abort: bool,
    pub(crate) xnu_limit: Option<usize>,
}

impl CompressOptions {
    /// The defaults: early abort on, no XNU limit (only `out.len()` bounds the stream).
    pub const fn new() -> Self {
        CompressOptions { early_abort: true, xnu_limit: None }
    }

    /// Turns XNU's early abort on or off. When on, the compressor gives up after the first
    /// 416 bytes (104 words) if `floor(2p * 1365 / 2048) + 4m + floor(h / 2) + 26 > 426`
    /// (m misses, p partials, h exact + partial words so far): such pages rarely shrink
    /// below ~3 KiB. Off, every page is compressed whenever it fits.
    pub const fn early_abort(mut self, on: bool) -> Self {
        self.early_abort = on;
        self
    }

    /// Applies XNU's exact budget rules for a byte `limit` (`None`: only `out.len()`).
    pub const fn xnu_limit(mut self, limit: Option<usize>) -> Self {
        self.xnu_limit = limit;
        self
    }

    /// Whether the early abort is on.
    pub const fn is_early_abort(&self) -> bool {
        self.early_abort
    }

    /// The XNU limit in force, if any.
    pub const fn limit(&self) -> Option<usize> {
        self.xnu_limit
    }
}

impl Default for CompressOptions {
    fn default() -> Self {
        Self::new()
    }
}

/// The dictionary's initial contents, which the stream does not record.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum DictionaryPreload {
    /// All entries 0: macOS 10.11 and later, and this crate's compressor.
    #[default]
    Zero,
    /// All entries 1: streams written by macOS 10.9 and 10.10 (decoding only).
    One,
}

/// A WKdm codec for pages of `WORDS` 32-bit words (1024 for 4 KiB, 4096 for 16 KiB).
///
/// The value holds all working memory (about 19 bytes per page word: 19 KiB for 4 KiB
/// pages), so compressing and decompressing never allocate; reuse one value per thread.
/// [`Wkdm`] (4 KiB) also implements [`PageCodec`].
///
/// ```
/// use wkdm::{Compressed, CompressOptions, Wkdm16K, XNU_LIMIT_4K};
///
/// let mut codec = Wkdm16K::new();
/// let mut page = [0u8; 16384];
/// page[100..104].copy_from_slice(&0xdead_beefu32.to_le_bytes());
/// let mut out = [0u8; 16384];
/// let Compressed::Stream(n) = codec.compress_page(&page, &mut out)? else { unreachable!() };
/// assert_eq!(n, 10); // sparse form: magic + one (value, offset) entry
/// let mut back = [0xFFu8; 16384];
/// codec.decompress_page(&out[..n], &mut back)?;
/// assert_eq!(back, page);
///
/// // Uniform pages are reported, not encoded, as XNU does.
/// assert_eq!(codec.compress_page(&[0u8; 16384], &mut out)?, Compressed::Zero);
/// # Ok::<(), Box<dyn core::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct WkdmCodec<const WORDS: usize> {
    options: CompressOptions,
    preload: DictionaryPreload,
    isa: Isa,
    scratch: scratch::Scratch<WORDS>,
}

/// The 4 KiB codec (1024 words), also usable through [`PageCodec`].
pub type Wkdm = WkdmCodec<PAGE_WORDS>;

/// The 16 KiB codec (4096 words): Apple arm64's layout, tags area 1024 bytes.
pub type Wkdm16K = WkdmCodec<4096>;

impl<const WORDS: usize> WkdmCodec<WORDS> {
    /// Bytes in a page.
    pub const PAGE_BYTES: usize = 4 * WORDS;

    /// The longest stream the compressor can write (any budget): 4368 bytes for 4 KiB.
    pub const MAX_COMPRESSED_LEN: usize = format::Layout { words: WORDS }.max_normal_len();

    /// A codec with default settings (early abort on, no XNU limit, preload 0) on the
    /// fastest available [`Isa`].
    pub fn new() -> Self {
        const { assert!(WORDS == 1024 || WORDS == 4096, "WKdm pages are 4 KiB or 16 KiB") };
        WkdmCodec {
            options: CompressOptions::new(),
            preload: DictionaryPreload::Zero,
            isa: Isa::best(),
            scratch: scratch::Scratch::new(),
        }
    }

    /// This codec running on the code path for `isa` (every path writes the same bytes).
    ///
    /// # Errors
    ///
    /// [`UnavailableIsa`] when that path is not compiled in or the CPU lacks it.
    pub fn with_isa(mut self, isa: Isa) -> Result<Self, UnavailableIsa> {
        if !isa.is_available() {
            return Err(UnavailableIsa(isa));
        }
        self.isa = isa;
        Ok(self)
    }

    /// The instruction set whose code path this codec runs.
    pub const fn isa(&self) -> Isa {
        self.isa
    }

    /// This codec with compressor settings `options`.
    pub const fn with_options(mut self, options: CompressOptions) -> Self {
        self.options = options;
        self
    }

    /// This codec decoding with dictionary preload `preload` (streams from macOS 10.9 and
    /// 10.10 need [`DictionaryPreload::One`]).
    pub const fn with_preload(mut self, preload: DictionaryPreload) -> Self {
        self.preload = preload;
        self
    }

    /// The compressor settings.
    pub const fn options(&self) -> CompressOptions {
        self.options
    }

    /// Compresses a page of `4 * WORDS` bytes into `out`, as XNU's compressor does.
    ///
    /// Zero and single-value pages are reported as [`Compressed::Zero`] and
    /// [`Compressed::SingleValue`] without writing anything; every other page yields the
    /// normal or the sparse form, whichever XNU would choose. A page size other than
    /// `4 * WORDS` bytes is a compile-time error.
    ///
    /// # Errors
    ///
    /// [`CompressError::Incompressible`] when the stream does not fit in `out`, breaks the
    /// XNU limit (if set), or the early abort gives up.
    #[inline]
    pub fn compress_page<const N: usize>(
        &mut self,
        page: &[u8; N],
        out: &mut [u8],
    ) -> Result<Compressed, CompressError> {
        const { assert!(N == 4 * WORDS, "page length must be 4 * WORDS bytes") };
        self.compress_on_path(page, out, true)
    }

    /// Runs the compressor of `self.isa`.
    #[inline]
    fn compress_on_path(
        &mut self,
        page: &[u8],
        out: &mut [u8],
        report_same_value: bool,
    ) -> Result<Compressed, CompressError> {
        #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
        if let Some((replay, kernel)) = self.simd_passes() {
            let (s, options) = (&mut self.scratch, &self.options);
            // `replay` and `kernel` belong to `self.isa`, which is only ever set to an
            // available path (`new` takes `Isa::best()`, `with_isa` checks `is_available`),
            // so their instruction sets are present.
            return pipeline::compress(
                page,
                s,
                out,
                options,
                report_same_value,
                |page, prev, slots, dict, groups| {
                    if let Some(replay) = replay {
                        // SAFETY: see above.
                        unsafe { replay(page, prev, slots, dict, groups) }
                    }
                },
                // SAFETY: see above.
                |page, s, dict, abort, groups, counts| unsafe {
                    kernel(page, s, dict, abort, groups, counts)
                },
            );
        }
        compress::compress::<WORDS>(page, &mut self.scratch, out, &self.options, report_same_value)
    }

    /// The dictionary replay and the classify kernel of `self.isa`: no replay pass for a
    /// kernel that replays itself; `None` for the scalar compressor.
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    #[inline]
    fn simd_passes(&self) -> Option<(Option<pipeline::Replay<WORDS>>, pipeline::Kernel<WORDS>)> {
        match self.isa {
            #[cfg(all(target_arch = "x86_64", wkdm_avx512))]
            Isa::Avx512 => {
                Some((Some(arch::x86_64::avx512::replay::<WORDS>), arch::x86_64::avx512::classify::<WORDS>))
            }
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2 => Some((None, arch::x86_64::avx2::classify::<WORDS>)),
            #[cfg(target_arch = "x86_64")]
            Isa::Sse41 => Some((None, arch::x86_64::sse41::classify::<WORDS>)),
            #[cfg(target_arch = "aarch64")]
            Isa::Neon => Some((
                Some(pipeline::recurrence::<WORDS, arch::aarch64::neon::Neon>),
                arch::aarch64::neon::classify::<WORDS>,
            )),
            _ => None,
        }
    }

    /// Decompresses a normal or sparse stream into a whole page of `4 * WORDS` bytes.
    ///
    /// Zero and single-value pages have no stream: fill the page with the value yourself.
    ///
    /// # Errors
    ///
    /// [`DecompressError::Truncated`] when the input ends before the length the stream
    /// announces, [`DecompressError::TrailingInput`] when it is longer, and
    /// [`DecompressError::Corrupt`] when offsets, counts or padding are inconsistent. The
    /// whole stream is validated before the page is written.
    #[inline]
    pub fn decompress_page<const N: usize>(
        &mut self,
        input: &[u8],
        page: &mut [u8; N],
    ) -> Result<(), DecompressError> {
        const { assert!(N == 4 * WORDS, "page length must be 4 * WORDS bytes") };
        let preload = match self.preload {
            DictionaryPreload::Zero => 0,
            DictionaryPreload::One => 1,
        };
        match self.isa {
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2 => {
                // SAFETY: `self.isa` is only ever set to an available path, so AVX2, BMI1,
                // BMI2 and POPCNT are present.
                unsafe { arch::x86_64::avx2::decompress::<WORDS>(input, &mut self.scratch, preload, page) }
            }
            #[cfg(all(target_arch = "x86_64", wkdm_avx512))]
            Isa::Avx512 => {
                // SAFETY: `self.isa` is only ever set to an available path, so AVX2, BMI1,
                // BMI2, POPCNT, AVX-512F/BW/CD/VL/VBMI/VBMI2 and GFNI are present.
                unsafe { arch::x86_64::avx512::decompress::<WORDS>(input, &mut self.scratch, preload, page) }
            }
            #[cfg(target_arch = "aarch64")]
            Isa::Neon => {
                // SAFETY: `self.isa` is only ever set to an available path, so NEON is
                // present.
                unsafe { arch::aarch64::neon::decompress::<WORDS>(input, &mut self.scratch, preload, page) }
            }
            _ => decompress::decompress::<WORDS>(input, &mut self.scratch, preload, page),
        }
    }
}

impl<const WORDS: usize> Default for WkdmCodec<WORDS> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const WORDS: usize> core::fmt::Debug for WkdmCodec<WORDS> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("WkdmCodec")
            .field("page_bytes", &Self::PAGE_BYTES)
            .field("options", &self.options)
            .field("preload", &self.preload)
            .field("isa", &self.isa)
            .finish_non_exhaustive()
    }
}

/// 4 KiB pages through the family's trait.
///
/// The budget is `out.len()` (plus the XNU limit if one is set in the options). Zero and
/// single-value pages are encoded rather than reported, so every page has a decodable
/// stream: the zero page becomes the 4-byte sparse form (`21 43 00 00`, which is what
/// XNU's own sparse/normal rule picks for it) and a single-value page the normal form
/// (784 bytes: every word after the first is an EXACT hit).
impl PageCodec for WkdmCodec<PAGE_WORDS> {
    fn name(&self) -> &'static str {
        "wkdm"
    }

    fn max_compressed_len(&self) -> usize {
        Self::MAX_COMPRESSED_LEN
    }

    #[inline]
    fn compress(&mut self, page: &Page, out: &mut [u8]) -> Result<usize, CompressError> {
        match self.compress_on_path(page.as_bytes(), out, false)? {
            Compressed::Stream(n) => Ok(n),
            // Not returned when same-value reports are off.
            Compressed::Zero | Compressed::SingleValue(_) => Err(CompressError::Incompressible),
        }
    }

    #[inline]
    fn decompress(&mut self, input: &[u8], page: &mut Page) -> Result<(), DecompressError> {
        self.decompress_page(input, page.as_bytes_mut())
    }
}
