//! The decompressor's typed errors, one per liblzo2 error code.

use core::fmt;

/// Why a stream could not be decompressed. The variants mirror liblzo2's error codes
/// ([`code`](DecompressError::code) gives the number), so code ported from C keeps its
/// meaning.
///
/// ```
/// use lzokit::{decompress, DecompressError};
///
/// let mut out = [0u8; 16];
/// // `11 00` is an end marker missing its last byte.
/// assert_eq!(decompress(&[0x11, 0x00], &mut out), Err(DecompressError::InputOverrun));
/// assert_eq!(DecompressError::InputOverrun.code(), -4);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DecompressError {
    /// The stream is malformed in a way no other variant names (a length extension so long
    /// that the length would overflow). liblzo2's `LZO_E_ERROR` (-1).
    Error,
    /// An instruction needs more input bytes than the stream has. `LZO_E_INPUT_OVERRUN` (-4).
    InputOverrun,
    /// The decompressed data does not fit in the output buffer. `LZO_E_OUTPUT_OVERRUN` (-5).
    OutputOverrun,
    /// A match refers to bytes before the start of the output. `LZO_E_LOOKBEHIND_OVERRUN` (-6).
    LookbehindOverrun,
    /// The stream ended between two instructions without an end marker. `LZO_E_EOF_NOT_FOUND` (-7).
    EofNotFound,
    /// Bytes follow the end marker. `LZO_E_INPUT_NOT_CONSUMED` (-8).
    InputNotConsumed,
}

impl DecompressError {
    /// liblzo2's numeric code for this error (`LZO_E_*`, always negative).
    pub const fn code(self) -> i32 {
        match self {
            DecompressError::Error => -1,
            DecompressError::InputOverrun => -4,
            DecompressError::OutputOverrun => -5,
            DecompressError::LookbehindOverrun => -6,
            DecompressError::EofNotFound => -7,
            DecompressError::InputNotConsumed => -8,
        }
    }
}

impl fmt::Display for DecompressError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            DecompressError::Error => "malformed LZO stream (length extension overflows)",
            DecompressError::InputOverrun => "LZO stream is truncated inside an instruction",
            DecompressError::OutputOverrun => "decompressed data does not fit in the output buffer",
            DecompressError::LookbehindOverrun => "LZO match reaches before the start of the output",
            DecompressError::EofNotFound => "LZO stream ends without an end marker",
            DecompressError::InputNotConsumed => "input left over after the LZO end marker",
        })
    }
}

impl core::error::Error for DecompressError {}

impl From<DecompressError> for pagecodec::DecompressError {
    /// Maps liblzo2's codes onto the family's page-level errors.
    fn from(e: DecompressError) -> Self {
        match e {
            DecompressError::InputOverrun | DecompressError::EofNotFound => {
                pagecodec::DecompressError::Truncated
            }
            DecompressError::OutputOverrun => pagecodec::DecompressError::WrongLength,
            DecompressError::InputNotConsumed => pagecodec::DecompressError::TrailingInput,
            DecompressError::LookbehindOverrun => {
                pagecodec::DecompressError::corrupt("match reaches before the start of the page")
            }
            DecompressError::Error => pagecodec::DecompressError::corrupt("length extension overflows"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    extern crate alloc;
    use alloc::string::ToString;

    #[test]
    fn codes_and_messages() {
        let all = [
            (DecompressError::Error, -1, "overflow"),
            (DecompressError::InputOverrun, -4, "truncated"),
            (DecompressError::OutputOverrun, -5, "does not fit"),
            (DecompressError::LookbehindOverrun, -6, "before the start"),
            (DecompressError::EofNotFound, -7, "end marker"),
            (DecompressError::InputNotConsumed, -8, "left over"),
        ];
        for (e, code, text) in all {
            assert_eq!(e.code(), code);
            assert!(e.to_string().contains(text), "{e}");
        }
    }

    #[test]
    fn page_errors() {
        use pagecodec::DecompressError as P;
        assert_eq!(P::from(DecompressError::InputOverrun), P::Truncated);
        assert_eq!(P::from(DecompressError::EofNotFound), P::Truncated);
        assert_eq!(P::from(DecompressError::OutputOverrun), P::WrongLength);
        assert_eq!(P::from(DecompressError::InputNotConsumed), P::TrailingInput);
        assert!(matches!(P::from(DecompressError::LookbehindOverrun), P::Corrupt { .. }));
        assert!(matches!(P::from(DecompressError::Error), P::Corrupt { .. }));
    }
}
