//! A user-space replay of the 2001 compressed-cache paper's workloads over a compressed page store.
//!
//! "RAM" is an LRU of `ram_mb` MiB of uncompressed pages; pages pushed out of it go into a
//! [`pagestore::PageStore`] (the compressed cache / zram), and touching a page that is not
//! in RAM loads it back. Like Linux's swap cache, a page loaded back keeps its compressed
//! copy until it is written (then the copy is dropped), so evicting an unmodified page costs
//! nothing. Every page loaded from the store is checked against a hash of what was last
//! written to it: a lost or corrupted page stops the run with an error.
//!
//! Workloads (sizes relative to the simulated RAM, as in the 2001 memtest runs where the
//! kernel and daemons also lived in RAM):
//! - `mmap001`: writes `array[i] = i` through a mapping of 1.25x RAM (every page the byte
//!   ramp), then reads it all back;
//! - `mmap002`: writes a 1.5x RAM mapping like mmap001, copies it into 1.5x RAM of anonymous
//!   memory and back (3x RAM working set);
//! - `fillmem`: 1.5x RAM of 1 MiB malloc blocks filled forward with `i & 0xff`, then backward
//!   with glibc `rand() % 200`, then read forward;
//! - `memload`: contest's mem_load: 1.1x RAM touched three times over with a page stride that
//!   defeats the LRU (each touch writes one word).

use std::collections::{BTreeMap, HashMap};

use pagecodec::Page;
use pagestore::{BackingConfig, EntryCodec, FileBacking, PageStore, Selection, StoreConfig, TimeUnit};
use serde::Serialize;

use crate::corpus::{FILLMEM_BLOCK_PAGES, GlibcRand, fillmem_block, ramp_page};
use crate::timing::{TickStats, Timer};

/// The workloads of the 2001 compressed-cache paper.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Workload {
    /// Sequential writes through a file mapping, then reads.
    Mmap001,
    /// A mapping copied into anonymous memory and back.
    Mmap002,
    /// 1 MiB blocks filled forward, refilled backward, read.
    Fillmem,
    /// Cache-hostile strided touches of 110% of RAM.
    Memload,
}

/// vmstat-like counters of one replay.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Counters {
    /// Page accesses (reads and writes).
    pub accesses: u64,
    /// First touches (zero-filled pages, no I/O).
    pub minor_faults: u64,
    /// Pages loaded back from the store (`pswpin`).
    pub pswpin: u64,
    /// Pages written to the store (`pswpout`).
    pub pswpout: u64,
    /// KiB paged in (`pgpgin`, 4 per page).
    pub pgpgin: u64,
    /// KiB paged out (`pgpgout`, 4 per page).
    pub pgpgout: u64,
    /// Evictions of unmodified pages whose compressed copy was still stored (free).
    pub clean_evictions: u64,
    /// Stores refused (memory limit or no memory): the page stayed in RAM.
    pub store_failures: u64,
    /// Most pages held in the store at once.
    pub peak_stored_pages: u64,
}

/// A resident page.
struct Frame {
    stamp: u64,
    dirty: bool,
    page: Box<Page>,
}

/// The replay engine: LRU "RAM" over a page store.
pub struct Machine<C: EntryCodec> {
    store: PageStore<C>,
    capacity: usize,
    resident: HashMap<u64, Frame>,
    lru: BTreeMap<u64, u64>,
    clock: u64,
    truth: HashMap<u64, u64>,
    /// The counters so far.
    pub counters: Counters,
    timer: Timer,
    store_ticks: Vec<u64>,
    load_ticks: Vec<u64>,
    /// Evictions between writeback passes (0: no backing file).
    writeback_every: u64,
    evictions_since: u64,
    backing: BackingFigures,
}

/// What a backing file took (`simulate --writeback FILE`).
#[derive(Clone, Debug, Default, Serialize)]
pub struct BackingFigures {
    /// Writeback passes (one per RAM's worth of evictions).
    pub passes: u64,
    /// Pages written to the file.
    pub written: u64,
    /// Pages read back from the file.
    pub reads: u64,
    /// Pages on the file at the end.
    pub on_file: u64,
    /// Wall-clock seconds spent in writeback.
    pub seconds: f64,
}

/// FNV-1a of a page: what the replay remembers of each page's content.
pub(crate) fn fingerprint(page: &Page) -> u64 {
    page.words64().iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &w| (h ^ w).wrapping_mul(0x100_0000_01b3))
}

impl<C: EntryCodec> Machine<C> {
    /// A machine with `ram_pages` pages of RAM over a store using `codec`.
    pub fn new(codec: C, ram_pages: usize, timer: Timer) -> Machine<C> {
        Machine {
            store: PageStore::with_config(codec, StoreConfig::default().with_timing(true)),
            capacity: ram_pages.max(1),
            resident: HashMap::new(),
            lru: BTreeMap::new(),
            clock: 0,
            truth: HashMap::new(),
            counters: Counters::default(),
            timer,
            store_ticks: Vec::new(),
            load_ticks: Vec::new(),
            writeback_every: 0,
            evictions_since: 0,
            backing: BackingFigures::default(),
        }
    }

    /// Writes idle pages back to a file at `path` (created; the caller removes it): after
    /// every RAM's worth of evictions, the pages neither stored nor loaded since the previous
    /// pass go to the file, then every page is marked idle (zram's mark-idle-then-writeback
    /// cycle).
    ///
    /// # Errors
    ///
    /// The file cannot be created.
    pub fn write_back_to(&mut self, path: &std::path::Path, slots: u64) -> Result<(), String> {
        let file = FileBacking::create(path, slots).map_err(|e| format!("{}: {e}", path.display()))?;
        self.store.set_backing(Box::new(file), BackingConfig::default()).map_err(|e| e.to_string())?;
        self.writeback_every = self.capacity as u64;
        Ok(())
    }

    fn writeback_pass(&mut self) -> Result<(), String> {
        let started = std::time::Instant::now();
        let r = self.store.writeback(Selection::Idle, u64::MAX, 64).map_err(|e| e.to_string())?;
        self.backing.seconds += started.elapsed().as_secs_f64();
        if let Some(e) = r.error {
            return Err(format!("writeback failed after {} pages: {e}", r.written));
        }
        self.store.mark_idle();
        self.backing.passes += 1;
        self.backing.written += r.written;
        Ok(())
    }

    /// The store, for its statistics.
    pub fn store(&self) -> &PageStore<C> {
        &self.store
    }

    fn evict_one(&mut self) -> Result<(), String> {
        let Some((&stamp, &key)) = self.lru.iter().next() else { return Ok(()) };
        let frame = self.resident.get(&key).expect("LRU and RAM agree");
        if !frame.dirty && self.store.contains(key) {
            self.counters.clean_evictions += 1;
        } else {
            let (ticks, r) = self.timer.time(|| self.store.store(key, &frame.page));
            if let Err(e) = r {
                // The store is full: the page has nowhere to go (the kernel would OOM-kill);
                // count it and stop the replay.
                self.counters.store_failures += 1;
                return Err(format!("store refused page {key:#x}: {e}"));
            }
            self.store_ticks.push(ticks);
            self.counters.pswpout += 1;
            self.counters.pgpgout += 4;
            self.counters.peak_stored_pages = self.counters.peak_stored_pages.max(self.store.len() as u64);
        }
        self.lru.remove(&stamp);
        self.resident.remove(&key);
        if self.writeback_every > 0 {
            self.evictions_since += 1;
            if self.evictions_since >= self.writeback_every {
                self.evictions_since = 0;
                self.writeback_pass()?;
            }
        }
        Ok(())
    }

    /// Makes `key` resident (faulting it in) and returns its frame.
    fn fault_in(&mut self, key: u64) -> Result<&mut Frame, String> {
        self.counters.accesses += 1;
        self.clock += 1;
        let stamp = self.clock;
        if let Some(frame) = self.resident.get_mut(&key) {
            self.lru.remove(&frame.stamp);
            frame.stamp = stamp;
            self.lru.insert(stamp, key);
            return Ok(self.resident.get_mut(&key).expect("just seen"));
        }
        while self.resident.len() >= self.capacity {
            self.evict_one()?;
        }
        let mut page = Box::new(Page::zeroed());
        let dirty = if self.store.contains(key) {
            let (ticks, r) = self.timer.time(|| self.store.load(key, &mut page));
            r.map_err(|e| format!("LOST PAGE {key:#x}: load failed: {e}"))?;
            self.load_ticks.push(ticks);
            if self.truth.get(&key) != Some(&fingerprint(&page)) {
                return Err(format!("CORRUPTED PAGE {key:#x}: the store gave back different bytes"));
            }
            self.counters.pswpin += 1;
            self.counters.pgpgin += 4;
            false
        } else {
            self.counters.minor_faults += 1;
            true
        };
        self.lru.insert(stamp, key);
        Ok(self.resident.entry(key).or_insert(Frame { stamp, dirty, page }))
    }

    /// Reads page `key`.
    ///
    /// # Errors
    ///
    /// A page lost or corrupted by the store.
    pub fn read(&mut self, key: u64) -> Result<&Page, String> {
        Ok(&self.fault_in(key)?.page)
    }

    /// Writes page `key` through `write`.
    ///
    /// # Errors
    ///
    /// A page lost or corrupted by the store.
    pub fn write(&mut self, key: u64, write: impl FnOnce(&mut Page)) -> Result<(), String> {
        let frame = self.fault_in(key)?;
        let was_clean = !frame.dirty;
        frame.dirty = true;
        write(&mut frame.page);
        let print = fingerprint(&frame.page);
        if was_clean {
            // The stored copy is stale now: drop it, as the kernel frees the swap slot.
            self.store.remove(key);
        }
        self.truth.insert(key, print);
        Ok(())
    }
}

/// Key of page `index` in region `region` (regions never overlap).
fn key(region: u64, index: usize) -> u64 {
    (region << 40) | index as u64
}

/// What a workload runs on: the simulated machine, or real memory (`pagebench swap`).
pub trait Memory {
    /// Reads page `key`.
    ///
    /// # Errors
    ///
    /// A page lost or corrupted.
    fn read(&mut self, key: u64) -> Result<&Page, String>;

    /// Writes page `key` through `write`.
    ///
    /// # Errors
    ///
    /// A page lost or corrupted.
    fn write(&mut self, key: u64, write: &mut dyn FnMut(&mut Page)) -> Result<(), String>;
}

impl<C: EntryCodec> Memory for Machine<C> {
    fn read(&mut self, key: u64) -> Result<&Page, String> {
        Machine::read(self, key)
    }
    fn write(&mut self, key: u64, write: &mut dyn FnMut(&mut Page)) -> Result<(), String> {
        Machine::write(self, key, write)
    }
}

/// The page `key` names in a flat array of `region_pages`-page regions (the workloads use
/// regions 0..4).
pub fn key_to_page(key: u64, region_pages: usize) -> usize {
    (key >> 40) as usize * region_pages + (key & ((1 << 40) - 1)) as usize
}

/// Pages each region of `workload` needs with `ram_pages` of RAM (at least every index it
/// touches), for laying the regions out in real memory.
pub fn region_pages(workload: Workload, ram_pages: usize) -> usize {
    let blocks = (ram_pages * 3 / 2).div_ceil(256).max(1);
    match workload {
        Workload::Mmap001 => ram_pages * 5 / 4,
        Workload::Mmap002 => ram_pages * 3 / 2,
        Workload::Fillmem => blocks * FILLMEM_BLOCK_PAGES,
        Workload::Memload => (ram_pages * 11 / 10).max(2),
    }
    .max(1)
}

/// Replays `workload` on `machine` whose RAM is `ram_pages` pages.
///
/// # Errors
///
/// The first page the store loses or corrupts.
pub fn replay<M: Memory>(machine: &mut M, workload: Workload, ram_pages: usize) -> Result<(), String> {
    match workload {
        Workload::Mmap001 => {
            let n = ram_pages * 5 / 4;
            let ramp = ramp_page();
            for i in 0..n {
                machine.write(key(0, i), &mut |p| *p = ramp.clone())?;
            }
            for i in 0..n {
                machine.read(key(0, i))?;
            }
        }
        Workload::Mmap002 => {
            let n = ram_pages * 3 / 2;
            let ramp = ramp_page();
            for i in 0..n {
                machine.write(key(0, i), &mut |p| *p = ramp.clone())?;
            }
            for (from, to) in [(0, 1), (1, 0)] {
                for i in 0..n {
                    let page = machine.read(key(from, i))?.clone();
                    machine.write(key(to, i), &mut |p| *p = page.clone())?;
                }
            }
        }
        Workload::Fillmem => {
            let blocks = (ram_pages * 3 / 2).div_ceil(256).max(1);
            let write_block = |m: &mut M, b: usize, byte: u8| -> Result<(), String> {
                for (j, page) in fillmem_block(byte).into_iter().enumerate() {
                    m.write(key(2, b * FILLMEM_BLOCK_PAGES + j), &mut |p| *p = page.clone())?;
                }
                Ok(())
            };
            for b in 0..blocks {
                write_block(machine, b, b as u8)?;
            }
            let mut rand = GlibcRand::new(1);
            for b in (0..blocks).rev() {
                write_block(machine, b, (rand.next_rand() % 200) as u8)?;
            }
            for i in 0..blocks * FILLMEM_BLOCK_PAGES {
                machine.read(key(2, i))?;
            }
        }
        Workload::Memload => {
            let n = (ram_pages * 11 / 10).max(2);
            // A stride coprime with n near n/3: consecutive touches land far apart, and every
            // page is touched once per pass.
            let mut stride = n / 3 + 1;
            while gcd(stride, n) != 1 {
                stride += 1;
            }
            for pass in 0..3u32 {
                for k in 0..n {
                    let i = k * stride % n;
                    machine.write(key(3, i), &mut |p| {
                        p.words_mut()[(pass as usize * 97) % 1024] = pass * n as u32 + i as u32
                    })?;
                }
            }
        }
    }
    Ok(())
}

fn gcd(a: usize, b: usize) -> usize {
    if b == 0 { a } else { gcd(b, a % b) }
}

/// Everything a replay reports.
#[derive(Clone, Debug, Serialize)]
pub struct SimReport {
    /// The workload.
    pub workload: Workload,
    /// Simulated RAM, MiB.
    pub ram_mb: usize,
    /// The store's codec.
    pub codec: String,
    /// vmstat-like counters.
    pub counters: Counters,
    /// Pages stored at the end.
    pub stored_pages: u64,
    /// Figures of the paper's table of the store (cumulative over the replay).
    pub table: StoreTable,
    /// Store ticks per page as timed around `store` (fenced TSC).
    pub store_ticks: TickStats,
    /// Load ticks per page as timed around `load`.
    pub load_ticks: TickStats,
    /// The backing file's figures (`--writeback`).
    pub backing: Option<BackingFigures>,
}

/// The store's figures in the 2001 paper's shape plus zram's mm_stat.
#[derive(Clone, Debug, Serialize)]
pub struct StoreTable {
    /// Pages handed to the store.
    pub pages: u64,
    /// Same-filled pages (kept as a value).
    pub same_filled: u64,
    /// Compressed size min / max / mean over the pages kept compressed.
    pub size_min: u64,
    /// See `size_min`.
    pub size_max: u64,
    /// See `size_min`.
    pub size_mean: f64,
    /// Compression time min / median / mean / max, in `time_unit`.
    pub compress: [f64; 4],
    /// Decompression time min / median / mean / max, in `time_unit`.
    pub decompress: [f64; 4],
    /// "tsc-ticks", "ns" or "none".
    pub time_unit: String,
    /// input / output over the pages that went through the codec.
    pub ratio: f64,
    /// Pages stored raw (over the huge threshold) and their share of the compressed ones.
    pub incompressible: u64,
    /// See `incompressible`.
    pub incompressible_share: f64,
    /// Pages kept by the codec's first / fallback variant (hybrid).
    pub by_variant: [u64; 2],
    /// zram mm_stat: orig_data_size.
    pub orig_data_size: u64,
    /// zram mm_stat: compr_data_size.
    pub compr_data_size: u64,
    /// zram mm_stat: mem_used_total.
    pub mem_used_total: u64,
    /// zram mm_stat: mem_used_max.
    pub mem_used_max: u64,
    /// zram mm_stat: same_pages.
    pub same_pages: u64,
    /// zram mm_stat: huge_pages.
    pub huge_pages: u64,
    /// zram mm_stat: pages_compacted.
    pub pages_compacted: u64,
}

impl StoreTable {
    /// The figures of `store` now.
    pub fn of<C: EntryCodec>(store: &PageStore<C>) -> StoreTable {
        let s = store.stats();
        let c = s.codec;
        let four = |m: pagestore::Summary| [m.min as f64, m.median as f64, m.mean, m.max as f64];
        StoreTable {
            pages: c.pages,
            same_filled: c.same_filled,
            size_min: c.compressed_size.min,
            size_max: c.compressed_size.max,
            size_mean: c.compressed_size.mean,
            compress: four(c.compress_time),
            decompress: four(c.decompress_time),
            time_unit: match c.time_unit {
                TimeUnit::TscTicks => "tsc-ticks",
                TimeUnit::Nanoseconds => "ns",
                _ => "none",
            }
            .into(),
            ratio: c.ratio(),
            incompressible: c.incompressible,
            incompressible_share: c.incompressible_share(),
            by_variant: c.by_variant,
            orig_data_size: s.mm.orig_data_size,
            compr_data_size: s.mm.compr_data_size,
            mem_used_total: s.mm.mem_used_total,
            mem_used_max: s.mm.mem_used_max,
            same_pages: s.mm.same_pages,
            huge_pages: s.mm.huge_pages,
            pages_compacted: s.mm.pages_compacted,
        }
    }

    /// The statistics table in the 2001 paper's style and the mm_stat line.
    pub fn render(&self, codec: &str) -> String {
        let unit = if self.time_unit == "tsc-ticks" { "TSC ticks" } else { self.time_unit.as_str() };
        format!(
            "compressed cache ({codec}):\n\
             {:>8} {:>6} | {:>5} {:>5} {:>7} | {:^31} | {:^31} | {:>6} {:>8} {:>6}\n\
             {:>8} {:>6} | {:>5} {:>5} {:>7} | {:>7} {:>7} {:>7} {:>7} | {:>7} {:>7} {:>7} {:>7} | {:>6} {:>8} {:>6}\n\
             {:>8} {:>6} | {:>5} {:>5} {:>7.1} | {:>7} {:>7} {:>7.0} {:>7} | {:>7} {:>7} {:>7.0} {:>7} | {:>5.2}x {:>8} {:>5.1}%\n\
             mm_stat: orig_data_size {} compr_data_size {} mem_used_total {} mem_used_max {} same_pages {} \
             huge_pages {} pages_compacted {}; mem_used_total / orig_data_size = {:.1}%; by variant {:?}\n\
             (pages, same and discard count every store of the replay, as the paper's table does; \
             mm_stat describes the pages held at the end, as zram's does; discard = stored raw, \
             over the huge threshold; by variant = pages kept by each codec of a hybrid)\n",
            "pages",
            "same",
            "size",
            "",
            "",
            format!("compress ({unit})"),
            format!("decompress ({unit})"),
            "ratio",
            "discard",
            "share",
            "",
            "",
            "min",
            "max",
            "mean",
            "min",
            "median",
            "mean",
            "max",
            "min",
            "median",
            "mean",
            "max",
            "",
            "",
            "",
            self.pages,
            self.same_filled,
            self.size_min,
            self.size_max,
            self.size_mean,
            self.compress[0],
            self.compress[1],
            self.compress[2],
            self.compress[3],
            self.decompress[0],
            self.decompress[1],
            self.decompress[2],
            self.decompress[3],
            self.ratio,
            self.incompressible,
            self.incompressible_share * 100.0,
            self.orig_data_size,
            self.compr_data_size,
            self.mem_used_total,
            self.mem_used_max,
            self.same_pages,
            self.huge_pages,
            self.pages_compacted,
            if self.orig_data_size == 0 {
                0.0
            } else {
                self.mem_used_total as f64 * 100.0 / self.orig_data_size as f64
            },
            self.by_variant,
        )
    }
}

/// Runs `workload` with `ram_mb` MiB of RAM over a store using `codec`.
///
/// # Errors
///
/// A page lost or corrupted by the store.
pub fn simulate<C: EntryCodec>(
    codec: C,
    workload: Workload,
    ram_mb: usize,
    timer: &Timer,
) -> Result<SimReport, String> {
    simulate_with(codec, workload, ram_mb, timer, None)
}

/// [`simulate`], writing idle pages back to a file at `writeback` (see
/// [`Machine::write_back_to`]; the file is removed at the end).
///
/// # Errors
///
/// As [`simulate`], or a file that cannot be made or written.
pub fn simulate_with<C: EntryCodec>(
    codec: C,
    workload: Workload,
    ram_mb: usize,
    timer: &Timer,
    writeback: Option<&std::path::Path>,
) -> Result<SimReport, String> {
    let ram_pages = ram_mb * 256;
    let name = codec.name().to_string();
    let mut machine = Machine::new(codec, ram_pages, timer.clone());
    if let Some(path) = writeback {
        // Every workload touches at most 3x RAM.
        machine.write_back_to(path, 4 * ram_pages as u64)?;
    }
    let replayed = replay(&mut machine, workload, ram_pages);
    if let Some(path) = writeback {
        let _ = std::fs::remove_file(path);
    }
    replayed?;
    let backing = writeback.map(|_| {
        let bd = machine.store.stats().tiers.backing;
        BackingFigures { reads: bd.reads, on_file: bd.pages, ..machine.backing.clone() }
    });
    Ok(SimReport {
        workload,
        ram_mb,
        codec: name,
        counters: machine.counters.clone(),
        stored_pages: machine.store.len() as u64,
        table: StoreTable::of(&machine.store),
        store_ticks: TickStats::from_ticks(&mut machine.store_ticks),
        load_ticks: TickStats::from_ticks(&mut machine.load_ticks),
        backing,
    })
}

impl SimReport {
    /// Counters and the compressed-cache table.
    pub fn render(&self) -> String {
        let c = &self.counters;
        format!(
            "{:?} with {} MiB of RAM over a {} page store:\n\
             accesses {}  minor faults {}  pswpin {}  pswpout {}  pgpgin {} KiB  pgpgout {} KiB  \
             clean evictions {}  store failures {}  peak stored pages {}  stored at end {}\n\
             store() {} calls, ticks median {} p99 {} max {};  load() {} calls, ticks median {} p99 {} max {}\n{}",
            self.workload,
            self.ram_mb,
            self.codec,
            c.accesses,
            c.minor_faults,
            c.pswpin,
            c.pswpout,
            c.pgpgin,
            c.pgpgout,
            c.clean_evictions,
            c.store_failures,
            c.peak_stored_pages,
            self.stored_pages,
            self.store_ticks.count,
            self.store_ticks.median,
            self.store_ticks.p99,
            self.store_ticks.max,
            self.load_ticks.count,
            self.load_ticks.median,
            self.load_ticks.p99,
            self.load_ticks.max,
            self.table.render(&self.codec)
        ) + &self.backing.as_ref().map_or(String::new(), |b| {
            format!(
                "\nbacking file: {} writeback passes wrote {} pages in {:.3} s; {} pages read back from it; {} on it at the end",
                b.passes, b.written, b.seconds, b.reads, b.on_file
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timing::Clock;
    use pagecodec::{CompressError, DecompressError, PageCodec, Raw};

    fn timer() -> Timer {
        Timer::with_clock(Clock::Instant)
    }

    #[test]
    fn every_workload_swaps_and_verifies() {
        for w in [Workload::Mmap001, Workload::Mmap002, Workload::Fillmem, Workload::Memload] {
            let r = simulate(lzokit::LzoRle::default(), w, 1, &timer()).unwrap();
            let c = &r.counters;
            assert!(c.pswpout > 0, "{w:?}: {}", r.render());
            assert_eq!(c.pgpgout, 4 * c.pswpout);
            assert!(c.accesses >= c.minor_faults + c.pswpin);
            assert!(r.table.pages >= c.pswpout);
        }
    }

    #[test]
    fn a_backing_file_takes_idle_pages_and_gives_them_back() {
        let path = std::env::temp_dir().join(format!("pagebench-sim-{}.slots", std::process::id()));
        for w in [Workload::Mmap002, Workload::Fillmem] {
            let plain = simulate(lzokit::LzoRle::default(), w, 1, &timer()).unwrap();
            let r = simulate_with(lzokit::LzoRle::default(), w, 1, &timer(), Some(&path)).unwrap();
            let b = r.backing.as_ref().unwrap();
            assert!(b.passes > 0 && b.written > 0, "{w:?}: {}", r.render());
            assert_eq!(
                r.counters.pswpin, plain.counters.pswpin,
                "the file changes where pages are, not which"
            );
            assert!(r.render().contains("backing file"));
            assert!(!path.exists(), "the file is removed");
        }
    }

    #[test]
    fn fillmem_is_mostly_same_filled_and_ramp_pages_compress() {
        let r = simulate(lzokit::Lzo1x::default(), Workload::Fillmem, 1, &timer()).unwrap();
        assert!(r.table.same_filled as f64 >= 0.95 * r.table.pages as f64, "{}", r.render());
        let r = simulate(lzokit::Lzo1x::default(), Workload::Mmap001, 1, &timer()).unwrap();
        assert!(r.table.ratio > 10.0, "{}", r.render());
        assert!(r.counters.pswpin > 0, "the read pass loads pages back");
    }

    /// A lossy codec: keeps the first 3000 bytes of a page and gives back zeros for the
    /// rest (nothing else in the pipeline can notice, only the replay's fingerprints).
    struct Lossy;

    impl PageCodec for Lossy {
        fn name(&self) -> &'static str {
            "lossy"
        }
        fn max_compressed_len(&self) -> usize {
            4096
        }
        fn compress(&mut self, page: &Page, out: &mut [u8]) -> Result<usize, CompressError> {
            let n = 3000.min(out.len());
            out[..n].copy_from_slice(&page.as_bytes()[..n]);
            Ok(n)
        }
        fn decompress(&mut self, input: &[u8], page: &mut Page) -> Result<(), DecompressError> {
            PageCodec::decompress(&mut Raw, &[input, &[0u8; 1096][..]].concat(), page)
        }
    }

    #[test]
    fn a_lossy_store_is_caught() {
        let err = simulate(Lossy, Workload::Mmap001, 1, &timer()).unwrap_err();
        assert!(err.contains("CORRUPTED PAGE"), "{err}");
    }
}
