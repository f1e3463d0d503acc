//! Typed errors.

use core::fmt;

use pagecodec::DecompressError;

use crate::BackingError;

/// Why [`store`](crate::PageStore::store) failed. Every page stored before, including an
/// older page under the same key, is left intact.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum StoreError {
    /// Storing would take the memory in use past the configured limit
    /// ([`StoreConfig::mem_limit`](crate::StoreConfig::mem_limit)).
    Full,
    /// The allocator's page source had no memory.
    OutOfMemory,
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreError::Full => f.write_str("page store is full (memory limit reached)"),
            StoreError::OutOfMemory => f.write_str("page source has no memory left"),
        }
    }
}

impl core::error::Error for StoreError {}

/// Why [`load`](crate::PageStore::load) failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum LoadError {
    /// No page is stored under the key.
    NotFound,
    /// The stored stream did not decompress (a codec bug or memory corruption); the
    /// destination page's contents are unspecified.
    Corrupt(DecompressError),
    /// The page was written back and could not be read back intact (an I/O error, or a
    /// slot that fails its checksum); no other data was returned. The page stays on the
    /// backing store: a later load may succeed.
    Backing(BackingError),
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LoadError::NotFound => f.write_str("no page stored under this key"),
            LoadError::Corrupt(e) => write!(f, "stored page does not decompress: {e}"),
            LoadError::Backing(e) => write!(f, "written-back page cannot be read: {e}"),
        }
    }
}

impl core::error::Error for LoadError {
    fn source(&self) -> Option<&(dyn core::error::Error + 'static)> {
        match self {
            LoadError::Corrupt(e) => Some(e),
            LoadError::Backing(e) => Some(e),
            LoadError::NotFound => None,
        }
    }
}
