//! `pagecodec._native`: the family's codecs on Python `bytes`.
//!
//! The Python modules `pagecodec.wkdm`, `pagecodec.lzo`, `pagecodec.lzo_fast` and
//! `pagecodec.lzo_rle` wrap these functions; `pagecodec/_native.pyi` types them. Bad input raises
//! `pagecodec.DecompressError` (a `ValueError`) carrying the decoder's reason; no input
//! panics (the decoders return typed errors, and PyO3 turns any panic into an exception).

use std::cell::RefCell;

use pagecodec::{PAGE_SIZE, Page, PageCodec};
use pyo3::create_exception;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use wkdm::{CompressOptions, Wkdm, Wkdm16K};

create_exception!(
    _native,
    DecompressError,
    PyValueError,
    "A stream that does not decode: truncated, corrupt, the wrong length, or with input left over. \
     The message is the decoder's reason."
);

/// The largest output `lzo.decompress` accepts (`size`): 1 GiB.
const MAX_LZO_OUTPUT: usize = 1 << 30;

/// WKdm without the early abort, so that every page compresses (the budget is the largest
/// stream).
fn thorough<const W: usize>(codec: wkdm::WkdmCodec<W>) -> wkdm::WkdmCodec<W> {
    codec.with_options(CompressOptions::new().early_abort(false))
}

thread_local! {
    // One codec value (and its working memory) per thread, reused across calls.
    static WKDM: RefCell<Wkdm> = RefCell::new(thorough(Wkdm::new()));
    static WKDM16K: RefCell<Box<Wkdm16K>> = RefCell::new(Box::new(thorough(Wkdm16K::new())));
    static LZO: RefCell<lzokit::Lzo1x> = RefCell::new(lzokit::Lzo1x::default());
    static LZO_RLE: RefCell<lzokit::LzoRle> = RefCell::new(lzokit::LzoRle::default());
    static LZO_FAST: RefCell<lzokit::Lzo1xFast> = RefCell::new(lzokit::Lzo1xFast::default());
    static LZO_ANY: RefCell<lzokit::KernelCompressor> = const { RefCell::new(lzokit::KernelCompressor::new()) };
    // The compressors' output, copied into the returned `bytes` (its length is known only
    // after compressing).
    static OUT: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// Runs `f` on the thread's output buffer grown to `len` bytes and returns the first `n`
/// bytes it reports as a new `bytes`.
fn with_out<'py>(
    py: Python<'py>,
    len: usize,
    f: impl FnOnce(&mut [u8]) -> Result<usize, pagecodec::CompressError>,
) -> PyResult<Bound<'py, PyBytes>> {
    OUT.with_borrow_mut(|out| {
        if out.len() < len {
            out.resize(len, 0);
        }
        let n = f(&mut out[..len]).map_err(|e| PyValueError::new_err(e.to_string()))?;
        Ok(PyBytes::new(py, &out[..n]))
    })
}

fn page_of(data: &[u8]) -> PyResult<Page> {
    let bytes: &[u8; PAGE_SIZE] = data
        .try_into()
        .map_err(|_| PyValueError::new_err(format!("a page is {PAGE_SIZE} bytes, not {}", data.len())))?;
    Ok(Page::from(bytes))
}

/// Compresses `page` (4096 or 16384 bytes) into a WKdm stream in Apple XNU's format.
///
/// Every page gets a stream, uniform pages included (the early abort is off).
#[pyfunction]
fn wkdm_compress<'py>(py: Python<'py>, page: &[u8]) -> PyResult<Bound<'py, PyBytes>> {
    match page.len() {
        PAGE_SIZE => {
            let page = page_of(page)?;
            with_out(py, Wkdm::MAX_COMPRESSED_LEN, |out| WKDM.with_borrow_mut(|c| c.compress(&page, out)))
        }
        16384 => {
            let page: &[u8; 16384] = page.try_into().expect("length checked");
            with_out(py, Wkdm16K::MAX_COMPRESSED_LEN, |out| {
                match WKDM16K.with_borrow_mut(|c| c.compress_page(page, out))? {
                    wkdm::Compressed::Stream(n) => Ok(n),
                    // XNU reports uniform 16 KiB pages instead of encoding them: the zero
                    // page becomes the empty sparse form, any other the normal form below.
                    wkdm::Compressed::Zero => {
                        out[..4].copy_from_slice(&0x4321u32.to_le_bytes());
                        Ok(4)
                    }
                    wkdm::Compressed::SingleValue(v) => Ok(uniform_16k(v, out)),
                }
            })
        }
        n => Err(PyValueError::new_err(format!("a WKdm page is 4096 or 16384 bytes, not {n}"))),
    }
}

/// The normal-form stream of a 16 KiB page whose every u32 word is `value` (non-zero):
/// one MISS (or a PARTIAL when `value < 1024`), then EXACT hits on the same slot.
fn uniform_16k(value: u32, out: &mut [u8]) -> usize {
    const WORDS: usize = 4096;
    const TAG_WORDS: usize = WORDS / 16;
    // The slot: compress a 4 KiB uniform page of the same value (which `PageCodec` encodes)
    // and read its first index nibble.
    let mut small = [0u8; Wkdm::MAX_COMPRESSED_LEN];
    let page = Page::from(&core::array::from_fn::<u8, PAGE_SIZE, _>(|i| value.to_le_bytes()[i % 4]));
    let n = WKDM.with_borrow_mut(|c| c.compress(&page, &mut small)).expect("a uniform page compresses");
    let index_area = u32::from_le_bytes(small[..4].try_into().expect("4 bytes")) as usize * 4;
    debug_assert!(index_area < n);
    let slot = small[index_area] & 0x0F;
    let partial = value >> 10 == 0;
    let misses = usize::from(!partial);
    let hits = WORDS - misses;
    let lows = usize::from(partial);
    let h0 = 3 + TAG_WORDS + misses;
    let h1 = h0 + hits.div_ceil(8);
    let h2 = h1 + lows;
    let mut words = Vec::with_capacity(h2);
    words.extend([h0 as u32, h1 as u32, h2 as u32]);
    // Tags: EXACT (3) everywhere but word 0 (PARTIAL 1 or MISS 2): byte 0, bits 0-1.
    let first_tag = if partial { 1 } else { 2 };
    words.push(0xFFFF_FFFC | first_tag);
    words.extend(std::iter::repeat_n(0xFFFF_FFFFu32, TAG_WORDS - 1));
    if !partial {
        words.push(value);
    }
    let nibbles = u32::from(slot) * 0x1111_1111;
    words.extend(std::iter::repeat_n(nibbles, hits / 8));
    if hits % 8 != 0 {
        // Indices k < hits % 8 (byte k % 4, nibble k / 4); the rest are zero padding.
        let mut last = 0u32;
        for k in 0..hits % 8 {
            last |= u32::from(slot) << (8 * (k % 4) + 4 * (k / 4));
        }
        words.push(last);
    }
    if partial {
        words.push(value & 0x3FF);
    }
    for (i, w) in words.iter().enumerate() {
        out[4 * i..4 * i + 4].copy_from_slice(&w.to_le_bytes());
    }
    4 * words.len()
}

/// Decompresses a WKdm stream (normal or sparse form) into a page of `page_size` bytes
/// (4096 or 16384).
#[pyfunction]
#[pyo3(signature = (stream, page_size = 4096))]
fn wkdm_decompress<'py>(py: Python<'py>, stream: &[u8], page_size: usize) -> PyResult<Bound<'py, PyBytes>> {
    if page_size != PAGE_SIZE && page_size != 16384 {
        return Err(PyValueError::new_err(format!("page_size must be 4096 or 16384, not {page_size}")));
    }
    // Decoded straight into the new `bytes` object (the decoder takes any alignment).
    PyBytes::new_with(py, page_size, |page| {
        let result = if let Ok(page) = <&mut [u8; PAGE_SIZE]>::try_from(&mut *page) {
            WKDM.with_borrow_mut(|c| c.decompress_page(stream, page))
        } else {
            let page: &mut [u8; 16384] = page.try_into().expect("length checked");
            WKDM16K.with_borrow_mut(|c| c.decompress_page(stream, page))
        };
        result.map_err(|e| DecompressError::new_err(e.to_string()))
    })
}

fn lzo_compress_with<'py>(py: Python<'py>, data: &[u8], rle: bool) -> PyResult<Bound<'py, PyBytes>> {
    let len = lzokit::max_compressed_len(data.len());
    if data.len() == PAGE_SIZE {
        let page = page_of(data)?;
        if rle {
            with_out(py, len, |out| LZO_RLE.with_borrow_mut(|c| c.compress(&page, out)))
        } else {
            with_out(py, len, |out| LZO.with_borrow_mut(|c| c.compress(&page, out)))
        }
    } else {
        with_out(py, len, |out| {
            LZO_ANY.with_borrow_mut(|c| if rle { c.compress_rle(data, out) } else { c.compress(data, out) })
        })
    }
}

fn lzo_decompress_with<'py>(py: Python<'py>, stream: &[u8], size: usize) -> PyResult<Bound<'py, PyBytes>> {
    if size > MAX_LZO_OUTPUT {
        return Err(PyValueError::new_err(format!(
            "size {size} is above the limit of {MAX_LZO_OUTPUT} bytes"
        )));
    }
    PyBytes::new_with(py, size, |out| match lzokit::decompress(stream, out) {
        Ok(n) if n == size => Ok(()),
        Ok(n) => Err(DecompressError::new_err(format!("the stream decodes to {n} bytes, not {size}"))),
        Err(e) => Err(DecompressError::new_err(format!("{e} (liblzo2 code {})", e.code()))),
    })
}

/// Compresses `data` as LZO1X: a 4096-byte page with the page-tuned compressor, any other
/// length with the Linux kernel's `lzo1x_1_compress` (same bytes).
#[pyfunction]
fn lzo_compress<'py>(py: Python<'py>, data: &[u8]) -> PyResult<Bound<'py, PyBytes>> {
    lzo_compress_with(py, data, false)
}

/// Compresses `data` as LZO-RLE, byte-identical to the kernel's `lzorle1x_1_compress`.
#[pyfunction]
fn lzo_rle_compress<'py>(py: Python<'py>, data: &[u8]) -> PyResult<Bound<'py, PyBytes>> {
    lzo_compress_with(py, data, true)
}

/// Compresses a 4096-byte `page` as LZO1X with the fast level (`lzokit::Lzo1xFast`).
#[pyfunction]
fn lzo_fast_compress<'py>(py: Python<'py>, page: &[u8]) -> PyResult<Bound<'py, PyBytes>> {
    let page = page_of(page)?;
    with_out(py, lzokit::max_compressed_len(PAGE_SIZE), |out| {
        LZO_FAST.with_borrow_mut(|c| c.compress(&page, out))
    })
}

/// Decompresses an LZO1X or LZO-RLE stream that must decode to exactly `size` bytes.
#[pyfunction]
#[pyo3(signature = (stream, size = 4096))]
fn lzo_decompress<'py>(py: Python<'py>, stream: &[u8], size: usize) -> PyResult<Bound<'py, PyBytes>> {
    lzo_decompress_with(py, stream, size)
}

/// The x86_64 time-stamp counter (fenced), or nanoseconds elsewhere: for timing calls.
#[pyfunction]
fn _ticks() -> u64 {
    ticks()
}

fn ticks() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: `lfence` needs SSE2 and `rdtsc` nothing, both in the x86_64 baseline;
        // neither touches memory.
        unsafe {
            core::arch::x86_64::_mm_lfence();
            let t = core::arch::x86_64::_rdtsc();
            core::arch::x86_64::_mm_lfence();
            t
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        use std::sync::OnceLock;
        static EPOCH: OnceLock<std::time::Instant> = OnceLock::new();
        EPOCH.get_or_init(std::time::Instant::now).elapsed().as_nanos() as u64
    }
}

/// Times the Rust calls (no Python in between) on `pages` (a multiple of 4096 bytes) with
/// codec `name`: the median over pages of each page's minimum of 5 calls, as
/// `(pages, compress ticks, decompress ticks)`.
#[pyfunction]
fn _rust_ticks(name: &str, pages: &[u8]) -> PyResult<(usize, u64, u64)> {
    let mut wkdm_codec;
    let mut lzo;
    let mut rle;
    let codec: &mut dyn PageCodec = match name {
        "wkdm" => {
            wkdm_codec = thorough(Wkdm::new());
            &mut wkdm_codec
        }
        "lzo" => {
            lzo = lzokit::Lzo1x::default();
            &mut lzo
        }
        "lzo-rle" => {
            rle = lzokit::LzoRle::default();
            &mut rle
        }
        other => return Err(PyValueError::new_err(format!("no codec {other:?}"))),
    };
    let mut out = vec![0u8; codec.max_compressed_len()];
    let mut back = Page::zeroed();
    let (mut ct, mut dt) = (Vec::new(), Vec::new());
    for bytes in pages.chunks_exact(PAGE_SIZE) {
        let page = page_of(bytes)?;
        let (mut best_c, mut best_d) = (u64::MAX, u64::MAX);
        for _ in 0..5 {
            let t0 = ticks();
            let n = codec.compress(std::hint::black_box(&page), &mut out);
            let t1 = ticks();
            let n = n.map_err(|e| PyValueError::new_err(e.to_string()))?;
            let d = codec.decompress(std::hint::black_box(&out[..n]), &mut back);
            let t2 = ticks();
            d.map_err(|e| DecompressError::new_err(e.to_string()))?;
            best_c = best_c.min(t1 - t0);
            best_d = best_d.min(t2 - t1);
        }
        ct.push(best_c);
        dt.push(best_d);
    }
    if ct.is_empty() {
        return Err(PyValueError::new_err("no pages"));
    }
    ct.sort_unstable();
    dt.sort_unstable();
    Ok((ct.len(), ct[ct.len() / 2], dt[dt.len() / 2]))
}

/// The native module.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("DecompressError", m.py().get_type::<DecompressError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("WKDM_MAX_COMPRESSED_LEN", Wkdm::MAX_COMPRESSED_LEN)?;
    m.add("WKDM16K_MAX_COMPRESSED_LEN", Wkdm16K::MAX_COMPRESSED_LEN)?;
    m.add_function(wrap_pyfunction!(wkdm_compress, m)?)?;
    m.add_function(wrap_pyfunction!(wkdm_decompress, m)?)?;
    m.add_function(wrap_pyfunction!(lzo_compress, m)?)?;
    m.add_function(wrap_pyfunction!(lzo_rle_compress, m)?)?;
    m.add_function(wrap_pyfunction!(lzo_fast_compress, m)?)?;
    m.add_function(wrap_pyfunction!(lzo_decompress, m)?)?;
    m.add_function(wrap_pyfunction!(_ticks, m)?)?;
    m.add_function(wrap_pyfunction!(_rust_ticks, m)?)?;
    Ok(())
}
