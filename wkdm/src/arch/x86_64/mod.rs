//! x86_64 paths.

pub(crate) mod avx2;
pub(crate) mod avx512;
pub(crate) mod sse41;
