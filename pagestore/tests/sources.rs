//! Page sources that misbehave within their contract (chunks of another size than asked,
//! panics) must not move the memory limit: afterwards the store holds exactly as many pages
//! as with an honest source.

mod common;

use std::panic::{AssertUnwindSafe, catch_unwind};

use common::TrimTrailing;
use pagecodec::Page;
use pagecodec::testing::Rng;
use pagestore::{HeapSource, PageSource, PageStore, ShardedStore, StoreConfig, StoreError};

/// 64 KiB: two of the store's 32 KiB chunks.
const LIMIT: u64 = 64 * 1024;

/// What the source does on its first `count` calls to `acquire`.
#[derive(Clone, Copy, Debug)]
enum Misbehaviour {
    HalfSize,
    DoubleSize,
    Panic,
}

/// A heap source that misbehaves on its first `count` requests, then is honest.
struct Odd {
    inner: HeapSource,
    what: Misbehaviour,
    count: u32,
    /// The size asked for: honest chunks have it, odd ones never.
    size: usize,
}

impl Odd {
    fn new(what: Misbehaviour, count: u32) -> Self {
        Odd { inner: HeapSource::new(), what, count, size: 0 }
    }
}

impl PageSource for Odd {
    type Chunk = Box<[u8]>;
    fn acquire(&mut self, size: usize) -> Option<Box<[u8]>> {
        self.size = size;
        if self.count == 0 {
            return self.inner.acquire(size);
        }
        self.count -= 1;
        match self.what {
            Misbehaviour::HalfSize => Some(vec![0; size / 2].into_boxed_slice()),
            Misbehaviour::DoubleSize => Some(vec![0; size * 2].into_boxed_slice()),
            Misbehaviour::Panic => panic!("the source fails by panicking"),
        }
    }
    fn release(&mut self, chunk: Box<[u8]>) {
        // The odd chunks never came from the heap source: just drop them.
        if chunk.len() == self.size {
            self.inner.release(chunk)
        }
    }
}

/// A page of random bytes: incompressible, so it is kept raw (4 KiB each).
fn random_page(key: u64) -> Page {
    let mut page = Page::zeroed();
    Rng::new(key + 1).fill(page.as_bytes_mut());
    page
}

/// Stores raw pages under new keys until the limit refuses one (the store's own failures,
/// from a misbehaving source, are retried with the next key); returns how many fit.
fn fill(mut store: impl FnMut(u64, &Page) -> Result<(), StoreError>) -> usize {
    let mut stored = 0;
    for key in 0..1000 {
        match catch_unwind(AssertUnwindSafe(|| store(key, &random_page(key)))) {
            Ok(Ok(())) => stored += 1,
            Ok(Err(StoreError::Full)) => return stored,
            Ok(Err(StoreError::OutOfMemory)) | Err(_) => {}
            Ok(Err(e)) => panic!("{e}"),
        }
    }
    panic!("the limit never refused a store");
}

fn config() -> StoreConfig {
    StoreConfig::default().with_mem_limit(LIMIT)
}

fn honest_capacity() -> usize {
    let mut store = PageStore::with_source(TrimTrailing, HeapSource::new(), config());
    fill(|key, page| store.store(key, page))
}

#[test]
fn page_store_limit_survives_odd_chunks() {
    let honest = honest_capacity();
    assert!(honest >= 14, "{honest} raw pages in 64 KiB");
    for what in [Misbehaviour::HalfSize, Misbehaviour::DoubleSize, Misbehaviour::Panic] {
        let mut store = PageStore::with_source(TrimTrailing, Odd::new(what, 3), config());
        let got = fill(|key, page| store.store(key, page));
        assert_eq!(got, honest, "{what:?}: the budget moved");
        assert!(store.stats().mm.mem_used_total <= LIMIT, "{what:?}");
        store.validate().unwrap();
    }
}

#[test]
fn sharded_store_limit_survives_odd_chunks() {
    let honest = honest_capacity();
    for what in [Misbehaviour::HalfSize, Misbehaviour::DoubleSize, Misbehaviour::Panic] {
        // One shard, so that the shard that met the odd chunks is the one filled.
        let store = ShardedStore::with_sources(
            1,
            Box::new(|| Box::new(TrimTrailing)),
            || Odd::new(what, 3),
            config(),
        );
        let got = fill(|key, page| store.store(key, page));
        assert_eq!(got, honest, "{what:?}: the shared budget moved");
        assert!(store.stats().mm.mem_used_total <= LIMIT, "{what:?}");
    }
}
