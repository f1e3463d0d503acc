//! The identity codec.

use crate::{CompressError, DecompressError, PAGE_SIZE, Page, PageCodec};

/// The identity codec: the stream is the page itself (4096 bytes).
///
/// It serves as the `memcpy` floor in benchmarks and as the format of zram's "huge"
/// (incompressible) pages.
///
/// ```
/// use pagecodec::{CompressError, Page, PageCodec, Raw, PAGE_SIZE};
///
/// let mut out = [0u8; PAGE_SIZE - 1];
/// assert_eq!(Raw.compress(&Page::zeroed(), &mut out), Err(CompressError::Incompressible));
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Raw;

impl PageCodec for Raw {
    fn name(&self) -> &'static str {
        "raw"
    }

    fn max_compressed_len(&self) -> usize {
        PAGE_SIZE
    }

    fn compress(&mut self, page: &Page, out: &mut [u8]) -> Result<usize, CompressError> {
        let out = out.get_mut(..PAGE_SIZE).ok_or(CompressError::Incompressible)?;
        out.copy_from_slice(page.as_bytes());
        Ok(PAGE_SIZE)
    }

    fn decompress(&mut self, input: &[u8], page: &mut Page) -> Result<(), DecompressError> {
        match input.len() {
            n if n < PAGE_SIZE => Err(DecompressError::Truncated),
            n if n > PAGE_SIZE => Err(DecompressError::TrailingInput),
            _ => {
                page.as_bytes_mut().copy_from_slice(input);
                Ok(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_on_wrong_lengths() {
        let mut page = Page::zeroed();
        assert_eq!(Raw.decompress(&[0; PAGE_SIZE - 1], &mut page), Err(DecompressError::Truncated));
        assert_eq!(Raw.decompress(&[0; PAGE_SIZE + 1], &mut page), Err(DecompressError::TrailingInput));
        assert_eq!(Raw.compress(&page, &mut []), Err(CompressError::Incompressible));
        let mut big = [0u8; PAGE_SIZE + 10];
        assert_eq!(Raw.compress(&Page::filled(3), &mut big), Ok(PAGE_SIZE));
        assert_eq!(big[PAGE_SIZE], 0, "wrote past the stream");
    }
}
