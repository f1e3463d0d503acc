//! Property tests (4 KiB and 16 KiB round trips, arbitrary input to the decoder) and
//! every-prefix / every-bit-flip damage on real streams.

mod common;

use common::words;
use proptest::prelude::*;

use pagecodec::testing::{PageClass, generate};
use pagecodec::{Page, PageCodec};
use wkdm::{CompressOptions, Compressed, Wkdm, Wkdm16K, WkdmCodec};

fn cases() -> u32 {
    if cfg!(miri) { 4 } else { 96 }
}

/// Every strict prefix and every single-bit flip of `stream` must decode to an error or
/// a page, the same whatever the page held before, never panic; normal-form prefixes are
/// always errors.
fn damage_4k(stream: &[u8]) {
    let mut codec = Wkdm::default();
    let decode = |codec: &mut Wkdm, s: &[u8]| {
        let mut a = Page::filled(0);
        let mut b = Page::filled(0xFF);
        let ra = codec.decompress(s, &mut a);
        let rb = codec.decompress(s, &mut b);
        assert_eq!(ra, rb);
        if ra.is_ok() {
            assert_eq!(a, b, "stale data visible");
        }
        ra
    };
    let sparse = stream[..4] == [0x21, 0x43, 0, 0];
    let step = if cfg!(miri) { 1 + stream.len() / 8 } else { 1 };
    for len in (0..stream.len()).step_by(step) {
        let r = decode(&mut codec, &stream[..len]);
        if !sparse || len < 4 {
            assert!(r.is_err(), "prefix of {len} bytes accepted");
        }
    }
    if sparse {
        let mut damaged = stream.to_vec();
        for bit in (0..stream.len() * 8).step_by(step) {
            damaged[bit / 8] ^= 1 << (bit % 8);
            let _ = decode(&mut codec, &damaged);
            damaged[bit / 8] ^= 1 << (bit % 8);
        }
    } else {
        let mut original = [0u8; 4096];
        codec.decompress_page(stream, &mut original).expect("the undamaged stream decodes");
        check_flips::<1024, 4096>(stream, &original, step);
    }
}

/// Flips every `step`-th bit of a normal-form stream of `WORDS` words, one at a time, and
/// checks what the format defines: the verdict and page never depend on the page's old
/// contents; a damaged header (offsets no longer matching the tags or the length) and
/// damaged padding or spare bits of the low-bits area are errors; a damaged MISS word or
/// PARTIAL low-bits value (any value is legal there) decodes to a page that differs from
/// the original. Tags and indices may give an error or another page.
fn check_flips<const WORDS: usize, const N: usize>(stream: &[u8], original: &[u8; N], step: usize) {
    let mut codec = WkdmCodec::<WORDS>::new();
    let word = |i: usize| u32::from_le_bytes(stream[4 * i..4 * i + 4].try_into().unwrap()) as usize;
    let tag_words = WORDS / 16;
    let (misses_from, low_from, end) = (3 + tag_words, word(1), word(2));
    assert_eq!(4 * end, stream.len(), "a normal-form stream");
    let partials: usize = stream[12..4 * misses_from]
        .iter()
        .map(|byte| (0..4).filter(|k| (byte >> (2 * k)) & 3 == 1).count())
        .sum();
    let misses_to = word(0);
    let (mut a, mut b) = (vec![0u8; N], vec![0u8; N]);
    let mut damaged = stream.to_vec();
    let mut checked = [0usize; 3];
    for bit in (0..stream.len() * 8).step_by(step) {
        damaged[bit / 8] ^= 1 << (bit % 8);
        a.fill(0);
        b.fill(0xFF);
        let ra = codec.decompress_page(&damaged, <&mut [u8; N]>::try_from(&mut a[..]).unwrap());
        let rb = codec.decompress_page(&damaged, <&mut [u8; N]>::try_from(&mut b[..]).unwrap());
        assert_eq!(ra, rb, "bit {bit}: the verdict depends on the page's old contents");
        if ra.is_ok() {
            assert!(a == b, "bit {bit}: stale data visible");
        }
        let stream_word = bit / 32;
        if stream_word < 3 {
            assert!(ra.is_err(), "bit {bit}: a damaged header was accepted");
            checked[0] += 1;
        } else if (misses_from..misses_to).contains(&stream_word) {
            assert!(
                ra.is_ok() && a[..] != original[..],
                "bit {bit}: a damaged MISS word must give another page"
            );
            checked[1] += 1;
        } else if (low_from..end).contains(&stream_word) {
            let in_word = bit % 32;
            let value = (stream_word - low_from) * 3 + in_word / 10;
            if in_word >= 30 || value >= partials {
                assert!(ra.is_err(), "bit {bit}: damaged low-bits padding was accepted");
            } else {
                assert!(
                    ra.is_ok() && a[..] != original[..],
                    "bit {bit}: a damaged low-bits value must give another page"
                );
            }
            checked[2] += 1;
        }
        damaged[bit / 8] ^= 1 << (bit % 8);
    }
    assert!(checked[0] > 0, "no header bit was flipped");
}

#[test]
#[cfg_attr(miri, ignore)]
fn damaged_vector_streams() {
    let mut checked = 0;
    for (case, _) in common::vectors::pages() {
        if let Some(stream) = common::vectors::xnu_stream(&case).filter(|s| !s.is_empty()) {
            damage_4k(&stream);
            checked += 1;
        }
    }
    assert_eq!(checked, 13, "streams among the vectors");
}

#[test]
fn damaged_streams_of_every_class() {
    let mut codec = Wkdm::default();
    let mut out = vec![0u8; Wkdm::MAX_COMPRESSED_LEN];
    let seeds = if cfg!(miri) { 0..1 } else { 0..2 };
    let classes = if cfg!(miri) { &PageClass::ALL[6..8] } else { &PageClass::ALL[..] };
    for &class in classes {
        for seed in seeds.clone() {
            if let Ok(n) = codec.compress(&generate(class, seed), &mut out) {
                damage_4k(&out[..n]);
            }
        }
    }
}

#[test]
fn damaged_16k_stream() {
    let mut page = [0u8; 16384];
    for (i, chunk) in page.chunks_exact_mut(4).enumerate() {
        let w = [0x7f00_2c00u32, 0, 0x7f00_1000 + i as u32 % 1024, 42 + (i as u32 >> 8)][i % 4];
        chunk.copy_from_slice(&w.to_le_bytes());
    }
    let mut codec = Wkdm16K::new();
    let mut out = vec![0u8; Wkdm16K::MAX_COMPRESSED_LEN];
    let Ok(Compressed::Stream(n)) = codec.compress_page(&page, &mut out) else { panic!("stream") };
    let stream = &out[..n];
    let mut back = [0u8; 16384];
    let step = if cfg!(miri) { 499 } else { 7 };
    for len in (0..n).step_by(step) {
        assert!(codec.decompress_page(&stream[..len], &mut back).is_err(), "prefix {len}");
    }
    check_flips::<4096, 16384>(stream, &page, step);
    codec.decompress_page(stream, &mut back).unwrap();
    assert_eq!(back, page);
}

proptest! {
    #![proptest_config(ProptestConfig {
        // Miri isolates the file system: no failure persistence files there.
        failure_persistence: if cfg!(miri) { None } else { ProptestConfig::default().failure_persistence },
        ..ProptestConfig::with_cases(cases())
    })]

    #[test]
    fn round_trip_4k(words in words(1024), early_abort in any::<bool>()) {
        let mut page = Page::zeroed();
        for (dst, w) in page.words_mut().iter_mut().zip(&words) {
            *dst = w.to_le();
        }
        let mut codec = Wkdm::new().with_options(CompressOptions::new().early_abort(early_abort));
        let mut out = vec![0u8; Wkdm::MAX_COMPRESSED_LEN];
        match codec.compress(&page, &mut out) {
            Ok(n) => {
                let mut back = Page::filled(0xA5);
                codec.decompress(&out[..n], &mut back).unwrap();
                prop_assert_eq!(back, page.clone());
                // The own API gives the same stream unless the page is uniform.
                let mut out2 = vec![0u8; Wkdm::MAX_COMPRESSED_LEN];
                match codec.compress_page(page.as_bytes(), &mut out2).unwrap() {
                    Compressed::Stream(m) => prop_assert_eq!(&out2[..m], &out[..n]),
                    same => prop_assert!(page.words().iter().all(|&w| Some(u32::from_le(w)) == same.same_value())),
                }
            }
            Err(_) => prop_assert!(early_abort, "refused with the worst-case budget and no early abort"),
        }
    }

    #[test]
    fn round_trip_16k(words in words(4096)) {
        let mut page = [0u8; 16384];
        for (dst, w) in page.chunks_exact_mut(4).zip(&words) {
            dst.copy_from_slice(&w.to_le_bytes());
        }
        let mut codec = Wkdm16K::new().with_options(CompressOptions::new().early_abort(false));
        let mut out = vec![0u8; Wkdm16K::MAX_COMPRESSED_LEN];
        match codec.compress_page(&page, &mut out).unwrap() {
            Compressed::Stream(n) => {
                let mut back = [0x5Au8; 16384];
                codec.decompress_page(&out[..n], &mut back).unwrap();
                prop_assert!(back == page);
            }
            same => {
                let v = same.same_value().unwrap().to_le_bytes();
                prop_assert!(page.chunks_exact(4).all(|c| c == v));
            }
        }
    }

    #[test]
    fn budgets_are_respected(words in words(1024), budget in 0usize..4400) {
        let mut page = Page::zeroed();
        for (dst, w) in page.words_mut().iter_mut().zip(&words) {
            *dst = w.to_le();
        }
        let mut codec = Wkdm::new().with_options(CompressOptions::new().early_abort(false));
        let mut full = vec![0u8; Wkdm::MAX_COMPRESSED_LEN];
        let n_full = codec.compress(&page, &mut full).unwrap();
        let mut out = vec![0u8; budget];
        match codec.compress(&page, &mut out) {
            // Same form whenever it fits: the bytes are those of the full-budget stream...
            Ok(n) => prop_assert_eq!(&out[..n], &full[..n_full]),
            // ...and a refusal means that stream does not fit (or the sparse form was
            // chosen and does not fit).
            Err(_) => prop_assert!(n_full > budget),
        }
    }

    #[test]
    fn arbitrary_input_never_panics(mut input in prop::collection::vec(any::<u8>(), 0..1200), header in any::<bool>()) {
        if header && input.len() >= 12 {
            // A plausible header: offsets near the real ones.
            let len = (input.len() / 4) as u32;
            for (k, v) in [67 + len % 7, 67 + len % 13, len].into_iter().enumerate() {
                input[4 * k..4 * k + 4].copy_from_slice(&v.to_le_bytes());
            }
        }
        let mut a = Page::filled(0);
        let mut b = Page::filled(1);
        let ra = Wkdm::default().decompress(&input, &mut a);
        let rb = Wkdm::default().decompress(&input, &mut b);
        prop_assert_eq!(ra, rb);
        if ra.is_ok() {
            prop_assert_eq!(a, b);
        }
    }
}
