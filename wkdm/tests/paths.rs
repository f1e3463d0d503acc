//! Every available implementation path writes exactly the scalar reference's bytes and
//! decodes exactly as it does.
//!
//! Not built under Miri: only the scalar path exists there (no SIMD), so every comparison
//! would be scalar against itself; `codec.rs` and `properties.rs` cover the scalar path.
#![cfg(not(miri))]

mod common;

use common::words;
use proptest::prelude::*;

use pagecodec::testing::{Rng, check_codec, sample_pages};
use pagecodec::{Page, PageCodec};
use wkdm::{CompressOptions, DictionaryPreload, Isa, Wkdm, Wkdm16K, XNU_LIMIT_4K};

fn paths() -> Vec<Isa> {
    let paths: Vec<Isa> = Isa::available().collect();
    assert_eq!(paths[0], Isa::Scalar);
    paths
}

/// Compresses with `path` and with the scalar path under several budgets and options and
/// requires identical results; then decodes with both.
fn same_as_scalar_4k(path: Isa, page: &Page, what: &str) {
    let configs = [
        (CompressOptions::new(), 4368),
        (CompressOptions::new().early_abort(false), 4368),
        (CompressOptions::new().xnu_limit(Some(XNU_LIMIT_4K)), XNU_LIMIT_4K),
        (CompressOptions::new().early_abort(false), 1000),
        (CompressOptions::new(), 40),
    ];
    for (options, room) in configs {
        let mut scalar = Wkdm::new().with_isa(Isa::Scalar).unwrap().with_options(options);
        let mut fast = Wkdm::new().with_isa(path).unwrap().with_options(options);
        let (mut a, mut b) = (vec![0u8; room], vec![0u8; room]);
        let ra = scalar.compress_page(page.as_bytes(), &mut a);
        let rb = fast.compress_page(page.as_bytes(), &mut b);
        assert_eq!(ra, rb, "{path}: {what}: {options:?} room {room}");
        if let Ok(c) = ra {
            let n = c.stream_len();
            assert_eq!(a[..n], b[..n], "{path}: {what}: {options:?} room {room}");
        }
        let ra = scalar.compress(page, &mut a);
        let rb = fast.compress(page, &mut b);
        assert_eq!(ra, rb, "{path}: {what}: PageCodec {options:?} room {room}");
        if let Ok(n) = ra {
            assert_eq!(a[..n], b[..n], "{path}: {what}: PageCodec");
            let (mut pa, mut pb) = (Page::filled(1), Page::filled(2));
            scalar.decompress(&a[..n], &mut pa).unwrap();
            fast.decompress(&b[..n], &mut pb).unwrap();
            assert!(pa == *page && pb == *page, "{path}: {what}: round trip");
        }
    }
}

#[test]
fn every_path_passes_the_conformance_suite() {
    for path in paths() {
        check_codec(&mut Wkdm::new().with_isa(path).unwrap());
    }
}

#[test]
fn every_path_matches_scalar_on_every_page_class() {
    for path in paths() {
        for sample in sample_pages() {
            same_as_scalar_4k(path, &sample.page, &sample.label);
        }
    }
}

/// The SIMD compressors skip zero words in their dictionary replay and leave stale scratch
/// items there: a page whose zero words sit where the previous page had non-zero ones must
/// still compress exactly as a fresh scalar codec compresses it.
#[test]
fn stale_scratch_of_earlier_pages_never_shows() {
    let mut rng = Rng::new(11);
    let mut dense = Page::zeroed();
    for w in dense.words_mut() {
        // Few distinct upper bits, so the dictionary holds hits and partial hits.
        *w = ((rng.below(4) as u32) << 20 | rng.below(1 << 12) as u32 | 1).to_le();
    }
    let mut holes = dense.clone();
    for (i, w) in holes.words_mut().iter_mut().enumerate() {
        if i % 2 == 0 || i % 7 == 3 {
            *w = 0;
        }
    }
    let pages = [dense.clone(), holes.clone(), dense, holes];
    let mut out = vec![0u8; 4368];
    let mut expected = vec![0u8; 4368];
    for path in paths() {
        let mut reused = Wkdm::new().with_isa(path).unwrap();
        for (i, page) in pages.iter().enumerate() {
            let n = reused.compress(page, &mut out).unwrap();
            let fresh = Wkdm::new().with_isa(Isa::Scalar).unwrap().compress(page, &mut expected).unwrap();
            assert!(out[..n] == expected[..fresh], "{path}: page {i}");
        }
    }
}

/// The decoders switch to branching past zero words when more than a quarter (scalar) or a
/// sixth (AVX2) of a page's words are zero. Pages on both sides of both thresholds, with
/// zeros at random places and in a regular pattern, decoded one after the other by one codec
/// value per path (so the scratch holds what the previous page left), must come back exactly,
/// and compress as the scalar path does.
#[test]
fn every_path_decodes_pages_around_the_zero_word_thresholds() {
    let mut rng = Rng::new(5);
    let mut pages = vec![];
    for percent in [0u64, 10, 15, 16, 17, 18, 20, 24, 26, 30, 50, 75, 95] {
        for regular in [false, true] {
            let mut page = Page::zeroed();
            for (i, w) in page.words_mut().iter_mut().enumerate() {
                let zero =
                    if regular { (i as u64 * percent) % 100 < percent } else { rng.below(100) < percent };
                if !zero {
                    *w = ((rng.below(8) as u32) << 24 | rng.below(1 << 14) as u32 | 1).to_le();
                }
            }
            pages.push(page);
        }
    }
    let mut out = vec![0u8; 4368];
    for path in paths() {
        let mut codec = Wkdm::new().with_isa(path).unwrap();
        for page in &pages {
            let zeros = page.words().iter().filter(|&&w| w == 0).count();
            same_as_scalar_4k(path, page, &format!("{zeros} zero words"));
            let n = codec.compress(page, &mut out).unwrap();
            let mut back = Page::filled(0xA5);
            codec.decompress(&out[..n], &mut back).unwrap();
            assert!(back == *page, "{path}: {zeros} zero words, decoded after other pages");
        }
    }
}

/// Every prefix and bit flip of every page class's stream: each path gives the scalar
/// decoder's verdict and page, with both dictionary preloads, whatever the page held.
#[test]
fn every_path_decodes_damaged_streams_like_scalar() {
    let decode = |path: Isa, preload: DictionaryPreload, stream: &[u8], fill: u8| {
        let mut codec = Wkdm::new().with_isa(path).unwrap().with_preload(preload);
        let mut page = Page::filled(fill);
        let r = codec.decompress(stream, &mut page);
        (r, page)
    };
    for sample in sample_pages() {
        let mut stream = vec![0u8; 4368];
        // Incompressible classes have no stream to damage.
        let Ok(n) = Wkdm::new().compress(&sample.page, &mut stream) else { continue };
        let stream = &stream[..n];
        let mut cases: Vec<Vec<u8>> = (0..n).step_by(7).map(|len| stream[..len].to_vec()).collect();
        for bit in (0..8 * n).step_by(5) {
            let mut damaged = stream.to_vec();
            damaged[bit / 8] ^= 1 << (bit % 8);
            cases.push(damaged);
        }
        for case in &cases {
            for preload in [DictionaryPreload::Zero, DictionaryPreload::One] {
                let (ra, pa) = decode(Isa::Scalar, preload, case, 0);
                for path in paths() {
                    for fill in [0, 0xFF] {
                        let (rb, pb) = decode(path, preload, case, fill);
                        assert_eq!(ra, rb, "{path}: {}: verdict", sample.label);
                        if ra.is_ok() {
                            assert!(pa == pb, "{path}: {}: page", sample.label);
                        }
                    }
                }
            }
        }
    }
}

/// Hostile streams that the bit flips above rarely reach: well-formed streams whose misses,
/// indices and low bits are replaced by random values (they pass validation, so the SIMD
/// decoders' expand and dictionary stages run on arbitrary data), streams with random tags
/// or header offsets, and random bytes. Every path gives the scalar decoder's verdict and,
/// where it decodes, its page, with both dictionary preloads, on 4 KiB and 16 KiB pages.
#[test]
fn every_path_decodes_hostile_streams_like_scalar() {
    fn word(stream: &[u8], i: usize) -> usize {
        u32::from_le_bytes(stream[4 * i..4 * i + 4].try_into().unwrap()) as usize
    }
    fn set_word(stream: &mut [u8], i: usize, value: u32) {
        stream[4 * i..4 * i + 4].copy_from_slice(&value.to_le_bytes());
    }
    /// Mutations of a normal-form stream of a page of `words` words.
    fn hostile(stream: &[u8], words: usize, rng: &mut Rng) -> Vec<Vec<u8>> {
        let misses_start = 3 + words / 16;
        let (index_start, low_start, end) = (word(stream, 0), word(stream, 1), word(stream, 2));
        let mut cases = vec![];
        // Sparse-form streams (word 0 is the magic) have no areas to fill.
        if !(misses_start <= index_start
            && index_start <= low_start
            && low_start <= end
            && 4 * end == stream.len())
        {
            return cases;
        }
        for _ in 0..6 {
            // Random misses, indices and low bits, padding and bits 30-31 left valid: the
            // last word of the index and low-bits areas keeps its padding.
            let mut s = stream.to_vec();
            rng.fill(&mut s[4 * misses_start..4 * index_start]);
            if low_start > index_start {
                rng.fill(&mut s[4 * index_start..4 * (low_start - 1)]);
            }
            for i in low_start..end.saturating_sub(1) {
                set_word(&mut s, i, rng.next_u64() as u32 & 0x3FFF_FFFF);
            }
            cases.push(s);
            // Random tags (counts then mostly disagree with the areas).
            let mut s = stream.to_vec();
            let at = 12 + rng.below((words / 4) as u64) as usize;
            let len = 1 + rng.below(16) as usize;
            let end_at = (at + len).min(4 * misses_start);
            rng.fill(&mut s[at..end_at]);
            cases.push(s);
            // A header offset moved by a little or by anything.
            let mut s = stream.to_vec();
            let i = rng.below(3) as usize;
            let moved = if rng.below(2) == 0 {
                (word(&s, i) as i64 + rng.below(9) as i64 - 4).max(0) as u32
            } else {
                rng.next_u64() as u32
            };
            set_word(&mut s, i, moved);
            cases.push(s);
        }
        cases
    }
    let mut rng = Rng::new(23);
    let mut streams_4k = vec![];
    for sample in sample_pages() {
        let mut stream = vec![0u8; 4368];
        if let Ok(n) = Wkdm::new().compress(&sample.page, &mut stream) {
            if n > 12 {
                streams_4k.push(stream[..n].to_vec());
            }
        }
    }
    let mut cases_4k: Vec<Vec<u8>> = vec![];
    for stream in &streams_4k {
        cases_4k.extend(hostile(stream, 1024, &mut rng));
    }
    for _ in 0..64 {
        let mut s = vec![0u8; rng.below(4400) as usize];
        rng.fill(&mut s);
        cases_4k.push(s);
    }
    // Streams that decode, so that the decoders' word loops ran on random data.
    let mut decoded = 0;
    for case in &cases_4k {
        for preload in [DictionaryPreload::Zero, DictionaryPreload::One] {
            let mut expected = Page::filled(0x5A);
            let verdict = Wkdm::new()
                .with_isa(Isa::Scalar)
                .unwrap()
                .with_preload(preload)
                .decompress(case, &mut expected);
            decoded += usize::from(verdict.is_ok());
            for path in paths() {
                let mut page = Page::filled(0xC3);
                let r = Wkdm::new().with_isa(path).unwrap().with_preload(preload).decompress(case, &mut page);
                assert_eq!(verdict, r, "{path}: verdict");
                if verdict.is_ok() {
                    assert!(page == expected, "{path}: page");
                } else {
                    // Nothing is written before the whole stream is validated.
                    assert!(page == Page::filled(0xC3), "{path}: page written on {r:?}");
                }
            }
        }
    }
    assert!(decoded >= 2 * streams_4k.len(), "only {decoded} hostile streams decoded");
    // 16 KiB pages: a random mix of words from a small pool, then the same mutations.
    for seed in 0..4u64 {
        let mut rng = Rng::new(100 + seed);
        let pool: Vec<u32> = (0..12).map(|_| rng.next_u64() as u32).collect();
        let mut page = [0u8; 16384];
        for w in page.chunks_exact_mut(4) {
            let base = pool[rng.below(12) as usize];
            let value = match rng.below(4) {
                0 => 0,
                1 => base,
                2 => (base & !0x3FF) | rng.below(1024) as u32,
                _ => rng.next_u64() as u32,
            };
            w.copy_from_slice(&value.to_le_bytes());
        }
        let mut stream = vec![0u8; Wkdm16K::MAX_COMPRESSED_LEN];
        let n = Wkdm16K::new().compress_page(&page, &mut stream).unwrap().stream_len();
        for case in hostile(&stream[..n], 4096, &mut rng) {
            let mut expected = [0x5Au8; 16384];
            let verdict = Wkdm16K::new().with_isa(Isa::Scalar).unwrap().decompress_page(&case, &mut expected);
            for path in paths() {
                let mut out = [0xC3u8; 16384];
                let r = Wkdm16K::new().with_isa(path).unwrap().decompress_page(&case, &mut out);
                assert_eq!(verdict, r, "{path}: 16K verdict");
                assert!(
                    if verdict.is_ok() { out == expected } else { out == [0xC3u8; 16384] },
                    "{path}: 16K page"
                );
            }
        }
    }
}

/// On aarch64 the NEON path (compressor and decoder) is among the paths compared here, so
/// a qemu run of these tests checks it.
#[cfg(target_arch = "aarch64")]
#[test]
fn neon_is_compared_on_aarch64() {
    assert!(paths().contains(&Isa::Neon));
}

#[test]
fn every_path_matches_scalar_on_the_vectors() {
    for (case, page) in common::vectors::pages() {
        for path in paths() {
            same_as_scalar_4k(path, &page, &case);
        }
    }
}

#[test]
fn unavailable_paths_are_refused() {
    for path in Isa::ALL {
        let result = Wkdm::new().with_isa(path);
        assert_eq!(result.is_ok(), path.is_available(), "{path}");
        if let Err(e) = result {
            assert!(e.to_string().contains(path.name()));
        }
    }
    assert!(Isa::best().is_available());
    assert_eq!(Wkdm::new().isa(), Isa::best());
}

proptest! {
    #![proptest_config(ProptestConfig {
        ..ProptestConfig::with_cases(48)
    })]

    #[test]
    fn random_4k_pages_match(words in words(1024)) {
        let mut page = Page::zeroed();
        for (dst, w) in page.words_mut().iter_mut().zip(&words) {
            *dst = w.to_le();
        }
        for path in paths() {
            same_as_scalar_4k(path, &page, "proptest page");
        }
    }

    #[test]
    fn random_16k_pages_match(words in words(4096), early_abort in any::<bool>()) {
        let mut page = [0u8; 16384];
        for (dst, w) in page.chunks_exact_mut(4).zip(&words) {
            dst.copy_from_slice(&w.to_le_bytes());
        }
        let options = CompressOptions::new().early_abort(early_abort);
        let mut scalar = Wkdm16K::new().with_isa(Isa::Scalar).unwrap().with_options(options);
        let mut a = vec![0u8; Wkdm16K::MAX_COMPRESSED_LEN];
        let ra = scalar.compress_page(&page, &mut a);
        for path in paths() {
            let mut fast = Wkdm16K::new().with_isa(path).unwrap().with_options(options);
            let mut b = vec![0u8; Wkdm16K::MAX_COMPRESSED_LEN];
            let rb = fast.compress_page(&page, &mut b);
            prop_assert_eq!(ra, rb);
            if let Ok(c) = rb {
                let n = c.stream_len();
                prop_assert_eq!(&a[..n], &b[..n]);
                if n > 0 {
                    let mut back = [0u8; 16384];
                    fast.decompress_page(&b[..n], &mut back).unwrap();
                    prop_assert!(back == page);
                }
            }
        }
    }
}
