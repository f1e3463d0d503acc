//! Arbitrary bytes through the WKdm decoder (4 KiB and 16 KiB pages, both dictionary
//! preloads, every available path: the SIMD decoders must match the scalar one): no panic,
//! and decoding into pages pre-filled with 0x00 and with 0xFF gives the
//! same result: on success the same page (no stale byte shows through), on error both pages
//! untouched (the decoder validates the whole stream before writing).

use pagecodec::DecompressError;
use wkdm::{DictionaryPreload, Isa, WkdmCodec};

/// What an untouched destination holds: compared whole (one `memcmp`) because a per-byte
/// check is instrumented by the fuzzer's comparison tracing and dominated every run.
static ZEROS: [u8; 16384] = [0x00; 16384];
static ONES: [u8; 16384] = [0xFF; 16384];

/// Decodes `stream` on `path` into pages pre-filled with 0x00 and 0xFF; returns the verdict
/// and the page (`None` on error, after checking both pages were left untouched).
fn decode_on<const WORDS: usize, const N: usize>(
    path: Isa,
    preload: DictionaryPreload,
    stream: &[u8],
) -> (Result<(), DecompressError>, Option<Box<[u8]>>) {
    let mut codec = WkdmCodec::<WORDS>::new().with_isa(path).unwrap().with_preload(preload);
    let mut zeros = vec![0x00u8; N].into_boxed_slice();
    let mut ones = vec![0xFFu8; N].into_boxed_slice();
    let a = codec.decompress_page::<N>(stream, (&mut *zeros).try_into().unwrap());
    // The same codec value again: nothing of the first call may leak into the second.
    let b = codec.decompress_page::<N>(stream, (&mut *ones).try_into().unwrap());
    assert_eq!(a, b, "{path:?}: the destination's old contents changed the verdict");
    match a {
        Ok(()) => {
            assert!(zeros == ones, "{path:?}: stale destination bytes are visible after a successful decode");
            (a, Some(zeros))
        }
        Err(_) => {
            assert!(*zeros == ZEROS[..N], "{path:?}: a failed decode wrote to the page");
            assert!(*ones == ONES[..N], "{path:?}: a failed decode wrote to the page");
            (a, None)
        }
    }
}

/// Every available path (scalar, AVX2, ...) gives the scalar decoder's verdict and page.
fn check<const WORDS: usize, const N: usize>(preload: DictionaryPreload, stream: &[u8]) {
    let reference = decode_on::<WORDS, N>(Isa::Scalar, preload, stream);
    for path in Isa::available().filter(|&p| p != Isa::Scalar) {
        let other = decode_on::<WORDS, N>(path, preload, stream);
        assert_eq!(other.0, reference.0, "{path:?} and scalar disagree on the verdict");
        assert!(other.1 == reference.1, "{path:?} and scalar decode different pages");
    }
}

/// One input, as the fuzz target runs it.
pub fn run(data: &[u8]) {
    let Some((&selector, stream)) = data.split_first() else { return };
    let preload = if selector & 2 == 0 { DictionaryPreload::Zero } else { DictionaryPreload::One };
    if selector & 1 == 0 {
        check::<1024, 4096>(preload, stream);
    } else {
        check::<4096, 16384>(preload, stream);
    }
}
