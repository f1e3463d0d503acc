//! The LZO1X-1 compressor (the Linux kernel's `lzo1x_1` algorithm) and its LZO-RLE variant.
//!
//! The algorithm, kept step for step so that the output is byte-identical to the kernel's:
//! the input is cut into chunks of at most `M4 max distance + 1` bytes (one chunk for a
//! page); in each chunk a hash table of 2^13 `u16` positions, cleared per chunk, maps the
//! hash of 4 input bytes to the last position that had it. Scanning starts 5 bytes in;
//! on a miss the scan steps `1 + literals_since_last_match / 32` bytes (fast skip through
//! incompressible data); on a 4-byte hit the match is extended 8 bytes at a time with
//! `trailing_zeros`, the pending literals are written, then the match as M2, M3 or M4.
//! LZO-RLE additionally turns every run of 4..=2051 zero bytes at the scan position into
//! a 4-byte zero-run token. Whatever is left after the last chunk is written as literals,
//! followed by the end marker.
//!
//! Every write is checked against the output budget first: the compressor stops with
//! [`CompressError::Incompressible`] as soon as the next piece cannot fit, and a stream
//! that fits is always produced whatever the budget. While the budget has room for the
//! longest, one check covers a short literal run and the match or token after it.

use pagecodec::CompressError;

use super::output::Output;
use crate::format::{
    M3_MAX_OFFSET, M4_MAX_OFFSET_V0, M4_MAX_OFFSET_V1, MAX_ZERO_RUN, RLE_VERSION, VERSION_HEADER,
    rle_ambiguous,
};

/// log2 of the hash table's entry count (the kernel's `D_BITS`).
const DICT_BITS: u32 = 13;
/// Hash table entries: 8192 `u16` positions, 16 KiB.
const DICT_SIZE: usize = 1 << DICT_BITS;
/// Inputs (or chunk tails) this short or shorter are written as literals only.
const MIN_MATCH_INPUT: usize = 20;

/// An LZO1X-1 compressor. It owns its 16 KiB hash table, so compressing allocates nothing;
/// reuse one value for many inputs (the output never depends on earlier calls).
///
/// ```
/// use lzokit::{decompress, max_compressed_len, KernelCompressor};
///
/// let mut compressor = KernelCompressor::new();
/// let input = b"hello hello hello hello hello hello, world".repeat(20);
/// let mut stream = vec![0u8; max_compressed_len(input.len())];
/// let n = compressor.compress(&input, &mut stream)?;
/// assert!(n < input.len() / 4);
///
/// let mut back = vec![0u8; input.len()];
/// assert_eq!(decompress(&stream[..n], &mut back)?, input.len());
/// assert_eq!(back, input);
/// # Ok::<(), Box<dyn core::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct KernelCompressor {
    dict: [u16; DICT_SIZE],
}

working_memory_impls!(KernelCompressor);

/// Which bitstream the compressor writes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Format {
    /// Plain LZO1X (version 0): what liblzo2 and every LZO decoder read.
    Lzo1x,
    /// LZO-RLE (version 1): `11 01` header, zero-run tokens, M4 distances up to 0xBFFE.
    Rle,
}

impl KernelCompressor {
    /// A compressor with a cleared hash table.
    pub const fn new() -> Self {
        KernelCompressor { dict: [0; DICT_SIZE] }
    }

    /// Compresses `src` (any length) as a plain LZO1X stream into `dst`, returning the
    /// stream's length. `dst.len()` is the budget: nothing is written past it, and the call
    /// fails as soon as the stream cannot fit. A budget of
    /// [`max_compressed_len(src.len())`](crate::max_compressed_len) always suffices. The stream is
    /// byte-identical to the Linux kernel's `lzo1x_1_compress` and decodes with liblzo2.
    ///
    /// ```
    /// use lzokit::{CompressError, KernelCompressor};
    ///
    /// let mut c = KernelCompressor::new();
    /// let mut out = [0u8; 8];
    /// assert_eq!(c.compress(b"", &mut out), Ok(3)); // just the end marker
    /// assert_eq!(&out[..3], &[0x11, 0x00, 0x00]);
    /// // 64 bytes of noise cannot fit in 8 bytes: zram's early stop.
    /// let noise: Vec<u8> = (0..64u32).map(|i| (i.wrapping_mul(2654435761) >> 13) as u8).collect();
    /// assert_eq!(c.compress(&noise, &mut out), Err(CompressError::Incompressible));
    /// ```
    ///
    /// # Errors
    ///
    /// [`CompressError::Incompressible`] when the stream does not fit in `dst`; the
    /// contents of `dst` are then unspecified.
    pub fn compress(&mut self, src: &[u8], dst: &mut [u8]) -> Result<usize, CompressError> {
        self.compress_with(src, dst, Format::Lzo1x)
    }

    /// Compresses `src` as an LZO-RLE stream (Linux 5.1+, zram's `lzo-rle`), exactly as the
    /// kernel's `lzorle1x_1_compress` writes it: the `11 01` header, a 4-byte token for
    /// each run of 4..=2051 zero bytes, M4 distances up to 0xBFFE, and M4 matches of
    /// 261..=264 bytes that would look like a token shortened to 260. Budget as in
    /// [`compress`](Self::compress).
    ///
    /// ```
    /// use lzokit::{decompress, KernelCompressor};
    ///
    /// let page = [0u8; 4096];
    /// let mut out = [0u8; 64];
    /// let n = KernelCompressor::new().compress_rle(&page, &mut out)?;
    /// assert_eq!(&out[..2], &[0x11, 0x01]);
    /// let mut back = [1u8; 4096];
    /// assert_eq!(decompress(&out[..n], &mut back)?, 4096);
    /// assert_eq!(back, page);
    /// # Ok::<(), Box<dyn core::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`CompressError::Incompressible`] when the stream does not fit in `dst`.
    pub fn compress_rle(&mut self, src: &[u8], dst: &mut [u8]) -> Result<usize, CompressError> {
        self.compress_with(src, dst, Format::Rle)
    }

    /// [`compress_rle`](Self::compress_rle) for one page (`LzoRle`): the input length is a
    /// constant 4096, so the single chunk's bounds are known at compile time once this is
    /// inlined.
    #[inline]
    pub(crate) fn compress_rle_page(
        &mut self,
        page: &[u8; pagecodec::PAGE_SIZE],
        dst: &mut [u8],
    ) -> Result<usize, CompressError> {
        self.compress_with(page, dst, Format::Rle)
    }

    #[inline(always)]
    fn compress_with(&mut self, src: &[u8], dst: &mut [u8], format: Format) -> Result<usize, CompressError> {
        let mut out = Output::new(dst);
        let m4_max_offset = match format {
            Format::Lzo1x => M4_MAX_OFFSET_V0,
            Format::Rle => {
                out.put(&[VERSION_HEADER, RLE_VERSION])?;
                M4_MAX_OFFSET_V1
            }
        };
        let data_start = out.pos;
        let mut ip = 0;
        // Literals left pending at the end of the previous chunk.
        let mut pending = 0;
        while src.len() - ip > MIN_MATCH_INPUT {
            let chunk = (src.len() - ip).min(m4_max_offset + 1);
            self.dict.fill(0);
            pending = compress_chunk(&mut self.dict, src, ip, ip + chunk, pending, &mut out, format)?;
            ip += chunk;
        }
        pending += src.len() - ip;
        out.finish(&src[src.len() - pending..], data_start)
    }
}

/// The little-endian 64-bit word at `src[i..i + 8]`.
///
/// # Safety
///
/// `i + 8 <= src.len()`.
#[inline(always)]
pub(crate) unsafe fn le64(src: &[u8], i: usize) -> u64 {
    debug_assert!(i + 8 <= src.len());
    // SAFETY: the caller guarantees the 8 bytes are in bounds; unaligned reads are fine.
    u64::from_le(unsafe { src.as_ptr().add(i).cast::<u64>().read_unaligned() })
}

/// The kernel's miss step: with `lits` literals pending and no match at the probed position,
/// the next probe lies `1 + lits / 32` bytes further on, so the scan speeds up through data
/// that does not compress.
#[inline(always)]
pub(crate) const fn miss_step(lits: usize) -> usize {
    1 + (lits >> 5)
}

/// The kernel's multiplicative hash of 4 input bytes, `bits` wide.
#[inline(always)]
pub(crate) const fn hash_bits(dv: u32, bits: u32) -> usize {
    (dv.wrapping_mul(0x1824_429d) >> (32 - bits)) as usize
}

#[inline(always)]
fn hash(dv: u32) -> usize {
    hash_bits(dv, DICT_BITS)
}

/// Compresses `src[start..end]` (more than 20 bytes, at most 0xC000) with `pending`
/// literals before `start` still to be written; returns the literals left pending at the
/// end. Hash table entries are positions relative to `start`.
#[inline(always)]
fn compress_chunk(
    dict: &mut [u16; DICT_SIZE],
    src: &[u8],
    start: usize,
    end: usize,
    mut pending: usize,
    out: &mut Output<'_>,
    format: Format,
) -> Result<usize, CompressError> {
    let src = &src[..end];
    let ip_end = end - MIN_MATCH_INPUT;
    // `ii`: first byte not yet written (the pending literals before `start` excluded).
    let mut ii = start;
    // `lits`: `ip - ii`, the literals since `ii`. The miss step is computed from it rather
    // than from `ip`, which leaves three operations instead of four on the chain from one
    // probe to the next (5-7% fewer ticks on captured pages). Unlike the page compressor,
    // this loop derives `ip` from `lits` after the step: adding the step to both measured
    // 1-2% slower here (docs/perf/lzokit.md).
    let mut lits = 4usize.saturating_sub(pending);
    let mut ip;
    'literal: loop {
        lits += miss_step(lits);
        ip = ii + lits;
        'next: loop {
            if ip >= ip_end {
                break 'literal;
            }
            // Bounds for every read below: src.len() == end and ip < ip_end = end - 20;
            // candidates are earlier positions; the match extension stops reading once
            // ip + m_len >= ip_end, so it never reads past ip_end + 16 <= end; the zero
            // scan reads below its limit <= ip_end.
            // SAFETY: ip + 8 < ip_end <= end.
            let word = unsafe { le64(src, ip) };
            let dv = word as u32;
            let mut run = 0;
            let mut m_pos = 0;
            // The bytes at ip XOR those at the candidate: the low 4 decide the hit, the
            // high 4 usually give the match length without another load.
            let mut diff = 0;
            if dv == 0 && format == Format::Rle {
                let limit = ip_end.min(ip + MAX_ZERO_RUN + 1);
                let mut ir = ip + 4;
                // SAFETY: ir + 8 < limit <= end.
                while ir + 8 < limit && unsafe { le64(src, ir) } == 0 {
                    ir += 8;
                }
                while ir < limit && src[ir] == 0 {
                    ir += 1;
                }
                run = (ir - ip).min(MAX_ZERO_RUN);
            } else {
                let h = hash(dv);
                m_pos = start + usize::from(dict[h]);
                dict[h] = (ip - start) as u16;
                // SAFETY: m_pos < ip (entries hold earlier positions, or `start`).
                diff = word ^ unsafe { le64(src, m_pos) };
                if diff as u32 != 0 {
                    continue 'literal;
                }
            }

            ii -= pending;
            pending = 0;
            let t = ip - ii;
            if run > 0 {
                // SAFETY: ii + t = ip < ip_end = end - 20, so ii + t + 16 <= src.len().
                unsafe { out.literals_and_zero_run(src, ii, t, run)? };
                ip += run;
                ii = ip;
                lits = 0;
                continue 'next;
            }

            let mut m_len = 4;
            // Bytes 4..8 of the match as the low half (the high half is zero).
            let mut v = diff >> 32;
            let mut capped = false;
            if v == 0 {
                // SAFETY: ip + 12 <= ip_end - 8 < end and m_pos < ip.
                v = unsafe { le64(src, ip + m_len) ^ le64(src, m_pos + m_len) };
            }
            if v == 0 {
                loop {
                    m_len += 8;
                    // SAFETY: ip + m_len < ip_end + 8 (the previous round stopped below
                    // ip_end), so ip + m_len + 8 < end; m_pos < ip.
                    v = unsafe { le64(src, ip + m_len) ^ le64(src, m_pos + m_len) };
                    if ip + m_len >= ip_end {
                        capped = true;
                        break;
                    }
                    if v != 0 {
                        break;
                    }
                }
            }
            if !capped {
                m_len += (v.trailing_zeros() / 8) as usize;
            }

            let dist = ip - m_pos;
            if format == Format::Rle && dist > M3_MAX_OFFSET && rle_ambiguous(m_len, dist - 0x4000) {
                m_len = 260;
            }
            // SAFETY: ii + t = ip < ip_end = end - 20, so ii + t + 16 <= src.len().
            unsafe { out.literals_and_match(src, ii, t, m_len, dist)? };
            ip += m_len;
            ii = ip;
            lits = 0;
        }
    }
    Ok(end - (ii - pending))
}

#[cfg(test)]
mod tests {
    extern crate alloc;
    use alloc::vec;

    use pagecodec::testing::Rng;

    use super::*;
    use crate::compress::output::{MATCH_ROOM, SHORT_LITERALS_ROOM, ZERO_RUN_LEN};
    use crate::max_compressed_len;
    use pagecodec::PAGE_SIZE;

    #[test]
    fn a_budget_of_exactly_the_stream_length_suffices() {
        // Covers every literal-run length up to 1200, including the extension lengths
        // where (run - 18) is a multiple of 255, and long M3 extensions.
        let mut rng = Rng::new(9);
        let mut c = KernelCompressor::new();
        let max = if cfg!(miri) { 40 } else { 1200 };
        let mut src = vec![0u8; max.max(64)];
        rng.fill(&mut src);
        let mut out = vec![0u8; max_compressed_len(max)];
        for len in 0..max {
            for rle in [false, true] {
                let run = |c: &mut KernelCompressor, src: &[u8], out: &mut [u8]| {
                    if rle { c.compress_rle(src, out) } else { c.compress(src, out) }
                };
                let full = run(&mut c, &src[..len], &mut out).unwrap();
                assert_eq!(run(&mut c, &src[..len], &mut out[..full]), Ok(full), "{len}");
                assert_eq!(
                    run(&mut c, &src[..len], &mut out[..full - 1]),
                    Err(CompressError::Incompressible)
                );
            }
        }
        // A long match whose extension is exactly 255: M3 length 33 + 255.
        let mut rep = vec![7u8; 400];
        rep[..50].copy_from_slice(&src[..50]);
        for len in 280..=300 {
            let full = c.compress(&rep[..len], &mut out).unwrap();
            assert_eq!(c.compress(&rep[..len], &mut out[..full]), Ok(full));
        }
    }

    #[test]
    fn the_unchecked_rooms_hold_what_they_are_for() {
        // Every kind of match of up to a page, the longest too, fits MATCH_ROOM when each
        // write is checked (the unchecked form relies on that), and the longest needs all of
        // it; 16 literals with their header fit SHORT_LITERALS_ROOM, a token ZERO_RUN_LEN.
        let mut buf = [0u8; MATCH_ROOM];
        let mut most = 0;
        for len in [4, 8, 9, 33, 34, 288, 289, PAGE_SIZE] {
            for dist in [1, 2048, 2049, 0x4000, 0x4001, 0xBFFF] {
                let mut out = Output::new(&mut buf);
                assert_eq!(out.match_(len, dist), Ok(()), "len {len} dist {dist}");
                most = most.max(out.pos);
            }
        }
        assert_eq!(most, MATCH_ROOM);
        let src = [5u8; 32];
        let mut buf = [0u8; SHORT_LITERALS_ROOM];
        let mut out = Output::new(&mut buf);
        assert_eq!(out.literals(&src[..16]), Ok(()));
        assert_eq!(out.pos, SHORT_LITERALS_ROOM);
        let mut buf = [0u8; ZERO_RUN_LEN];
        let mut out = Output::new(&mut buf);
        assert_eq!(out.zero_run(MAX_ZERO_RUN), Ok(()));
        assert_eq!(out.pos, ZERO_RUN_LEN);
    }
}
