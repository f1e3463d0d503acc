//! The single-threaded store.

use alloc::boxed::Box;

use pagecodec::{PAGE_SIZE, Page, same_filled};
use xvmalloc::{CompactReport, HeapSource, PageSource};

use crate::shelf::{Budget, Prepared, Shelf, Stored, fill};
use crate::stats::{OpRecorder, Outcome};
use crate::{EntryCodec, LoadError, StoreError, StoreStats};

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
    /// Keys below this are kept in a flat table of 16 bytes per key allocated when the store
    /// is made, as zram's table is for its disk size; other keys in a B-tree (about 50 bytes
    /// per stored key). `PageStore` only: a `ShardedStore` spreads keys over its shards.
    /// Default: 0 (every key in the B-tree).
    pub dense_keys: usize,
}

impl Default for StoreConfig {
    fn default() -> Self {
        StoreConfig {
            same_filled: true,
            huge_threshold: PAGE_SIZE * 3 / 4,
            mem_limit: None,
            timing: false,
            dense_keys: 0,
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
pub(crate) fn restore<C: EntryCodec + ?Sized>(
    codec: &mut C,
    timing: bool,
    stored: Stored<'_>,
    page: &mut Page,
) -> Result<Option<u64>, LoadError> {
    match stored {
        Stored::Same(value) => {
            fill(page, value);
            Ok(None)
        }
        Stored::Huge(bytes) => {
            page.as_bytes_mut().copy_from_slice(bytes);
            Ok(None)
        }
        Stored::Compressed { variant, bytes } => {
            let start = if timing { crate::timing::now() } else { 0 };
            codec.decompress(variant, bytes, page).map_err(LoadError::Corrupt)?;
            Ok(timing.then(|| crate::timing::now().saturating_sub(start)))
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
            shelf: Shelf::new(source, budget, config.dense_keys),
            ops: OpRecorder::new(),
            scratch: Box::new([0; PAGE_SIZE]),
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
        self.shelf.insert(key, prepared)
    }

    /// Loads the page stored under `key` into `page`.
    ///
    /// # Errors
    ///
    /// [`LoadError::NotFound`], or [`LoadError::Corrupt`] if the codec rejects the stream.
    pub fn load(&mut self, key: u64, page: &mut Page) -> Result<(), LoadError> {
        let stored = self.shelf.get(key).ok_or(LoadError::NotFound)?;
        if let Some(t) = restore(&mut self.codec, self.config.timing, stored, page)? {
            self.ops.record_decompress(t);
        }
        Ok(())
    }

    /// Removes the page under `key`; returns whether there was one.
    pub fn remove(&mut self, key: u64) -> bool {
        self.shelf.remove(key)
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
        }
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
