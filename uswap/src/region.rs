//! The region, its fault thread and its reclaim.

use std::fmt;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;

use pagecodec::PAGE_SIZE;
use pagestore::{CodecFactory, ShardedStore, StoreConfig, StoreStats};

use crate::fault::{FaultThread, Tuning};
use crate::sys;

/// Why a region could not be made or an access was refused.
#[derive(Debug)]
#[non_exhaustive]
pub enum UswapError {
    /// Neither `/dev/userfaultfd` nor the `userfaultfd` system call gave a descriptor.
    Unavailable(io::Error),
    /// userfaultfd exists but this process may not use it (`EPERM`): run as root, give the
    /// process `CAP_SYS_PTRACE`, or set `vm.unprivileged_userfaultfd = 1`.
    Forbidden(io::Error),
    /// The anonymous mapping, its registration or the fault thread could not be set up.
    Setup(&'static str, io::Error),
    /// A region of zero pages was asked for.
    Empty,
    /// An access past the end of the region.
    OutOfRange {
        /// First byte asked for.
        offset: usize,
        /// Bytes asked for.
        len: usize,
        /// The region's size in bytes.
        size: usize,
    },
}

impl fmt::Display for UswapError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UswapError::Unavailable(e) => write!(f, "userfaultfd is not available here: {e}"),
            UswapError::Forbidden(e) => write!(
                f,
                "userfaultfd is forbidden to this process ({e}): run as root, give it CAP_SYS_PTRACE, \
                 or set vm.unprivileged_userfaultfd = 1"
            ),
            UswapError::Setup(what, e) => write!(f, "{what}: {e}"),
            UswapError::Empty => f.write_str("a region needs at least one page"),
            UswapError::OutOfRange { offset, len, size } => {
                write!(f, "{len} bytes at offset {offset} run past the region's {size} bytes")
            }
        }
    }
}

impl std::error::Error for UswapError {}

/// How a region keeps its pages.
pub struct RegionConfig {
    /// Most pages resident at once; the others live compressed in the store. At least 4:
    /// an access is retried until every page it touches is resident, and one x86-64
    /// instruction may touch four (a limit of one page faulted for ever on a store across
    /// a page boundary).
    pub resident_limit: usize,
    /// The store's codec, made once per shard.
    pub codec: CodecFactory,
    /// Shards of the store.
    pub shards: usize,
    /// The store's policies (memory limit, huge threshold, same-filled pages).
    pub store: StoreConfig,
    /// Most pages one fault brings in: the faulting page and the pages after it, when the
    /// fault continues a sequential scan (the window doubles from 1 on each such fault and
    /// falls back to 1 on any other). 1 turns readahead off. At most a quarter of the
    /// resident limit, so that the faults of one instruction cannot evict each other's
    /// pages.
    pub readahead: usize,
    /// Pages evicted together when room is needed (write-protected and dropped as ranges).
    /// At most a quarter of the resident limit.
    pub reclaim_batch: usize,
}

impl RegionConfig {
    /// `resident_limit` pages resident, pages compressed by codecs from `codec`, 4 shards,
    /// the store's defaults, readahead up to [`Self::DEFAULT_READAHEAD`] pages, reclaim in
    /// batches of [`Self::DEFAULT_RECLAIM_BATCH`].
    pub fn new(resident_limit: usize, codec: CodecFactory) -> Self {
        RegionConfig {
            resident_limit,
            codec,
            shards: 4,
            store: StoreConfig::default(),
            readahead: Self::DEFAULT_READAHEAD,
            reclaim_batch: Self::DEFAULT_RECLAIM_BATCH,
        }
    }

    /// The default readahead window: 16 pages (64 KiB). Sequential scans fault once per
    /// window instead of once per page; random accesses keep a window of one page.
    pub const DEFAULT_READAHEAD: usize = 16;

    /// The default reclaim batch: 32 pages, as the kernel's reclaim (`SWAP_CLUSTER_MAX`).
    pub const DEFAULT_RECLAIM_BATCH: usize = 32;
}

impl fmt::Debug for RegionConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RegionConfig")
            .field("resident_limit", &self.resident_limit)
            .field("shards", &self.shards)
            .field("store", &self.store)
            .field("readahead", &self.readahead)
            .field("reclaim_batch", &self.reclaim_batch)
            .finish_non_exhaustive()
    }
}

/// Fault-handling times in nanoseconds: from reading the fault to resolving it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Latency {
    /// Faults timed.
    pub count: u64,
    /// Median.
    pub median: u64,
    /// 99th percentile (nearest rank).
    pub p99: u64,
    /// Slowest.
    pub max: u64,
}

/// What the region did so far.
#[derive(Clone, Debug)]
pub struct RegionStats {
    /// Missing-page faults on pages in the store.
    pub faults_from_store: u64,
    /// Missing-page faults on pages never stored, resolved with zeros.
    pub zero_fills: u64,
    /// Pages brought back from the store (swap-ins), readahead included.
    pub swap_ins: u64,
    /// Pages a fault brought in after the faulting one (readahead, from the store or zeros).
    pub readahead: u64,
    /// Write-protect faults: writers that met a page while it was being stored.
    pub wp_faults: u64,
    /// Pages stored and dropped from memory (swap-outs).
    pub swap_outs: u64,
    /// Evictions given up because the store refused the page (it stays resident).
    pub evictions_refused: u64,
    /// Faults the fault thread could not resolve (a page its codec could not decode, a
    /// range the kernel would not map): each ended the faulting thread's access with
    /// `SIGBUS`, as the kernel ends an access whose swapped-out page it cannot read.
    pub unresolved_faults: u64,
    /// Pages resident now (as the region counts them).
    pub resident_pages: usize,
    /// Time to resolve a missing-page fault.
    pub fault_latency: Latency,
    /// The store's statistics (`mm.compr_data_size`, `mm.mem_used_total`, ...).
    pub store: StoreStats,
}

/// Bookkeeping shared by the fault thread and the region's owner.
pub(crate) struct Shared {
    pub(crate) store: ShardedStore,
    pub(crate) counters: Mutex<Counters>,
}

#[derive(Default)]
pub(crate) struct Counters {
    pub(crate) faults_from_store: u64,
    pub(crate) zero_fills: u64,
    pub(crate) swap_ins: u64,
    pub(crate) readahead: u64,
    pub(crate) wp_faults: u64,
    pub(crate) swap_outs: u64,
    pub(crate) evictions_refused: u64,
    pub(crate) unresolved_faults: u64,
    pub(crate) resident: usize,
    /// Fault times in ns (the first `MAX_SAMPLES`, then every later one replaces one).
    latencies: Vec<u64>,
    timed: u64,
    max: u64,
}

impl Counters {
    /// Counts one fault's handling time.
    pub(crate) fn record_latency(&mut self, ns: u64) {
        self.timed += 1;
        self.max = self.max.max(ns);
        if self.latencies.len() < MAX_SAMPLES {
            self.latencies.push(ns);
        } else {
            let slot = (self.timed % MAX_SAMPLES as u64) as usize;
            self.latencies[slot] = ns;
        }
    }
}

const MAX_SAMPLES: usize = 1 << 20;

pub(crate) fn lock(m: &Mutex<Counters>) -> MutexGuard<'_, Counters> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// `N` pages of anonymous memory whose pages live compressed in a `pagestore` while they
/// are not resident. See the crate documentation.
///
/// No access through the safe API can be in flight when a region drops: threads borrow it,
/// so it cannot be dropped while they run.
///
/// ```compile_fail,E0505
/// use uswap::{Region, RegionConfig};
///
/// let config = RegionConfig::new(2, Box::new(|| Box::new(lzokit::LzoRle::default())));
/// let region = Region::new(8, config).unwrap();
/// std::thread::scope(|s| {
///     s.spawn(|| {
///         let mut buf = [0u8; 16];
///         region.read(0, &mut buf).unwrap();
///     });
///     drop(region); // error[E0505]: cannot move out of `region` because it is borrowed
/// });
/// ```
pub struct Region {
    base: *mut u8,
    len: usize,
    uffd: Arc<OwnedFd>,
    stop: OwnedFd,
    thread: Option<JoinHandle<()>>,
    shared: Arc<Shared>,
}

// SAFETY: `base` is a mapping owned by the region for its whole life; the region's methods
// access it only through `&self` reads / `&mut self` writes or document the caller's duty.
unsafe impl Send for Region {}
// SAFETY: as above; shared access only reads the mapping, and the fault thread coordinates
// through the kernel and the mutex-protected bookkeeping.
unsafe impl Sync for Region {}

impl Region {
    /// A region of `pages` pages, all reading as zeros. A child made by `fork` gets no copy
    /// of it (see the [crate documentation](crate)).
    ///
    /// # Errors
    ///
    /// [`UswapError::Unavailable`] or [`UswapError::Forbidden`] without usable userfaultfd,
    /// [`UswapError::Setup`] when mapping, registering or starting the fault thread fails,
    /// [`UswapError::Empty`] for zero pages.
    pub fn new(pages: usize, config: RegionConfig) -> Result<Region, UswapError> {
        if pages == 0 {
            return Err(UswapError::Empty);
        }
        let len =
            pages.checked_mul(PAGE_SIZE).ok_or(UswapError::OutOfRange { offset: 0, len: pages, size: 0 })?;
        let uffd = sys::open().map_err(|e| {
            if e.raw_os_error() == Some(libc::EPERM) {
                UswapError::Forbidden(e)
            } else {
                UswapError::Unavailable(e)
            }
        })?;
        // SAFETY: a fresh private anonymous mapping; no existing memory is touched.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(UswapError::Setup("mapping the region", io::Error::last_os_error()));
        }
        let base = base.cast::<u8>();
        let unmap = |e| {
            // SAFETY: the mapping made above, unused by anyone yet.
            unsafe { libc::munmap(base.cast(), len) };
            e
        };
        // A child made by `fork` would get a copy of the mapping without the registration
        // (the kernel drops it unless the fault thread serves the child's faults too), so the
        // pages held in the store would read as zeros there. Without the mapping, a child's
        // access faults instead of returning wrong bytes.
        // SAFETY: advice on the mapping made above, which nothing uses yet.
        if unsafe { libc::madvise(base.cast(), len, libc::MADV_DONTFORK) } != 0 {
            return Err(unmap(UswapError::Setup(
                "keeping the region out of forked children",
                io::Error::last_os_error(),
            )));
        }
        sys::register(&uffd, base as usize, len)
            .map_err(|e| unmap(UswapError::Setup("registering the region", e)))?;
        // SAFETY: eventfd takes an initial count and flags and returns a descriptor or -1.
        let stop = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
        if stop < 0 {
            return Err(unmap(UswapError::Setup("making the stop event", io::Error::last_os_error())));
        }
        // SAFETY: a descriptor the kernel just returned, owned by nobody else.
        let stop = unsafe { OwnedFd::from_raw_fd(stop) };
        let shards = config.shards.max(1);
        let shared = Arc::new(Shared {
            store: ShardedStore::new(shards, config.codec, config.store),
            counters: Mutex::new(Counters::default()),
        });
        let uffd = Arc::new(uffd);
        let tuning = Tuning::new(config.resident_limit, config.readahead, config.reclaim_batch);
        let worker = FaultThread::new(
            Arc::clone(&uffd),
            stop.as_raw_fd(),
            base as usize,
            pages,
            tuning,
            Arc::clone(&shared),
        );
        let thread = std::thread::Builder::new()
            .name("uswap-faults".into())
            .spawn(move || {
                // A panic here (a codec's, as the store calls it) would leave every later
                // fault unresolved and its thread waiting for ever. The panic message is out
                // already; end the process rather than hang it.
                if std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| worker.run())).is_err() {
                    std::process::abort();
                }
            })
            .map_err(|e| unmap(UswapError::Setup("starting the fault thread", e)))?;
        Ok(Region { base, len, uffd, stop, thread: Some(thread), shared })
    }

    /// The region's size in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the region is empty (never: a region has at least one page).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The first byte. Raw access: reads and writes through it are resolved by the fault
    /// thread like any other, but Rust's aliasing rules are the caller's to keep (no two
    /// threads writing the same bytes unsynchronised, no writes while `read` runs on them).
    /// Pages dropped through it with `MADV_DONTNEED` read as zeros afterwards if they were
    /// resident; pages in the store come back with their stored bytes (the fault thread is
    /// not told of the advice).
    pub fn as_ptr(&self) -> *mut u8 {
        self.base
    }

    fn check(&self, offset: usize, len: usize) -> Result<(), UswapError> {
        match offset.checked_add(len) {
            Some(end) if end <= self.len => Ok(()),
            _ => Err(UswapError::OutOfRange { offset, len, size: self.len }),
        }
    }

    /// Copies `buf.len()` bytes from `offset` into `buf`; pages not resident are brought back.
    ///
    /// # Errors
    ///
    /// [`UswapError::OutOfRange`] past the region's end.
    pub fn read(&self, offset: usize, buf: &mut [u8]) -> Result<(), UswapError> {
        self.check(offset, buf.len())?;
        // SAFETY: in bounds (checked); the mapping lives as long as `self`; faults on it are
        // resolved by the fault thread, which runs until `self` is dropped.
        unsafe { std::ptr::copy_nonoverlapping(self.base.add(offset), buf.as_mut_ptr(), buf.len()) };
        Ok(())
    }

    /// Copies `data` to `offset`.
    ///
    /// # Errors
    ///
    /// [`UswapError::OutOfRange`] past the region's end.
    pub fn write(&mut self, offset: usize, data: &[u8]) -> Result<(), UswapError> {
        self.check(offset, data.len())?;
        // SAFETY: in bounds (checked), exclusive (`&mut self`); see `read`.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), self.base.add(offset), data.len()) };
        Ok(())
    }

    /// The counters so far.
    pub fn stats(&self) -> RegionStats {
        let c = lock(&self.shared.counters);
        let mut sample = c.latencies.clone();
        sample.sort_unstable();
        let rank = |q: f64| {
            if sample.is_empty() { 0 } else { sample[((sample.len() - 1) as f64 * q).round() as usize] }
        };
        RegionStats {
            faults_from_store: c.faults_from_store,
            zero_fills: c.zero_fills,
            swap_ins: c.swap_ins,
            readahead: c.readahead,
            wp_faults: c.wp_faults,
            swap_outs: c.swap_outs,
            evictions_refused: c.evictions_refused,
            unresolved_faults: c.unresolved_faults,
            resident_pages: c.resident,
            fault_latency: Latency { count: c.timed, median: rank(0.5), p99: rank(0.99), max: c.max },
            store: self.shared.store.stats(),
        }
    }
}

impl fmt::Debug for Region {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Region").field("len", &self.len).field("stats", &self.stats()).finish_non_exhaustive()
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        let one = 1u64.to_ne_bytes();
        // SAFETY: 8 readable bytes to an eventfd this region owns.
        unsafe { libc::write(self.stop.as_raw_fd(), one.as_ptr().cast(), 8) };
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        let _ = sys::unregister(&self.uffd, self.base as usize, self.len);
        // SAFETY: the mapping this region made; no borrow of it outlives `self`, and the
        // fault thread, the only other user, has ended.
        unsafe { libc::munmap(self.base.cast(), self.len) };
    }
}
