//! The fast loop's copies: literals and matches in wide blocks, periodic patterns, fills.

use super::*;

/// Copies `n` bytes from `from` to `to` in 16-byte blocks (rounded up).
///
/// # Safety
///
/// `from..from + n + 16` is readable, `to..to + n + 16` writable, and they do not overlap.
#[inline(always)]
pub(super) unsafe fn copy_wide(from: *const u8, to: *mut u8, n: usize) {
    let mut i = 0;
    loop {
        // SAFETY: i < n here (or i == 0), so i + 16 <= n + 16: within both regions.
        unsafe { core::ptr::copy_nonoverlapping(from.add(i), to.add(i), 16) };
        i += 16;
        if i >= n {
            break;
        }
    }
}

/// [`copy_match`] for distances below 8 (M2) or 64 (M3 with a one-byte length extension),
/// out of line: rare on real pages, and keeping its loops out of the hot paths
/// leaves them straight-line code.
///
/// # Safety
///
/// As for [`copy_match`].
#[cold]
#[inline(never)]
pub(super) unsafe fn copy_short(to: *mut u8, dist: usize, len: usize) {
    // SAFETY: the caller upholds `copy_match`'s contract.
    unsafe { copy_match(to, dist, len) }
}

/// Copies an M3 (at most 33 bytes) at a distance below 32, out of line: from 16 on, its
/// first 16 bytes as one block and the rest one by one ([`copy_bytes`]); below 16, all one
/// by one.
///
/// Why: such M3s are frequent on a few pages (arrays of records of 16..=31 bytes) and rare
/// elsewhere. A wide load of their source would span the last few instructions' stores
/// and, from the second block on, this match's own first block; but on those pages the
/// record before was copied the same way, so the first 16 bytes are one earlier store,
/// which the core forwards; on node pages rich in these M3s the block instead of its 16
/// single bytes saves a clear share of the ticks. As a call it leaves the fast loop compiled
/// as before; an inlined variant changed the loop's register allocation and tails, and every
/// corpus decoded slower (docs/perf/lzokit.md).
///
/// # Safety
///
/// `1 <= dist < 32`, the `dist` bytes before `to` are initialised output, and
/// `to..to + max(16, len)` is writable output.
#[cold]
#[inline(never)]
pub(super) unsafe fn copy_m3_near(to: *mut u8, dist: usize, len: usize) {
    if dist >= 16 {
        // SAFETY: the block reads to - dist..to - dist + 16, initialised output before `to`
        // (dist >= 16), and writes to..to + 16; `copy_bytes` then gets the bytes from 16 on,
        // whose `dist` bytes before are initialised (before `to`, or just written).
        unsafe {
            core::ptr::copy_nonoverlapping(to.sub(dist), to, 16);
            if len > 16 {
                copy_bytes(to.add(16), dist, len - 16);
            }
        }
    } else {
        // SAFETY: the caller's promises are `copy_bytes`'s.
        unsafe { copy_bytes(to, dist, len) }
    }
}

/// [`copy_match`] that writes exactly `to..to + len`: all but the last 32 bytes with
/// `copy_match` (whose writes then end by `to + len`), the rest byte by byte.
///
/// # Safety
///
/// `1 <= dist`, the `dist` bytes before `to` are initialised output, and `to..to + len` is
/// writable output.
#[cold]
#[inline(never)]
pub(super) unsafe fn copy_match_exact(to: *mut u8, dist: usize, len: usize) {
    let mut k = 0;
    if len >= 32 {
        // SAFETY: `copy_match` writes below to + max(32, len - 32 + 15), which is at most
        // to + len for len >= 32; the caller's promises cover the rest.
        unsafe { copy_match(to, dist, len - 32) };
        k = len - 32;
    }
    // SAFETY: to + k..to + len is writable, and the `dist` bytes before to + k are the
    // caller's initialised output or bytes of this match written above.
    unsafe { copy_bytes(to.add(k), dist, len - k) };
}

/// Copies a match of `len` bytes from `dist` bytes back one byte at a time, so that each
/// load reads a byte one earlier store wrote.
///
/// Why: the source of a match at a short distance lies in the stores of the last few
/// instructions (8- and 16-byte blocks, 4-byte literal words, each overwriting the scratch
/// of the one before) and, for an M3 at 16..=31, of its own first block. A wide load that
/// spans two stores cannot take its bytes from the store buffer and waits until they reach
/// the cache; a byte load always can. Copied byte by byte on an Intel core, M2s at distances
/// 8..=15 and M3s at 16..=31 made node pages markedly faster (docs/perf/lzokit.md). The
/// accesses are volatile so that LLVM keeps them one byte wide instead of merging them into
/// the wide loads this function exists to avoid.
///
/// # Safety
///
/// `1 <= dist`, the `dist` bytes before `to` are initialised output, and `to..to + len` is
/// writable output.
#[inline(always)]
pub(super) unsafe fn copy_bytes(to: *mut u8, dist: usize, len: usize) {
    for k in 0..len {
        // SAFETY: k < len is writable, and k - dist is either before `to` (initialised, by
        // the caller) or an earlier byte of this match, already written.
        unsafe { to.add(k).write_volatile(to.add(k).sub(dist).read_volatile()) };
    }
}

/// Repeats the `period` bytes before `to` (16 <= period) up to `to + len`: 16-byte blocks at
/// `to + i` for `i = 0, 16, ...` while `i < len`, the block at `i` read from the pattern's
/// start plus `i mod period`.
///
/// Why: each load then reads the pattern (or, past its end, the first block written here)
/// instead of the block stored `period` bytes earlier. At periods that are not a multiple of
/// the block size such a load spans two recent stores, which the core cannot forward to it,
/// so every block waited for the stores before it; `lzo` decoded node pages 2-4% faster
/// (docs/perf/lzokit.md).
///
/// # Safety
///
/// `16 <= period`, the `period` bytes before `to` are initialised output, and
/// `to..to + len + 16` is writable output. Then every block reads inside
/// `to - period..to + 15`: the pattern, or bytes the first block (which reads only the
/// pattern) has written.
#[inline(always)]
pub(super) unsafe fn copy_periodic(to: *mut u8, period: usize, len: usize) {
    // SAFETY: the pattern lies before `to` (the caller's contract).
    let base = unsafe { to.sub(period) };
    let mut i = 0;
    // i mod period, kept below `period` by one subtraction (16 <= period).
    let mut m = 0;
    while i < len {
        // SAFETY: i < len, so the write lies inside to..to + len + 16 (writable). The read:
        // for the first block (m = 0) base..base + 16, inside the pattern as 16 <= period;
        // for later ones (m < period) inside base..to + 15, the pattern and the first
        // block's bytes, so initialised. It ends before the write starts: at base + 16 <= to
        // for the first block, by to + 15 < to + i after.
        unsafe { core::ptr::copy_nonoverlapping(base.add(m), to.add(i), 16) };
        i += 16;
        m += 16;
        if m >= period {
            m -= period;
        }
    }
}

/// Repeats the `period` bytes before `to` (8 <= period < 16) up to `to + len`: per period an
/// 8-byte block from the pattern's start and, above period 8, one that ends at its end,
/// overlapping the first.
///
/// Why: every load reads the pattern, none the bytes just stored here. Read at the offset
/// each position needs, as [`copy_periodic`] does, a block past offset `period - 8` spans
/// the pattern's end and this match's first block, which the core cannot forward to it.
/// Pages with such matches decode several times as fast this way (docs/perf/lzokit.md).
///
/// # Safety
///
/// `8 <= period < 16`, the `period` bytes before `to` are initialised output, and
/// `to..to + len + 15` is writable output.
#[inline(always)]
pub(super) unsafe fn copy_period_8_to_15(to: *mut u8, period: usize, len: usize) {
    // SAFETY: the pattern's start, inside the output (the caller's promise).
    let from = unsafe { to.sub(period) };
    let mut p = 0;
    while p < len {
        // SAFETY: both reads lie in the pattern from..to (8 <= period), initialised and
        // before every write; both writes start below to + len and end by
        // to + p + period < to + len + 15 (p < len, period < 16).
        unsafe {
            core::ptr::copy_nonoverlapping(from, to.add(p), 8);
            if period > 8 {
                core::ptr::copy_nonoverlapping(from.add(period - 8), to.add(p + period - 8), 8);
            }
        }
        p += period;
    }
}

/// Repeats the `period` bytes before `to` (64 <= period) up to `to + len`: per period,
/// 16-byte blocks from the pattern's start and one that ends at its end, overlapping the one
/// before; from 128 on only for two periods, then blocks from two periods back.
///
/// Why: every load reads the pattern, written before this match, or bytes stored at least
/// 256 bytes earlier, none of the blocks just stored here. Read from `period` bytes back,
/// each block's source is the blocks stored four to eight earlier, still on their way to
/// the cache; at periods that are not a multiple of 16 a load spans two of them, which the
/// core cannot forward to it, so every block waited for the stores before it
/// (docs/perf/lzokit.md gives the figures).
///
/// # Safety
///
/// `64 <= period`, the `period` bytes before `to` are initialised output, and
/// `to..to + len + 15` is writable output.
#[inline(never)]
pub(super) unsafe fn copy_long_period(to: *mut u8, period: usize, len: usize) {
    // SAFETY: the pattern's start, inside the output (the caller's promise).
    let from = unsafe { to.sub(period) };
    // Long periods repeat the pattern twice; past that, blocks from two periods back are far
    // enough behind, and a loop per period would cost a mispredicted exit each.
    let patterned = if period >= 128 { len.min(2 * period) } else { len };
    // Each period's copy starts at `to + p`; its blocks at `j` below `period - 16`, and the
    // last at `period - 16`, all read inside the pattern from..to.
    let mut p = 0;
    while p < patterned {
        let mut j = 0;
        while j + 16 < period && p + j < patterned {
            // SAFETY: reads from + j..from + j + 16 inside the pattern (j + 16 < period);
            // writes a block starting below to + len, so ending by to + len + 15.
            unsafe { core::ptr::copy_nonoverlapping(from.add(j), to.add(p + j), 16) };
            j += 16;
        }
        if p + period - 16 < patterned {
            // SAFETY: reads the pattern's last 16 bytes (16 <= period); writes a block
            // starting below to + len.
            unsafe {
                let last = period - 16;
                core::ptr::copy_nonoverlapping(from.add(last), to.add(p + last), 16);
            }
        }
        p += period;
    }
    // Only when patterned = 2 * period < len.
    let mut i = patterned;
    while i < len {
        // SAFETY: writes a block starting below to + len; reads to + i - 2 * period..+ 16,
        // which ends by to + i (2 * period >= 16): this match's bytes, all written (the
        // blocks above end at the period boundary 2 * period, and later ones at i).
        unsafe { core::ptr::copy_nonoverlapping(to.add(i - 2 * period), to.add(i), 16) };
        i += 16;
    }
}

/// Runs longer than this are filled by `memset` ([`core::ptr::write_bytes`]), shorter ones
/// by inline 16-byte stores.
pub(super) const INLINE_FILL_MAX: usize = 256;

/// Writes `n` bytes of `byte` at `to`: up to [`INLINE_FILL_MAX`] in 16-byte blocks (rounded
/// up), longer runs exactly, by `memset`.
///
/// Why both: on a short run a `memset` call costs more than a few inline stores, and LLVM
/// turns a plain store loop into such a call, so the loop hides each block's address behind
/// [`opaque`]. Long runs (distance-1 matches of hundreds of bytes, pages ending in zeros) go
/// to `memset`, whose wider stores win there. Against the plain loop, which compiled to
/// `memset` for every run, `lzo-rle` decodes real pages 3-9% faster and `lzo` is unchanged
/// (docs/perf/lzokit.md).
///
/// # Safety
///
/// `to..to + n + 16` is writable.
#[inline(always)]
pub(super) unsafe fn fill_wide(to: *mut u8, byte: u8, n: usize) {
    if n > INLINE_FILL_MAX {
        // SAFETY: to..to + n is writable (the caller's contract).
        unsafe { core::ptr::write_bytes(to, byte, n) };
        return;
    }
    let mut i = 0;
    while i < n {
        // SAFETY: i < n, so i + 16 <= n + 16: within the region (`opaque` returns its
        // argument unchanged).
        unsafe { opaque(to.add(i)).cast_mut().cast::<[u8; 16]>().write_unaligned([byte; 16]) };
        i += 16;
    }
}

/// Copies an LZ77 match of `len` bytes from `dist` bytes back to `to`, repeating the
/// pattern when `dist < len`. Writes only below `to + max(32, len + 15)`, which is at most
/// `to + len + 32` (32 bytes for an M2, 48 for an M3 without extension).
///
/// # Safety
///
/// `1 <= dist`, the `dist` bytes before `to` are initialised output, and
/// `to..to + max(32, len + 15)` is writable output.
#[inline(always)]
pub(super) unsafe fn copy_match(to: *mut u8, dist: usize, len: usize) {
    // SAFETY: every write is below to + max(32, len + 15): 16-byte blocks from 0 while below
    // len, at least two; `copy_periodic`'s 16-byte blocks starting below len;
    // `copy_period_8_to_15`'s and `copy_long_period`'s blocks, below len + 15;
    // `fill_wide`'s 16-byte blocks or exact fill; `copy_short_period`'s 8-byte stores
    // starting below len. Every read is of initialised output: the far blocks read at least
    // `dist` bytes before the write they feed; `copy_periodic` reads the `dist` bytes before
    // `to` and its own first block; `copy_period_8_to_15` reads the `dist` bytes before
    // `to`, `copy_long_period` those and bytes it has written; `copy_short_period` the `dist`
    // bytes before `to`, with the output's bytes after them masked off.
    unsafe {
        let from = to.sub(dist);
        if dist >= 64 && len > dist {
            copy_long_period(to, dist, len);
        } else if dist >= 64 {
            // Blocks of 16 never overlap their source, and at this distance their source was
            // stored long enough ago. Most matches are at most 32 bytes: copy two blocks
            // without a length test.
            core::ptr::copy_nonoverlapping(from, to, 16);
            core::ptr::copy_nonoverlapping(from.add(16), to.add(16), 16);
            let mut i = 32;
            while i < len {
                core::ptr::copy_nonoverlapping(from.add(i), to.add(i), 16);
                i += 16;
            }
        } else if dist >= 16 {
            copy_periodic(to, dist, len);
        } else if dist >= 8 {
            copy_period_8_to_15(to, dist, len);
        } else if dist == 1 {
            fill_wide(to, *from, len);
        } else {
            copy_short_period(to, dist, len);
        }
    }
}

/// Per period 2..=7: the multiplier that repeats a `period`-byte value across 8 bytes, and
/// the largest multiple of the period up to 8 (how far apart the 8-byte stores go).
const SHORT_PERIODS: [(u64, usize); 8] = {
    let mut table = [(0, 0); 8];
    let mut period = 2;
    while period < 8 {
        let (mut mul, mut shift) = (0u64, 0);
        while shift < 64 {
            mul |= 1 << shift;
            shift += 8 * period;
        }
        table[period] = (mul, 8 - 8 % period);
        period += 1;
    }
    table
};

/// Repeats the `period` bytes before `to` (2 <= period < 8) up to `to + len`: the pattern
/// made into one 8-byte word (one load, a mask, a multiply), stored every multiple of the
/// period up to 8 bytes apart. Why: no load waits for a store of this match. Copying a
/// 16..21-byte head byte by byte (each byte read `period` bytes after it was stored), then
/// 16-byte blocks, took markedly longer on pages with many such matches (docs/perf/lzokit.md,
/// "Match copies").
///
/// # Safety
///
/// `2 <= period < 8`, the `period` bytes before `to` are initialised output, and
/// `to..to + len + 8` is writable output inside the same initialised buffer.
#[inline(always)]
unsafe fn copy_short_period(to: *mut u8, period: usize, len: usize) {
    debug_assert!((2..8).contains(&period));
    let (mul, step) = SHORT_PERIODS[period & 7];
    // SAFETY: reads to - period..to - period + 8: the pattern, then bytes of the writable
    // output (initialised: the output is a slice), masked off below.
    let bytes = u64::from_le(unsafe { to.sub(period).cast::<u64>().read_unaligned() });
    let word = (bytes & ((1 << (8 * period)) - 1)).wrapping_mul(mul).to_le();
    let mut i = 0;
    while i < len {
        // SAFETY: i < len, so the store ends below to + len + 8: writable.
        unsafe { to.add(i).cast::<u64>().write_unaligned(word) };
        i += step;
    }
}
