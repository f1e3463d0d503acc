//! Model check of `ShardedStore`'s shared memory budget and codec pool with loom: every
//! interleaving of two threads storing, loading and removing pages, under a limit that fits
//! one chunk. Built only with `--cfg loom`:
//!
//! ```sh
//! RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom cargo test -p pagestore --test loom --release
//! ```
#![cfg(loom)]

use std::sync::atomic::{AtomicUsize, Ordering};

use loom::sync::Arc;
use pagecodec::Page;
use pagecodec::testing::Rng;
use pagestore::{LoadError, ShardedStore, StoreConfig, StoreError};

/// One 32 KiB chunk of the store's pool: seven raw pages in one shard, none in a second.
const LIMIT: u64 = 32 * 1024;

fn random_page(seed: u64) -> Page {
    let mut page = Page::zeroed();
    Rng::new(seed + 1).fill(page.as_bytes_mut());
    page
}

#[test]
fn shared_budget_and_codec_pool() {
    static EXPLORED: AtomicUsize = AtomicUsize::new(0);
    static CODECS: AtomicUsize = AtomicUsize::new(0);
    loom::model(|| {
        EXPLORED.fetch_add(1, Ordering::Relaxed);
        let config = StoreConfig::default().with_mem_limit(LIMIT).with_timing(false);
        let factory: pagestore::CodecFactory = Box::new(|| {
            CODECS.fetch_add(1, Ordering::Relaxed);
            Box::new(pagecodec::Raw)
        });
        let store = Arc::new(ShardedStore::new(2, factory, config));
        // Keys 0 and 1 land in different shards (Fibonacci hashing of the key).
        let threads: Vec<_> = (0..2u64)
            .map(|key| {
                let store = Arc::clone(&store);
                loom::thread::spawn(move || {
                    let page = random_page(key);
                    let stored = store.store(key, &page);
                    let mut back = Page::zeroed();
                    match stored {
                        Ok(()) => {
                            assert_eq!(store.load(key, &mut back), Ok(()));
                            assert!(back == page, "key {key}: another page came back");
                        }
                        Err(StoreError::Full) => {
                            assert_eq!(store.load(key, &mut back), Err(LoadError::NotFound));
                        }
                        Err(e) => panic!("key {key}: {e}"),
                    }
                    stored.is_ok()
                })
            })
            .collect();
        let stored: Vec<bool> = threads.into_iter().map(|t| t.join().unwrap()).collect();
        // The budget holds one chunk: exactly one shard got it.
        assert_eq!(stored.iter().filter(|&&s| s).count(), 1, "{stored:?}");
        let mm = store.stats().mm;
        assert!(mm.mem_used_total <= LIMIT);
        // Removing the stored page gives the chunk back, and the budget with it: the other
        // key now fits.
        let (kept, other) = if stored[0] { (0, 1) } else { (1, 0) };
        assert!(store.remove(kept));
        assert_eq!(store.stats().mm.mem_used_total, 0);
        assert_eq!(store.store(other, &random_page(other)), Ok(()));
    });
    println!(
        "loom explored {} interleavings; codecs made per run: {:.2} on average",
        EXPLORED.load(Ordering::Relaxed),
        CODECS.load(Ordering::Relaxed) as f64 / EXPLORED.load(Ordering::Relaxed) as f64
    );
}
