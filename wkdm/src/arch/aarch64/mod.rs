//! aarch64 paths.

pub(crate) mod neon;
