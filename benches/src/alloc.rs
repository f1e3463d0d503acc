//! The allocator benchmark: xvmalloc and rlsf fed the compressed sizes of real pages.
//!
//! Object sizes are the stream lengths of real pages under a codec (LZO and WKdm), the
//! objects a zram-like store allocates: same-filled pages (kept as a value, no allocation)
//! and pages whose stream exceeds 3/4 of a page (stored raw, a page of their own) are left
//! out, as zram does. Sizes are drawn in a shuffled order.
//!
//! For each allocator and size set the run reports:
//! - efficiency (payload / bytes held from the page source) when full (~`cold_mb` MiB of
//!   payload), after freeing a random 60%, and after `compact()` (xvmalloc only: rlsf has no
//!   compaction and cannot give pages back);
//! - ns per alloc+free pair — free a random live object, allocate one of the next size —
//!   with ~1k live objects (hot: all in cache) and with the full pool (cold). The TSC here
//!   ticks in steps of ~10 ns, so one reading covers a batch of [`BATCH`] pairs and is divided
//!   by it; median, p99 and max are taken over those per-batch means. The two allocators run
//!   the same operations, batch by batch interleaved, in the same process.
//!
//! rlsf gets memory the way xvmalloc does, one 4 KiB page at a time: when an allocation
//! fails, one more page is inserted as a free block and the allocation retried.

use std::alloc::Layout;
use std::mem::MaybeUninit;
use std::ptr::NonNull;

use pagecodec::testing::Rng;
use pagecodec::{PAGE_SIZE, Page, PageCodec, same_filled};
use serde::Serialize;

use crate::measure::INCOMPRESSIBLE_ABOVE;
use crate::timing::{TickStats, Timer};

/// Compressed sizes of `pages` under `codec`, as a zram-like store would allocate them.
pub fn object_sizes(codec: &mut dyn PageCodec, pages: &[Page]) -> Vec<usize> {
    let mut out = vec![0u8; codec.max_compressed_len()];
    pages
        .iter()
        .filter(|p| same_filled(p).is_none())
        .filter_map(|p| codec.compress(p, &mut out).ok())
        .filter(|&n| n > 0 && n <= INCOMPRESSIBLE_ABOVE)
        .collect()
}

/// The interface both allocators are driven through.
pub trait Allocator {
    /// A live object.
    type Object: Copy;
    /// Name for tables.
    fn name(&self) -> &'static str;
    /// Allocates `len` bytes (taking memory from the source as needed).
    fn alloc(&mut self, len: usize) -> Self::Object;
    /// Frees an object.
    fn free(&mut self, object: Self::Object);
    /// Payload bytes live and bytes held from the source.
    fn usage(&self) -> (u64, u64);
    /// Compacts if the allocator can; returns whether it did.
    fn compact(&mut self) -> bool;
}

/// xvmalloc over the heap.
pub struct Xv(pub xvmalloc::Pool<xvmalloc::HeapSource>);

impl Allocator for Xv {
    type Object = xvmalloc::Handle;
    fn name(&self) -> &'static str {
        "xvmalloc"
    }
    fn alloc(&mut self, len: usize) -> xvmalloc::Handle {
        self.0.alloc(len).expect("xvmalloc: allocation from the heap failed")
    }
    fn free(&mut self, h: xvmalloc::Handle) {
        self.0.free(h).expect("xvmalloc: free of a live handle failed");
    }
    fn usage(&self) -> (u64, u64) {
        let s = self.0.stats();
        (s.payload_bytes, s.held_bytes)
    }
    fn compact(&mut self) -> bool {
        self.0.compact();
        true
    }
}

/// rlsf (TLSF) fed 4 KiB pages one at a time from a pre-reserved arena.
pub struct Rlsf<'a> {
    tlsf: rlsf::Tlsf<'a, u16, u16, 12, 16>,
    arena: &'a mut [MaybeUninit<u8>],
    payload: u64,
    held: u64,
}

impl<'a> Rlsf<'a> {
    /// An rlsf pool that takes pages from `arena` (carved at 4 KiB boundaries).
    pub fn new(arena: &'a mut [MaybeUninit<u8>]) -> Rlsf<'a> {
        let skip = arena.as_ptr().align_offset(PAGE_SIZE).min(arena.len());
        let arena = &mut arena[skip..];
        Rlsf { tlsf: rlsf::Tlsf::new(), arena, payload: 0, held: 0 }
    }

    fn add_page(&mut self) {
        let arena = std::mem::take(&mut self.arena);
        assert!(arena.len() >= PAGE_SIZE, "rlsf arena exhausted: raise its size");
        let (page, rest) = arena.split_at_mut(PAGE_SIZE);
        self.arena = rest;
        self.tlsf.insert_free_block(page);
        self.held += PAGE_SIZE as u64;
    }
}

impl Allocator for Rlsf<'_> {
    type Object = (NonNull<u8>, usize);
    fn name(&self) -> &'static str {
        "rlsf"
    }
    fn alloc(&mut self, len: usize) -> (NonNull<u8>, usize) {
        let layout = Layout::from_size_align(len, 8).expect("valid layout");
        loop {
            if let Some(p) = self.tlsf.allocate(layout) {
                self.payload += len as u64;
                return (p, len);
            }
            self.add_page();
        }
    }
    fn free(&mut self, (p, len): (NonNull<u8>, usize)) {
        // SAFETY: `p` came from `allocate` of this pool with alignment 8 and is freed once
        // (the benchmark removes it from its live set before freeing).
        unsafe { self.tlsf.deallocate(p, 8) };
        self.payload -= len as u64;
    }
    fn usage(&self) -> (u64, u64) {
        (self.payload, self.held)
    }
    fn compact(&mut self) -> bool {
        false
    }
}

/// Alloc+free pairs per timed batch. The TSC here advances in steps of 26 ticks (~10 ns),
/// coarser than one pair, so each reading covers a batch and is divided by its size.
pub const BATCH: usize = 64;

/// Per-pair TSC ticks of a set of batches: each figure is a batch's ticks (fence overhead
/// subtracted once per batch) divided by [`BATCH`], i.e. a mean over `pairs_per_batch` pairs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct PairStats {
    /// Timed batches.
    pub batches: usize,
    /// Pairs per batch.
    pub pairs_per_batch: usize,
    /// Smallest batch mean, ticks per pair.
    pub min: f64,
    /// Median batch mean (lower median), ticks per pair.
    pub median: f64,
    /// 99th percentile of batch means (nearest rank), ticks per pair.
    pub p99: f64,
    /// Largest batch mean, ticks per pair.
    pub max: f64,
}

impl PairStats {
    fn from_batches(batch_ticks: &mut [u64], pairs_per_batch: usize) -> PairStats {
        let t = TickStats::from_ticks(batch_ticks);
        let per = |x: u64| x as f64 / pairs_per_batch as f64;
        PairStats {
            batches: t.count,
            pairs_per_batch,
            min: per(t.min),
            median: per(t.median),
            p99: per(t.p99),
            max: per(t.max),
        }
    }
}

/// Figures of one allocator on one size set.
#[derive(Clone, Debug, Serialize)]
pub struct AllocReport {
    /// Allocator name.
    pub allocator: String,
    /// Which codec's sizes.
    pub sizes_from: String,
    /// Distinct size samples available.
    pub size_samples: usize,
    /// Mean object size.
    pub mean_size: f64,
    /// Live objects when full.
    pub objects_full: usize,
    /// Payload MiB when full.
    pub payload_mib_full: f64,
    /// Payload / held when full.
    pub efficiency_full: f64,
    /// After freeing a random 60%.
    pub efficiency_after_free: f64,
    /// After compaction (None: the allocator cannot compact).
    pub efficiency_after_compact: Option<f64>,
    /// Ticks per alloc+free pair with ~1k live objects (per-batch means).
    pub hot_pair: PairStats,
    /// Ticks per alloc+free pair with the full pool live (per-batch means).
    pub cold_pair: PairStats,
    /// ns per pair, hot: median, p99, max of the per-batch means.
    pub hot_ns: [f64; 3],
    /// ns per pair, cold: median, p99, max of the per-batch means.
    pub cold_ns: [f64; 3],
}

fn ratio((payload, held): (u64, u64)) -> f64 {
    if held == 0 { 1.0 } else { payload as f64 / held as f64 }
}

/// One allocator with its live objects and its own copy of the operation stream: both
/// allocators start from the same seed and position, so they see identical operations.
struct Workload<A: Allocator> {
    pool: A,
    live: Vec<A::Object>,
    rng: Rng,
    next: usize,
}

impl<A: Allocator> Workload<A> {
    fn new(pool: A) -> Self {
        Workload { pool, live: Vec::new(), rng: Rng::new(0x5eed), next: 0 }
    }

    fn alloc_next(&mut self, sizes: &[usize]) {
        let len = sizes[self.next % sizes.len()];
        self.next += 1;
        self.live.push(self.pool.alloc(len));
    }

    /// Times [`BATCH`] pairs, each freeing a random live object and allocating the next size
    /// in its place. The victims and sizes are drawn before the clock starts.
    fn batch(&mut self, timer: &Timer, sizes: &[usize]) -> u64 {
        let mut plan = [(0usize, 0usize); BATCH];
        for step in &mut plan {
            *step = (self.rng.below(self.live.len() as u64) as usize, sizes[self.next % sizes.len()]);
            self.next += 1;
        }
        let (pool, live) = (&mut self.pool, &mut self.live);
        let (ticks, ()) = timer.time(|| {
            for &(i, len) in &plan {
                pool.free(live[i]);
                live[i] = pool.alloc(len);
            }
        });
        ticks
    }

    fn free_all(&mut self) {
        for o in self.live.drain(..) {
            self.pool.free(o);
        }
    }
}

/// Times `batches` batches on each of `a` and `b`, interleaved batch by batch (the order
/// alternates, so neither always runs right after the other), after one untimed warm-up
/// batch each.
fn time_interleaved<A: Allocator, B: Allocator>(
    timer: &Timer,
    a: &mut Workload<A>,
    b: &mut Workload<B>,
    sizes: &[usize],
    batches: usize,
) -> (PairStats, PairStats) {
    a.batch(timer, sizes);
    b.batch(timer, sizes);
    let (mut ta, mut tb) = (Vec::with_capacity(batches), Vec::with_capacity(batches));
    for k in 0..batches {
        if k % 2 == 0 {
            ta.push(a.batch(timer, sizes));
            tb.push(b.batch(timer, sizes));
        } else {
            tb.push(b.batch(timer, sizes));
            ta.push(a.batch(timer, sizes));
        }
    }
    (PairStats::from_batches(&mut ta, BATCH), PairStats::from_batches(&mut tb, BATCH))
}

/// Efficiency figures of a full pool: full, after freeing a random 60%, after compaction.
struct Density {
    objects_full: usize,
    full: (u64, u64),
    after_free: f64,
    after_compact: Option<f64>,
}

/// Frees a random 60% of `w`'s objects, compacts, then frees the rest.
fn density<A: Allocator>(w: &mut Workload<A>, full: (u64, u64)) -> Density {
    let objects_full = w.live.len();
    let mut rng = Rng::new(0x60);
    for i in (1..w.live.len()).rev() {
        w.live.swap(i, rng.below(i as u64 + 1) as usize);
    }
    let keep = w.live.len() - w.live.len() * 6 / 10;
    for o in w.live.drain(keep..) {
        w.pool.free(o);
    }
    let after_free = ratio(w.pool.usage());
    let after_compact = w.pool.compact().then(|| ratio(w.pool.usage()));
    w.free_all();
    Density { objects_full, full, after_free, after_compact }
}

/// xvmalloc and rlsf on `sizes` (shuffled), in the same run: `pairs` alloc+free pairs each
/// (in batches of [`BATCH`], interleaved between the two) with ~1k live objects (hot), then
/// with `cold_mb` MiB of payload live (cold); then the efficiency figures of the full pools.
pub fn bench_both(
    timer: &Timer,
    sizes_from: &str,
    sizes: &[usize],
    cold_mb: usize,
    pairs: usize,
) -> Vec<AllocReport> {
    let mut rng = Rng::new(0x5eed);
    let mut shuffled = sizes.to_vec();
    for i in (1..shuffled.len()).rev() {
        shuffled.swap(i, rng.below(i as u64 + 1) as usize);
    }
    let sizes = &shuffled[..];
    let mean_size = sizes.iter().sum::<usize>() as f64 / sizes.len().max(1) as f64;
    let batches = pairs.div_ceil(BATCH).max(1);
    let new_xv = || Workload::new(Xv(xvmalloc::Pool::new(xvmalloc::HeapSource::new())));

    // Hot: ~1k live objects.
    let mut hot_arena = Box::<[u8]>::new_uninit_slice(16 << 20);
    let (hot_xv, hot_rl) = {
        let (mut xv, mut rl) = (new_xv(), Workload::new(Rlsf::new(&mut hot_arena)));
        for _ in 0..1000 {
            xv.alloc_next(sizes);
            rl.alloc_next(sizes);
        }
        let stats = time_interleaved(timer, &mut xv, &mut rl, sizes, batches);
        xv.free_all();
        rl.free_all();
        stats
    };
    drop(hot_arena);

    // Cold: both filled to `cold_mb` MiB of payload. rlsf's arena: the payload target plus
    // generous room for its fragmentation.
    let mut arena = Box::<[u8]>::new_uninit_slice((cold_mb << 20) * 2 + (16 << 20));
    let (mut xv, mut rl) = (new_xv(), Workload::new(Rlsf::new(&mut arena)));
    let target = (cold_mb as u64) << 20;
    while xv.pool.usage().0 < target {
        xv.alloc_next(sizes);
        rl.alloc_next(sizes);
    }
    let (full_xv, full_rl) = (xv.pool.usage(), rl.pool.usage());
    let (cold_xv, cold_rl) = time_interleaved(timer, &mut xv, &mut rl, sizes, batches);
    let (dens_xv, dens_rl) = (density(&mut xv, full_xv), density(&mut rl, full_rl));

    let ns = |s: &PairStats| [timer.ns(s.median), timer.ns(s.p99), timer.ns(s.max)];
    let report = |name: &str, d: Density, hot: PairStats, cold: PairStats| AllocReport {
        allocator: name.to_string(),
        sizes_from: sizes_from.to_string(),
        size_samples: sizes.len(),
        mean_size,
        objects_full: d.objects_full,
        payload_mib_full: d.full.0 as f64 / f64::from(1 << 20),
        efficiency_full: ratio(d.full),
        efficiency_after_free: d.after_free,
        efficiency_after_compact: d.after_compact,
        hot_ns: ns(&hot),
        cold_ns: ns(&cold),
        hot_pair: hot,
        cold_pair: cold,
    };
    vec![report(xv.pool.name(), dens_xv, hot_xv, cold_xv), report(rl.pool.name(), dens_rl, hot_rl, cold_rl)]
}

/// The table of allocator reports.
pub fn table(reports: &[AllocReport]) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{:<9} {:<6} {:>7} {:>8} {:>8} | {:>6} {:>7} {:>8} | {:>24} | {:>24}",
        "allocator",
        "sizes",
        "mean B",
        "objects",
        "MiB",
        "full",
        "60%free",
        "compact",
        "hot ns/pair med/p99/max",
        "cold ns/pair med/p99/max"
    );
    for r in reports {
        let _ = writeln!(
            s,
            "{:<9} {:<6} {:>7.0} {:>8} {:>8.1} | {:>5.1}% {:>6.1}% {:>8} | {:>6.0} {:>8.0} {:>8.0} | {:>6.0} {:>8.0} {:>8.0}",
            r.allocator,
            r.sizes_from,
            r.mean_size,
            r.objects_full,
            r.payload_mib_full,
            r.efficiency_full * 100.0,
            r.efficiency_after_free * 100.0,
            r.efficiency_after_compact.map_or_else(|| "n/a".into(), |e| format!("{:.1}%", e * 100.0)),
            r.hot_ns[0],
            r.hot_ns[1],
            r.hot_ns[2],
            r.cold_ns[0],
            r.cold_ns[1],
            r.cold_ns[2]
        );
    }
    if let Some(r) = reports.first() {
        let _ = writeln!(
            s,
            "ns/pair: TSC ticks of a batch of {} alloc+free pairs / {}; median, p99 and max over {} batches \
             per figure; xvmalloc and rlsf run the same operations, interleaved batch by batch",
            r.hot_pair.pairs_per_batch, r.hot_pair.pairs_per_batch, r.hot_pair.batches
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timing::Clock;

    #[test]
    fn sizes_skip_same_filled_and_huge_pages() {
        let pages = vec![
            Page::zeroed(),
            Page::filled(7),
            pagecodec::testing::generate(pagecodec::testing::PageClass::Text, 1),
            pagecodec::testing::generate(pagecodec::testing::PageClass::Random, 1),
        ];
        let sizes = object_sizes(&mut crate::peers::CLz4, &pages);
        assert_eq!(sizes.len(), 1, "{sizes:?}");
        assert!(sizes[0] < 3072);
    }

    #[test]
    fn both_allocators_report_sane_figures() {
        let timer = Timer::with_clock(Clock::Instant);
        let sizes: Vec<usize> = (0..500).map(|i| 100 + (i * 37) % 2900).collect();
        let reports = bench_both(&timer, "test", &sizes, 2, 10 * BATCH);
        assert_eq!(reports.len(), 2);
        for r in &reports {
            assert!(r.payload_mib_full >= 2.0, "{r:?}");
            assert!(r.efficiency_full > 0.5 && r.efficiency_full <= 1.0, "{r:?}");
            assert!(r.efficiency_after_free <= r.efficiency_full, "{r:?}");
            assert_eq!((r.hot_pair.batches, r.cold_pair.batches), (10, 10));
            assert_eq!(r.hot_pair.pairs_per_batch, BATCH);
            assert!(r.hot_pair.min <= r.hot_pair.median && r.hot_pair.median <= r.hot_pair.p99, "{r:?}");
            assert!(r.hot_pair.p99 <= r.hot_pair.max && r.hot_pair.median > 0.0, "{r:?}");
        }
        let xv = &reports[0];
        assert!(xv.efficiency_after_compact.unwrap() > xv.efficiency_after_free, "{xv:?}");
        assert!(reports[1].efficiency_after_compact.is_none());
        assert!(table(&reports).contains("rlsf"));
        assert!(table(&reports).contains("batch of 64"));
        // Both allocators saw the same operations: the same objects when full.
        assert_eq!(reports[0].objects_full, reports[1].objects_full);
    }
}
