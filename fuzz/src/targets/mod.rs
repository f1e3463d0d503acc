//! Every fuzz target's property as a function of the raw input bytes: the targets in
//! `fuzz_targets/` call these, and `tests/replay.rs` runs them on the committed corpus.

pub mod lzo_decompress;
pub mod lzo_rle_roundtrip;
pub mod lzo_roundtrip;
pub mod lzo_vs_c;
pub mod pagestore_ops;
pub mod pagestore_sources;
pub mod wkdm_decompress;
pub mod wkdm_roundtrip;
pub mod xvmalloc_ops;
