//! Real pages through the page store: what a zram user gets per codec.
//!
//! Every page is stored under its own key in one `PageStore` per codec (interleaved page
//! by page: store page i in every store, then the next page), then loaded back and compared
//! byte for byte. Reported per codec: the compression ratio over the pages that went
//! through the codec, `mem_used_total / orig_data_size` (what the memory actually costs,
//! allocator overhead and same-filled pages included), and fenced TSC ticks per `store` and
//! per `load` call (the whole call: same-filled check, compression, allocation, copy).
//!
//! Beside each store, the bare codec runs on the same pages in the same loops (compress
//! with the store's budget next to the store call, decompress its own stream next to the
//! load call, each first on every other page), so the store's own cost is (store + load)
//! minus (compress + decompress) on the same pages, measured under the same conditions. A
//! page the codec refuses is kept as it is on both sides: the bare codec's "decompress" of
//! it is a copy of the kept page, what the store's load of a huge page does as well.

use pagecodec::{Page, PageCodec};
use pagestore::{EntryCodec, LoadError, PageStore, StoreConfig, StoreError};
use serde::Serialize;

use crate::simulate::StoreTable;
use crate::timing::{TickStats, Timer};

/// A page store of any codec, behind one interface so stores can take turns.
pub trait AnyStore {
    /// The codec's name.
    fn codec_name(&self) -> &'static str;
    /// `PageStore::store`.
    fn store(&mut self, key: u64, page: &Page) -> Result<(), StoreError>;
    /// `PageStore::load`.
    fn load(&mut self, key: u64, page: &mut Page) -> Result<(), LoadError>;
    /// The store's figures.
    fn table(&self) -> StoreTable;
}

impl<C: EntryCodec> AnyStore for PageStore<C> {
    fn codec_name(&self) -> &'static str {
        self.codec().name()
    }
    fn store(&mut self, key: u64, page: &Page) -> Result<(), StoreError> {
        PageStore::store(self, key, page)
    }
    fn load(&mut self, key: u64, page: &mut Page) -> Result<(), LoadError> {
        PageStore::load(self, key, page)
    }
    fn table(&self) -> StoreTable {
        StoreTable::of(self)
    }
}

/// A store for codec `name`: `hybrid` (pagestore's `Hybrid`, variant kept per entry) or any
/// codec of [`crate::codecs`], with the default policies and keys `0..keys` in the flat
/// table, as a zram device of `keys` pages keeps them.
pub fn store_for(name: &str, keys: usize) -> Option<Box<dyn AnyStore>> {
    let config = StoreConfig::default().with_dense_keys(keys);
    if name == "hybrid" {
        return Some(Box::new(PageStore::with_config(crate::codecs::hybrid(), config)));
    }
    let codec: Box<dyn PageCodec> = crate::codecs::by_name(name)?;
    Some(Box::new(PageStore::with_config(codec, config)))
}

/// What the bare codec's user keeps of one page: the codec's stream and its variant, or
/// the page itself where the codec refused it.
enum Kept {
    Stream(u8, Vec<u8>),
    Raw(Box<Page>),
}

/// The bare codec behind `store_for(name)`, as the store calls it (variant included).
fn bare_for(name: &str) -> Option<Box<dyn EntryCodec>> {
    if name == "hybrid" {
        return Some(Box::new(crate::codecs::hybrid()));
    }
    Some(Box::new(crate::codecs::by_name(name)?))
}

/// One codec's figures.
#[derive(Clone, Debug, Serialize)]
pub struct StoreRow {
    /// Codec name.
    pub codec: String,
    /// Pages stored.
    pub pages: usize,
    /// Compression ratio over the pages that went through the codec (input / output).
    pub ratio: f64,
    /// mem_used_total / orig_data_size.
    pub mem_used_fraction: f64,
    /// Ticks per `store` call.
    pub store_ticks: TickStats,
    /// Ticks per `load` call.
    pub load_ticks: TickStats,
    /// Median store + median load ticks per page.
    pub store_load_median: u64,
    /// Ticks per bare `compress` with the store's budget, same pages, same loop.
    pub compress_ticks: TickStats,
    /// Ticks per bare `decompress` of that stream; for a page the codec refused, a copy of
    /// the kept page (how its user gives that page back).
    pub decompress_ticks: TickStats,
    /// Median compress + median decompress ticks per page.
    pub codec_median: u64,
    /// Median over pages of (store + load) minus (compress + decompress), in ticks: each
    /// page's four calls are timed once, so the median keeps a preempted call from counting.
    pub overhead_median: i64,
    /// That median over the median of (compress + decompress) per page, in percent.
    pub overhead_median_percent: f64,
    /// Mean over pages of (store + load) minus (compress + decompress), in ticks.
    pub overhead_mean: f64,
    /// That mean over the mean of (compress + decompress), in percent.
    pub overhead_percent: f64,
    /// The store's own table (sizes, codec timings, mm_stat).
    pub table: StoreTable,
}

/// Stores and loads `pages` in one store per codec name, interleaved, verifying every page.
///
/// # Errors
///
/// An unknown codec, a refused store, or a page that does not come back identical.
pub fn bench_stores(timer: &Timer, names: &[String], pages: &[Page]) -> Result<Vec<StoreRow>, String> {
    let mut stores = names
        .iter()
        .map(|n| {
            store_for(n, pages.len())
                .ok_or_else(|| format!("unknown codec {n:?} (try hybrid, wkdm, lzo-rle, ...)"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let mut bare = names
        .iter()
        .map(|n| bare_for(n).ok_or_else(|| format!("unknown codec {n:?}")))
        .collect::<Result<Vec<_>, _>>()?;
    let budget = pagestore::StoreConfig::default().huge_threshold;
    let mut out = vec![0u8; budget];
    let mut streams: Vec<Vec<Kept>> = (0..stores.len()).map(|_| Vec::with_capacity(pages.len())).collect();
    let mut store_ticks = vec![Vec::with_capacity(pages.len()); stores.len()];
    let mut load_ticks = vec![Vec::with_capacity(pages.len()); stores.len()];
    let mut compress_ticks = vec![Vec::with_capacity(pages.len()); stores.len()];
    let mut decompress_ticks = vec![Vec::with_capacity(pages.len()); stores.len()];
    for (i, page) in pages.iter().enumerate() {
        for (s, store) in stores.iter_mut().enumerate() {
            // Whichever goes first meets the page cold in the cache: alternate.
            let mut bare_compress = || {
                let (t, r) = timer.time(|| bare[s].compress(page, &mut out));
                compress_ticks[s].push(t);
                streams[s].push(match r {
                    Ok((n, variant)) => Kept::Stream(variant, out[..n].to_vec()),
                    Err(_) => Kept::Raw(Box::new(page.clone())),
                });
            };
            if i % 2 == 1 {
                bare_compress();
            }
            let (t, r) = timer.time(|| store.store(i as u64, page));
            r.map_err(|e| format!("{}: store of page {i} failed: {e}", store.codec_name()))?;
            store_ticks[s].push(t);
            if i % 2 == 0 {
                bare_compress();
            }
        }
    }
    let mut back = Page::zeroed();
    for (i, page) in pages.iter().enumerate() {
        for (s, store) in stores.iter_mut().enumerate() {
            let name = store.codec_name();
            let mut bare_decompress = |back: &mut Page| -> Result<(), String> {
                let t = match &streams[s][i] {
                    Kept::Stream(variant, stream) => {
                        let (t, r) = timer.time(|| bare[s].decompress(*variant, stream, back));
                        r.map_err(|e| format!("{name}: bare decompress of page {i}: {e}"))?;
                        t
                    }
                    Kept::Raw(raw) => {
                        timer
                            .time(|| {
                                back.as_bytes_mut().copy_from_slice(raw.as_bytes());
                                std::hint::black_box(&mut *back);
                            })
                            .0
                    }
                };
                decompress_ticks[s].push(t);
                Ok(())
            };
            if i % 2 == 1 {
                bare_decompress(&mut back)?;
            }
            back.as_bytes_mut().fill(0xA5);
            let (t, r) = timer.time(|| store.load(i as u64, &mut back));
            r.map_err(|e| format!("{}: LOST PAGE {i}: {e}", store.codec_name()))?;
            if back != *page {
                return Err(format!("{}: CORRUPTED PAGE {i}: loaded bytes differ", store.codec_name()));
            }
            load_ticks[s].push(t);
            if i % 2 == 0 {
                bare_decompress(&mut back)?;
            }
        }
    }
    let sum = |v: &[u64]| v.iter().map(|&t| t as f64).sum::<f64>();
    let mut rows = Vec::new();
    for (s, store) in stores.iter().enumerate() {
        let table = store.table();
        let with_store = sum(&store_ticks[s]) + sum(&load_ticks[s]);
        let bare_codec = sum(&compress_ticks[s]) + sum(&decompress_ticks[s]);
        let n = pages.len().max(1) as f64;
        let (overhead_median, overhead_median_percent) =
            median_overhead(&store_ticks[s], &load_ticks[s], &compress_ticks[s], &decompress_ticks[s]);
        let st = TickStats::from_ticks(&mut store_ticks[s]);
        let lt = TickStats::from_ticks(&mut load_ticks[s]);
        let ct = TickStats::from_ticks(&mut compress_ticks[s]);
        let dt = TickStats::from_ticks(&mut decompress_ticks[s]);
        rows.push(StoreRow {
            codec: store.codec_name().to_string(),
            pages: pages.len(),
            ratio: table.ratio,
            mem_used_fraction: if table.orig_data_size == 0 {
                0.0
            } else {
                table.mem_used_total as f64 / table.orig_data_size as f64
            },
            store_load_median: st.median + lt.median,
            store_ticks: st,
            load_ticks: lt,
            codec_median: ct.median + dt.median,
            compress_ticks: ct,
            decompress_ticks: dt,
            overhead_median,
            overhead_median_percent,
            overhead_mean: (with_store - bare_codec) / n,
            overhead_percent: if bare_codec > 0.0 {
                100.0 * (with_store - bare_codec) / bare_codec
            } else {
                0.0
            },
            table,
        });
    }
    Ok(rows)
}

/// What the store adds: the median over pairs of consecutive pages of their
/// `(store + load) - (compress + decompress)`, halved, and that as a percentage of the median
/// over pages of `compress + decompress`.
///
/// Pairs, because the loops alternate which side meets the page first (cold in the cache):
/// the store on even pages, the bare codec on odd ones. Per page, the difference is the
/// store's cost plus or minus that cold-page penalty, two clusters whose median falls
/// anywhere between them; within a pair the penalty cancels.
fn median_overhead(store: &[u64], load: &[u64], compress: &[u64], decompress: &[u64]) -> (i64, f64) {
    let median = |mut v: Vec<i64>| {
        v.sort_unstable();
        v.get(v.len() / 2).copied().unwrap_or(0)
    };
    let per_page =
        |a: &[u64], b: &[u64]| -> Vec<i64> { a.iter().zip(b).map(|(&x, &y)| (x + y) as i64).collect() };
    let with_store = per_page(store, load);
    let bare = per_page(compress, decompress);
    let diff: Vec<i64> = with_store.iter().zip(&bare).map(|(w, b)| w - b).collect();
    let pairs: Vec<i64> = diff.chunks_exact(2).map(|p| (p[0] + p[1]) / 2).collect();
    let extra = if pairs.is_empty() { median(diff) } else { median(pairs) };
    let codec = median(bare);
    (extra, if codec > 0 { 100.0 * extra as f64 / codec as f64 } else { 0.0 })
}

/// The summary table.
pub fn table(rows: &[StoreRow], timer: &Timer) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{:<9} {:>6} | {:>6} {:>9} | {:>7} {:>7} {:>8} | {:>7} {:>7} {:>8} | {:>10} {:>7} | {:>9} {:>8} {:>6} {:>9} {:>6} | {:>5} {:>5} {:>11}",
        "codec",
        "pages",
        "ratio",
        "used/orig",
        "store",
        "p99",
        "max",
        "load",
        "p99",
        "max",
        "store+load",
        "ns",
        "codec c+d",
        "ovh med",
        "ovh%",
        "ovh mean",
        "mean%",
        "same",
        "huge",
        "1st/2nd"
    );
    for r in rows {
        let _ = writeln!(
            s,
            "{:<9} {:>6} | {:>5.2}x {:>8.1}% | {:>7} {:>7} {:>8} | {:>7} {:>7} {:>8} | {:>10} {:>7.0} | {:>9} {:>8} {:>5.1}% {:>9.0} {:>5.1}% | {:>5} {:>5} {:>5}/{:<5}",
            r.codec,
            r.pages,
            r.ratio,
            r.mem_used_fraction * 100.0,
            r.store_ticks.median,
            r.store_ticks.p99,
            r.store_ticks.max,
            r.load_ticks.median,
            r.load_ticks.p99,
            r.load_ticks.max,
            r.store_load_median,
            timer.ns(r.store_load_median as f64),
            r.codec_median,
            r.overhead_median,
            r.overhead_median_percent,
            r.overhead_mean,
            r.overhead_percent,
            r.table.same_pages,
            r.table.huge_pages,
            r.table.by_variant[0],
            r.table.by_variant[1]
        );
    }
    s.push_str(
        "columns: ratio = original / stored bytes; used/orig = mem_used_total / orig_data_size; \
         store, load = ticks per page (median, p99, max); store+load = their medians' sum (and ns); \
         codec c+d = the bare codec's compress + decompress medians on the same pages (a page \
         the codec refuses is kept as it is, and its decompress is a copy of it); ovh med, \
         ovh% = what the store adds to them: the median over pairs of consecutive pages of their \
         (store + load) - (compress + decompress), halved (the side that meets a page first \
         alternates, so its cold-cache cost cancels in a pair), and its share of the median \
         compress + decompress; ovh mean, mean% = the \
         same as means (a preempted call weighs in); same, huge = zram's \
         same_pages and huge_pages; 1st/2nd = pages a hybrid kept with its first codec / its \
         fallback (all with the first for a plain codec)\n",
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timing::Clock;
    use pagecodec::testing::{PageClass, generate};

    #[test]
    fn overhead_cancels_the_alternating_cold_page() {
        // The store adds 100 ticks; whichever side goes first pays 1,000 more (store on even
        // pages, the codec on odd ones). Per page the differences are 1,100 and -900.
        let n = 1000;
        let codec: Vec<u64> = (0..n).map(|i| 5000 + if i % 2 == 1 { 1000 } else { 0 }).collect();
        let store: Vec<u64> = (0..n).map(|i| 5100 + if i % 2 == 0 { 1000 } else { 0 }).collect();
        let zero = vec![0; n];
        let (extra, percent) = median_overhead(&store, &zero, &codec, &zero);
        assert_eq!(extra, 100);
        assert!((percent - 100.0 * 100.0 / 6000.0).abs() < 1e-9, "{percent}");
    }

    #[test]
    fn stores_give_every_page_back_and_report_memory() {
        let pages: Vec<Page> =
            PageClass::ALL.iter().flat_map(|&c| (0..3).map(move |s| generate(c, s))).collect();
        let timer = Timer::with_clock(Clock::Instant);
        let names: Vec<String> = ["wkdm", "lzo-rle", "hybrid", "raw"].map(String::from).to_vec();
        let rows = bench_stores(&timer, &names, &pages).unwrap();
        assert_eq!(rows.len(), 4);
        for r in &rows {
            assert_eq!(r.store_ticks.count, pages.len());
            assert_eq!((r.compress_ticks.count, r.decompress_ticks.count), (pages.len(), pages.len()));
            assert_eq!(r.table.orig_data_size, (pages.len() * 4096) as u64);
            assert!(r.mem_used_fraction > 0.0 && r.mem_used_fraction < 1.5, "{r:?}");
        }
        // The hybrid used both of its codecs on this mix (WKdm refuses random/ramp pages).
        let hybrid = &rows[2];
        assert!(hybrid.table.by_variant[0] > 0 && hybrid.table.by_variant[1] > 0, "{:?}", hybrid.table);
        // Raw never fits the 3/4-page threshold: everything not same-filled is huge.
        assert_eq!(rows[3].table.huge_pages + rows[3].table.same_pages, pages.len() as u64);
        assert!(bench_stores(&timer, &["nope".to_string()], &pages).is_err());
        assert!(table(&rows, &timer).contains("hybrid"));
    }
}
