//! The fast loop: one instruction at a time between proven-safe bounds.

use super::*;

/// Whether a match `back + 1` bytes back lies in `min..=written`, where it is copied in blocks
/// (`min` is 16 for an M2, 32 for an M3 and 64 for an M3 with a one-byte length extension).
/// Below `min` the source overlaps the blocks, or lies in stores the core cannot forward;
/// above `written` it is a look-behind overrun.
///
/// `PRIMED` (requires `written >= min`): one unsigned compare, as `back - (min - 1)` wraps
/// past `written - min` below `min`. Two compares cost a branch more, and branches share
/// ports 0 and 6 with shifts on Intel's cores, where the M2 and M3 arms were bound by them
/// (docs/perf/lzokit.md).
#[inline(always)]
pub(super) fn in_block_range<const PRIMED: bool>(back: usize, written: usize, min: usize) -> bool {
    if PRIMED { back.wrapping_sub(min - 1) <= written - min } else { back >= min - 1 && back < written }
}

/// In an M2 or M3 arm of [`fast_loop`]: whether the match `$back + 1` bytes back, with
/// `$written` bytes out, is copied in blocks ([`in_block_range`] with bound `$min`); if not,
/// off the hot path, `break`s out of the loop for a look-behind overrun (the reference
/// decoder reports it) and otherwise gives `false` (the arm's nearer copy).
///
/// It uses the calling [`fast_loop`] build's `PRIMED`. A macro because it breaks out of the
/// caller's loop; the same test as a function
/// returning `Option<bool>` compiled the whole loop to another register allocation, slower
/// on every corpus (docs/perf/lzokit.md).
macro_rules! block_copy_or_break {
    ($back:expr, $written:expr, $min:expr) => {{
        let (back, written): (usize, usize) = ($back, $written);
        let far = in_block_range::<PRIMED>(back, written, $min);
        if !far {
            cold_path();
            if back + 1 > written {
                break;
            }
        }
        far
    }};
}

/// Decodes instructions while the margins hold and returns where it stopped (always an
/// instruction boundary, with nothing of the next instruction written). The early build
/// (`PRIMED` false) also stops once [`PRIMED_FROM`] bytes are written; the primed build
/// requires them.
///
/// Requires `at.ip + IN_MARGIN <= src.len()`, `at.op + OUT_MARGIN <= dst.len()` and, if
/// `PRIMED`, `at.op >= PRIMED_FROM`.
#[inline(always)]
pub(super) fn fast_loop<const PRIMED: bool>(
    src: &[u8],
    dst: &mut [u8],
    at: Position,
    distances: impl Distances,
) -> Position {
    let Position { ip, op, mut state, rle } = at;
    let s0 = src.as_ptr();
    let d0 = dst.as_mut_ptr();
    // One past the last byte of each buffer, and the last instruction starts the loop
    // accepts (the margins below the ends). `wrapping_add` only to stay in safe code: every
    // offset is at most the slice length.
    let s_end = s0.wrapping_add(src.len());
    let d_end = d0.wrapping_add(dst.len());
    let ip_last = s0.wrapping_add(src.len() - IN_MARGIN);
    let op_last = d0.wrapping_add(if PRIMED {
        dst.len() - OUT_MARGIN
    } else {
        (dst.len() - OUT_MARGIN).min(PRIMED_FROM - 1)
    });
    let mut ip = s0.wrapping_add(ip);
    let mut op = d0.wrapping_add(op);
    // Whether an instruction starting at `ip` and `op` would break the margins (below): the
    // loop stops before it.
    let past_margins = |ip: *const u8, op: *mut u8| ip > ip_last || op > op_last;
    // Loop invariant at the top: s0 <= ip <= ip_last and d0 <= op <= op_last, so
    // ip..ip + 16 is inside `src`, op..op + 48 inside `dst`, and d0..op initialised output;
    // if PRIMED, op - d0 >= PRIMED_FROM (the requirement; op only grows).
    // Every `unsafe` block below relies on it (named "the margins"). Also, `w` holds the
    // (at least 5) bytes at ip, little-endian: the opcode and its operands.
    // SAFETY: the margins (the caller's requirement): ip + 8 <= ip + 16.
    let mut w = unsafe { load64(ip) };
    'decode: loop {
        let t = (w & 0xFF) as usize;
        if t >= 64 {
            // M2 (`01LDDDSS H` / `1LLDDDSS H`), the most frequent instruction: a match of
            // 3..=8 bytes, one 8-byte block when the distance allows, then S literals.
            let len = (t >> 5) + 1;
            let back = distances.m2(w);
            let dist = back + 1;
            let next = t & 3;
            let far = block_copy_or_break!(back, op.addr() - d0.addr(), 16);
            // SAFETY: 1 <= dist <= op - d0, so op - dist is written output; by the margins
            // op + 48 <= d_end covers the 8-byte block (len <= 8), the single bytes below
            // op + len, or `copy_short`'s 32 bytes, and the 4-byte literal store at
            // op + len <= op + 8; ip + 2 + 8 <= ip + 16 for the literal word. `src` and `dst`
            // do not overlap.
            unsafe {
                if far {
                    core::ptr::copy_nonoverlapping(op.sub(dist), op, 8);
                } else if dist >= 8 {
                    // Rare on most pages, frequent on a few: out of the hot path.
                    cold_path();
                    copy_bytes(op, dist, len);
                } else {
                    copy_short(op, dist, len);
                }
                (ip, op, w) = trailing_literals(ip, 2, op, len, next);
            }
            state = next;
            // Its own end test and loop back, rather than the one the M3 arms share below:
            // fewer ticks on every corpus on an Intel core; the M3 arms given their own too
            // were slower (docs/perf/lzokit.md).
            if past_margins(ip, op) {
                break;
            }
            continue;
        } else if t > 32 {
            // M3 (`001LLLLL` LE16) without length extension: 3..=33 bytes. Opcodes from 64
            // went above, so `t > 32` means `L != 0`, and `L + 2` is `t - 30`. Written as
            // `t >= 32 && t & 31 != 0` with `(t & 31) + 2`, the same decoder took 3-4% longer
            // on node and python pages on an Intel core (on Zen 3 the two were level).
            let len = t - 30;
            let back = distances.m3(w);
            let dist = back + 1;
            let next = ((w >> 8) & 3) as usize;
            let far = block_copy_or_break!(back, op.addr() - d0.addr(), 32);
            // SAFETY: 1 <= dist <= op - d0, so op - dist is written output; the match writes
            // below op + 48 <= d_end (the margins): three 16-byte blocks at most, or
            // `copy_m3_near`'s below op + max(16, len); the literal store at op + len <= op + 33
            // ends at op + 37; ip + 3 + 8 <= ip + 16 for the literal word.
            unsafe {
                if far {
                    // Blocks of 16 never overlap their source.
                    let from = op.sub(dist);
                    core::ptr::copy_nonoverlapping(from, op, 16);
                    core::ptr::copy_nonoverlapping(from.add(16), op.add(16), 16);
                    if len > 32 {
                        core::ptr::copy_nonoverlapping(from.add(32), op.add(32), 16);
                    }
                } else {
                    // The source lies in the last few instructions' stores and, from the
                    // second block on (below 16, from the first), in this one's.
                    copy_m3_near(op, dist, len);
                }
                (ip, op, w) = trailing_literals(ip, 3, op, len, next);
            }
            state = next;
        } else if t == 32 && (w >> 8) & 0xFF != 0 {
            // M3 with a one-byte length extension: 34..=288 bytes (the long matches of real
            // pages, about 20 per page, mostly shorter than 64 bytes).
            let len = ((w >> 8) & 0xFF) as usize + 33;
            // The same 16-bit distance field as an M3's, one byte further on.
            let back = distances.m3(w >> 8);
            let dist = back + 1;
            let next = ((w >> 16) & 3) as usize;
            let far = block_copy_or_break!(back, op.addr() - d0.addr(), 64);
            if len > d_end.addr() - op.addr() - MATCH_SLACK {
                break;
            }
            // SAFETY: 1 <= dist <= op - d0 and op + len + 32 <= d_end (checked above): the
            // four unconditional 16-byte blocks end at op + 64 <= op + len + 30, the loop's
            // below op + len + 16, `copy_short`'s below op + len + 32 (its contract); the
            // literal store ends at op + len + 4; ip + 4 + 8 <= ip + 16 (the margins) for the
            // literal word.
            unsafe {
                if far && dist >= len {
                    // Blocks of 16 never overlap their source. Four without a test: most of
                    // these matches are at most 64 bytes.
                    let from = op.sub(dist);
                    core::ptr::copy_nonoverlapping(from, op, 16);
                    core::ptr::copy_nonoverlapping(from.add(16), op.add(16), 16);
                    core::ptr::copy_nonoverlapping(from.add(32), op.add(32), 16);
                    core::ptr::copy_nonoverlapping(from.add(48), op.add(48), 16);
                    let mut i = 64;
                    while i < len {
                        core::ptr::copy_nonoverlapping(from.add(i), op.add(i), 16);
                        i += 16;
                    }
                } else {
                    // A match longer than its distance repeats its first `dist` bytes:
                    // `copy_match` reads its blocks from them where that is faster than from
                    // the blocks it has just stored.
                    copy_short(op, dist, len);
                }
                (ip, op, w) = trailing_literals(ip, 4, op, len, next);
            }
            state = next;
        } else {
            // Everything else, with the next instruction's bytes loaded afresh below.
            'instruction: {
                let (len, dist, next, after);
                if t >= 32 {
                    // M3 with a length extension.
                    // SAFETY: the margins: ip + 1 is inside `src`.
                    let mut p = unsafe { ip.add(1) };
                    // SAFETY: p = ip + 1 is inside `src`, so p..s_end is part of it.
                    let Some(e) = (unsafe { extension(s_end, &mut p) }) else { break 'decode };
                    if s_end.addr() - p.addr() < 6 {
                        break 'decode;
                    }
                    // SAFETY: p + 6 <= s_end (checked just above).
                    let v = unsafe { le16(p) };
                    len = e + 33;
                    dist = (v >> 2) + 1;
                    next = v & 3;
                    // SAFETY: p + 2 <= s_end.
                    after = unsafe { p.add(2) };
                } else if t >= 16 {
                    // M4, the LZO-RLE zero-run token, or the end marker.
                    let (b1, b2, b3) = ((w >> 8) as u8, (w >> 16) as u8, (w >> 24) as u8);
                    if rle && t >= 0x18 && b1 & 0xFC == 0xFC && b2 == 0xFF {
                        let run = ((t & 7) | (usize::from(b3) << 3)) + MIN_ZERO_RUN;
                        let next = usize::from(b1 & 3);
                        if d_end.addr() - op.addr() < run + SLACK {
                            break 'decode;
                        }
                        // SAFETY: op + run + 16 <= d_end (checked just above) and
                        // op + 32 <= op + 48 <= d_end (the margins) for the zeros (two 16-byte
                        // blocks, or `fill_wide`'s rounded-up blocks or exact fill); the
                        // literal store ends at op + run + 4; ip + 4 + 8 <= ip + 16 (the
                        // margins) for the literal word. `src` and `dst` do not overlap.
                        unsafe {
                            if run <= 32 {
                                op.cast::<[u8; 16]>().write_unaligned([0; 16]);
                                op.add(16).cast::<[u8; 16]>().write_unaligned([0; 16]);
                            } else {
                                fill_wide(op, 0, run);
                            }
                            let lit = load64(ip.add(4));
                            store4(op.add(run), lit);
                            op = op.add(run + next);
                            ip = ip.add(4 + next);
                            w = lit >> (8 * next);
                        }
                        state = next;
                        if past_margins(ip, op) {
                            break 'decode;
                        }
                        continue 'decode;
                    }
                    let mut l = t & 7;
                    // SAFETY: the margins: ip + 1 is inside `src`.
                    let mut p = unsafe { ip.add(1) };
                    if l == 0 {
                        // SAFETY: p = ip + 1 is inside `src`, so p..s_end is part of it.
                        let Some(e) = (unsafe { extension(s_end, &mut p) }) else { break 'decode };
                        l = 7 + e;
                        if s_end.addr() - p.addr() < 6 {
                            break 'decode;
                        }
                    }
                    // SAFETY: p + 6 <= s_end: checked after an extension, else p = ip + 1 and
                    // the margins give ip + 16 <= s_end.
                    let v = unsafe { le16(p) };
                    let far = ((t & 8) << 11) + (v >> 2);
                    if far == 0 {
                        // The end marker: the reference decoder checks what follows it.
                        break 'decode;
                    }
                    len = l + 2;
                    dist = far + 0x4000;
                    next = v & 3;
                    // SAFETY: p + 2 <= s_end.
                    after = unsafe { p.add(2) };
                } else if state == 0 {
                    // Literal run.
                    if t != 0 && s_end.addr() - ip.addr() > 32 {
                        // 4..=18 literals, the usual case: two 16-byte blocks.
                        // SAFETY: ip + 1 + 32 <= s_end (checked just above) and op + 32 <=
                        // op + 48 <= d_end (the margins); `src` and `dst` do not overlap.
                        unsafe {
                            core::ptr::copy_nonoverlapping(ip.add(1), op, 16);
                            core::ptr::copy_nonoverlapping(ip.add(17), op.add(16), 16);
                            ip = ip.add(4 + t);
                            op = op.add(t + 3);
                        }
                        state = 4;
                        break 'instruction;
                    }
                    let mut l = t;
                    // SAFETY: the margins: ip + 1 is inside `src`.
                    let mut p = unsafe { ip.add(1) };
                    if l == 0 {
                        // SAFETY: p = ip + 1 is inside `src`, so p..s_end is part of it.
                        let Some(e) = (unsafe { extension(s_end, &mut p) }) else { break 'decode };
                        l = 15 + e;
                    }
                    let n = l + 3;
                    let in_room = s_end.addr() - p.addr();
                    if in_room < SLACK || n > in_room - SLACK || n > d_end.addr() - op.addr() - SLACK {
                        break 'decode;
                    }
                    // SAFETY: p + n + 16 <= s_end and op + n + 16 <= d_end (checked above; the
                    // subtractions cannot underflow: in_room >= 16 and d_end - op >= 48), which
                    // covers the rounded-up 16-byte blocks `copy_wide` moves.
                    unsafe {
                        copy_wide(p, op, n);
                        ip = p.add(n);
                        op = op.add(n);
                    }
                    state = 4;
                    break 'instruction;
                } else {
                    // M1 (after 1..3 literals) or the 3-byte match after a literal run.
                    (len, dist) = short_match(t, ((w >> 8) & 0xFF) as usize, state);
                    next = t & 3;
                    // SAFETY: the margins: ip + 2 is inside `src`.
                    after = unsafe { ip.add(2) };
                }
                // Look-behind overruns and matches that do not fit go to the reference.
                let room = d_end.addr() - op.addr();
                if dist > op.addr() - d0.addr() || len > room - 4 {
                    break 'decode;
                }
                // SAFETY: 1 <= dist <= op - d0 and op + len + 4 <= d_end (checked above; room
                // >= 48 by the margins): `copy_match` writes below op + len + 32 <= d_end when
                // that holds, else `copy_match_exact` exactly op..op + len; then the 4-byte
                // literal copy ends at op + len + 4, from after + 4 <= s_end (after = ip + 2
                // for M1, and `s_end - p >= 6` was checked otherwise). `src` and `dst` do not
                // overlap.
                unsafe {
                    if len > room - MATCH_SLACK {
                        // A long match running up to the end of the page (a page ending in
                        // zeros, say): exact, rather than byte by byte in the reference.
                        copy_match_exact(op, dist, len);
                    } else {
                        copy_match(op, dist, len);
                    }
                    core::ptr::copy_nonoverlapping(after, op.add(len), 4);
                    op = op.add(len + next);
                    ip = after.add(next);
                }
                state = next;
            }
            if past_margins(ip, op) {
                break;
            }
            // SAFETY: the margins, just checked: ip + 8 <= ip + 16.
            w = unsafe { load64(ip) };
            continue;
        }
        // Every instruction above moved ip and op forward within their buffers (next <= 3
        // literals were inside the checked input, len + next bytes inside the output).
        if past_margins(ip, op) {
            break;
        }
    }
    Position { ip: ip.addr() - s0.addr(), op: op.addr() - d0.addr(), state, rle }
}

/// Marks the branch that calls it as rarely taken, so that LLVM lays it out away from the
/// hot path (`core::hint::cold_path` does the same from Rust 1.95, above this crate's MSRV).
/// Always inlined, to nothing: kept out of line, its calls stayed in the decoder's loop in
/// builds with several codegen units (cargo's default release profile), each spilling the
/// registers a call clobbers (docs/perf/lzokit.md).
#[cold]
#[inline(always)]
pub(super) fn cold_path() {}
