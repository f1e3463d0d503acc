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
//! - TSC ticks (shown as ns) per alloc+free pair — free a random live object, allocate one of
//!   the next size — with ~1k live objects (hot: all in cache) and with the full pool (cold);
//!   median, p99 and max.
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
    /// Ticks per alloc+free pair with ~1k live objects.
    pub hot_pair: TickStats,
    /// Ticks per alloc+free pair with the full pool live.
    pub cold_pair: TickStats,
    /// ns per pair, hot: median, p99, max.
    pub hot_ns: [f64; 3],
    /// ns per pair, cold: median, p99, max.
    pub cold_ns: [f64; 3],
}

fn ratio((payload, held): (u64, u64)) -> f64 {
    if held == 0 { 1.0 } else { payload as f64 / held as f64 }
}

/// Times `pairs` alloc+free pairs on a pool holding `live`: each frees a random live object
/// and allocates the next size in its place.
fn time_pairs<A: Allocator>(
    timer: &Timer,
    a: &mut A,
    live: &mut [A::Object],
    sizes: &[usize],
    next: &mut usize,
    rng: &mut Rng,
    pairs: usize,
) -> TickStats {
    let mut ticks = Vec::with_capacity(pairs);
    for _ in 0..pairs {
        let i = rng.below(live.len() as u64) as usize;
        let len = sizes[*next % sizes.len()];
        *next += 1;
        let old = live[i];
        let (t, new) = timer.time(|| {
            a.free(old);
            a.alloc(len)
        });
        live[i] = new;
        ticks.push(t);
    }
    TickStats::from_ticks(&mut ticks)
}

/// Runs the whole benchmark for one allocator on `sizes` (shuffled), filling to `cold_mb`.
pub fn bench_allocator<A: Allocator>(
    timer: &Timer,
    make: &mut dyn FnMut() -> A,
    sizes_from: &str,
    sizes: &[usize],
    cold_mb: usize,
    pairs: usize,
) -> AllocReport {
    let mut rng = Rng::new(0x5eed);
    let mut shuffled = sizes.to_vec();
    for i in (1..shuffled.len()).rev() {
        shuffled.swap(i, rng.below(i as u64 + 1) as usize);
    }
    let sizes = &shuffled[..];
    let mean_size = sizes.iter().sum::<usize>() as f64 / sizes.len().max(1) as f64;
    let mut next = 0usize;

    // Hot: ~1k live objects.
    let mut hot = make();
    let mut live: Vec<A::Object> = (0..1000)
        .map(|_| {
            next += 1;
            hot.alloc(sizes[(next - 1) % sizes.len()])
        })
        .collect();
    let hot_pair = time_pairs(timer, &mut hot, &mut live, sizes, &mut next, &mut rng, pairs);
    let name = hot.name().to_string();
    for o in live.drain(..) {
        hot.free(o);
    }
    drop(hot);

    // Cold: fill to `cold_mb` MiB of payload.
    let mut pool = make();
    let target = (cold_mb as u64) << 20;
    while pool.usage().0 < target {
        let len = sizes[next % sizes.len()];
        next += 1;
        live.push(pool.alloc(len));
    }
    let objects_full = live.len();
    let full = pool.usage();
    let cold_pair = time_pairs(timer, &mut pool, &mut live, sizes, &mut next, &mut rng, pairs);

    // Free a random 60%.
    for i in (1..live.len()).rev() {
        live.swap(i, rng.below(i as u64 + 1) as usize);
    }
    let keep = live.len() - live.len() * 6 / 10;
    for o in live.drain(keep..) {
        pool.free(o);
    }
    let after_free = ratio(pool.usage());
    let after_compact = pool.compact().then(|| ratio(pool.usage()));
    for o in live.drain(..) {
        pool.free(o);
    }
    let ns = |s: &TickStats| [timer.ns(s.median as f64), timer.ns(s.p99 as f64), timer.ns(s.max as f64)];
    AllocReport {
        allocator: name,
        sizes_from: sizes_from.to_string(),
        size_samples: sizes.len(),
        mean_size,
        objects_full,
        payload_mib_full: full.0 as f64 / f64::from(1 << 20),
        efficiency_full: ratio(full),
        efficiency_after_free: after_free,
        efficiency_after_compact: after_compact,
        hot_ns: ns(&hot_pair),
        cold_ns: ns(&cold_pair),
        hot_pair,
        cold_pair,
    }
}

/// xvmalloc and rlsf on `sizes`, in the same run.
pub fn bench_both(
    timer: &Timer,
    sizes_from: &str,
    sizes: &[usize],
    cold_mb: usize,
    pairs: usize,
) -> Vec<AllocReport> {
    let xv = bench_allocator(
        timer,
        &mut || Xv(xvmalloc::Pool::new(xvmalloc::HeapSource::new())),
        sizes_from,
        sizes,
        cold_mb,
        pairs,
    );
    // rlsf's arena: the payload target plus generous room for its fragmentation.
    let mut arena = Box::<[u8]>::new_uninit_slice((cold_mb << 20) * 2 + (16 << 20));
    let mut hot_arena = Box::<[u8]>::new_uninit_slice(16 << 20);
    let (mut arena_ref, mut hot_ref) = (Some(&mut arena[..]), Some(&mut hot_arena[..]));
    let rl = bench_allocator(
        timer,
        &mut || Rlsf::new(hot_ref.take().or_else(|| arena_ref.take()).expect("two pools: hot then cold")),
        sizes_from,
        sizes,
        cold_mb,
        pairs,
    );
    vec![xv, rl]
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
        "hot pair ns med/p99/max",
        "cold pair ns med/p99/max"
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
        let reports = bench_both(&timer, "test", &sizes, 2, 200);
        assert_eq!(reports.len(), 2);
        for r in &reports {
            assert!(r.payload_mib_full >= 2.0, "{r:?}");
            assert!(r.efficiency_full > 0.5 && r.efficiency_full <= 1.0, "{r:?}");
            assert!(r.efficiency_after_free <= r.efficiency_full, "{r:?}");
            assert_eq!(r.hot_pair.count, 200);
        }
        let xv = &reports[0];
        assert!(xv.efficiency_after_compact.unwrap() > xv.efficiency_after_free, "{xv:?}");
        assert!(reports[1].efficiency_after_compact.is_none());
        assert!(table(&reports).contains("rlsf"));
    }
}
