//! The synchronisation types of `ShardedStore`: the standard library's, or loom's when the
//! crate is built with `--cfg loom` to model-check every interleaving of its threads
//! (`tests/loom.rs`).

extern crate std;

#[cfg(not(loom))]
pub(crate) use alloc::sync::Arc;
#[cfg(not(loom))]
pub(crate) use core::sync::atomic::AtomicU64;
#[cfg(not(loom))]
pub(crate) use std::sync::{Mutex, MutexGuard};

#[cfg(loom)]
pub(crate) use loom::sync::atomic::AtomicU64;
#[cfg(loom)]
pub(crate) use loom::sync::{Arc, Mutex, MutexGuard};
