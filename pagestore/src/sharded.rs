//! The thread-safe store (feature `std`).

extern crate std;

use alloc::boxed::Box;
use alloc::vec::Vec;

use crate::sync::{Arc, AtomicU64, Mutex, MutexGuard};

use pagecodec::{PAGE_SIZE, Page};
use xvmalloc::{CompactReport, HeapSource, PageSource};

use crate::shelf::{Budget, RecompressJob, Shelf, Stored, WritebackJob};
use crate::stats::OpRecorder;
use crate::store::{prepare, restore, secondary_index};
use crate::tier::{Codecs, Tier};
use crate::{
    BackingConfig, EntryCodec, LoadError, MmStat, RecompressReport, Selection, SendBacking, SendCodec,
    StoreConfig, StoreError, StoreStats, TierError, TierStats, WritebackReport,
};

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
    /// Secondary codec slots 1-3: a free list and a factory each.
    secondary: [Option<Pool>; 3],
    tier: Option<Mutex<Tier>>,
}

/// The codecs of one secondary slot.
struct Pool {
    free: Mutex<Vec<SendCodec>>,
    factory: CodecFactory,
    name: &'static str,
}

/// Codecs taken from the store's free lists for one operation, given back on drop.
struct Borrowed<'a, S: PageSource> {
    store: &'a ShardedStore<S>,
    primary: Option<&'a mut dyn EntryCodec>,
    held: [Option<SendCodec>; 4],
}

impl<'a, S: PageSource> Borrowed<'a, S> {
    fn new(store: &'a ShardedStore<S>, primary: Option<&'a mut dyn EntryCodec>) -> Self {
        Borrowed { store, primary, held: [None, None, None, None] }
    }
}

impl<S: PageSource> Codecs for Borrowed<'_, S> {
    fn codec(&mut self, slot: u8) -> Option<&mut dyn EntryCodec> {
        if slot == 0 {
            if let Some(p) = self.primary.as_deref_mut() {
                return Some(p);
            }
        }
        let index = usize::from(slot);
        let cell = self.held.get_mut(index)?;
        if cell.is_none() {
            *cell = if slot == 0 {
                Some(lock(&self.store.codecs).pop().unwrap_or_else(|| (self.store.factory)()))
            } else {
                let pool = self.store.secondary.get(index - 1)?.as_ref()?;
                Some(lock(&pool.free).pop().unwrap_or_else(|| (pool.factory)()))
            };
        }
        match cell {
            Some(c) => Some(&mut **c),
            None => None,
        }
    }
}

impl<S: PageSource> Drop for Borrowed<'_, S> {
    fn drop(&mut self) {
        for (slot, cell) in self.held.iter_mut().enumerate() {
            if let Some(codec) = cell.take() {
                match slot {
                    0 => lock(&self.store.codecs).push(codec),
                    s => {
                        if let Some(pool) = &self.store.secondary[s - 1] {
                            lock(&pool.free).push(codec);
                        }
                    }
                }
            }
        }
    }
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
                Mutex::new(Shard { shelf: Shelf::new(source(), budget, 0, false), ops: OpRecorder::new() })
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
            secondary: [None, None, None],
            tier: None,
        }
    }

    fn shard(&self, key: u64) -> &Mutex<Shard<S>> {
        // Fibonacci hashing spreads sequential keys over the shards.
        let index = key.wrapping_mul(0x9E37_79B9_7F4A_7C15).checked_shr(self.shift).unwrap_or(0);
        &self.shards[index as usize]
    }

    fn with_codec<R>(&self, f: impl FnOnce(&mut (dyn EntryCodec + Send)) -> R) -> R {
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
            let freed = shard.shelf.insert(key, prepared, self.config.now())?;
            drop(shard);
            self.release(freed);
            Ok(())
        })
    }

    fn release(&self, slot: Option<u32>) {
        if let (Some(slot), Some(tier)) = (slot, &self.tier) {
            lock(tier).release(slot);
        }
    }

    /// Loads the page under `key` into `page` (decompressing under the shard lock).
    ///
    /// # Errors
    ///
    /// As [`PageStore::load`](crate::PageStore::load).
    pub fn load(&self, key: u64, page: &mut Page) -> Result<(), LoadError> {
        self.with_codec(|codec| {
            let mut guard = lock(self.shard(key));
            let shard = &mut *guard;
            let stored = shard.shelf.get_touch(key, self.config.now()).ok_or(LoadError::NotFound)?;
            // Lock order: shard, then tier.
            let mut tier = match (&stored, &self.tier) {
                (Stored::Backed(_), Some(tier)) => Some(lock(tier)),
                _ => None,
            };
            let mut codecs = Borrowed::new(self, Some(codec));
            if let Some(t) = restore(&mut codecs, self.config.timing, key, stored, tier.as_deref_mut(), page)?
            {
                shard.ops.record_decompress(t);
            }
            Ok(())
        })
    }

    /// Removes the page under `key` (freeing its backing slot); returns whether there was
    /// one.
    pub fn remove(&self, key: u64) -> bool {
        let removed = lock(self.shard(key)).shelf.remove(key);
        match removed {
            Some(slot) => {
                self.release(slot);
                true
            }
            None => false,
        }
    }

    /// Puts codecs made by `factory` in secondary slot `slot` (1-3); see
    /// [`PageStore::set_secondary`](crate::PageStore::set_secondary).
    ///
    /// # Errors
    ///
    /// [`TierError::BadSlot`] or [`TierError::InUse`].
    pub fn set_secondary(&mut self, slot: u8, factory: CodecFactory) -> Result<(), TierError> {
        let cell = &mut self.secondary[secondary_index(slot)?];
        if cell.is_some() {
            return Err(TierError::InUse(slot));
        }
        let first = factory();
        let name = first.name();
        *cell = Some(Pool { free: Mutex::new(alloc::vec![first]), factory, name });
        Ok(())
    }

    /// Attaches the backing store, shared by every shard (one lock; shards write back one
    /// at a time).
    ///
    /// # Errors
    ///
    /// [`TierError::InUse`] if one is attached already.
    pub fn set_backing(&mut self, backing: SendBacking, config: BackingConfig) -> Result<(), TierError> {
        if self.tier.is_some() {
            return Err(TierError::InUse(0));
        }
        self.tier = Some(Mutex::new(Tier::new(backing, config)));
        Ok(())
    }

    /// Marks every stored page idle, shard by shard.
    pub fn mark_idle(&self) {
        self.shards.iter().for_each(|s| lock(s).shelf.mark_idle());
    }

    /// As [`PageStore::recompress`](crate::PageStore::recompress), shard by shard (each
    /// under its lock; other shards go on).
    ///
    /// # Errors
    ///
    /// [`TierError::BadSlot`] or [`TierError::NoCodec`].
    pub fn recompress(
        &self,
        selection: Selection,
        size_threshold: usize,
        max_pages: u64,
        slot: u8,
    ) -> Result<RecompressReport, TierError> {
        if self.secondary[secondary_index(slot)?].is_none() {
            return Err(TierError::NoCodec(slot));
        }
        let mut total = RecompressReport::default();
        let mut codecs = Borrowed::new(self, None);
        for shard in self.shards_for(selection) {
            if total.attempted >= max_pages {
                break;
            }
            let job = RecompressJob {
                selection,
                now: self.config.now(),
                threshold: size_threshold,
                huge_threshold: self.config.huge_threshold.clamp(1, PAGE_SIZE),
                slot,
                max: max_pages - total.attempted,
                timing: self.config.timing,
            };
            let mut report = RecompressReport::default();
            lock(shard).shelf.recompress(&job, &mut codecs, &mut report);
            total.add(&report);
        }
        Ok(total)
    }

    /// As [`PageStore::writeback`](crate::PageStore::writeback), shard by shard: a batch
    /// never spans shards, and is written under its shard's lock (so no page changes
    /// between its write and its commit) and the backing store's.
    ///
    /// # Errors
    ///
    /// [`TierError::NoBacking`].
    pub fn writeback(
        &self,
        selection: Selection,
        limit: u64,
        batch: usize,
    ) -> Result<WritebackReport, TierError> {
        let tier = self.tier.as_ref().ok_or(TierError::NoBacking)?;
        let mut report = WritebackReport::default();
        let mut codecs = Borrowed::new(self, None);
        for shard in self.shards_for(selection) {
            if report.written >= limit {
                break;
            }
            let job = WritebackJob { selection, now: self.config.now(), limit, batch };
            let mut shard = lock(shard);
            let mut tier = lock(tier);
            if !shard.shelf.writeback(&job, &mut tier, &mut codecs, &mut report) && report.error.is_some() {
                break;
            }
        }
        Ok(report)
    }

    /// The shards a selection can touch.
    fn shards_for(&self, selection: Selection) -> impl Iterator<Item = &Mutex<Shard<S>>> {
        let only = selection.key().map(|k| self.shard(k) as *const Mutex<Shard<S>>);
        self.shards.iter().filter(move |s| only.is_none_or(|o| core::ptr::eq(*s, o)))
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
        let mut tiers = TierStats::default();
        for shard in self.shards.iter() {
            let shard = lock(shard);
            tiers.merge(&TierStats { codecs: shard.shelf.slots(), backing: Default::default() });
            tiers.backing.pages += shard.shelf.backed_pages();
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
        tiers.codecs[0].codec = self.name;
        for (s, p) in tiers.codecs[1..].iter_mut().zip(self.secondary.iter()) {
            s.codec = p.as_ref().map_or("", |p| p.name);
        }
        if let Some(tier) = &self.tier {
            let pages = tiers.backing.pages;
            tiers.backing = lock(tier).stat();
            tiers.backing.pages = pages;
        }
        StoreStats { pages, mm, codec: ops.table(self.name, self.config.timing), pool, tiers }
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
