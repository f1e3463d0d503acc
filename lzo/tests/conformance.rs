//! The family's conformance suite (round trips on every page class, every budget, damaged
//! streams, garbage input, determinism) on the page codecs.

use lzokit::{Lzo1x, Lzo1x999, Lzo1xFast, LzoRle};
use pagecodec::PageCodec;
use pagecodec::testing::check_codec;

#[test]
fn lzo1x_passes_the_conformance_suite() {
    let mut codec = Lzo1x::default();
    assert_eq!(codec.name(), "lzo");
    assert_eq!(codec.max_compressed_len(), 4421);
    check_codec(&mut codec);
}

#[test]
fn lzo1x_fast_passes_the_conformance_suite() {
    let mut codec = Lzo1xFast::default();
    assert_eq!((codec.name(), codec.max_compressed_len()), ("lzo-fast", 4421));
    check_codec(&mut codec);
}

#[test]
fn lzo_rle_passes_the_conformance_suite() {
    let mut codec = LzoRle::default();
    assert_eq!(codec.name(), "lzo-rle");
    check_codec(&mut codec);
}

#[test]
fn lzo999_passes_the_conformance_suite() {
    let mut codec = Lzo1x999::default();
    assert_eq!((codec.name(), codec.max_compressed_len(), codec.depth()), ("lzo-999", 4421, 16));
    check_codec(&mut codec);
    assert_eq!(Lzo1x999::with_depth(0).depth(), 1);
}

#[test]
fn each_codec_reads_the_others_streams() {
    use pagecodec::testing::{PageClass, generate};
    let mut plain = Lzo1x::default();
    let mut rle = LzoRle::default();
    let mut buf = vec![0u8; plain.max_compressed_len()];
    for class in PageClass::ALL {
        let page = generate(class, 11);
        let mut back = pagecodec::Page::zeroed();
        let n = plain.compress(&page, &mut buf).unwrap();
        rle.decompress(&buf[..n], &mut back).unwrap();
        assert_eq!(back, page, "{class:?}");
        let n = rle.compress(&page, &mut buf).unwrap();
        assert_eq!(&buf[..2], &[0x11, 0x01]);
        plain.decompress(&buf[..n], &mut back).unwrap();
        assert_eq!(back, page, "{class:?}");
    }
}
