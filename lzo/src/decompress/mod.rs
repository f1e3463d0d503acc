//! Decompression: [`decompress`] and the two decoders behind it.
//!
//! - `reference`: the checked decoder, safe code, every access bounds-checked.
//! - `fast` (not built with the `safe-decode` feature): executes the instructions it can
//!   prove in bounds with wide unchecked copies, and hands every other case (buffer ends,
//!   errors) to the reference decoder at an instruction boundary, so both give identical
//!   results (bytes written and error) on every input, which the tests check.
//!
//! Dependencies run one way: `decompress` uses `fast`, which uses `reference`.

#[cfg(not(feature = "safe-decode"))]
mod fast;
mod reference;

#[cfg(test)]
pub(crate) use reference::{Instruction, first_literals, read_instruction};

use crate::StreamError;

/// The decoder loops [`decompress_on`] can run, for tests and fuzzing that reach each of
/// them on any CPU that has it. Not part of the stable API.
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DecodeLoop {
    /// The checked decoder alone (what the `safe-decode` feature builds).
    Reference,
    /// The fast decoder's loop without BMI2.
    Baseline,
    /// The fast decoder's loop built for BMI2 (x86-64 CPUs with BMI2).
    Bmi2,
}

impl DecodeLoop {
    /// Every loop, in order.
    pub const ALL: [DecodeLoop; 3] = [DecodeLoop::Reference, DecodeLoop::Baseline, DecodeLoop::Bmi2];
}

/// [`decompress`] on the loop `which`; `None` where this build or CPU lacks it (the fast
/// loops under `safe-decode`, BMI2 without BMI2). For tests and fuzzing; not part of the
/// stable API.
#[doc(hidden)]
pub fn decompress_on(which: DecodeLoop, src: &[u8], dst: &mut [u8]) -> Option<Result<usize, StreamError>> {
    match which {
        DecodeLoop::Reference => Some(reference::decompress_reference(src, dst)),
        #[cfg(not(feature = "safe-decode"))]
        other => fast::decompress_on(other, src, dst),
        #[cfg(feature = "safe-decode")]
        _ => None,
    }
}

/// Decompresses an LZO1X stream (plain or LZO-RLE) into `dst`, returning the number of
/// bytes written.
///
/// `dst` may have any size: it must only be large enough for the decompressed data
/// (otherwise [`StreamError::OutputOverrun`]). The stream must end with the end marker
/// and nothing after it. Streams that start with the bitstream-version header (`11 vv`, as
/// LZO-RLE writes `11 01`) are recognised when at least 5 bytes long, as the Linux kernel
/// does; any non-zero version enables zero-run tokens.
///
/// No input makes it panic, read or write out of bounds or loop forever. Bytes of `dst`
/// past the returned length are unspecified (the decoder may use them as scratch space).
///
/// ```
/// use lzokit::{decompress, KernelCompressor, StreamError};
///
/// let data = b"abcabcabcabcabcabcabcabcabcabcabcabc and more text, more text";
/// let mut stream = [0u8; 128];
/// let n = KernelCompressor::new().compress(data, &mut stream)?;
/// let mut out = [0u8; 100]; // larger than needed is fine
/// let len = decompress(&stream[..n], &mut out)?;
/// assert_eq!(&out[..len], data);
/// // Too small an output is an error, never a partial success.
/// assert_eq!(decompress(&stream[..n], &mut out[..10]), Err(StreamError::OutputOverrun));
/// # Ok::<(), Box<dyn core::error::Error>>(())
/// ```
///
/// # Errors
///
/// A [`StreamError`] naming what is wrong, as liblzo2's `lzo1x_decompress_safe` would.
pub fn decompress(src: &[u8], dst: &mut [u8]) -> Result<usize, StreamError> {
    #[cfg(not(feature = "safe-decode"))]
    return fast::decompress_fast(src, dst);
    #[cfg(feature = "safe-decode")]
    return reference::decompress_reference(src, dst);
}
