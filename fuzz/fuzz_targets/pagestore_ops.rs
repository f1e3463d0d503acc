//! Arbitrary operation sequences on a `PageStore` (each codec, random policies, memory
//! limit and source limit) against a shadow map of the pages stored: every load gives the
//! page last stored under its key, failed stores change nothing, removes and contains
//! agree with the model, compaction keeps every page, and the statistics and the
//! allocator's structures stay consistent.
//!
//! The property lives in `pagecodec_fuzz::targets::pagestore_ops`;
//! `tests/replay.rs` also runs it on the committed corpus.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| pagecodec_fuzz::targets::pagestore_ops::run(data));
