//! Compressed memory for a region of a process, through Linux's userfaultfd.
//!
//! A [`Region`] is `N` pages of anonymous memory of which at most a limit are resident; the
//! others live compressed in a [`pagestore::ShardedStore`], with any codec of the family.
//! A fault thread resolves every access to a page that is not in memory: from the store
//! (`UFFDIO_COPY`), or with zeros for a page never written (`UFFDIO_ZEROPAGE`); a fault that
//! continues a sequential scan brings in the pages after it too (readahead, up to
//! [`RegionConfig::readahead`] pages). Before a fault would take the resident count past the
//! limit, the same thread evicts the oldest resident pages (first in, first out, a batch of
//! [`RegionConfig::reclaim_batch`] at a time): it write-protects them
//! (`UFFDIO_WRITEPROTECT`), stores their bytes, and only then drops them (`MADV_DONTNEED`). A thread writing to it
//! meanwhile waits on a write-protect fault, which that thread handles after the eviction,
//! so no write is ever lost; a store that refuses the page (`Full`) leaves it resident.
//!
//! A fault the thread cannot resolve (a page the codec cannot decode again) ends the access
//! with `SIGBUS`, as the kernel ends an access to a swapped-out page it cannot read; a panic
//! in the fault thread (a codec's) aborts the process. Neither leaves a thread waiting.
//!
//! A child made by `fork` gets no copy of the region (`MADV_DONTFORK`): the fault thread
//! serves this process alone, and a copy without it would read every stored page as zeros.
//! In the child an access to the region faults (`SIGSEGV`); `exec` is unaffected.
//!
//! Linux only; elsewhere the crate is empty.
//!
//! ```no_run
//! # #[cfg(target_os = "linux")] {
//! use uswap::{Region, RegionConfig};
//!
//! // 64 pages, at most 8 in memory at once, the rest compressed with LZO-RLE.
//! let config = RegionConfig::new(8, Box::new(|| Box::new(lzokit::LzoRle::default())));
//! let mut region = Region::new(64, config)?;
//! for page in 0..64 {
//!     region.write(page * 4096, &[page as u8; 4096])?;
//! }
//! let mut back = [0u8; 4096];
//! region.read(5 * 4096, &mut back)?;
//! assert_eq!(back, [5u8; 4096]);
//! println!("{} swapped out", region.stats().swap_outs);
//! # }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

// The README's example runs as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

#[cfg(target_os = "linux")]
mod fault;
#[cfg(target_os = "linux")]
mod region;
#[cfg(target_os = "linux")]
mod sys;

#[cfg(target_os = "linux")]
pub use region::{Latency, Region, RegionConfig, RegionStats, UswapError};
