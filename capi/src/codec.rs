//! The codecs by name: `pc_codec_*`.

use core::ffi::{CStr, c_char};
use core::slice;

use pagecodec::{CompressError, PAGE_SIZE, Page, PageCodec};
use pagestore::SendCodec;
use wkdm::{Compressed, Wkdm, Wkdm16K};

use crate::error::{Error, PcStatus, decompress_error, guard, guard_value};

/// Bytes in a 16 KiB page (`wkdm16k`).
const PAGE_16K: usize = 16384;

/// How a codec is driven.
enum Kind {
    /// A 4 KiB codec through `PageCodec`.
    Page(Box<dyn PageCodec + Send>),
    /// An LZO codec through `PageCodec`, decoded with `lzokit::decompress` directly so that
    /// errors keep liblzo2's detail.
    Lzo(Box<dyn PageCodec + Send>),
    /// WKdm on 16 KiB pages, with a page buffer for encoding uniform pages.
    Wkdm16K(Box<Wkdm16K>, Box<[u8; PAGE_16K]>),
}

/// One entry of the codec table.
pub(crate) struct CodecInfo {
    /// The name callers pass to `pc_codec_create` and `pc_store_create`.
    pub(crate) name: &'static CStr,
    /// Bytes in the codec's page.
    page_size: usize,
    /// The largest stream the codec writes.
    max_len: usize,
    /// A new codec value (own working memory).
    make: fn() -> Result<Kind, Error>,
    /// The codec as the page store takes it; `None` when the store cannot use it (pages
    /// other than 4 KiB).
    pub(crate) store: Option<fn() -> SendCodec>,
}

/// Every codec the library offers, in the order `pc_codec_name_at` lists them.
///
/// Adding a codec is one entry here (and its name in the header's list and `SPEC.md`). The
/// names are the codecs' own `PageCodec::name`, which the store's per-codec statistics use.
pub(crate) static CODECS: &[CodecInfo] = &[
    CodecInfo {
        name: c"wkdm",
        page_size: PAGE_SIZE,
        max_len: Wkdm::MAX_COMPRESSED_LEN,
        make: || Ok(Kind::Page(Box::new(Wkdm::new()))),
        store: Some(|| Box::new(Wkdm::new())),
    },
    CodecInfo {
        name: c"wkdm16k",
        page_size: PAGE_16K,
        max_len: Wkdm16K::MAX_COMPRESSED_LEN,
        make: || Ok(Kind::Wkdm16K(Box::new(Wkdm16K::new()), Box::new([0; PAGE_16K]))),
        store: None,
    },
    CodecInfo {
        name: c"lzo",
        page_size: PAGE_SIZE,
        max_len: lzokit::max_compressed_len(PAGE_SIZE),
        make: || Ok(Kind::Lzo(Box::new(lzokit::Lzo1x::default()))),
        store: Some(|| Box::new(lzokit::Lzo1x::default())),
    },
    CodecInfo {
        name: c"lzo-fast",
        page_size: PAGE_SIZE,
        max_len: lzokit::max_compressed_len(PAGE_SIZE),
        make: || Ok(Kind::Lzo(Box::new(lzokit::Lzo1xFast::default()))),
        store: Some(|| Box::new(lzokit::Lzo1xFast::default())),
    },
    CodecInfo {
        name: c"lzo-rle",
        page_size: PAGE_SIZE,
        max_len: lzokit::max_compressed_len(PAGE_SIZE),
        make: || Ok(Kind::Lzo(Box::new(lzokit::LzoRle::default()))),
        store: Some(|| Box::new(lzokit::LzoRle::default())),
    },
    #[cfg(feature = "lz4")]
    CodecInfo {
        name: c"lz4-page",
        page_size: PAGE_SIZE,
        max_len: pagecodec_adapters::Lz4::MAX_COMPRESSED_LEN,
        make: || Ok(Kind::Page(Box::new(pagecodec_adapters::Lz4::new()))),
        store: Some(|| Box::new(pagecodec_adapters::Lz4::new())),
    },
    #[cfg(feature = "zstd")]
    CodecInfo {
        name: c"zstd",
        page_size: PAGE_SIZE,
        max_len: pagecodec_adapters::Zstd::MAX_COMPRESSED_LEN,
        make: || {
            let codec = pagecodec_adapters::Zstd::new()
                .map_err(|e| Error::new(PcStatus::PC_ERR_OUT_OF_MEMORY, format!("{e}")))?;
            Ok(Kind::Page(Box::new(codec)))
        },
        // zstd fails to make its contexts only when memory is exhausted, where every other
        // allocation of the store aborts the process as well.
        store: Some(|| Box::new(pagecodec_adapters::Zstd::new().expect("zstd contexts"))),
    },
];

/// The table entry named by the C string `name`.
///
/// # Safety
///
/// `name` is NULL or points to a NUL-terminated string.
pub(crate) unsafe fn lookup(name: *const c_char) -> Result<&'static CodecInfo, Error> {
    if name.is_null() {
        return Err(Error::null("name"));
    }
    // SAFETY: non-NULL, and the caller guarantees a NUL-terminated string.
    let name = unsafe { CStr::from_ptr(name) };
    CODECS.iter().find(|c| c.name == name).ok_or_else(|| {
        Error::new(PcStatus::PC_ERR_UNKNOWN_CODEC, format!("no codec is named {:?}", name.to_string_lossy()))
    })
}

/// A codec value: `pc_codec` in C, opaque. Made by `pc_codec_create`, freed by
/// `pc_codec_destroy`.
pub struct PcCodec {
    info: &'static CodecInfo,
    kind: Kind,
}

/// The checks every caller buffer passes before it is viewed: not NULL, and a length a Rust
/// slice can have.
fn check_buffer(is_null: bool, len: usize, what: &str) -> Result<(), Error> {
    if is_null {
        return Err(Error::null(what));
    }
    if len > isize::MAX as usize {
        return Err(Error::new(
            PcStatus::PC_ERR_INVALID_ARGUMENT,
            format!("`{what}` length {len} is too large"),
        ));
    }
    Ok(())
}

/// A checked view of a caller's read-only buffer.
///
/// # Safety
///
/// `ptr` is NULL or valid for reads of `len` bytes for `'a`.
unsafe fn input<'a>(ptr: *const u8, len: usize, what: &str) -> Result<&'a [u8], Error> {
    check_buffer(ptr.is_null(), len, what)?;
    // SAFETY: non-NULL, length at most `isize::MAX`, and the caller guarantees `len`
    // readable bytes that nothing writes for `'a`.
    Ok(unsafe { slice::from_raw_parts(ptr, len) })
}

/// A checked view of a caller's writable buffer.
///
/// # Safety
///
/// `ptr` is NULL or valid for reads and writes of `len` bytes for `'a`, not aliased.
unsafe fn output<'a>(ptr: *mut u8, len: usize, what: &str) -> Result<&'a mut [u8], Error> {
    check_buffer(ptr.is_null(), len, what)?;
    // SAFETY: non-NULL, length at most `isize::MAX`, and the caller guarantees `len`
    // writable bytes that nothing else accesses for `'a`.
    Ok(unsafe { slice::from_raw_parts_mut(ptr, len) })
}

/// `PC_ERR_PAGE_SIZE` unless `len == expected`.
pub(crate) fn check_page_len(len: usize, expected: usize) -> Result<(), Error> {
    if len == expected {
        Ok(())
    } else {
        Err(Error::new(
            PcStatus::PC_ERR_PAGE_SIZE,
            format!("page buffer is {len} bytes; this codec's page is {expected} bytes"),
        ))
    }
}

/// Runs `f` on the caller's 4 KiB page: in place when it is 64-byte aligned, else on an
/// aligned copy.
pub(crate) fn with_page<R>(bytes: &[u8], f: impl FnOnce(&Page) -> R) -> R {
    debug_assert_eq!(bytes.len(), PAGE_SIZE);
    if bytes.as_ptr().align_offset(align_of::<Page>()) == 0 && bytes.len() == PAGE_SIZE {
        // SAFETY: `Page` is `repr(C, align(64))` around `[u8; 4096]` with no padding; the
        // pointer is 64-byte aligned and valid for 4096 bytes, every byte pattern is a
        // valid page, and the shared borrow of `bytes` covers the view's lifetime.
        f(unsafe { &*bytes.as_ptr().cast::<Page>() })
    } else {
        let mut page = Page::zeroed();
        page.as_bytes_mut().copy_from_slice(&bytes[..PAGE_SIZE]);
        f(&page)
    }
}

/// Runs `f` on the caller's writable 4 KiB page: in place when it is 64-byte aligned, else
/// on an aligned page copied out afterwards (also after an error).
pub(crate) fn with_page_mut<R>(bytes: &mut [u8], f: impl FnOnce(&mut Page) -> R) -> R {
    debug_assert_eq!(bytes.len(), PAGE_SIZE);
    if bytes.as_ptr().align_offset(align_of::<Page>()) == 0 && bytes.len() == PAGE_SIZE {
        // SAFETY: as in `with_page`; the exclusive borrow of `bytes` makes the view unique,
        // and any bytes written are valid `u8`s.
        f(unsafe { &mut *bytes.as_mut_ptr().cast::<Page>() })
    } else {
        let mut page = Page::zeroed();
        let result = f(&mut page);
        bytes[..PAGE_SIZE].copy_from_slice(page.as_bytes());
        result
    }
}

fn incompressible(budget: usize) -> Error {
    Error::new(PcStatus::PC_ERR_INCOMPRESSIBLE, format!("the page's stream does not fit in {budget} bytes"))
}

/// Compresses a uniform 16 KiB page (every u32 word `value`), which XNU's compressor reports
/// instead of encoding: the zero page as the empty sparse form, any other value as the
/// normal form the compressor writes when it does not report (one MISS or PARTIAL, then
/// EXACT hits), built by compressing the page with its last word zeroed (the same stream
/// but for that word's tag and index) and patching those two fields.
fn wkdm16k_uniform(
    codec: &mut Wkdm16K,
    scratch: &mut [u8; PAGE_16K],
    value: u32,
    out: &mut [u8],
) -> Result<usize, CompressError> {
    const WORDS: usize = PAGE_16K / 4;
    if value == 0 {
        let stream = 0x4321u32.to_le_bytes();
        out.get_mut(..4).ok_or(CompressError::Incompressible)?.copy_from_slice(&stream);
        return Ok(4);
    }
    for word in scratch.chunks_exact_mut(4) {
        word.copy_from_slice(&value.to_le_bytes());
    }
    scratch[PAGE_16K - 4..].fill(0);
    let n = match codec.compress_page(scratch, out)? {
        Compressed::Stream(n) => n,
        Compressed::Zero | Compressed::SingleValue(_) => return Err(CompressError::Incompressible),
    };
    let word = |i: usize| u32::from_le_bytes([out[4 * i], out[4 * i + 1], out[4 * i + 2], out[4 * i + 3]]);
    let index_area = word(0) as usize * 4;
    // The words with an index before the last: all but the zero one (word 0's PARTIAL, when
    // its value has no high bits, has one too).
    let (misses, hits) = if value >> 10 == 0 { (0, WORDS - 1) } else { (1, WORDS - 2) };
    if n < 12 || index_area != 12 + WORDS / 4 + 4 * misses || index_area + hits / 2 >= n {
        // Not the layout this function knows: refuse rather than write a wrong stream.
        return Err(CompressError::Incompressible);
    }
    let slot = out[index_area] & 0x0F;
    // Tag of the last word: tag word WORDS / 16 - 1, tag 15 (byte 3, bits 6-7) = EXACT (3).
    out[12 + WORDS / 4 - 1] |= 0xC0;
    // Index number `hits` (0-based): word hits / 8, byte (hits % 8) % 4, nibble (hits % 8) / 4.
    let k = hits % 8;
    let byte = index_area + 4 * (hits / 8) + k % 4;
    out[byte] |= slot << (4 * (k / 4));
    Ok(n)
}

impl PcCodec {
    fn compress(&mut self, page: &[u8], out: &mut [u8]) -> Result<usize, CompressError> {
        match &mut self.kind {
            Kind::Page(codec) | Kind::Lzo(codec) => with_page(page, |p| codec.compress(p, out)),
            Kind::Wkdm16K(codec, scratch) => {
                let page: &[u8; PAGE_16K] = page.try_into().map_err(|_| CompressError::Incompressible)?;
                match codec.compress_page(page, out)? {
                    Compressed::Stream(n) => Ok(n),
                    Compressed::Zero => wkdm16k_uniform(codec, scratch, 0, out),
                    Compressed::SingleValue(v) => wkdm16k_uniform(codec, scratch, v, out),
                }
            }
        }
    }

    fn decompress(&mut self, stream: &[u8], page: &mut [u8]) -> Result<(), Error> {
        let result = match &mut self.kind {
            Kind::Page(codec) => with_page_mut(page, |p| codec.decompress(stream, p))
                .map_err(|e| decompress_error(e, e.to_string())),
            Kind::Lzo(_) => match lzokit::decompress(stream, page) {
                Ok(PAGE_SIZE) => Ok(()),
                Ok(n) => Err(Error::new(
                    PcStatus::PC_ERR_WRONG_LENGTH,
                    format!("LZO stream decodes to {n} bytes, not one page of {PAGE_SIZE}"),
                )),
                Err(e) => Err(decompress_error(e.into(), format!("{e} (liblzo2 code {})", e.code()))),
            },
            Kind::Wkdm16K(codec, _) => {
                let page: &mut [u8; PAGE_16K] =
                    page.try_into().map_err(|_| Error::plain(PcStatus::PC_ERR_PAGE_SIZE))?;
                codec.decompress_page(stream, page).map_err(|e| decompress_error(e, e.to_string()))
            }
        };
        if result.is_err() {
            // No partial or stale page is ever visible to the caller.
            page.fill(0);
        }
        result
    }
}

/// The number of codecs the library offers.
///
/// Thread-safe.
#[unsafe(no_mangle)]
pub extern "C" fn pc_codec_count() -> usize {
    CODECS.len()
}

/// The name of codec `index` (`0 <= index < pc_codec_count()`): a static NUL-terminated
/// string, never freed; NULL past the end.
///
/// Thread-safe.
#[unsafe(no_mangle)]
pub extern "C" fn pc_codec_name_at(index: usize) -> *const c_char {
    CODECS.get(index).map_or(core::ptr::null(), |c| c.name.as_ptr())
}

/// Makes the codec named `name` and stores it in `*codec`; free it with
/// `pc_codec_destroy`.
///
/// Errors: `PC_ERR_NULL_POINTER`, `PC_ERR_UNKNOWN_CODEC` (`*codec` is left untouched).
/// Thread-safe.
///
/// # Safety
///
/// `name` is NULL or a NUL-terminated string; `codec` is NULL or valid for writing a
/// pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pc_codec_create(name: *const c_char, codec: *mut *mut PcCodec) -> PcStatus {
    guard(|| {
        if codec.is_null() {
            return Err(Error::null("codec"));
        }
        // SAFETY: the caller guarantees `name` is NULL or NUL-terminated.
        let info = unsafe { lookup(name) }?;
        let value = Box::new(PcCodec { info, kind: (info.make)()? });
        // SAFETY: `codec` is non-NULL and the caller guarantees it is writable.
        unsafe { codec.write(Box::into_raw(value)) };
        Ok(())
    })
}

/// Frees a codec made by `pc_codec_create`. NULL is ignored.
///
/// Not thread-safe for the same codec: no other call may use it at the same time or after.
///
/// # Safety
///
/// `codec` is NULL or a pointer from `pc_codec_create` not yet destroyed.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pc_codec_destroy(codec: *mut PcCodec) {
    guard_value((), || {
        if !codec.is_null() {
            // SAFETY: the caller guarantees the pointer came from `Box::into_raw` in
            // `pc_codec_create` and is freed once.
            drop(unsafe { Box::from_raw(codec) });
        }
    });
}

/// The codec's name (a static NUL-terminated string); NULL for a NULL codec.
///
/// Thread-safe (reads nothing that changes).
///
/// # Safety
///
/// `codec` is NULL or a live codec from `pc_codec_create`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pc_codec_name(codec: *const PcCodec) -> *const c_char {
    // SAFETY: the caller guarantees a NULL or live codec.
    unsafe { codec.as_ref() }.map_or(core::ptr::null(), |c| c.info.name.as_ptr())
}

/// Bytes in the codec's page: 4096, or 16384 for `wkdm16k`; 0 for a NULL codec.
///
/// Thread-safe.
///
/// # Safety
///
/// `codec` is NULL or a live codec from `pc_codec_create`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pc_codec_page_size(codec: *const PcCodec) -> usize {
    // SAFETY: the caller guarantees a NULL or live codec.
    unsafe { codec.as_ref() }.map_or(0, |c| c.info.page_size)
}

/// The largest stream the codec writes: an output buffer this long never fails for lack
/// of room (4368 for `wkdm`, 17424 for `wkdm16k`, 4421 for the LZO codecs, 4525 for
/// `lz4-page`, 4174 for `zstd`); 0 for a NULL codec.
///
/// Thread-safe.
///
/// # Safety
///
/// `codec` is NULL or a live codec from `pc_codec_create`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pc_codec_max_compressed_len(codec: *const PcCodec) -> usize {
    // SAFETY: the caller guarantees a NULL or live codec.
    unsafe { codec.as_ref() }.map_or(0, |c| c.info.max_len)
}

/// Compresses the page `page` (`page_len` bytes: the codec's page size) into `out`, whose
/// length `out_cap` is the budget, and stores the stream's length in `*out_len`.
///
/// Errors: `PC_ERR_NULL_POINTER`, `PC_ERR_PAGE_SIZE`, `PC_ERR_INCOMPRESSIBLE` (the stream
/// does not fit in `out_cap` bytes, or the codec gave up early; `out` then holds
/// unspecified bytes and `*out_len` is 0). The codec never writes past `out + out_cap`.
/// Every page has a stream with a budget of `pc_codec_max_compressed_len` (except WKdm's
/// early abort on pages that do not shrink: store those raw).
///
/// Not thread-safe for the same codec (it holds working memory); distinct codecs may be
/// used on distinct threads at once.
///
/// # Safety
///
/// `codec` is NULL or a live codec; `page` is NULL or valid for reads of `page_len` bytes;
/// `out` is NULL or valid for writes of `out_cap` bytes and does not overlap `page`;
/// `out_len` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pc_codec_compress(
    codec: *mut PcCodec,
    page: *const u8,
    page_len: usize,
    out: *mut u8,
    out_cap: usize,
    out_len: *mut usize,
) -> PcStatus {
    guard(|| {
        if out_len.is_null() {
            return Err(Error::null("out_len"));
        }
        // SAFETY: non-NULL and writable by the caller's guarantee.
        unsafe { out_len.write(0) };
        // SAFETY: the caller guarantees a NULL or live codec, used by no other thread.
        let codec = unsafe { codec.as_mut() }.ok_or_else(|| Error::null("codec"))?;
        // SAFETY: the caller guarantees `page_len` readable bytes at `page`.
        let page = unsafe { input(page, page_len, "page") }?;
        // SAFETY: the caller guarantees `out_cap` writable bytes at `out`.
        let out = unsafe { output(out, out_cap, "out") }?;
        check_page_len(page.len(), codec.info.page_size)?;
        // A budget above the largest stream changes nothing; the codec sees no more.
        let budget = out.len().min(codec.info.max_len);
        let n = codec.compress(page, &mut out[..budget]).map_err(|_| incompressible(out_cap))?;
        // SAFETY: as above.
        unsafe { out_len.write(n) };
        Ok(())
    })
}

/// Decompresses the stream `stream` (`stream_len` bytes) into the page `page` (`page_len`
/// bytes: the codec's page size), which is filled whole.
///
/// Errors: `PC_ERR_NULL_POINTER`, `PC_ERR_PAGE_SIZE` (nothing written), and for a bad
/// stream `PC_ERR_TRUNCATED`, `PC_ERR_CORRUPT`, `PC_ERR_WRONG_LENGTH` or
/// `PC_ERR_TRAILING_INPUT`, with the decoder's reason in `pc_last_error()`; after a stream
/// error the page is all zero bytes. No input makes it crash, read outside `stream` or
/// write outside `page`; its work is bounded by the input and page lengths.
///
/// Not thread-safe for the same codec; distinct codecs may be used on distinct threads at
/// once.
///
/// # Safety
///
/// `codec` is NULL or a live codec; `stream` is NULL or valid for reads of `stream_len`
/// bytes; `page` is NULL or valid for writes of `page_len` bytes and does not overlap
/// `stream`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pc_codec_decompress(
    codec: *mut PcCodec,
    stream: *const u8,
    stream_len: usize,
    page: *mut u8,
    page_len: usize,
) -> PcStatus {
    guard(|| {
        // SAFETY: the caller guarantees a NULL or live codec, used by no other thread.
        let codec = unsafe { codec.as_mut() }.ok_or_else(|| Error::null("codec"))?;
        // SAFETY: the caller guarantees `stream_len` readable bytes at `stream`.
        let stream = unsafe { input(stream, stream_len, "stream") }?;
        // SAFETY: the caller guarantees `page_len` writable bytes at `page`, apart from
        // `stream`.
        let page = unsafe { output(page, page_len, "page") }?;
        check_page_len(page.len(), codec.info.page_size)?;
        codec.decompress(stream, page)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn make(name: &CStr) -> Box<PcCodec> {
        let mut codec = core::ptr::null_mut();
        // SAFETY: a NUL-terminated name and a writable pointer.
        assert_eq!(unsafe { pc_codec_create(name.as_ptr(), &mut codec) }, PcStatus::PC_OK);
        // SAFETY: `pc_codec_create` returned a `Box::into_raw` pointer.
        unsafe { Box::from_raw(codec) }
    }

    #[test]
    fn uniform_16k_pages_round_trip() {
        let mut codec = make(c"wkdm16k");
        let mut out = vec![0u8; Wkdm16K::MAX_COMPRESSED_LEN];
        let mut back = vec![0xA5u8; PAGE_16K];
        let values = [0u32, 1, 5, 0x3FF, 0x400, 0x1234_5678, 0xFFFF_FFFF, 0x8000_0000, 0x7f00_2c00];
        for (i, value) in
            values.into_iter().chain((0..200u32).map(|i| i.wrapping_mul(0x9E37_79B9))).enumerate()
        {
            let page: Vec<u8> = (0..PAGE_16K / 4).flat_map(|_| value.to_le_bytes()).collect();
            let n = codec.compress(&page, &mut out).expect("a uniform page compresses");
            assert!(n <= 4 || n < 3200, "value {value:#x}: {n} bytes");
            codec.decompress(&out[..n], &mut back).expect("the stream decodes");
            assert_eq!(back, page, "value {value:#x} (#{i})");
            // Too small a budget is refused, never overrun.
            assert!(codec.compress(&page, &mut out[..n - 1]).is_err());
        }
    }

    #[test]
    fn uniform_4k_stream_has_the_shape_the_16k_patch_expects() {
        // The 4 KiB codec encodes uniform pages itself; its stream for a value must decode,
        // and the 16 KiB stream for the same value must carry the same slot.
        let mut small = make(c"wkdm");
        let mut large = make(c"wkdm16k");
        let value = 0xdead_beefu32;
        let page4: Vec<u8> = (0..1024).flat_map(|_| value.to_le_bytes()).collect();
        let page16: Vec<u8> = (0..4096).flat_map(|_| value.to_le_bytes()).collect();
        let mut out4 = vec![0u8; 5000];
        let mut out16 = vec![0u8; 20000];
        let n4 = small.compress(&page4, &mut out4).unwrap();
        let n16 = large.compress(&page16, &mut out16).unwrap();
        let idx = |out: &[u8]| out[u32::from_le_bytes(out[..4].try_into().unwrap()) as usize * 4] & 0xF;
        assert_eq!(idx(&out4[..n4]), idx(&out16[..n16]));
        assert_eq!(n4, 784);
    }
}
