//! The thread-safe store (feature `std`).

extern crate std;

use alloc::boxed::Box;
use alloc::vec::Vec;

use crate::sync::{Arc, AtomicU64, Mutex, MutexGuard};

use pagecodec::{PAGE_SIZE, Page};
use xvmalloc::{CompactReport, HeapSource, PageSource};

use crate::shelf::{Budget, Shelf};
use crate::stats::OpRecorder;
use crate::store::{prepare, restore};
use crate::{EntryCodec, LoadError, MmStat, StoreConfig, StoreError, StoreStats};

/// A boxed codec that can move between threads.
pub type SendCodec = Box<dyn EntryCodec + Send>;

/// Makes a codec (with its own working memory) for a thread that needs one.
pub type CodecFactory = Box<dyn Fn() -> SendCodec + Send + Sync>;

struct Shard<S: PageSource> {
    shelf: Shelf<S>,
    ops: OpRecorder,
}

/// A `Sync` page store: keys are spread over shards, each with its own lock, allocator
/// pool and counters; codecs (and their working memory) are kept in a small free list and
/// handed one per concurrently storing or loading thread, so pages compress outside any
/// shard lock.
///
/// The memory limit is shared by all shards (an atomic counter of held bytes).
///
/// ```
/// use std::sync::Arc;
/// use pagecodec::{Page, Raw};
/// use pagestore::{ShardedStore, StoreConfig};
///
/// let store = Arc::new(ShardedStore::new(8, Box::new(|| Box::new(Raw)), StoreConfig::default()));
/// let threads: Vec<_> = (0..4u64)
///     .map(|t| {
///         let store = Arc::clone(&store);
///         std::thread::spawn(move || {
///             let mut page = Page::zeroed();
///             page.as_bytes_mut()[..8].copy_from_slice(&t.to_le_bytes());
///             store.store(t, &page).unwrap();
///         })
///     })
///     .collect();
/// for t in threads {
///     t.join().unwrap();
/// }
/// let mut page = Page::zeroed();
/// store.load(3, &mut page)?;
/// assert_eq!(page.as_bytes()[0], 3);
/// assert_eq!(store.len(), 4);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct ShardedStore<S: PageSource = HeapSource> {
    shards: Box<[Mutex<Shard<S>>]>,
    shift: u32,
    codecs: Mutex<Vec<SendCodec>>,
    factory: CodecFactory,
    name: &'static str,
    config: StoreConfig,
}

impl ShardedStore<HeapSource> {
    /// A store of `shards` shards (rounded up to a power of two, at least 1) on the heap.
    pub fn new(shards: usize, factory: CodecFactory, config: StoreConfig) -> Self {
        Self::with_sources(shards, factory, HeapSource::new, config)
    }
}

/// Locks a mutex, going on after a panic in another thread (the data stays consistent:
/// every operation completes its changes before it can panic).
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl<S: PageSource> ShardedStore<S> {
    /// A store whose shards take memory from sources made by `source`.
    pub fn with_sources(
        shards: usize,
        factory: CodecFactory,
        mut source: impl FnMut() -> S,
        config: StoreConfig,
    ) -> Self {
        let shards = shards.clamp(1, 1 << 16).next_power_of_two();
        let held = Arc::new(AtomicU64::new(0));
        let shard_list: Vec<_> = (0..shards)
            .map(|_| {
                let budget = match config.mem_limit {
                    Some(limit) => Budget::Shared { limit, held: Arc::clone(&held) },
                    None => Budget::Unlimited,
                };
                Mutex::new(Shard { shelf: Shelf::new(source(), budget, 0), ops: OpRecorder::new() })
            })
            .collect();
        let first = factory();
        let name = first.name();
        ShardedStore {
            shards: shard_list.into_boxed_slice(),
            shift: 64 - shards.trailing_zeros(),
            codecs: Mutex::new(alloc::vec![first]),
            factory,
            name,
            config,
        }
    }

    fn shard(&self, key: u64) -> &Mutex<Shard<S>> {
        // Fibonacci hashing spreads sequential keys over the shards.
        let index = key.wrapping_mul(0x9E37_79B9_7F4A_7C15).checked_shr(self.shift).unwrap_or(0);
        &self.shards[index as usize]
    }

    fn with_codec<R>(&self, f: impl FnOnce(&mut dyn EntryCodec) -> R) -> R {
        let mut codec = lock(&self.codecs).pop().unwrap_or_else(|| (self.factory)());
        let result = f(&mut *codec);
        lock(&self.codecs).push(codec);
        result
    }

    /// Stores `page` under `key`, replacing any older page. Compression runs outside the
    /// shard lock.
    ///
    /// # Errors
    ///
    /// As [`PageStore::store`](crate::PageStore::store): nothing stored is disturbed.
    pub fn store(&self, key: u64, page: &Page) -> Result<(), StoreError> {
        let mut scratch = [0u8; PAGE_SIZE];
        self.with_codec(|codec| {
            let (prepared, outcome) = prepare(codec, &self.config, page, &mut scratch);
            let mut shard = lock(self.shard(key));
            shard.ops.record_store(outcome);
            shard.shelf.insert(key, prepared)
        })
    }

    /// Loads the page under `key` into `page` (decompressing under the shard lock).
    ///
    /// # Errors
    ///
    /// [`LoadError::NotFound`] or [`LoadError::Corrupt`].
    pub fn load(&self, key: u64, page: &mut Page) -> Result<(), LoadError> {
        self.with_codec(|codec| {
            let mut guard = lock(self.shard(key));
            let shard = &mut *guard;
            let stored = shard.shelf.get(key).ok_or(LoadError::NotFound)?;
            if let Some(t) = restore(codec, self.config.timing, stored, page)? {
                shard.ops.record_decompress(t);
            }
            Ok(())
        })
    }

    /// Removes the page under `key`; returns whether there was one.
    pub fn remove(&self, key: u64) -> bool {
        lock(self.shard(key)).shelf.remove(key)
    }

    /// Whether a page is stored under `key`.
    pub fn contains(&self, key: u64) -> bool {
        lock(self.shard(key)).shelf.contains(key)
    }

    /// Pages stored (summed shard by shard, so approximate while others write).
    pub fn len(&self) -> usize {
        self.shards.iter().map(|s| lock(s).shelf.len()).sum()
    }

    /// Whether no page is stored.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Compacts every shard's allocator, one shard at a time.
    pub fn compact(&self) -> CompactReport {
        let mut total = CompactReport::default();
        for shard in self.shards.iter() {
            let r = lock(shard).shelf.compact();
            total.objects_moved += r.objects_moved;
            total.bytes_moved += r.bytes_moved;
            total.chunks_released += r.chunks_released;
            total.pages_released += r.pages_released;
        }
        total
    }

    /// Statistics summed over the shards (each shard read under its lock).
    pub fn stats(&self) -> StoreStats {
        let mut ops = OpRecorder::new();
        let mut mm = MmStat::default();
        let mut pool = xvmalloc::PoolStats::default();
        let mut pages = 0;
        for shard in self.shards.iter() {
            let shard = lock(shard);
            ops.merge(&shard.ops);
            pages += shard.shelf.len() as u64;
            let m = shard.shelf.mm();
            mm.orig_data_size += m.orig_data_size;
            mm.compr_data_size += m.compr_data_size;
            mm.mem_used_total += m.mem_used_total;
            mm.mem_limit = m.mem_limit;
            mm.mem_used_max += m.mem_used_max;
            mm.same_pages += m.same_pages;
            mm.pages_compacted += m.pages_compacted;
            mm.huge_pages += m.huge_pages;
            let p = shard.shelf.pool.stats();
            pool.payload_bytes += p.payload_bytes;
            pool.allocated_bytes += p.allocated_bytes;
            pool.held_bytes += p.held_bytes;
            pool.objects += p.objects;
            pool.chunks_held += p.chunks_held;
            pool.chunk_size = p.chunk_size;
            pool.chunks_acquired += p.chunks_acquired;
            pool.pages_released += p.pages_released;
            pool.pages_compacted += p.pages_compacted;
            pool.objects_moved += p.objects_moved;
            pool.metadata_bytes += p.metadata_bytes;
        }
        StoreStats { pages, mm, codec: ops.table(self.name, self.config.timing), pool }
    }

    /// Number of shards.
    pub fn shards(&self) -> usize {
        self.shards.len()
    }

    /// Checks every shard's allocator; for tests.
    ///
    /// # Errors
    ///
    /// The first inconsistency found.
    pub fn validate(&self) -> Result<(), &'static str> {
        self.shards.iter().try_for_each(|s| lock(s).shelf.pool.validate())
    }
}

impl<S: PageSource> core::fmt::Debug for ShardedStore<S> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("ShardedStore")
            .field("codec", &self.name)
            .field("shards", &self.shards.len())
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}
