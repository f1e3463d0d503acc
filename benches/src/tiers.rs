//! `pagebench store --recompress CODEC --writeback FILE`: real pages through pagestore's
//! tiers beyond RAM.
//!
//! Every page is stored under its own key with the primary codec, then: every page is
//! marked idle; each secondary codec (slots 1, 2, 3 in order) recompresses first the huge
//! pages, then every other idle page; then (with a file) every page is written back to the
//! file in batches and loaded back from it. Every page is loaded and compared after each
//! phase. Reported: memory before and after each phase (`compr_data_size`,
//! `mem_used_total` after compaction), huge pages, ticks per page recompressed, writeback
//! throughput and the latency of loads from the file.

use std::path::{Path, PathBuf};
use std::time::Instant;

use pagecodec::{Page, PageCodec};
use pagestore::{
    BackingConfig, EntryCodec, FileBacking, PageStore, RecompressReport, Selection, SendCodec, StoreConfig,
};
use serde::Serialize;

use crate::timing::{TickStats, Timer};

/// A secondary codec by name: `zstd` (level 3), `zstd-N` (level N, e.g. `zstd-19`),
/// `lz4-page`, `lzo`, `lzo-rle`, `lzo-kernel`, `lzo-999` (lzokit's minimum-cost LZO1X;
/// `lzo-999-N` searches N candidates per position), `wkdm`, `hybrid`.
///
/// # Errors
///
/// An unknown name, or a zstd level zstd refuses.
pub fn secondary(name: &str) -> Result<SendCodec, String> {
    if let Some(depth) = name.strip_prefix("lzo-999-") {
        let depth: usize = depth.parse().map_err(|_| format!("bad lzo-999 depth in {name:?}"))?;
        return Ok(Box::new(Named(lzokit::Lzo1x999::with_depth(depth), leak(name))));
    }
    if let Some(level) = name.strip_prefix("zstd-") {
        let level: i32 = level.parse().map_err(|_| format!("bad zstd level in {name:?}"))?;
        return pagecodec_adapters::Zstd::with_level(level)
            .map(|c| Box::new(Named(c, leak(name))) as SendCodec)
            .map_err(|e| e.to_string());
    }
    Ok(match name {
        "zstd" => Box::new(pagecodec_adapters::Zstd::new().map_err(|e| e.to_string())?),
        "lz4-page" => Box::new(pagecodec_adapters::Lz4::new()),
        "lzo" => Box::new(lzokit::Lzo1x::default()),
        "lzo-rle" => Box::new(lzokit::LzoRle::default()),
        "lzo-kernel" => Box::new(lzokit::Lzo1xKernel::default()),
        "lzo-999" => Box::new(lzokit::Lzo1x999::default()),
        "wkdm" => Box::new(wkdm::Wkdm::default()),
        "hybrid" => Box::new(crate::codecs::hybrid()),
        _ => {
            return Err(format!(
                "unknown secondary codec {name:?}; known: zstd, zstd-N, lz4-page, lzo, lzo-rle, lzo-kernel, lzo-999, wkdm, hybrid"
            ));
        }
    })
}

/// A codec under another name (zstd at a level: `zstd-19`).
struct Named<C>(C, &'static str);

impl<C: PageCodec> PageCodec for Named<C> {
    fn name(&self) -> &'static str {
        self.1
    }
    fn max_compressed_len(&self) -> usize {
        self.0.max_compressed_len()
    }
    fn compress(&mut self, page: &Page, out: &mut [u8]) -> Result<usize, pagecodec::CompressError> {
        self.0.compress(page, out)
    }
    fn decompress(&mut self, input: &[u8], page: &mut Page) -> Result<(), pagecodec::DecompressError> {
        self.0.decompress(input, page)
    }
}

/// A codec name for tables (a handful per run).
fn leak(name: &str) -> &'static str {
    Box::leak(name.to_string().into_boxed_str())
}

/// What to do beyond storing.
#[derive(Clone, Debug, Default)]
pub struct TierOptions {
    /// Secondary codecs, slots 1-3 in order (at most 3).
    pub recompress: Vec<String>,
    /// Backing file to write every page back to.
    pub writeback: Option<PathBuf>,
    /// Open the file with O_DIRECT.
    pub direct: bool,
    /// Pages per writeback batch (one flush each).
    pub batch: usize,
    /// fdatasync at every flush.
    pub sync: bool,
    /// Write decompressed pages instead of streams.
    pub write_pages: bool,
}

/// Memory at one point.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Memory {
    /// Phase name.
    pub phase: &'static str,
    /// zram compr_data_size.
    pub compr_data_size: u64,
    /// zram mem_used_total after compaction.
    pub mem_used_total: u64,
    /// Huge pages.
    pub huge_pages: u64,
    /// Pages on the backing store.
    pub backed_pages: u64,
}

/// One secondary codec's pass.
#[derive(Clone, Debug, Serialize)]
pub struct RecompressRow {
    /// Codec name.
    pub codec: String,
    /// Slot.
    pub slot: u8,
    /// Which pages: "huge" or "idle".
    pub selection: &'static str,
    /// Pages tried.
    pub attempted: u64,
    /// Pages whose smaller stream was kept.
    pub recompressed: u64,
    /// Huge pages that left the huge class.
    pub left_huge: u64,
    /// Stream bytes saved.
    pub bytes_saved: u64,
    /// Store's clock ticks per page tried (decode + compress).
    pub ticks_per_page: f64,
    /// Wall-clock seconds of the pass.
    pub seconds: f64,
}

/// Writeback and loads from the file.
#[derive(Clone, Debug, Serialize)]
pub struct WritebackRow {
    /// "file" or "file-direct".
    pub backing: String,
    /// Pages written.
    pub written: u64,
    /// Batches.
    pub batches: u64,
    /// Seconds of the writeback call.
    pub seconds: f64,
    /// Pages written per second.
    pub pages_per_sec: f64,
    /// MB/s of 4 KiB slots written.
    pub mb_per_sec: f64,
    /// Ticks per load of a written-back page (read, check, decode, copy).
    pub load_ticks: TickStats,
    /// Median load in ns.
    pub load_median_ns: f64,
    /// p99 load in ns.
    pub load_p99_ns: f64,
}

/// One primary codec's run.
#[derive(Clone, Debug, Serialize)]
pub struct TierReport {
    /// Primary codec.
    pub codec: String,
    /// Pages stored.
    pub pages: usize,
    /// Same-filled pages.
    pub same_pages: u64,
    /// Memory after each phase.
    pub memory: Vec<Memory>,
    /// Recompression passes.
    pub recompress: Vec<RecompressRow>,
    /// Writeback, if a file was given.
    pub writeback: Option<WritebackRow>,
}

fn memory<C: EntryCodec>(store: &mut PageStore<C>, phase: &'static str) -> Memory {
    store.compact();
    let s = store.stats();
    Memory {
        phase,
        compr_data_size: s.mm.compr_data_size,
        mem_used_total: s.mm.mem_used_total,
        huge_pages: s.mm.huge_pages,
        backed_pages: s.tiers.backing.pages,
    }
}

fn verify_all<C: EntryCodec>(store: &mut PageStore<C>, pages: &[Page], what: &str) -> Result<(), String> {
    let mut back = Page::zeroed();
    for (i, page) in pages.iter().enumerate() {
        store.load(i as u64, &mut back).map_err(|e| format!("{what}: LOST PAGE {i}: {e}"))?;
        if back != *page {
            return Err(format!("{what}: CORRUPTED PAGE {i}"));
        }
    }
    Ok(())
}

/// Runs the tiers on `pages` with primary codec `name`.
///
/// # Errors
///
/// An unknown codec, a file that cannot be made, a lost or corrupted page.
pub fn bench_tiers(
    timer: &Timer,
    name: &str,
    pages: &[Page],
    opts: &TierOptions,
) -> Result<TierReport, String> {
    if name == "hybrid" {
        return run(timer, crate::codecs::hybrid(), pages, opts);
    }
    let codec = crate::codecs::by_name(name).ok_or_else(|| format!("unknown codec {name:?}"))?;
    run(timer, codec, pages, opts)
}

fn run<C: EntryCodec>(
    timer: &Timer,
    codec: C,
    pages: &[Page],
    opts: &TierOptions,
) -> Result<TierReport, String> {
    if opts.recompress.len() > 3 {
        return Err("at most 3 secondary codecs (slots 1-3)".into());
    }
    let mut store = PageStore::with_config(codec, StoreConfig::default());
    for (i, page) in pages.iter().enumerate() {
        store.store(i as u64, page).map_err(|e| format!("store of page {i}: {e}"))?;
    }
    let mut report = TierReport {
        codec: store.codec().name().to_string(),
        pages: pages.len(),
        same_pages: store.stats().mm.same_pages,
        memory: vec![memory(&mut store, "stored")],
        recompress: Vec::new(),
        writeback: None,
    };
    store.mark_idle();
    for (i, name) in opts.recompress.iter().enumerate() {
        let slot = i as u8 + 1;
        store.set_secondary(slot, secondary(name)?).map_err(|e| e.to_string())?;
        for (selection, label) in [(Selection::Huge, "huge"), (Selection::Idle, "idle")] {
            let started = Instant::now();
            let r: RecompressReport =
                store.recompress(selection, 0, u64::MAX, slot).map_err(|e| e.to_string())?;
            let seconds = started.elapsed().as_secs_f64();
            report.recompress.push(RecompressRow {
                codec: name.clone(),
                slot,
                selection: label,
                attempted: r.attempted,
                recompressed: r.recompressed,
                left_huge: r.left_huge,
                bytes_saved: r.bytes_before - r.bytes_after,
                ticks_per_page: if r.attempted == 0 { 0.0 } else { r.time as f64 / r.attempted as f64 },
                seconds,
            });
            report.memory.push(memory(
                &mut store,
                if label == "huge" { "recompressed huge" } else { "recompressed idle" },
            ));
        }
        // Recompression is not an access: the pages stay idle for the next codec.
        verify_all(&mut store, pages, "after recompression")?;
        store.mark_idle();
    }
    if let Some(path) = &opts.writeback {
        report.writeback = Some(writeback(timer, &mut store, pages, path, opts)?);
        report.memory.push(memory(&mut store, "written back"));
    }
    Ok(report)
}

fn writeback<C: EntryCodec>(
    timer: &Timer,
    store: &mut PageStore<C>,
    pages: &[Page],
    path: &Path,
    opts: &TierOptions,
) -> Result<WritebackRow, String> {
    let slots = pages.len() as u64;
    let file =
        if opts.direct { FileBacking::create_direct(path, slots) } else { FileBacking::create(path, slots) }
            .map_err(|e| format!("{}: {e}", path.display()))?
            .with_sync(opts.sync);
    let config = BackingConfig::default().with_pages(opts.write_pages);
    store.set_backing(Box::new(file), config).map_err(|e| e.to_string())?;
    let started = Instant::now();
    let r = store.writeback(Selection::All, u64::MAX, opts.batch.max(1)).map_err(|e| e.to_string())?;
    let seconds = started.elapsed().as_secs_f64();
    let result = (|| {
        if let Some(e) = r.error {
            return Err(format!("writeback stopped after {} pages: {e}", r.written));
        }
        let mut back = Page::zeroed();
        let mut ticks = Vec::with_capacity(pages.len());
        for (i, page) in pages.iter().enumerate() {
            let (t, res) = timer.time(|| store.load(i as u64, &mut back));
            res.map_err(|e| format!("from the file: LOST PAGE {i}: {e}"))?;
            if back != *page {
                return Err(format!("from the file: CORRUPTED PAGE {i}"));
            }
            ticks.push(t);
        }
        let load_ticks = TickStats::from_ticks(&mut ticks);
        Ok(WritebackRow {
            backing: store.backing_name().unwrap_or("?").to_string(),
            written: r.written,
            batches: r.batches,
            seconds,
            pages_per_sec: r.written as f64 / seconds.max(1e-9),
            mb_per_sec: r.written as f64 * 4096.0 / seconds.max(1e-9) / 1e6,
            load_median_ns: timer.ns(load_ticks.median as f64),
            load_p99_ns: timer.ns(load_ticks.p99 as f64),
            load_ticks,
        })
    })();
    let _ = std::fs::remove_file(path);
    result
}

impl TierReport {
    /// Human-readable tables.
    pub fn render(&self) -> String {
        use std::fmt::Write;
        let mut s = String::new();
        let _ = writeln!(s, "primary {}: {} pages, {} same-filled", self.codec, self.pages, self.same_pages);
        let _ = writeln!(
            s,
            "  {:<18} {:>15} {:>15} {:>9} {:>7} {:>7}",
            "phase", "compr_data_size", "mem_used_total", "used/orig", "huge", "backed"
        );
        let orig = (self.pages * 4096) as f64;
        for m in &self.memory {
            let _ = writeln!(
                s,
                "  {:<18} {:>15} {:>15} {:>8.1}% {:>7} {:>7}",
                m.phase,
                m.compr_data_size,
                m.mem_used_total,
                100.0 * m.mem_used_total as f64 / orig.max(1.0),
                m.huge_pages,
                m.backed_pages
            );
        }
        if !self.recompress.is_empty() {
            let _ = writeln!(
                s,
                "  {:<10} {:>4} {:>5} {:>9} {:>12} {:>9} {:>11} {:>11} {:>8}",
                "secondary",
                "slot",
                "sel",
                "attempted",
                "recompressed",
                "left_huge",
                "bytes_saved",
                "ticks/page",
                "seconds"
            );
            for r in &self.recompress {
                let _ = writeln!(
                    s,
                    "  {:<10} {:>4} {:>5} {:>9} {:>12} {:>9} {:>11} {:>11.0} {:>8.3}",
                    r.codec,
                    r.slot,
                    r.selection,
                    r.attempted,
                    r.recompressed,
                    r.left_huge,
                    r.bytes_saved,
                    r.ticks_per_page,
                    r.seconds
                );
            }
        }
        if let Some(w) = &self.writeback {
            let _ = writeln!(
                s,
                "  writeback to {}: {} pages in {} batches, {:.3} s = {:.0} pages/s = {:.1} MB/s; \
                 load from the file: median {} ticks ({:.0} ns), p99 {} ticks ({:.0} ns), max {} ticks",
                w.backing,
                w.written,
                w.batches,
                w.seconds,
                w.pages_per_sec,
                w.mb_per_sec,
                w.load_ticks.median,
                w.load_median_ns,
                w.load_ticks.p99,
                w.load_p99_ns,
                w.load_ticks.max
            );
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timing::Clock;
    use pagecodec::testing::{PageClass, generate};

    #[test]
    fn tiers_save_memory_and_give_every_page_back() {
        let pages: Vec<Page> =
            PageClass::ALL.iter().flat_map(|&c| (0..4).map(move |s| generate(c, s))).collect();
        let timer = Timer::with_clock(Clock::Instant);
        let path = std::env::temp_dir().join(format!("pagebench-tiers-{}.slots", std::process::id()));
        let opts = TierOptions {
            recompress: vec!["zstd-19".into(), "lz4-page".into(), "lzo-999".into()],
            writeback: Some(path.clone()),
            batch: 8,
            ..TierOptions::default()
        };
        let r = bench_tiers(&timer, "lzo-rle", &pages, &opts).unwrap();
        assert_eq!(r.recompress.len(), 6);
        let zstd_idle = &r.recompress[1];
        assert!(zstd_idle.recompressed > 0 && zstd_idle.bytes_saved > 0, "{zstd_idle:?}");
        let first = r.memory[0];
        let recompressed = r.memory[2];
        assert!(recompressed.compr_data_size < first.compr_data_size);
        let w = r.writeback.as_ref().unwrap();
        assert_eq!(w.written, pages.len() as u64 - r.same_pages);
        assert_eq!(r.memory.last().unwrap().mem_used_total, 0);
        assert!(!path.exists(), "the file is removed");
        assert!(r.render().contains("writeback to file"));
        assert!(secondary("nope").is_err() && secondary("zstd-x").is_err());
        assert!(
            bench_tiers(
                &timer,
                "lzo-rle",
                &pages,
                &TierOptions { recompress: vec!["zstd".into(); 4], ..opts }
            )
            .is_err()
        );
    }
}
