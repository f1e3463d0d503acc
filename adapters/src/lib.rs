//! [`PageCodec`](pagecodec::PageCodec) adapters over well-kept general-purpose
//! compressors, so a page store can use what most zram users pick:
//!
//! - [`Lz4`]: LZ4 block format from [`lz4_flex`] (pure Rust, `no_std` + `alloc`), the
//!   block format zram's `lz4` writes;
//! - [`Zstd`] (feature `zstd`, needs `std`): zstd frames from the C library through the
//!   `zstd` crate, level 3 by default.
//!
//! Both keep their working memory in the value (a hash table, compression contexts), so a
//! call allocates nothing. `pagecodec` itself stays dependency-free: the adapters live here.
//!
//! ```
//! use pagecodec::{Page, PageCodec, PAGE_SIZE};
//! use pagecodec_adapters::Lz4;
//!
//! let mut codec = Lz4::new();
//! let page = Page::from([b'z'; PAGE_SIZE]);
//! let mut out = vec![0u8; codec.max_compressed_len()];
//! let n = codec.compress(&page, &mut out)?;
//! assert!(n < 64);
//! let mut back = Page::zeroed();
//! codec.decompress(&out[..n], &mut back)?;
//! assert_eq!(back, page);
//! # Ok::<(), Box<dyn core::error::Error>>(())
//! ```
#![no_std]
#![cfg_attr(docsrs, feature(doc_cfg))]

extern crate alloc;
#[cfg(feature = "std")]
extern crate std;

mod lz4;
#[cfg(feature = "zstd")]
#[cfg_attr(docsrs, doc(cfg(feature = "zstd")))]
mod zstd;

pub use lz4::Lz4;
#[cfg(feature = "zstd")]
pub use zstd::{Zstd, ZstdError};

/// The README's example runs as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
