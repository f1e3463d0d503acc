//! The public reference vectors: streams made by the Linux kernel (`lzo1x_1`, LZO-RLE) and
//! liblzo2 (`lzo1x_999`, which uses M1 and the state-4 match) decode exactly to their page,
//! and our compressor reproduces the kernel's streams byte for byte.
#![cfg(not(miri))]

mod common;

use lzokit::{DecodeLoop, KernelCompressor, StreamError, decompress, decompress_on, max_compressed_len};

fn cases() -> Vec<(String, Vec<u8>)> {
    common::pages()
}

fn stream(case: &str, ext: &str) -> Vec<u8> {
    common::read(&format!("{case}.{ext}"))
}

#[test]
fn every_vector_decodes_to_its_page() {
    for (case, page) in cases() {
        for ext in ["lzo1x", "lzo-rle", "lzo999"] {
            let s = stream(&case, ext);
            let mut out = vec![0xEEu8; 4096];
            let n = decompress(&s, &mut out).unwrap_or_else(|e| panic!("{case}.{ext}: {e}"));
            assert_eq!(n, 4096, "{case}.{ext}");
            assert!(out == page, "{case}.{ext}: decoded page differs");
            // A larger output buffer gives the same bytes and length.
            let mut big = vec![0u8; 5000];
            assert_eq!(decompress(&s, &mut big), Ok(4096), "{case}.{ext}");
            assert!(big[..4096] == page[..]);
        }
    }
}

/// Counts the instruction forms of a valid stream: (M1, state-4 3-byte match, zero runs).
fn count_rare_forms(s: &[u8]) -> (usize, usize, usize) {
    let ext = |ip: &mut usize| {
        while s[*ip] == 0 {
            *ip += 1;
        }
        *ip += 1;
    };
    let (mut ip, rle) = if s[0] == 17 && s.len() >= 5 { (2, s[1] != 0) } else { (0, false) };
    let (mut m1, mut m3byte, mut runs) = (0, 0, 0);
    let mut state = 0;
    if s[ip] > 17 {
        let t = usize::from(s[ip] - 17);
        ip += 1 + t;
        state = t.min(4);
    }
    loop {
        let t = s[ip];
        ip += 1;
        let next;
        if t >= 64 {
            next = t & 3;
            ip += 1;
        } else if t >= 32 {
            if t & 31 == 0 {
                ext(&mut ip);
            }
            next = s[ip] & 3;
            ip += 2;
        } else if t >= 16 {
            if rle && t >= 0x18 && s[ip] & 0xFC == 0xFC && s[ip + 1] == 0xFF {
                runs += 1;
                next = s[ip] & 3;
                ip += 3;
            } else {
                if t & 7 == 0 {
                    ext(&mut ip);
                }
                if t & 8 == 0 && s[ip] >> 2 == 0 && s[ip + 1] == 0 {
                    return (m1, m3byte, runs);
                }
                next = s[ip] & 3;
                ip += 2;
            }
        } else if state == 0 {
            let mut len = usize::from(t) + 3;
            if t == 0 {
                let start = ip;
                ext(&mut ip);
                len = 18 + (ip - 1 - start) * 255 + usize::from(s[ip - 1]);
            }
            ip += len;
            state = 4;
            continue;
        } else {
            if state == 4 {
                m3byte += 1
            } else {
                m1 += 1
            }
            next = t & 3;
            ip += 1;
        }
        ip += usize::from(next);
        state = usize::from(next);
    }
}

#[test]
fn vectors_exercise_m1_the_state_4_match_and_zero_runs() {
    let (mut m1, mut m3byte, mut runs, mut runs_r0) = (0, 0, 0, 0);
    for (case, _) in cases() {
        let (a, b, _) = count_rare_forms(&stream(&case, "lzo999"));
        m1 += a;
        m3byte += b;
        let rle = stream(&case, "lzo-rle");
        runs += count_rare_forms(&rle).2;
        runs_r0 += rle.windows(3).filter(|w| w == &[0x18, 0xFC, 0xFF] || w == &[0x18, 0xFF, 0xFF]).count();
        assert_eq!(
            count_rare_forms(&stream(&case, "lzo1x")),
            (0, 0, 0),
            "{case}: lzo1x_1 never writes these"
        );
    }
    // lzo1x_999 writes M1 in these pages but no state-4 3-byte match (the page's match
    // choices never need one); the unit tests in `decompress` cover that form.
    assert!(m1 > 0 && runs > 0 && runs_r0 > 0, "{m1} {m3byte} {runs} {runs_r0}");
}

#[test]
fn compressor_matches_the_kernel_byte_for_byte() {
    let mut c = KernelCompressor::new();
    let mut out = vec![0u8; max_compressed_len(4096)];
    for (case, page) in cases() {
        let n = c.compress(&page, &mut out).unwrap();
        assert!(out[..n] == stream(&case, "lzo1x"), "{case}: lzo1x differs from the kernel's");
        let n = c.compress_rle(&page, &mut out).unwrap();
        assert!(out[..n] == stream(&case, "lzo-rle"), "{case}: lzo-rle differs from the kernel's");
    }
}

/// The page codecs that promise the kernel's streams (`LzoRle`, `Lzo1xKernel`) write them.
#[test]
fn kernel_page_codecs_match_the_kernel_byte_for_byte() {
    use pagecodec::{Page, PageCodec};
    let mut out = vec![0u8; max_compressed_len(4096)];
    for (case, page) in cases() {
        let page = Page::from(&<[u8; 4096]>::try_from(&page[..]).unwrap());
        let n = lzokit::LzoRle::default().compress(&page, &mut out).unwrap();
        assert!(out[..n] == stream(&case, "lzo-rle"), "{case}: LzoRle differs from the kernel's");
        let n = lzokit::Lzo1xKernel::default().compress(&page, &mut out).unwrap();
        assert!(out[..n] == stream(&case, "lzo1x"), "{case}: Lzo1xKernel differs from the kernel's");
    }
}

/// Whether this build and CPU have `which` (what `decompress_on` promises).
fn has_loop(which: DecodeLoop) -> bool {
    match which {
        DecodeLoop::Reference => true,
        DecodeLoop::Baseline => cfg!(not(feature = "safe-decode")),
        #[cfg(target_arch = "x86_64")]
        DecodeLoop::Bmi2 => cfg!(not(feature = "safe-decode")) && std::is_x86_feature_detected!("bmi2"),
        #[cfg(not(target_arch = "x86_64"))]
        DecodeLoop::Bmi2 => false,
    }
}

/// `stream` on every loop this build and CPU have: each gives `decompress`'s verdict and
/// bytes; the others answer `None`.
fn assert_every_loop_agrees(what: &str, stream: &[u8], out_len: usize) {
    let mut want = vec![0u8; out_len];
    let verdict = decompress(stream, &mut want);
    for which in DecodeLoop::ALL {
        let mut out = vec![0xA5u8; out_len];
        match decompress_on(which, stream, &mut out) {
            None => assert!(!has_loop(which), "{what}: {which:?} is available but answered None"),
            Some(got) => {
                assert!(has_loop(which), "{what}: {which:?} is not available but ran");
                assert_eq!(got, verdict, "{what}: {which:?}");
                if let Ok(n) = got {
                    assert!(out[..n] == want[..n], "{what}: {which:?} decoded other bytes");
                }
            }
        }
    }
}

#[test]
fn every_decoder_loop_gives_the_same_result() {
    for (case, _) in cases() {
        for ext in ["lzo1x", "lzo-rle", "lzo999"] {
            let s = stream(&case, ext);
            assert_every_loop_agrees(&format!("{case}.{ext}"), &s, 4096);
            assert_every_loop_agrees(&format!("{case}.{ext}, short output"), &s, 4095);
            assert_every_loop_agrees(&format!("{case}.{ext}, cut"), &s[..s.len() - 1], 4096);
        }
    }
}

/// LZO-RLE writes a zero run as an M4 opcode with H = 1 followed by `111111SS 0xFF`; the
/// same two bytes after an M4 opcode with H = 0 (distance 32767), and any M4 match with
/// H = 1 (distances from 32768) not followed by them, are ordinary matches.
#[test]
fn far_m4_matches_of_lzo_rle_streams_stay_matches() {
    const LITERALS: usize = 40_000;
    let mut literals = vec![0u8; LITERALS];
    pagecodec::testing::Rng::new(3).fill(&mut literals);
    // Version header `11 01` (zero runs enabled), then one literal run: 0000_0000, 156
    // zero bytes (255 each) and 202: 18 + 156 * 255 + 202 = 40000.
    let mut stream = vec![0x11, 0x01, 0x00];
    stream.extend(core::iter::repeat_n(0u8, (LITERALS - 18) / 255));
    stream.push(((LITERALS - 18) % 255) as u8);
    stream.extend_from_slice(&literals);
    // M4, H = 0, length 4, distance 0x4000 + 0x3FFF: its distance bytes read `FC FF`.
    stream.extend_from_slice(&[0x12, 0xFC, 0xFF]);
    // M4, H = 1, length 4, distance 0x8000 + 7232 = 40000: v = 7232 << 2.
    stream.extend_from_slice(&[0x1A, 0x00, 0x71]);
    stream.extend_from_slice(&[0x11, 0x00, 0x00]);

    let mut want = literals.clone();
    for dist in [32_767, 32_767, 32_767, 32_767, 40_000, 40_000, 40_000, 40_000] {
        want.push(want[want.len() - dist]);
    }
    let mut out = vec![0u8; want.len()];
    assert_eq!(decompress(&stream, &mut out), Ok(want.len()));
    assert!(out == want, "a far M4 match was decoded as something else");
    assert_every_loop_agrees("far M4 matches", &stream, want.len());
    // One byte short: the last match overruns the output.
    assert_eq!(decompress(&stream, &mut out[..want.len() - 1]), Err(StreamError::OutputOverrun));
}

/// FNV-1a (64 bits): a digest to pin streams by.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xCBF2_9CE4_8422_2325, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01B3))
}

/// Inputs longer than the kernel's 49152-byte chunks: the vector pages end to end, the same
/// with every other page zeroed, and zeros only (runs and matches that chunk boundaries cut).
fn long_inputs() -> Vec<Vec<u8>> {
    let pages: Vec<u8> = cases().into_iter().flat_map(|(_, page)| page).collect();
    let mut sparse = pages.clone();
    for page in sparse.chunks_mut(4096).step_by(2) {
        page.fill(0);
    }
    vec![pages, sparse, vec![0; 100_000]]
}

/// The kernel compresses an input in chunks of 49152 bytes, each with a fresh dictionary,
/// the last 20 bytes of a chunk carried as literals into the next. The vectors are pages, so
/// no kernel stream of a longer input is at hand: these pins hold the streams this
/// compressor writes today for longer inputs (and they decode to their input), so that a
/// change to the chunking shows and has to be made on purpose.
#[test]
fn long_input_streams_are_pinned() {
    let mut c = KernelCompressor::new();
    let mut got = Vec::new();
    for input in long_inputs() {
        let mut out = vec![0u8; max_compressed_len(input.len())];
        for rle in [false, true] {
            let n =
                if rle { c.compress_rle(&input, &mut out) } else { c.compress(&input, &mut out) }.unwrap();
            let mut back = vec![0u8; input.len()];
            assert_eq!(decompress(&out[..n], &mut back), Ok(input.len()));
            assert!(back == input, "a long input does not decode to itself");
            got.push((n, fnv1a(&out[..n])));
        }
    }
    // (stream length, FNV-1a) for each input, LZO1X then LZO-RLE.
    assert_eq!(
        got,
        [
            (21033, 0x6517F264606937E1),
            (21010, 0x800B565607F4251D),
            (8102, 0xC53E736E4D745009),
            (8106, 0x0C718720B0EA0DE6),
            (471, 0xE28867AF07B46595),
            (275, 0x59286F3E02E573E6),
        ]
    );
}

/// `Lzo1x`'s streams (its own search, not the kernel's bytes) for the vector pages, pinned
/// by total length and FNV-1a of all streams in order: a change of the default codec's
/// choices (lazy step, recent distances, table) shows and has to be made on purpose.
#[test]
fn page_compressor_streams_are_pinned() {
    let mut codec = lzokit::Lzo1x::default();
    assert_eq!(pinned_streams(&mut codec), (18159, 0x4593_FAF3_90D7_3D3E));
}

/// `Lzo1xFast`'s streams for the vector pages, pinned as `Lzo1x`'s are: a change of the fast
/// level's choices (stride, entries, reach back) shows and has to be made on purpose.
#[test]
fn fast_compressor_streams_are_pinned() {
    let mut codec = lzokit::Lzo1xFast::default();
    assert_eq!(pinned_streams(&mut codec), (20157, 0x5184_47E9_25A7_BB6A));
}

/// `Lzo1x999`'s streams of the vector pages at several depths, pinned as `Lzo1x`'s are: its
/// search and parse choose among equally valid streams, and no other test sees a worse choice.
#[test]
fn optimal_compressor_streams_are_pinned() {
    let mut codec = lzokit::Lzo1x999::default();
    assert_eq!(pinned_streams(&mut codec), (16015, 0x03F3_A750_91BF_8B0B));
    // Other depths: the search's pruning and early exits decide more (or fewer) of the
    // streams; the deeper the search, the smaller the streams.
    let depths = [
        (1, 16702, 0xF5C6_F624_6717_95C8),
        (2, 16489, 0x45A2_E135_1C02_0DDD),
        (4, 16315, 0x79B1_5E11_C51C_3B0E),
        (64, 15885, 0x566F_AD5F_3BF4_D7A8),
        (1000, 15530, 0xE0BF_71F2_C6ED_4451),
    ];
    for (depth, len, fnv) in depths {
        let mut codec = lzokit::Lzo1x999::with_depth(depth);
        assert_eq!(pinned_streams(&mut codec), (len, fnv), "depth {depth}");
    }
}

/// Every vector page through `codec`: each stream decodes to its page; returns the total
/// length and the FNV-1a of all streams in order.
fn pinned_streams(codec: &mut dyn pagecodec::PageCodec) -> (usize, u64) {
    use pagecodec::Page;
    let mut all = Vec::new();
    let mut out = vec![0u8; max_compressed_len(4096)];
    for (case, page) in cases() {
        let page = Page::from(&<[u8; 4096]>::try_from(&page[..]).unwrap());
        let n = codec.compress(&page, &mut out).unwrap_or_else(|e| panic!("{case}: {e}"));
        let mut back = Page::zeroed();
        codec.decompress(&out[..n], &mut back).unwrap();
        assert!(back == page, "{case}: does not decode to its page");
        all.extend_from_slice(&out[..n]);
    }
    (all.len(), fnv1a(&all))
}

#[test]
fn lzo1x_999_reports_its_depth() {
    let c = lzokit::Lzo1x999::with_depth(7);
    assert_eq!(c.depth(), 7);
    assert_eq!(lzokit::Lzo1x999::with_depth(0).depth(), 1, "at least one candidate");
    assert!(format!("{c:?}").contains("depth: 7"), "{c:?}");
}

/// The compressors' `Debug` names them and leaves out their tables (tens of kilobytes).
#[test]
fn compressors_debug_without_their_tables() {
    assert_eq!(format!("{:?}", lzokit::KernelCompressor::new()), "KernelCompressor { .. }");
    assert_eq!(format!("{:?}", lzokit::Lzo1x::default()), "Lzo1x { compressor: PageCompressor { .. } }");
}
