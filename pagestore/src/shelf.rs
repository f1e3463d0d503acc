//! The stored entries: a key map over an `xvmalloc` pool, with the memory limit.

use alloc::collections::BTreeMap;

use pagecodec::{PAGE_SIZE, Page};
use xvmalloc::{Addr, AllocError, CompactReport, PageSource, Pool};

use crate::table::{Entry, Kind, Table};
use crate::tier::{Codecs, RecompressReport, Selection, Tier, WritebackReport};
use crate::{MmStat, SlotStats, StoreError};

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
    Compressed {
        codec: u8,
        variant: u8,
        bytes: &'a [u8],
    },
    Huge(&'a [u8]),
    /// On the backing store: read it through the tier.
    Backed(Entry),
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

/// What a recompression pass asks for.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RecompressJob {
    pub(crate) selection: Selection,
    pub(crate) now: Option<u64>,
    /// Only streams of at least this many bytes (huge pages count 4096).
    pub(crate) threshold: usize,
    pub(crate) huge_threshold: usize,
    pub(crate) slot: u8,
    pub(crate) max: u64,
    pub(crate) timing: bool,
}

/// What a writeback pass asks for.
#[derive(Clone, Copy, Debug)]
pub(crate) struct WritebackJob {
    pub(crate) selection: Selection,
    pub(crate) now: Option<u64>,
    pub(crate) limit: u64,
    pub(crate) batch: usize,
}

/// Cumulative recompression figures of one codec slot.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct SlotOps {
    pub(crate) attempts: u64,
    pub(crate) recompressed: u64,
    pub(crate) left_huge: u64,
    pub(crate) bytes_saved: u64,
    pub(crate) time: u64,
}

/// A page written to the backing store, not yet committed.
#[derive(Clone, Copy, Debug)]
struct Pending {
    key: u64,
    old: Entry,
    new: Entry,
}

/// The pool's chunk size: 32 KiB, as zsmalloc's longest zspage chains (8 pages). Against
/// xvmalloc's default of 16 KiB, chunks hold twice the objects, so the tails too small for
/// the next object waste half as much (docs/perf/pagestore.md).
const CHUNK_SIZE: usize = 32768;

/// Entries on a pool, with the zram counters.
pub(crate) struct Shelf<S: PageSource> {
    pub(crate) pool: Pool<Budgeted<S>>,
    map: Table,
    same_pages: u64,
    huge_pages: u64,
    compr_bytes: u64,
    backed_pages: u64,
    /// Streams in memory per codec slot: pages and bytes.
    slot_pages: [u64; 4],
    slot_bytes: [u64; 4],
    pub(crate) slot_ops: [SlotOps; 4],
}

impl<S: PageSource> Shelf<S> {
    pub(crate) fn new(source: S, budget: Budget, dense_keys: usize, timed: bool) -> Self {
        let source = Budgeted { inner: source, budget, refused: false, held: 0, held_max: 0 };
        Shelf {
            pool: match Pool::with_chunk_size(source, CHUNK_SIZE) {
                Ok(pool) => pool,
                Err(_) => unreachable!("32 KiB is a valid chunk size"),
            },
            map: Table::with_dense(dense_keys, timed),
            same_pages: 0,
            huge_pages: 0,
            compr_bytes: 0,
            backed_pages: 0,
            slot_pages: [0; 4],
            slot_bytes: [0; 4],
            slot_ops: [SlotOps::default(); 4],
        }
    }

    /// Keeps `page` under `key`, replacing (and freeing) an older entry only once the new
    /// one is safely stored. Returns the backing slot the old entry held, for the caller to
    /// release.
    pub(crate) fn insert(
        &mut self,
        key: u64,
        page: Prepared<'_>,
        now: Option<u64>,
    ) -> Result<Option<u32>, StoreError> {
        let mut entry = match page {
            Prepared::Same(value) => Entry::same(value),
            Prepared::Compressed { variant, bytes } => Entry::stream(self.alloc(bytes)?, 0, variant),
            Prepared::Huge(bytes) => Entry::huge(self.alloc(bytes)?),
        };
        if let Some(t) = now {
            entry.set_time(t);
        }
        self.count(entry, true);
        Ok(self.map.insert(key, entry).and_then(|old| self.discard(old)))
    }

    /// Keeps `bytes` in the pool as a direct object: the entry holds its address, so the
    /// pool needs no slot for it (8 bytes of heap per page saved).
    fn alloc(&mut self, bytes: &[u8]) -> Result<Addr, StoreError> {
        self.pool.source_mut().refused = false;
        self.pool.alloc_direct(bytes).map_err(|e| match e {
            AllocError::OutOfMemory if self.pool.source().refused => StoreError::Full,
            _ => StoreError::OutOfMemory,
        })
    }

    fn stream_len(&self, entry: Entry) -> usize {
        self.pool.get_direct(entry.addr()).map_or(0, <[u8]>::len)
    }

    /// Adds (or subtracts) an entry's share of the counters.
    fn count(&mut self, entry: Entry, add: bool) {
        let mut c = [0u64; 4]; // same, huge, backed, stream bytes
        match entry.kind() {
            Some(Kind::Same) => c[0] = 1,
            Some(Kind::Huge) => c[1] = 1,
            Some(Kind::BackedStream | Kind::BackedPage) => c[2] = 1,
            Some(Kind::Stream) => c[3] = self.stream_len(entry) as u64,
            None => {}
        }
        let slot = usize::from(entry.codec());
        let stream = u64::from(entry.kind() == Some(Kind::Stream));
        let huge_bytes = c[1] * PAGE_SIZE as u64;
        if add {
            self.same_pages += c[0];
            self.huge_pages += c[1];
            self.backed_pages += c[2];
            self.compr_bytes += c[3] + huge_bytes;
            self.slot_pages[slot] += stream;
            self.slot_bytes[slot] += c[3];
        } else {
            self.same_pages -= c[0];
            self.huge_pages -= c[1];
            self.backed_pages -= c[2];
            self.compr_bytes -= c[3] + huge_bytes;
            self.slot_pages[slot] -= stream;
            self.slot_bytes[slot] -= c[3];
        }
    }

    /// Drops an entry's memory; returns its backing slot, if it had one.
    fn discard(&mut self, entry: Entry) -> Option<u32> {
        self.count(entry, false);
        match entry.kind() {
            Some(Kind::Stream | Kind::Huge) => {
                // The address came from this pool and is freed only here.
                let freed = self.pool.free_direct(entry.addr());
                debug_assert!(freed.is_ok());
                None
            }
            Some(Kind::BackedStream | Kind::BackedPage) => Some(entry.backing_slot()),
            Some(Kind::Same) | None => None,
        }
    }

    fn stored(&self, entry: Entry) -> Option<Stored<'_>> {
        Some(match entry.kind()? {
            Kind::Same => Stored::Same(entry.value()),
            Kind::Stream => Stored::Compressed {
                codec: entry.codec(),
                variant: entry.variant(),
                bytes: self.pool.get_direct(entry.addr()).ok()?,
            },
            Kind::Huge => Stored::Huge(self.pool.get_direct(entry.addr()).ok()?),
            Kind::BackedStream | Kind::BackedPage => Stored::Backed(entry),
        })
    }

    /// The page under `key`, clearing its idle mark and stamping its access time.
    pub(crate) fn get_touch(&mut self, key: u64, now: Option<u64>) -> Option<Stored<'_>> {
        let mut entry = self.map.get(key)?;
        // Written back only when something changes: most loads have no clock and no mark.
        if entry.idle() || now.is_some() {
            entry = self.map.update(key, |entry| {
                entry.set_idle(false);
                if let Some(t) = now {
                    entry.set_time(t);
                }
            })?;
        }
        self.stored(entry)
    }

    /// Removes `key`: `None` if absent, else the backing slot it held, if any.
    pub(crate) fn remove(&mut self, key: u64) -> Option<Option<u32>> {
        let entry = self.map.remove(key)?;
        Some(self.discard(entry))
    }

    pub(crate) fn contains(&self, key: u64) -> bool {
        self.map.get(key).is_some()
    }

    pub(crate) fn len(&self) -> usize {
        self.map.len()
    }

    /// Compacts the pool, moving entries' addresses with their objects. Allocates a
    /// temporary map from address to key over the pages kept in the pool.
    pub(crate) fn compact(&mut self) -> CompactReport {
        let mut keys: BTreeMap<u32, u64> = BTreeMap::new();
        let mut from = 0u64;
        while let Some(k) = self.map.next_key(from) {
            if let Some(e) = self.map.get(k) {
                if matches!(e.kind(), Some(Kind::Stream | Kind::Huge)) {
                    keys.insert(e.addr().to_bits(), k);
                }
            }
            if k == u64::MAX {
                break;
            }
            from = k + 1;
        }
        let map = &mut self.map;
        // Moves come in order ("the object now at `from` is at `to`"), so the map follows.
        self.pool.compact_with(&mut |from, to| {
            if let Some(k) = keys.remove(&from.to_bits()) {
                keys.insert(to.to_bits(), k);
                map.update(k, |e| *e = e.moved_to(to));
            }
        })
    }

    pub(crate) fn mark_idle(&mut self) {
        self.map.for_each_mut(|e| e.set_idle(true));
    }

    /// The keys a selection walks, in order, starting at `from`.
    fn next_selected(&self, from: u64, selection: Selection) -> Option<u64> {
        match selection.key() {
            Some(k) if k >= from && self.contains(k) => Some(k),
            Some(_) => None,
            None => self.map.next_key(from),
        }
    }

    /// Recompresses selected pages with the codec in `job.slot`, keeping the smaller stream.
    pub(crate) fn recompress(
        &mut self,
        job: &RecompressJob,
        codecs: &mut dyn Codecs,
        report: &mut RecompressReport,
    ) {
        let mut page = Page::zeroed();
        let mut scratch = [0u8; PAGE_SIZE];
        let mut from = 0u64;
        while report.attempted < job.max {
            let Some(key) = self.next_selected(from, job.selection) else { break };
            from = key.saturating_add(1);
            let last = key == u64::MAX;
            if let Some(old) = self.map.get(key) {
                self.recompress_one(key, old, job, codecs, report, &mut page, &mut scratch);
            }
            if last {
                break;
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn recompress_one(
        &mut self,
        key: u64,
        old: Entry,
        job: &RecompressJob,
        codecs: &mut dyn Codecs,
        report: &mut RecompressReport,
        page: &mut Page,
        scratch: &mut [u8; PAGE_SIZE],
    ) {
        let old_len = match old.kind() {
            Some(Kind::Stream) if old.codec() < job.slot => self.stream_len(old),
            Some(Kind::Huge) => PAGE_SIZE,
            _ => return,
        };
        if old.incompressible() || old_len < job.threshold || !job.selection.matches(key, old, job.now) {
            return;
        }
        let slot = usize::from(job.slot);
        report.attempted += 1;
        self.slot_ops[slot].attempts += 1;
        let start = if job.timing { crate::timing::now() } else { 0 };
        // The page, from its current stream.
        let decoded = match self.stored(old) {
            Some(Stored::Huge(bytes)) => {
                page.as_bytes_mut().copy_from_slice(bytes);
                true
            }
            Some(Stored::Compressed { codec, variant, bytes }) => {
                codecs.codec(codec).is_some_and(|c| c.decompress(variant, bytes, page).is_ok())
            }
            _ => false,
        };
        // The new stream must be smaller than the old and within the huge threshold.
        let budget = old_len.saturating_sub(1).min(job.huge_threshold);
        let compressed = match codecs.codec(job.slot) {
            Some(c) if decoded && budget > 0 => c.compress(page, &mut scratch[..budget]).ok(),
            _ => None,
        };
        if job.timing {
            let t = crate::timing::now().saturating_sub(start);
            report.time += t;
            self.slot_ops[slot].time += t;
        }
        if !decoded {
            report.failed += 1;
            return;
        }
        match compressed {
            Some((n, variant)) if n > 0 && n <= budget => {
                let Ok(addr) = self.alloc(&scratch[..n]) else {
                    report.failed += 1;
                    return;
                };
                let new = Entry::stream(addr, job.slot, variant).carrying(old);
                self.count(new, true);
                self.map.insert(key, new);
                self.discard(old);
                let huge = u64::from(old.kind() == Some(Kind::Huge));
                report.recompressed += 1;
                report.left_huge += huge;
                report.bytes_before += old_len as u64;
                report.bytes_after += n as u64;
                let ops = &mut self.slot_ops[slot];
                ops.recompressed += 1;
                ops.left_huge += huge;
                ops.bytes_saved += (old_len - n) as u64;
            }
            _ => {
                self.map.update(key, Entry::set_incompressible);
            }
        }
    }

    /// Writes selected pages to the backing store in batches; stops at the first failure.
    /// Returns whether to go on (no failure, limit not reached).
    pub(crate) fn writeback(
        &mut self,
        job: &WritebackJob,
        tier: &mut Tier,
        codecs: &mut dyn Codecs,
        report: &mut WritebackReport,
    ) -> bool {
        let batch = job.batch.max(1);
        let mut pending: alloc::vec::Vec<Pending> = alloc::vec::Vec::with_capacity(batch.min(1024));
        let mut page = Page::zeroed();
        let mut from = 0u64;
        loop {
            if report.written + pending.len() as u64 >= job.limit {
                break;
            }
            let Some(key) = self.next_selected(from, job.selection) else { break };
            let last = key == u64::MAX;
            from = key.saturating_add(1);
            if let Some(old) = self.map.get(key) {
                if job.selection.matches(key, old, job.now) {
                    match self.write_one(key, old, tier, codecs, &mut page) {
                        Ok(Some(p)) => pending.push(p),
                        Ok(None) => {}
                        Err(e) => {
                            report.failed += 1 + pending.len() as u64;
                            report.error = Some(e);
                            for p in pending.drain(..) {
                                tier.release(p.new.backing_slot());
                            }
                            return false;
                        }
                    }
                }
            }
            if pending.len() >= batch && !self.commit(tier, &mut pending, report) {
                return false;
            }
            if last {
                break;
            }
        }
        if !pending.is_empty() && !self.commit(tier, &mut pending, report) {
            return false;
        }
        report.written < job.limit
    }

    /// Writes one in-memory page (not same-filled) to a fresh slot.
    fn write_one(
        &mut self,
        key: u64,
        old: Entry,
        tier: &mut Tier,
        codecs: &mut dyn Codecs,
        page: &mut Page,
    ) -> Result<Option<Pending>, crate::BackingError> {
        let (raw, codec, variant, bytes): (bool, u8, u8, &[u8]) = match self.stored(old) {
            Some(Stored::Huge(bytes)) => (true, 0, 0, bytes),
            Some(Stored::Compressed { codec, variant, bytes }) if tier.config.pages => {
                let ok = codecs.codec(codec).is_some_and(|c| c.decompress(variant, bytes, page).is_ok());
                if !ok {
                    // Left in memory; a load reports the corruption.
                    return Ok(None);
                }
                (true, 0, 0, page.as_bytes())
            }
            Some(Stored::Compressed { codec, variant, bytes }) => (false, codec, variant, bytes),
            _ => return Ok(None),
        };
        let slot = tier.alloc_slot()?;
        match tier.write(key, slot, bytes) {
            Ok(()) => {
                let new = Entry::backed(slot, bytes.len(), raw, codec, variant).carrying(old);
                Ok(Some(Pending { key, old, new }))
            }
            Err(e) => {
                tier.release(slot);
                Err(e)
            }
        }
    }

    /// Flushes (and verifies) a batch, then drops its pages from memory.
    fn commit(
        &mut self,
        tier: &mut Tier,
        pending: &mut alloc::vec::Vec<Pending>,
        report: &mut WritebackReport,
    ) -> bool {
        let mut error = tier.flush().err();
        if error.is_none() && tier.config.verify {
            for p in pending.iter() {
                let e = p.new;
                if let Err(err) = tier.read(p.key, e.backing_slot(), e.len()) {
                    error = Some(err);
                    break;
                }
            }
        }
        if let Some(e) = error {
            report.failed += pending.len() as u64;
            report.error = Some(e);
            for p in pending.drain(..) {
                tier.release(p.new.backing_slot());
            }
            return false;
        }
        for p in pending.drain(..) {
            self.count(p.new, true);
            self.map.insert(p.key, p.new);
            self.discard(p.old);
            report.written += 1;
        }
        report.batches += 1;
        true
    }

    pub(crate) fn backed_pages(&self) -> u64 {
        self.backed_pages
    }

    /// Per-slot figures (names filled in by the caller).
    pub(crate) fn slots(&self) -> [SlotStats; 4] {
        let mut out = [SlotStats::default(); 4];
        for (i, s) in out.iter_mut().enumerate() {
            let ops = self.slot_ops[i];
            s.pages = self.slot_pages[i];
            s.compr_bytes = self.slot_bytes[i];
            s.recompress_attempts = ops.attempts;
            s.recompressed = ops.recompressed;
            s.left_huge = ops.left_huge;
            s.bytes_saved = ops.bytes_saved;
            s.recompress_time = ops.time;
        }
        out
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
