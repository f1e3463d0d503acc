//! The stored entries: a key map over an `xvmalloc` pool, with the memory limit.

use alloc::collections::BTreeMap;
use alloc::vec::Vec;

use pagecodec::PAGE_SIZE;
use xvmalloc::{AllocError, CompactReport, Handle, PageSource, Pool};

use crate::{MmStat, StoreError};

/// How one page is kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Entry {
    /// Same-filled: the repeated u64 alone, no allocation.
    Same(u64),
    /// A compressed stream and the codec variant that produced it.
    Compressed { handle: Handle, variant: u8 },
    /// The raw page (compressed size over the huge threshold).
    Huge(Handle),
}

/// A page ready to be kept (compression already done).
#[derive(Clone, Copy, Debug)]
pub(crate) enum Prepared<'a> {
    Same(u64),
    Compressed { variant: u8, bytes: &'a [u8] },
    Huge(&'a [u8; PAGE_SIZE]),
}

/// A kept page, borrowed.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Stored<'a> {
    Same(u64),
    Compressed { variant: u8, bytes: &'a [u8] },
    Huge(&'a [u8]),
}

/// Wraps the user's source, refusing chunks past the memory limit.
#[derive(Debug)]
pub(crate) struct Budgeted<S> {
    pub(crate) inner: S,
    pub(crate) budget: Budget,
    /// Set when the last refusal came from the limit (not from the inner source).
    pub(crate) refused: bool,
    pub(crate) held: u64,
    pub(crate) held_max: u64,
}

/// The memory limit: none, this shelf's own, or shared by the shards of a `ShardedStore`.
#[derive(Debug)]
pub(crate) enum Budget {
    Unlimited,
    Local(u64),
    #[cfg(feature = "std")]
    Shared {
        limit: u64,
        held: crate::sync::Arc<crate::sync::AtomicU64>,
    },
}

impl Budget {
    fn limit(&self) -> u64 {
        match self {
            Budget::Unlimited => 0,
            Budget::Local(limit) => *limit,
            #[cfg(feature = "std")]
            Budget::Shared { limit, .. } => *limit,
        }
    }
}

/// A chunk with the size the budget was charged for it. The budget gives back exactly what
/// it charged, whatever length the source's chunk reports (a source may hand out a chunk of
/// another size, which the pool refuses, or one whose length changes).
#[derive(Debug)]
pub(crate) struct Accounted<C> {
    chunk: C,
    charged: u64,
}

impl<C: core::ops::Deref<Target = [u8]>> core::ops::Deref for Accounted<C> {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.chunk
    }
}

impl<C: core::ops::DerefMut<Target = [u8]>> core::ops::DerefMut for Accounted<C> {
    fn deref_mut(&mut self) -> &mut [u8] {
        &mut self.chunk
    }
}

/// A charge on the shared budget that is given back when dropped unless kept: a source that
/// panics in `acquire` leaves the budget as it found it.
#[cfg(feature = "std")]
struct Charge<'a> {
    held: &'a crate::sync::AtomicU64,
    size: u64,
}

#[cfg(feature = "std")]
impl Drop for Charge<'_> {
    fn drop(&mut self) {
        self.held.fetch_sub(self.size, core::sync::atomic::Ordering::Relaxed);
    }
}

impl<S: PageSource> PageSource for Budgeted<S> {
    type Chunk = Accounted<S::Chunk>;

    fn acquire(&mut self, size: usize) -> Option<Self::Chunk> {
        let size64 = size as u64;
        match &self.budget {
            Budget::Unlimited => {}
            Budget::Local(limit) => {
                if self.held + size64 > *limit {
                    self.refused = true;
                    return None;
                }
            }
            #[cfg(feature = "std")]
            Budget::Shared { limit, held } => {
                use core::sync::atomic::Ordering;
                // Charged before the call so that shards cannot overshoot the limit together;
                // the charge is given back on failure or unwind.
                let before = held.fetch_add(size64, Ordering::Relaxed);
                let charge = Charge { held, size: size64 };
                if before + size64 > *limit {
                    self.refused = true;
                    return None;
                }
                let chunk = self.inner.acquire(size)?;
                core::mem::forget(charge);
                self.held += size64;
                self.held_max = self.held_max.max(self.held);
                return Some(Accounted { chunk, charged: size64 });
            }
        }
        let chunk = self.inner.acquire(size)?;
        self.held += size64;
        self.held_max = self.held_max.max(self.held);
        Some(Accounted { chunk, charged: size64 })
    }

    fn release(&mut self, chunk: Self::Chunk) {
        let charged = chunk.charged;
        self.inner.release(chunk.chunk);
        self.held -= charged;
        #[cfg(feature = "std")]
        if let Budget::Shared { held, .. } = &self.budget {
            held.fetch_sub(charged, core::sync::atomic::Ordering::Relaxed);
        }
    }
}

/// The key table: keys below the dense capacity in a flat array allocated up front, as
/// zram's table (16 bytes per key, one index, no node overhead); any other key in a B-tree.
#[derive(Debug, Default)]
pub(crate) struct Table {
    dense: Vec<Option<Entry>>,
    sparse: BTreeMap<u64, Entry>,
    dense_len: usize,
}

// The flat table's promise: 16 bytes per key, as zram's table entry.
const _: () = assert!(core::mem::size_of::<Option<Entry>>() == 16);

impl Table {
    pub(crate) fn with_dense(keys: usize) -> Self {
        Table { dense: alloc::vec![None; keys], sparse: BTreeMap::new(), dense_len: 0 }
    }

    fn slot(&mut self, key: u64) -> Option<&mut Option<Entry>> {
        usize::try_from(key).ok().and_then(|k| self.dense.get_mut(k))
    }

    fn insert(&mut self, key: u64, entry: Entry) -> Option<Entry> {
        match self.slot(key) {
            Some(slot) => {
                let old = slot.replace(entry);
                if old.is_none() {
                    self.dense_len += 1;
                }
                old
            }
            None => self.sparse.insert(key, entry),
        }
    }

    fn get(&self, key: u64) -> Option<&Entry> {
        match usize::try_from(key).ok().and_then(|k| self.dense.get(k)) {
            Some(slot) => slot.as_ref(),
            None => self.sparse.get(&key),
        }
    }

    fn remove(&mut self, key: u64) -> Option<Entry> {
        match self.slot(key) {
            Some(slot) => {
                let old = slot.take();
                if old.is_some() {
                    self.dense_len -= 1;
                }
                old
            }
            None => self.sparse.remove(&key),
        }
    }

    fn len(&self) -> usize {
        self.dense_len + self.sparse.len()
    }
}

/// Entries on a pool, with the zram counters.
pub(crate) struct Shelf<S: PageSource> {
    pub(crate) pool: Pool<Budgeted<S>>,
    map: Table,
    same_pages: u64,
    huge_pages: u64,
    compr_bytes: u64,
}

impl<S: PageSource> Shelf<S> {
    pub(crate) fn new(source: S, budget: Budget, dense_keys: usize) -> Self {
        let source = Budgeted { inner: source, budget, refused: false, held: 0, held_max: 0 };
        let map = Table::with_dense(dense_keys);
        Shelf { pool: Pool::new(source), map, same_pages: 0, huge_pages: 0, compr_bytes: 0 }
    }

    /// Keeps `page` under `key`, replacing (and freeing) an older entry only once the new
    /// one is safely stored.
    pub(crate) fn insert(&mut self, key: u64, page: Prepared<'_>) -> Result<(), StoreError> {
        let entry = match page {
            Prepared::Same(value) => Entry::Same(value),
            Prepared::Compressed { variant, bytes } => {
                Entry::Compressed { handle: self.alloc(bytes)?, variant }
            }
            Prepared::Huge(bytes) => Entry::Huge(self.alloc(bytes)?),
        };
        self.count(&entry, true);
        if let Some(old) = self.map.insert(key, entry) {
            self.discard(old);
        }
        Ok(())
    }

    fn alloc(&mut self, bytes: &[u8]) -> Result<Handle, StoreError> {
        self.pool.source_mut().refused = false;
        self.pool.alloc_copy(bytes).map_err(|e| match e {
            AllocError::OutOfMemory if self.pool.source().refused => StoreError::Full,
            _ => StoreError::OutOfMemory,
        })
    }

    /// Adds (or subtracts) an entry's share of the counters.
    fn count(&mut self, entry: &Entry, add: bool) {
        let (same, huge, bytes) = match *entry {
            Entry::Same(_) => (1, 0, 0),
            Entry::Compressed { handle, .. } => (0, 0, self.pool.len(handle).unwrap_or(0) as u64),
            Entry::Huge(_) => (0, 1, PAGE_SIZE as u64),
        };
        if add {
            self.same_pages += same;
            self.huge_pages += huge;
            self.compr_bytes += bytes;
        } else {
            self.same_pages -= same;
            self.huge_pages -= huge;
            self.compr_bytes -= bytes;
        }
    }

    fn discard(&mut self, entry: Entry) {
        self.count(&entry, false);
        match entry {
            Entry::Same(_) => {}
            Entry::Compressed { handle, .. } | Entry::Huge(handle) => {
                // The handle came from this pool and is freed only here.
                let freed = self.pool.free(handle);
                debug_assert!(freed.is_ok());
            }
        }
    }

    pub(crate) fn get(&self, key: u64) -> Option<Stored<'_>> {
        Some(match *self.map.get(key)? {
            Entry::Same(value) => Stored::Same(value),
            Entry::Compressed { handle, variant } => {
                Stored::Compressed { variant, bytes: self.pool.get(handle).ok()? }
            }
            Entry::Huge(handle) => Stored::Huge(self.pool.get(handle).ok()?),
        })
    }

    pub(crate) fn remove(&mut self, key: u64) -> bool {
        match self.map.remove(key) {
            Some(entry) => {
                self.discard(entry);
                true
            }
            None => false,
        }
    }

    pub(crate) fn contains(&self, key: u64) -> bool {
        self.map.get(key).is_some()
    }

    pub(crate) fn len(&self) -> usize {
        self.map.len()
    }

    pub(crate) fn compact(&mut self) -> CompactReport {
        self.pool.compact()
    }

    pub(crate) fn mm(&self) -> MmStat {
        let pool = self.pool.stats();
        let source = self.pool.source();
        MmStat {
            orig_data_size: self.map.len() as u64 * PAGE_SIZE as u64,
            compr_data_size: self.compr_bytes,
            mem_used_total: pool.held_bytes,
            mem_limit: source.budget.limit(),
            mem_used_max: source.held_max,
            same_pages: self.same_pages,
            pages_compacted: pool.pages_compacted,
            huge_pages: self.huge_pages,
        }
    }
}

/// Fills `page` with the little-endian `value` in every u64 word.
pub(crate) fn fill(page: &mut pagecodec::Page, value: u64) {
    for word in page.as_bytes_mut().chunks_exact_mut(8) {
        word.copy_from_slice(&value.to_le_bytes());
    }
}
