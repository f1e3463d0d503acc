//! Shared pieces of the fuzz targets: page recipes, the C reference decoder, and the LZO
//! round-trip property (plain and RLE run the same checks).

pub mod targets;

use arbitrary::Arbitrary;

/// A typed fuzz input from raw bytes, decoded as libFuzzer's typed targets decode theirs
/// (`arbitrary_take_rest`); `None` for bytes that do not decode.
pub fn decode<T: for<'a> Arbitrary<'a>>(data: &[u8]) -> Option<T> {
    T::arbitrary_take_rest(arbitrary::Unstructured::new(data)).ok()
}
use lzokit::{CompressError, KernelCompressor, StreamError, decompress, max_compressed_len};
use pagecodec::testing::{PageClass, generate};
use pagecodec::{PAGE_SIZE, PAGE_WORDS, Page};

/// A page described in a few fuzzer bytes, so that small inputs still reach whole pages of
/// every shape: realistic generated classes, raw bytes, repeats and word palettes (which
/// give WKdm its exact and partial dictionary matches).
#[derive(Arbitrary, Debug, Clone)]
pub enum PageRecipe {
    /// `pagecodec::testing::generate(PageClass::ALL[class % 12], seed)`.
    Generated {
        /// Index into [`PageClass::ALL`].
        class: u8,
        /// Generator seed.
        seed: u64,
    },
    /// These bytes, then zeros.
    Bytes(Vec<u8>),
    /// These bytes repeated to fill the page (zeros if empty).
    Repeated(Vec<u8>),
    /// Words from a palette of four: each pick byte chooses an entry (bits 0-1) and, if
    /// bit 2 is set, replaces its low 10 bits with bits 3-7 (a WKdm partial match). The
    /// picks repeat to fill the page.
    Words {
        /// The four base words.
        palette: [u32; 4],
        /// One byte per word.
        picks: Vec<u8>,
    },
}

impl PageRecipe {
    /// The page this recipe describes.
    pub fn page(&self) -> Page {
        let mut page = Page::zeroed();
        match self {
            PageRecipe::Generated { class, seed } => {
                page = generate(PageClass::ALL[usize::from(*class) % PageClass::ALL.len()], *seed)
            }
            PageRecipe::Bytes(bytes) => {
                let n = bytes.len().min(PAGE_SIZE);
                page.as_bytes_mut()[..n].copy_from_slice(&bytes[..n]);
            }
            PageRecipe::Repeated(bytes) => {
                if !bytes.is_empty() {
                    for (dst, src) in page.as_bytes_mut().iter_mut().zip(bytes.iter().cycle()) {
                        *dst = *src;
                    }
                }
            }
            PageRecipe::Words { palette, picks } => {
                if !picks.is_empty() {
                    let words = page.words_mut();
                    for (w, &pick) in words.iter_mut().zip(picks.iter().cycle()).take(PAGE_WORDS) {
                        let mut v = palette[usize::from(pick & 3)];
                        if pick & 4 != 0 {
                            v = (v & !0x3ff) | u32::from(pick >> 3);
                        }
                        *w = v.to_le();
                    }
                }
            }
        }
        page
    }
}

/// Direct bindings to miniLZO's safe decompressor (the crate's safe wrapper hides the
/// decoded length).
mod c {
    use std::os::raw::{c_int, c_uchar, c_void};

    unsafe extern "C" {
        pub(crate) fn lzo1x_decompress_safe(
            src: *const c_uchar,
            src_len: usize,
            dst: *mut c_uchar,
            dst_len: *mut usize,
            wrkmem: *mut c_void,
        ) -> c_int;
    }
}

/// C `lzo1x_decompress_safe` (miniLZO 2.10) into a buffer of `capacity` bytes: the
/// liblzo2 result code (0 or `LZO_E_*`) and the bytes it reports as written.
pub fn c_decompress_safe(src: &[u8], capacity: usize) -> (i32, Vec<u8>) {
    static INIT: std::sync::Once = std::sync::Once::new();
    INIT.call_once(|| {
        minilzo_rs::LZO::init().expect("lzo_init");
    });
    let mut dst = vec![0u8; capacity];
    let mut dst_len = capacity;
    // SAFETY: `src` is readable for `src.len()` bytes and `dst` writable for `dst_len`
    // bytes; the safe decoder checks every access against these two lengths and needs no
    // work memory (NULL). All buffers outlive the call.
    let code = unsafe {
        c::lzo1x_decompress_safe(
            src.as_ptr(),
            src.len(),
            dst.as_mut_ptr(),
            &mut dst_len,
            std::ptr::null_mut(),
        )
    };
    dst.truncate(dst_len.min(capacity));
    (code, dst)
}

/// liblzo2's code for one of our results.
pub fn lzo_code(result: &Result<usize, StreamError>) -> i32 {
    match result {
        Ok(_) => 0,
        Err(e) => e.code(),
    }
}

/// An LZO compressor input built from fuzzer bytes: `data` repeated `1 + (reps & 15)` times
/// (long inputs with long matches from short fuzz inputs), compressed with a budget chosen
/// by `budget` (see [`check_lzo_round_trip`]).
#[derive(Arbitrary, Debug)]
pub struct LzoInput {
    /// How many extra repeats of `data` (low 4 bits).
    pub reps: u8,
    /// Budget selector.
    pub budget: u16,
    /// The data.
    pub data: Vec<u8>,
}

/// The LZO compressor's contract on one input, for plain LZO1X (`rle = false`) or LZO-RLE:
///
/// - with the worst-case budget it succeeds, and the stream decodes (ours, into a buffer of
///   exactly the input length) to the input; a plain stream also decodes so with C
///   liblzo2, and an RLE stream decodes with ours into a buffer one byte short as
///   `OutputOverrun` (never a partial success);
/// - with any smaller budget `b` the result is the same stream if it fits in `b` bytes and
///   `Incompressible` otherwise, never a different or longer stream.
pub fn check_lzo_round_trip(input: &LzoInput, rle: bool) {
    let reps = 1 + usize::from(input.reps & 15);
    let src: Vec<u8> = input.data.iter().copied().cycle().take(input.data.len() * reps).collect();
    let mut compressor = KernelCompressor::new();
    let compress = |c: &mut KernelCompressor, dst: &mut [u8]| {
        if rle { c.compress_rle(&src, dst) } else { c.compress(&src, dst) }
    };

    let worst = max_compressed_len(src.len());
    let mut full = vec![0u8; worst];
    let n = compress(&mut compressor, &mut full).expect("worst-case budget must always suffice");
    assert!(n <= worst);
    let stream = &full[..n];

    let mut back = vec![0xA5u8; src.len()];
    assert_eq!(decompress(stream, &mut back), Ok(src.len()), "our stream does not decode");
    assert!(back == src, "round trip changed the data");
    if !src.is_empty() {
        assert_eq!(
            decompress(stream, &mut back[..src.len() - 1]),
            Err(StreamError::OutputOverrun),
            "a too-small output must be an error"
        );
    }
    if !rle {
        let (code, c_out) = c_decompress_safe(stream, src.len());
        assert_eq!(code, 0, "C liblzo2 rejects our stream");
        assert!(c_out == src, "C liblzo2 decodes our stream differently");
    }

    // The budget: exactly "this stream if it fits, else Incompressible".
    let budget = usize::from(input.budget) % (worst + 1);
    let mut dst = vec![0x5Au8; budget];
    match compress(&mut compressor, &mut dst) {
        Ok(m) => {
            assert!(n <= budget, "stream of {n} bytes reported as fitting a budget of {budget}");
            assert_eq!(m, n, "the budget changed the stream length");
            assert!(dst[..m] == *stream, "the budget changed the stream");
        }
        Err(CompressError::Incompressible) => {
            assert!(n > budget, "a {n}-byte stream was refused with a budget of {budget}");
        }
        Err(e) => panic!("unexpected compress error {e:?}"),
    }
}

/// A [`PageCodec`](pagecodec::PageCodec)'s contract on one page and a budget chosen by
/// `budget`:
///
/// - with `max_compressed_len()` bytes the page compresses unless the codec refuses it
///   (`Incompressible`, e.g. WKdm's early abort), and the stream decodes to the page in
///   destinations pre-filled with 0x00 and with 0xFF;
/// - with a budget of `b` bytes a success is at most `b` bytes and round-trips; if the full
///   stream fits in `b` the call must succeed, and when `same_stream` is set (LZO) it must be
///   the very same stream, with `Incompressible` exactly when it does not fit.
///
/// Returns the stream written with `max_compressed_len()` bytes, if the codec wrote one.
pub fn check_page_codec(
    codec: &mut dyn pagecodec::PageCodec,
    page: &Page,
    budget: u16,
    same_stream: bool,
) -> Option<Vec<u8>> {
    let max = codec.max_compressed_len();
    let mut full = vec![0u8; max];
    let n = match codec.compress(page, &mut full) {
        Ok(n) => n,
        Err(CompressError::Incompressible) => {
            assert!(!same_stream, "{} refused a page with its worst-case budget", codec.name());
            return None;
        }
        Err(e) => panic!("unexpected compress error {e:?}"),
    };
    assert!(n <= max);
    check_decodes(codec, &full[..n], page);

    let b = usize::from(budget) % (max + 1);
    let mut out = vec![0x5Au8; b];
    match codec.compress(page, &mut out) {
        Ok(m) => {
            assert!(m <= b, "{}: {m}-byte stream in a {b}-byte budget", codec.name());
            if same_stream {
                assert_eq!(m, n, "the budget changed the stream length");
                assert!(out[..m] == full[..n], "the budget changed the stream");
            }
            check_decodes(codec, &out[..m], page);
        }
        Err(CompressError::Incompressible) => {
            assert!(n > b, "{}: a {n}-byte stream was refused with a budget of {b}", codec.name())
        }
        Err(e) => panic!("unexpected compress error {e:?}"),
    }
    full.truncate(n);
    Some(full)
}

/// `stream` decodes to `page` whatever the destination held before.
fn check_decodes(codec: &mut dyn pagecodec::PageCodec, stream: &[u8], page: &Page) {
    for fill in [0x00, 0xFF] {
        let mut back = Page::filled(fill);
        assert_eq!(codec.decompress(stream, &mut back), Ok(()), "{}: own stream rejected", codec.name());
        assert!(back == *page, "{}: round trip changed the page", codec.name());
    }
}
