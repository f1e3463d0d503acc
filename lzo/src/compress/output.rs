//! The output stream with its budget, shared by both compressors: literal runs, matches and
//! zero-run tokens in the LZO1X bitstream, each write checked against the room left, or
//! unchecked while the room for the longest step is known to be there.

use pagecodec::{CompressError, PAGE_SIZE};

use crate::format::{
    END_MARKER, M2_MAX_LEN, M2_MAX_OFFSET, M3_MARKER, M3_MAX_LEN, M3_MAX_OFFSET, M4_MARKER, M4_MAX_LEN,
    MIN_ZERO_RUN,
};

/// Room [`Output::short_literals_unchecked`] needs: a header byte and a 16-byte block.
pub(crate) const SHORT_LITERALS_ROOM: usize = 1 + 16;

/// Room [`Output::match_unchecked`] needs for any match of up to a page: marker, the
/// longest length extension (after the smallest opcode maximum, M4's) and two distance
/// bytes.
pub(crate) const MATCH_ROOM: usize = 1 + Output::extension_len(PAGE_SIZE - M4_MAX_LEN) + 2;

/// Room [`Output::literals_and_match`] writes a step in after one budget check: up to 16
/// literals with their header, then a match of up to a page.
pub(crate) const STEP_ROOM: usize = SHORT_LITERALS_ROOM + MATCH_ROOM;

/// Length of an LZO-RLE zero-run token.
pub(crate) const ZERO_RUN_LEN: usize = 4;

/// The output stream with its budget (shared with the page compressor).
pub(crate) struct Output<'a> {
    buf: &'a mut [u8],
    pub(crate) pos: usize,
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
    pub(crate) fn put(&mut self, bytes: &[u8]) -> Result<(), CompressError> {
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
    pub(crate) fn reserve(&self, n: usize) -> Result<(), CompressError> {
        if n <= self.room() { Ok(()) } else { Err(CompressError::Incompressible) }
    }

    /// Appends one byte the caller reserved room for.
    #[inline(always)]
    pub(crate) fn push(&mut self, b: u8) {
        debug_assert!(self.pos < self.buf.len());
        // SAFETY: every caller first `reserve`d room for all the bytes it pushes.
        unsafe { *self.buf.get_unchecked_mut(self.pos) = b };
        self.pos += 1;
    }

    /// Bytes a length field takes for `rest >= 1` beyond the opcode's maximum: `(rest - 1) /
    /// 255` zero bytes, then the remainder (1..=255).
    #[inline(always)]
    pub(crate) const fn extension_len(rest: usize) -> usize {
        (rest - 1) / 255 + 1
    }

    /// Writes a length field for `rest >= 1` (see [`extension_len`](Self::extension_len)).
    /// The caller reserved room.
    #[inline(always)]
    pub(crate) fn extension(&mut self, mut rest: usize) {
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
    pub(crate) fn literal_header(&mut self, t: usize) -> Result<(), CompressError> {
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
    pub(crate) fn literals(&mut self, lit: &[u8]) -> Result<(), CompressError> {
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
    pub(crate) unsafe fn literals_and_zero_run(
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
    pub(crate) unsafe fn literal_run(
        &mut self,
        src: &[u8],
        from: usize,
        t: usize,
    ) -> Result<(), CompressError> {
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
    pub(crate) unsafe fn short_literals_unchecked(&mut self, src: &[u8], from: usize, t: usize) {
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
    pub(crate) unsafe fn match_unchecked(&mut self, len: usize, dist: usize) {
        debug_assert!((4..=PAGE_SIZE).contains(&len) && self.room() >= MATCH_ROOM);
        // Without checks nothing can fail.
        let _ = self.write_match::<false>(len, dist);
    }

    /// Writes a match, checking the budget before each write when `CHECKED`; the caller of
    /// the unchecked form provides [`MATCH_ROOM`].
    #[inline(always)]
    pub(crate) fn write_match<const CHECKED: bool>(
        &mut self,
        len: usize,
        dist: usize,
    ) -> Result<(), CompressError> {
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
    pub(crate) fn zero_run(&mut self, run: usize) -> Result<(), CompressError> {
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
    pub(crate) unsafe fn zero_run_unchecked(&mut self, run: usize) {
        let r = run - MIN_ZERO_RUN;
        for b in [M4_MARKER | 8 | (r & 7) as u8, 0xFC, 0xFF, (r >> 3) as u8] {
            self.push(b);
        }
        self.s_at = self.pos - 3;
    }
}
