//! The fault thread: resolves every fault on the region and reclaims pages to keep the
//! resident set within its limit. Doing both on one thread means no fault is ever resolved
//! while an eviction is half done.

use std::collections::VecDeque;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::Arc;
use std::time::Instant;

use pagecodec::{PAGE_SIZE, Page};

use crate::region::{Counters, Shared, lock};
use crate::sys;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum State {
    /// Never written: reads as zeros, nothing stored.
    Absent,
    /// In memory.
    Resident,
    /// In the store only.
    Stored,
}

/// Why a fault could not be resolved.
enum Unresolved {
    /// The store could not give the faulting page back: its codec failed to decode the
    /// page's stream.
    Load,
    /// The kernel would not map the range (`UFFDIO_COPY` or `UFFDIO_ZEROPAGE` failed).
    Map(io::Error),
}

/// How the fault thread brings pages in and out.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Tuning {
    /// Most pages resident at once (at least [`MIN_RESIDENT`]).
    pub(crate) limit: usize,
    /// Most pages one fault brings in (the faulting page and the ones after it).
    pub(crate) readahead: usize,
    /// Pages evicted together when room is needed.
    pub(crate) batch: usize,
}

/// The fewest pages a region keeps resident: as many as one instruction may need at once.
///
/// An access is retried until every page it touches is resident, and each fault evicts the
/// oldest pages. With fewer resident pages than one instruction touches, the fault for its
/// last page evicts its first, and the thread faults for ever: at a limit of one page, an
/// 8-byte store across a page boundary did. An x86-64 string move whose source and
/// destination both cross a page boundary touches four pages.
pub(crate) const MIN_RESIDENT: usize = 4;

impl Tuning {
    /// Clamps the knobs to the limit: at least [`MIN_RESIDENT`] pages resident, and neither
    /// a fault's readahead nor a reclaim more than a quarter of them.
    ///
    /// The quarter keeps an instruction's pages resident while it faults them in one by
    /// one: the (at most four) faults it takes bring in at most the whole resident set, so
    /// none of them evicts a page an earlier one brought. With windows of up to half the
    /// limit, the string move across four pages at a limit of four faulted for ever.
    pub(crate) fn new(limit: usize, readahead: usize, batch: usize) -> Tuning {
        let limit = limit.max(MIN_RESIDENT);
        Tuning {
            limit,
            readahead: readahead.clamp(1, (limit / 4).max(1)),
            batch: batch.clamp(1, (limit / 4).max(1)),
        }
    }
}

pub(crate) struct FaultThread {
    pub(crate) uffd: Arc<OwnedFd>,
    pub(crate) stop: i32,
    pub(crate) base: usize,
    pub(crate) pages: usize,
    pub(crate) tuning: Tuning,
    pub(crate) shared: Arc<Shared>,
    pub(crate) state: Vec<State>,
    /// Resident pages, oldest first (entries may be stale; checked when popped).
    pub(crate) fifo: VecDeque<usize>,
    /// The page after the last range a fault brought in: a fault there continues a
    /// sequential scan and doubles the window.
    pub(crate) next_expected: usize,
    /// Pages the next sequential fault brings in.
    pub(crate) window: usize,
}

impl FaultThread {
    pub(crate) fn new(
        uffd: Arc<OwnedFd>,
        stop: i32,
        base: usize,
        pages: usize,
        tuning: Tuning,
        shared: Arc<Shared>,
    ) -> Self {
        FaultThread {
            uffd,
            stop,
            base,
            pages,
            tuning,
            shared,
            state: vec![State::Absent; pages],
            fifo: VecDeque::new(),
            next_expected: usize::MAX,
            window: 1,
        }
    }

    pub(crate) fn run(mut self) {
        let mut area = vec![Page::zeroed(); self.tuning.readahead.max(1)];
        let mut victims = Vec::with_capacity(self.tuning.batch);
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
                    self.fault(&msg, &mut area, &mut victims);
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

    fn fault(&mut self, msg: &sys::Message, area: &mut [Page], victims: &mut Vec<usize>) {
        let Some(page) = (msg.address as usize).checked_sub(self.base).map(|o| o / PAGE_SIZE) else { return };
        if page >= self.pages {
            return;
        }
        let addr = self.page_addr(page);
        if msg.flags & sys::FLAG_WP != 0 {
            // A writer met the page while it was being stored. Evictions run on this thread,
            // so that one has ended: stored and dropped (the writer retries, faults as missing
            // and gets it back), or refused and the page unprotected already.
            self.count(|c| c.wp_faults += 1);
            let _ = match self.state[page] {
                State::Resident => sys::write_protect(&self.uffd, addr, PAGE_SIZE, false),
                _ => sys::wake(&self.uffd, addr, PAGE_SIZE),
            };
            return;
        }
        let start = Instant::now();
        let write = msg.flags & sys::FLAG_WRITE != 0;
        if self.state[page] == State::Resident {
            // Either another thread's fault on it was resolved first, and the ioctl finds the
            // page there (`EEXIST`) and only wakes the thread, or the process dropped the page
            // itself (`MADV_DONTNEED` through the raw pointer), and it reads as zeros, as
            // dropped anonymous memory does. A wake alone would repeat that fault for ever.
            let done = if write {
                area[0] = Page::zeroed();
                sys::copy(&self.uffd, addr, area.as_ptr().cast(), PAGE_SIZE)
            } else {
                sys::zeropage(&self.uffd, addr, PAGE_SIZE)
            };
            if let Err(e) = done {
                self.unresolved(msg, addr, &e);
            }
            return;
        }
        // Readahead: a fault right after the last range continues a scan and doubles the
        // window; any other fault starts over with one page. The range stops at the first
        // resident page.
        self.window =
            if page == self.next_expected { (self.window * 2).min(self.tuning.readahead) } else { 1 };
        let mut n = 1;
        while n < self.window.min(area.len())
            && page + n < self.pages
            && self.state[page + n] != State::Resident
        {
            n += 1;
        }
        // Room first, so that the resident count never passes the limit. Reclaim changes
        // only resident pages, so the range stays as it is.
        self.reclaim(n, victims);
        let room = self.tuning.limit.saturating_sub(lock(&self.shared.counters).resident).max(1);
        n = n.min(room);
        let resolved = match self.bring_in(page, n, write, area) {
            Ok(resolved) => resolved,
            Err(Unresolved::Map(e)) => return self.unresolved(msg, addr, &e),
            // The store cannot give the page back (its codec fails to decode it): as for a
            // mapping that fails, `SIGBUS`.
            Err(Unresolved::Load) => return self.give_up(msg),
        };
        self.next_expected = page + resolved;
        let ns = u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.count(|c| c.record_latency(ns));
    }

    /// Answers a fault whose mapping ioctl failed with `e`. After `EAGAIN` (the address
    /// space kept changing under the ioctl's own retries) the thread is woken to retry the
    /// access. Otherwise it gets `SIGBUS`, the kernel's answer to a fault it cannot resolve:
    /// left waiting it would wait for ever, and a wake would only repeat the fault.
    fn unresolved(&self, msg: &sys::Message, addr: usize, e: &io::Error) {
        if e.raw_os_error() == Some(libc::EAGAIN) {
            let _ = sys::wake(&self.uffd, addr, PAGE_SIZE);
        } else {
            self.give_up(msg);
        }
    }

    /// Counts the fault as unresolved and sends the faulting thread `SIGBUS`.
    fn give_up(&self, msg: &sys::Message) {
        self.count(|c| c.unresolved_faults += 1);
        let _ = sys::signal_bus(msg.thread);
    }

    /// Maps pages `page..page + n` (none resident) from the store or as zeros, with one
    /// `UFFDIO_ZEROPAGE` or `UFFDIO_COPY` for the whole range. Returns the pages mapped: the
    /// range stops before a page after the first that the store cannot give back.
    fn bring_in(
        &mut self,
        page: usize,
        n: usize,
        write: bool,
        area: &mut [Page],
    ) -> Result<usize, Unresolved> {
        let addr = self.page_addr(page);
        let first = self.state[page];
        let all_absent = self.state[page..page + n].iter().all(|&s| s == State::Absent);
        let zero_page = all_absent && !write;
        let mut n = n;
        let mut loaded = 0u64;
        if !zero_page {
            for (i, slot) in area[..n].iter_mut().enumerate() {
                match self.state[page + i] {
                    State::Stored => {
                        if self.shared.store.load((page + i) as u64, slot).is_err() {
                            // Only a codec that cannot decode its own stream fails here;
                            // never hand out other data: bring in only the pages before it.
                            n = i;
                            break;
                        }
                        loaded += 1;
                    }
                    _ => *slot = Page::zeroed(),
                }
            }
            if n == 0 {
                return Err(Unresolved::Load);
            }
        }
        // The counters are updated, and the store emptied of the pages brought in, under
        // the counters' lock taken before the fault is resolved (which wakes the faulting
        // thread): a thread reading the statistics after its access has returned sees that
        // access counted and the store without those pages. A failure takes them back.
        let mut c = lock(&self.shared.counters);
        let tally = |c: &mut Counters, sign: i64| {
            let add = |field: &mut u64, by: u64| *field = field.wrapping_add_signed(sign * by as i64);
            add(if first == State::Stored { &mut c.faults_from_store } else { &mut c.zero_fills }, 1);
            add(&mut c.swap_ins, loaded);
            add(&mut c.readahead, (n - 1) as u64);
            c.resident = c.resident.wrapping_add_signed(sign as isize * n as isize);
        };
        tally(&mut c, 1);
        let done = if zero_page {
            // Reads of pages never written get the shared zero page; a later write copies it
            // in the kernel without a fault.
            sys::zeropage(&self.uffd, addr, n * PAGE_SIZE)
        } else {
            sys::copy(&self.uffd, addr, area.as_ptr().cast(), n * PAGE_SIZE)
        };
        if let Err(e) = done {
            tally(&mut c, -1);
            return Err(Unresolved::Map(e));
        }
        for p in page..page + n {
            if self.state[p] == State::Stored {
                self.shared.store.remove(p as u64);
            }
            self.state[p] = State::Resident;
            self.fifo.push_back(p);
        }
        Ok(n)
    }

    /// Makes room for `n` more pages: when they would pass the limit, evicts the oldest
    /// resident pages (first in, first out) in batches of at least `tuning.batch`.
    fn reclaim(&mut self, n: usize, victims: &mut Vec<usize>) {
        let resident = lock(&self.shared.counters).resident;
        let over = (resident + n).saturating_sub(self.tuning.limit);
        if over == 0 {
            return;
        }
        let want = over.max(self.tuning.batch).min(resident);
        victims.clear();
        while victims.len() < want {
            let Some(victim) = self.fifo.pop_front() else { break };
            if self.state[victim] == State::Resident {
                victims.push(victim);
            }
        }
        self.evict(victims);
    }

    /// Stores `victims` (resident pages) and drops them from memory. No write is lost: each
    /// run of pages is write-protected before it is read, so a writer waits (its fault
    /// queues behind this eviction on this thread) and writes after the page is back. A
    /// page the store refuses is unprotected and stays resident, as do the rest of the
    /// batch after it.
    fn evict(&mut self, victims: &mut [usize]) {
        victims.sort_unstable();
        let mut buf = Page::zeroed();
        let mut refused = false;
        let mut stored = 0usize;
        for run in runs(victims) {
            let (first, len) = (run[0], run.len());
            let addr = self.page_addr(first);
            if refused || sys::write_protect(&self.uffd, addr, len * PAGE_SIZE, true).is_err() {
                self.keep(run, false);
                continue;
            }
            // Store the run's pages in order; a refusal ends the run (and the batch) there.
            let mut kept = len;
            for (i, &page) in run.iter().enumerate() {
                // SAFETY: the page is resident and write-protected: nobody can change it
                // while it is read, and reading a present page raises no fault.
                unsafe {
                    std::ptr::copy_nonoverlapping(
                        self.page_addr(page) as *const u8,
                        buf.as_bytes_mut().as_mut_ptr(),
                        PAGE_SIZE,
                    )
                };
                if self.shared.store.store(page as u64, &buf).is_err() {
                    self.count(|c| c.evictions_refused += 1);
                    refused = true;
                    kept = i;
                    break;
                }
            }
            if kept < len {
                self.keep(&run[kept..], true);
            }
            if kept == 0 {
                continue;
            }
            // SAFETY: pages of the region's own mapping whose contents are now in the store;
            // the next access faults as missing and gets them back.
            let rc =
                unsafe { libc::madvise(addr as *mut libc::c_void, kept * PAGE_SIZE, libc::MADV_DONTNEED) };
            if rc != 0 {
                for &page in &run[..kept] {
                    self.shared.store.remove(page as u64);
                }
                self.keep(&run[..kept], true);
                continue;
            }
            for &page in &run[..kept] {
                self.state[page] = State::Stored;
            }
            stored += kept;
        }
        self.count(|c| {
            c.resident -= stored;
            c.swap_outs += stored as u64;
        });
    }

    /// Leaves `pages` resident (unprotecting them if `protected`, which wakes any writer),
    /// youngest in the FIFO, so that the next reclaim tries other pages first.
    fn keep(&mut self, pages: &[usize], protected: bool) {
        if let (true, Some(&first)) = (protected, pages.first()) {
            let _ = sys::write_protect(&self.uffd, self.page_addr(first), pages.len() * PAGE_SIZE, false);
        }
        self.fifo.extend(pages.iter().copied());
    }
}

/// The runs of consecutive page numbers in a sorted list.
fn runs(pages: &[usize]) -> impl Iterator<Item = &[usize]> {
    pages.chunk_by(|a, b| a + 1 == *b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_split_where_pages_are_not_consecutive() {
        let pages = [1, 2, 3, 7, 9, 10];
        let got: Vec<&[usize]> = runs(&pages).collect();
        assert_eq!(got, [&[1, 2, 3][..], &[7], &[9, 10]]);
        assert_eq!(runs(&[]).count(), 0);
    }

    #[test]
    fn tuning_keeps_small_regions_working() {
        let t = Tuning::new(9, 16, 32);
        assert_eq!((t.limit, t.readahead, t.batch), (9, 2, 2));
        let t = Tuning::new(4096, 16, 32);
        assert_eq!((t.limit, t.readahead, t.batch), (4096, 16, 32));
        let t = Tuning::new(3, 16, 32);
        assert_eq!((t.limit, t.readahead, t.batch), (MIN_RESIDENT, 1, 1));
        let t = Tuning::new(0, 0, 0);
        assert_eq!((t.limit, t.readahead, t.batch), (MIN_RESIDENT, 1, 1));
    }
}
