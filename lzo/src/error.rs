//! The decompressor's typed errors, one per liblzo2 error code.

use core::fmt;

/// Why a stream could not be decompressed. The variants mirror liblzo2's error codes
/// ([`code`](StreamError::code) gives the number), so code ported from C keeps its
/// meaning.
///
/// ```
/// use lzokit::{decompress, StreamError};
///
/// let mut out = [0u8; 16];
/// // `11 00` is an end marker missing its last byte.
/// assert_eq!(decompress(&[0x11, 0x00], &mut out), Err(StreamError::InputOverrun));
/// assert_eq!(StreamError::InputOverrun.code(), -4);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum StreamError {
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

impl StreamError {
    /// liblzo2's numeric code for this error (`LZO_E_*`, always negative).
    pub const fn code(self) -> i32 {
        match self {
            StreamError::Error => -1,
            StreamError::InputOverrun => -4,
            StreamError::OutputOverrun => -5,
            StreamError::LookbehindOverrun => -6,
            StreamError::EofNotFound => -7,
            StreamError::InputNotConsumed => -8,
        }
    }
}

impl fmt::Display for StreamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            StreamError::Error => "malformed LZO stream (length extension overflows)",
            StreamError::InputOverrun => "LZO stream is truncated inside an instruction",
            StreamError::OutputOverrun => "decompressed data does not fit in the output buffer",
            StreamError::LookbehindOverrun => "LZO match reaches before the start of the output",
            StreamError::EofNotFound => "LZO stream ends without an end marker",
            StreamError::InputNotConsumed => "input left over after the LZO end marker",
        })
    }
}

impl core::error::Error for StreamError {}

impl From<StreamError> for pagecodec::DecompressError {
    /// Maps liblzo2's codes onto the family's page-level errors.
    fn from(e: StreamError) -> Self {
        match e {
            StreamError::InputOverrun | StreamError::EofNotFound => pagecodec::DecompressError::Truncated,
            StreamError::OutputOverrun => pagecodec::DecompressError::WrongLength,
            StreamError::InputNotConsumed => pagecodec::DecompressError::TrailingInput,
            StreamError::LookbehindOverrun => {
                pagecodec::DecompressError::corrupt("match reaches before the start of the page")
            }
            StreamError::Error => pagecodec::DecompressError::corrupt("length extension overflows"),
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
            (StreamError::Error, -1, "overflow"),
            (StreamError::InputOverrun, -4, "truncated"),
            (StreamError::OutputOverrun, -5, "does not fit"),
            (StreamError::LookbehindOverrun, -6, "before the start"),
            (StreamError::EofNotFound, -7, "end marker"),
            (StreamError::InputNotConsumed, -8, "left over"),
        ];
        for (e, code, text) in all {
            assert_eq!(e.code(), code);
            assert!(e.to_string().contains(text), "{e}");
        }
    }

    #[test]
    fn page_errors() {
        use pagecodec::DecompressError as P;
        assert_eq!(P::from(StreamError::InputOverrun), P::Truncated);
        assert_eq!(P::from(StreamError::EofNotFound), P::Truncated);
        assert_eq!(P::from(StreamError::OutputOverrun), P::WrongLength);
        assert_eq!(P::from(StreamError::InputNotConsumed), P::TrailingInput);
        assert!(matches!(P::from(StreamError::LookbehindOverrun), P::Corrupt { .. }));
        assert!(matches!(P::from(StreamError::Error), P::Corrupt { .. }));
    }
}
