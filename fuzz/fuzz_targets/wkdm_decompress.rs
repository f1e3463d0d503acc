//! Arbitrary bytes through the WKdm decoder (4 KiB and 16 KiB pages, both dictionary
//! preloads, every available path: the SIMD decoders must match the scalar one): no panic,
//! and decoding into pages pre-filled with 0x00 and with 0xFF gives the
//! same result: on success the same page (no stale byte shows through), on error both pages
//! untouched (the decoder validates the whole stream before writing).
//!
//! The property lives in `pagecodec_fuzz::targets::wkdm_decompress`;
//! `tests/replay.rs` also runs it on the committed corpus.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| pagecodec_fuzz::targets::wkdm_decompress::run(data));
