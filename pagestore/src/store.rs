//! The single-threaded store.

use alloc::boxed::Box;

use pagecodec::{DecompressError, PAGE_SIZE, Page, same_filled};
use xvmalloc::{CompactReport, HeapSource, PageSource};

use crate::shelf::{Budget, Prepared, RecompressJob, Shelf, Stored, WritebackJob, fill};
use crate::stats::{OpRecorder, Outcome};
use crate::table::Kind;
use crate::tier::{Codecs, Tier};
use crate::{
    BackingConfig, BackingError, EntryCodec, LoadError, RecompressReport, Selection, SendBacking, SendCodec,
    StoreError, StoreStats, TierError, TierStats, WritebackReport,
};

/// The store's policies.
///
/// ```
/// use pagestore::StoreConfig;
///
/// let config = StoreConfig::default().with_mem_limit(64 << 20).with_huge_threshold(3200);
/// assert_eq!(config.huge_threshold, 3200);
/// assert!(config.same_filled && !config.timing);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct StoreConfig {
    /// Keep same-filled pages (every u64 word equal) as the value alone. Default: on.
    pub same_filled: bool,
    /// Pages whose stream would exceed this many bytes are stored raw ("huge"); the codec
    /// gets exactly this budget, so it stops early. Clamped to 1..=4096. Default: 3072
    /// (3/4 page, zram's historical threshold).
    pub huge_threshold: usize,
    /// Most bytes the store may hold from its page source (`None` = no limit). Default: none.
    pub mem_limit: Option<u64>,
    /// Time compression and decompression (TSC ticks on x86_64) for the per-codec
    /// statistics. Default: off, as zram: two fenced clock reads per call cost a few
    /// percent of a fast codec's time (docs/perf/pagestore.md).
    pub timing: bool,
    /// Keys below this are kept in a flat table of 8 bytes per key (12 with a
    /// [`clock`](Self::clock)) allocated when the store is made, as zram's table is for its
    /// disk size; other keys in a B-tree (about 50 bytes
    /// per stored key). `PageStore` only: a `ShardedStore` spreads keys over its shards.
    /// Default: 0 (every key in the B-tree).
    pub dense_keys: usize,
    /// Where last-access times come from (zram's `ac_time`): stamped on every store and
    /// load, read by [`Selection::IdleFor`]. Default: none (no time kept).
    pub clock: Option<Clock>,
}

/// A caller-supplied clock for last-access times: any monotonic count (seconds or
/// milliseconds suit best). Each entry keeps the clock's low 32 bits, so ages are measured
/// modulo 2^32 ticks (136 years of seconds, 49 days of milliseconds). With a clock, a store
/// with dense keys keeps 4 more bytes per key (zram's `ac_time` costs its entry 8).
///
/// ```
/// use std::sync::atomic::{AtomicU64, Ordering};
/// use pagestore::{Clock, StoreConfig};
///
/// static NOW: AtomicU64 = AtomicU64::new(0);
/// let config = StoreConfig::default().with_clock(Clock(|| NOW.load(Ordering::Relaxed)));
/// assert!(config.clock.is_some());
/// ```
#[derive(Clone, Copy, Debug)]
pub struct Clock(pub fn() -> u64);

impl PartialEq for Clock {
    fn eq(&self, other: &Self) -> bool {
        // Same function, same clock.
        self.0 as usize == other.0 as usize
    }
}

impl Eq for Clock {}

impl Clock {
    fn now(self) -> u64 {
        (self.0)()
    }
}

impl Default for StoreConfig {
    fn default() -> Self {
        StoreConfig {
            same_filled: true,
            huge_threshold: PAGE_SIZE * 3 / 4,
            mem_limit: None,
            timing: false,
            dense_keys: 0,
            clock: None,
        }
    }
}

impl StoreConfig {
    /// Sets [`dense_keys`](Self::dense_keys): keys `0..keys` get a flat table (zram's layout).
    pub const fn with_dense_keys(mut self, keys: usize) -> Self {
        self.dense_keys = keys;
        self
    }

    /// Sets [`same_filled`](Self::same_filled).
    pub const fn with_same_filled(mut self, on: bool) -> Self {
        self.same_filled = on;
        self
    }
    /// Sets [`huge_threshold`](Self::huge_threshold) (clamped to 1..=4096).
    pub const fn with_huge_threshold(mut self, bytes: usize) -> Self {
        self.huge_threshold = if bytes == 0 {
            1
        } else if bytes > PAGE_SIZE {
            PAGE_SIZE
        } else {
            bytes
        };
        self
    }
    /// Sets [`mem_limit`](Self::mem_limit).
    pub const fn with_mem_limit(mut self, bytes: u64) -> Self {
        self.mem_limit = Some(bytes);
        self
    }
    /// Sets [`timing`](Self::timing).
    pub const fn with_timing(mut self, on: bool) -> Self {
        self.timing = on;
        self
    }
    /// Sets [`clock`](Self::clock).
    pub const fn with_clock(mut self, clock: Clock) -> Self {
        self.clock = Some(clock);
        self
    }
    /// The clock's time now, if there is a clock.
    pub(crate) fn now(&self) -> Option<u64> {
        self.clock.map(Clock::now)
    }
}

/// Checks a secondary codec slot number.
pub(crate) fn secondary_index(slot: u8) -> Result<usize, TierError> {
    match slot {
        1..=3 => Ok(usize::from(slot) - 1),
        _ => Err(TierError::BadSlot(slot)),
    }
}

/// Compresses `page` under `config`'s policies into `scratch`.
pub(crate) fn prepare<'a, C: EntryCodec + ?Sized>(
    codec: &mut C,
    config: &StoreConfig,
    page: &'a Page,
    scratch: &'a mut [u8; PAGE_SIZE],
) -> (Prepared<'a>, Outcome) {
    // Only scanned when the policy is on: the scan reads the whole page.
    let same = if config.same_filled { same_filled(page) } else { None };
    if let Some(value) = same {
        return (Prepared::Same(value), Outcome::Same);
    }
    let budget = config.huge_threshold.clamp(1, PAGE_SIZE);
    let start = if config.timing { crate::timing::now() } else { 0 };
    let result = codec.compress(page, &mut scratch[..budget]);
    let time = config.timing.then(|| crate::timing::now().saturating_sub(start));
    match result {
        // An empty stream cannot be allocated; such a page is kept raw.
        Ok((len, variant)) if len > 0 && len <= budget => (
            Prepared::Compressed { variant, bytes: &scratch[..len] },
            Outcome::Compressed { len, variant, time },
        ),
        _ => (Prepared::Huge(page.as_bytes()), Outcome::Huge { time }),
    }
}

/// Decompresses a stored entry into `page`, returning the decompression time if timed.
pub(crate) fn restore(
    codecs: &mut dyn Codecs,
    timing: bool,
    key: u64,
    stored: Stored<'_>,
    tier: Option<&mut Tier>,
    page: &mut Page,
) -> Result<Option<u64>, LoadError> {
    let (codec, variant, bytes) = match stored {
        Stored::Same(value) => {
            fill(page, value);
            return Ok(None);
        }
        Stored::Huge(bytes) => {
            page.as_bytes_mut().copy_from_slice(bytes);
            return Ok(None);
        }
        Stored::Compressed { codec, variant, bytes } => (codec, variant, bytes),
        Stored::Backed(entry) => {
            let tier = tier.ok_or(LoadError::Backing(BackingError::Unsupported))?;
            let bytes = tier.read(key, entry.backing_slot(), entry.len()).map_err(LoadError::Backing)?;
            if entry.kind() == Some(Kind::BackedPage) {
                if bytes.len() != PAGE_SIZE {
                    return Err(LoadError::Corrupt(DecompressError::corrupt(
                        "backed page is not a page long",
                    )));
                }
                page.as_bytes_mut().copy_from_slice(bytes);
                return Ok(None);
            }
            return decode(codecs, timing, entry.codec(), entry.variant(), bytes, page);
        }
    };
    decode(codecs, timing, codec, variant, bytes, page)
}

fn decode(
    codecs: &mut dyn Codecs,
    timing: bool,
    codec: u8,
    variant: u8,
    bytes: &[u8],
    page: &mut Page,
) -> Result<Option<u64>, LoadError> {
    let codec = codecs
        .codec(codec)
        .ok_or(LoadError::Corrupt(DecompressError::corrupt("entry names a codec slot with no codec")))?;
    let start = if timing { crate::timing::now() } else { 0 };
    codec.decompress(variant, bytes, page).map_err(LoadError::Corrupt)?;
    Ok(timing.then(|| crate::timing::now().saturating_sub(start)))
}

/// A store's codecs: the primary and the secondary slots.
pub(crate) struct Local<'a, C: ?Sized> {
    pub(crate) primary: &'a mut C,
    pub(crate) secondary: &'a mut [Option<SendCodec>; 3],
}

impl<C: EntryCodec> Codecs for Local<'_, C> {
    fn codec(&mut self, slot: u8) -> Option<&mut dyn EntryCodec> {
        match slot {
            0 => Some(&mut *self.primary),
            s => match self.secondary.get_mut(usize::from(s) - 1) {
                Some(Some(c)) => Some(&mut **c),
                _ => None,
            },
        }
    }
}

/// A compressed page store keyed by `u64`: zram as a library.
///
/// Pages are checked for same-fill (kept as the value alone), compressed with the codec
/// under a budget of the huge threshold (pages that do not fit are kept raw), and the
/// streams kept in an [`xvmalloc::Pool`]. Storing over a key replaces the old page and
/// frees it; a failed store leaves everything as it was.
///
/// ```
/// use pagecodec::{Page, Raw};
/// use pagestore::{PageStore, StoreConfig};
///
/// let mut store = PageStore::new(Raw);
/// let mut page = Page::zeroed();
/// page.as_bytes_mut()[..5].copy_from_slice(b"hello");
/// store.store(7, &page)?;
/// store.store(8, &Page::filled(0xAA))?; // same-filled: no allocation
/// let mut back = Page::zeroed();
/// store.load(7, &mut back)?;
/// assert_eq!(back, page);
/// let stats = store.stats();
/// assert_eq!((stats.pages, stats.mm.same_pages, stats.mm.huge_pages), (2, 1, 1)); // Raw never fits 3/4 page
/// assert!(store.remove(7));
/// assert!(!store.contains(7));
/// # Ok::<(), Box<dyn core::error::Error>>(())
/// ```
pub struct PageStore<C: EntryCodec, S: PageSource = HeapSource> {
    codec: C,
    config: StoreConfig,
    shelf: Shelf<S>,
    ops: OpRecorder,
    scratch: Box<[u8; PAGE_SIZE]>,
    secondary: [Option<SendCodec>; 3],
    tier: Option<Tier>,
}

impl<C: EntryCodec> PageStore<C, HeapSource> {
    /// A store with the default policies on the heap.
    pub fn new(codec: C) -> Self {
        Self::with_config(codec, StoreConfig::default())
    }

    /// A store with `config` on the heap.
    pub fn with_config(codec: C, config: StoreConfig) -> Self {
        Self::with_source(codec, HeapSource::new(), config)
    }
}

impl<C: EntryCodec, S: PageSource> PageStore<C, S> {
    /// A store taking its memory from `source`.
    pub fn with_source(codec: C, source: S, config: StoreConfig) -> Self {
        let budget = match config.mem_limit {
            Some(limit) => Budget::Local(limit),
            None => Budget::Unlimited,
        };
        PageStore {
            codec,
            config,
            shelf: Shelf::new(source, budget, config.dense_keys, config.clock.is_some()),
            ops: OpRecorder::new(),
            scratch: Box::new([0; PAGE_SIZE]),
            secondary: [None, None, None],
            tier: None,
        }
    }

    /// Stores `page` under `key`, replacing any older page.
    ///
    /// # Errors
    ///
    /// [`StoreError::Full`] at the memory limit, [`StoreError::OutOfMemory`] when the page
    /// source fails. Either way every stored page, the older page under `key` included,
    /// stays intact.
    pub fn store(&mut self, key: u64, page: &Page) -> Result<(), StoreError> {
        let (prepared, outcome) = prepare(&mut self.codec, &self.config, page, &mut self.scratch);
        self.ops.record_store(outcome);
        let freed = self.shelf.insert(key, prepared, self.config.now())?;
        self.release(freed);
        Ok(())
    }

    fn release(&mut self, slot: Option<u32>) {
        if let (Some(slot), Some(tier)) = (slot, self.tier.as_mut()) {
            tier.release(slot);
        }
    }

    /// Loads the page stored under `key` into `page`.
    ///
    /// # Errors
    ///
    /// [`LoadError::NotFound`], [`LoadError::Corrupt`] if the codec rejects the stream,
    /// [`LoadError::Backing`] if a written-back page cannot be read back intact (the page
    /// stays on the backing store; a later load may succeed).
    pub fn load(&mut self, key: u64, page: &mut Page) -> Result<(), LoadError> {
        let now = self.config.now();
        let stored = self.shelf.get_touch(key, now).ok_or(LoadError::NotFound)?;
        let mut codecs = Local { primary: &mut self.codec, secondary: &mut self.secondary };
        if let Some(t) = restore(&mut codecs, self.config.timing, key, stored, self.tier.as_mut(), page)? {
            self.ops.record_decompress(t);
        }
        Ok(())
    }

    /// Removes the page under `key` (freeing its backing slot, if written back); returns
    /// whether there was one.
    pub fn remove(&mut self, key: u64) -> bool {
        match self.shelf.remove(key) {
            Some(slot) => {
                self.release(slot);
                true
            }
            None => false,
        }
    }

    /// Puts `codec` in secondary slot `slot` (1-3, zram's `recomp_algorithm` priorities)
    /// for [`recompress`](Self::recompress).
    ///
    /// # Errors
    ///
    /// [`TierError::BadSlot`] outside 1-3, [`TierError::InUse`] if the slot has a codec
    /// already (pages may depend on it).
    pub fn set_secondary(&mut self, slot: u8, codec: SendCodec) -> Result<(), TierError> {
        let cell = &mut self.secondary[secondary_index(slot)?];
        if cell.is_some() {
            return Err(TierError::InUse(slot));
        }
        *cell = Some(codec);
        Ok(())
    }

    /// Attaches the backing store pages are written back to.
    ///
    /// # Errors
    ///
    /// [`TierError::InUse`] if one is attached already.
    pub fn set_backing(&mut self, backing: SendBacking, config: BackingConfig) -> Result<(), TierError> {
        if self.tier.is_some() {
            return Err(TierError::InUse(0));
        }
        self.tier = Some(Tier::new(backing, config));
        Ok(())
    }

    /// Marks every stored page idle (zram's `echo all > idle`); a store or load of a page
    /// clears its mark.
    pub fn mark_idle(&mut self) {
        self.shelf.mark_idle();
    }

    /// Re-encodes the selected pages kept in memory with the secondary codec in `slot` and
    /// keeps the new stream where it is smaller (and within the huge threshold, so huge
    /// pages it fits leave the huge class). Only pages whose stored size is at least
    /// `size_threshold` bytes (huge pages count 4096) and that an earlier slot wrote are
    /// tried, at most `max_pages` of them; a page the codec cannot shrink is marked
    /// incompressible and not tried again until it is stored anew.
    ///
    /// ```
    /// use pagecodec::{Page, PageCodec, Raw};
    /// use pagestore::{PageStore, Selection};
    ///
    /// // A "codec" that keeps only the first 100 bytes, for pages that are zero after them.
    /// struct Head;
    /// impl PageCodec for Head {
    ///     fn name(&self) -> &'static str { "head" }
    ///     fn max_compressed_len(&self) -> usize { 100 }
    ///     fn compress(&mut self, p: &Page, out: &mut [u8]) -> Result<usize, pagecodec::CompressError> {
    ///         out.get_mut(..100).ok_or(pagecodec::CompressError::Incompressible)?.copy_from_slice(&p.as_bytes()[..100]);
    ///         Ok(100)
    ///     }
    ///     fn decompress(&mut self, i: &[u8], p: &mut Page) -> Result<(), pagecodec::DecompressError> {
    ///         p.as_bytes_mut().fill(0);
    ///         p.as_bytes_mut()[..i.len().min(100)].copy_from_slice(&i[..i.len().min(100)]);
    ///         Ok(())
    ///     }
    /// }
    ///
    /// let mut store = PageStore::new(Raw); // Raw never fits: every page is huge
    /// store.set_secondary(1, Box::new(Head))?;
    /// let mut page = Page::zeroed();
    /// page.as_bytes_mut()[..3].copy_from_slice(b"abc");
    /// store.store(1, &page)?;
    /// store.mark_idle();
    /// let report = store.recompress(Selection::Idle, 0, u64::MAX, 1)?;
    /// assert_eq!((report.recompressed, report.left_huge, report.bytes_after), (1, 1, 100));
    /// let mut back = Page::filled(1);
    /// store.load(1, &mut back)?;
    /// assert_eq!(back, page);
    /// assert_eq!(store.stats().mm.huge_pages, 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`TierError::BadSlot`] or [`TierError::NoCodec`]; nothing is changed then.
    pub fn recompress(
        &mut self,
        selection: Selection,
        size_threshold: usize,
        max_pages: u64,
        slot: u8,
    ) -> Result<RecompressReport, TierError> {
        if self.secondary[secondary_index(slot)?].is_none() {
            return Err(TierError::NoCodec(slot));
        }
        let job = RecompressJob {
            selection,
            now: self.config.now(),
            threshold: size_threshold,
            huge_threshold: self.config.huge_threshold.clamp(1, PAGE_SIZE),
            slot,
            max: max_pages,
            timing: self.config.timing,
        };
        let mut report = RecompressReport::default();
        let mut codecs = Local { primary: &mut self.codec, secondary: &mut self.secondary };
        self.shelf.recompress(&job, &mut codecs, &mut report);
        Ok(report)
    }

    /// Writes the selected pages kept in memory (not same-filled ones) to the backing
    /// store, at most `limit` of them, `batch` at a time: each batch is written, flushed
    /// (and read back if [`BackingConfig::verify`]) before its pages leave memory. The
    /// first failure stops the writeback; the pages of the failed batch stay in memory,
    /// intact. Loads read written-back pages transparently; `remove` and overwrites free
    /// their slots for reuse.
    ///
    /// ```
    /// use pagecodec::{Page, Raw};
    /// use pagestore::{BackingConfig, MemBacking, PageStore, Selection};
    ///
    /// let mut store = PageStore::new(Raw);
    /// store.set_backing(Box::new(MemBacking::new(16)), BackingConfig::default())?;
    /// let mut page = Page::zeroed();
    /// page.as_bytes_mut()[0] = 1;
    /// store.store(5, &page)?;
    /// let report = store.writeback(Selection::Huge, 100, 8)?;
    /// assert_eq!((report.written, report.error), (1, None));
    /// assert_eq!(store.stats().mm.mem_used_total, 0); // nothing left in memory
    /// let mut back = Page::zeroed();
    /// store.load(5, &mut back)?;
    /// assert_eq!(back, page);
    /// assert_eq!(store.stats().tiers.backing.reads, 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`TierError::NoBacking`]. Failures of the backing store are in the report.
    pub fn writeback(
        &mut self,
        selection: Selection,
        limit: u64,
        batch: usize,
    ) -> Result<WritebackReport, TierError> {
        let tier = self.tier.as_mut().ok_or(TierError::NoBacking)?;
        let job = WritebackJob { selection, now: self.config.now(), limit, batch };
        let mut report = WritebackReport::default();
        let mut codecs = Local { primary: &mut self.codec, secondary: &mut self.secondary };
        self.shelf.writeback(&job, tier, &mut codecs, &mut report);
        Ok(report)
    }

    /// Whether a page is stored under `key`.
    pub fn contains(&self, key: u64) -> bool {
        self.shelf.contains(key)
    }

    /// Pages stored.
    pub fn len(&self) -> usize {
        self.shelf.len()
    }

    /// Whether no page is stored.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Compacts the allocator (moves streams out of sparse chunks, releases them).
    pub fn compact(&mut self) -> CompactReport {
        self.shelf.compact()
    }

    /// zram's `mm_stat`, the paper's codec table and the allocator's statistics.
    pub fn stats(&self) -> StoreStats {
        StoreStats {
            pages: self.len() as u64,
            mm: self.shelf.mm(),
            codec: self.ops.table(self.codec.name(), self.config.timing),
            pool: self.shelf.pool.stats(),
            tiers: self.tier_stats(),
        }
    }

    fn tier_stats(&self) -> TierStats {
        let mut codecs = self.shelf.slots();
        codecs[0].codec = self.codec.name();
        for (s, c) in codecs[1..].iter_mut().zip(self.secondary.iter()) {
            s.codec = c.as_ref().map_or("", |c| c.name());
        }
        let mut backing = self.tier.as_ref().map(Tier::stat).unwrap_or_default();
        backing.pages = self.shelf.backed_pages();
        TierStats { codecs, backing }
    }

    /// The name of the attached backing store, if any.
    pub fn backing_name(&self) -> Option<&'static str> {
        self.tier.as_ref().map(Tier::name)
    }

    /// The policies.
    pub fn config(&self) -> &StoreConfig {
        &self.config
    }

    /// The codec.
    pub fn codec(&self) -> &C {
        &self.codec
    }

    /// The page source given at construction.
    pub fn source(&self) -> &S {
        &self.shelf.pool.source().inner
    }

    /// Checks the allocator's structures (see [`xvmalloc::Pool::validate`]); for tests.
    ///
    /// # Errors
    ///
    /// The first inconsistency found.
    pub fn validate(&self) -> Result<(), &'static str> {
        self.shelf.pool.validate()
    }
}

impl<C: EntryCodec, S: PageSource> core::fmt::Debug for PageStore<C, S> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("PageStore")
            .field("codec", &self.codec.name())
            .field("config", &self.config)
            .field("pages", &self.len())
            .finish_non_exhaustive()
    }
}
