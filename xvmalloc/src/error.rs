//! Typed errors.

use core::fmt;

/// Why [`Pool::alloc`](crate::Pool::alloc) failed. Nothing already stored is affected.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum AllocError {
    /// The size is 0 or above the pool's [`max_alloc`](crate::Pool::max_alloc).
    InvalidSize {
        /// The requested size.
        len: usize,
        /// The largest size the pool accepts.
        max: usize,
    },
    /// No free block fits and the [`PageSource`](crate::PageSource) gave no chunk.
    OutOfMemory,
    /// The pool's 32-bit address space (chunk count times chunk size up to 32 GiB) or
    /// handle table (2^32 - 1 objects) is exhausted.
    AddressSpaceExhausted,
}

impl fmt::Display for AllocError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AllocError::InvalidSize { len, max } => write!(f, "invalid allocation size {len} (1..={max})"),
            AllocError::OutOfMemory => f.write_str("page source has no memory left"),
            AllocError::AddressSpaceExhausted => f.write_str("pool address space exhausted"),
        }
    }
}

impl core::error::Error for AllocError {}

/// Why a handle was refused by [`free`](crate::Pool::free), [`get`](crate::Pool::get),
/// [`get_mut`](crate::Pool::get_mut) or [`len`](crate::Pool::len).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum HandleError {
    /// The handle's object was freed (double free, use after free), or the handle was
    /// forged with a generation that does not match.
    Stale,
    /// The handle names no slot this pool ever handed out.
    Unknown,
}

/// The error of [`Pool::free`](crate::Pool::free): the same as for any handle use.
pub type FreeError = HandleError;

impl fmt::Display for HandleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HandleError::Stale => f.write_str("stale handle: the object was freed"),
            HandleError::Unknown => f.write_str("unknown handle: not issued by this pool"),
        }
    }
}

impl core::error::Error for HandleError {}

/// Why [`Pool::with_chunk_size`](crate::Pool::with_chunk_size) refused a chunk size.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ConfigError {
    /// The chunk size must be a power of two from 4 KiB to 64 KiB.
    InvalidChunkSize(usize),
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigError::InvalidChunkSize(n) => {
                write!(f, "chunk size {n} is not a power of two from 4096 to 65536")
            }
        }
    }
}

impl core::error::Error for ConfigError {}
