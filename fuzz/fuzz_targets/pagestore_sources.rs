//! The page store over page sources that misbehave within their contract (no memory, a
//! chunk of half or twice the size asked, a panic), on `PageStore` and on a `ShardedStore`
//! driven by two threads: every page last stored loads back, a failed or panicked store
//! leaves the previous page loadable, and the memory limit is never exceeded.
//!
//! The property lives in `pagecodec_fuzz::targets::pagestore_sources`;
//! `tests/replay.rs` also runs it on the committed corpus.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| pagecodec_fuzz::targets::pagestore_sources::run(data));
