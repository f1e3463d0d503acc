//! zstd frames through the `zstd` crate (C zstd).

use pagecodec::{CompressError, DecompressError, PAGE_SIZE, Page, PageCodec};

/// Why a [`Zstd`] codec could not be built.
#[derive(Debug)]
#[non_exhaustive]
pub enum ZstdError {
    /// The level is outside zstd's range (the range is in the message).
    Level(i32),
    /// zstd could not create or configure a context.
    Context(std::io::Error),
}

impl core::fmt::Display for ZstdError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            ZstdError::Level(l) => {
                let r = zstd::compression_level_range();
                write!(f, "zstd level {l} is outside {}..={}", r.start(), r.end())
            }
            ZstdError::Context(e) => write!(f, "zstd context: {e}"),
        }
    }
}

impl std::error::Error for ZstdError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ZstdError::Context(e) => Some(e),
            ZstdError::Level(_) => None,
        }
    }
}

/// zstd, one reused context each way; level 3 (zstd's own default) unless chosen.
///
/// Each page is one zstd frame. zram's `zstd` also writes one frame per page; its level
/// is set by the `algorithm_params` attribute.
///
/// ```
/// use pagecodec::{Page, PageCodec, PAGE_SIZE};
/// use pagecodec_adapters::Zstd;
///
/// let mut codec = Zstd::with_level(1)?;
/// let page = Page::from([3u8; PAGE_SIZE]);
/// let mut out = vec![0u8; codec.max_compressed_len()];
/// let n = codec.compress(&page, &mut out)?;
/// let mut back = Page::zeroed();
/// codec.decompress(&out[..n], &mut back)?;
/// assert_eq!(back, page);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Zstd {
    level: i32,
    cctx: zstd::bulk::Compressor<'static>,
    dctx: zstd::bulk::Decompressor<'static>,
}

impl Zstd {
    /// The default level.
    pub const DEFAULT_LEVEL: i32 = 3;

    /// The largest frame [`PageCodec::compress`] writes for a page: zstd's
    /// `ZSTD_COMPRESSBOUND` of 4 KiB, for callers that size buffers in constant context.
    pub const MAX_COMPRESSED_LEN: usize = PAGE_SIZE + (PAGE_SIZE >> 8) + (((128 << 10) - PAGE_SIZE) >> 11);

    /// zstd at level 3.
    ///
    /// # Errors
    ///
    /// [`ZstdError::Context`] when zstd cannot allocate its contexts.
    pub fn new() -> Result<Zstd, ZstdError> {
        Zstd::with_level(Zstd::DEFAULT_LEVEL)
    }

    /// zstd at `level` (negative levels are zstd's fast modes).
    ///
    /// # Errors
    ///
    /// [`ZstdError::Level`] outside zstd's range, [`ZstdError::Context`] when zstd cannot
    /// allocate its contexts.
    pub fn with_level(level: i32) -> Result<Zstd, ZstdError> {
        if !zstd::compression_level_range().contains(&level) {
            return Err(ZstdError::Level(level));
        }
        Ok(Zstd {
            level,
            cctx: zstd::bulk::Compressor::new(level).map_err(ZstdError::Context)?,
            dctx: zstd::bulk::Decompressor::new().map_err(ZstdError::Context)?,
        })
    }

    /// The compression level.
    pub fn level(&self) -> i32 {
        self.level
    }
}

impl core::fmt::Debug for Zstd {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Zstd").field("level", &self.level).finish()
    }
}

impl PageCodec for Zstd {
    fn name(&self) -> &'static str {
        "zstd"
    }

    fn max_compressed_len(&self) -> usize {
        Self::MAX_COMPRESSED_LEN
    }

    fn compress(&mut self, page: &Page, out: &mut [u8]) -> Result<usize, CompressError> {
        // zstd fails with "destination too small" when the frame exceeds the budget.
        self.cctx
            .compress_to_buffer(page.as_bytes().as_slice(), out)
            .map_err(|_| CompressError::Incompressible)
    }

    fn decompress(&mut self, input: &[u8], page: &mut Page) -> Result<(), DecompressError> {
        match self.dctx.decompress_to_buffer(input, page.as_bytes_mut().as_mut_slice()) {
            Ok(PAGE_SIZE) => Ok(()),
            Ok(_) => Err(DecompressError::WrongLength),
            Err(_) => Err(DecompressError::corrupt("zstd rejected the frame")),
        }
    }
}
