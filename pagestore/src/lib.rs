//! A compressed page store — zram as a library.
//!
//! [`PageStore`] takes 4 KiB pages keyed by `u64`, keeps them compressed in memory and
//! gives them back on demand, with zram's policies:
//!
//! - **same-filled pages** (every u64 word equal, zero included) are kept as the value
//!   alone: no compression, no allocation;
//! - **pluggable codecs**: any [`PageCodec`](pagecodec::PageCodec), chosen at compile time
//!   or at run time (`Box<dyn PageCodec>`), or a [`Hybrid`] "try A, fall back to B" whose
//!   choice is recorded per entry;
//! - **huge pages**: a page whose stream would exceed the threshold (default 3/4 page) is
//!   stored raw; the codec gets that budget, so it gives up early;
//! - **memory limit**: past it `store` returns [`StoreError::Full`] and nothing stored
//!   changes;
//! - **beyond RAM**: [`PageStore::mark_idle`], [`PageStore::recompress`] with up to three
//!   secondary codecs, and [`PageStore::writeback`] to a [`Backing`] store (a file under
//!   `std`), never losing a page to a failing one;
//! - **statistics**: zram's `mm_stat` ([`MmStat`]) and the per-codec statistics table of the 2001 Linux compressed-cache paper
//!   ([`CodecStats`]: sizes, TSC timings with medians, ratio, incompressible pages).
//!
//! Streams live in an [`xvmalloc::Pool`]; [`PageStore::compact`] passes through to it.
//! [`ShardedStore`] (feature `std`) is the thread-safe variant.
//!
//! ```
//! use pagecodec::{Page, PageCodec, Raw};
//! use pagestore::{Hybrid, PageStore, StoreConfig};
//!
//! // Any codec, picked at run time; here the identity codec as both halves of a hybrid.
//! let codec: Box<dyn PageCodec> = Box::new(Raw);
//! let mut store = PageStore::with_config(Hybrid::new(codec, Raw, 2048), StoreConfig::default());
//! store.store(1, &Page::zeroed())?;
//! let mut page = Page::filled(9);
//! store.load(1, &mut page)?;
//! assert_eq!(page, Page::zeroed());
//! let mm = store.stats().mm;
//! assert_eq!((mm.orig_data_size, mm.same_pages, mm.mem_used_total), (4096, 1, 0));
//! # Ok::<(), Box<dyn core::error::Error>>(())
//! ```
#![no_std]
#![cfg_attr(docsrs, feature(doc_cfg))]

// The README's example runs as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

extern crate alloc;

mod backing;
mod codec;
mod error;
#[cfg(all(feature = "std", unix))]
mod file;
mod histogram;
mod shelf;
mod stats;
mod store;
mod table;
mod tier;
mod timing;

#[cfg(feature = "std")]
mod sharded;
#[cfg(feature = "std")]
mod sync;

pub use backing::{Backing, BackingError, FaultyBacking, MemBacking, ReadFault, SLOT_SIZE, WriteFault};
pub use codec::{EntryCodec, Hybrid, SendCodec};
pub use error::{LoadError, StoreError};
#[cfg(all(feature = "std", unix))]
pub use file::FileBacking;
#[cfg(feature = "std")]
pub use sharded::{CodecFactory, ShardedStore};
pub use stats::{BdStat, CodecStats, MmStat, SlotStats, StoreStats, Summary, TierStats};
pub use store::{Clock, PageStore, StoreConfig};
pub use tier::{BackingConfig, RecompressReport, Selection, SendBacking, TierError, WritebackReport};
pub use timing::TimeUnit;
pub use xvmalloc::{CompactReport, HeapSource, PageSource, PoolStats};
