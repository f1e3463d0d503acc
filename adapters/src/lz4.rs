//! LZ4 block format through `lz4_flex`.

use alloc::boxed::Box;

use lz4_flex::block::{self, CompressTable};
use pagecodec::{CompressError, DecompressError, PAGE_SIZE, Page, PageCodec};

/// lz4_flex refuses any output buffer shorter than its worst case for the input, whatever
/// the input compresses to.
const WORST: usize = block::get_maximum_output_size(PAGE_SIZE);

/// LZ4 block format (no frame, no checksum), as zram's `lz4` stores a page.
///
/// The hash table is kept and reused (16-bit entries: a page is far below 64 KiB). When
/// the caller's budget is shorter than lz4_flex's worst case, the page is compressed into
/// scratch room of worst-case size and copied only if it fits the budget, so a budget is
/// always honoured.
///
/// ```
/// use pagecodec::{Page, PageCodec, CompressError};
/// use pagecodec_adapters::Lz4;
///
/// let mut codec = Lz4::new();
/// let mut noise = Page::zeroed();
/// let mut x = 0x9E37_79B9_7F4A_7C15u64;
/// for b in noise.as_bytes_mut().iter_mut() {
///     x ^= x << 13;
///     x ^= x >> 7;
///     x ^= x << 17;
///     *b = x as u8;
/// }
/// // Random bytes do not compress: a budget below the page size is refused.
/// let mut out = [0u8; 3000];
/// assert_eq!(codec.compress(&noise, &mut out), Err(CompressError::Incompressible));
/// ```
pub struct Lz4 {
    table: CompressTable,
    scratch: Box<[u8; WORST]>,
}

impl Lz4 {
    /// The largest block [`PageCodec::compress`] writes for a page (LZ4's bound), for
    /// callers that size buffers in constant context.
    pub const MAX_COMPRESSED_LEN: usize = WORST;

    /// A fresh codec (allocates its scratch room once).
    pub fn new() -> Lz4 {
        Lz4 { table: CompressTable::small(), scratch: Box::new([0; WORST]) }
    }
}

impl Default for Lz4 {
    fn default() -> Self {
        Lz4::new()
    }
}

impl core::fmt::Debug for Lz4 {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("Lz4")
    }
}

impl PageCodec for Lz4 {
    fn name(&self) -> &'static str {
        "lz4-page"
    }

    fn max_compressed_len(&self) -> usize {
        WORST
    }

    fn compress(&mut self, page: &Page, out: &mut [u8]) -> Result<usize, CompressError> {
        let refuse = |_| CompressError::Incompressible;
        if out.len() >= WORST {
            return block::compress_into_with_table(page.as_bytes(), out, &mut self.table).map_err(refuse);
        }
        let n = block::compress_into_with_table(page.as_bytes(), &mut self.scratch[..], &mut self.table)
            .map_err(refuse)?;
        let dst = out.get_mut(..n).ok_or(CompressError::Incompressible)?;
        dst.copy_from_slice(&self.scratch[..n]);
        Ok(n)
    }

    fn decompress(&mut self, input: &[u8], page: &mut Page) -> Result<(), DecompressError> {
        match block::decompress_into(input, page.as_bytes_mut()) {
            Ok(PAGE_SIZE) => Ok(()),
            Ok(_) => Err(DecompressError::WrongLength),
            // lz4_flex does not tell a cut-short block from a corrupt one reliably, and
            // an output-full error means the block decodes to more than a page.
            Err(block::DecompressError::OutputTooSmall { .. }) => Err(DecompressError::WrongLength),
            Err(block::DecompressError::ExpectedAnotherByte) => Err(DecompressError::Truncated),
            Err(_) => Err(DecompressError::corrupt("lz4 block rejected by lz4_flex")),
        }
    }
}
