//! The measuring loop: every codec on every page, interleaved, round trips verified.
//!
//! For each page the codecs take turns (the starting codec rotates from page to page), so
//! frequency changes, other tenants and cache state hit every codec alike. Each page is
//! compressed and decompressed `reps` times per codec and the *minimum* is kept: the
//! minimum is the reading least disturbed by interrupts and neighbours on a shared machine.
//! Every decompression goes into a page first filled with a poison pattern and is compared
//! with the original byte for byte; every repeated compression must give the same stream.
//! Any failure stops the run with [`VerifyError`]: a wrong result is never a number.

use std::fmt;
use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

use pagecodec::{PAGE_SIZE, Page, PageCodec};

use crate::corpus::Corpus;
use crate::timing::{self, Timer};

/// Streams longer than this (3/4 of a page, zram's historical "huge" threshold) count as
/// incompressible, as do pages the codec refuses.
pub const INCOMPRESSIBLE_ABOVE: usize = PAGE_SIZE * 3 / 4;

/// What one codec did with one corpus: per-page figures, in page order.
#[derive(Clone, Debug)]
pub struct CodecRun {
    /// The codec's name.
    pub codec: String,
    /// The corpus's name.
    pub corpus: String,
    /// Stream length per page; `None` where the codec refused the page.
    pub sizes: Vec<Option<u32>>,
    /// Minimum compress ticks per page (refused pages included: the work until refusal).
    pub compress_ticks: Vec<u64>,
    /// Minimum decompress ticks per compressed page.
    pub decompress_ticks: Vec<u64>,
}

/// What [`run_corpus`] measured.
#[derive(Clone, Debug)]
pub struct CorpusRun {
    /// One per codec, in the order given.
    pub codecs: Vec<CodecRun>,
    /// [`timing::core_rate`] after each page's turns (in every sweep), in order: how much of
    /// the core the measurement had. Empty without the TSC.
    pub core_rates: Vec<f64>,
}

/// A round trip that failed: the codec is broken on this page.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VerifyError {
    /// The codec's name.
    pub codec: String,
    /// The corpus's name.
    pub corpus: String,
    /// Index of the page in the corpus.
    pub page: usize,
    /// What went wrong.
    pub what: String,
}

impl fmt::Display for VerifyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "ROUND TRIP FAILED: codec {} on page {} of corpus {}: {}",
            self.codec, self.page, self.corpus, self.what
        )
    }
}

impl std::error::Error for VerifyError {}

/// Reports progress on stderr: a rewritten line on a terminal, nothing otherwise.
pub struct Progress {
    enabled: bool,
    last: Instant,
}

impl Progress {
    /// Progress on stderr when it is a terminal and `enabled`.
    pub fn new(enabled: bool) -> Progress {
        Progress { enabled: enabled && std::io::stderr().is_terminal(), last: Instant::now() }
    }

    /// Shows `done` of `total` for `label`, at most five times a second.
    pub fn update(&mut self, label: &str, done: usize, total: usize) {
        if self.enabled && (self.last.elapsed() > Duration::from_millis(200) || done == total) {
            self.last = Instant::now();
            let pct = if total == 0 { 100.0 } else { done as f64 * 100.0 / total as f64 };
            eprint!("\r  {label}: {done}/{total} pages ({pct:.0}%)   ");
            if done == total {
                eprintln!();
            }
            let _ = std::io::stderr().flush();
        }
    }
}

/// The alignment of a [`Page`], which every page offset must keep.
pub const PAGE_ALIGN: usize = core::mem::align_of::<Page>();

/// `offset` when a page can start that many bytes past a 4 KiB boundary (a multiple of
/// [`PAGE_ALIGN`] below 4096); otherwise what is wrong with it.
///
/// # Errors
///
/// A message naming the offset.
pub fn check_page_offset(offset: usize) -> Result<usize, String> {
    if offset < 4096 && offset % PAGE_ALIGN == 0 {
        Ok(offset)
    } else {
        Err(format!("page offset {offset}: not a multiple of {PAGE_ALIGN} below 4096"))
    }
}

/// A page at a chosen offset from a 4 KiB boundary, inside a buffer of two pages.
pub struct PlacedPage {
    buffer: Box<[Page; 2]>,
    start: usize,
}

impl PlacedPage {
    /// A zeroed page starting `offset` bytes past a 4 KiB boundary.
    ///
    /// # Panics
    ///
    /// If [`check_page_offset`] refuses `offset`.
    pub fn new(offset: usize) -> PlacedPage {
        if let Err(problem) = check_page_offset(offset) {
            panic!("{problem}");
        }
        let buffer = Box::new([Page::zeroed(), Page::zeroed()]);
        let address = buffer.as_ptr() as usize;
        // Both are multiples of PAGE_ALIGN, and so is the distance, below 4096: the page
        // ends at most 4096 - PAGE_ALIGN + 4096 bytes in, inside the two pages.
        let start = (offset + 4096 - address % 4096) % 4096;
        PlacedPage { buffer, start }
    }

    /// The page.
    pub fn page(&mut self) -> &mut Page {
        let bytes = self.buffer.as_mut_ptr().cast::<u8>();
        // SAFETY: `start` is a multiple of PAGE_ALIGN (see `new`) and `start + PAGE_SIZE <=
        // 2 * PAGE_SIZE`, so the pointer is aligned for a `Page` and its 4096 bytes lie
        // inside the buffer, which is initialised; `Page` is a `repr(C)` byte array, valid
        // for any bytes; the returned borrow holds `self` mutably, so nothing else reaches
        // the buffer meanwhile.
        unsafe { &mut *bytes.add(self.start).cast::<Page>() }
    }
}

/// How the repetitions of a measurement are ordered.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Order {
    /// Each page `reps` times in a row per codec (the default): the least disturbed reading,
    /// but the codec's branch predictor and caches have just seen the same page ("warm").
    #[default]
    BackToBack,
    /// `reps` sweeps over the whole corpus, each page once per codec per sweep: no codec
    /// meets the same page twice in a row, as in a page store, so branch predictors cannot
    /// learn a page ("cold"). Data-dependent branches cost what they cost in service.
    Sweep,
}

/// Measures every codec on every page of `corpus`, `reps` times each in the given
/// [`Order`], keeping minima. Pages decode into a boxed page wherever the allocator puts
/// it ([`run_corpus_placed`] chooses).
///
/// # Errors
///
/// [`VerifyError`] at the first page a codec fails to round-trip, decodes differently from
/// the original, or compresses differently on a repeat.
pub fn run_corpus(
    timer: &Timer,
    corpus: &Corpus,
    codecs: &mut [Box<dyn PageCodec>],
    reps: usize,
    order: Order,
    progress: &mut Progress,
) -> Result<CorpusRun, VerifyError> {
    run_corpus_placed(timer, corpus, codecs, reps, order, None, progress)
}

/// [`run_corpus`], with the page that every codec decodes into starting `page_offset`
/// bytes past a 4 KiB boundary when given (a multiple of [`PAGE_ALIGN`] below 4096; see
/// [`PlacedPage`]). Where the output page lies against a codec's own buffers, modulo 4 KiB,
/// can move a decoder's time (docs/perf/pagebench.md, "Code placement").
///
/// # Errors
///
/// As for [`run_corpus`].
///
/// # Panics
///
/// If [`check_page_offset`] refuses `page_offset`.
pub fn run_corpus_placed(
    timer: &Timer,
    corpus: &Corpus,
    codecs: &mut [Box<dyn PageCodec>],
    reps: usize,
    order: Order,
    page_offset: Option<usize>,
    progress: &mut Progress,
) -> Result<CorpusRun, VerifyError> {
    let reps = reps.max(1);
    let (sweeps, in_a_row) = match order {
        Order::BackToBack => (1, reps),
        Order::Sweep => (reps, 1),
    };
    let (n, pages) = (codecs.len(), corpus.pages.len());
    // Per codec and page: the first compression's length and stream hash (`None`: refused),
    // which every repeat must reproduce, and the minimum ticks.
    let mut first = vec![vec![None; pages]; n];
    let mut compress_ticks = vec![vec![u64::MAX; pages]; n];
    let mut decompress_ticks = vec![vec![u64::MAX; pages]; n];
    let mut streams: Vec<Vec<u8>> = codecs.iter().map(|c| vec![0u8; c.max_compressed_len()]).collect();
    let mut boxed;
    let mut placed;
    let back: &mut Page = match page_offset {
        None => {
            boxed = Box::new(Page::zeroed());
            &mut boxed
        }
        Some(offset) => {
            placed = PlacedPage::new(offset);
            placed.page()
        }
    };
    let mut core_rates = Vec::with_capacity(sweeps * pages);

    for sweep in 0..sweeps {
        for (index, page) in corpus.pages.iter().enumerate() {
            for turn in 0..n {
                let k = (index + turn) % n;
                let codec = &mut codecs[k];
                let name = codec.name();
                let fail = |what: String| VerifyError {
                    codec: name.to_string(),
                    corpus: corpus.name.clone(),
                    page: index,
                    what,
                };
                let stream = &mut streams[k];

                for rep in 0..in_a_row {
                    let (ticks, r) = timer.time(|| codec.compress(page, stream));
                    compress_ticks[k][index] = compress_ticks[k][index].min(ticks);
                    let got = match r {
                        Ok(len) if len > stream.len() => {
                            return Err(fail(format!(
                                "claimed {len} bytes in a {}-byte buffer",
                                stream.len()
                            )));
                        }
                        Ok(len) => Some((len, fnv1a(&stream[..len]))),
                        Err(_) => None,
                    };
                    if sweep == 0 && rep == 0 {
                        first[k][index] = got;
                    } else if got != first[k][index] {
                        return Err(fail(format!(
                            "compression is not deterministic ({:?} then {:?})",
                            first[k][index].map(|(len, _)| len),
                            got.map(|(len, _)| len)
                        )));
                    }
                }
                let Some((len, _)) = first[k][index] else { continue };

                for rep in 0..in_a_row {
                    back.as_bytes_mut().fill(if (sweep + rep) % 2 == 0 { 0xA5 } else { 0x5A });
                    let (ticks, r) = timer.time(|| codec.decompress(&stream[..len], back));
                    decompress_ticks[k][index] = decompress_ticks[k][index].min(ticks);
                    if let Err(e) = r {
                        return Err(fail(format!("decompress of its own {len}-byte stream failed: {e}")));
                    }
                    if *back != *page {
                        let at = back.as_bytes().iter().zip(page.as_bytes()).position(|(a, b)| a != b);
                        return Err(fail(format!(
                            "decompressed page differs from the original at byte {at:?}"
                        )));
                    }
                }
            }
            core_rates.extend(timing::core_rate(timer));
            progress.update(&corpus.name, sweep * pages + index + 1, sweeps * pages);
        }
    }
    let codecs = codecs
        .iter()
        .enumerate()
        .map(|(k, c)| CodecRun {
            codec: c.name().to_string(),
            corpus: corpus.name.clone(),
            sizes: first[k].iter().map(|r| r.map(|(len, _)| len as u32)).collect(),
            compress_ticks: compress_ticks[k].clone(),
            decompress_ticks: first[k]
                .iter()
                .zip(&decompress_ticks[k])
                .filter_map(|(r, &ticks)| r.map(|_| ticks))
                .collect(),
        })
        .collect();
    Ok(CorpusRun { codecs, core_rates })
}

/// FNV-1a, 64 bits: a cheap fingerprint of a stream for the determinism check.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xCBF2_9CE4_8422_2325, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01B3))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pagecodec::{CompressError, DecompressError, Raw};

    /// Raw, but flips one byte of every 5th page on the way back.
    struct Broken {
        calls: usize,
    }

    impl PageCodec for Broken {
        fn name(&self) -> &'static str {
            "broken"
        }
        fn max_compressed_len(&self) -> usize {
            PAGE_SIZE
        }
        fn compress(&mut self, page: &Page, out: &mut [u8]) -> Result<usize, CompressError> {
            Raw.compress(page, out)
        }
        fn decompress(&mut self, input: &[u8], page: &mut Page) -> Result<(), DecompressError> {
            Raw.decompress(input, page)?;
            self.calls += 1;
            if self.calls == 5 {
                page.as_bytes_mut()[100] ^= 1;
            }
            Ok(())
        }
    }

    /// Leaves the page untouched when it is all zero: stale data shows through.
    struct Stale;

    impl PageCodec for Stale {
        fn name(&self) -> &'static str {
            "stale"
        }
        fn max_compressed_len(&self) -> usize {
            1
        }
        fn compress(&mut self, page: &Page, out: &mut [u8]) -> Result<usize, CompressError> {
            let b = out.first_mut().ok_or(CompressError::Incompressible)?;
            *b = page.as_bytes()[0];
            Ok(1)
        }
        fn decompress(&mut self, input: &[u8], page: &mut Page) -> Result<(), DecompressError> {
            if input[0] != 0 {
                page.as_bytes_mut().fill(input[0]);
            }
            Ok(())
        }
    }

    fn corpus(pages: Vec<Page>) -> Corpus {
        Corpus { name: "t".into(), origin: "test".into(), pages }
    }

    #[test]
    fn good_codecs_give_per_page_figures() {
        let timer = Timer::new();
        let c = corpus((0..4).map(Page::filled).collect());
        let mut codecs: Vec<Box<dyn PageCodec>> = vec![Box::new(Raw), Box::new(Raw)];
        let measured =
            run_corpus(&timer, &c, &mut codecs, 3, Order::BackToBack, &mut Progress::new(false)).unwrap();
        // One core reading per page, when the clock is the TSC.
        let readings = if timing::core_rate(&timer).is_some() { 4 } else { 0 };
        assert_eq!(measured.core_rates.len(), readings);
        let runs = measured.codecs;
        assert_eq!(runs.len(), 2);
        for r in &runs {
            assert_eq!(r.sizes, vec![Some(4096); 4]);
            assert_eq!(r.compress_ticks.len(), 4);
            assert_eq!(r.decompress_ticks.len(), 4);
        }
    }

    #[test]
    fn a_placed_page_starts_where_asked_and_round_trips() {
        for offset in [0, PAGE_ALIGN, 2048, 4096 - PAGE_ALIGN] {
            let mut placed = PlacedPage::new(offset);
            let page = placed.page();
            assert_eq!(page as *const Page as usize % 4096, offset);
            page.as_bytes_mut().fill(0x3C);
            assert!(page.as_bytes().iter().all(|&b| b == 0x3C));
        }
        // Every codec decodes into the placed page, and every round trip is still checked.
        let timer = Timer::new();
        let c = corpus((0..3).map(Page::filled).collect());
        let mut codecs: Vec<Box<dyn PageCodec>> = vec![Box::new(Raw)];
        let measured = run_corpus_placed(
            &timer,
            &c,
            &mut codecs,
            2,
            Order::BackToBack,
            Some(192),
            &mut Progress::new(false),
        )
        .unwrap();
        assert_eq!(measured.codecs[0].sizes, vec![Some(4096); 3]);
    }

    #[test]
    #[should_panic(expected = "page offset 100")]
    fn a_page_offset_off_the_alignment_is_refused() {
        PlacedPage::new(100);
    }

    #[test]
    fn sweeps_give_the_same_per_page_figures_and_catch_nondeterminism() {
        let timer = Timer::new();
        let c = corpus((0..4).map(Page::filled).collect());
        let mut codecs: Vec<Box<dyn PageCodec>> = vec![Box::new(Raw), Box::new(Raw)];
        let measured =
            run_corpus(&timer, &c, &mut codecs, 3, Order::Sweep, &mut Progress::new(false)).unwrap();
        // One core reading per page per sweep.
        let readings = if timing::core_rate(&timer).is_some() { 12 } else { 0 };
        assert_eq!(measured.core_rates.len(), readings);
        for r in &measured.codecs {
            assert_eq!(r.sizes, vec![Some(4096); 4]);
            assert_eq!((r.compress_ticks.len(), r.decompress_ticks.len()), (4, 4));
        }
        // Raw with a call counter in byte 0: the second sweep must notice.
        struct Drifting(u8);
        impl PageCodec for Drifting {
            fn name(&self) -> &'static str {
                "drifting"
            }
            fn max_compressed_len(&self) -> usize {
                PAGE_SIZE
            }
            fn compress(&mut self, page: &Page, out: &mut [u8]) -> Result<usize, CompressError> {
                let n = Raw.compress(page, out)?;
                self.0 = self.0.wrapping_add(1);
                out[0] = self.0;
                Ok(n)
            }
            fn decompress(&mut self, input: &[u8], page: &mut Page) -> Result<(), DecompressError> {
                Raw.decompress(input, page)?;
                page.as_bytes_mut()[0] = 1;
                Ok(())
            }
        }
        let c = corpus(vec![Page::filled(1)]);
        let mut codecs: Vec<Box<dyn PageCodec>> = vec![Box::new(Drifting(0))];
        let err =
            run_corpus(&timer, &c, &mut codecs, 2, Order::Sweep, &mut Progress::new(false)).unwrap_err();
        assert!(err.what.contains("not deterministic"), "{err}");
    }

    #[test]
    fn a_corrupting_codec_is_a_loud_error() {
        let timer = Timer::new();
        let c = corpus((0..10).map(Page::filled).collect());
        let mut codecs: Vec<Box<dyn PageCodec>> = vec![Box::new(Raw), Box::new(Broken { calls: 0 })];
        let err =
            run_corpus(&timer, &c, &mut codecs, 1, Order::BackToBack, &mut Progress::new(false)).unwrap_err();
        assert_eq!((err.codec.as_str(), err.page), ("broken", 4));
        assert!(err.to_string().contains("ROUND TRIP FAILED"), "{err}");
        assert!(err.what.contains("byte Some(100)"), "{err}");
    }

    #[test]
    fn stale_output_is_caught_by_the_poisoned_page() {
        let timer = Timer::new();
        let c = corpus(vec![Page::filled(3), Page::zeroed()]);
        let mut codecs: Vec<Box<dyn PageCodec>> = vec![Box::new(Stale)];
        let err =
            run_corpus(&timer, &c, &mut codecs, 2, Order::Sweep, &mut Progress::new(false)).unwrap_err();
        assert_eq!(err.page, 1);
    }
}
