//! Arbitrary input and budget through the LZO-RLE compressor: a correct round trip or
//! `Incompressible` exactly when the stream does not fit; see
//! `pagecodec_fuzz::check_lzo_round_trip`. Also whole pages through the `LzoRle` page codec.
//!
//! The property lives in `pagecodec_fuzz::targets::lzo_rle_roundtrip`;
//! `tests/replay.rs` also runs it on the committed corpus.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| pagecodec_fuzz::targets::lzo_rle_roundtrip::run(data));
