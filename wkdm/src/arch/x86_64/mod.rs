//! x86_64 paths.

pub(crate) mod avx2;
// Compiled only where the compiler has AVX-512 intrinsics (see build.rs).
#[cfg(wkdm_avx512)]
#[clippy::msrv = "1.89"]
pub(crate) mod avx512;
pub(crate) mod sse41;
