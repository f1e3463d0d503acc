//! Arbitrary bytes through the WKdm decoder (4 KiB and 16 KiB pages, both dictionary
//! preloads): no panic, and decoding into pages pre-filled with 0x00 and with 0xFF gives the
//! same result: on success the same page (no stale byte shows through), on error both pages
//! untouched (the decoder validates the whole stream before writing).
#![no_main]

use libfuzzer_sys::fuzz_target;
use wkdm::{DictionaryPreload, WkdmCodec};

fn check<const WORDS: usize, const N: usize>(preload: DictionaryPreload, stream: &[u8]) {
    let mut codec = WkdmCodec::<WORDS>::new().with_preload(preload);
    let mut zeros = vec![0x00u8; N].into_boxed_slice();
    let mut ones = vec![0xFFu8; N].into_boxed_slice();
    let zeros: &mut [u8; N] = (&mut *zeros).try_into().unwrap();
    let ones: &mut [u8; N] = (&mut *ones).try_into().unwrap();
    let a = codec.decompress_page(stream, zeros);
    // The same codec value again: nothing of the first call may leak into the second.
    let b = codec.decompress_page(stream, ones);
    assert_eq!(a, b, "the destination's old contents changed the verdict");
    match a {
        Ok(()) => assert!(zeros == ones, "stale destination bytes are visible after a successful decode"),
        Err(_) => {
            assert!(zeros.iter().all(|&x| x == 0x00), "a failed decode wrote to the page");
            assert!(ones.iter().all(|&x| x == 0xFF), "a failed decode wrote to the page");
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&selector, stream)) = data.split_first() else { return };
    let preload = if selector & 2 == 0 { DictionaryPreload::Zero } else { DictionaryPreload::One };
    if selector & 1 == 0 {
        check::<1024, 4096>(preload, stream);
    } else {
        check::<4096, 16384>(preload, stream);
    }
});
