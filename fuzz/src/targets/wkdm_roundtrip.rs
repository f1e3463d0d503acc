//! Arbitrary pages, budgets and options through the WKdm compressor on every available
//! path (scalar, SSE4.1, AVX2): every path gives the same verdict and bytes; a stream fits
//! the budget and decodes to the page; zero / single-value reports are true; with early
//! abort off, no XNU limit and the worst-case budget the page is never refused; any XNU
//! limit (past any stream length: the same as none) is safe. Also the `PageCodec`
//! implementation (`check_page_codec`).

use crate::{PageRecipe, check_page_codec};
use wkdm::{CompressOptions, Compressed, Isa, Wkdm, WkdmCodec};

fn check<const WORDS: usize, const N: usize>(page: &[u8; N], options: CompressOptions, budget: usize) {
    if options.limit().is_some_and(|limit| limit > 2 * N) {
        let (mut a, mut b) = (vec![0u8; budget], vec![0u8; budget]);
        let limited = WkdmCodec::<WORDS>::new().with_options(options).compress_page(page, &mut a);
        let unlimited =
            WkdmCodec::<WORDS>::new().with_options(options.xnu_limit(None)).compress_page(page, &mut b);
        assert_eq!(limited, unlimited, "a limit past any stream must act as no limit");
        assert!(a == b, "a limit past any stream changed the bytes");
    }
    let mut reference: Option<(Result<Compressed, pagecodec::CompressError>, Vec<u8>)> = None;
    for path in Isa::available() {
        let mut codec = WkdmCodec::<WORDS>::new().with_isa(path).unwrap().with_options(options);
        let mut out = vec![0x5Au8; budget];
        let result = codec.compress_page(page, &mut out);
        let written = match result {
            Ok(Compressed::Stream(n)) => {
                assert!(n <= budget, "{path:?}: {n}-byte stream in a {budget}-byte budget");
                let mut back = vec![0xFFu8; N].into_boxed_slice();
                let back: &mut [u8; N] = (&mut *back).try_into().unwrap();
                assert_eq!(codec.decompress_page(&out[..n], back), Ok(()), "{path:?}: own stream rejected");
                assert!(back == page, "{path:?}: round trip changed the page");
                out[..n].to_vec()
            }
            Ok(Compressed::Zero) => {
                assert!(page.iter().all(|&b| b == 0), "{path:?}: reported a non-zero page as zero");
                Vec::new()
            }
            Ok(Compressed::SingleValue(v)) => {
                assert_ne!(v, 0);
                assert!(
                    page.chunks_exact(4).all(|w| w == v.to_le_bytes()),
                    "{path:?}: reported a page as single-valued {v:#x}"
                );
                Vec::new()
            }
            Err(_) => {
                let unlimited = !options.is_early_abort() && options.limit().is_none();
                assert!(
                    !(unlimited && budget >= WkdmCodec::<WORDS>::MAX_COMPRESSED_LEN),
                    "{path:?}: refused a page with the worst-case budget and no abort or limit"
                );
                Vec::new()
            }
        };
        match &reference {
            None => reference = Some((result, written)),
            Some((r, w)) => {
                assert_eq!(*r, result, "{path:?} disagrees with the first path");
                assert!(*w == written, "{path:?} writes different bytes");
            }
        }
    }
}

/// The XNU limit to emulate: none, XNU's own for the page size, any value near the page
/// size (where the rules bite), or any value at all (where they must not overflow).
fn limit(flags: u8, raw: u64, xnu: usize) -> Option<usize> {
    match (flags >> 4) & 3 {
        0 => None,
        1 => Some(xnu),
        2 => Some((raw % (2 * xnu as u64 + 64)) as usize),
        _ => Some(raw as usize),
    }
}

/// One input, as the fuzz target runs it (bytes that do not decode are skipped).
pub fn run(data: &[u8]) {
    let Some(input) = crate::decode::<(PageRecipe, PageRecipe, u8, u16, u64)>(data) else { return };
    let (a, b, flags, budget, raw_limit) = input;
    let early_abort = flags & 1 != 0;
    let (a, b) = (a.page(), b.page());
    if flags & 8 == 0 {
        let limit = limit(flags, raw_limit, wkdm::XNU_LIMIT_4K);
        let options = CompressOptions::new().early_abort(early_abort).xnu_limit(limit);
        let max = Wkdm::MAX_COMPRESSED_LEN;
        let room = if flags & 4 != 0 { max } else { usize::from(budget) % (max + 1) };
        check::<1024, 4096>(a.as_bytes(), options, room);
        check_page_codec(&mut Wkdm::default().with_options(options), &a, budget, false);
    } else {
        let limit = limit(flags, raw_limit, 16384 - 4);
        let options = CompressOptions::new().early_abort(early_abort).xnu_limit(limit);
        let max = WkdmCodec::<4096>::MAX_COMPRESSED_LEN;
        let room = if flags & 4 != 0 { max } else { usize::from(budget) % (max + 1) * 4 % (max + 1) };
        let mut page = vec![0u8; 16384];
        for (i, chunk) in page.chunks_exact_mut(4096).enumerate() {
            chunk.copy_from_slice(if i == 1 || i == 2 { b.as_bytes() } else { a.as_bytes() });
        }
        let page: &[u8; 16384] = page.as_slice().try_into().unwrap();
        check::<4096, 16384>(page, options, room);
    }
}
