//! The thread-safe store: 4 threads on shared keys, pages carrying their key and a
//! checksum; fault injection through a failing page source.
#![cfg(feature = "std")]

mod common;

use std::collections::HashMap;
use std::sync::Arc;

use common::{Flaky, TrimBoth, TrimLeading, TrimTrailing, mixed_page};
use pagecodec::{PAGE_SIZE, Page};
use pagestore::{
    BackingConfig, FaultyBacking, Hybrid, LoadError, MemBacking, PageStore, Selection, ShardedStore,
    StoreConfig, StoreError, WriteFault,
};

const THREADS: u64 = 4;

/// A page holding `key`, a version, a length-varying body and a checksum of all of it.
fn stamped(key: u64, version: u64) -> Page {
    let mut page = Page::zeroed();
    let mut rng = pagecodec::testing::Rng::new(key ^ version.rotate_left(32));
    let body = 16 + rng.below(PAGE_SIZE as u64 - 32) as usize;
    let bytes = page.as_bytes_mut();
    bytes[..8].copy_from_slice(&key.to_le_bytes());
    bytes[8..16].copy_from_slice(&version.to_le_bytes());
    rng.fill(&mut bytes[16..body]);
    let sum = checksum(&bytes[..PAGE_SIZE - 8]);
    bytes[PAGE_SIZE - 8..].copy_from_slice(&sum.to_le_bytes());
    page
}

fn checksum(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3))
}

/// Checks a loaded page's stamp; returns its version.
fn verify(key: u64, page: &Page) -> u64 {
    let bytes = page.as_bytes();
    assert_eq!(u64::from_le_bytes(bytes[..8].try_into().unwrap()), key, "page of another key");
    let sum = u64::from_le_bytes(bytes[PAGE_SIZE - 8..].try_into().unwrap());
    assert_eq!(sum, checksum(&bytes[..PAGE_SIZE - 8]), "corrupted page for key {key}");
    u64::from_le_bytes(bytes[8..16].try_into().unwrap())
}

/// Each thread writes the keys `k % THREADS == t` (so it knows their last version) and
/// reads any key (whose stamp must be intact).
fn hammer<S>(store: Arc<ShardedStore<S>>, ops: u64, keys: u64) -> u64
where
    S: pagestore::PageSource + Send + 'static,
    S::Chunk: Send,
{
    let threads: Vec<_> = (0..THREADS)
        .map(|t| {
            let store = Arc::clone(&store);
            std::thread::spawn(move || {
                let mut rng = pagecodec::testing::Rng::new(t + 1);
                let mut mine: HashMap<u64, u64> = HashMap::new();
                let mut failures = 0u64;
                let mut page = Page::zeroed();
                for version in 1..=ops / THREADS {
                    let key = rng.below(keys / THREADS) * THREADS + t;
                    match rng.below(10) {
                        0..=4 => match store.store(key, &stamped(key, version)) {
                            Ok(()) => {
                                mine.insert(key, version);
                            }
                            Err(StoreError::OutOfMemory | StoreError::Full) => failures += 1,
                            Err(e) => panic!("{e}"),
                        },
                        5 => assert_eq!(store.remove(key), mine.remove(&key).is_some()),
                        6 => {
                            let any = rng.below(keys);
                            if store.load(any, &mut page).is_ok() {
                                verify(any, &page);
                            }
                        }
                        _ => match mine.get(&key) {
                            Some(&v) => {
                                store.load(key, &mut page).unwrap();
                                assert_eq!(verify(key, &page), v, "lost the last store of key {key}");
                            }
                            None => assert_eq!(store.load(key, &mut page), Err(LoadError::NotFound)),
                        },
                    }
                    if version % 5000 == 0 && t == 0 {
                        store.compact();
                    }
                }
                (mine, failures)
            })
        })
        .collect();
    let mut failures = 0;
    let mut all = HashMap::new();
    for t in threads {
        let (mine, f) = t.join().unwrap();
        failures += f;
        all.extend(mine);
    }
    // Nothing lost, nothing mixed up.
    store.validate().unwrap();
    assert_eq!(store.len(), all.len());
    let mut page = Page::zeroed();
    for (&key, &version) in &all {
        store.load(key, &mut page).unwrap();
        assert_eq!(verify(key, &page), version);
    }
    let stats = store.stats();
    assert_eq!(stats.pages, all.len() as u64);
    assert_eq!(stats.mm.orig_data_size, all.len() as u64 * 4096);
    failures
}

const OPS: u64 = if cfg!(miri) { 120 } else { 120_000 };

#[test]
fn four_threads_lose_nothing_and_mix_nothing_up() {
    let store = ShardedStore::new(16, Box::new(|| Box::new(TrimTrailing)), StoreConfig::default());
    assert_eq!(store.shards(), 16);
    let failures = hammer(Arc::new(store), OPS, 4096);
    assert_eq!(failures, 0);
}

#[test]
fn hybrid_codecs_per_thread() {
    let factory =
        Box::new(|| Box::new(Hybrid::new(TrimTrailing, pagecodec::Raw, 1024)) as pagestore::SendCodec);
    let store = ShardedStore::new(3, factory, StoreConfig::default());
    assert_eq!(store.shards(), 4, "rounded to a power of two");
    hammer(Arc::new(store), OPS / 4, 512);
}

#[test]
fn failing_sources_fail_stores_cleanly() {
    let mut seeds = 0u64;
    let store = ShardedStore::with_sources(
        8,
        Box::new(|| Box::new(TrimTrailing)),
        move || {
            seeds += 1;
            Flaky::new(0x9E37_79B9_7F4A_7C15u64.wrapping_mul(seeds) & 0x5555_5555_5555_5555)
        },
        StoreConfig::default(),
    );
    let failures = hammer(Arc::new(store), OPS / 4, 1024);
    assert!(failures > 0, "the fault injection never fired");
}

#[test]
fn shared_memory_limit() {
    // Small enough that the run (tiny under Miri) must hit it: 8 shards need 8 chunks.
    let limit = if cfg!(miri) { 4 * 16384 } else { 64 * 16384 };
    let config = StoreConfig::default().with_mem_limit(limit);
    let store = Arc::new(ShardedStore::new(8, Box::new(|| Box::new(TrimTrailing)), config));
    let failures = hammer(Arc::clone(&store), OPS / 4, 2048);
    assert!(failures > 0, "the limit was never reached");
    let mm = store.stats().mm;
    assert!(mm.mem_used_total <= limit, "{mm:?}");
    assert_eq!(mm.mem_limit, limit);
}

/// A sharded store's statistics are its shards' summed: the same pages stored, loaded,
/// removed, marked idle, recompressed and compacted in a `PageStore` and in a `ShardedStore`
/// give the same reports, counts, sizes and per-slot figures (timing off); with one shard,
/// the same memory and allocator figures too. And the codecs go back to their pools: one
/// thread's operations make no codec beyond the first of each kind.
#[test]
#[cfg_attr(miri, ignore = "arithmetic on statistics, no unsafe code: minutes under Miri")]
fn sharded_statistics_add_up_to_one_stores() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static MADE: [AtomicUsize; 2] = [AtomicUsize::new(0), AtomicUsize::new(0)];
    for shards in [1, 8] {
        MADE.iter().for_each(|m| m.store(0, Ordering::Relaxed));
        let config = StoreConfig::default();
        fn hybrid() -> Hybrid<TrimTrailing, TrimLeading> {
            Hybrid::new(TrimTrailing, TrimLeading, 1024)
        }
        let mut one = PageStore::with_config(hybrid(), config);
        one.set_secondary(1, Box::new(TrimBoth)).unwrap();
        let primary = || {
            MADE[0].fetch_add(1, Ordering::Relaxed);
            Box::new(hybrid()) as pagestore::SendCodec
        };
        let mut sharded = ShardedStore::new(shards, Box::new(primary), config);
        let secondary = || {
            MADE[1].fetch_add(1, Ordering::Relaxed);
            Box::new(TrimBoth) as pagestore::SendCodec
        };
        sharded.set_secondary(1, Box::new(secondary)).unwrap();
        assert!(one.is_empty() && sharded.is_empty());
        let keys = 300;
        let mut page = Page::zeroed();
        for key in 0..keys {
            let stored = mixed_page(key as u8, key);
            one.store(key, &stored).unwrap();
            sharded.store(key, &stored).unwrap();
            if key % 3 == 0 {
                one.load(key, &mut page).unwrap();
                sharded.load(key, &mut page).unwrap();
            }
            if key % 7 == 0 && key > 0 {
                assert!(one.remove(key / 2) && sharded.remove(key / 2));
            }
        }
        assert!(!one.is_empty() && !sharded.is_empty());
        assert!(sharded.contains(1) && !sharded.contains(3) && !sharded.contains(keys), "key 3 was removed");
        one.mark_idle();
        sharded.mark_idle();
        // At most 5 attempts across the shards, then the rest of the idle pages: the first
        // five differ between the stores, the pages tried in all do not.
        let sum = |r: [pagestore::RecompressReport; 2]| {
            let f = |g: fn(&pagestore::RecompressReport) -> u64| g(&r[0]) + g(&r[1]);
            [
                f(|r| r.attempted),
                f(|r| r.recompressed),
                f(|r| r.left_huge),
                f(|r| r.bytes_before),
                f(|r| r.bytes_after),
            ]
        };
        let mut reports = [[pagestore::RecompressReport::default(); 2]; 2];
        for (i, max) in [5, u64::MAX].into_iter().enumerate() {
            reports[0][i] = one.recompress(Selection::Idle, 0, max, 1).unwrap();
            reports[1][i] = sharded.recompress(Selection::Idle, 0, max, 1).unwrap();
        }
        assert_eq!((reports[0][0].attempted, reports[1][0].attempted), (5, 5));
        assert_eq!(sum(reports[0]), sum(reports[1]));
        let (a, b) = (one.compact(), sharded.compact());
        assert!(b.objects_moved > 0, "{b:?}");
        if shards == 1 {
            assert_eq!(a, b);
        }
        let (a, b) = (one.stats(), sharded.stats());
        assert_eq!(a.pages, b.pages);
        assert_eq!(a.codec, b.codec);
        assert_eq!(a.tiers, b.tiers);
        assert!(
            a.tiers.codecs[1].recompressed > 0 && a.codec.same_filled > 0 && a.codec.by_variant[1] > 0,
            "{a:?}"
        );
        if shards == 1 {
            assert_eq!((a.mm, a.pool), (b.mm, b.pool));
        } else {
            let mm = |s: &pagestore::StoreStats| {
                (s.mm.orig_data_size, s.mm.compr_data_size, s.mm.same_pages, s.mm.huge_pages)
            };
            assert_eq!(mm(&a), mm(&b));
            assert_eq!((a.pool.payload_bytes, a.pool.objects), (b.pool.payload_bytes, b.pool.objects));
        }
        let made = MADE.each_ref().map(|m| m.load(Ordering::Relaxed));
        assert_eq!(made, [1, 1], "{shards} shards: codecs made");
    }
    // With timing on, the shards' recompression times add up to the report's.
    let mut timed =
        ShardedStore::new(4, Box::new(|| Box::new(TrimTrailing)), StoreConfig::default().with_timing(true));
    timed.set_secondary(1, Box::new(|| Box::new(TrimLeading))).unwrap();
    for key in 0..16 {
        timed.store(key, &mixed_page(2, key)).unwrap();
    }
    let r = timed.recompress(Selection::All, 0, u64::MAX, 1).unwrap();
    assert!(r.attempted == 16 && r.time > 0, "{r:?}");
    assert_eq!(r.time, timed.stats().tiers.codecs[1].recompress_time);
}

/// A sharded writeback stops at the first failed write: the other shards' pages are not
/// tried. `Debug` names the store and its shards.
#[test]
fn sharded_writeback_stops_at_the_first_failure() {
    let mut store = ShardedStore::new(4, Box::new(|| Box::new(TrimTrailing)), StoreConfig::default());
    let backing = FaultyBacking::new(MemBacking::new(64)).fail_writes(u64::MAX, WriteFault::Io);
    store.set_backing(Box::new(backing), BackingConfig::default()).unwrap();
    for key in 0..if cfg!(miri) { 8 } else { 32 } {
        store.store(key, &mixed_page(1, key)).unwrap();
    }
    let r = store.writeback(Selection::All, u64::MAX, 1).unwrap();
    assert_eq!((r.written, r.failed), (0, 1), "{r:?}");
    assert!(r.error.is_some());
    assert_eq!(store.stats().tiers.backing.write_failures, 1);
    let shown = format!("{store:?}");
    assert!(shown.contains("ShardedStore") && shown.contains("shards: 4"), "{shown}");
    // The same when the batch's flush fails: the first shard's batch, not the others'.
    let mut store = ShardedStore::new(4, Box::new(|| Box::new(TrimTrailing)), StoreConfig::default());
    let backing = FaultyBacking::new(MemBacking::new(64)).fail_flushes(u64::MAX);
    store.set_backing(Box::new(backing), BackingConfig::default()).unwrap();
    let keys = if cfg!(miri) { 8 } else { 32 };
    for key in 0..keys {
        store.store(key, &mixed_page(1, key)).unwrap();
    }
    let r = store.writeback(Selection::All, u64::MAX, 1000).unwrap();
    assert!(r.written == 0 && r.failed > 0 && r.failed < keys, "{r:?}");
}

/// A codec whose streams cannot be read back: recompression counts each attempt as failed,
/// shard by shard, and changes nothing.
#[test]
fn unreadable_streams_fail_recompression() {
    #[derive(Default)]
    struct WriteOnly;
    impl pagecodec::PageCodec for WriteOnly {
        fn name(&self) -> &'static str {
            "write-only"
        }
        fn max_compressed_len(&self) -> usize {
            PAGE_SIZE
        }
        fn compress(&mut self, page: &Page, out: &mut [u8]) -> Result<usize, pagecodec::CompressError> {
            TrimTrailing.compress(page, out)
        }
        fn decompress(&mut self, _input: &[u8], _page: &mut Page) -> Result<(), pagecodec::DecompressError> {
            Err(pagecodec::DecompressError::corrupt("write-only"))
        }
    }
    let mut one = PageStore::new(WriteOnly);
    one.set_secondary(1, Box::new(TrimLeading)).unwrap();
    let mut sharded = ShardedStore::new(4, Box::new(|| Box::new(WriteOnly)), StoreConfig::default());
    sharded.set_secondary(1, Box::new(|| Box::new(TrimLeading))).unwrap();
    let mut page = Page::zeroed();
    for key in 0..8 {
        page.as_bytes_mut()[..100].fill(key as u8 + 1);
        one.store(key, &page).unwrap();
        sharded.store(key, &page).unwrap();
    }
    for r in
        [one.recompress(Selection::All, 0, u64::MAX, 1), sharded.recompress(Selection::All, 0, u64::MAX, 1)]
    {
        let r = r.unwrap();
        assert_eq!((r.attempted, r.failed, r.recompressed), (8, 8, 0), "{r:?}");
    }
}
