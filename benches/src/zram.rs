//! `zram`: the kernel's zram and `pagestore` on the same pages, side by side.
//!
//! For each codec the running kernel offers, a zram device of our own is hot-added through
//! `zram-control`, the pages are written with 4 KiB `O_DIRECT` writes, `mm_stat` is read,
//! every page is read back and compared, and the device is reset and hot-removed on every
//! exit path (a guard's `Drop`; Ctrl-C sets a flag checked between pages). The same pages
//! then go through a [`PageStore`] with the same codec and the kernel's huge threshold.
//!
//! Sysfs and `/dev` are parameters ([`ZramPaths`]) so the parsing and the cleanup order can
//! be tested against a temporary directory; the measured path always uses the real kernel.

use std::alloc::{GlobalAlloc, Layout, System};
use std::fmt;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use pagecodec::{PAGE_SIZE, Page, PageCodec};
use pagestore::{PageStore, StoreConfig};
use serde::Serialize;

/// The kernel codecs the comparison knows, in table order.
pub const KERNEL_CODECS: [&str; 4] = ["lzo-rle", "lzo", "lz4", "zstd"];

/// zsmalloc's pages-per-zspage limit (`CONFIG_ZSMALLOC_CHAIN_SIZE`, default 8).
pub const ZSMALLOC_CHAIN_SIZE: usize = 8;

/// Where sysfs and the device nodes are (`/sys` and `/dev` for the real kernel).
#[derive(Clone, Debug)]
pub struct ZramPaths {
    /// The sysfs root.
    pub sys: PathBuf,
    /// The device-node directory.
    pub dev: PathBuf,
}

impl Default for ZramPaths {
    fn default() -> Self {
        ZramPaths { sys: PathBuf::from("/sys"), dev: PathBuf::from("/dev") }
    }
}

impl ZramPaths {
    /// `class/zram-control`.
    pub fn control(&self) -> PathBuf {
        self.sys.join("class/zram-control")
    }
    /// `block/zram<id>`.
    pub fn block(&self, id: u32) -> PathBuf {
        self.sys.join(format!("block/zram{id}"))
    }
    /// The device node of `zram<id>`.
    pub fn node(&self, id: u32) -> PathBuf {
        self.dev.join(format!("zram{id}"))
    }
}

/// What went wrong, naming the file or value at fault.
#[derive(Debug)]
pub enum ZramError {
    /// Not running as root.
    NotRoot {
        /// The effective user id.
        euid: u32,
    },
    /// No zram-control directory.
    NoZram {
        /// The directory that is missing.
        path: PathBuf,
    },
    /// A file could not be read or written (the kernel refusing a value lands here too).
    Io {
        /// What was being done.
        what: String,
        /// The file.
        path: PathBuf,
        /// The error.
        source: io::Error,
    },
    /// A sysfs file did not hold what the kernel documents.
    Parse {
        /// The file.
        path: PathBuf,
        /// Its contents.
        text: String,
        /// Why it was rejected.
        reason: &'static str,
    },
    /// A page read back differs from the page written.
    Mismatch {
        /// `zram` or `pagestore`.
        side: &'static str,
        /// The codec.
        codec: String,
        /// The page index.
        page: usize,
    },
    /// The store refused or lost a page.
    Store {
        /// The codec.
        codec: String,
        /// The page index.
        page: usize,
        /// The store's error.
        message: String,
    },
    /// The user pressed Ctrl-C.
    Interrupted,
    /// No codec of the selection is offered by the kernel.
    NoCodec {
        /// What the kernel offers.
        offered: Vec<String>,
        /// What was asked for.
        wanted: Vec<String>,
    },
    /// The huge-threshold probe found no page with a stream of the wanted length.
    Probe(String),
}

impl fmt::Display for ZramError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ZramError::NotRoot { euid } => write!(
                f,
                "zram needs root (effective uid is {euid}): hot-adding a device and O_DIRECT on it are root-only"
            ),
            ZramError::NoZram { path } => {
                write!(f, "no zram: {} is missing (load the module: modprobe zram)", path.display())
            }
            ZramError::Io { what, path, source } => write!(f, "{what} {}: {source}", path.display()),
            ZramError::Parse { path, text, reason } => {
                write!(f, "{}: {reason} (read {:?})", path.display(), text.trim_end())
            }
            ZramError::Mismatch { side, codec, page } => {
                write!(f, "{side} with {codec}: page {page} read back differs from the page written")
            }
            ZramError::Store { codec, page, message } => {
                write!(f, "pagestore with {codec}: page {page}: {message}")
            }
            ZramError::Interrupted => f.write_str("interrupted (a signal); the device was reset and removed"),
            ZramError::NoCodec { offered, wanted } => write!(
                f,
                "the kernel offers none of the wanted codecs (wanted {}; offered {})",
                wanted.join(", "),
                offered.join(", ")
            ),
            ZramError::Probe(m) => write!(f, "huge-threshold probe: {m}"),
        }
    }
}

impl std::error::Error for ZramError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ZramError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

fn io_err(what: impl Into<String>, path: &Path) -> impl FnOnce(io::Error) -> ZramError + '_ {
    let what = what.into();
    move |source| ZramError::Io { what, path: path.to_path_buf(), source }
}

/// The codecs in a `comp_algorithm` file and the selected one (in brackets):
/// `"lzo [lzo-rle] lz4"` gives `(["lzo", "lzo-rle", "lz4"], Some("lzo-rle"))`.
pub fn parse_comp_algorithm(text: &str) -> (Vec<String>, Option<String>) {
    let mut all = Vec::new();
    let mut current = None;
    for word in text.split_whitespace() {
        let name = word.trim_start_matches('[').trim_end_matches(']');
        if name.is_empty() {
            continue;
        }
        if word.starts_with('[') && word.ends_with(']') {
            current = Some(name.to_string());
        }
        all.push(name.to_string());
    }
    (all, current)
}

/// zram's `mm_stat` (Documentation/admin-guide/blockdev/zram.rst).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct KernelMmStat {
    /// Uncompressed bytes stored.
    pub orig_data_size: u64,
    /// Compressed bytes stored.
    pub compr_data_size: u64,
    /// Memory allocated for the compressed data, allocator overhead included.
    pub mem_used_total: u64,
    /// The memory limit (0: none).
    pub mem_limit: u64,
    /// Peak of `mem_used_total`.
    pub mem_used_max: u64,
    /// Same-filled pages (no memory).
    pub same_pages: u64,
    /// Pages freed by compaction.
    pub pages_compacted: u64,
    /// Incompressible pages stored whole.
    pub huge_pages: u64,
}

/// Parses `mm_stat`: 8 numbers (Linux 5.x) or more (later kernels append counters).
///
/// # Errors
///
/// A field that is not a number, or fewer than 8 fields (the message says which).
pub fn parse_mm_stat(text: &str) -> Result<KernelMmStat, &'static str> {
    let mut v = [0u64; 8];
    let mut n = 0;
    for (i, word) in text.split_whitespace().enumerate() {
        let x: u64 = word.parse().map_err(|_| "a field is not a decimal number")?;
        if i < 8 {
            v[i] = x;
        }
        n += 1;
    }
    if n < 8 {
        return Err("fewer than 8 fields");
    }
    Ok(KernelMmStat {
        orig_data_size: v[0],
        compr_data_size: v[1],
        mem_used_total: v[2],
        mem_limit: v[3],
        mem_used_max: v[4],
        same_pages: v[5],
        pages_compacted: v[6],
        huge_pages: v[7],
    })
}

/// zsmalloc's `huge_class_size` for 4 KiB pages: zram stores a page whole ("huge") when
/// its stream is this many bytes or more.
///
/// zsmalloc's size classes run from 32 bytes in steps of `4096 >> 8 = 16` to 4096. Going
/// down from the largest, a class's zspage is the chain of 1..=`chain` pages wasting the
/// fewest bytes (the first such chain); the first class whose zspage has more than one
/// page *and* more than one object is the huge boundary, and `zs_malloc` adds the 8-byte
/// handle before looking up the class, so the threshold is that class size minus 7.
pub fn zsmalloc_huge_class_size(chain: usize) -> usize {
    const MIN: usize = 32;
    const DELTA: usize = PAGE_SIZE >> 8;
    const HANDLE: usize = 8;
    let classes = (PAGE_SIZE - MIN).div_ceil(DELTA) + 1;
    for i in (0..classes).rev() {
        let size = (MIN + i * DELTA).min(PAGE_SIZE);
        let pages = zspage_chain(size, chain);
        let objects = pages * PAGE_SIZE / size;
        if pages != 1 && objects != 1 {
            return size - (HANDLE - 1);
        }
    }
    PAGE_SIZE
}

/// zsmalloc's `calculate_zspage_chain_size`.
fn zspage_chain(size: usize, chain: usize) -> usize {
    if size.is_power_of_two() {
        return 1;
    }
    let mut best = (usize::MAX, 1);
    for i in 1..=chain.max(1) {
        let waste = (i * PAGE_SIZE) % size;
        if waste < best.0 {
            best = (waste, i);
        }
    }
    best.1
}

/// The store codec matching a kernel codec (`None` for kernel codecs we have no twin of).
pub fn store_codec(kernel: &str) -> Option<Box<dyn PageCodec + Send>> {
    match kernel {
        "lzo-rle" => Some(Box::new(lzokit::LzoRle::default())),
        "lzo" => Some(Box::new(lzokit::Lzo1xKernel::default())),
        "lz4" => Some(Box::new(pagecodec_adapters::Lz4::new())),
        // zram's zstd backend uses zstd's default level, 3, as the adapter does.
        "zstd" => pagecodec_adapters::Zstd::new().ok().map(|c| Box::new(c) as Box<dyn PageCodec + Send>),
        _ => None,
    }
}

// Ctrl-C, `kill` or a closed terminal: the handler only sets this flag; the loops check it
// between pages and return an error, so the guards' Drop resets and removes the device (and
// turns its swap off). Killed by the default action instead, the process would leave them.
static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// The signals routed to the interruption flag.
const INTERRUPTS: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

extern "C" fn on_interrupt(_: libc::c_int) {
    INTERRUPTED.store(true, Ordering::SeqCst);
}

/// Routes SIGINT, SIGTERM and SIGHUP to the interruption flag.
pub fn install_interrupt_handler() {
    let handler = on_interrupt as extern "C" fn(libc::c_int);
    for signal in INTERRUPTS {
        // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
        unsafe {
            libc::signal(signal, handler as libc::sighandler_t);
        }
    }
}

fn check_interrupt() -> Result<(), ZramError> {
    if INTERRUPTED.load(Ordering::SeqCst) { Err(ZramError::Interrupted) } else { Ok(()) }
}

/// A zram device we hot-added; reset and hot-removed when dropped.
pub struct Device<'a> {
    paths: &'a ZramPaths,
    id: u32,
    released: bool,
}

impl<'a> Device<'a> {
    /// Hot-adds a device (reading `hot_add` creates one and returns its id).
    ///
    /// # Errors
    ///
    /// `hot_add` unreadable or not holding a device number.
    pub fn hot_add(paths: &'a ZramPaths) -> Result<Device<'a>, ZramError> {
        let path = paths.control().join("hot_add");
        let text =
            std::fs::read_to_string(&path).map_err(io_err("hot-adding a zram device through", &path))?;
        let id = text.trim().parse::<u32>().map_err(|_| ZramError::Parse {
            path: path.clone(),
            text: text.clone(),
            reason: "not a device number",
        })?;
        Ok(Device { paths, id, released: false })
    }

    /// The device number.
    pub fn id(&self) -> u32 {
        self.id
    }

    /// Reads attribute `name` of the device.
    ///
    /// # Errors
    ///
    /// The attribute cannot be read.
    pub fn read(&self, name: &str) -> Result<String, ZramError> {
        let path = self.paths.block(self.id).join(name);
        std::fs::read_to_string(&path).map_err(io_err("reading", &path))
    }

    /// Writes `value` to attribute `name` (the kernel refusing it is an error naming both).
    ///
    /// # Errors
    ///
    /// The write fails.
    pub fn write(&self, name: &str, value: &str) -> Result<(), ZramError> {
        let path = self.paths.block(self.id).join(name);
        std::fs::write(&path, value).map_err(io_err(format!("writing {value:?} to"), &path))
    }

    /// `mm_stat`, parsed.
    ///
    /// # Errors
    ///
    /// Unreadable or malformed.
    pub fn mm_stat(&self) -> Result<KernelMmStat, ZramError> {
        let text = self.read("mm_stat")?;
        parse_mm_stat(&text).map_err(|reason| ZramError::Parse {
            path: self.paths.block(self.id).join("mm_stat"),
            text,
            reason,
        })
    }

    /// Opens the device node for `O_DIRECT` I/O, waiting briefly for it to appear.
    ///
    /// # Errors
    ///
    /// The node does not appear within a second or cannot be opened.
    pub fn open_direct(&self) -> Result<File, ZramError> {
        let node = self.paths.node(self.id);
        let mut tries = 0;
        loop {
            match OpenOptions::new().read(true).write(true).custom_flags(libc::O_DIRECT).open(&node) {
                Ok(f) => return Ok(f),
                Err(e) if e.kind() == io::ErrorKind::NotFound && tries < 100 => {
                    tries += 1;
                    std::thread::sleep(Duration::from_millis(10));
                }
                Err(e) => return Err(io_err("opening (O_DIRECT)", &node)(e)),
            }
        }
    }

    /// Resets and hot-removes the device, in that order, reporting the first failure
    /// (both steps are attempted).
    ///
    /// # Errors
    ///
    /// Writing `reset` or `hot_remove` failed.
    pub fn release(mut self) -> Result<(), ZramError> {
        self.release_inner()
    }

    fn release_inner(&mut self) -> Result<(), ZramError> {
        if self.released {
            return Ok(());
        }
        self.released = true;
        let reset = self.write("reset", "1");
        let path = self.paths.control().join("hot_remove");
        let remove = std::fs::write(&path, self.id.to_string())
            .map_err(io_err(format!("hot-removing zram{} through", self.id), &path));
        reset.and(remove)
    }
}

impl Drop for Device<'_> {
    fn drop(&mut self) {
        if let Err(e) = self.release_inner() {
            eprintln!("pagebench: warning: cleaning up zram{}: {e}", self.id);
        }
    }
}

/// One 4 KiB block aligned for `O_DIRECT`.
#[repr(C, align(4096))]
struct Block([u8; PAGE_SIZE]);

/// Median and 99th percentile of per-page times, in nanoseconds.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct Times {
    /// Median.
    pub median_ns: u64,
    /// 99th percentile.
    pub p99_ns: u64,
}

impl Times {
    fn of(mut ns: Vec<u64>) -> Times {
        if ns.is_empty() {
            return Times::default();
        }
        ns.sort_unstable();
        let at = |q: f64| ns[((ns.len() - 1) as f64 * q).round() as usize];
        Times { median_ns: at(0.5), p99_ns: at(0.99) }
    }
}

/// One side (zram or the store) for one codec.
#[derive(Clone, Debug, Serialize)]
pub struct Side {
    /// `zram` or `pagestore`.
    pub side: &'static str,
    /// The codec (the kernel's name).
    pub codec: String,
    /// The codec behind it (the kernel's name, or our codec's).
    pub implementation: String,
    /// The `mm_stat` fields.
    pub mm: KernelMmStat,
    /// Metadata bytes per stored page outside `mem_used_total` (the store: measured heap
    /// growth minus `mem_used_total`; zram: its table entry, 16 bytes, by construction).
    pub meta_bytes_per_page: Option<f64>,
    /// Per-page write (zram) or store time.
    pub write: Times,
    /// Per-page read (zram) or load time.
    pub read: Times,
}

/// Both sides at one scale.
#[derive(Clone, Debug, Serialize)]
pub struct ScaleReport {
    /// `captured`, `32k`, `256k`.
    pub scale: String,
    /// Pages written.
    pub pages: usize,
    /// The kernel's huge threshold (stream bytes at which a page is stored whole).
    pub huge_class_size: usize,
    /// One zram row and one store row per codec.
    pub rows: Vec<Side>,
}

/// A scale: the corpus as captured, or repeated to a page count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scale {
    /// As captured.
    Captured,
    /// Repeated (or cut) to this many pages.
    Pages(usize),
}

impl Scale {
    /// Parses `captured`, `32k` (x 1024) or a page count.
    ///
    /// # Errors
    ///
    /// Anything else, named.
    pub fn parse(s: &str) -> Result<Scale, String> {
        let t = s.trim().to_ascii_lowercase();
        if t == "captured" {
            return Ok(Scale::Captured);
        }
        let (digits, mult) = match t.strip_suffix('k') {
            Some(d) => (d, 1024),
            None => (t.as_str(), 1),
        };
        match digits.parse::<usize>() {
            Ok(n) if n > 0 => Ok(Scale::Pages(n * mult)),
            _ => Err(format!("bad scale {s:?}: want captured, a page count, or a count with k (x 1024)")),
        }
    }

    /// The name used in tables.
    pub fn name(&self) -> String {
        match self {
            Scale::Captured => "captured".into(),
            Scale::Pages(n) if n % 1024 == 0 => format!("{}k", n / 1024),
            Scale::Pages(n) => n.to_string(),
        }
    }

    /// The page indices of `corpus_len` pages at this scale (repeating the corpus).
    pub fn count(&self, corpus_len: usize) -> usize {
        match self {
            Scale::Captured => corpus_len,
            Scale::Pages(n) => *n,
        }
    }
}

/// Counts the heap bytes the program holds, so the store's metadata can be measured;
/// pagebench's binary installs it as the global allocator.
pub struct CountingAlloc;

static HEAP_LIVE: AtomicU64 = AtomicU64::new(0);
static HEAP_COUNTED: AtomicBool = AtomicBool::new(false);

// SAFETY: forwards to the system allocator unchanged; the counters do not touch memory.
unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        HEAP_COUNTED.store(true, Ordering::Relaxed);
        HEAP_LIVE.fetch_add(layout.size() as u64, Ordering::Relaxed);
        // SAFETY: same contract as ours.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        HEAP_COUNTED.store(true, Ordering::Relaxed);
        HEAP_LIVE.fetch_add(layout.size() as u64, Ordering::Relaxed);
        // SAFETY: same contract as ours.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        HEAP_LIVE.fetch_sub(layout.size() as u64, Ordering::Relaxed);
        // SAFETY: same contract as ours.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        HEAP_LIVE.fetch_add(new_size as u64, Ordering::Relaxed);
        HEAP_LIVE.fetch_sub(layout.size() as u64, Ordering::Relaxed);
        // SAFETY: same contract as ours.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

fn heap_live() -> Option<u64> {
    HEAP_COUNTED.load(Ordering::Relaxed).then(|| HEAP_LIVE.load(Ordering::Relaxed))
}

fn nanos(start: Instant) -> u64 {
    u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX)
}

/// Writes `count` pages (cycling through `pages`) to a fresh device with `codec`, reads
/// `mm_stat`, reads every page back and compares; the device is released on every path.
///
/// # Errors
///
/// The kernel refusing the codec or size, I/O errors, a page read back wrong, Ctrl-C.
pub fn run_zram(paths: &ZramPaths, codec: &str, pages: &[Page], count: usize) -> Result<Side, ZramError> {
    let dev = Device::hot_add(paths)?;
    dev.write("comp_algorithm", codec)?;
    dev.write("disksize", &(count.max(1) * PAGE_SIZE).to_string())?;
    let file = dev.open_direct()?;
    let node = paths.node(dev.id());
    let mut block = Box::new(Block([0; PAGE_SIZE]));
    let mut write_ns = Vec::with_capacity(count);
    for i in 0..count {
        check_interrupt()?;
        block.0.copy_from_slice(pages[i % pages.len()].as_bytes());
        let start = Instant::now();
        file.write_all_at(&block.0, (i * PAGE_SIZE) as u64)
            .map_err(io_err(format!("writing page {i} to"), &node))?;
        write_ns.push(nanos(start));
    }
    let mm = dev.mm_stat()?;
    let mut read_ns = Vec::with_capacity(count);
    for i in 0..count {
        check_interrupt()?;
        let start = Instant::now();
        file.read_exact_at(&mut block.0, (i * PAGE_SIZE) as u64)
            .map_err(io_err(format!("reading page {i} from"), &node))?;
        read_ns.push(nanos(start));
        if block.0 != *pages[i % pages.len()].as_bytes() {
            return Err(ZramError::Mismatch { side: "zram", codec: codec.into(), page: i });
        }
    }
    drop(file);
    dev.release()?;
    Ok(Side {
        side: "zram",
        codec: codec.into(),
        implementation: format!("kernel {codec}"),
        mm,
        meta_bytes_per_page: Some(16.0),
        write: Times::of(write_ns),
        read: Times::of(read_ns),
    })
}

/// Stores `count` pages (cycling through `pages`) in a [`PageStore`] with the twin of
/// kernel codec `codec`, keeping streams of up to `huge_class_size - 1` bytes compressed
/// as zram does, loads every page back and compares.
///
/// # Errors
///
/// No twin for the codec, a store or load failure, a page loaded wrong, Ctrl-C.
pub fn run_store(
    codec: &str,
    pages: &[Page],
    count: usize,
    huge_class_size: usize,
) -> Result<Side, ZramError> {
    let inner = store_codec(codec).ok_or_else(|| ZramError::NoCodec {
        offered: KERNEL_CODECS.iter().map(|s| s.to_string()).collect(),
        wanted: vec![codec.into()],
    })?;
    let implementation = inner.name().to_string();
    // Keys 0..count in a flat table, as zram's table covers its disk size; the heap is read
    // before the store is made, so the table counts in the metadata.
    let config = StoreConfig::default()
        .with_huge_threshold(huge_class_size - 1)
        .with_timing(false)
        .with_dense_keys(count);
    let mut write_ns = Vec::with_capacity(count);
    let mut read_ns = Vec::with_capacity(count);
    let heap_before = heap_live();
    let mut store = PageStore::with_config(inner, config);
    for i in 0..count {
        check_interrupt()?;
        let start = Instant::now();
        store.store(i as u64, &pages[i % pages.len()]).map_err(|e| ZramError::Store {
            codec: codec.into(),
            page: i,
            message: e.to_string(),
        })?;
        write_ns.push(nanos(start));
    }
    let heap_after = heap_live();
    let stats = store.stats();
    let mut back = Page::zeroed();
    for i in 0..count {
        check_interrupt()?;
        let start = Instant::now();
        store.load(i as u64, &mut back).map_err(|e| ZramError::Store {
            codec: codec.into(),
            page: i,
            message: e.to_string(),
        })?;
        read_ns.push(nanos(start));
        if back != pages[i % pages.len()] {
            return Err(ZramError::Mismatch { side: "pagestore", codec: codec.into(), page: i });
        }
    }
    let meta = match (heap_before, heap_after) {
        (Some(b), Some(a)) if count > 0 => {
            Some(a.saturating_sub(b).saturating_sub(stats.mm.mem_used_total) as f64 / count as f64)
        }
        _ => None,
    };
    let m = stats.mm;
    Ok(Side {
        side: "pagestore",
        codec: codec.into(),
        implementation,
        mm: KernelMmStat {
            orig_data_size: m.orig_data_size,
            compr_data_size: m.compr_data_size,
            mem_used_total: m.mem_used_total,
            mem_limit: m.mem_limit,
            mem_used_max: m.mem_used_max,
            same_pages: m.same_pages,
            pages_compacted: m.pages_compacted,
            huge_pages: m.huge_pages,
        },
        meta_bytes_per_page: meta,
        write: Times::of(write_ns),
        read: Times::of(read_ns),
    })
}

/// Checks that zram can be used here: root, zram-control present.
///
/// # Errors
///
/// What is missing.
pub fn check_environment(paths: &ZramPaths) -> Result<(), ZramError> {
    let control = paths.control();
    if !control.join("hot_add").exists() {
        return Err(ZramError::NoZram { path: control });
    }
    // SAFETY: geteuid has no preconditions and cannot fail.
    let euid = unsafe { libc::geteuid() };
    if euid != 0 {
        return Err(ZramError::NotRoot { euid });
    }
    Ok(())
}

/// The codecs the kernel offers (read from a device we hot-add and release at once).
///
/// # Errors
///
/// Hot-adding or reading `comp_algorithm` failed.
pub fn offered_codecs(paths: &ZramPaths) -> Result<Vec<String>, ZramError> {
    let dev = Device::hot_add(paths)?;
    let (all, _) = parse_comp_algorithm(&dev.read("comp_algorithm")?);
    dev.release()?;
    Ok(all)
}

/// A page whose stream from `codec` is exactly `len` bytes: noise for a prefix, zeros
/// after, and copies of the page's first 8 bytes planted every 64 bytes as matches (each
/// shortens the stream a little and restarts the compressor's literal skipping, so the
/// stream length can be steered byte by byte).
///
/// # Errors
///
/// No such page among those tried.
pub fn page_with_stream_len(codec: &mut dyn PageCodec, len: usize) -> Result<Page, ZramError> {
    let mut out = vec![0u8; codec.max_compressed_len()];
    let mut noise = [0u8; PAGE_SIZE];
    let mut x = 0x2545_F491_4F6C_DD1Du64;
    for b in noise.iter_mut() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        *b = (x >> 24) as u8;
    }
    let mut seed = [0u8; 8];
    seed.copy_from_slice(&noise[..8]);
    for prefix in (len.saturating_sub(512)..=PAGE_SIZE).rev() {
        for matches in 0..64usize {
            let mut page = Page::zeroed();
            let bytes = page.as_bytes_mut();
            bytes[..prefix].copy_from_slice(&noise[..prefix]);
            for m in 1..=matches {
                let at = m * 64;
                if at + 8 <= prefix {
                    bytes[at..at + 8].copy_from_slice(&seed);
                }
            }
            if codec.compress(&page, &mut out) == Ok(len) {
                return Ok(page);
            }
        }
    }
    Err(ZramError::Probe(format!("no page found whose {} stream is {len} bytes", codec.name())))
}

/// Confirms the computed huge threshold on the kernel: a page whose lzo-rle stream is one
/// byte shorter than it must not be huge, one of exactly that length must be.
///
/// # Errors
///
/// The kernel disagrees (the message gives what it did), or the device failed.
pub fn probe_huge_threshold(paths: &ZramPaths, huge_class_size: usize) -> Result<(), ZramError> {
    let mut codec = lzokit::LzoRle::default();
    let below = page_with_stream_len(&mut codec, huge_class_size - 1)?;
    let at = page_with_stream_len(&mut codec, huge_class_size)?;
    let dev = Device::hot_add(paths)?;
    dev.write("comp_algorithm", "lzo-rle")?;
    dev.write("disksize", &(2 * PAGE_SIZE).to_string())?;
    let file = dev.open_direct()?;
    let node = paths.node(dev.id());
    let mut block = Box::new(Block([0; PAGE_SIZE]));
    let mut huge = Vec::new();
    for (i, page) in [below, at].iter().enumerate() {
        block.0.copy_from_slice(page.as_bytes());
        file.write_all_at(&block.0, (i * PAGE_SIZE) as u64)
            .map_err(io_err("writing a probe page to", &node))?;
        huge.push(dev.mm_stat()?.huge_pages);
    }
    drop(file);
    dev.release()?;
    if huge != [0, 1] {
        return Err(ZramError::Probe(format!(
            "huge_pages after a {}-byte and a {huge_class_size}-byte lzo-rle stream: {huge:?}, want [0, 1]",
            huge_class_size - 1
        )));
    }
    Ok(())
}

fn fmt_ns(ns: u64) -> String {
    if ns >= 10_000 { format!("{:.1} us", ns as f64 / 1000.0) } else { format!("{ns} ns") }
}

/// The side-by-side table of one scale.
pub fn table(report: &ScaleReport) -> String {
    let mut s = format!(
        "{:<8} {:<10} {:>15} {:>15} {:>9} {:>7} {:>7} {:>10} {:>10} {:>10} {:>10} {:>10}\n",
        "codec",
        "side",
        "compr_data_size",
        "mem_used_total",
        "used/orig",
        "same",
        "huge",
        "meta B/pg",
        "write med",
        "write p99",
        "read med",
        "read p99"
    );
    for r in &report.rows {
        let ratio = if r.mm.orig_data_size == 0 {
            0.0
        } else {
            100.0 * r.mm.mem_used_total as f64 / r.mm.orig_data_size as f64
        };
        let meta = r.meta_bytes_per_page.map_or("n/a".to_string(), |m| format!("{m:.1}"));
        s += &format!(
            "{:<8} {:<10} {:>15} {:>15} {:>8.1}% {:>7} {:>7} {:>10} {:>10} {:>10} {:>10} {:>10}\n",
            r.codec,
            r.side,
            r.mm.compr_data_size,
            r.mm.mem_used_total,
            ratio,
            r.mm.same_pages,
            r.mm.huge_pages,
            meta,
            fmt_ns(r.write.median_ns),
            fmt_ns(r.write.p99_ns),
            fmt_ns(r.read.median_ns),
            fmt_ns(r.read.p99_ns)
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interrupts_reach_the_flag() {
        let disposition = |signal| {
            // SAFETY: sigaction only writes the structure passed (all-zero bytes are a valid
            // `sigaction`); with no new action it changes nothing.
            unsafe {
                let mut old: libc::sigaction = std::mem::zeroed();
                assert_eq!(libc::sigaction(signal, std::ptr::null(), &mut old), 0);
                old
            }
        };
        let before: Vec<libc::sigaction> = INTERRUPTS.iter().map(|&s| disposition(s)).collect();
        install_interrupt_handler();
        // Ctrl-C, `kill` and `timeout`, a closed terminal.
        for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
            let handler = disposition(signal).sa_sigaction;
            assert_eq!(handler, on_interrupt as extern "C" fn(libc::c_int) as usize, "signal {signal}");
        }
        assert!(!INTERRUPTED.load(Ordering::SeqCst));
        for (&signal, old) in INTERRUPTS.iter().zip(&before) {
            // SAFETY: puts back the disposition read above, so that the test binary stops on
            // these signals again.
            assert_eq!(unsafe { libc::sigaction(signal, old, std::ptr::null_mut()) }, 0);
        }
    }

    #[test]
    fn comp_algorithm_lists_codecs_and_the_selected_one() {
        let (all, cur) = parse_comp_algorithm("lzo [lzo-rle] lz4 zstd\n");
        assert_eq!(all, ["lzo", "lzo-rle", "lz4", "zstd"]);
        assert_eq!(cur.as_deref(), Some("lzo-rle"));
        let (all, cur) = parse_comp_algorithm("");
        assert!(all.is_empty() && cur.is_none());
        assert_eq!(parse_comp_algorithm("[lz4]").1.as_deref(), Some("lz4"));
    }

    #[test]
    fn mm_stat_parses_eight_or_more_fields() {
        let m = parse_mm_stat(
            "  8388608  1844201  2981888        0  2981888      12        0       31        0\n",
        )
        .unwrap();
        assert_eq!(
            (m.orig_data_size, m.compr_data_size, m.mem_used_total),
            (8_388_608, 1_844_201, 2_981_888)
        );
        assert_eq!((m.same_pages, m.huge_pages), (12, 31));
        assert!(parse_mm_stat("1 2 3 4 5 6 7 8").is_ok());
        assert_eq!(parse_mm_stat("1 2 3"), Err("fewer than 8 fields"));
        assert_eq!(parse_mm_stat("1 2 x 4 5 6 7 8"), Err("a field is not a decimal number"));
    }

    #[test]
    fn huge_class_size_follows_zsmalloc() {
        // Chain 8: class 3632 is the largest whose zspage (8 pages, 9 objects) is not
        // one page or one object; minus the 8-byte handle's 7.
        assert_eq!(zsmalloc_huge_class_size(8), 3625);
        // Chain 4 (the pre-6.3 limit): class 3264 (4 pages, 5 objects).
        assert_eq!(zsmalloc_huge_class_size(4), 3264 - 7);
    }

    #[test]
    fn scales_parse_and_name() {
        assert_eq!(Scale::parse("captured"), Ok(Scale::Captured));
        assert_eq!(Scale::parse("32k"), Ok(Scale::Pages(32768)));
        assert_eq!(Scale::parse("1000"), Ok(Scale::Pages(1000)));
        assert!(Scale::parse("0").is_err() && Scale::parse("big").is_err());
        assert_eq!(Scale::Pages(262_144).name(), "256k");
    }

    #[test]
    fn probe_pages_have_the_wanted_stream_lengths() {
        let mut c = lzokit::LzoRle::default();
        let hc = zsmalloc_huge_class_size(ZSMALLOC_CHAIN_SIZE);
        for len in [hc - 1, hc] {
            let page = page_with_stream_len(&mut c, len).unwrap();
            let mut out = vec![0u8; c.max_compressed_len()];
            assert_eq!(c.compress(&page, &mut out), Ok(len));
        }
    }

    #[test]
    fn store_side_round_trips_and_keeps_the_threshold() {
        let pages: Vec<Page> = pagecodec::testing::PageClass::ALL
            .into_iter()
            .map(|c| pagecodec::testing::generate(c, 3))
            .collect();
        for codec in KERNEL_CODECS {
            let side = run_store(codec, &pages, pages.len() * 2, 3625).unwrap();
            assert_eq!(side.mm.orig_data_size, (pages.len() * 2 * PAGE_SIZE) as u64, "{codec}");
        }
    }

    /// A fake sysfs: `hot_add` holds "7", the device's attributes are plain files, and
    /// there is no device node, so the run fails after setting the device up.
    fn fake_sysfs(dir: &Path) -> ZramPaths {
        let paths = ZramPaths { sys: dir.join("sys"), dev: dir.join("dev") };
        std::fs::create_dir_all(paths.control()).unwrap();
        std::fs::create_dir_all(paths.block(7)).unwrap();
        std::fs::create_dir_all(&paths.dev).unwrap();
        std::fs::write(paths.control().join("hot_add"), "7\n").unwrap();
        std::fs::write(paths.control().join("hot_remove"), "").unwrap();
        std::fs::write(paths.block(7).join("comp_algorithm"), "lzo [lzo-rle] lz4\n").unwrap();
        std::fs::write(paths.block(7).join("reset"), "").unwrap();
        paths
    }

    fn temp_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("pagebench-zram-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn a_failed_run_resets_then_removes_its_device() {
        let dir = temp_dir("cleanup");
        let paths = fake_sysfs(&dir);
        let pages = vec![Page::filled(1)];
        let err = run_zram(&paths, "lz4", &pages, 1).expect_err("no device node: must fail");
        assert!(err.to_string().contains("zram7"), "{err}");
        // The codec and size were written before the failure...
        assert_eq!(std::fs::read_to_string(paths.block(7).join("comp_algorithm")).unwrap(), "lz4");
        assert_eq!(std::fs::read_to_string(paths.block(7).join("disksize")).unwrap(), "4096");
        // ...and the device was reset and removed on the error path.
        assert_eq!(std::fs::read_to_string(paths.block(7).join("reset")).unwrap(), "1");
        assert_eq!(std::fs::read_to_string(paths.control().join("hot_remove")).unwrap(), "7");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn release_resets_before_removing_and_reports_failures() {
        let dir = temp_dir("order");
        let paths = fake_sysfs(&dir);
        // reset as a directory: the write fails, hot_remove must still be attempted, and
        // the reset failure is the one reported.
        std::fs::remove_file(paths.block(7).join("reset")).unwrap();
        std::fs::create_dir(paths.block(7).join("reset")).unwrap();
        let dev = Device::hot_add(&paths).unwrap();
        let err = dev.release().unwrap_err();
        assert!(err.to_string().contains("reset"), "{err}");
        assert_eq!(std::fs::read_to_string(paths.control().join("hot_remove")).unwrap(), "7");
        // A dropped device is released too.
        std::fs::write(paths.control().join("hot_remove"), "").unwrap();
        drop(Device::hot_add(&paths).unwrap());
        assert_eq!(std::fs::read_to_string(paths.control().join("hot_remove")).unwrap(), "7");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_missing_zram_is_named() {
        let dir = temp_dir("missing");
        let paths = ZramPaths { sys: dir.join("nosys"), dev: dir.join("nodev") };
        let err = check_environment(&paths).unwrap_err();
        assert!(err.to_string().contains("zram-control") && err.to_string().contains("missing"), "{err}");
        assert!(offered_codecs(&paths).is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    #[ignore = "needs root and /sys/class/zram-control; run with --ignored"]
    fn real_zram_matches_the_store_for_lzo_rle() {
        let paths = ZramPaths::default();
        check_environment(&paths).unwrap();
        let hc = zsmalloc_huge_class_size(ZSMALLOC_CHAIN_SIZE);
        probe_huge_threshold(&paths, hc).unwrap();
        let pages: Vec<Page> = pagecodec::testing::PageClass::ALL
            .into_iter()
            .map(|c| pagecodec::testing::generate(c, 9))
            .collect();
        let kernel = run_zram(&paths, "lzo-rle", &pages, 64).unwrap();
        let store = run_store("lzo-rle", &pages, 64, hc).unwrap();
        assert_eq!(kernel.mm.compr_data_size, store.mm.compr_data_size);
        assert_eq!(kernel.mm.same_pages, store.mm.same_pages);
        assert_eq!(kernel.mm.huge_pages, store.mm.huge_pages);
    }
}
