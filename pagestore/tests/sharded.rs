//! The thread-safe store: 4 threads on shared keys, pages carrying their key and a
//! checksum; fault injection through a failing page source.
#![cfg(feature = "std")]

mod common;

use std::collections::HashMap;
use std::sync::Arc;

use common::{Flaky, TrimTrailing};
use pagecodec::{PAGE_SIZE, Page};
use pagestore::{Hybrid, LoadError, ShardedStore, StoreConfig, StoreError};

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
