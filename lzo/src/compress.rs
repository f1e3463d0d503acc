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
//! that fits is always produced whatever the budget.

use pagecodec::CompressError;

use crate::format::{
    END_MARKER, M2_MAX_LEN, M2_MAX_OFFSET, M3_MARKER, M3_MAX_LEN, M3_MAX_OFFSET, M4_MARKER, M4_MAX_LEN,
    M4_MAX_OFFSET_V0, M4_MAX_OFFSET_V1, MAX_ZERO_RUN, MIN_ZERO_RUN, RLE_VERSION, VERSION_HEADER,
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
/// use lzokit::{decompress, worst_case_len, Compressor};
///
/// let mut compressor = Compressor::new();
/// let input = b"hello hello hello hello hello hello, world".repeat(20);
/// let mut stream = vec![0u8; worst_case_len(input.len())];
/// let n = compressor.compress(&input, &mut stream)?;
/// assert!(n < input.len() / 4);
///
/// let mut back = vec![0u8; input.len()];
/// assert_eq!(decompress(&stream[..n], &mut back)?, input.len());
/// assert_eq!(back, input);
/// # Ok::<(), Box<dyn core::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct Compressor {
    dict: [u16; DICT_SIZE],
}

impl Default for Compressor {
    fn default() -> Self {
        Self::new()
    }
}

impl core::fmt::Debug for Compressor {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Compressor").finish_non_exhaustive()
    }
}

/// Which bitstream the compressor writes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Format {
    /// Plain LZO1X (version 0): what liblzo2 and every LZO decoder read.
    Lzo1x,
    /// LZO-RLE (version 1): `11 01` header, zero-run tokens, M4 distances up to 0xBFFE.
    Rle,
}

impl Compressor {
    /// A compressor with a cleared hash table.
    pub const fn new() -> Self {
        Compressor { dict: [0; DICT_SIZE] }
    }

    /// Compresses `src` (any length) as a plain LZO1X stream into `dst`, returning the
    /// stream's length. `dst.len()` is the budget: nothing is written past it, and the call
    /// fails as soon as the stream cannot fit. A budget of
    /// [`worst_case_len(src.len())`](crate::worst_case_len) always suffices. The stream is
    /// byte-identical to the Linux kernel's `lzo1x_1_compress` and decodes with liblzo2.
    ///
    /// ```
    /// use lzokit::{CompressError, Compressor};
    ///
    /// let mut c = Compressor::new();
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
    /// use lzokit::{decompress, Compressor};
    ///
    /// let page = [0u8; 4096];
    /// let mut out = [0u8; 64];
    /// let n = Compressor::new().compress_rle(&page, &mut out)?;
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

    /// The page-specialised entry point: the input length is a constant 4096, so the single
    /// chunk's bounds are known at compile time once this is inlined.
    #[inline]
    pub(crate) fn compress_page(
        &mut self,
        page: &[u8; pagecodec::PAGE_SIZE],
        dst: &mut [u8],
        rle: bool,
    ) -> Result<usize, CompressError> {
        self.compress_with(page, dst, if rle { Format::Rle } else { Format::Lzo1x })
    }

    #[inline(always)]
    fn compress_with(&mut self, src: &[u8], dst: &mut [u8], format: Format) -> Result<usize, CompressError> {
        let mut out = Output { buf: dst, pos: 0, state_offset: 2 };
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
        if pending > 0 {
            let lit = &src[src.len() - pending..];
            if out.pos == data_start && pending <= 238 {
                out.put(&[17 + pending as u8])?;
                out.put(lit)?;
            } else {
                out.literals(lit)?;
            }
        }
        out.put(&END_MARKER)?;
        Ok(out.pos)
    }
}

/// The output stream with its budget.
struct Output<'a> {
    buf: &'a mut [u8],
    pos: usize,
    /// How far back from `pos` the byte holding the last instruction's `S` bits is: 2 after
    /// a match, 3 after a zero-run token.
    state_offset: usize,
}

impl Output<'_> {
    /// Appends `bytes`, or fails if they do not fit.
    #[inline(always)]
    fn put(&mut self, bytes: &[u8]) -> Result<(), CompressError> {
        let end = self.pos + bytes.len();
        self.buf.get_mut(self.pos..end).ok_or(CompressError::Incompressible)?.copy_from_slice(bytes);
        self.pos = end;
        Ok(())
    }

    /// Checks that `n` more bytes fit.
    #[inline(always)]
    fn reserve(&self, n: usize) -> Result<(), CompressError> {
        if n <= self.buf.len() - self.pos { Ok(()) } else { Err(CompressError::Incompressible) }
    }

    /// Writes a length field for lengths beyond the opcode's: `(len - max) / 255` zero bytes
    /// then the remainder (non-zero). The caller reserved room.
    #[inline(always)]
    fn extension(&mut self, mut rest: usize) {
        while rest > 255 {
            rest -= 255;
            self.buf[self.pos] = 0;
            self.pos += 1;
        }
        self.buf[self.pos] = rest as u8;
        self.pos += 1;
    }

    /// Writes a run of literals after a match, token or at the start of a chunk: 1..=3
    /// ride in the previous instruction's `S` bits, more get a `0000LLLL` instruction.
    #[inline(always)]
    fn literals(&mut self, lit: &[u8]) -> Result<(), CompressError> {
        let t = lit.len();
        if t <= 3 {
            self.reserve(t)?;
            self.buf[self.pos - self.state_offset] |= t as u8;
        } else if t <= 18 {
            self.reserve(1 + t)?;
            self.buf[self.pos] = (t - 3) as u8;
            self.pos += 1;
        } else {
            let rest = t - 18;
            self.reserve(2 + rest / 255 + t)?;
            self.buf[self.pos] = 0;
            self.pos += 1;
            self.extension(rest);
        }
        self.buf[self.pos..self.pos + t].copy_from_slice(lit);
        self.pos += t;
        Ok(())
    }

    /// Writes a match of `len >= 4` bytes at distance `dist` (1..=0xBFFF).
    #[inline(always)]
    fn match_(&mut self, len: usize, dist: usize) -> Result<(), CompressError> {
        if len <= M2_MAX_LEN && dist <= M2_MAX_OFFSET {
            let d = dist - 1;
            self.put(&[(((len - 1) << 5) | ((d & 7) << 2)) as u8, (d >> 3) as u8])?;
        } else if dist <= M3_MAX_OFFSET {
            let d = dist - 1;
            if len <= M3_MAX_LEN {
                self.reserve(3)?;
                self.buf[self.pos] = M3_MARKER | (len - 2) as u8;
                self.pos += 1;
            } else {
                let rest = len - M3_MAX_LEN;
                self.reserve(4 + rest / 255)?;
                self.buf[self.pos] = M3_MARKER;
                self.pos += 1;
                self.extension(rest);
            }
            self.buf[self.pos] = (d << 2) as u8;
            self.buf[self.pos + 1] = (d >> 6) as u8;
            self.pos += 2;
        } else {
            let d = dist - 0x4000;
            let high = ((d >> 11) & 8) as u8;
            if len <= M4_MAX_LEN {
                self.reserve(3)?;
                self.buf[self.pos] = M4_MARKER | high | (len - 2) as u8;
                self.pos += 1;
            } else {
                let rest = len - M4_MAX_LEN;
                self.reserve(4 + rest / 255)?;
                self.buf[self.pos] = M4_MARKER | high;
                self.pos += 1;
                self.extension(rest);
            }
            self.buf[self.pos] = (d << 2) as u8;
            self.buf[self.pos + 1] = (d >> 6) as u8;
            self.pos += 2;
        }
        self.state_offset = 2;
        Ok(())
    }

    /// Writes an LZO-RLE zero-run token for `run` (4..=2051) zero bytes.
    #[inline(always)]
    fn zero_run(&mut self, run: usize) -> Result<(), CompressError> {
        let r = run - MIN_ZERO_RUN;
        self.put(&[M4_MARKER | 8 | (r & 7) as u8, 0xFC, 0xFF, (r >> 3) as u8])?;
        self.state_offset = 3;
        Ok(())
    }
}

#[inline(always)]
fn le32(src: &[u8], i: usize) -> u32 {
    u32::from_le_bytes([src[i], src[i + 1], src[i + 2], src[i + 3]])
}

#[inline(always)]
fn le64(src: &[u8], i: usize) -> u64 {
    let b: [u8; 8] = src[i..i + 8].try_into().unwrap_or([0; 8]);
    u64::from_le_bytes(b)
}

#[inline(always)]
fn hash(dv: u32) -> usize {
    (dv.wrapping_mul(0x1824_429d) >> (32 - DICT_BITS)) as usize
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
    let mut ip = start + 4usize.saturating_sub(pending);
    'literal: loop {
        ip += 1 + ((ip - ii) >> 5);
        'next: loop {
            if ip >= ip_end {
                break 'literal;
            }
            let dv = le32(src, ip);
            let mut run = 0;
            let mut m_pos = 0;
            if dv == 0 && format == Format::Rle {
                let limit = ip_end.min(ip + MAX_ZERO_RUN + 1);
                let mut ir = ip + 4;
                while ir + 8 < limit && le64(src, ir) == 0 {
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
                if dv != le32(src, m_pos) {
                    continue 'literal;
                }
            }

            ii -= pending;
            pending = 0;
            if ip > ii {
                out.literals(&src[ii..ip])?;
            }
            if run > 0 {
                out.zero_run(run)?;
                ip += run;
                ii = ip;
                continue 'next;
            }

            let mut m_len = 4;
            let mut v = le64(src, ip + m_len) ^ le64(src, m_pos + m_len);
            let mut capped = false;
            if v == 0 {
                loop {
                    m_len += 8;
                    v = le64(src, ip + m_len) ^ le64(src, m_pos + m_len);
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
            out.match_(m_len, dist)?;
            ip += m_len;
            ii = ip;
        }
    }
    Ok(end - (ii - pending))
}
