//! The region, its fault thread and its reclaim.

use std::collections::VecDeque;
use std::fmt;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Instant;

use pagecodec::{PAGE_SIZE, Page};
use pagestore::{CodecFactory, ShardedStore, StoreConfig, StoreStats};

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
    /// Most pages resident at once (at least 1); the others live compressed in the store.
    pub resident_limit: usize,
    /// The store's codec, made once per shard.
    pub codec: CodecFactory,
    /// Shards of the store.
    pub shards: usize,
    /// The store's policies (memory limit, huge threshold, same-filled pages).
    pub store: StoreConfig,
}

impl RegionConfig {
    /// `resident_limit` pages resident, LZO-RLE-class codec from `codec`, 4 shards, the
    /// store's defaults.
    pub fn new(resident_limit: usize, codec: CodecFactory) -> Self {
        RegionConfig { resident_limit, codec, shards: 4, store: StoreConfig::default() }
    }
}

impl fmt::Debug for RegionConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RegionConfig")
            .field("resident_limit", &self.resident_limit)
            .field("shards", &self.shards)
            .field("store", &self.store)
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
    /// Missing-page faults resolved from the store (swap-ins).
    pub faults_from_store: u64,
    /// Missing-page faults on pages never stored, resolved with zeros.
    pub zero_fills: u64,
    /// Write-protect faults: writers that met a page while it was being stored.
    pub wp_faults: u64,
    /// Pages stored and dropped from memory (swap-outs).
    pub swap_outs: u64,
    /// Evictions given up because the store refused the page (it stays resident).
    pub evictions_refused: u64,
    /// Pages resident now (as the region counts them).
    pub resident_pages: usize,
    /// Time to resolve a missing-page fault.
    pub fault_latency: Latency,
    /// The store's statistics (`mm.compr_data_size`, `mm.mem_used_total`, ...).
    pub store: StoreStats,
}

/// Bookkeeping shared by the fault thread and the region's owner.
struct Shared {
    store: ShardedStore,
    counters: Mutex<Counters>,
}

#[derive(Default)]
struct Counters {
    faults_from_store: u64,
    zero_fills: u64,
    wp_faults: u64,
    swap_outs: u64,
    evictions_refused: u64,
    resident: usize,
    /// Fault times in ns (the first `MAX_SAMPLES`, then every later one replaces one).
    latencies: Vec<u64>,
    timed: u64,
    max: u64,
}

const MAX_SAMPLES: usize = 1 << 20;

fn lock(m: &Mutex<Counters>) -> MutexGuard<'_, Counters> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// `N` pages of anonymous memory whose pages live compressed in a `pagestore` while they
/// are not resident. See the crate documentation.
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
    /// A region of `pages` pages, all reading as zeros.
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
        let worker = FaultThread {
            uffd: Arc::clone(&uffd),
            stop: stop.as_raw_fd(),
            base: base as usize,
            pages,
            limit: config.resident_limit.max(1),
            shared: Arc::clone(&shared),
            state: vec![State::Absent; pages],
            fifo: VecDeque::new(),
        };
        let thread = std::thread::Builder::new()
            .name("uswap-faults".into())
            .spawn(move || worker.run())
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
            wp_faults: c.wp_faults,
            swap_outs: c.swap_outs,
            evictions_refused: c.evictions_refused,
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

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Never written: reads as zeros, nothing stored.
    Absent,
    /// In memory.
    Resident,
    /// In the store only.
    Stored,
}

/// The fault thread: resolves every fault, and evicts the oldest resident page itself before
/// a fault would bring one page too many in. Doing both on one thread means no fault is ever
/// resolved while an eviction is half done.
struct FaultThread {
    uffd: Arc<OwnedFd>,
    stop: i32,
    base: usize,
    pages: usize,
    limit: usize,
    shared: Arc<Shared>,
    state: Vec<State>,
    /// Resident pages, oldest first (entries may be stale; checked when popped).
    fifo: VecDeque<usize>,
}

impl FaultThread {
    fn run(mut self) {
        let mut buf = Page::zeroed();
        let zero = Page::zeroed();
        loop {
            let mut fds = [
                libc::pollfd { fd: self.uffd.as_raw_fd(), events: libc::POLLIN, revents: 0 },
                libc::pollfd { fd: self.stop, events: libc::POLLIN, revents: 0 },
            ];
            // SAFETY: two valid pollfd structures.
            let n = unsafe { libc::poll(fds.as_mut_ptr(), 2, -1) };
            if n < 0 {
                if io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return;
            }
            if fds[1].revents != 0 {
                return;
            }
            while let Ok(Some(msg)) = sys::read_message(&self.uffd) {
                if msg.event == sys::EVENT_PAGEFAULT {
                    self.fault(&msg, &mut buf, &zero);
                }
            }
        }
    }

    fn count(&self, update: impl FnOnce(&mut Counters)) {
        update(&mut lock(&self.shared.counters));
    }

    fn page_addr(&self, page: usize) -> usize {
        self.base + page * PAGE_SIZE
    }

    fn fault(&mut self, msg: &sys::Message, buf: &mut Page, zero: &Page) {
        let Some(page) = (msg.address as usize).checked_sub(self.base).map(|o| o / PAGE_SIZE) else { return };
        if page >= self.pages {
            return;
        }
        let addr = self.page_addr(page);
        if msg.flags & sys::FLAG_WP != 0 {
            // A writer met the page while it was being stored. Evictions run on this thread,
            // so that one has ended: stored and dropped (the writer retries, faults as missing
            // and gets it back), or refused and the page unprotected already.
            lock(&self.shared.counters).wp_faults += 1;
            let _ = match self.state[page] {
                State::Resident => sys::write_protect(&self.uffd, addr, PAGE_SIZE, false),
                _ => sys::wake(&self.uffd, addr, PAGE_SIZE),
            };
            return;
        }
        let start = Instant::now();
        if self.state[page] == State::Resident {
            // Another thread's fault on it was resolved first.
            let _ = sys::wake(&self.uffd, addr, PAGE_SIZE);
            return;
        }
        // Room first, so that the resident count never passes the limit.
        self.reclaim(self.limit - 1, buf);
        // The counters are updated before the fault is resolved, so that a thread reading
        // them after its access has returned sees that access counted.
        let resolved = match self.state[page] {
            State::Resident => return,
            State::Stored => {
                if self.shared.store.load(page as u64, buf).is_err() {
                    // Cannot happen for a page this thread stored; never hand out other data.
                    return;
                }
                self.count(|c| c.faults_from_store += 1);
                let done = sys::copy(&self.uffd, addr, buf.as_bytes().as_ptr(), PAGE_SIZE);
                if done.is_ok() {
                    self.shared.store.remove(page as u64);
                } else {
                    self.count(|c| c.faults_from_store -= 1);
                }
                done
            }
            State::Absent => {
                self.count(|c| c.zero_fills += 1);
                // A write gets a private zero page at once; a read the shared zero page (a
                // later write to it copies it without a fault).
                let done = if msg.flags & sys::FLAG_WRITE != 0 {
                    sys::copy(&self.uffd, addr, zero.as_bytes().as_ptr(), PAGE_SIZE)
                } else {
                    sys::zeropage(&self.uffd, addr, PAGE_SIZE)
                };
                if done.is_err() {
                    self.count(|c| c.zero_fills -= 1);
                }
                done
            }
        };
        if resolved.is_err() {
            return;
        }
        self.state[page] = State::Resident;
        self.fifo.push_back(page);
        let ns = u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.count(|c| {
            c.resident += 1;
            c.timed += 1;
            c.max = c.max.max(ns);
            if c.latencies.len() < MAX_SAMPLES {
                c.latencies.push(ns);
            } else {
                let slot = (c.timed % MAX_SAMPLES as u64) as usize;
                c.latencies[slot] = ns;
            }
        });
    }

    /// Evicts the oldest resident pages until at most `target` are resident (first in,
    /// first out: a page brought in longest ago goes first).
    fn reclaim(&mut self, target: usize, buf: &mut Page) {
        let mut tries = self.fifo.len();
        while lock(&self.shared.counters).resident > target && tries > 0 {
            tries -= 1;
            let Some(victim) = self.fifo.pop_front() else { return };
            if self.state[victim] != State::Resident {
                continue;
            }
            if !self.evict(victim, buf) {
                // The store is full: keep the page, and the rest, resident for now.
                self.fifo.push_back(victim);
                return;
            }
        }
    }

    /// Stores one resident page and drops it from memory. No write is lost: the page is
    /// write-protected before it is read, so a writer waits (its fault queues behind this
    /// eviction on this thread) and writes after the page is back.
    fn evict(&mut self, page: usize, buf: &mut Page) -> bool {
        let addr = self.page_addr(page);
        if sys::write_protect(&self.uffd, addr, PAGE_SIZE, true).is_err() {
            return false;
        }
        // SAFETY: the page is resident and write-protected: nobody can change it while it is
        // read, and reading a present page raises no fault.
        unsafe {
            std::ptr::copy_nonoverlapping(addr as *const u8, buf.as_bytes_mut().as_mut_ptr(), PAGE_SIZE)
        };
        if self.shared.store.store(page as u64, buf).is_err() {
            let _ = sys::write_protect(&self.uffd, addr, PAGE_SIZE, false);
            lock(&self.shared.counters).evictions_refused += 1;
            return false;
        }
        // SAFETY: one page of the region's own mapping, whose contents are now in the store;
        // the next access faults as missing and gets them back.
        let rc = unsafe { libc::madvise(addr as *mut libc::c_void, PAGE_SIZE, libc::MADV_DONTNEED) };
        if rc != 0 {
            self.shared.store.remove(page as u64);
            let _ = sys::write_protect(&self.uffd, addr, PAGE_SIZE, false);
            return false;
        }
        self.state[page] = State::Stored;
        let mut c = lock(&self.shared.counters);
        c.resident -= 1;
        c.swap_outs += 1;
        true
    }
}
