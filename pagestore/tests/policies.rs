//! Each policy and statistic on its own.

mod common;

use common::{TrimLeading, TrimTrailing, mixed_page};
use pagecodec::{CompressError, DecompressError, PAGE_SIZE, Page, PageCodec, Raw};
use pagestore::{Hybrid, LoadError, PageStore, StoreConfig, StoreError, TimeUnit};

/// Records the budget it was given and refuses everything.
#[derive(Default)]
struct BudgetSpy(Vec<usize>);

impl PageCodec for BudgetSpy {
    fn name(&self) -> &'static str {
        "spy"
    }
    fn max_compressed_len(&self) -> usize {
        PAGE_SIZE
    }
    fn compress(&mut self, _page: &Page, out: &mut [u8]) -> Result<usize, CompressError> {
        self.0.push(out.len());
        Err(CompressError::Incompressible)
    }
    fn decompress(&mut self, _input: &[u8], _page: &mut Page) -> Result<(), DecompressError> {
        Err(DecompressError::corrupt("spy"))
    }
}

/// Compresses like TrimTrailing but rejects every stream on the way back.
struct BrokenDecoder;

impl PageCodec for BrokenDecoder {
    fn name(&self) -> &'static str {
        "broken"
    }
    fn max_compressed_len(&self) -> usize {
        PAGE_SIZE
    }
    fn compress(&mut self, page: &Page, out: &mut [u8]) -> Result<usize, CompressError> {
        TrimTrailing.compress(page, out)
    }
    fn decompress(&mut self, _input: &[u8], _page: &mut Page) -> Result<(), DecompressError> {
        Err(DecompressError::Truncated)
    }
}

fn sparse_page(nonzero: usize) -> Page {
    let mut page = Page::zeroed();
    for (i, b) in page.as_bytes_mut()[..nonzero].iter_mut().enumerate() {
        *b = (i % 251) as u8 + 1;
    }
    page
}

#[test]
fn codec_gets_the_huge_threshold_as_budget() {
    let mut store = PageStore::new(BudgetSpy::default());
    store.store(1, &sparse_page(10)).unwrap();
    let config = StoreConfig::default().with_huge_threshold(1000);
    let mut small = PageStore::with_config(BudgetSpy::default(), config);
    small.store(1, &sparse_page(10)).unwrap();
    assert_eq!(store.codec().0, [3072]);
    assert_eq!(small.codec().0, [1000]);
    assert_eq!(store.stats().mm.huge_pages, 1);
    let mut back = Page::zeroed();
    store.load(1, &mut back).unwrap();
    assert_eq!(back, sparse_page(10), "huge pages are kept raw and never decoded");
    assert_eq!(StoreConfig::default().with_huge_threshold(0).huge_threshold, 1);
    assert_eq!(StoreConfig::default().with_huge_threshold(9999).huge_threshold, PAGE_SIZE);
}

#[test]
fn huge_threshold_is_inclusive() {
    let mut store = PageStore::new(TrimTrailing);
    store.store(1, &sparse_page(3072)).unwrap();
    store.store(2, &sparse_page(3073)).unwrap();
    let mm = store.stats().mm;
    assert_eq!((mm.huge_pages, mm.compr_data_size), (1, 3072 + 4096));
}

#[test]
fn same_filled_pages_take_no_memory_unless_switched_off() {
    let mut store = PageStore::new(TrimTrailing);
    for (key, byte) in [(1, 0u8), (2, 0xFF), (3, 0x5A)] {
        store.store(key, &Page::filled(byte)).unwrap();
    }
    let stats = store.stats();
    assert_eq!((stats.mm.same_pages, stats.mm.mem_used_total, stats.pool.objects), (3, 0, 0));
    assert_eq!(stats.codec.same_filled, 3);
    let mut page = Page::zeroed();
    store.load(3, &mut page).unwrap();
    assert_eq!(page, Page::filled(0x5A));

    let mut off = PageStore::with_config(TrimTrailing, StoreConfig::default().with_same_filled(false));
    off.store(1, &Page::filled(0x5A)).unwrap();
    off.store(2, &Page::zeroed()).unwrap(); // empty stream: kept raw
    let mm = off.stats().mm;
    assert_eq!((mm.same_pages, mm.huge_pages), (0, 2));
    off.load(2, &mut page).unwrap();
    assert_eq!(page, Page::zeroed());
}

#[test]
fn hybrid_records_the_variant_per_entry() {
    let mut store = PageStore::new(Hybrid::new(TrimTrailing, TrimLeading, 1024));
    let front = sparse_page(100); // TrimTrailing: 100 bytes
    let mut back = Page::zeroed(); // TrimTrailing: 4096 bytes, TrimLeading: 100
    back.as_bytes_mut()[PAGE_SIZE - 100..].fill(7);
    store.store(1, &front).unwrap();
    store.store(2, &back).unwrap();
    let stats = store.stats();
    assert_eq!(stats.codec.by_variant, [1, 1]);
    assert_eq!(stats.codec.codec, "hybrid");
    assert_eq!(stats.mm.compr_data_size, 200);
    let mut page = Page::zeroed();
    store.load(2, &mut page).unwrap();
    assert_eq!(page, back, "decoded with the fallback");
    store.load(1, &mut page).unwrap();
    assert_eq!(page, front, "decoded with the first codec");
    assert_eq!(pagestore::EntryCodec::variant_name(store.codec(), 1), "trim-leading");
}

#[test]
fn full_store_keeps_the_old_page_under_the_same_key() {
    // One 32 KiB chunk of the store's pool: seven raw pages.
    let config = StoreConfig::default().with_mem_limit(32768);
    let mut store = PageStore::with_config(TrimTrailing, config);
    let pages: Vec<Page> = (0..8).map(|i| mixed_page(3, i)).collect(); // random: huge
    for (key, page) in pages.iter().take(7).enumerate() {
        store.store(key as u64, page).unwrap();
    }
    assert_eq!(store.store(9, &pages[7]), Err(StoreError::Full));
    assert_eq!(store.store(0, &pages[7]), Err(StoreError::Full), "overwrite needs room first");
    let mut page = Page::zeroed();
    store.load(0, &mut page).unwrap();
    assert_eq!(page, pages[0]);
    assert!(!store.contains(9));
    let mm = store.stats().mm;
    assert_eq!((mm.mem_limit, mm.mem_used_total, mm.mem_used_max), (32768, 32768, 32768));
    // Same-filled pages need no memory, so they still fit.
    store.store(9, &Page::zeroed()).unwrap();
    // Freeing makes room again.
    assert!(store.remove(1));
    store.store(10, &pages[7]).unwrap();
}

#[test]
fn corrupt_streams_and_missing_keys_are_errors() {
    let mut store = PageStore::new(BrokenDecoder);
    store.store(1, &sparse_page(50)).unwrap();
    let mut page = Page::zeroed();
    assert_eq!(store.load(1, &mut page), Err(LoadError::Corrupt(DecompressError::Truncated)));
    assert_eq!(store.load(2, &mut page), Err(LoadError::NotFound));
    assert!(!store.remove(2));
    assert!(LoadError::NotFound.to_string().contains("no page"));
    assert!(LoadError::Corrupt(DecompressError::Truncated).to_string().contains("truncated"));
    assert!(StoreError::Full.to_string().contains("full"));
    assert!(StoreError::OutOfMemory.to_string().contains("memory"));
    let e: &dyn core::error::Error = &LoadError::Corrupt(DecompressError::Truncated);
    assert!(e.source().is_some());
}

#[test]
fn seed_table_and_timing_switch() {
    let mut store = PageStore::with_config(TrimTrailing, StoreConfig::default().with_timing(true));
    for (key, n) in [(1, 100), (2, 300), (3, 2000), (4, 4000)] {
        store.store(key, &sparse_page(n)).unwrap();
    }
    store.store(5, &Page::zeroed()).unwrap();
    let mut page = Page::zeroed();
    for key in 1..=5 {
        store.load(key, &mut page).unwrap();
    }
    let t = store.stats().codec;
    assert_eq!((t.pages, t.same_filled, t.incompressible), (5, 1, 1));
    assert_eq!((t.compressed_size.count, t.compressed_size.min, t.compressed_size.max), (3, 100, 2000));
    assert!((t.compressed_size.mean - 800.0).abs() < 1e-9);
    assert_eq!(t.input_bytes, 4 * 4096);
    assert_eq!(t.output_bytes, 100 + 300 + 2000 + 4096);
    assert!((t.ratio() - 16384.0 / 6496.0).abs() < 1e-9);
    assert!((t.compressed_fraction() - 6496.0 / 16384.0).abs() < 1e-9);
    assert!((t.incompressible_share() - 0.25).abs() < 1e-9);
    assert_eq!(t.compress_time.count, 4, "huge attempts are timed too");
    assert_eq!(t.decompress_time.count, 3, "only compressed pages are decoded");
    if cfg!(all(target_arch = "x86_64", not(miri))) {
        assert_eq!(t.time_unit, TimeUnit::TscTicks);
        assert!(
            t.compress_time.max >= t.compress_time.median && t.compress_time.median >= t.compress_time.min
        );
        assert!(t.compress_time.min > 0);
    }

    // Off by default.
    let mut quiet = PageStore::new(Raw);
    quiet.store(1, &sparse_page(10)).unwrap();
    let t = quiet.stats().codec;
    assert_eq!((t.time_unit, t.compress_time.count), (TimeUnit::None, 0));
}

#[test]
fn compaction_passes_through_to_the_allocator() {
    let mut store = PageStore::new(TrimTrailing);
    let n = if cfg!(miri) { 40 } else { 400 };
    for key in 0..n {
        store.store(key, &sparse_page(500 + (key as usize * 37) % 2000)).unwrap();
    }
    for key in (0..n).filter(|k| k % 3 != 0) {
        store.remove(key);
    }
    let before = store.stats();
    let report = store.compact();
    let after = store.stats();
    assert!(report.pages_released > 0);
    assert_eq!(after.mm.pages_compacted, report.pages_released);
    assert!(after.mm.mem_used_total < before.mm.mem_used_total);
    let mut page = Page::zeroed();
    for key in (0..n).filter(|k| k % 3 == 0) {
        store.load(key, &mut page).unwrap();
        assert_eq!(page, sparse_page(500 + (key as usize * 37) % 2000));
    }
}

/// The small accessors: emptiness, `Debug`, clocks compared by function, the huge threshold
/// clamped to 1..=4096, and the tier errors' messages.
#[test]
fn accessors_clocks_thresholds_and_messages() {
    let mut store = PageStore::new(TrimTrailing);
    assert!(store.is_empty());
    store.store(1, &mixed_page(1, 1)).unwrap();
    assert!(!store.is_empty());
    let shown = format!("{store:?}");
    assert!(
        shown.starts_with("PageStore {") && shown.contains("trim-trailing") && shown.contains("pages: 1"),
        "{shown}"
    );
    fn zero() -> u64 {
        0
    }
    fn one() -> u64 {
        1
    }
    assert_eq!(pagestore::Clock(zero), pagestore::Clock(zero));
    assert_ne!(pagestore::Clock(zero), pagestore::Clock(one));
    let huge = |bytes| StoreConfig::default().with_huge_threshold(bytes).huge_threshold;
    assert_eq!([huge(0), huge(1), huge(4096), huge(4097)], [1, 1, 4096, 4096]);
    let messages = [
        pagestore::TierError::BadSlot(4),
        pagestore::TierError::NoCodec(2),
        pagestore::TierError::InUse(1),
        pagestore::TierError::NoBacking,
    ]
    .map(|e| e.to_string());
    assert!(messages[0].contains("slot 4") && messages[1].contains("slot 2"), "{messages:?}");
    assert!(
        messages.iter().enumerate().all(|(i, m)| !m.is_empty() && !messages[..i].contains(m)),
        "{messages:?}"
    );
    // A plain codec names its one variant after itself; `Hybrid` names both.
    use pagestore::EntryCodec;
    assert_eq!(EntryCodec::variant_name(&TrimTrailing, 0), "trim-trailing");
    let hybrid = Hybrid::new(TrimTrailing, TrimLeading, 1024);
    assert_eq!([hybrid.variant_name(0), hybrid.variant_name(1)], ["trim-trailing", "trim-leading"]);
}
