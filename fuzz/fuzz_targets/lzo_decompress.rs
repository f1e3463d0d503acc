//! Arbitrary bytes and an arbitrary output size through the LZO decoder: no panic, and
//! decoding into buffers pre-filled with 0x00 and with 0xFF gives the same result (same
//! return value, same bytes in the written prefix). A success of `n` bytes is exact: the
//! stream decodes identically into a buffer of exactly `n` bytes and is `OutputOverrun` in
//! one of `n - 1`.
//!
//! The property lives in `pagecodec_fuzz::targets::lzo_decompress`;
//! `tests/replay.rs` also runs it on the committed corpus.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| pagecodec_fuzz::targets::lzo_decompress::run(data));
