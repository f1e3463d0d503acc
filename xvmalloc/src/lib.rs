//! An O(1) sub-page allocator for compressed pages, in the spirit of compcache's xvmalloc,
//! with stable handles and compaction.
//!
//! Compressed pages are objects of 30..4096 bytes. [`Pool`] packs them into chunks taken
//! from a [`PageSource`] with TLSF-style segregated free lists:
//!
//! - **O(1)**: free blocks sit in exact 8-byte size classes found through a two-level
//!   bitmap with find-first-set (a best fit); `free` merges both neighbours through
//!   boundary information in the 4-byte block header;
//! - **dense**: chunks are 16 KiB by default (4 pages), so 2.5 KiB objects pack without
//!   the page-tail waste of single-page carving; a 4 KiB raw page fits too;
//! - **gives memory back**: a chunk that becomes wholly free returns to the source at once,
//!   and [`Pool::compact`] moves objects out of sparse chunks;
//! - **safe handles**: a [`Handle`] (8 bytes, `Copy`) indexes a slot table, so it survives
//!   compaction; generations make stale or forged handles an error, never undefined
//!   behaviour. The only `unsafe` code is two 4-byte header accesses that stay in their
//!   chunk by masking, whatever the pool's state.
//!
//! ```
//! use xvmalloc::{HeapSource, Pool};
//!
//! let mut pool = Pool::new(HeapSource::new());
//! let a = pool.alloc_copy(&[1; 2500])?;
//! let b = pool.alloc_copy(&[2; 700])?;
//! pool.free(a)?;
//! assert_eq!(pool.free(a), Err(xvmalloc::FreeError::Stale), "double free is refused");
//! pool.compact();
//! assert_eq!(pool.get(b)?, &[2; 700][..]);
//! let stats = pool.stats();
//! assert_eq!((stats.objects, stats.payload_bytes), (1, 700));
//! # Ok::<(), Box<dyn core::error::Error>>(())
//! ```
//!
//! Without the `alloc` feature only the [`PageSource`] trait, [`Handle`] and the error
//! types are available: the pool's tables live on the heap.
#![no_std]
#![cfg_attr(docsrs, feature(doc_cfg))]

// The README's example runs as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

#[cfg(feature = "alloc")]
extern crate alloc;

// The only `unsafe` of the crate: unchecked 4-byte header and link accesses, kept inside the
// chunk by masking (see `block::read_u32`).
#[cfg(feature = "alloc")]
#[allow(unsafe_code)]
mod block;
#[cfg(feature = "alloc")]
mod classes;
mod error;
mod handle;
mod source;
mod stats;

#[cfg(feature = "alloc")]
mod check;
#[cfg(feature = "alloc")]
mod compact;
#[cfg(feature = "alloc")]
mod pool;

pub use error::{AllocError, ConfigError, FreeError, HandleError};
pub use handle::{Addr, Handle};
#[cfg(feature = "alloc")]
pub use pool::{DEFAULT_CHUNK_SIZE, Pool};
#[cfg(feature = "alloc")]
pub use source::HeapSource;
pub use source::PageSource;
pub use stats::{CompactReport, PoolStats};

/// The largest object a pool accepts: a whole page, so incompressible pages can be kept raw.
/// Pools with 4 KiB chunks accept at most 4092 bytes.
pub const MAX_ALLOC: usize = 4096;
