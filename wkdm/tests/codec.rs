//! The conformance suite, hand-worked vectors, every error path and the budget rules.

use pagecodec::testing::check_codec;
use pagecodec::{CompressError, DecompressError, Page, PageCodec};
use wkdm::{CompressOptions, Compressed, DictionaryPreload, Wkdm, Wkdm16K};

const A: u32 = 0x1234_5678; // slot HASH[0x15] / 4 = 15
const B: u32 = 0x1234_567F; // same slot, same upper 22 bits as A

fn page_of(words: &[u32]) -> Page {
    let mut page = Page::zeroed();
    for (dst, &w) in page.words_mut().iter_mut().zip(words) {
        *dst = w.to_le();
    }
    page
}

fn le(words: &[u32]) -> Vec<u8> {
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}

fn decode(stream: &[u8]) -> Result<Page, DecompressError> {
    let mut page = Page::filled(0x5A);
    Wkdm::default().decompress(stream, &mut page).map(|()| page)
}

#[test]
fn conformance_suite() {
    check_codec(&mut Wkdm::default());
}

#[test]
#[cfg_attr(miri, ignore = "same code paths as conformance_suite; too slow twice under Miri")]
fn conformance_suite_without_early_abort() {
    check_codec(&mut Wkdm::new().with_options(CompressOptions::new().early_abort(false)));
}

/// Words 0, A, A, B, 5, then B up to the end of the page.
///
/// w0 = 0 ZERO; w1 = A MISS (slot 15 holds 0); w2 = A EXACT index 15; w3 = B PARTIAL index
/// 15, low 0x27F, slot 15 := B; w4 = 5 PARTIAL against slot 0 (= 0), low 5; w5.. = B EXACT
/// index 15. m = 1, p = 2, h = 2 + 1020 = 1022.
fn hand_page() -> Page {
    let mut words = vec![B; 1024];
    words[..5].copy_from_slice(&[0, A, A, B, 5]);
    page_of(&words)
}

fn hand_stream() -> Vec<u8> {
    // Header: misses start at word 67; 1 miss -> indices at 68; ceil(1022 / 8) = 128 index
    // words -> low bits at 196; ceil(2 / 3) = 1 low word -> 197 words = 788 bytes.
    let mut s = le(&[68, 196, 197]);
    // Tags of words 0..16 = [0, 2, 3, 1, 1, 3 x 11]; byte j holds tags j, j+4, j+8, j+12
    // at shifts 0, 2, 4, 6.
    s.extend([
        0b11_11_01_00, // tags 0, 4, 8, 12 = 0, 1, 3, 3
        0b11_11_11_10, // tags 1, 5, 9, 13 = 2, 3, 3, 3
        0b11_11_11_11, // tags 2, 6, 10, 14 = 3, 3, 3, 3
        0b11_11_11_01, // tags 3, 7, 11, 15 = 1, 3, 3, 3
    ]);
    s.extend([0xFF; 252]); // every later word EXACT
    s.extend(A.to_le_bytes()); // the one miss
    // Indices [15, 15, 0, 15, ...]: index k of 8 in byte k % 4, nibble k / 4.
    s.extend([0xFF, 0xFF, 0xF0, 0xFF]);
    s.extend([0xFF; 4 * 126]);
    s.extend([0xFF, 0xFF, 0x0F, 0x0F]); // indices 1016..1022, two zero nibbles of padding
    s.extend((0x27Fu32 | (5 << 10)).to_le_bytes()); // low bits 0x27F and 5
    assert_eq!(s.len(), 788);
    s
}

#[test]
fn hand_worked_normal_form() {
    let mut out = [0u8; 4368];
    let n = Wkdm::default().compress(&hand_page(), &mut out).unwrap();
    assert_eq!(&out[..n], &hand_stream()[..]);
    assert_eq!(decode(&hand_stream()), Ok(hand_page()));
}

#[test]
fn hand_worked_sparse_form() {
    // Same first words, zeros after: XNU's estimate 2 + 4 + 1 + 268 = 275 >= 4 + 6 * 4 = 28.
    let page = page_of(&[0, A, A, B, 5]);
    let mut expected = vec![0x21, 0x43, 0, 0];
    for (value, offset) in [(A, 4u16), (A, 8), (B, 12), (5, 16)] {
        expected.extend(value.to_le_bytes());
        expected.extend(offset.to_le_bytes());
    }
    let mut out = [0u8; 64];
    let n = Wkdm::default().compress(&page, &mut out).unwrap();
    assert_eq!(&out[..n], &expected[..]);
    assert_eq!(decode(&expected), Ok(page.clone()));
    // One byte short of the sparse stream: refused, nothing else fits.
    assert_eq!(Wkdm::default().compress(&page, &mut out[..27]), Err(CompressError::Incompressible));
}

#[test]
fn uniform_pages_are_reported_by_the_own_api_and_encoded_by_page_codec() {
    let mut codec = Wkdm::default();
    let mut out = [0u8; 4368];
    assert_eq!(codec.compress_page(Page::zeroed().as_bytes(), &mut out), Ok(Compressed::Zero));
    for value in [A, 1, 1023, 1024, u32::MAX] {
        let page = page_of(&[value; 1024]);
        assert_eq!(codec.compress_page(page.as_bytes(), &mut out), Ok(Compressed::SingleValue(value)));
        // PageCodec: the normal form, header + tags + 1 miss or 1 partial + 128 index words.
        let n = codec.compress(&page, &mut out).unwrap();
        assert_eq!(n, 784, "value {value:#x}");
        assert_eq!(decode(&out[..n]), Ok(page));
    }
    assert_eq!(codec.compress(&Page::zeroed(), &mut out), Ok(4));
    assert_eq!(&out[..4], &[0x21, 0x43, 0, 0]);
    assert_eq!(decode(&out[..4]), Ok(Page::zeroed()));
    let mut large = Wkdm16K::new();
    let mut out = vec![0u8; 16384];
    assert_eq!(large.compress_page(&[0u8; 16384], &mut out), Ok(Compressed::Zero));
    assert_eq!(large.compress_page(&[0xAB; 16384], &mut out), Ok(Compressed::SingleValue(0xABAB_ABAB)));
    assert_eq!(Compressed::SingleValue(7).stream_len(), 0);
    assert_eq!(Compressed::Zero.same_value(), Some(0));
    assert_eq!(Compressed::Stream(9).same_value(), None);
    // Two values: not single-value.
    let mut words = [A; 1024];
    words[1023] = B;
    assert!(matches!(
        codec.compress_page(page_of(&words).as_bytes(), &mut out[..4096]),
        Ok(Compressed::Stream(_))
    ));
}

#[test]
fn xnu_limit_is_stricter_than_fitting() {
    let page = hand_page(); // 788 bytes, ending with a low-bits word
    let mut out = [0u8; 4368];
    let mut fit = Wkdm::default();
    assert_eq!(fit.compress(&page, &mut out[..788]), Ok(788));
    assert_eq!(fit.compress(&page, &mut out[..787]), Err(CompressError::Incompressible));
    let xnu = |limit| Wkdm::new().with_options(CompressOptions::new().xnu_limit(Some(limit)));
    // XNU: each low-bits word must leave `left` > 0, so 788 needs a limit of 789.
    assert_eq!(xnu(788).compress(&page, &mut out), Err(CompressError::Incompressible));
    assert_eq!(xnu(789).compress(&page, &mut out), Ok(788));
    // The limit never lets a stream past out.len().
    assert_eq!(xnu(4092).compress(&page, &mut out[..700]), Err(CompressError::Incompressible));
    // Without low bits, the index area may end exactly at the limit: all-A page after a
    // miss is 784 bytes with 0 partials.
    let uniform = page_of(&[A; 1024]);
    assert_eq!(xnu(784).compress(&uniform, &mut out), Ok(784));
    assert_eq!(xnu(783).compress(&uniform, &mut out), Err(CompressError::Incompressible));
    // Each miss must leave `left` > 0 even when the sparse form is chosen in the end: one
    // miss needs a limit above 268 + 4, although the stream is 10 bytes.
    let one = page_of(&[A]);
    assert_eq!(xnu(273).compress(&one, &mut out), Ok(10));
    assert_eq!(xnu(272).compress(&one, &mut out), Err(CompressError::Incompressible));
    assert_eq!(fit.compress(&one, &mut out[..10]), Ok(10));
}

#[test]
fn early_abort_is_on_by_default_and_switchable() {
    // 104 distinct misses followed by zeros would compress, but XNU's estimate at word 104
    // (4 * 104 + 26 > 426) gives up.
    let words: Vec<u32> = (0..104u32).map(|i| 0x0100_0000 + (i << 10) * 7919).collect();
    let page = page_of(&words);
    let mut out = [0u8; 4368];
    assert!(Wkdm::default().options().is_early_abort());
    assert_eq!(Wkdm::default().compress(&page, &mut out), Err(CompressError::Incompressible));
    let mut thorough = Wkdm::new().with_options(CompressOptions::new().early_abort(false));
    let n = thorough.compress(&page, &mut out).unwrap();
    assert_eq!(decode(&out[..n]), Ok(page.clone()));
    // Estimate exactly 426 still passes: 100 misses (400) + 26.
    let page = page_of(&words[..100]);
    assert!(Wkdm::default().compress(&page, &mut out).is_ok());
}

#[test]
fn preload_one_reads_old_streams() {
    // macOS 10.9 stream of [1, 0, 0, ...]: the word 1 is an EXACT hit on slot 0 (which
    // held 1). m = 0, h = 1, p = 0: header [67, 68, 68], tag 3, index word 0.
    let mut old = le(&[67, 68, 68]);
    old.extend([3, 0, 0, 0]);
    old.extend([0; 252]);
    old.extend([0; 4]);
    let mut page = Page::filled(9);
    let mut legacy = Wkdm::new().with_preload(DictionaryPreload::One);
    legacy.decompress(&old, &mut page).unwrap();
    assert_eq!(page, page_of(&[1]));
    // Preload 0 reads the same bytes as 0 (slot 0 still holds its initial value).
    assert_eq!(decode(&old), Ok(Page::zeroed()));
    // A current stream of the same page (a PARTIAL word) decodes the same under both.
    let page_one = page_of(&[1; 1024]);
    let mut out = [0u8; 4368];
    let n = Wkdm::default().compress(&page_one, &mut out).unwrap();
    legacy.decompress(&out[..n], &mut page).unwrap();
    assert_eq!(page, page_one);
}

fn corrupt(stream: &[u8]) -> DecompressError {
    decode(stream).expect_err("stream must be rejected")
}

#[test]
fn every_decode_error_path() {
    let good = hand_stream();
    assert_eq!(corrupt(&[]), DecompressError::Truncated);
    assert_eq!(corrupt(&good[..3]), DecompressError::Truncated);
    assert_eq!(corrupt(&good[..11]), DecompressError::Truncated);
    assert_eq!(corrupt(&good[..787]), DecompressError::Truncated);
    let mut longer = good.clone();
    longer.extend([0; 4]);
    assert_eq!(corrupt(&longer), DecompressError::TrailingInput);
    longer.truncate(789);
    assert_eq!(corrupt(&longer), DecompressError::TrailingInput);
    let with_header = |h: [u32; 3]| {
        let mut s = good.clone();
        s[..12].copy_from_slice(&le(&h));
        s
    };
    let is_corrupt = |s: &[u8], what: &str| match corrupt(s) {
        DecompressError::Corrupt { reason } => assert!(reason.contains(what), "{reason} vs {what}"),
        other => panic!("expected Corrupt({what}), got {other:?}"),
    };
    is_corrupt(&with_header([66, 196, 197]), "order");
    is_corrupt(&with_header([68, 67, 197]), "order");
    is_corrupt(&with_header([68, 198, 197]), "order");
    assert_eq!(corrupt(&with_header([68, 196, u32::MAX])), DecompressError::Truncated);
    is_corrupt(&with_header([69, 196, 197]), "miss count");
    is_corrupt(&with_header([68, 195, 197]), "index area");
    // Tag 0 of group 0 turned from ZERO to MISS: counts no longer match.
    let mut s = good.clone();
    s[12] |= 0b10;
    is_corrupt(&s, "miss count");
    // Index padding nibble set.
    let mut s = good.clone();
    s[4 * 195 + 2] = 0xFF;
    is_corrupt(&s, "index padding");
    // Low-bits word with bit 30, and with a padding value.
    let mut s = good.clone();
    s[4 * 196 + 3] = 0x40;
    is_corrupt(&s, "bits 30-31");
    let mut s = good.clone();
    s[4 * 196 + 2] = 0x10; // third value (bits 20..30) is padding
    is_corrupt(&s, "low-bits padding");
    // A low-bits area one word too long (header says so and the stream has it).
    let mut s = with_header([68, 196, 198]);
    s.extend([0; 4]);
    is_corrupt(&s, "low-bits area");
    // Sparse form.
    let sparse = |entries: &[(u32, u16)]| {
        let mut s = vec![0x21, 0x43, 0, 0];
        for &(v, o) in entries {
            s.extend(v.to_le_bytes());
            s.extend(o.to_le_bytes());
        }
        s
    };
    assert_eq!(decode(&sparse(&[])), Ok(Page::zeroed()));
    assert_eq!(
        decode(&sparse(&[(7, 4092)])),
        Ok({
            let mut p = Page::zeroed();
            p.words_mut()[1023] = 7u32.to_le();
            p
        })
    );
    assert_eq!(corrupt(&sparse(&[(7, 8)])[..9]), DecompressError::Truncated);
    is_corrupt(&sparse(&[(7, 6)]), "aligned");
    is_corrupt(&sparse(&[(7, 4096)]), "outside");
    is_corrupt(&sparse(&[(7, 8), (8, 8)]), "increasing");
    is_corrupt(&sparse(&[(7, 8), (8, 4)]), "increasing");
}

#[test]
fn sixteen_kib_layout() {
    // 16 KiB: tags area 1024 bytes, misses at byte 1036.
    let mut page = [0u8; 16384];
    for (i, chunk) in page.chunks_exact_mut(4).enumerate() {
        let w = if i % 3 == 0 { A } else { B + (i as u32 % 4) };
        chunk.copy_from_slice(&w.to_le_bytes());
    }
    let mut codec = Wkdm16K::new();
    let mut out = vec![0u8; Wkdm16K::MAX_COMPRESSED_LEN];
    let Compressed::Stream(n) = codec.compress_page(&page, &mut out).unwrap() else { panic!("stream") };
    let header: Vec<u32> = out[..12].chunks(4).map(|c| u32::from_le_bytes(c.try_into().unwrap())).collect();
    assert_eq!(4 * header[2] as usize, n);
    assert!(header[0] >= 259, "misses start after 3 + 256 words");
    assert_eq!(out[1036..1040], A.to_le_bytes(), "first miss at byte 1036");
    let mut back = [0u8; 16384];
    codec.decompress_page(&out[..n], &mut back).unwrap();
    assert_eq!(back, page);
    assert_eq!(Wkdm16K::MAX_COMPRESSED_LEN, 1036 + 4 * 4095 + 4 + 4);
}

#[test]
fn huge_xnu_limits_are_no_tighter_than_none() {
    // Limits past any stream length must behave like no limit: no overflow in the
    // arithmetic of XNU's rules, and no limit turned negative by a cast.
    use pagecodec::testing::{PageClass, generate};
    use wkdm::Isa;
    for isa in Isa::available() {
        for class in PageClass::ALL {
            let page = generate(class, 3);
            let mut plain = Wkdm::new().with_isa(isa).unwrap();
            let mut want = vec![0u8; Wkdm::MAX_COMPRESSED_LEN];
            let expected = plain.compress_page(page.as_bytes(), &mut want);
            for limit in [1usize << 63, usize::MAX, usize::MAX - 1, 1 << 32] {
                let options = CompressOptions::new().xnu_limit(Some(limit));
                let mut codec = Wkdm::new().with_isa(isa).unwrap().with_options(options);
                let mut out = vec![0u8; Wkdm::MAX_COMPRESSED_LEN];
                let got = codec.compress_page(page.as_bytes(), &mut out);
                assert_eq!(got, expected, "{isa} {class:?} limit {limit}");
                if let Ok(Compressed::Stream(n)) = got {
                    assert_eq!(out[..n], want[..n], "{isa} {class:?} limit {limit}");
                }
            }
        }
    }
}

#[test]
fn options_names_and_sizes_are_what_they_say() {
    let xnu = CompressOptions::new().xnu_limit(Some(wkdm::XNU_LIMIT_4K));
    assert!(xnu.is_early_abort());
    assert_eq!(xnu.limit(), Some(4092));
    let thorough = CompressOptions::new().early_abort(false);
    assert!(!thorough.is_early_abort());
    assert_eq!(thorough.limit(), None);
    assert_eq!(CompressOptions::default(), CompressOptions::new());
    assert_eq!((Wkdm::PAGE_BYTES, Wkdm16K::PAGE_BYTES), (4096, 16384));
    let codec = Wkdm::new().with_options(thorough).with_preload(DictionaryPreload::One);
    assert_eq!(codec.options(), thorough);
    assert_eq!((codec.name(), codec.max_compressed_len()), ("wkdm", Wkdm::MAX_COMPRESSED_LEN));
    assert_eq!(Wkdm::MAX_COMPRESSED_LEN, 4368);
    // The fastest available path, detected once and then cached.
    let best = wkdm::Isa::best();
    assert_eq!((wkdm::Isa::best(), Some(best)), (best, wkdm::Isa::available().last()));
    assert_eq!(Wkdm::new().isa(), best);
    let isa = wkdm::Isa::ALL;
    assert_eq!(isa.map(|isa| isa.name()), ["scalar", "sse4.1", "avx2", "avx512", "neon"]);
    assert_eq!(isa.map(|isa| isa.to_string()), isa.map(|isa| isa.name().to_string()));
    let debug = format!("{codec:?}");
    for field in ["page_bytes: 4096", "early_abort: false", "preload: One", "isa: "] {
        assert!(debug.contains(field), "{debug}");
    }
}

/// A stream fits a budget of exactly its length, in both forms and on every path; one byte
/// less refuses the page.
#[test]
fn streams_fit_a_budget_of_exactly_their_length() {
    use pagecodec::testing::{PageClass, generate};
    use wkdm::Isa;
    // Three misses and three exact hits: the sparse form, 4 + 6 * 6 bytes.
    let sparse = page_of(&[A, A, 0x0bad_f00d, 0x0bad_f00d, 0x7777_0001, 0x7777_0001]);
    // One miss and 44 exact hits: still sparse (4 + 6 * 45 bytes), but longer than the
    // normal form's floor (268 + 4), so only the form decision can refuse it one byte short.
    let long_sparse = page_of(&[A; 45]);
    // One miss and 60 exact hits: XNU's estimate of the normal form (268 + 4 + 60 / 2)
    // is below the sparse form's 4 + 6 * 61, so the normal form, 268 + 4 + 4 * 8 bytes.
    let short_normal = page_of(&[A; 61]);
    // 1024 misses, no hit: the normal form at its floor, header + tags + misses.
    let misses_only = generate(PageClass::Random, 1);
    let pages = [
        (&sparse, Some(40)),
        (&long_sparse, Some(274)),
        (&short_normal, Some(304)),
        (&misses_only, Some(12 + 256 + 4 * 1024)),
        (&generate(PageClass::Text, 1), None),
        (&generate(PageClass::Pointers, 1), None),
        (&generate(PageClass::Mixed, 3), None),
    ];
    for isa in Isa::available() {
        let mut codec =
            Wkdm::new().with_isa(isa).unwrap().with_options(CompressOptions::new().early_abort(false));
        for (i, &(page, len)) in pages.iter().enumerate() {
            let mut out = vec![0u8; Wkdm::MAX_COMPRESSED_LEN];
            let n = codec.compress(page, &mut out).unwrap();
            assert!(len.is_none_or(|len| len == n), "{isa}: page {i}: {n} bytes");
            assert_eq!(codec.compress(page, &mut out[..n]), Ok(n), "{isa}: page {i}");
            assert_eq!(
                codec.compress(page, &mut out[..n - 1]),
                Err(CompressError::Incompressible),
                "{isa}: page {i}"
            );
        }
    }
}

/// XNU's early abort after 104 words, `floor(2p * 1365 / 2048) + 4m + floor(h / 2) + 26 > 426`,
/// on every path, for every mix of misses (m), partial (p) and exact hits (h counts both)
/// in the first 104 words that brings the estimate within 4 of the limit; the words after
/// them must not count.
#[test]
fn early_abort_threshold_is_exact() {
    use wkdm::Isa;
    let mut codecs: Vec<Wkdm> = Isa::available().map(|isa| Wkdm::new().with_isa(isa).unwrap()).collect();
    let mut out = vec![0u8; Wkdm::MAX_COMPRESSED_LEN];
    let mut checked = [0usize; 2];
    for m in 1..=104usize {
        for p in 0..=104 - m {
            for e in 0..=104 - m - p {
                let estimate = (2 * p * 1365) / 2048 + 4 * m + (e + p) / 2 + 26;
                if estimate.abs_diff(426) > 4 {
                    continue;
                }
                // m words with fresh upper bits (misses); after the first, p words sharing
                // its upper bits (partials), then e repeats of the last (exact hits).
                let mut words = Vec::new();
                for k in 0..m as u32 {
                    let fresh = (k + 1) << 10;
                    words.push(fresh);
                    if k == 0 {
                        words.extend((1..=p as u32).map(|low| fresh | low));
                        words.extend(std::iter::repeat_n(*words.last().unwrap(), e));
                    }
                }
                // Then, from word 104 on, fresh misses: counted, they would tip every
                // page below the limit over it.
                words.resize(104, 0);
                words.extend((0..16u32).map(|k| (k + 1000) << 10));
                let page = page_of(&words);
                for codec in &mut codecs {
                    let refused = codec.compress(&page, &mut out) == Err(CompressError::Incompressible);
                    assert_eq!(
                        refused,
                        estimate > 426,
                        "{}: m {m} p {p} e {e}: estimate {estimate}",
                        codec.isa()
                    );
                }
                checked[usize::from(estimate > 426)] += 1;
            }
        }
    }
    assert_eq!(checked, [41, 20], "pages below and above the limit");
}

/// SPEC.md gives the codec value's size (all of its working memory): keep the two equal.
#[test]
fn the_codec_value_is_the_size_spec_md_gives() {
    assert_eq!(core::mem::size_of::<Wkdm>(), 20_656);
}
