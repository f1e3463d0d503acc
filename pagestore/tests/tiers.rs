//! Beyond RAM: idle marking, recompression with secondary codecs and writeback to a
//! backing store that fails (I/O errors, short, torn and full writes, failed flushes,
//! failed and corrupted reads), interleaved with store / load / remove / overwrite /
//! compact and mirrored in a HashMap. Nothing is lost: every load gives the last stored
//! page or, for a written-back page the backing store mangled, a typed error, never other
//! bytes.

mod common;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};

use common::{TrimBoth, TrimLeading, TrimTrailing, mixed_page};
use pagecodec::{CompressError, DecompressError, PAGE_SIZE, Page, PageCodec, same_filled};
use pagestore::{
    Backing, BackingConfig, BackingError, Clock, FaultyBacking, LoadError, MemBacking, PageStore, ReadFault,
    Selection, StoreConfig, TierError, WriteFault,
};
use proptest::prelude::*;

#[derive(Clone, Debug)]
enum Op {
    Store { key: u64, kind: u8, seed: u64 },
    Load(u64),
    Remove(u64),
    Compact,
    MarkIdle,
    Tick(u64),
    Recompress { sel: Selection, threshold: usize, max: u64, slot: u8 },
    Writeback { sel: Selection, limit: u64, batch: usize },
}

const KEYS: u64 = 24;

fn selection() -> impl Strategy<Value = Selection> {
    prop_oneof![
        Just(Selection::Idle),
        (0u64..40).prop_map(Selection::IdleFor),
        Just(Selection::Huge),
        Just(Selection::Incompressible),
        (0..KEYS).prop_map(Selection::Key),
        Just(Selection::All),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    let key = 0..KEYS;
    prop_oneof![
        6 => (key.clone(), any::<u8>(), any::<u64>()).prop_map(|(key, kind, seed)| Op::Store { key, kind, seed }),
        3 => key.clone().prop_map(Op::Load),
        2 => key.prop_map(Op::Remove),
        1 => Just(Op::Compact),
        1 => Just(Op::MarkIdle),
        1 => (1u64..20).prop_map(Op::Tick),
        2 => (selection(), 0usize..4097, 0u64..30, 0u8..5)
            .prop_map(|(sel, threshold, max, slot)| Op::Recompress { sel, threshold, max, slot }),
        3 => (selection(), 0u64..30, 0usize..6).prop_map(|(sel, limit, batch)| Op::Writeback { sel, limit, batch }),
    ]
}

/// How a backing store may fail.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Faults {
    /// Loud failures only (errors returned): no page may be lost.
    Loud,
    /// Silent torn writes and corrupted reads, with verification: no page may be lost.
    SilentVerified,
    /// Silent torn writes without verification: a torn page's load is a checksum error.
    SilentUnverified,
}

fn backing(
    faults: Faults,
    patterns: [u64; 3],
    which: u8,
    slots: usize,
) -> (FaultyBacking<MemBacking>, BackingConfig) {
    // A read pattern that is not all ones: a retried read succeeds within 64 tries.
    let reads = patterns[1] & !(1 << (patterns[2] % 64));
    let mem = MemBacking::new(slots);
    match faults {
        Faults::Loud => {
            let fault = [WriteFault::Io, WriteFault::Short, WriteFault::Full][usize::from(which % 3)];
            let b = FaultyBacking::new(mem)
                .fail_writes(patterns[0], fault)
                .fail_reads(reads, ReadFault::Io)
                .fail_flushes(patterns[2] & 0x0101_0101_0101_0101);
            (b, BackingConfig::default().with_pages(which & 4 != 0))
        }
        Faults::SilentVerified => {
            let b = FaultyBacking::new(mem)
                .fail_writes(patterns[0], WriteFault::Torn)
                .fail_reads(reads, ReadFault::Corrupt);
            (b, BackingConfig::default().with_verify(true).with_pages(which & 4 != 0))
        }
        Faults::SilentUnverified => {
            let b = FaultyBacking::new(mem).fail_writes(patterns[0], WriteFault::Torn);
            (b, BackingConfig::default().with_pages(which & 4 != 0))
        }
    }
}

/// Loads `key`, retrying transient read faults; checks the bytes.
fn load_checked<C: pagestore::EntryCodec>(
    store: &mut PageStore<C>,
    key: u64,
    want: Option<&Page>,
    faults: Faults,
    lost: &mut Vec<u64>,
) {
    let mut page = Page::filled(0xEE);
    let Some(want) = want else {
        assert_eq!(store.load(key, &mut page), Err(LoadError::NotFound));
        return;
    };
    for _ in 0..65 {
        match store.load(key, &mut page) {
            Ok(()) => {
                assert_eq!(&page, want, "key {key}: other bytes");
                return;
            }
            Err(LoadError::Backing(BackingError::Io { .. })) => assert_eq!(faults, Faults::Loud),
            Err(LoadError::Backing(BackingError::Checksum)) => {
                assert_ne!(faults, Faults::Loud);
                if faults == Faults::SilentUnverified {
                    // A torn slot stays torn: the page is gone, and says so.
                    lost.push(key);
                    return;
                }
            }
            Err(e) => panic!("key {key}: {e}"),
        }
    }
    panic!("key {key}: never loaded");
}

static NOW: AtomicU64 = AtomicU64::new(0);

fn now() -> u64 {
    NOW.load(Ordering::Relaxed)
}

/// Runs `ops`; returns (pages written back, write failures, pages recompressed).
fn run(
    faults: Faults,
    patterns: [u64; 3],
    which: u8,
    slots: usize,
    threshold: usize,
    ops: Vec<Op>,
) -> (u64, u64, u64) {
    let config =
        StoreConfig::default().with_huge_threshold(threshold).with_clock(Clock(now)).with_dense_keys(12);
    let mut store = PageStore::with_config(TrimTrailing, config);
    store.set_secondary(1, Box::new(TrimLeading)).unwrap();
    store.set_secondary(2, Box::new(TrimBoth)).unwrap();
    assert_eq!(store.set_secondary(2, Box::new(TrimBoth)), Err(TierError::InUse(2)));
    assert_eq!(store.set_secondary(4, Box::new(TrimBoth)), Err(TierError::BadSlot(4)));
    assert_eq!(store.writeback(Selection::All, 1, 1), Err(TierError::NoBacking));
    let (b, bc) = backing(faults, patterns, which, slots);
    store.set_backing(Box::new(b), bc).unwrap();
    let mut model: HashMap<u64, Page> = HashMap::new();
    let mut lost: Vec<u64> = Vec::new();
    let (mut written, mut recompressed) = (0, 0);
    for op in ops {
        let before = store.stats();
        match op {
            Op::Store { key, kind, seed } => {
                let page = mixed_page(kind, seed);
                // No memory limit: stores always succeed.
                store.store(key, &page).unwrap();
                model.insert(key, page);
                lost.retain(|&k| k != key);
            }
            Op::Load(key) => {
                if !lost.contains(&key) {
                    load_checked(&mut store, key, model.get(&key), faults, &mut lost);
                }
            }
            Op::Remove(key) => {
                assert_eq!(store.remove(key), model.remove(&key).is_some());
                lost.retain(|&k| k != key);
            }
            Op::Compact => {
                store.compact();
            }
            Op::MarkIdle => store.mark_idle(),
            Op::Tick(t) => {
                NOW.fetch_add(t, Ordering::Relaxed);
            }
            Op::Recompress { sel, threshold, max, slot } => match store.recompress(sel, threshold, max, slot)
            {
                Ok(r) => {
                    assert!(r.attempted <= max && r.recompressed <= r.attempted && r.failed == 0, "{r:?}");
                    assert!(r.bytes_after < r.bytes_before || r.recompressed == 0, "{r:?}");
                    let after = store.stats();
                    assert_eq!(
                        before.mm.compr_data_size - after.mm.compr_data_size,
                        r.bytes_before - r.bytes_after,
                        "{r:?}"
                    );
                    assert_eq!(before.mm.huge_pages - after.mm.huge_pages, r.left_huge);
                    let s = after.tiers.codecs[usize::from(slot)];
                    assert_eq!(s.codec, ["", "trim-leading", "trim-both", ""][usize::from(slot)]);
                    recompressed += r.recompressed;
                }
                Err(TierError::BadSlot(s)) => assert!(s == 0 || s > 3),
                Err(TierError::NoCodec(3)) => {}
                Err(e) => panic!("{e}"),
            },
            Op::Writeback { sel, limit, batch } => {
                let r = store.writeback(sel, limit, batch).unwrap();
                assert!(r.written <= limit, "{r:?}");
                assert_eq!(r.error.is_some(), r.failed > 0, "{r:?}");
                let after = store.stats();
                assert_eq!(after.tiers.backing.pages, before.tiers.backing.pages + r.written);
                written += r.written;
            }
        }
        check(&mut store, &model, faults, &mut lost);
    }
    let stats = store.stats();
    (written, stats.tiers.backing.write_failures, recompressed)
}

/// Every page loads (or, after a silent torn write without verification, fails with a
/// checksum error); the counters add up.
fn check<C: pagestore::EntryCodec>(
    store: &mut PageStore<C>,
    model: &HashMap<u64, Page>,
    faults: Faults,
    lost: &mut Vec<u64>,
) {
    store.validate().unwrap();
    assert_eq!(store.len(), model.len());
    for (&key, want) in model {
        assert!(store.contains(key));
        if !lost.contains(&key) {
            load_checked(store, key, Some(want), faults, lost);
        }
    }
    let s = store.stats();
    let same = model.values().filter(|p| same_filled(p).is_some()).count() as u64;
    let bd = s.tiers.backing;
    assert_eq!(s.pages, model.len() as u64);
    assert_eq!(s.mm.orig_data_size, model.len() as u64 * 4096);
    assert_eq!(s.mm.same_pages, same, "same-filled pages never move");
    assert_eq!(s.pool.objects, s.pages - same - bd.pages, "every page is in exactly one place");
    assert_eq!(s.mm.compr_data_size, s.pool.payload_bytes);
    let streams: u64 = s.tiers.codecs.iter().map(|c| c.pages).sum();
    let stream_bytes: u64 = s.tiers.codecs.iter().map(|c| c.compr_bytes).sum();
    assert_eq!(streams + s.mm.huge_pages, s.pool.objects);
    assert_eq!(stream_bytes + s.mm.huge_pages * 4096, s.mm.compr_data_size);
    assert_eq!(bd.slots_used, bd.pages, "no backing slot leaked");
    assert!(bd.slots_high <= bd.capacity);
    assert_eq!(s.mm.mem_used_total, s.pool.held_bytes);
}

const CASES: u32 = if cfg!(miri) { 2 } else { 48 };
const OPS: usize = if cfg!(miri) { 10 } else { 120 };

proptest! {
    #![proptest_config(ProptestConfig {
        cases: CASES,
        failure_persistence: if cfg!(miri) { None } else { ProptestConfig::default().failure_persistence },
        ..ProptestConfig::default()
    })]

    #[test]
    fn loud_backing_failures_lose_nothing(
        patterns in any::<[u64; 3]>(), which in any::<u8>(), slots in 4usize..40,
        threshold in prop_oneof![Just(3072usize), 500usize..4097], ops in prop::collection::vec(op(), 1..OPS),
    ) {
        run(Faults::Loud, patterns, which, slots, threshold, ops);
    }

    #[test]
    fn silent_faults_with_verification_lose_nothing(
        patterns in any::<[u64; 3]>(), which in any::<u8>(), slots in 4usize..40,
        ops in prop::collection::vec(op(), 1..OPS),
    ) {
        run(Faults::SilentVerified, patterns, which, slots, 3072, ops);
    }

    #[test]
    fn silent_torn_writes_are_errors_never_other_data(
        patterns in any::<[u64; 3]>(), which in any::<u8>(), ops in prop::collection::vec(op(), 1..OPS),
    ) {
        run(Faults::SilentUnverified, patterns, which, 64, 3072, ops);
    }
}

/// Many fixed sequences: the failure paths and the success paths all ran.
#[test]
fn fault_paths_and_tiers_are_exercised() {
    let mut totals = (0, 0, 0);
    for seed in 0..40u64 {
        let mut rng = pagecodec::testing::Rng::new(seed);
        let mut ops = Vec::new();
        for _ in 0..150 {
            let key = rng.below(KEYS);
            ops.push(match rng.below(10) {
                0..=3 => Op::Store { key, kind: rng.below(256) as u8, seed: rng.below(1 << 40) },
                4 => Op::Load(key),
                5 => Op::Remove(key),
                6 => Op::MarkIdle,
                7 => Op::Recompress {
                    sel: Selection::All,
                    threshold: 0,
                    max: 10,
                    slot: 1 + rng.below(2) as u8,
                },
                _ => Op::Writeback { sel: Selection::All, limit: 8, batch: 1 + rng.below(4) as usize },
            });
        }
        let patterns = [rng.below(u64::MAX) | 1, rng.below(u64::MAX), rng.below(u64::MAX)];
        let (w, f, r) = run(Faults::Loud, patterns, seed as u8, 32, 3072, ops);
        totals = (totals.0 + w, totals.1 + f, totals.2 + r);
    }
    let (written, failures, recompressed) = totals;
    assert!(written > 100 && failures > 20 && recompressed > 20, "{totals:?}");
}

/// Recompression page by page, exactly: which pages are attempted (not those below the size
/// threshold, already in the slot or a later one, same-filled, or marked by a failed
/// attempt), which streams are replaced (a smaller one within the huge threshold), the
/// report and the slot's figures.
#[test]
fn recompression_counts_exactly() {
    let page_with = |bytes: core::ops::Range<usize>| {
        let mut page = Page::zeroed();
        page.as_bytes_mut()[bytes].fill(5);
        page
    };
    let (start, end, middle) =
        (page_with(0..10), page_with(PAGE_SIZE - 10..PAGE_SIZE), page_with(1000..1100));
    let mut store = PageStore::with_config(TrimTrailing, StoreConfig::default());
    store.set_secondary(1, Box::new(TrimLeading)).unwrap();
    store.set_secondary(2, Box::new(TrimBoth)).unwrap();
    // Streams: key 0 10 bytes; key 1 huge (raw); key 2 1100 bytes. TrimLeading's would be
    // 4096, 10 and 3096 bytes; TrimBoth's 12, 12 and 102.
    store.store(0, &start).unwrap();
    store.store(1, &end).unwrap();
    store.store(2, &middle).unwrap();
    store.store(3, &Page::filled(1)).unwrap();
    // Key 8: a 1099-byte stream, just below the first threshold.
    let below = page_with(0..1099);
    store.store(8, &below).unwrap();
    let report = |r: pagestore::RecompressReport| {
        (r.attempted, r.recompressed, r.left_huge, r.failed, r.bytes_before, r.bytes_after)
    };
    let slot = |store: &PageStore<TrimTrailing>, i: usize| {
        let s = store.stats().tiers.codecs[i];
        (s.pages, s.compr_bytes, s.recompress_attempts, s.recompressed, s.left_huge, s.bytes_saved)
    };
    // Threshold 1100: keys 0 and 8 are below it; key 1 leaves the huge class; key 2
    // (exactly at the threshold) gets no smaller stream and is marked.
    let r = store.recompress(Selection::All, 1100, u64::MAX, 1).unwrap();
    assert_eq!(report(r), (2, 1, 1, 0, 4096, 10));
    assert_eq!(slot(&store, 1), (1, 10, 2, 1, 1, 4086));
    assert_eq!(store.stats().mm.huge_pages, 0);
    // Without a threshold keys 0 and 8 are tried: key 1 is in slot 1 already, key 2 marked.
    let r = store.recompress(Selection::All, 0, u64::MAX, 1).unwrap();
    assert_eq!(report(r), (2, 0, 0, 0, 0, 0));
    assert_eq!(slot(&store, 1), (1, 10, 4, 1, 1, 4086));
    // Slot 2 tries key 1 (from slot 1: 12 bytes are not fewer than 10) and a new key 4.
    store.store(4, &middle).unwrap();
    let r = store.recompress(Selection::All, 0, u64::MAX, 2).unwrap();
    assert_eq!(report(r), (2, 1, 0, 0, 1100, 102));
    assert_eq!(slot(&store, 2), (1, 102, 2, 1, 0, 998));
    assert_eq!(slot(&store, 1), (1, 10, 4, 1, 1, 4086));
    // At most `max` attempts; `Huge` selects only the huge page (7 holds a small stream).
    store.store(5, &end).unwrap();
    store.store(6, &end).unwrap();
    store.store(7, &middle).unwrap();
    assert_eq!(report(store.recompress(Selection::All, 0, 1, 1).unwrap()), (1, 1, 1, 0, 4096, 10));
    assert_eq!(report(store.recompress(Selection::Huge, 0, u64::MAX, 1).unwrap()), (1, 1, 1, 0, 4096, 10));
    for (key, page) in [(0, &start), (1, &end), (2, &middle), (4, &middle), (5, &end), (6, &end), (8, &below)]
    {
        let mut back = Page::zeroed();
        store.load(key, &mut back).unwrap();
        assert!(back == *page, "key {key}");
    }
    // A full store: the new stream cannot be allocated, the attempt fails, the page stays.
    let mut full = PageStore::with_config(TrimTrailing, StoreConfig::default().with_mem_limit(32 * 1024));
    full.set_secondary(1, Box::new(TrimLeading)).unwrap();
    full.store(0, &end).unwrap();
    let (mut key, mut len) = (1, PAGE_SIZE / 2);
    while len > 0 {
        let mut page = Page::zeroed();
        page.as_bytes_mut()[len - 1] = 1;
        match full.store(key, &page) {
            Ok(()) => key += 1,
            Err(_) => len /= 2,
        }
    }
    let r = full.recompress(Selection::Huge, 0, u64::MAX, 1).unwrap();
    assert_eq!(report(r), (1, 0, 0, 1, 0, 0));
    let mut back = Page::zeroed();
    full.load(0, &mut back).unwrap();
    assert!(back == end);
    // With timing on, the attempts' time goes to the report and the slot.
    let mut timed = PageStore::with_config(TrimTrailing, StoreConfig::default().with_timing(true));
    timed.set_secondary(1, Box::new(TrimLeading)).unwrap();
    timed.store(0, &end).unwrap();
    let r = timed.recompress(Selection::All, 0, u64::MAX, 1).unwrap();
    assert!(r.time > 0 && r.time == timed.stats().tiers.codecs[1].recompress_time, "{r:?}");
}

/// A codec that claims a stream of its field's length whatever its buffer (0, or more than the
/// buffer holds), and reads nothing back.
struct Claims(usize);

impl PageCodec for Claims {
    fn name(&self) -> &'static str {
        "claims"
    }
    fn max_compressed_len(&self) -> usize {
        PAGE_SIZE
    }
    fn compress(&mut self, _page: &Page, _out: &mut [u8]) -> Result<usize, CompressError> {
        Ok(self.0)
    }
    fn decompress(&mut self, _input: &[u8], _page: &mut Page) -> Result<(), DecompressError> {
        Err(DecompressError::corrupt("claims"))
    }
}

/// A secondary codec that reports an empty stream, or one longer than its buffer, replaces
/// nothing: the attempt marks the page, which loads as before.
#[test]
fn recompression_takes_no_impossible_stream_length() {
    for claimed in [0, PAGE_SIZE + 1] {
        let mut store = PageStore::new(TrimTrailing);
        store.set_secondary(1, Box::new(Claims(claimed))).unwrap();
        let page = mixed_page(1, 7);
        store.store(0, &page).unwrap();
        let r = store.recompress(Selection::All, 0, u64::MAX, 1).unwrap();
        assert_eq!((r.attempted, r.recompressed, r.failed), (1, 0, 0), "claimed {claimed}");
        let mut back = Page::zeroed();
        store.load(0, &mut back).unwrap();
        assert!(back == page, "claimed {claimed}");
    }
}

/// A memory backing store the test reads too.
#[derive(Clone)]
struct Shared(std::sync::Arc<std::sync::Mutex<MemBacking>>);

impl Backing for Shared {
    fn name(&self) -> &'static str {
        "shared"
    }
    fn slots(&self) -> u64 {
        self.0.lock().unwrap().slots()
    }
    fn write(&mut self, slot: u64, data: &[u8; PAGE_SIZE]) -> Result<(), BackingError> {
        self.0.lock().unwrap().write(slot, data)
    }
    fn read(&mut self, slot: u64, data: &mut [u8; PAGE_SIZE]) -> Result<(), BackingError> {
        self.0.lock().unwrap().read(slot, data)
    }
}

/// Writeback in batches, exactly: reports, what the slots hold (the stream, or with
/// `pages` the page), and the backing store's counters for writes, reads, failed flushes,
/// failed reads and checksum failures.
#[test]
fn writeback_and_backing_counters_exactly() {
    // TrimLeading's streams (the page from its first non-zero byte) differ from the pages.
    let page = |k: u64| {
        let mut p = Page::zeroed();
        p.as_bytes_mut()[3500 + k as usize..3600].fill(k as u8 + 1);
        p
    };
    for pages in [false, true] {
        let shared = Shared(std::sync::Arc::new(std::sync::Mutex::new(MemBacking::new(8))));
        let mut store = PageStore::with_config(TrimLeading, StoreConfig::default());
        store.set_backing(Box::new(shared.clone()), BackingConfig::default().with_pages(pages)).unwrap();
        for k in 0..6 {
            store.store(k, &page(k)).unwrap();
        }
        let r = store.writeback(Selection::All, 5, 2).unwrap();
        assert_eq!((r.written, r.batches, r.failed, r.error), (5, 3, 0, None), "pages {pages}");
        let mut slot = [0u8; PAGE_SIZE];
        for k in 0..5 {
            shared.0.lock().unwrap().read(k, &mut slot).unwrap();
            let (p, mut expected) = (page(k), [0u8; PAGE_SIZE]);
            if pages {
                expected = *p.as_bytes();
            } else {
                let n = TrimLeading::stream_len(&p);
                expected[..n].copy_from_slice(&p.as_bytes()[PAGE_SIZE - n..]);
            }
            assert!(slot == expected, "pages {pages}, slot {k}");
        }
        let mut back = Page::zeroed();
        for k in 0..6 {
            store.load(k, &mut back).unwrap();
            assert!(back == page(k), "pages {pages}, key {k}");
        }
        let bd = store.stats().tiers.backing;
        assert_eq!((bd.pages, bd.writes, bd.reads, bd.write_failures), (5, 5, 5, 0), "pages {pages}");
    }
    // A failed flush keeps the batch in memory and counts as a write failure.
    let faulty = FaultyBacking::new(MemBacking::new(8)).fail_flushes(0b01);
    let mut store = PageStore::with_config(TrimLeading, StoreConfig::default());
    store.set_backing(Box::new(faulty), BackingConfig::default()).unwrap();
    for k in 0..4 {
        store.store(k, &page(k)).unwrap();
    }
    let r = store.writeback(Selection::All, 4, 2).unwrap();
    assert_eq!((r.written, r.batches, r.failed), (0, 0, 2));
    assert!(r.error.is_some());
    let bd = store.stats().tiers.backing;
    assert_eq!((bd.pages, bd.writes, bd.write_failures), (0, 2, 1));
    // Reads: the second fails, the third is corrupted (a checksum failure).
    let faulty = FaultyBacking::new(MemBacking::new(8)).fail_reads(0b010, ReadFault::Io);
    let faulty = FaultyBacking::new(faulty).fail_reads(0b100, ReadFault::Corrupt);
    let mut store = PageStore::with_config(TrimLeading, StoreConfig::default());
    store.set_backing(Box::new(faulty), BackingConfig::default()).unwrap();
    for k in 0..3 {
        store.store(k, &page(k)).unwrap();
    }
    assert_eq!(store.writeback(Selection::All, 3, 3).unwrap().written, 3);
    let mut back = Page::zeroed();
    let loads: Vec<bool> = (0..3).map(|k| store.load(k, &mut back).is_ok()).collect();
    assert_eq!(loads, [true, false, false]);
    let bd = store.stats().tiers.backing;
    assert_eq!((bd.reads, bd.read_failures, bd.checksum_failures), (1, 1, 1));
}

/// Idle marks, access times and the huge class, exactly.
#[test]
fn idle_age_and_huge_selections() {
    static T: AtomicU64 = AtomicU64::new(100);
    let config = StoreConfig::default().with_clock(Clock(|| T.load(Ordering::Relaxed)));
    let mut store = PageStore::with_config(TrimTrailing, config);
    store.set_secondary(1, Box::new(TrimLeading)).unwrap();
    store.set_backing(Box::new(MemBacking::new(8)), BackingConfig::default()).unwrap();
    // 0: zero tail (small stream); 1: zero head (huge for TrimTrailing, small for TrimLeading).
    let mut head = Page::zeroed();
    head.as_bytes_mut()[..10].fill(7);
    let mut tail = Page::zeroed();
    tail.as_bytes_mut()[PAGE_SIZE - 10..].fill(9);
    store.store(0, &head).unwrap();
    store.store(1, &tail).unwrap();
    store.store(2, &Page::filled(4)).unwrap();
    assert_eq!(store.stats().mm.huge_pages, 1);
    // Nothing is idle yet.
    assert_eq!(store.recompress(Selection::Idle, 0, 10, 1).unwrap().attempted, 0);
    store.mark_idle();
    let mut page = Page::zeroed();
    store.load(0, &mut page).unwrap(); // clears key 0's mark
    let r = store.recompress(Selection::Idle, 0, 10, 1).unwrap();
    assert_eq!((r.attempted, r.recompressed, r.left_huge, r.bytes_after), (1, 1, 1, 10));
    let stats = store.stats();
    assert_eq!(
        (stats.mm.huge_pages, stats.tiers.codecs[1].pages, stats.tiers.codecs[1].compr_bytes),
        (0, 1, 10)
    );
    assert_eq!(stats.tiers.codecs[1].bytes_saved, 4096 - 10);
    // A page recompressed by slot 1 is not tried by slot 1 again.
    assert_eq!(store.recompress(Selection::All, 0, 10, 1).unwrap().recompressed, 0);
    // Ages: key 0 was touched at 100; advance to 150, touch key 1.
    T.store(150, Ordering::Relaxed);
    store.load(1, &mut page).unwrap();
    assert_eq!(page, tail);
    let r = store.writeback(Selection::IdleFor(30), 10, 4).unwrap();
    assert_eq!(r.written, 1, "only key 0 is 30 ticks old (key 2 is same-filled)");
    assert_eq!(store.stats().tiers.backing.pages, 1);
    store.load(0, &mut page).unwrap();
    assert_eq!(page, head);
    // The slot is reused after an overwrite.
    store.store(0, &tail).unwrap();
    assert_eq!(store.writeback(Selection::Key(0), 10, 4).unwrap().written, 1);
    let bd = store.stats().tiers.backing;
    assert_eq!((bd.pages, bd.slots_used, bd.slots_high, bd.writes), (1, 1, 1, 2));
    assert!(store.remove(0));
    assert_eq!(store.stats().tiers.backing.slots_used, 0);
    // A load stamps the access time of a page not marked idle too.
    store.store(9, &tail).unwrap();
    T.store(300, Ordering::Relaxed);
    store.load(9, &mut page).unwrap();
    T.store(310, Ordering::Relaxed);
    let r = store.writeback(Selection::IdleFor(20), 10, 4).unwrap();
    assert_eq!(r.written, 1, "key 1 (last touched at 150), not key 9 (at 300)");
}

/// A full backing store stops writeback with `Full`; everything stays loadable.
#[test]
fn full_backing_store_stops_cleanly() {
    let mut store = PageStore::new(TrimTrailing);
    store.set_backing(Box::new(MemBacking::new(3)), BackingConfig::default().with_pages(true)).unwrap();
    let pages: Vec<Page> = (0..6).map(|k| mixed_page(1, k)).collect();
    for (k, p) in pages.iter().enumerate() {
        store.store(k as u64, p).unwrap();
    }
    let r = store.writeback(Selection::All, 100, 2).unwrap();
    assert_eq!((r.written, r.error), (2, Some(BackingError::Full)), "the second batch did not fit");
    for (k, p) in pages.iter().enumerate() {
        let mut back = Page::zeroed();
        store.load(k as u64, &mut back).unwrap();
        assert_eq!(&back, p);
    }
    assert_eq!(store.stats().tiers.backing.slots_used, 2);
}

/// A file as the backing store, pages and streams.
#[cfg(all(feature = "std", unix))]
#[test]
fn file_backing_round_trip() {
    let path = std::env::temp_dir().join(format!("pagestore-tiers-{}.slots", std::process::id()));
    for pages in [false, true] {
        let file = pagestore::FileBacking::create(&path, 64).unwrap().with_sync(true);
        assert_eq!(file.slots(), 64);
        let mut store = PageStore::new(TrimTrailing);
        store
            .set_backing(Box::new(file), BackingConfig::default().with_pages(pages).with_verify(true))
            .unwrap();
        let all: Vec<Page> = (0..40).map(|k| mixed_page(k as u8, k)).collect();
        for (k, p) in all.iter().enumerate() {
            store.store(k as u64, p).unwrap();
        }
        let r = store.writeback(Selection::All, u64::MAX, 8).unwrap();
        assert_eq!(r.error, None);
        assert!(r.written > 20, "{r:?}");
        for (k, p) in all.iter().enumerate() {
            let mut back = Page::zeroed();
            store.load(k as u64, &mut back).unwrap();
            assert_eq!(&back, p);
        }
        assert_eq!(store.backing_name(), Some("file"));
    }
    std::fs::remove_file(&path).unwrap();
}

/// A file opened with `O_DIRECT` (in the build's folder: tmpfs refuses direct I/O): slots
/// written from and read into buffers off any 4096-byte boundary go through its aligned
/// buffer.
#[cfg(all(feature = "std", target_os = "linux"))]
#[cfg_attr(miri, ignore = "no direct I/O under Miri")]
#[test]
fn direct_file_backing_takes_unaligned_buffers() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"));
    let path = dir.join(format!("pagestore-direct-{}.slots", std::process::id()));
    let mut file = pagestore::FileBacking::create_direct(&path, 4).unwrap();
    assert!(file.is_direct());
    assert_eq!(file.name(), "file-direct");
    let mut buf = vec![0u8; 3 * PAGE_SIZE];
    let off = buf.as_ptr().align_offset(PAGE_SIZE) + 1;
    let (data, back) = buf[off..off + 2 * PAGE_SIZE].split_at_mut(PAGE_SIZE);
    let (data, back): (&mut [u8; PAGE_SIZE], &mut [u8; PAGE_SIZE]) =
        (data.try_into().unwrap(), back.try_into().unwrap());
    data.iter_mut().enumerate().for_each(|(i, b)| *b = (i % 251) as u8);
    file.write(2, data).unwrap();
    file.flush().unwrap();
    file.read(2, back).unwrap();
    assert!(back == data);
    drop(file);
    std::fs::remove_file(&path).unwrap();
}

/// `ShardedStore`: 4 threads store, load and remove their own keys while each, now and
/// then, marks pages idle, recompresses and writes back through a failing backing store.
#[cfg(feature = "std")]
#[test]
fn sharded_store_tiers_from_several_threads() {
    use std::sync::Arc;

    use pagestore::ShardedStore;

    const THREADS: u64 = 4;
    let config = StoreConfig::default().with_clock(Clock(now));
    let mut store = ShardedStore::new(8, Box::new(|| Box::new(TrimTrailing)), config);
    store.set_secondary(1, Box::new(|| Box::new(TrimLeading))).unwrap();
    store.set_secondary(2, Box::new(|| Box::new(TrimBoth))).unwrap();
    let faulty = FaultyBacking::new(MemBacking::new(2000))
        .fail_writes(0x8421_0842_1084_2109, WriteFault::Io)
        .fail_reads(0x0000_0100_0010_0001, ReadFault::Io)
        .fail_flushes(0x1000_0000_0000_1000);
    store.set_backing(Box::new(faulty), BackingConfig::default().with_verify(true)).unwrap();
    let store = Arc::new(store);
    let threads: Vec<_> = (0..THREADS)
        .map(|t| {
            let store = Arc::clone(&store);
            std::thread::spawn(move || {
                let mut rng = pagecodec::testing::Rng::new(t + 7);
                let mut mine: HashMap<u64, Page> = HashMap::new();
                let mut page = Page::zeroed();
                let (mut written, mut recompressed) = (0, 0);
                for i in 0..4000u64 {
                    let key = rng.below(64) * THREADS + t;
                    match rng.below(20) {
                        0..=7 => {
                            let p = mixed_page(rng.below(256) as u8, rng.below(1 << 40));
                            store.store(key, &p).unwrap();
                            mine.insert(key, p);
                        }
                        8..=9 => assert_eq!(store.remove(key), mine.remove(&key).is_some()),
                        10 if i % 7 == 0 => store.mark_idle(),
                        11 => {
                            let sel = [Selection::Idle, Selection::Huge, Selection::Key(key)][i as usize % 3];
                            recompressed +=
                                store.recompress(sel, 0, 16, 1 + (i % 2) as u8).unwrap().recompressed;
                        }
                        12 => {
                            let sel = [Selection::Idle, Selection::All, Selection::Key(key)][i as usize % 3];
                            written += store.writeback(sel, 16, 4).unwrap().written;
                        }
                        _ => loop {
                            match (store.load(key, &mut page), mine.get(&key)) {
                                (Ok(()), Some(want)) => {
                                    assert_eq!(&page, want, "key {key}");
                                    break;
                                }
                                (Err(LoadError::NotFound), None) => break,
                                (Err(LoadError::Backing(BackingError::Io { .. })), Some(_)) => {}
                                (r, w) => panic!("key {key}: {r:?}, stored: {}", w.is_some()),
                            }
                        },
                    }
                }
                (mine, written, recompressed)
            })
        })
        .collect();
    let (mut written, mut recompressed) = (0, 0);
    let mut all = HashMap::new();
    for t in threads {
        let (mine, w, r) = t.join().unwrap();
        all.extend(mine);
        written += w;
        recompressed += r;
    }
    store.validate().unwrap();
    let s = store.stats();
    assert!(written > 50 && recompressed > 20, "written {written}, recompressed {recompressed}");
    assert!(s.tiers.backing.write_failures > 0 && s.tiers.backing.read_failures > 0, "{:?}", s.tiers.backing);
    assert_eq!(s.pages, all.len() as u64);
    assert_eq!(s.tiers.backing.slots_used, s.tiers.backing.pages);
    assert_eq!(s.pool.objects + s.mm.same_pages + s.tiers.backing.pages, s.pages);
    let mut page = Page::zeroed();
    for (key, want) in &all {
        while let Err(e) = store.load(*key, &mut page) {
            assert!(matches!(e, LoadError::Backing(BackingError::Io { .. })), "{e}");
        }
        assert_eq!(&page, want);
    }
}
