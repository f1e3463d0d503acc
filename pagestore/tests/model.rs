//! Model-based property test: random store / load / remove / overwrite / compact on mixed
//! page classes, mirrored in a HashMap; every load returns the last stored bytes and the
//! statistics match the model.

mod common;

use std::collections::HashMap;

use common::{Flaky, TrimLeading, TrimTrailing, mixed_page};
use pagecodec::{PAGE_SIZE, Page, same_filled};
use pagestore::{EntryCodec, Hybrid, LoadError, PageSource, PageStore, StoreConfig, StoreError};
use proptest::prelude::*;

#[derive(Clone, Debug)]
enum Op {
    Store { key: u64, kind: u8, seed: u64 },
    Load(u64),
    Remove(u64),
    Compact,
}

fn op() -> impl Strategy<Value = Op> {
    let key = 0u64..24;
    prop_oneof![
        6 => (key.clone(), any::<u8>(), any::<u64>()).prop_map(|(key, kind, seed)| Op::Store { key, kind, seed }),
        3 => key.clone().prop_map(Op::Load),
        2 => key.prop_map(Op::Remove),
        1 => Just(Op::Compact),
    ]
}

/// How the model expects a page to be kept: (same-filled, huge, stream length).
type Expect = fn(&Page, usize) -> (bool, bool, usize);

fn expect_trailing(page: &Page, threshold: usize) -> (bool, bool, usize) {
    if same_filled(page).is_some() {
        return (true, false, 0);
    }
    let n = TrimTrailing::stream_len(page);
    if n == 0 || n > threshold { (false, true, PAGE_SIZE) } else { (false, false, n) }
}

fn expect_hybrid(page: &Page, threshold: usize) -> (bool, bool, usize) {
    if same_filled(page).is_some() {
        return (true, false, 0);
    }
    let a = TrimTrailing::stream_len(page);
    if a > 0 && a < 1024 && a <= threshold {
        return (false, false, a);
    }
    let b = TrimLeading::stream_len(page);
    if b == 0 || b > threshold { (false, true, PAGE_SIZE) } else { (false, false, b) }
}

/// Runs `ops` against the store and the model; returns how many stores were refused
/// (`Full` or `OutOfMemory`), each of which must have left the store as it was.
fn run<C: EntryCodec, S: PageSource>(mut store: PageStore<C, S>, expect: Expect, ops: Vec<Op>) -> usize {
    let threshold = store.config().huge_threshold;
    let mut model: HashMap<u64, Page> = HashMap::new();
    let mut failures = 0;
    for op in ops {
        match op {
            Op::Store { key, kind, seed } => {
                let page = mixed_page(kind, seed);
                match store.store(key, &page) {
                    Ok(()) => {
                        model.insert(key, page);
                    }
                    Err(StoreError::OutOfMemory | StoreError::Full) => failures += 1,
                    Err(e) => panic!("{e}"),
                }
            }
            Op::Load(key) => {
                let mut page = Page::filled(0xEE);
                match model.get(&key) {
                    Some(want) => {
                        store.load(key, &mut page).unwrap();
                        assert_eq!(&page, want, "key {key}");
                    }
                    None => assert_eq!(store.load(key, &mut page), Err(LoadError::NotFound)),
                }
            }
            Op::Remove(key) => assert_eq!(store.remove(key), model.remove(&key).is_some()),
            Op::Compact => {
                store.compact();
            }
        }
        // Every page reads back; statistics match the model.
        store.validate().unwrap();
        assert_eq!(store.len(), model.len());
        let (mut same, mut huge, mut bytes) = (0, 0, 0);
        for (&key, want) in &model {
            assert!(store.contains(key));
            let mut page = Page::zeroed();
            store.load(key, &mut page).unwrap();
            assert_eq!(&page, want, "key {key}");
            let (s, h, n) = expect(want, threshold);
            same += u64::from(s);
            huge += u64::from(h);
            bytes += n as u64;
        }
        let stats = store.stats();
        assert_eq!(stats.pages, model.len() as u64);
        assert_eq!(stats.mm.orig_data_size, model.len() as u64 * 4096);
        assert_eq!((stats.mm.same_pages, stats.mm.huge_pages), (same, huge));
        assert_eq!(stats.mm.compr_data_size, bytes);
        assert_eq!(stats.pool.payload_bytes, bytes);
        assert_eq!(stats.pool.objects, model.len() as u64 - same);
        assert_eq!(stats.mm.mem_used_total, stats.pool.held_bytes);
        assert!(stats.mm.mem_used_max >= stats.mm.mem_used_total);
        if let Some(limit) = store.config().mem_limit {
            assert!(stats.mm.mem_used_total <= limit);
        }
    }
    failures
}

/// Stores of 24 random (incompressible, hence raw) pages under distinct keys, then `ops`:
/// 96 KiB of raw pages, more than the failure-path tests allow, so their failure path runs.
fn filled_then(ops: Vec<Op>) -> Vec<Op> {
    let mut all: Vec<Op> = (0..24).map(|key| Op::Store { key, kind: 3, seed: key }).collect();
    all.extend(ops);
    all
}

const CASES: u32 = if cfg!(miri) { 2 } else { 48 };
const OPS: usize = if cfg!(miri) { 10 } else { 120 };

proptest! {
    #![proptest_config(ProptestConfig {
        cases: CASES,
        // Miri isolates the file system: no failure persistence there.
        failure_persistence: if cfg!(miri) { None } else { ProptestConfig::default().failure_persistence },
        ..ProptestConfig::default()
    })]

    #[test]
    fn plain_codec_matches_model(ops in prop::collection::vec(op(), 1..OPS)) {
        prop_assert_eq!(run(PageStore::new(TrimTrailing), expect_trailing, ops), 0);
    }

    #[test]
    fn dyn_codec_with_low_threshold_matches_model(ops in prop::collection::vec(op(), 1..OPS)) {
        let codec: Box<dyn pagecodec::PageCodec> = Box::new(TrimTrailing);
        let config = StoreConfig::default().with_huge_threshold(1000);
        prop_assert_eq!(run(PageStore::with_config(codec, config), expect_trailing, ops), 0);
    }

    #[test]
    fn dense_and_sparse_keys_match_model(ops in prop::collection::vec(op(), 1..OPS)) {
        // Keys 0..12 in the flat table, 12..24 in the B-tree.
        let config = StoreConfig::default().with_dense_keys(12);
        prop_assert_eq!(run(PageStore::with_config(TrimTrailing, config), expect_trailing, ops), 0);
    }

    #[test]
    fn hybrid_matches_model(ops in prop::collection::vec(op(), 1..OPS)) {
        prop_assert_eq!(run(PageStore::new(Hybrid::new(TrimTrailing, TrimLeading, 1024)), expect_hybrid, ops), 0);
    }

    #[test]
    fn memory_limit_keeps_everything_intact(ops in prop::collection::vec(op(), 1..OPS)) {
        let config = StoreConfig::default().with_mem_limit(3 * 16384);
        let refused = run(PageStore::with_config(TrimTrailing, config), expect_trailing, filled_then(ops));
        prop_assert!(refused > 0, "the limit never refused a store");
    }

    #[test]
    fn failing_source_keeps_everything_intact(pattern in any::<u64>(), ops in prop::collection::vec(op(), 1..OPS)) {
        // Bit 0 set: the very first chunk request fails, so the failure path runs.
        let store = PageStore::with_source(TrimTrailing, Flaky::new(pattern | 1), StoreConfig::default());
        let refused = run(store, expect_trailing, filled_then(ops));
        prop_assert!(refused > 0, "the source never failed a store");
    }
}
