//! Arbitrary pages, budgets and options through the WKdm compressor on every available
//! path (scalar, SSE4.1, AVX2): every path gives the same verdict and bytes; a stream fits
//! the budget and decodes to the page; zero / single-value reports are true; with early
//! abort off, no XNU limit and the worst-case budget the page is never refused; any XNU
//! limit (past any stream length: the same as none) is safe. Also the `PageCodec`
//! implementation (`check_page_codec`).
//!
//! The property lives in `pagecodec_fuzz::targets::wkdm_roundtrip`;
//! `tests/replay.rs` also runs it on the committed corpus.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| pagecodec_fuzz::targets::wkdm_roundtrip::run(data));
