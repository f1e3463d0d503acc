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
//!
//! The property lives in `pagecodec_fuzz::targets::lzo_vs_c`;
//! `tests/replay.rs` also runs it on the committed corpus.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| pagecodec_fuzz::targets::lzo_vs_c::run(data));
