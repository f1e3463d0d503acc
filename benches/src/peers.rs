//! The codecs a user would pick instead of ours, behind [`PageCodec`].
//!
//! Each adapter keeps the peer's working memory in the value where the peer's API allows
//! it, so the timed call is the peer's own work. Where an API cannot honour a budget
//! (liblzo2 and the `lzo1x` crate always write up to their worst case, lz4_flex refuses
//! any buffer shorter than its worst case), the adapter
//! compresses into scratch room of worst-case size and copies only when the result fits;
//! the benchmark always passes a worst-case budget, so no copy is timed there.
//!
//! | name | what | built from |
//! |---|---|---|
//! | `lz4_flex` | pure-Rust LZ4 block, its default safe encoder and checked decoder | crates.io `lz4_flex` |
//! | `lz4` | C LZ4 `LZ4_compress_default` / `LZ4_decompress_safe` | C sources in `lz4-sys` |
//! | `zstd-1` | C zstd level 1, one reused context each way | C sources in `zstd-sys` |
//! | `liblzo2` | C `lzo1x_1_compress` / `lzo1x_decompress_safe` | miniLZO 2.10 in `minilzo-rs` |
//! | `lzo1x-rs` | the pure-Rust `lzo1x` crate (level 3 = LZO1X-1(14); allocates a `Vec` per call) | crates.io `lzo1x` |

use std::os::raw::{c_char, c_int, c_ulong, c_void};

use pagecodec::{CompressError, DecompressError, PAGE_SIZE, Page, PageCodec};

/// LZ4's worst case for a 4 KiB input: n + n/255 + 16.
const LZ4_WORST: usize = PAGE_SIZE + PAGE_SIZE / 255 + 16;
/// LZO1X's worst case for a 4 KiB input: n + n/16 + 64 + 3.
pub const LZO_WORST: usize = PAGE_SIZE + PAGE_SIZE / 16 + 64 + 3;

/// Every peer, freshly constructed, in table order.
pub fn all() -> Vec<Box<dyn PageCodec>> {
    vec![
        Box::new(Lz4Flex::default()),
        Box::new(CLz4),
        Box::new(Zstd1::new()),
        Box::new(LibLzo::default()),
        Box::new(Lzo1xCrate),
    ]
}

/// lz4_flex refuses any output buffer shorter than this, whatever the input.
const LZ4_FLEX_WORST: usize = lz4_flex::block::get_maximum_output_size(PAGE_SIZE);

/// `lz4_flex` block format with a reused hash table.
pub struct Lz4Flex {
    table: lz4_flex::block::CompressTable,
    scratch: Box<[u8; LZ4_FLEX_WORST]>,
}

impl Default for Lz4Flex {
    fn default() -> Self {
        Lz4Flex { table: lz4_flex::block::CompressTable::small(), scratch: Box::new([0; LZ4_FLEX_WORST]) }
    }
}

impl PageCodec for Lz4Flex {
    fn name(&self) -> &'static str {
        "lz4_flex"
    }
    fn max_compressed_len(&self) -> usize {
        LZ4_FLEX_WORST
    }
    fn compress(&mut self, page: &Page, out: &mut [u8]) -> Result<usize, CompressError> {
        let fail = |_| CompressError::Incompressible;
        if out.len() >= LZ4_FLEX_WORST {
            return lz4_flex::block::compress_into_with_table(page.as_bytes(), out, &mut self.table)
                .map_err(fail);
        }
        let n = lz4_flex::block::compress_into_with_table(
            page.as_bytes(),
            &mut self.scratch[..],
            &mut self.table,
        )
        .map_err(fail)?;
        out.get_mut(..n).ok_or(CompressError::Incompressible)?.copy_from_slice(&self.scratch[..n]);
        Ok(n)
    }
    fn decompress(&mut self, input: &[u8], page: &mut Page) -> Result<(), DecompressError> {
        match lz4_flex::block::decompress_into(input, page.as_bytes_mut()) {
            Ok(PAGE_SIZE) => Ok(()),
            Ok(_) => Err(DecompressError::WrongLength),
            Err(_) => Err(DecompressError::corrupt("lz4_flex rejected the block")),
        }
    }
}

/// C LZ4 (`LZ4_compress_default`, `LZ4_decompress_safe`).
#[derive(Clone, Copy, Debug, Default)]
pub struct CLz4;

impl PageCodec for CLz4 {
    fn name(&self) -> &'static str {
        "lz4"
    }
    fn max_compressed_len(&self) -> usize {
        LZ4_WORST
    }
    fn compress(&mut self, page: &Page, out: &mut [u8]) -> Result<usize, CompressError> {
        let budget = c_int::try_from(out.len()).unwrap_or(c_int::MAX);
        // SAFETY: the source is the page's 4096 readable bytes; LZ4 writes at most
        // `budget <= out.len()` bytes to `out` and returns 0 when the block does not fit.
        let n = unsafe {
            lz4_sys::LZ4_compress_default(
                page.as_bytes().as_ptr().cast::<c_char>(),
                out.as_mut_ptr().cast::<c_char>(),
                PAGE_SIZE as c_int,
                budget,
            )
        };
        if n <= 0 { Err(CompressError::Incompressible) } else { Ok(n as usize) }
    }
    fn decompress(&mut self, input: &[u8], page: &mut Page) -> Result<(), DecompressError> {
        let len = c_int::try_from(input.len()).map_err(|_| DecompressError::TrailingInput)?;
        // SAFETY: `LZ4_decompress_safe` reads at most `len` bytes of `input` and writes at
        // most 4096 bytes, the page's size, whatever the stream says.
        let n = unsafe {
            lz4_sys::LZ4_decompress_safe(
                input.as_ptr().cast::<c_char>(),
                page.as_bytes_mut().as_mut_ptr().cast::<c_char>(),
                len,
                PAGE_SIZE as c_int,
            )
        };
        match n {
            n if n < 0 => Err(DecompressError::corrupt("LZ4_decompress_safe failed")),
            n if n as usize == PAGE_SIZE => Ok(()),
            _ => Err(DecompressError::WrongLength),
        }
    }
}

/// C zstd level 1 (what zram's zstd users mostly pick for speed): the family's zstd adapter
/// at that level, under the peer's name.
pub struct Zstd1(pagecodec_adapters::Zstd);

impl Zstd1 {
    /// # Panics
    ///
    /// If zstd cannot allocate its contexts.
    pub fn new() -> Zstd1 {
        Zstd1(pagecodec_adapters::Zstd::with_level(1).expect("zstd contexts"))
    }
}

impl Default for Zstd1 {
    fn default() -> Self {
        Zstd1::new()
    }
}

impl PageCodec for Zstd1 {
    fn name(&self) -> &'static str {
        "zstd-1"
    }
    fn max_compressed_len(&self) -> usize {
        self.0.max_compressed_len()
    }
    fn compress(&mut self, page: &Page, out: &mut [u8]) -> Result<usize, CompressError> {
        self.0.compress(page, out)
    }
    fn decompress(&mut self, input: &[u8], page: &mut Page) -> Result<(), DecompressError> {
        self.0.decompress(input, page)
    }
}

use crate::liblzo2_ffi::{self, LZO1X_1_MEM_COMPRESS, lzo_version, lzo1x_1_compress, lzo1x_decompress_safe};

/// C liblzo2 `lzo1x_1_compress` / `lzo1x_decompress_safe` (miniLZO, same code).
pub struct LibLzo {
    wrkmem: Box<[u64]>,
    scratch: Box<[u8; LZO_WORST]>,
}

impl Default for LibLzo {
    fn default() -> Self {
        liblzo2_ffi::link();
        LibLzo {
            wrkmem: vec![0u64; LZO1X_1_MEM_COMPRESS / 8].into_boxed_slice(),
            scratch: Box::new([0; LZO_WORST]),
        }
    }
}

impl LibLzo {
    /// The library's version as `major.minor` (e.g. "2.10").
    pub fn version() -> String {
        liblzo2_ffi::link();
        // SAFETY: `lzo_version` takes no arguments and returns a constant.
        let v = unsafe { lzo_version() };
        format!("{}.{:02}", v >> 12, (v >> 4) & 0xff)
    }

    fn compress_into(&mut self, page: &Page, dst: *mut u8) -> usize {
        let mut dst_len: c_ulong = 0;
        // SAFETY: the caller gives `dst` room for LZO_WORST bytes, the most lzo1x_1 writes
        // for 4096 input bytes; `wrkmem` is LZO1X_1_MEM_COMPRESS bytes, 8-byte aligned.
        let rc = unsafe {
            lzo1x_1_compress(
                page.as_bytes().as_ptr(),
                PAGE_SIZE as c_ulong,
                dst,
                &mut dst_len,
                self.wrkmem.as_mut_ptr().cast::<c_void>(),
            )
        };
        assert_eq!(rc, 0, "lzo1x_1_compress cannot fail with a worst-case buffer");
        dst_len as usize
    }
}

impl PageCodec for LibLzo {
    fn name(&self) -> &'static str {
        "liblzo2"
    }
    fn max_compressed_len(&self) -> usize {
        LZO_WORST
    }
    fn compress(&mut self, page: &Page, out: &mut [u8]) -> Result<usize, CompressError> {
        if out.len() >= LZO_WORST {
            return Ok(self.compress_into(page, out.as_mut_ptr()));
        }
        let scratch = self.scratch.as_mut_ptr();
        let n = self.compress_into(page, scratch);
        let dst = out.get_mut(..n).ok_or(CompressError::Incompressible)?;
        dst.copy_from_slice(&self.scratch[..n]);
        Ok(n)
    }
    fn decompress(&mut self, input: &[u8], page: &mut Page) -> Result<(), DecompressError> {
        let mut dst_len = PAGE_SIZE as c_ulong;
        // SAFETY: the safe decoder reads at most `input.len()` bytes and writes at most
        // `dst_len` = 4096 bytes into the page; it needs no work memory.
        let rc = unsafe {
            lzo1x_decompress_safe(
                input.as_ptr(),
                input.len() as c_ulong,
                page.as_bytes_mut().as_mut_ptr(),
                &mut dst_len,
                std::ptr::null_mut(),
            )
        };
        match rc {
            0 if dst_len as usize == PAGE_SIZE => Ok(()),
            0 | -5 => Err(DecompressError::WrongLength),
            -4 => Err(DecompressError::Truncated),
            -8 => Err(DecompressError::TrailingInput),
            -6 => Err(DecompressError::corrupt("lzo: look-behind overrun")),
            -7 => Err(DecompressError::corrupt("lzo: end of stream not found")),
            _ => Err(DecompressError::corrupt("lzo: error")),
        }
    }
}

/// The pure-Rust `lzo1x` crate at its default level (LZO1X-1 with a 2^14 dictionary).
#[derive(Clone, Copy, Debug, Default)]
pub struct Lzo1xCrate;

impl PageCodec for Lzo1xCrate {
    fn name(&self) -> &'static str {
        "lzo1x-rs"
    }
    fn max_compressed_len(&self) -> usize {
        LZO_WORST
    }
    fn compress(&mut self, page: &Page, out: &mut [u8]) -> Result<usize, CompressError> {
        // The crate's only compress API returns a fresh `Vec`: its allocation is part of
        // what a user of the crate pays, so it stays inside the timed call.
        let stream = lzo1x::compress(page.as_bytes(), lzo1x::CompressLevel::default());
        let dst = out.get_mut(..stream.len()).ok_or(CompressError::Incompressible)?;
        dst.copy_from_slice(&stream);
        Ok(stream.len())
    }
    fn decompress(&mut self, input: &[u8], page: &mut Page) -> Result<(), DecompressError> {
        lzo1x::decompress(input, page.as_bytes_mut())
            .map_err(|_| DecompressError::corrupt("lzo1x crate rejected the stream"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pagecodec::testing::{PageClass, generate};

    /// The peers hold to the round-trip and budget parts of the contract on every class.
    #[test]
    fn every_peer_round_trips_every_page_class() {
        for mut codec in all() {
            let mut out = vec![0u8; codec.max_compressed_len()];
            for class in PageClass::ALL {
                for seed in 0..3 {
                    let page = generate(class, seed);
                    let n =
                        codec.compress(&page, &mut out).unwrap_or_else(|e| panic!("{}: {e}", codec.name()));
                    let mut back = Page::filled(0xEE);
                    codec.decompress(&out[..n], &mut back).unwrap();
                    assert_eq!(back, page, "{} on {}", codec.name(), class.name());
                    // A budget one byte short of the stream is refused, never overrun.
                    let mut short = vec![0u8; n - 1];
                    assert_eq!(codec.compress(&page, &mut short), Err(CompressError::Incompressible));
                }
            }
            // Damaged streams are errors, not panics.
            let mut back = Page::zeroed();
            assert!(codec.decompress(&[], &mut back).is_err(), "{}", codec.name());
            assert!(codec.decompress(&[0xFF; 7], &mut back).is_err(), "{}", codec.name());
        }
    }

    #[test]
    fn liblzo_reports_its_version() {
        assert!(LibLzo::version().starts_with("2."), "{}", LibLzo::version());
    }
}
