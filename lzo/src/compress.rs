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

use pagecodec::{CompressError, PAGE_SIZE};

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

/// Room [`Output::short_literals_unchecked`] needs: a header byte and a 16-byte block.
const SHORT_LITERALS_ROOM: usize = 1 + 16;

/// Room [`Output::match_unchecked`] needs for any match of up to a page: marker, the
/// longest length extension (after the smallest opcode maximum, M4's) and two distance
/// bytes.
const MATCH_ROOM: usize = 1 + Output::extension_len(PAGE_SIZE - M4_MAX_LEN) + 2;

/// Room [`Output::literals_and_match`] writes a step in after one budget check: up to 16
/// literals with their header, then a match of up to a page.
const STEP_ROOM: usize = SHORT_LITERALS_ROOM + MATCH_ROOM;

/// Length of an LZO-RLE zero-run token.
const ZERO_RUN_LEN: usize = 4;

/// The output stream with its budget (shared with the page compressor).
pub(crate) struct Output<'a> {
    buf: &'a mut [u8],
    pos: usize,
    /// The byte holding the last instruction's `S` bits, where a following count of 1..=3
    /// literals is ORed: 2 bytes before the end of a match, 3 before the end of a zero-run
    /// token. It is 0 before the first instruction. No stream starts with 1..=3 literals
    /// (they take the `17 + n` form, and the scans start 4 or more bytes in), so only an OR
    /// of 0 ([`short_literals`](Self::short_literals)) ever reaches it there.
    s_at: usize,
}

impl<'a> Output<'a> {
    /// An empty stream writing into `buf` (its length is the budget).
    #[inline(always)]
    pub(crate) fn new(buf: &'a mut [u8]) -> Self {
        Output { buf, pos: 0, s_at: 0 }
    }

    /// Writes the final literals `lit` (possibly none) and the end marker; returns the
    /// stream's length. The first instruction of a stream's data (at `data_start`) uses
    /// the `17 + n` form for up to 238 literals.
    #[inline(always)]
    pub(crate) fn finish(mut self, lit: &[u8], data_start: usize) -> Result<usize, CompressError> {
        if !lit.is_empty() {
            if self.pos == data_start && lit.len() <= 238 {
                self.put(&[17 + lit.len() as u8])?;
                self.put(lit)?;
            } else {
                self.literals(lit)?;
            }
        }
        self.put(&END_MARKER)?;
        Ok(self.pos)
    }

    /// Appends `bytes`, or fails if they do not fit.
    #[inline(always)]
    fn put(&mut self, bytes: &[u8]) -> Result<(), CompressError> {
        let end = self.pos + bytes.len();
        self.buf.get_mut(self.pos..end).ok_or(CompressError::Incompressible)?.copy_from_slice(bytes);
        self.pos = end;
        Ok(())
    }

    /// How many more bytes fit.
    #[inline(always)]
    pub(crate) fn room(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// Checks that `n` more bytes fit.
    #[inline(always)]
    fn reserve(&self, n: usize) -> Result<(), CompressError> {
        if n <= self.room() { Ok(()) } else { Err(CompressError::Incompressible) }
    }

    /// Appends one byte the caller reserved room for.
    #[inline(always)]
    fn push(&mut self, b: u8) {
        debug_assert!(self.pos < self.buf.len());
        // SAFETY: every caller first `reserve`d room for all the bytes it pushes.
        unsafe { *self.buf.get_unchecked_mut(self.pos) = b };
        self.pos += 1;
    }

    /// Bytes a length field takes for `rest >= 1` beyond the opcode's maximum: `(rest - 1) /
    /// 255` zero bytes, then the remainder (1..=255).
    #[inline(always)]
    const fn extension_len(rest: usize) -> usize {
        (rest - 1) / 255 + 1
    }

    /// Writes a length field for `rest >= 1` (see [`extension_len`](Self::extension_len)).
    /// The caller reserved room.
    #[inline(always)]
    fn extension(&mut self, mut rest: usize) {
        while rest > 255 {
            rest -= 255;
            self.push(0);
        }
        self.push(rest as u8);
    }

    /// Writes the instruction header for `t >= 1` literals after a match, token or at the
    /// start of a chunk (1..=3 ride in the previous instruction's `S` bits, more get a
    /// `0000LLLL` instruction) and checks that the literals fit after it.
    #[inline(always)]
    fn literal_header(&mut self, t: usize) -> Result<(), CompressError> {
        if t <= 3 {
            self.reserve(t)?;
            self.buf[self.s_at] |= t as u8;
        } else if t <= 18 {
            self.reserve(1 + t)?;
            self.push((t - 3) as u8);
        } else {
            let rest = t - 18;
            self.reserve(1 + Self::extension_len(rest) + t)?;
            self.push(0);
            self.extension(rest);
        }
        Ok(())
    }

    /// Writes a run of literals (see [`literal_header`](Self::literal_header)).
    #[inline(always)]
    fn literals(&mut self, lit: &[u8]) -> Result<(), CompressError> {
        self.literal_header(lit.len())?;
        self.buf[self.pos..self.pos + lit.len()].copy_from_slice(lit);
        self.pos += lit.len();
        Ok(())
    }

    /// Writes the `t` literals a scan found, `src[from..from + t]`, and the match after them
    /// (`len >= 4` bytes at `dist`): the compressors' most frequent writes. While up to 16
    /// literals and a match of up to a page fit ([`STEP_ROOM`]), both are written after that
    /// one check; otherwise each piece is checked.
    ///
    /// # Safety
    ///
    /// `from + t + 16 <= src.len()`.
    #[inline(always)]
    pub(crate) unsafe fn literals_and_match(
        &mut self,
        src: &[u8],
        from: usize,
        t: usize,
        len: usize,
        dist: usize,
    ) -> Result<(), CompressError> {
        if t <= 16 && len <= PAGE_SIZE && self.room() >= STEP_ROOM {
            // SAFETY: t <= 16, from + 16 <= src.len() (the contract), 4 <= len <= PAGE_SIZE,
            // and the room for both was checked.
            unsafe {
                self.short_literals_unchecked(src, from, t);
                self.match_unchecked(len, dist);
            }
            Ok(())
        } else {
            // SAFETY: the caller's contract.
            unsafe { self.literal_run(src, from, t)? };
            self.match_(len, dist)
        }
    }

    /// Writes the `t` literals a scan found, `src[from..from + t]`, and the LZO-RLE zero-run
    /// token for `run` zero bytes after them, as
    /// [`literals_and_match`](Self::literals_and_match) writes a match: after one check while
    /// up to 16 literals and the token fit, otherwise each piece checked.
    ///
    /// # Safety
    ///
    /// `from + t + 16 <= src.len()`.
    #[inline(always)]
    unsafe fn literals_and_zero_run(
        &mut self,
        src: &[u8],
        from: usize,
        t: usize,
        run: usize,
    ) -> Result<(), CompressError> {
        if t <= 16 && self.room() >= SHORT_LITERALS_ROOM + ZERO_RUN_LEN {
            // SAFETY: t <= 16, from + 16 <= src.len() (the contract), and the room for both
            // was checked.
            unsafe {
                self.short_literals_unchecked(src, from, t);
                self.zero_run_unchecked(run);
            }
            Ok(())
        } else {
            // SAFETY: the caller's contract.
            unsafe { self.literal_run(src, from, t)? };
            self.zero_run(run)
        }
    }

    /// Writes the `t` literals a scan found before a match or token, `src[from..from + t]`,
    /// with [`short_literals`](Self::short_literals) or
    /// [`literals_wide`](Self::literals_wide), every write checked.
    ///
    /// # Safety
    ///
    /// `from + t + 16 <= src.len()`.
    #[inline(always)]
    unsafe fn literal_run(&mut self, src: &[u8], from: usize, t: usize) -> Result<(), CompressError> {
        if t <= 16 {
            // SAFETY: t <= 16 and from + 16 <= from + t + 16 <= src.len() (the contract).
            unsafe { self.short_literals(src, from, t) }
        } else {
            // SAFETY: the contract.
            unsafe { self.literals_wide(src, from, t) }
        }
    }

    /// Writes the `t >= 1` literals `src[from..from + t]`, copying 16-byte blocks when the
    /// output has room for the rounding.
    ///
    /// # Safety
    ///
    /// `from + t + 16 <= src.len()`.
    #[inline(always)]
    pub(crate) unsafe fn literals_wide(
        &mut self,
        src: &[u8],
        from: usize,
        t: usize,
    ) -> Result<(), CompressError> {
        self.literal_header(t)?;
        if self.buf.len() - self.pos >= t + 16 {
            let mut i = 0;
            while i < t {
                // SAFETY: i < t, so the 16 bytes read end before from + t + 16 <= src.len()
                // (the caller's guarantee) and the 16 written before pos + t + 16 <=
                // buf.len() (checked above); input and output are distinct slices.
                unsafe {
                    core::ptr::copy_nonoverlapping(
                        src.as_ptr().add(from + i),
                        self.buf.as_mut_ptr().add(self.pos + i),
                        16,
                    );
                }
                i += 16;
            }
        } else {
            self.buf[self.pos..self.pos + t].copy_from_slice(&src[from..from + t]);
        }
        self.pos += t;
        Ok(())
    }

    /// Writes `t <= 16` literals `src[from..from + t]` (`t == 0` included) without branching
    /// on `t` when the output has room for a header byte and a 16-byte block; otherwise as
    /// [`literals`](Self::literals) does. The bytes are those
    /// [`literal_header`](Self::literal_header) writes: `t` in 1..=3 is ORed into the
    /// previous instruction's `S` bits (an OR of 0 changes nothing), a `t - 3` byte is
    /// stored in any case but kept (the position advances past it) only when `t > 3`.
    ///
    /// # Safety
    ///
    /// `t <= 16` and `from + 16 <= src.len()`.
    #[inline(always)]
    pub(crate) unsafe fn short_literals(
        &mut self,
        src: &[u8],
        from: usize,
        t: usize,
    ) -> Result<(), CompressError> {
        if self.room() < SHORT_LITERALS_ROOM {
            return if t > 0 { self.literals(&src[from..from + t]) } else { Ok(()) };
        }
        // SAFETY: the room was checked above; the rest is the caller's guarantee.
        unsafe { self.short_literals_unchecked(src, from, t) };
        Ok(())
    }

    /// [`short_literals`](Self::short_literals) without the budget check.
    ///
    /// # Safety
    ///
    /// `t <= 16`, `from + 16 <= src.len()` and `room() >= SHORT_LITERALS_ROOM`.
    #[inline(always)]
    unsafe fn short_literals_unchecked(&mut self, src: &[u8], from: usize, t: usize) {
        debug_assert!(t <= 16 && from + 16 <= src.len() && self.room() >= SHORT_LITERALS_ROOM);
        let s_bits = if t <= 3 { t as u8 } else { 0 };
        // SAFETY: `s_at < pos` or both are 0, and `pos + 17 <= buf.len()` (the caller's
        // guarantee): the OR, the header byte and the 16-byte block written from the
        // (possibly advanced) position are in bounds; the block is read from `from + 16 <=
        // src.len()` (the caller's guarantee); input and output are distinct slices.
        unsafe {
            *self.buf.get_unchecked_mut(self.s_at) |= s_bits;
            *self.buf.get_unchecked_mut(self.pos) = (t as u8).wrapping_sub(3);
            self.pos += usize::from(t > 3);
            core::ptr::copy_nonoverlapping(src.as_ptr().add(from), self.buf.as_mut_ptr().add(self.pos), 16);
        }
        self.pos += t;
    }

    /// Writes a match of `len >= 4` bytes at distance `dist` (1..=0xBFFF).
    #[inline(always)]
    pub(crate) fn match_(&mut self, len: usize, dist: usize) -> Result<(), CompressError> {
        self.write_match::<true>(len, dist)
    }

    /// [`match_`](Self::match_) without the budget checks.
    ///
    /// # Safety
    ///
    /// `4 <= len <= PAGE_SIZE` and `room() >= MATCH_ROOM`.
    #[inline(always)]
    unsafe fn match_unchecked(&mut self, len: usize, dist: usize) {
        debug_assert!((4..=PAGE_SIZE).contains(&len) && self.room() >= MATCH_ROOM);
        // Without checks nothing can fail.
        let _ = self.write_match::<false>(len, dist);
    }

    /// Writes a match, checking the budget before each write when `CHECKED`; the caller of
    /// the unchecked form provides [`MATCH_ROOM`].
    #[inline(always)]
    fn write_match<const CHECKED: bool>(&mut self, len: usize, dist: usize) -> Result<(), CompressError> {
        if len <= M2_MAX_LEN && dist <= M2_MAX_OFFSET {
            let d = dist - 1;
            if CHECKED {
                self.reserve(2)?;
            }
            self.push((((len - 1) << 5) | ((d & 7) << 2)) as u8);
            self.push((d >> 3) as u8);
        } else {
            let (marker, max, d) = if dist <= M3_MAX_OFFSET {
                (M3_MARKER, M3_MAX_LEN, dist - 1)
            } else {
                let d = dist - 0x4000;
                (M4_MARKER | ((d >> 11) & 8) as u8, M4_MAX_LEN, d)
            };
            if len <= max {
                if CHECKED {
                    self.reserve(3)?;
                }
                self.push(marker | (len - 2) as u8);
            } else {
                let rest = len - max;
                if CHECKED {
                    self.reserve(3 + Self::extension_len(rest))?;
                }
                self.push(marker);
                self.extension(rest);
            }
            self.push((d << 2) as u8);
            self.push((d >> 6) as u8);
        }
        self.s_at = self.pos - 2;
        Ok(())
    }

    /// Writes an LZO-RLE zero-run token for `run` (4..=2051) zero bytes.
    #[inline(always)]
    fn zero_run(&mut self, run: usize) -> Result<(), CompressError> {
        self.reserve(ZERO_RUN_LEN)?;
        // SAFETY: the room was reserved just above.
        unsafe { self.zero_run_unchecked(run) };
        Ok(())
    }

    /// [`zero_run`](Self::zero_run) without the budget check.
    ///
    /// # Safety
    ///
    /// `room() >= ZERO_RUN_LEN`.
    #[inline(always)]
    unsafe fn zero_run_unchecked(&mut self, run: usize) {
        let r = run - MIN_ZERO_RUN;
        for b in [M4_MARKER | 8 | (r & 7) as u8, 0xFC, 0xFF, (r >> 3) as u8] {
            self.push(b);
        }
        self.s_at = self.pos - 3;
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
    // 1-2% slower here (SPEC.md section 5).
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
    use crate::worst_case_len;

    #[test]
    fn a_budget_of_exactly_the_stream_length_suffices() {
        // Covers every literal-run length up to 1200, including the extension lengths
        // where (run - 18) is a multiple of 255, and long M3 extensions.
        let mut rng = Rng::new(9);
        let mut c = Compressor::new();
        let max = if cfg!(miri) { 40 } else { 1200 };
        let mut src = vec![0u8; max.max(64)];
        rng.fill(&mut src);
        let mut out = vec![0u8; worst_case_len(max)];
        for len in 0..max {
            for rle in [false, true] {
                let run = |c: &mut Compressor, src: &[u8], out: &mut [u8]| {
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
