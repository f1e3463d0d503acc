//! Arbitrary operation sequences on a `PageStore` (each codec, random policies, memory
//! limit and source limit) against a shadow map of the pages stored: every load gives the
//! page last stored under its key, failed stores change nothing, removes and contains
//! agree with the model, compaction keeps every page, and the statistics and the
//! allocator's structures stay consistent.

use std::collections::BTreeMap;

use crate::PageRecipe;
use arbitrary::Arbitrary;
use lzokit::{Lzo1x, LzoRle};
use pagecodec::{PAGE_SIZE, Page, Raw, same_filled};
use pagestore::{EntryCodec, HeapSource, Hybrid, LoadError, PageStore, StoreConfig, StoreError};
use wkdm::Wkdm;

#[derive(Arbitrary, Debug)]
enum Op {
    Store { key: u8, page: PageRecipe },
    Load { key: u8 },
    Remove { key: u8 },
    Contains { key: u8 },
    Compact,
}

#[derive(Arbitrary, Debug)]
struct Input {
    codec: u8,
    same_filled: bool,
    huge_threshold: u16,
    /// Memory limit in 4 KiB pages (0 = none).
    mem_limit_pages: u8,
    /// Page source limit in 16 KiB chunks (0 = none).
    source_chunks: u8,
    ops: Vec<Op>,
}

fn check_all<C: EntryCodec>(store: &PageStore<C>, model: &BTreeMap<u64, Page>, config: &StoreConfig) {
    store.validate().expect("allocator structures inconsistent");
    assert_eq!(store.len(), model.len());
    let stats = store.stats();
    assert_eq!(stats.pages, model.len() as u64);
    assert_eq!(stats.mm.orig_data_size, (model.len() * PAGE_SIZE) as u64);
    let same = model.values().filter(|p| same_filled(p).is_some()).count() as u64;
    assert_eq!(stats.mm.same_pages, if config.same_filled { same } else { 0 });
    assert_eq!(stats.mm.mem_used_total, stats.pool.held_bytes);
    assert_eq!(stats.mm.mem_used_total, store.source().held_bytes() as u64);
    if let Some(limit) = config.mem_limit {
        assert!(stats.mm.mem_used_total <= limit, "memory limit exceeded");
    }
    assert!(stats.mm.compr_data_size <= stats.mm.orig_data_size);
}

/// `key` loads the model's page into `page` (first filled with junk by the caller), or is
/// not found when the model has none.
fn check_key<C: EntryCodec>(
    store: &mut PageStore<C>,
    model: &BTreeMap<u64, Page>,
    key: u64,
    page: &mut Page,
) {
    match model.get(&key) {
        Some(expected) => {
            store.load(key, page).expect("stored page does not load");
            assert!(*page == *expected, "wrong page under key {key}");
        }
        None => assert_eq!(store.load(key, page), Err(LoadError::NotFound)),
    }
}

fn run_with<C: EntryCodec>(codec: C, input: &Input) {
    let mut config = StoreConfig::default()
        .with_same_filled(input.same_filled)
        .with_huge_threshold(usize::from(input.huge_threshold) % (PAGE_SIZE + 1))
        .with_timing(false);
    if input.mem_limit_pages != 0 {
        config = config.with_mem_limit(u64::from(input.mem_limit_pages) * 4096);
    }
    let source = match input.source_chunks {
        0 => HeapSource::new(),
        n => HeapSource::with_limit(usize::from(n) * 16384),
    };
    let mut store = PageStore::with_source(codec, source, config);
    let mut model: BTreeMap<u64, Page> = BTreeMap::new();
    let mut page = Page::zeroed();
    for (step, op) in input.ops.iter().enumerate() {
        match op {
            Op::Store { key, page: recipe } => {
                let key = u64::from(*key);
                let new = recipe.page();
                match store.store(key, &new) {
                    Ok(()) => {
                        model.insert(key, new);
                    }
                    Err(StoreError::Full) => assert!(config.mem_limit.is_some(), "Full without a limit"),
                    Err(StoreError::OutOfMemory) => {
                        assert!(input.source_chunks != 0, "out of memory without a source limit")
                    }
                    Err(e) => panic!("unexpected store error {e:?}"),
                }
                // Whatever happened, the key holds the model's page (the old one on failure).
                check_key(&mut store, &model, key, &mut page);
            }
            Op::Load { key } => {
                let key = u64::from(*key);
                page = Page::filled(step as u8);
                check_key(&mut store, &model, key, &mut page);
            }
            Op::Remove { key } => {
                let key = u64::from(*key);
                assert_eq!(store.remove(key), model.remove(&key).is_some());
            }
            Op::Contains { key } => {
                let key = u64::from(*key);
                assert_eq!(store.contains(key), model.contains_key(&key));
            }
            Op::Compact => {
                store.compact();
                check_all(&store, &model, &config);
            }
        }
        if step % 8 == 7 {
            check_all(&store, &model, &config);
        }
    }
    check_all(&store, &model, &config);
    for (key, expected) in &model {
        store.load(*key, &mut page).expect("stored page does not load");
        assert!(page == *expected, "wrong page under key {key}");
    }
    for key in model.keys() {
        assert!(store.remove(*key));
    }
    assert!(store.is_empty());
    assert_eq!(store.stats().mm.mem_used_total, 0, "an empty store still holds memory");
}

/// One input, as the fuzz target runs it (bytes that do not decode are skipped).
pub fn run(data: &[u8]) {
    let Some(input) = crate::decode::<Input>(data) else { return };
    match input.codec % 5 {
        0 => run_with(Lzo1x::default(), &input),
        1 => run_with(LzoRle::default(), &input),
        2 => run_with(Wkdm::default(), &input),
        3 => run_with(Hybrid::new(Wkdm::default(), Lzo1x::default(), 2048), &input),
        _ => run_with(Raw, &input),
    }
}
