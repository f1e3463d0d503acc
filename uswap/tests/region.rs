//! A region over a real userfaultfd: every byte verified while pages are evicted and
//! brought back, from one and from several threads, with a store that refuses pages, and
//! through the zero-page path. These tests need userfaultfd (root, or
//! `vm.unprivileged_userfaultfd = 1`); without it they fail saying so.
#![cfg(target_os = "linux")]

use pagecodec::{CompressError, DecompressError, PAGE_SIZE, Page, PageCodec};
use pagestore::{CodecFactory, StoreConfig};
use uswap::{Region, RegionConfig};

fn lzo_rle() -> CodecFactory {
    Box::new(|| Box::new(lzokit::LzoRle::default()))
}

fn region(pages: usize, resident: usize, store: StoreConfig) -> Region {
    region_with(lzo_rle(), pages, resident, store)
}

fn region_with(codec: CodecFactory, pages: usize, resident: usize, store: StoreConfig) -> Region {
    let mut config = RegionConfig::new(resident, codec);
    config.store = store;
    Region::new(pages, config).unwrap_or_else(|e| panic!("this test needs userfaultfd: {e}"))
}

/// Page `page` at version `version`: compressible, different for every page and version.
fn content(page: usize, version: u32) -> Vec<u8> {
    let mut bytes = vec![0u8; PAGE_SIZE];
    for (i, chunk) in bytes.chunks_exact_mut(8).enumerate() {
        let word = if i % 4 == 0 { (page as u64) << 32 | u64::from(version) } else { (i % 7) as u64 };
        chunk.copy_from_slice(&word.to_le_bytes());
    }
    bytes
}

/// A region of `pages` pages with at most `resident` in memory, every page written with
/// [`content`] at `version`: all but the last `resident` written are in the store.
fn written(pages: usize, resident: usize, version: u32) -> Region {
    let mut region = region(pages, resident, StoreConfig::default());
    write_every_page(&mut region, version);
    region
}

/// Writes every page of `region` with [`content`] at `version`.
fn write_every_page(region: &mut Region, version: u32) {
    for page in 0..region.len() / PAGE_SIZE {
        region.write(page * PAGE_SIZE, &content(page, version)).unwrap();
    }
}

#[test]
fn every_page_survives_eviction_and_comes_back() {
    let pages = 256;
    let mut region = region(pages, 16, StoreConfig::default());
    for version in 0..3 {
        for page in 0..pages {
            region.write(page * PAGE_SIZE, &content(page, version)).unwrap();
        }
        let mut back = vec![0u8; PAGE_SIZE];
        for page in (0..pages).rev() {
            region.read(page * PAGE_SIZE, &mut back).unwrap();
            assert!(back == content(page, version), "page {page} version {version}");
        }
    }
    let stats = region.stats();
    assert!(stats.swap_outs >= 3 * 240, "{stats:?}");
    assert!(stats.faults_from_store >= 2 * 240, "{stats:?}");
    assert!(stats.swap_ins >= stats.faults_from_store, "{stats:?}");
    assert!(stats.resident_pages <= 16, "{stats:?}");
    assert!(stats.fault_latency.count > 0 && stats.fault_latency.median <= stats.fault_latency.max);
    assert!(stats.store.mm.compr_data_size > 0);
}

#[test]
fn pages_never_written_read_as_zeros() {
    let region = region(32, 8, StoreConfig::default());
    let mut back = vec![0xEEu8; PAGE_SIZE];
    for page in 0..32 {
        region.read(page * PAGE_SIZE, &mut back).unwrap();
        assert!(back.iter().all(|&b| b == 0), "page {page}");
    }
    let stats = region.stats();
    // Reads in order: readahead maps the zero page over several pages per fault.
    assert_eq!(stats.zero_fills + stats.readahead, 32, "{stats:?}");
    assert!(stats.zero_fills < 32, "{stats:?}");
    assert_eq!((stats.faults_from_store, stats.swap_ins), (0, 0));

    // Without readahead, one fault per page.
    let mut config = RegionConfig::new(4, lzo_rle());
    config.readahead = 1;
    let region = Region::new(32, config).unwrap();
    for page in 0..32 {
        region.read(page * PAGE_SIZE, &mut back).unwrap();
        assert!(back.iter().all(|&b| b == 0), "page {page}");
    }
    let stats = region.stats();
    assert_eq!((stats.zero_fills, stats.readahead), (32, 0), "{stats:?}");
}

#[test]
fn sequential_scans_bring_pages_in_by_windows() {
    let pages = 1024;
    let mut config = RegionConfig::new(128, lzo_rle());
    config.readahead = 16;
    config.reclaim_batch = 32;
    let mut region =
        Region::new(pages, config).unwrap_or_else(|e| panic!("this test needs userfaultfd: {e}"));
    for version in 0..2 {
        for page in 0..pages {
            region.write(page * PAGE_SIZE, &content(page, version)).unwrap();
        }
        let mut back = vec![0u8; PAGE_SIZE];
        for page in 0..pages {
            region.read(page * PAGE_SIZE, &mut back).unwrap();
            assert!(back == content(page, version), "page {page} version {version}");
        }
    }
    let stats = region.stats();
    assert!(stats.resident_pages <= 128, "{stats:?}");
    // Three sequential passes over pages in the store (two reads, one rewrite): most pages
    // come back as readahead, about one fault per 16 pages.
    assert!(stats.swap_ins >= 3 * (pages as u64 - 128), "{stats:?}");
    assert!(stats.faults_from_store * 8 < stats.swap_ins, "{stats:?}");
    assert!(stats.zero_fills * 8 < pages as u64, "{stats:?}");
    assert_eq!(stats.store.mm.orig_data_size as usize / PAGE_SIZE + stats.resident_pages, pages, "{stats:?}");
}

/// Runs `access` on a thread of its own and waits up to 20 s for it: an access that never
/// completes faults for ever, and the test fails saying so (the region is leaked, so that
/// the stuck thread is not left on an unmapped region).
fn completes(region: Region, what: &str, access: impl FnOnce() + Send + 'static) -> Region {
    let (done, finished) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        access();
        let _ = done.send(());
    });
    if finished.recv_timeout(std::time::Duration::from_secs(20)).is_err() {
        let stats = region.stats();
        std::mem::forget(region);
        panic!("{what} did not complete in 20 s: {stats:?}");
    }
    region
}

#[test]
fn accesses_across_pages_complete_at_the_smallest_limit() {
    // A limit of one page is raised to the smallest that lets any one instruction finish:
    // each access below needs two or four pages resident at once.
    let pages = 32;
    let region = written(pages, 1, 2);
    let base = region.as_ptr() as usize;
    let byte = |page: usize, at: usize| content(page + at / PAGE_SIZE, 2)[at % PAGE_SIZE];
    // An 8-byte load across the boundary of pages 0 and 1 (both stored), then a store.
    let region = completes(region, "an 8-byte access across pages 0 and 1", move || {
        let at = (base + PAGE_SIZE - 4) as *mut u64;
        // SAFETY: 8 bytes inside the region, touched by no other thread meanwhile.
        unsafe { at.write_unaligned(!at.read_unaligned()) };
    });
    // A copy between two ranges that each cross page boundaries (pages 4-6 into 10-12).
    let region = completes(region, "a copy across pages 4-6 into pages 10-12", move || {
        // SAFETY: two disjoint ranges inside the region, touched by no other thread.
        unsafe {
            std::ptr::copy_nonoverlapping(
                (base + 5 * PAGE_SIZE - 3) as *const u8,
                (base + 11 * PAGE_SIZE - 5) as *mut u8,
                PAGE_SIZE + 6,
            )
        };
    });
    // One string move whose source and destination both cross a page boundary: 4 pages.
    #[cfg(target_arch = "x86_64")]
    let region = completes(region, "a string move across pages 20-21 into 26-27", move || {
        // SAFETY: one 8-byte move between two ranges inside the region; `rep movsq` with
        // RCX = 1 reads 8 bytes at RSI and writes 8 at RDI (direction flag clear, as the
        // ABI guarantees) and changes only the three registers named.
        unsafe {
            core::arch::asm!(
                "rep movsq",
                inout("rcx") 1usize => _,
                inout("rsi") base + 21 * PAGE_SIZE - 4 => _,
                inout("rdi") base + 27 * PAGE_SIZE - 2 => _,
                options(nostack, preserves_flags),
            )
        };
    });
    let mut back = vec![0u8; PAGE_SIZE];
    region.read(PAGE_SIZE - 4, &mut back[..8]).unwrap();
    let flipped: Vec<u8> = (0..8).map(|i| !byte(0, PAGE_SIZE - 4 + i)).collect();
    assert_eq!(back[..8], flipped[..], "the access across pages 0 and 1");
    region.read(11 * PAGE_SIZE - 5, &mut back[..PAGE_SIZE]).unwrap();
    let copied: Vec<u8> = (0..PAGE_SIZE).map(|i| byte(4, PAGE_SIZE - 3 + i)).collect();
    assert!(back == copied, "the copy into pages 10-12");
    #[cfg(target_arch = "x86_64")]
    {
        region.read(27 * PAGE_SIZE - 2, &mut back[..8]).unwrap();
        let moved: Vec<u8> = (0..8).map(|i| byte(20, PAGE_SIZE - 4 + i)).collect();
        assert_eq!(back[..8], moved[..], "the string move into pages 26-27");
    }
    assert!(region.stats().resident_pages <= 4, "{:?}", region.stats());
}

#[test]
fn system_calls_read_and_write_stored_pages() {
    // The kernel's own copies from and into the region (a file's `write` and `read`) fault
    // like the process's accesses and are resolved by the fault thread.
    use std::io::{Read, Write};
    let pages = 64;
    let region = written(pages, 8, 1);
    assert!(region.stats().resident_pages <= 8);
    let path = std::env::temp_dir().join(format!("uswap-syscalls-{}", std::process::id()));
    let base = region.as_ptr();
    // SAFETY: pages 0 and 1 of the region, which no other code touches during the call.
    let first = unsafe { std::slice::from_raw_parts(base, 2 * PAGE_SIZE) };
    std::fs::File::create(&path).unwrap().write_all(first).unwrap();
    let in_file = std::fs::read(&path).unwrap();
    assert!(in_file[..PAGE_SIZE] == content(0, 1)[..] && in_file[PAGE_SIZE..] == content(1, 1)[..]);
    // Into pages 40 and 41, stored since: the file's bytes replace theirs.
    // SAFETY: as above, pages 40 and 41.
    let later = unsafe { std::slice::from_raw_parts_mut(base.add(40 * PAGE_SIZE), 2 * PAGE_SIZE) };
    std::fs::File::open(&path).unwrap().read_exact(later).unwrap();
    std::fs::remove_file(&path).unwrap();
    let mut back = vec![0u8; PAGE_SIZE];
    for (page, want) in [(40, content(0, 1)), (41, content(1, 1)), (42, content(42, 1))] {
        region.read(page * PAGE_SIZE, &mut back).unwrap();
        assert!(back == want, "page {page}");
    }
}

/// The environment variable that makes this test binary run one test's body in
/// [`in_a_process_of_its_own`].
const CHILD: &str = "USWAP_TEST_CHILD";

/// For accesses that end the process: runs `body` in a process of its own (this test binary
/// run again for test `name` alone, with core files off) and returns the signal that ended it
/// (`None` when `body` returned and the process exited) and what it wrote to stderr. After
/// 20 s it is killed and the test fails.
fn in_a_process_of_its_own(name: &str, body: impl FnOnce()) -> (Option<i32>, String) {
    if std::env::var_os(CHILD).is_some_and(|v| v == name) {
        no_core_file();
        body();
        std::process::exit(0);
    }
    let exe = std::env::current_exe().expect("the test binary's path");
    let mut child = std::process::Command::new(exe)
        .args(["--exact", name, "--nocapture", "--test-threads=1"])
        .env(CHILD, name)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("starting the test binary again");
    // Read on a thread of its own, so that a child writing more than a pipe holds goes on.
    let mut pipe = child.stderr.take().expect("piped");
    let stderr = std::thread::spawn(move || {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut pipe, &mut text).ok();
        text
    });
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        if let Some(status) = child.try_wait().expect("waiting for the child") {
            use std::os::unix::process::ExitStatusExt;
            return (status.signal(), stderr.join().unwrap_or_default());
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{name}: the child process neither ended nor was ended in 20 s (a hung access?)");
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// A codec that panics when it compresses.
struct Panicking;

impl PageCodec for Panicking {
    fn name(&self) -> &'static str {
        "panicking"
    }
    fn max_compressed_len(&self) -> usize {
        PAGE_SIZE
    }
    fn compress(&mut self, _page: &Page, _out: &mut [u8]) -> Result<usize, CompressError> {
        panic!("a codec's bug")
    }
    fn decompress(&mut self, _input: &[u8], _page: &mut Page) -> Result<(), DecompressError> {
        Err(DecompressError::Truncated)
    }
}

/// Keeps a child process that ends by a signal from writing a core file.
fn no_core_file() {
    let none = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: setrlimit reads the structure passed; it changes only this process's limit.
    assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_CORE, &none) }, 0);
}

#[test]
fn a_page_the_codec_cannot_decode_ends_the_access_with_sigbus() {
    // The fault thread cannot give the page back: the reading thread gets SIGBUS (what the
    // kernel does when it cannot read a swapped-out page) rather than wait for ever.
    let name = "a_page_the_codec_cannot_decode_ends_the_access_with_sigbus";
    let (signal, stderr) = in_a_process_of_its_own(name, || {
        let codec: CodecFactory = Box::new(|| Box::new(Altered::undecodable()));
        let mut region = region_with(codec, 64, 4, StoreConfig::default());
        write_every_page(&mut region, 1);
        let mut back = vec![0u8; PAGE_SIZE];
        // Page 0 is stored: this read must not return.
        region.read(0, &mut back).unwrap();
    });
    assert_eq!(signal, Some(libc::SIGBUS), "no signal: the read returned; {stderr}");
}

#[test]
fn a_panicking_codec_ends_the_process() {
    // A codec that panics in the fault thread leaves no thread to resolve faults: the
    // process aborts instead of leaving its threads waiting for ever.
    let name = "a_panicking_codec_ends_the_process";
    let (signal, stderr) = in_a_process_of_its_own(name, || {
        let mut region = region_with(Box::new(|| Box::new(Panicking)), 64, 4, StoreConfig::default());
        // The fifth page's fault evicts, and the eviction compresses.
        write_every_page(&mut region, 1);
    });
    assert_eq!(signal, Some(libc::SIGABRT), "no signal: every write returned; {stderr}");
    assert!(stderr.contains("a codec's bug"), "the codec's panic message is not on stderr: {stderr}");
}

#[test]
fn pages_the_process_drops_read_as_zeros() {
    // `MADV_DONTNEED` through the raw pointer drops a resident page behind the fault
    // thread's back: the next access must read zeros, as dropped anonymous memory does,
    // not fault for ever. A page in the store has no page to drop, and the thread is not
    // told of the advice: it comes back with its stored bytes (documented).
    let pages = 64;
    let region = written(pages, 8, 1);
    let base = region.as_ptr() as usize;
    // Pages 62 and 63 were written last: resident.
    // SAFETY: advice on two pages of the region, which no other thread is using.
    let rc = unsafe {
        libc::madvise((base + 62 * PAGE_SIZE) as *mut libc::c_void, 2 * PAGE_SIZE, libc::MADV_DONTNEED)
    };
    assert_eq!(rc, 0, "madvise: {}", std::io::Error::last_os_error());
    let region = completes(region, "a read and a write of dropped pages", move || {
        // SAFETY: pages of the region, used by this thread alone meanwhile.
        unsafe {
            ((base + 62 * PAGE_SIZE + 5) as *const u8).read_volatile();
            ((base + 63 * PAGE_SIZE + 7) as *mut u8).write_volatile(9);
        }
    });
    let mut back = vec![0u8; PAGE_SIZE];
    region.read(62 * PAGE_SIZE, &mut back).unwrap();
    assert!(back.iter().all(|&b| b == 0), "page 62 after it was dropped");
    region.read(63 * PAGE_SIZE, &mut back).unwrap();
    assert!(back.iter().enumerate().all(|(i, &b)| b == if i == 7 { 9 } else { 0 }), "page 63");
    // SAFETY: advice on page 0 of the region (stored), which no other thread is using.
    let rc = unsafe { libc::madvise(base as *mut libc::c_void, PAGE_SIZE, libc::MADV_DONTNEED) };
    assert_eq!(rc, 0, "madvise: {}", std::io::Error::last_os_error());
    region.read(0, &mut back).unwrap();
    assert!(back == content(0, 1), "page 0, from the store");
}

#[test]
fn a_forked_child_faults_instead_of_reading_zeros() {
    // The child gets no copy of the region: without one it would read a stored page as
    // zeros, since the kernel does not carry the registration over to it.
    let pages = 64;
    let region = written(pages, 8, 1);
    assert!(region.stats().swap_outs > 0, "no page was stored before the fork");
    let stored = region.as_ptr();
    // SAFETY: the child only reads one byte and exits, calling nothing that takes a lock
    // another thread of this process may have held at the fork.
    let child = unsafe { libc::fork() };
    assert!(child >= 0, "fork: {}", std::io::Error::last_os_error());
    if child == 0 {
        // SAFETY: in the parent this is page 0's first byte (stored); in the child it must
        // fault. Exit code 0 would mean it read a zero.
        let byte = unsafe { stored.read_volatile() };
        // SAFETY: `_exit` ends the child without running the parent's destructors.
        unsafe { libc::_exit(if byte == 0 { 0 } else { 1 }) };
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let mut status = 0;
    loop {
        // SAFETY: waits for the child forked above; `status` is a valid out-pointer.
        let done = unsafe { libc::waitpid(child, &mut status, libc::WNOHANG) };
        assert!(done >= 0, "waitpid: {}", std::io::Error::last_os_error());
        if done == child {
            break;
        }
        if std::time::Instant::now() > deadline {
            // SAFETY: the child forked above, still running.
            unsafe { libc::kill(child, libc::SIGKILL) };
            panic!("the forked child neither faulted nor exited in 20 s");
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert!(
        libc::WIFSIGNALED(status) && libc::WTERMSIG(status) == libc::SIGSEGV,
        "the child was not stopped by SIGSEGV: status {status:#x} (exit code 0: it read a zero)"
    );
    let mut back = vec![0u8; PAGE_SIZE];
    region.read(0, &mut back).unwrap();
    assert!(back == content(0, 1), "the parent's page 0 changed");
}

#[test]
fn a_full_store_keeps_pages_resident_and_intact() {
    // Room for one 32 KiB chunk of the store: most evictions are refused and those pages
    // stay resident.
    let pages = 64;
    let mut region =
        region(pages, 4, StoreConfig::default().with_mem_limit(32 * 1024).with_same_filled(false));
    let noisy = |page: usize| {
        let mut bytes = content(page, 9);
        for (i, b) in bytes.iter_mut().enumerate() {
            *b ^= (i * 131 + page * 17) as u8;
        }
        bytes
    };
    for page in 0..pages {
        region.write(page * PAGE_SIZE, &noisy(page)).unwrap();
    }
    let mut back = vec![0u8; PAGE_SIZE];
    for page in 0..pages {
        region.read(page * PAGE_SIZE, &mut back).unwrap();
        assert!(back == noisy(page), "page {page}");
    }
    let stats = region.stats();
    assert!(stats.evictions_refused > 0, "{stats:?}");
    assert!(stats.store.mm.mem_used_total <= 32 * 1024);
}

#[test]
fn threads_write_and_read_while_pages_are_evicted() {
    let pages = 512;
    let threads = 4;
    let region = region(pages, 24, StoreConfig::default());
    let base = region.as_ptr() as usize;
    std::thread::scope(|s| {
        for t in 0..threads {
            s.spawn(move || {
                // Each thread owns the pages `p % threads == t`: no two threads write the
                // same bytes, as the raw access requires.
                let mine: Vec<usize> = (0..pages).filter(|p| p % threads == t).collect();
                let mut back = vec![0u8; PAGE_SIZE];
                for version in 0..4u32 {
                    for &page in &mine {
                        let data = content(page, version);
                        // SAFETY: in the region, owned by this thread (see above); the region
                        // outlives the scope.
                        unsafe {
                            std::ptr::copy_nonoverlapping(
                                data.as_ptr(),
                                (base + page * PAGE_SIZE) as *mut u8,
                                PAGE_SIZE,
                            )
                        };
                    }
                    for &page in mine.iter().rev() {
                        // SAFETY: as above.
                        unsafe {
                            std::ptr::copy_nonoverlapping(
                                (base + page * PAGE_SIZE) as *const u8,
                                back.as_mut_ptr(),
                                PAGE_SIZE,
                            )
                        };
                        assert!(back == content(page, version), "thread {t} page {page} version {version}");
                    }
                }
            });
        }
    });
    let stats = region.stats();
    eprintln!(
        "threads: {} swap-outs, {} write-protect faults (writers that met a page being stored)",
        stats.swap_outs, stats.wp_faults
    );
    assert!(stats.swap_outs > 1000, "{stats:?}");
    assert!(stats.resident_pages <= 24, "{stats:?}");
}

#[test]
fn drop_returns_promptly_after_busy_use() {
    let start = std::time::Instant::now();
    for _ in 0..8 {
        let mut region = region(64, 4, StoreConfig::default());
        for page in 0..64 {
            region.write(page * PAGE_SIZE, &content(page, 1)).unwrap();
        }
        drop(region);
    }
    assert!(start.elapsed().as_secs() < 60, "eight regions took {:?}", start.elapsed());
}

#[test]
fn accesses_past_the_end_are_refused() {
    let mut region = region(2, 4, StoreConfig::default());
    let mut buf = [0u8; 16];
    assert!(region.read(2 * PAGE_SIZE - 8, &mut buf).is_err());
    assert!(region.write(usize::MAX, &buf).is_err());
    assert!(Region::new(0, RegionConfig::new(4, lzo_rle())).is_err());
}

#[test]
fn random_accesses_match_a_model() {
    // 5,000 random writes and reads of partial pages against a plain copy of the region,
    // with room for 4 resident pages (the fewest) out of 48: every read must see the
    // model's bytes.
    let pages = 48;
    let mut region = region(pages, 4, StoreConfig::default());
    let mut model = vec![0u8; pages * PAGE_SIZE];
    let mut state = 0x2545_F491_4F6C_DD1Du64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut buf = vec![0u8; 3 * PAGE_SIZE];
    for step in 0..5000 {
        let offset = (next() % (pages * PAGE_SIZE) as u64) as usize;
        let len = ((next() % (2 * PAGE_SIZE as u64)) as usize + 1).min(pages * PAGE_SIZE - offset);
        if next() % 2 == 0 {
            let fill = (step % 251) as u8;
            let data: Vec<u8> = (0..len).map(|i| fill ^ (i % 7) as u8).collect();
            region.write(offset, &data).unwrap();
            model[offset..offset + len].copy_from_slice(&data);
        } else {
            region.read(offset, &mut buf[..len]).unwrap();
            assert!(buf[..len] == model[offset..offset + len], "step {step}: {len} bytes at {offset}");
        }
    }
    let stats = region.stats();
    assert!(stats.swap_outs > 500 && stats.faults_from_store > 500, "{stats:?}");
}

#[test]
fn writes_during_eviction_wait_and_are_kept() {
    // One thread keeps writing a counter into a hot page and reading it back; another walks
    // the rest of the region, so the hot page keeps becoming the oldest resident page and is
    // evicted under the writer. Writes that meet it being stored wait (write-protect faults)
    // and must all be kept. The codec takes 200 us per page, so that every eviction leaves
    // the page write-protected long enough for the writer to meet it even on a loaded
    // machine. Runs until such faults were seen, at most 20 s.
    let pages = 64;
    let mut config = RegionConfig::new(4, Box::new(|| Box::new(Altered::slow())));
    config.readahead = 1;
    let region = Region::new(pages, config).unwrap_or_else(|e| panic!("this test needs userfaultfd: {e}"));
    let base = region.as_ptr() as usize;
    let stop = std::sync::atomic::AtomicBool::new(false);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    std::thread::scope(|s| {
        s.spawn(|| {
            let hot = base as *mut u64;
            let mut value = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                value += 1;
                // SAFETY: page 0 belongs to this thread alone; the region outlives the scope.
                unsafe {
                    hot.write_volatile(value);
                    assert_eq!(hot.read_volatile(), value, "a write to the hot page was lost");
                }
            }
        });
        s.spawn(|| {
            let mut page = 1;
            while std::time::Instant::now() < deadline && region.stats().wp_faults == 0 {
                // SAFETY: pages 1.. belong to this thread alone.
                unsafe { ((base + page * PAGE_SIZE) as *mut u8).write_volatile(page as u8) };
                page = if page + 1 == pages { 1 } else { page + 1 };
            }
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
        });
    });
    let stats = region.stats();
    assert!(stats.wp_faults > 0, "no write met a page being stored in 20 s: {stats:?}");
}

/// LZO-RLE altered for a test: each compression takes at least `delay`, and with
/// `undecodable` no stream decodes again.
struct Altered {
    lzo: lzokit::LzoRle,
    delay: std::time::Duration,
    undecodable: bool,
}

impl Altered {
    /// At least 200 us per compression: it widens the window in which an evicted page is
    /// write-protected.
    fn slow() -> Self {
        Altered {
            lzo: lzokit::LzoRle::default(),
            delay: std::time::Duration::from_micros(200),
            undecodable: false,
        }
    }

    /// Streams that never decode again.
    fn undecodable() -> Self {
        Altered { lzo: lzokit::LzoRle::default(), delay: std::time::Duration::ZERO, undecodable: true }
    }
}

impl PageCodec for Altered {
    fn name(&self) -> &'static str {
        "altered-lzo-rle"
    }
    fn max_compressed_len(&self) -> usize {
        self.lzo.max_compressed_len()
    }
    fn compress(&mut self, page: &Page, out: &mut [u8]) -> Result<usize, CompressError> {
        std::thread::sleep(self.delay);
        self.lzo.compress(page, out)
    }
    fn decompress(&mut self, input: &[u8], page: &mut Page) -> Result<(), DecompressError> {
        if self.undecodable {
            return Err(DecompressError::corrupt("this codec decodes nothing"));
        }
        self.lzo.decompress(input, page)
    }
}
