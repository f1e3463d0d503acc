//! Page corpora: flat files of 4 KiB pages, and the page streams of the 2001 compressed-cache paper's workloads.
//!
//! A corpus file is nothing but pages back to back (`len % 4096 == 0`), the format
//! `capture` writes and `/proc/PID/mem` holds. The generators rebuild the memory the 2001
//! memtest workloads wrote, page by page, so the codecs see what the paper's kernels swapped.

use std::fs::File;
use std::io::{self, BufWriter, Read, Write};
use std::path::Path;

use pagecodec::testing::{self, PageClass};
use pagecodec::{PAGE_SIZE, Page};

/// A named set of pages and a sentence saying where they came from.
#[derive(Clone, Debug)]
pub struct Corpus {
    /// Short name for tables (`python`, `mmap001`, a file stem...).
    pub name: String,
    /// Where the pages came from, printed before every run.
    pub origin: String,
    /// The pages.
    pub pages: Vec<Page>,
}

impl Corpus {
    /// Keeps at most `max` pages, evenly spaced through the corpus, so a subsample still
    /// covers the whole address range. Returns whether pages were dropped.
    pub fn subsample(&mut self, max: usize) -> bool {
        let n = self.pages.len();
        if max == 0 || n <= max {
            return false;
        }
        let kept: Vec<Page> = (0..max).map(|i| self.pages[i * n / max].clone()).collect();
        self.pages = kept;
        self.origin = format!("{}; subsampled to {max} of {n} pages, evenly spaced", self.origin);
        true
    }
}

/// Reads a flat page file. Its length must be a multiple of 4096.
pub fn read_pages(path: &Path) -> io::Result<Vec<Page>> {
    let named = |e: io::Error| io::Error::new(e.kind(), format!("{}: {e}", path.display()));
    let mut file = File::open(path).map_err(named)?;
    let len = file.metadata().map_err(named)?.len();
    if len == 0 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{}: empty, no page to measure", path.display()),
        ));
    }
    if len % PAGE_SIZE as u64 != 0 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{}: {len} bytes is not a whole number of 4096-byte pages", path.display()),
        ));
    }
    let mut pages = Vec::with_capacity((len / PAGE_SIZE as u64) as usize);
    let mut page = Page::zeroed();
    loop {
        match file.read_exact(page.as_bytes_mut()) {
            Ok(()) => pages.push(page.clone()),
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => break,
            Err(e) => return Err(named(e)),
        }
    }
    Ok(pages)
}

/// Reads a page file as a [`Corpus`] named after the file stem.
pub fn read_corpus(path: &Path) -> io::Result<Corpus> {
    let pages = read_pages(path)?;
    let name = path.file_stem().map_or_else(|| "corpus".into(), |s| s.to_string_lossy().into_owned());
    Ok(Corpus { name, origin: format!("file {} ({} pages)", path.display(), pages.len()), pages })
}

/// Writes pages back to back.
pub fn write_pages(path: &Path, pages: &[Page]) -> io::Result<()> {
    let named = |e: io::Error| io::Error::new(e.kind(), format!("{}: {e}", path.display()));
    let mut out = BufWriter::new(File::create(path).map_err(named)?);
    for page in pages {
        out.write_all(page.as_bytes()).map_err(named)?;
    }
    out.flush().map_err(named)
}

/// The mmap001 page: `array[i] = i` through a byte pointer, so every page is the byte ramp
/// 0..=255 sixteen times over.
pub fn ramp_page() -> Page {
    let mut page = Page::zeroed();
    for (i, b) in page.as_bytes_mut().iter_mut().enumerate() {
        *b = i as u8;
    }
    page
}

/// mmap001's stream: `pages` ramp pages (it writes a file mapping the size of RAM).
pub fn mmap001(pages: usize) -> Corpus {
    Corpus {
        name: "mmap001".into(),
        origin: format!("generated: mmap001, array[i] = i over {pages} pages (byte ramp 0..255 x16 each)"),
        pages: vec![ramp_page(); pages],
    }
}

/// `pages` pages of one `pagecodec::testing` page class (seeds 0..pages), to see how each
/// codec fares on each kind of page.
pub fn page_class(class: PageClass, pages: usize) -> Corpus {
    Corpus {
        name: class.name().into(),
        origin: format!("generated: page class {} (pagecodec::testing), seeds 0..{pages}", class.name()),
        pages: (0..pages as u64).map(|seed| testing::generate(class, seed)).collect(),
    }
}

/// glibc's `rand()` (the TYPE_3 additive feedback generator behind `random()`), so
/// fillmem's `rand() % 200` gives the very bytes the paper's runs wrote.
#[derive(Clone, Debug)]
pub struct GlibcRand {
    /// `r[n]` lives in `ring[n % 34]`; the last 34 values are all the recurrence needs.
    ring: [u32; 34],
    /// Index `n` of the next value.
    n: usize,
}

impl GlibcRand {
    /// The generator after `srand(seed)` (glibc treats seed 0 as 1).
    pub fn new(seed: u32) -> GlibcRand {
        let mut r = [0u32; 344];
        r[0] = if seed == 0 { 1 } else { seed };
        for i in 1..31 {
            // r[i] = 16807 * r[i-1] mod (2^31 - 1), on the signed value as glibc does.
            let prev = i64::from(r[i - 1] as i32);
            let mut v = (16807 * prev) % 2_147_483_647;
            if v < 0 {
                v += 2_147_483_647;
            }
            r[i] = v as u32;
        }
        for i in 31..34 {
            r[i] = r[i - 31];
        }
        // glibc discards the first 310 values of the recurrence.
        for i in 34..344 {
            r[i] = r[i - 31].wrapping_add(r[i - 3]);
        }
        let mut ring = [0u32; 34];
        for (n, &value) in r.iter().enumerate().skip(344 - 34) {
            ring[n % 34] = value;
        }
        GlibcRand { ring, n: 344 }
    }

    /// The next `rand()` value, in `0..2^31`.
    pub fn next_rand(&mut self) -> u32 {
        let n = self.n;
        let value = self.ring[(n - 31) % 34].wrapping_add(self.ring[(n - 3) % 34]);
        self.ring[n % 34] = value;
        // Keep n small while preserving n % 34 (and n >= 34 for the subtractions above).
        self.n = if n + 1 >= 34 * 1000 { n + 1 - 34 * 990 } else { n + 1 };
        value >> 1
    }
}

/// Pages one fillmem block occupies: glibc serves a 1 MiB `malloc` from its own mapping of
/// 1 MiB + 16 bytes rounded up to pages (257 pages), the 16-byte chunk header first.
pub const FILLMEM_BLOCK_PAGES: usize = 257;
const MIB: usize = 1 << 20;
const CHUNK_HEADER: usize = 16;

/// The 257 pages of a fillmem block whose 1 MiB payload is all `byte`: the first page holds
/// glibc's mmapped-chunk header (prev_size 0, size 0x101000 | IS_MMAPPED) and 4080 payload
/// bytes, the last one the final 16 payload bytes then zeros. That is why the paper's report
/// saw "99%", not 100%, single-byte pages.
pub fn fillmem_block(byte: u8) -> Vec<Page> {
    let mut pages = vec![Page::filled(byte); FILLMEM_BLOCK_PAGES];
    let first = pages[0].as_bytes_mut();
    first[..8].copy_from_slice(&0u64.to_le_bytes());
    first[8..16].copy_from_slice(&((FILLMEM_BLOCK_PAGES * PAGE_SIZE) as u64 | 2).to_le_bytes());
    let tail = CHUNK_HEADER + MIB - (FILLMEM_BLOCK_PAGES - 1) * PAGE_SIZE;
    pages[FILLMEM_BLOCK_PAGES - 1].as_bytes_mut()[tail..].fill(0);
    pages
}

/// fillmem's stream for `blocks` 1 MiB blocks: block `i` filled forward with byte
/// `i & 0xff`, then every block, last to first, refilled with `rand() % 200` (glibc `rand`,
/// default seed 1). The forward pass's pages come first, then the backward pass's.
pub fn fillmem(blocks: usize) -> Corpus {
    let mut pages = Vec::with_capacity(2 * blocks * FILLMEM_BLOCK_PAGES);
    for i in 0..blocks {
        pages.extend(fillmem_block(i as u8));
    }
    let mut rand = GlibcRand::new(1);
    for _ in (0..blocks).rev() {
        pages.extend(fillmem_block((rand.next_rand() % 200) as u8));
    }
    Corpus {
        name: "fillmem".into(),
        origin: format!(
            "generated: fillmem, {blocks} x 1 MiB malloc blocks ({FILLMEM_BLOCK_PAGES} pages each with \
             glibc's chunk header) filled forward with i & 0xff, then backward with rand() % 200"
        ),
        pages,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pagecodec::same_filled;

    #[test]
    fn glibc_rand_matches_known_outputs() {
        // The first outputs of glibc's rand() with the default seed, as every C programmer
        // has seen them printed.
        let mut r = GlibcRand::new(1);
        let first: Vec<u32> = (0..5).map(|_| r.next_rand()).collect();
        assert_eq!(first, [1804289383, 846930886, 1681692777, 1714636915, 1957747793]);
        // Seed 0 behaves as seed 1.
        assert_eq!(GlibcRand::new(0).next_rand(), 1804289383);
        // Far into the sequence the ring still follows the recurrence (no panic, values < 2^31).
        let mut r = GlibcRand::new(42);
        assert!((0..10_000).all(|_| r.next_rand() < 1 << 31));
    }

    #[test]
    fn mmap001_pages_are_ramps() {
        let c = mmap001(3);
        assert_eq!(c.pages.len(), 3);
        assert_eq!(c.pages[2].as_bytes()[255], 255);
        assert_eq!(c.pages[2].as_bytes()[256], 0);
        assert_eq!(c.pages[0].as_bytes()[4095], 255);
    }

    #[test]
    fn fillmem_is_99_percent_single_byte_pages() {
        let c = fillmem(4);
        assert_eq!(c.pages.len(), 2 * 4 * FILLMEM_BLOCK_PAGES);
        let same = c.pages.iter().filter(|p| same_filled(p).is_some()).count();
        let share = same as f64 / c.pages.len() as f64;
        assert!((0.99..1.0).contains(&share), "{share}");
        // Block 3 forward: byte 3 throughout its payload, header at the start.
        let block3 = &c.pages[3 * FILLMEM_BLOCK_PAGES..4 * FILLMEM_BLOCK_PAGES];
        assert_eq!(&block3[0].as_bytes()[8..16], &0x101002u64.to_le_bytes());
        assert_eq!(block3[0].as_bytes()[16], 3);
        assert_eq!(block3[1], Page::filled(3));
        let last = block3[FILLMEM_BLOCK_PAGES - 1].as_bytes();
        assert_eq!((last[15], last[16]), (3, 0));
        // The backward pass starts with rand() % 200 of the default seed.
        assert_eq!(c.pages[4 * FILLMEM_BLOCK_PAGES + 1], Page::filled((1804289383u32 % 200) as u8));
        // Payload accounting: 16 header bytes + 1 MiB payload + zero tail fill 257 pages.
        let payload: usize = block3.iter().map(|p| p.as_bytes().iter().filter(|&&b| b == 3).count()).sum();
        assert_eq!(payload, MIB);
    }

    #[test]
    fn corpus_files_round_trip_and_reject_partial_pages() {
        let dir = std::env::temp_dir().join(format!("pagebench-corpus-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t.pages");
        let pages: Vec<Page> = (0..5).map(|i| Page::filled(i as u8)).collect();
        write_pages(&path, &pages).unwrap();
        let c = read_corpus(&path).unwrap();
        assert_eq!(c.name, "t");
        assert_eq!(c.pages, pages);
        std::fs::write(&path, [0u8; 4097]).unwrap();
        let err = read_pages(&path).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidData);
        std::fs::write(&path, []).unwrap();
        let err = read_pages(&path).unwrap_err();
        assert!(err.to_string().contains("empty") && err.to_string().contains("t.pages"), "{err}");
        let missing = dir.join("missing.pages");
        let err = read_pages(&missing).unwrap_err();
        assert!(err.to_string().contains("missing.pages"), "the error names the file: {err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn page_class_corpus_holds_distinct_seeded_pages_of_its_class() {
        let c = page_class(PageClass::Sparse, 8);
        assert_eq!(c.name, "sparse");
        assert_eq!(c.pages.len(), 8);
        assert_eq!(c.pages[3], testing::generate(PageClass::Sparse, 3));
        assert_ne!(c.pages[0], c.pages[1]);
        assert!(c.origin.contains("page class sparse"));
    }

    #[test]
    fn subsample_keeps_evenly_spaced_pages() {
        let mut c = Corpus {
            name: "x".into(),
            origin: "test".into(),
            pages: (0..10).map(|i| Page::filled(i as u8)).collect(),
        };
        assert!(!c.subsample(10));
        assert!(c.subsample(5));
        let firsts: Vec<u8> = c.pages.iter().map(|p| p.as_bytes()[0]).collect();
        assert_eq!(firsts, [0, 2, 4, 6, 8]);
        assert!(c.origin.contains("subsampled to 5 of 10"));
    }
}
