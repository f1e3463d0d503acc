//! Both adapters pass the family's conformance suite and work inside a page store.

use pagecodec::testing::{PageClass, check_codec, generate};
use pagecodec::{Page, PageCodec};
use pagecodec_adapters::Lz4;
use pagestore::{Hybrid, PageStore};

#[test]
fn lz4_passes_the_conformance_suite() {
    check_codec(&mut Lz4::new());
}

#[cfg(feature = "zstd")]
#[test]
fn zstd_passes_the_conformance_suite() {
    check_codec(&mut pagecodec_adapters::Zstd::new().expect("zstd contexts"));
    check_codec(&mut pagecodec_adapters::Zstd::with_level(-5).expect("zstd contexts"));
}

#[cfg(feature = "zstd")]
#[test]
fn zstd_bound_is_zstds_own() {
    assert_eq!(
        pagecodec_adapters::Zstd::MAX_COMPRESSED_LEN,
        zstd::zstd_safe::compress_bound(pagecodec::PAGE_SIZE)
    );
}

#[cfg(feature = "zstd")]
#[test]
fn zstd_rejects_an_out_of_range_level() {
    let e = pagecodec_adapters::Zstd::with_level(1000).unwrap_err();
    assert!(e.to_string().contains("1000"), "{e}");
}

#[test]
fn lz4_round_trips_in_a_store_and_a_hybrid() {
    let mut store = PageStore::new(Lz4::new());
    let mut hybrid = PageStore::new(Hybrid::new(Lz4::new(), pagecodec::Raw, 2048));
    for (key, class) in PageClass::ALL.into_iter().enumerate() {
        let page = generate(class, 11);
        store.store(key as u64, &page).unwrap();
        hybrid.store(key as u64, &page).unwrap();
        let mut back = Page::zeroed();
        store.load(key as u64, &mut back).unwrap();
        assert_eq!(back, page, "{}", class.name());
        hybrid.load(key as u64, &mut back).unwrap();
        assert_eq!(back, page, "{}", class.name());
    }
}

#[test]
fn lz4_decodes_what_the_reference_format_says() {
    // A block built by hand from the LZ4 format: one literal 'a', a match at offset 1
    // covering 4090 bytes (length 4 + 15 + extension bytes), and the 5 closing literals
    // the format requires at the end of a block.
    let mut block = vec![0x1Fu8, b'a', 0x01, 0x00];
    let mut rest = 4090 - 4 - 15;
    while rest >= 255 {
        block.push(255);
        rest -= 255;
    }
    block.push(rest as u8);
    block.extend_from_slice(&[0x50, b'a', b'a', b'a', b'a', b'a']);
    let mut back = Page::zeroed();
    Lz4::new().decompress(&block, &mut back).unwrap();
    assert!(back.as_bytes().iter().all(|&b| b == b'a'));
    // Cut short: an error, never a panic.
    for cut in 0..block.len() {
        assert!(Lz4::new().decompress(&block[..cut], &mut back).is_err(), "cut {cut}");
    }
}
