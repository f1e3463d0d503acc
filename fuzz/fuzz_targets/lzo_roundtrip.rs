//! Arbitrary input and budget through the plain LZO1X-1 compressor: a correct round trip
//! (also through C liblzo2) or `Incompressible` exactly when the stream does not fit; see
//! `pagecodec_fuzz::check_lzo_round_trip`. Also whole pages through the `Lzo1x` page codec,
//! both a fresh one and one kept across inputs: its match table survives calls (generation
//! tags instead of a clear per page), so a kept codec must write exactly a fresh one's
//! stream. And whole pages through the fast level, `Lzo1xFast`, whose streams C liblzo2
//! must decode too.
//!
//! The property lives in `pagecodec_fuzz::targets::lzo_roundtrip`;
//! `tests/replay.rs` also runs it on the committed corpus.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| pagecodec_fuzz::targets::lzo_roundtrip::run(data));
