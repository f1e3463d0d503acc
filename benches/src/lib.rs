//! `pagebench`: capture real memory pages and compare page compressors on them.
//!
//! The library half of the `pagebench` tool, shared by the binary, the criterion benches
//! and the tests:
//!
//! - [`timing`]: fenced TSC reads, calibration, overhead, statistics;
//! - [`corpus`]: flat page files and the page streams of the 2001 compressed-cache paper's workloads (mmap001, fillmem);
//! - [`capture`]: reading a process's resident anonymous pages (Linux `/proc`);
//! - [`peers`]: the codecs users would pick instead of ours, behind `PageCodec`;
//! - [`codecs`]: every codec by name;
//! - [`measure`]: the interleaved, verified measuring loop;
//! - [`report`]: the statistics table in the 2001 paper's style, JSON and the SVG plot;
//! - [`alloc`]: the allocator benchmark (xvmalloc and rlsf on real compressed sizes);
//! - [`simulate`]: LRU replay of the 2001 compressed-cache paper's workloads over a `pagestore`;
//! - [`storebench`]: real pages through `pagestore` (ratio, memory used, store+load ticks);
//! - [`app`]: the commands `main.rs` dispatches to.
//!
//! ```no_run
//! use pagebench::{codecs, corpus, measure, report, timing::Timer};
//!
//! let timer = Timer::new();
//! let corpus = corpus::fillmem(1);
//! let mut all = codecs::all();
//! let order = measure::Order::BackToBack;
//! let measured = measure::run_corpus(&timer, &corpus, &mut all, 3, order, &mut measure::Progress::new(false))?;
//! println!("{}", report::table(&report::summarize(&timer, &measured.codecs, 1)));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

// The workspace README's Rust examples run as doctests of this crate.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
struct WorkspaceReadmeDoctests;

pub mod alloc;
pub mod app;
pub mod capture;
pub mod codecs;
pub mod corpus;
#[cfg(target_os = "linux")]
pub mod kswap;
pub mod liblzo2_ffi;
pub mod measure;
pub mod peers;
pub mod report;
pub mod simulate;
pub mod storebench;
#[cfg(target_os = "linux")]
pub mod swap;
pub mod tiers;
pub mod timing;
pub mod zram;
