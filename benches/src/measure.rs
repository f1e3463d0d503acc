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
use crate::timing::Timer;

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

/// Measures every codec on every page of `corpus`, `reps` times each, keeping minima.
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
    progress: &mut Progress,
) -> Result<Vec<CodecRun>, VerifyError> {
    let reps = reps.max(1);
    let n = codecs.len();
    let mut runs: Vec<CodecRun> = codecs
        .iter()
        .map(|c| CodecRun {
            codec: c.name().to_string(),
            corpus: corpus.name.clone(),
            sizes: Vec::with_capacity(corpus.pages.len()),
            compress_ticks: Vec::with_capacity(corpus.pages.len()),
            decompress_ticks: Vec::with_capacity(corpus.pages.len()),
        })
        .collect();
    let mut streams: Vec<Vec<u8>> = codecs.iter().map(|c| vec![0u8; c.max_compressed_len()]).collect();
    let mut first_stream = Vec::new();
    let mut back = Box::new(Page::zeroed());

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

            let mut best = u64::MAX;
            let mut result = None;
            for rep in 0..reps {
                let (ticks, r) = timer.time(|| codec.compress(page, stream));
                best = best.min(ticks);
                let len = r.ok();
                if rep == 0 {
                    result = len;
                    if let Some(len) = len {
                        first_stream.clear();
                        first_stream.extend_from_slice(&stream[..len]);
                    }
                } else if len != result || len.is_some_and(|l| stream[..l] != first_stream[..]) {
                    return Err(fail(format!("compression is not deterministic ({result:?} then {len:?})")));
                }
            }
            runs[k].compress_ticks.push(best);
            runs[k].sizes.push(result.map(|l| l as u32));
            let Some(len) = result else { continue };
            if len > stream.len() {
                return Err(fail(format!("claimed {len} bytes in a {}-byte buffer", stream.len())));
            }

            let mut best = u64::MAX;
            for rep in 0..reps {
                back.as_bytes_mut().fill(if rep % 2 == 0 { 0xA5 } else { 0x5A });
                let (ticks, r) = timer.time(|| codec.decompress(&stream[..len], &mut back));
                best = best.min(ticks);
                if let Err(e) = r {
                    return Err(fail(format!("decompress of its own {len}-byte stream failed: {e}")));
                }
                if *back != *page {
                    let at = back.as_bytes().iter().zip(page.as_bytes()).position(|(a, b)| a != b);
                    return Err(fail(format!("decompressed page differs from the original at byte {at:?}")));
                }
            }
            runs[k].decompress_ticks.push(best);
        }
        progress.update(&corpus.name, index + 1, corpus.pages.len());
    }
    Ok(runs)
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
        let runs = run_corpus(&timer, &c, &mut codecs, 3, &mut Progress::new(false)).unwrap();
        assert_eq!(runs.len(), 2);
        for r in &runs {
            assert_eq!(r.sizes, vec![Some(4096); 4]);
            assert_eq!(r.compress_ticks.len(), 4);
            assert_eq!(r.decompress_ticks.len(), 4);
        }
    }

    #[test]
    fn a_corrupting_codec_is_a_loud_error() {
        let timer = Timer::new();
        let c = corpus((0..10).map(Page::filled).collect());
        let mut codecs: Vec<Box<dyn PageCodec>> = vec![Box::new(Raw), Box::new(Broken { calls: 0 })];
        let err = run_corpus(&timer, &c, &mut codecs, 1, &mut Progress::new(false)).unwrap_err();
        assert_eq!((err.codec.as_str(), err.page), ("broken", 4));
        assert!(err.to_string().contains("ROUND TRIP FAILED"), "{err}");
        assert!(err.what.contains("byte Some(100)"), "{err}");
    }

    #[test]
    fn stale_output_is_caught_by_the_poisoned_page() {
        let timer = Timer::new();
        let c = corpus(vec![Page::filled(3), Page::zeroed()]);
        let mut codecs: Vec<Box<dyn PageCodec>> = vec![Box::new(Stale)];
        let err = run_corpus(&timer, &c, &mut codecs, 2, &mut Progress::new(false)).unwrap_err();
        assert_eq!(err.page, 1);
    }
}
