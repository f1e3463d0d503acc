//! The common ground of the page-compression crate family.
//!
//! Compressed-memory systems (zram, zswap, compcache, the macOS memory compressor) swap
//! page compressors the way zram swaps algorithms. This crate is the small contract they
//! share:
//!
//! - [`Page`]: one 4096-byte page, aligned to 64 bytes, with byte and word views;
//! - [`PageCodec`]: compress a page into a caller-sized buffer (the buffer length *is* the
//!   budget) and decompress a stream back into a whole page, with no allocation;
//! - [`CompressError`] and [`DecompressError`]: typed, `#[non_exhaustive]` errors;
//! - [`Raw`]: the identity codec, the `memcpy` floor for benchmarks;
//! - [`same_filled`]: zram's same-filled page detection;
//! - `testing` (feature `testing`): page generators for every page class and
//!   `testing::check_codec`, the conformance suite every codec runs.
//!
//! ```
//! use pagecodec::{Page, PageCodec, Raw, PAGE_SIZE};
//!
//! let mut codec = Raw;
//! let page = Page::from([7u8; PAGE_SIZE]);
//! let mut out = [0u8; PAGE_SIZE];
//! let n = codec.compress(&page, &mut out)?;
//! let mut back = Page::zeroed();
//! codec.decompress(&out[..n], &mut back)?;
//! assert_eq!(back, page);
//! # Ok::<(), Box<dyn core::error::Error>>(())
//! ```
#![no_std]
#![cfg_attr(docsrs, feature(doc_cfg))]

// The README's example runs as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

#[cfg(feature = "alloc")]
extern crate alloc;
#[cfg(feature = "std")]
extern crate std;

mod codec;
// Public only so that the family's codec crates share one CPU-feature rule; not part of the
// API users are meant to call, hence hidden.
#[cfg(target_arch = "x86_64")]
#[doc(hidden)]
pub mod cpu;
mod error;
mod page;
mod raw;
mod same;

#[cfg(feature = "testing")]
pub mod testing;

pub use codec::PageCodec;
pub use error::{CompressError, DecompressError};
pub use page::{PAGE_SIZE, PAGE_WORDS, Page};
pub use raw::Raw;
pub use same::same_filled;
