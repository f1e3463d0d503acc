//! Arbitrary bytes and an arbitrary output size through the LZO decoder: no panic, and
//! decoding into buffers pre-filled with 0x00 and with 0xFF gives the same result (same
//! return value, same bytes in the written prefix). A success of `n` bytes is exact: the
//! stream decodes identically into a buffer of exactly `n` bytes and is `OutputOverrun` in
//! one of `n - 1`. Every decoder loop this CPU has (the reference decoder, the fast loop's
//! baseline and BMI2 builds) gives the same verdict and bytes as `decompress`.

use lzokit::{DecodeLoop, StreamError, decompress, decompress_on};

/// One input, as the fuzz target runs it.
pub fn run(data: &[u8]) {
    if data.len() < 2 {
        return;
    }
    let capacity = usize::from(u16::from_le_bytes([data[0], data[1]]));
    let stream = &data[2..];
    let mut zeros = vec![0x00u8; capacity];
    let mut ones = vec![0xFFu8; capacity];
    let a = decompress(stream, &mut zeros);
    let b = decompress(stream, &mut ones);
    assert_eq!(a, b, "the destination's old contents changed the verdict");
    for which in DecodeLoop::ALL {
        let mut other = vec![0x5Au8; capacity];
        if let Some(verdict) = decompress_on(which, stream, &mut other) {
            assert_eq!(verdict, a, "{which:?} and decompress disagree on the verdict");
            if let Ok(n) = verdict {
                assert!(other[..n] == zeros[..n], "{which:?} and decompress decode different bytes");
            }
        }
    }
    if let Ok(n) = a {
        assert!(n <= capacity);
        assert!(zeros[..n] == ones[..n], "stale destination bytes are visible in the written prefix");
        let mut exact = vec![0x77u8; n];
        assert_eq!(decompress(stream, &mut exact), Ok(n), "an exact-size buffer changed the verdict");
        assert!(exact == zeros[..n], "an exact-size buffer changed the bytes");
        if n > 0 {
            assert_eq!(
                decompress(stream, &mut exact[..n - 1]),
                Err(StreamError::OutputOverrun),
                "a buffer one byte short must be OutputOverrun"
            );
        }
    }
}
