//! The public reference vectors: streams written by XNU's own x86_64 compressor.

mod common;

use common::vectors;
use pagecodec::{Page, PageCodec};
use wkdm::{CompressOptions, Compressed, Wkdm, XNU_LIMIT_4K};

fn cases() -> Vec<(String, Page)> {
    vectors::pages()
}

fn xnu_codec() -> Wkdm {
    Wkdm::new().with_options(CompressOptions::new().xnu_limit(Some(XNU_LIMIT_4K)))
}

#[test]
#[cfg_attr(miri, ignore)]
fn compressor_matches_xnu_byte_for_byte() {
    let cases = cases();
    let (mut streams, mut same, mut refused) = (0, 0, 0);
    for (name, page) in &cases {
        let mut out = [0u8; XNU_LIMIT_4K];
        let got = xnu_codec().compress_page(page.as_bytes(), &mut out);
        let Some(expected) = vectors::xnu_stream(name) else {
            assert!(got.is_err(), "{name}: XNU refused the page, we gave {got:?}");
            refused += 1;
            continue;
        };
        if expected.is_empty() {
            let value = page.word_le(0);
            let want = if value == 0 { Compressed::Zero } else { Compressed::SingleValue(value) };
            assert_eq!(got, Ok(want), "{name}: XNU reported a zero or single-value page");
            assert!(page.words().iter().all(|&w| u32::from_le(w) == value), "{name} is uniform");
            same += 1;
        } else {
            let Ok(Compressed::Stream(n)) = got else { panic!("{name}: expected a stream, got {got:?}") };
            assert_eq!(&out[..n], &expected[..], "{name}: stream differs from XNU's");
            streams += 1;
        }
    }
    assert_eq!((streams, same, refused), (13, 5, 3));
}

#[test]
#[cfg_attr(miri, ignore)]
fn xnu_streams_decode_to_their_pages() {
    let mut decoded = 0;
    for (name, page) in cases() {
        let Some(stream) = vectors::xnu_stream(&name) else { continue };
        if stream.is_empty() {
            continue;
        }
        decoded += 1;
        let mut back = Page::filled(0xEE);
        Wkdm::default().decompress(&stream, &mut back).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(back, page, "{name}");
        // The PageCodec budget (out.len()) gives the same stream for pages XNU accepts.
        let mut out = vec![0u8; 4368];
        let n = Wkdm::default().compress(&page, &mut out).expect("fits");
        assert_eq!(&out[..n], &stream[..], "{name}: PageCodec stream");
    }
    assert_eq!(decoded, 13, "streams among the vectors");
}

#[test]
#[cfg_attr(miri, ignore)]
fn refused_pages_compress_without_the_xnu_rules() {
    let mut refused = 0;
    for (name, page) in cases() {
        if vectors::xnu_stream(&name).is_some() {
            continue;
        }
        refused += 1;
        let mut codec = Wkdm::new().with_options(CompressOptions::new().early_abort(false));
        let mut out = vec![0u8; Wkdm::MAX_COMPRESSED_LEN];
        match codec.compress(&page, &mut out) {
            Ok(n) => {
                let mut back = Page::zeroed();
                codec.decompress(&out[..n], &mut back).expect("own stream decodes");
                assert_eq!(back, page, "{name}");
            }
            Err(e) => panic!("{name}: {e} with the unbudgeted worst case as budget"),
        }
    }
    assert_eq!(refused, 3, "pages XNU refused among the vectors");
}
