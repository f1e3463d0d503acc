//! Differential: arbitrary bytes and output size through our LZO decoder and C liblzo2's
//! `lzo1x_decompress_safe` (miniLZO 2.10): the same verdict (both accept or both reject)
//! and, on success, the same bytes.
//!
//! The error codes themselves are compared only with `LZO_VS_C_EXACT_CODES=1` in the
//! environment: liblzo2 tests for 3 more input bytes ahead of each instruction and for the
//! input before the output, so a truncated stream that also overflows a small output is
//! `InputOverrun` there and `OutputOverrun` here (SPEC.md, `lzokit` error codes).
//!
//! Streams of 5 or more bytes starting with `0x11` are skipped: the Linux kernel (and so
//! our decoder) reads them as an LZO-RLE bitstream-version header, which liblzo2 does not
//! know.

use crate::{c_decompress_safe, lzo_code};
use lzokit::decompress;

fn exact_codes() -> bool {
    static EXACT: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *EXACT.get_or_init(|| std::env::var_os("LZO_VS_C_EXACT_CODES").is_some_and(|v| v == "1"))
}

/// One input, as the fuzz target runs it.
pub fn run(data: &[u8]) {
    if data.len() < 2 {
        return;
    }
    let capacity = usize::from(u16::from_le_bytes([data[0], data[1]]));
    let stream = &data[2..];
    if stream.len() >= 5 && stream[0] == 0x11 {
        return;
    }
    let mut ours = vec![0u8; capacity];
    let result = decompress(stream, &mut ours);
    let (c_code, c_out) = c_decompress_safe(stream, capacity);
    assert_eq!(result.is_ok(), c_code == 0, "ours {result:?}, C code {c_code}");
    if exact_codes() {
        assert_eq!(lzo_code(&result), c_code, "ours {result:?}, C code {c_code}");
    }
    if let Ok(n) = result {
        assert_eq!(n, c_out.len(), "decoded lengths differ");
        assert!(ours[..n] == c_out[..], "decoded bytes differ");
    }
}
