//! Typed errors shared by every codec.

use core::fmt;

/// Why a page could not be compressed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CompressError {
    /// The stream would not fit in the output buffer (the budget), or the codec gave up
    /// early because it predicted it would not. Callers store such pages raw.
    Incompressible,
}

impl fmt::Display for CompressError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CompressError::Incompressible => f.write_str("page does not fit in the output budget"),
        }
    }
}

impl core::error::Error for CompressError {}

/// Why a stream could not be decompressed into a page.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DecompressError {
    /// The stream ends before the page is complete or before a field it announced.
    Truncated,
    /// The stream is not valid for the codec's format; `reason` says which check failed.
    Corrupt {
        /// The check that failed, for diagnostics (not a stable identifier).
        reason: &'static str,
    },
    /// The stream is well formed but does not decode to exactly one page.
    WrongLength,
    /// The page is complete but input bytes are left over.
    TrailingInput,
}

impl DecompressError {
    /// A [`DecompressError::Corrupt`] with `reason`.
    pub const fn corrupt(reason: &'static str) -> Self {
        DecompressError::Corrupt { reason }
    }
}

impl fmt::Display for DecompressError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DecompressError::Truncated => f.write_str("compressed stream is truncated"),
            DecompressError::Corrupt { reason } => write!(f, "compressed stream is corrupt: {reason}"),
            DecompressError::WrongLength => f.write_str("stream does not decode to exactly one page"),
            DecompressError::TrailingInput => f.write_str("input left over after the page was decoded"),
        }
    }
}

impl core::error::Error for DecompressError {}

#[cfg(test)]
mod tests {
    use super::*;
    extern crate alloc;
    use alloc::string::ToString;

    #[test]
    fn display_says_what_went_wrong() {
        assert!(CompressError::Incompressible.to_string().contains("budget"));
        assert!(DecompressError::Truncated.to_string().contains("truncated"));
        assert!(DecompressError::corrupt("index >= 16").to_string().contains("index >= 16"));
        assert!(DecompressError::WrongLength.to_string().contains("one page"));
        assert!(DecompressError::TrailingInput.to_string().contains("left over"));
        let e: &dyn core::error::Error = &DecompressError::Truncated;
        assert!(e.source().is_none());
    }
}
