//! Arbitrary operation sequences on an xvmalloc `Pool` against a shadow model (the live
//! objects' handles and bytes, and the handles already freed): every object keeps its
//! bytes through allocs, frees, writes and compactions; stale, double-freed and forged
//! handles are refused and change nothing; failed allocations change nothing; the
//! statistics match the model and `validate()` finds the structures consistent.
//!
//! The property lives in `pagecodec_fuzz::targets::xvmalloc_ops`;
//! `tests/replay.rs` also runs it on the committed corpus.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| pagecodec_fuzz::targets::xvmalloc_ops::run(data));
