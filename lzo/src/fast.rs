//! The fast decoder: the reference decoder's instructions with wide copies.
//!
//! Structure: between two instructions, while at least [`IN_MARGIN`] input and
//! [`OUT_MARGIN`] output bytes remain, an instruction is parsed and, only if every byte it
//! reads and writes is proven in bounds and it is valid (no look-behind overrun, not the
//! end marker), executed with 8/16-byte copies that may write up to 31 bytes of scratch past
//! the exact end (later overwritten, or past the returned length). Any other case breaks
//! out *before* writing anything for that instruction and hands the same position to the
//! reference decoder, which finishes the stream with every access checked and reports
//! errors. So the result (bytes written or error) is always the reference decoder's. The
//! loop runs in two builds ([`fast_phases`]): an early one for the first [`PRIMED_FROM`]
//! output bytes, and a primed one that may take that much output as written.
//!
//! Speed: the loop walks raw pointers, reads M2/M3 operands at fixed offsets from `ip`, and
//! takes the next opcode from the word that holds the trailing literals, so that only the
//! load, an `and` and the additions to `ip` lie between one opcode and the next (the next
//! instruction's address is `ip + 2 + S` for M2, `ip + 3 + S` for M3, `S` from the load).
//! On real pages no shorter form of that chain has been faster both where the core has learnt
//! the page and where it has not: a branch on `S == 0`, which moves `ip` by a constant, is
//! 2.5-10% faster in the first case and 8-22% slower in the second. Removing every M2 and M3
//! copy saves only about 5%: the time goes on walking the instructions, about 5.5 TSC ticks
//! each once the core has learnt a page's branches. On Intel's cores, ports 0 and 6 run both
//! the branches and the shifts, two per cycle between them, and an M3 took ten of them: so
//! the primed build tests a match's distance range with one branch ([`in_block_range`]) and
//! takes M3 distances by `pext` on port 1 ([`Pext::new`]).
//!
//! A match whose source lies in the last few instructions' stores waits until they reach the
//! cache, because a wide load that spans two stores cannot take its bytes from the store
//! buffer. So such matches are copied with loads the core can forward: M2s at distances
//! 8..=15 byte by byte ([`copy_bytes`]), M3s at 16..=31 the same after one 16-byte block and
//! below 16 entirely ([`copy_m3_near`]), and long matches at periods 8..=15 and from 64 from
//! the pattern ([`copy_period_8_to_15`], [`copy_long_period`]).
//! SPEC.md section 5 gives the per-instruction costs and what was tried.

use crate::DecompressError;
use crate::decompress::{MAX_255_COUNT, Position, decode_from, first_literals, read_header};
use crate::format::{MIN_ZERO_RUN, short_match};
#[cfg(target_arch = "x86_64")]
use pagecodec::cpu::{X86Feature, x86_has};

/// Input bytes required at an instruction's start: opcode, two operand bytes, and a 4-byte
/// copy of up to 3 trailing literals, with slack for the zero-run token (4 + 4 bytes).
const IN_MARGIN: usize = 16;
/// Output bytes required at an instruction's start: a short match (up to 8 bytes) with
/// `copy_match`'s 32 scratch bytes, then a 4-byte literal copy; an M3 without length
/// extension (at most 33 bytes, copied as three 16-byte blocks).
const OUT_MARGIN: usize = 48;
/// Output bytes written before the fast loop's primed phase ([`fast_phases`]) takes over. From
/// there on, one unsigned compare tells whether a match's distance lies between its block
/// copy's lower bound (16 for an M2, 32 for an M3, 64 for an M3 with a one-byte length
/// extension: at most this) and the output written ([`in_block_range`]).
const PRIMED_FROM: usize = 64;
/// Scratch bytes a wide literal copy may write past its exact end.
const SLACK: usize = 16;
/// Scratch bytes a match copy may write past its exact end (it copies at least 32 bytes
/// when the distance allows).
const MATCH_SLACK: usize = 32;

/// Decompresses `src` into `dst`; same contract and results as the reference decoder
/// (`decompress::decompress_reference`, built for tests).
pub(crate) fn decompress_fast(src: &[u8], dst: &mut [u8]) -> Result<usize, DecompressError> {
    decompress_with(src, dst, best_fast_loop)
}

/// [`decompress_fast`] with `run` as the fast loop (one of the builds of [`fast_loop`]).
#[inline(always)]
fn decompress_with(
    src: &[u8],
    dst: &mut [u8],
    run: impl FnOnce(&[u8], &mut [u8], Position) -> Position,
) -> Result<usize, DecompressError> {
    let (mut ip, rle) = read_header(src);
    let mut op = 0;
    let state = first_literals(src, &mut ip, dst, &mut op)?;
    let mut at = Position { ip, op, state, rle };
    if within_margins(src, dst, at) {
        at = run(src, dst, at);
    }
    decode_from(src, dst, at)
}

/// Whether the fast loop may start at `at`: [`IN_MARGIN`] input and [`OUT_MARGIN`] output
/// bytes remain. (`at.ip <= src.len()` and `at.op <= dst.len()` at every instruction
/// boundary.)
#[inline(always)]
fn within_margins(src: &[u8], dst: &[u8], at: Position) -> bool {
    src.len() - at.ip >= IN_MARGIN && dst.len() - at.op >= OUT_MARGIN
}

/// Runs the fast loop in two phases: `early` (its early build) until [`PRIMED_FROM`] bytes are
/// written (every page needs a few instructions there), then `primed` (its primed build)
/// while the margins hold. Same requirements and result as [`fast_loop`].
///
/// The two builds come as closures rather than one `Distances` value passed to both: in the
/// BMI2 build the two forms compile to different register allocations, and the closures'
/// decoded 1-4% faster on every corpus (SPEC.md section 5, twenty-ninth session).
#[inline(always)]
fn fast_phases(
    src: &[u8],
    dst: &mut [u8],
    mut at: Position,
    early: impl FnOnce(&[u8], &mut [u8], Position) -> Position,
    primed: impl FnOnce(&[u8], &mut [u8], Position) -> Position,
) -> Position {
    if at.op < PRIMED_FROM {
        at = early(src, dst, at);
        if at.op < PRIMED_FROM || !within_margins(src, dst, at) {
            return at;
        }
    }
    primed(src, dst, at)
}

/// [`fast_phases`] with the two builds of [`fast_loop`] for `distances` (an expression each
/// closure evaluates), as closures (see there).
macro_rules! fast_phases_with {
    ($src:expr, $dst:expr, $at:expr, $distances:expr) => {
        fast_phases(
            $src,
            $dst,
            $at,
            |s, d, a| fast_loop::<false>(s, d, a, $distances),
            |s, d, a| fast_loop::<true>(s, d, a, $distances),
        )
    };
}

/// [`fast_loop`] built for BMI2 where [`bmi2_build_fits`], else the baseline build.
#[inline(always)]
fn best_fast_loop(src: &[u8], dst: &mut [u8], at: Position) -> Position {
    #[cfg(target_arch = "x86_64")]
    if bmi2_build_fits() {
        // SAFETY: the CPU has BMI2 (part of the test just above).
        return unsafe { fast_loop_bmi2(src, dst, at) };
    }
    fast_phases_with!(src, dst, at, Shifts)
}

/// Whether to run [`fast_loop_bmi2`]: the CPU has BMI2 and runs `pext` in hardware.
///
/// AMD's cores before Zen 3, and Hygon's (built on Zen 1), run `pext` as microcode, at a cost
/// that grows with the mask's set bits (11 and 14 here) instead of one operation; they take
/// the baseline build, which costs them nothing else, as their `shr` by `cl` is one operation.
/// They are told apart by features, so that the rule also works from compile-time features:
/// `sse4a` marks an AMD or Hygon core, and of those only Zen 3 and later have `vaes`.
#[cfg(target_arch = "x86_64")]
fn bmi2_build_fits() -> bool {
    bmi2_available() && pext_in_hardware(x86_has(X86Feature::Sse4a), x86_has(X86Feature::Vaes))
}

/// The rule of [`bmi2_build_fits`]: `pext` is fast unless the core is AMD's or Hygon's
/// (`sse4a`) and older than Zen 3 (no `vaes`).
#[cfg(target_arch = "x86_64")]
const fn pext_in_hardware(sse4a: bool, vaes: bool) -> bool {
    !sse4a || vaes
}

/// Whether this CPU has BMI2, by the family's rule ([`x86_has`]: detected at run time under
/// `std`, taken from the compile-time target features without it and under Miri).
#[cfg(target_arch = "x86_64")]
fn bmi2_available() -> bool {
    x86_has(X86Feature::Bmi2)
}

/// [`fast_loop`] compiled with BMI2, taking match distances out with [`Pext`]. The next
/// opcode comes out of the literal word by a shift of `8 * S` bits, on the chain from one
/// opcode to the next: without BMI2 that is `shr` by `cl`, which recent Intel cores split into
/// two operations, with it one `shrx` (about 2% fewer ticks on every corpus on the Intel core
/// of SPEC.md section 5's twenty-third session). `pext` gathers an M2's or M3's distance bits
/// in one operation instead of shifts, masks and an addition: in the twenty-seventh session,
/// 4% fewer ticks on python and main pages and 1% on node pages once the core has learnt a
/// page, level where it has not.
///
/// # Safety
///
/// The CPU supports BMI2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "bmi2")]
unsafe fn fast_loop_bmi2(src: &[u8], dst: &mut [u8], at: Position) -> Position {
    // SAFETY: the CPU has BMI2 (the caller's contract).
    let pext = unsafe { Pext::new() };
    fast_phases_with!(src, dst, at, pext)
}

/// How the fast loop takes a match distance out of an instruction's first bytes `w`
/// (little-endian, the opcode in the low byte).
trait Distances: Copy {
    /// An M2's distance minus one: the opcode's bits 2..=4 below the next byte's 8 bits.
    fn m2(self, w: u64) -> usize;
    /// An M3's distance minus one: the high 14 bits of the 16-bit field after the opcode.
    fn m3(self, w: u64) -> usize;
}

/// Distances by shifts and masks, on every CPU.
#[derive(Clone, Copy)]
struct Shifts;

impl Distances for Shifts {
    #[inline(always)]
    fn m2(self, w: u64) -> usize {
        let (t, h) = ((w & 0xFF) as usize, ((w >> 8) & 0xFF) as usize);
        ((t >> 2) & 7) + (h << 3)
    }

    #[inline(always)]
    fn m3(self, w: u64) -> usize {
        ((w >> 8) & 0xFFFF) as usize >> 2
    }
}

/// Distances by one `pext` each. Made only where the CPU has BMI2: in [`fast_loop_bmi2`] and
/// in tests that check for it.
#[cfg(target_arch = "x86_64")]
#[derive(Clone, Copy)]
struct Pext {
    /// The M3 mask, hidden from the optimiser ([`Pext::new`]).
    m3_mask: u64,
}

#[cfg(target_arch = "x86_64")]
impl Pext {
    /// The extraction, with the M3 mask passed through [`core::hint::black_box`] once: LLVM
    /// otherwise turns a `pext` by that contiguous mask into a shift and an `and`, and on
    /// Intel's cores a shift runs on ports 0 and 6, the two that also run every branch, of
    /// which an M3 took seven. With the mask hidden, pages decoded 1-2.6% faster
    /// (SPEC.md section 5, twenty-ninth session).
    ///
    /// # Safety
    ///
    /// The CPU supports BMI2.
    unsafe fn new() -> Pext {
        Pext { m3_mask: core::hint::black_box(0xFF_FC00) }
    }
}

#[cfg(target_arch = "x86_64")]
impl Distances for Pext {
    #[inline(always)]
    fn m2(self, w: u64) -> usize {
        // SAFETY: a `Pext` is made only where the CPU has BMI2 (the type's contract).
        unsafe { core::arch::x86_64::_pext_u64(w, 0xFF1C) as usize }
    }

    #[inline(always)]
    fn m3(self, w: u64) -> usize {
        // SAFETY: a `Pext` is made only where the CPU has BMI2 (the type's contract).
        unsafe { core::arch::x86_64::_pext_u64(w, self.m3_mask) as usize }
    }
}

/// Whether a match `back + 1` bytes back lies in `min..=written`, where it is copied in blocks
/// (`min` is 16 for an M2, 32 for an M3 and 64 for an M3 with a one-byte length extension).
/// Below `min` the source overlaps the blocks, or lies in stores the core cannot forward;
/// above `written` it is a look-behind overrun.
///
/// `PRIMED` (requires `written >= min`): one unsigned compare, as `back - (min - 1)` wraps
/// past `written - min` below `min`. Two compares cost a branch more, and branches share
/// ports 0 and 6 with shifts on Intel's cores, where the M2 and M3 arms were bound by them
/// (SPEC.md section 5, twenty-ninth session).
#[inline(always)]
fn in_block_range<const PRIMED: bool>(back: usize, written: usize, min: usize) -> bool {
    if PRIMED { back.wrapping_sub(min - 1) <= written - min } else { back >= min - 1 && back < written }
}

/// In an M2 or M3 arm of [`fast_loop`]: whether the match `$back + 1` bytes back, with
/// `$written` bytes out, is copied in blocks ([`in_block_range`] with bound `$min`); if not,
/// off the hot path, `break`s out of the loop for a look-behind overrun (the reference
/// decoder reports it) and otherwise gives `false` (the arm's nearer copy).
///
/// It uses the calling [`fast_loop`] build's `PRIMED`. A macro because it breaks out of the
/// caller's loop; the same test as a function
/// returning `Option<bool>` compiled the whole loop to another register allocation, 1-2%
/// slower on every corpus (SPEC.md section 5, twenty-ninth session).
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
fn fast_loop<const PRIMED: bool>(
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
            // fewer ticks on every corpus on the Intel core of SPEC.md section 5's
            // twenty-fifth session (node pages' median about 2%); the M3 arms given their
            // own too were 0.4% slower.
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
#[cold]
#[inline(never)]
fn cold_path() {}

/// Returns `p` unchanged, hidden from the optimiser: [`fill_wide`] passes each block's
/// address through it so that LLVM keeps its store loop a loop instead of calling `memset`.
/// Elsewhere it is the identity.
#[cfg(all(target_arch = "x86_64", not(miri)))]
#[inline(always)]
// The block never dereferences `p`: it only hides its value.
#[allow(clippy::pointers_in_nomem_asm_block)]
fn opaque(mut p: *const u8) -> *const u8 {
    // SAFETY: an empty assembly block that only names the register holding `p`: it reads
    // and writes no memory, keeps the stack and the flags, and leaves `p` as it was.
    unsafe {
        core::arch::asm!("/* {0} */", inout(reg) p, options(pure, nomem, nostack, preserves_flags));
    }
    p
}

/// The identity (no assembly barrier on this target or under Miri).
#[cfg(not(all(target_arch = "x86_64", not(miri))))]
#[inline(always)]
fn opaque(p: *const u8) -> *const u8 {
    p
}

/// Ends an M2 or M3 whose operands take the `operands` bytes at `ip`: writes its `next`
/// (0..=3) trailing literals, the low bytes of the word after the operands, behind the
/// `len`-byte match at `op`, and returns the next instruction's `ip` and `op` and its first
/// bytes, taken from that same word instead of a new load at `ip`.
///
/// # Safety
///
/// `ip + operands + 8` is inside the input and `op + len + 4` inside the output.
#[inline(always)]
unsafe fn trailing_literals(
    ip: *const u8,
    operands: usize,
    op: *mut u8,
    len: usize,
    next: usize,
) -> (*const u8, *mut u8, u64) {
    // SAFETY: the caller's contract.
    unsafe {
        let lit = load64(ip.add(operands));
        store4(op.add(len), lit);
        (ip.add(operands + next), op.add(len + next), lit >> (8 * next))
    }
}

/// Reads 8 bytes at `p` as a little-endian word (byte `p` in the low bits).
///
/// # Safety
///
/// `p..p + 8` is inside the input slice.
#[inline(always)]
unsafe fn load64(p: *const u8) -> u64 {
    // SAFETY: the caller guarantees the 8 bytes are in bounds; unaligned reads are fine.
    u64::from_le_bytes(unsafe { p.cast::<[u8; 8]>().read_unaligned() })
}

/// Writes the low 4 bytes of `word` (little-endian) at `to`: up to 3 trailing literals and
/// scratch.
///
/// # Safety
///
/// `to..to + 4` is writable output.
#[inline(always)]
unsafe fn store4(to: *mut u8, word: u64) {
    // SAFETY: the caller guarantees the 4 bytes are in bounds; unaligned writes are fine.
    unsafe { to.cast::<[u8; 4]>().write_unaligned((word as u32).to_le_bytes()) };
}

/// Reads the little-endian 16-bit field at `p`.
///
/// # Safety
///
/// `p` and `p + 1` are inside the input slice.
#[inline(always)]
unsafe fn le16(p: *const u8) -> usize {
    // SAFETY: the caller guarantees both bytes are in bounds; unaligned reads are fine.
    usize::from(u16::from_le(unsafe { p.cast::<u16>().read_unaligned() }))
}

/// A length extension (see the reference decoder) starting at `*p`, or `None` when it runs
/// into `s_end` or would overflow: the reference decoder then reports the error.
///
/// # Safety
///
/// `*p..s_end` is part of the input slice (`s_end` its end).
#[inline]
unsafe fn extension(s_end: *const u8, p: &mut *const u8) -> Option<usize> {
    let start = *p;
    loop {
        if *p >= s_end {
            return None;
        }
        // SAFETY: start <= *p < s_end, inside the input slice (the caller's promise).
        match unsafe { **p } {
            0 => *p = p.wrapping_add(1),
            b => {
                let zeros = p.addr() - start.addr();
                *p = p.wrapping_add(1);
                return (zeros <= MAX_255_COUNT).then(|| zeros * 255 + usize::from(b));
            }
        }
    }
}

/// Copies `n` bytes from `from` to `to` in 16-byte blocks (rounded up).
///
/// # Safety
///
/// `from..from + n + 16` is readable, `to..to + n + 16` writable, and they do not overlap.
#[inline(always)]
unsafe fn copy_wide(from: *const u8, to: *mut u8, n: usize) {
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
unsafe fn copy_short(to: *mut u8, dist: usize, len: usize) {
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
/// which the core forwards. On the node pages with 20 or more of these M3s, the block
/// instead of its 16 single bytes took another 14-15% off the ticks (SPEC.md section 5,
/// twenty-fourth session). As a call it leaves the fast loop compiled as before; an inlined
/// variant changed the loop's register allocation and tails, and every corpus decoded 5-7%
/// slower.
///
/// # Safety
///
/// `1 <= dist < 32`, the `dist` bytes before `to` are initialised output, and
/// `to..to + max(16, len)` is writable output.
#[cold]
#[inline(never)]
unsafe fn copy_m3_near(to: *mut u8, dist: usize, len: usize) {
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
unsafe fn copy_match_exact(to: *mut u8, dist: usize, len: usize) {
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
/// 8..=15 took 9-10% off node pages' mean ticks, and M3s at 16..=31 14% off those of the
/// node pages with 20 or more of them (SPEC.md section 5, twenty-fourth session). The
/// accesses are volatile so that LLVM keeps them one byte wide instead of merging them into
/// the wide loads this function exists to avoid.
///
/// # Safety
///
/// `1 <= dist`, the `dist` bytes before `to` are initialised output, and `to..to + len` is
/// writable output.
#[inline(always)]
unsafe fn copy_bytes(to: *mut u8, dist: usize, len: usize) {
    for k in 0..len {
        // SAFETY: k < len is writable, and k - dist is either before `to` (initialised, by
        // the caller) or an earlier byte of this match, already written.
        unsafe { to.add(k).write_volatile(to.add(k).sub(dist).read_volatile()) };
    }
}

/// Repeats a pattern of `period` bytes: writes 16-byte blocks at `to + i` for `i = start,
/// start + 16, ...` while `i < len`, the block at `i` read from `base + ((i - start) mod
/// period)`, where the pattern's one period `base..base + period` ends at `to + start`.
///
/// Why: each load then reads the pattern (or, past its end, the first block written here)
/// instead of the block stored `period` bytes earlier. At periods that are not a multiple of
/// the block size such a load spans two recent stores, which the core cannot forward to it,
/// so every block waited for the stores before it; `lzo` decoded node pages 2-4% faster
/// (SPEC.md section 5).
///
/// # Safety
///
/// `16 <= period`, `base + period == to + start`, `base..base + period` is initialised
/// output, and `to + start..to + len + 16` is writable output. Then every block reads inside
/// `base..to + start + 15`: the pattern, or bytes the first block (which reads only the
/// pattern) has written.
#[inline(always)]
unsafe fn copy_periodic(to: *mut u8, base: *const u8, period: usize, start: usize, len: usize) {
    let mut i = start;
    // (i - start) mod period, kept below `period` by one subtraction (16 <= period).
    let mut m = 0;
    while i < len {
        // SAFETY: i < len, so the write lies inside to + start..to + len + 16 (writable). The
        // read: for the first block (m = 0) base..base + 16, inside the pattern as
        // 16 <= period; for later ones (m < period) inside base..to + start + 15, the pattern
        // and the first block's bytes, so initialised. It ends before the write starts: at
        // base + 16 <= to + start for the first block, by to + start + 15 < to + i after.
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
/// the pattern's end and this match's first block, which the core cannot forward to it. A
/// page of one match at period 8, 9, 12 or 15 decodes in 258-500 ticks instead of 596-630
/// this way, the node pages with 300 or more such bytes about 2.5 times as fast (SPEC.md
/// section 5, twenty-fourth session).
///
/// # Safety
///
/// `8 <= period < 16`, the `period` bytes before `to` are initialised output, and
/// `to..to + len + 15` is writable output.
#[inline(always)]
unsafe fn copy_period_8_to_15(to: *mut u8, period: usize, len: usize) {
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
/// core cannot forward to it, so every block waited for the stores before it. SPEC.md
/// section 5, twenty-eighth session, gives the figures.
///
/// # Safety
///
/// `64 <= period`, the `period` bytes before `to` are initialised output, and
/// `to..to + len + 15` is writable output.
#[inline(never)]
unsafe fn copy_long_period(to: *mut u8, period: usize, len: usize) {
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
const INLINE_FILL_MAX: usize = 256;

/// Writes `n` bytes of `byte` at `to`: up to [`INLINE_FILL_MAX`] in 16-byte blocks (rounded
/// up), longer runs exactly, by `memset`.
///
/// Why both: on a short run a `memset` call costs more than a few inline stores, and LLVM
/// turns a plain store loop into such a call, so the loop hides each block's address behind
/// [`opaque`]. Long runs (distance-1 matches of hundreds of bytes, pages ending in zeros) go
/// to `memset`, whose wider stores win there. Against the plain loop, which compiled to
/// `memset` for every run, `lzo-rle` decodes real pages 3-9% faster and `lzo` is unchanged
/// (SPEC.md section 5).
///
/// # Safety
///
/// `to..to + n + 16` is writable.
#[inline(always)]
unsafe fn fill_wide(to: *mut u8, byte: u8, n: usize) {
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
unsafe fn copy_match(to: *mut u8, dist: usize, len: usize) {
    // SAFETY: every write is below to + max(32, len + 15): 16-byte blocks from 0 while below
    // len, at least two; `copy_periodic`'s 16-byte blocks starting below len;
    // `copy_period_8_to_15`'s and `copy_long_period`'s blocks, below len + 15;
    // `fill_wide`'s 16-byte blocks or exact fill; single bytes below len. Every read is of
    // initialised output: the far blocks read at least `dist` bytes before the write they
    // feed; `copy_periodic` reads its pattern (the `dist` bytes before `to`, or the first
    // `step` bytes written here, with `base + period` at the block start as it requires) and
    // its own first block; `copy_period_8_to_15` reads the `dist` bytes before `to`,
    // `copy_long_period` those and bytes it has written; the single bytes read `dist` bytes
    // back.
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
            copy_periodic(to, from, dist, 0, len);
        } else if dist >= 8 {
            copy_period_8_to_15(to, dist, len);
        } else if dist == 1 {
            fill_wide(to, *from, len);
        } else {
            // Period 2..7: write the first `step` bytes (a multiple of the period, 16..=21)
            // one by one, then repeat them in 16-byte blocks.
            let step = dist * 16usize.div_ceil(dist);
            let head = len.min(step);
            copy_bytes(to, dist, head);
            if head < len {
                copy_periodic(to, to, step, step, len);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    extern crate alloc;
    use alloc::vec;
    use alloc::vec::Vec;

    use pagecodec::testing::{PageClass, Rng, generate};

    use super::*;
    use crate::decompress::decompress_reference;
    use crate::{Compressor, worst_case_len};

    /// Every build of the fast loop this CPU can run (the one `decompress` dispatches to is
    /// among them), and the reference decoder, on buffers pre-filled differently: same
    /// verdict, same bytes.
    fn same_as_reference(stream: &[u8], cap: usize) {
        let mut b = vec![0xFF; cap];
        let reference = decompress_reference(stream, &mut b);
        let check = |build: &str, fast: Result<usize, DecompressError>, a: &[u8]| {
            assert_eq!(fast, reference, "{build}: stream {:02x?}", &stream[..stream.len().min(24)]);
            if let Ok(n) = fast {
                assert!(a[..n] == b[..n], "{build}: decoded bytes differ");
            }
        };
        let mut a = vec![0x00; cap];
        let run = |s: &[u8], d: &mut [u8], at| fast_phases_with!(s, d, at, Shifts);
        check("baseline", decompress_with(stream, &mut a, run), &a);
        #[cfg(target_arch = "x86_64")]
        if bmi2_available() {
            let mut a = vec![0x00; cap];
            // SAFETY: the CPU has BMI2 (checked just above).
            let run = |s: &[u8], d: &mut [u8], at| unsafe { fast_loop_bmi2(s, d, at) };
            check("bmi2", decompress_with(stream, &mut a, run), &a);
        }
    }

    fn streams() -> Vec<(Vec<u8>, usize)> {
        let mut c = Compressor::new();
        let mut out = vec![0u8; worst_case_len(8192)];
        let mut v = Vec::new();
        let seeds = if cfg!(miri) { 1 } else { 3 };
        for class in PageClass::ALL {
            for seed in 0..seeds {
                let page = generate(class, seed);
                let n = c.compress(page.as_bytes(), &mut out).unwrap();
                v.push((out[..n].to_vec(), 4096));
                let n = c.compress_rle(page.as_bytes(), &mut out).unwrap();
                v.push((out[..n].to_vec(), 4096));
            }
        }
        // Matches at short periods and lengths around the block sizes: 1 (fill), 2..=7 (a byte
        // head of 16..=21 bytes, then 16-byte blocks), 8..=15 (8-byte blocks; M2s and M3s
        // byte by byte), 16..=63 (16-byte blocks repeating the pattern; M3s below 32 byte by
        // byte) and 64 on (blocks from the pattern when the match is longer than its period;
        // from 128 for two periods, then from two periods back). (M3 lengths 34..=288 take
        // the one-byte-extension path.)
        let periods: &[usize] = if cfg!(miri) {
            &[1, 2, 7, 8, 16, 17, 40, 90, 130]
        } else {
            &[
                1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 15, 16, 17, 20, 24, 33, 40, 63, 64, 65, 79, 80, 90, 127, 128,
                129, 200,
            ]
        };
        let lens: &[usize] = if cfg!(miri) {
            &[3, 9, 33, 70, 300]
        } else {
            &[3, 7, 8, 9, 15, 16, 17, 31, 33, 34, 35, 48, 63, 64, 65, 80, 100, 287, 288, 289, 1000]
        };
        for &period in periods {
            for &len in lens {
                let mut src: Vec<u8> = (0..period).map(|i| (i * 37 + 1) as u8).collect();
                for i in 0..len {
                    src.push(src[i]);
                }
                src.extend_from_slice(b"tail literals that end the stream..");
                let n = c.compress(&src, &mut out).unwrap();
                v.push((out[..n].to_vec(), src.len()));
            }
        }
        // LZO-RLE zero-run tokens of every length class: two blocks, the inline fill, and
        // `memset` (longer than `INLINE_FILL_MAX`), and runs split into several tokens.
        let runs: &[usize] = if cfg!(miri) {
            &[5, 40, 300]
        } else {
            &[4, 5, 31, 32, 33, 100, 255, 256, 257, 258, 300, 2051, 2052, 2060, 3000]
        };
        for &run in runs {
            let mut src: Vec<u8> = (0..30).map(|i| (i * 37 + 1) as u8).collect();
            src.resize(30 + run, 0);
            src.extend_from_slice(b"tail literals that end the stream..");
            let n = c.compress_rle(&src, &mut out).unwrap();
            v.push((out[..n].to_vec(), src.len()));
        }
        // Long matches (general path) ending 20..=40 bytes before the end of the output,
        // where the 32 scratch bytes do not fit and the exact copy runs.
        let tails: &[usize] = if cfg!(miri) { &[20, 31] } else { &[20, 25, 31, 32, 33, 40] };
        for &period in &[1usize, 7, 40] {
            for &len in &[300usize, 2000] {
                for &tail in tails {
                    let mut src: Vec<u8> = (0..40).map(|i| (i * 37 + 1) as u8).collect();
                    for i in 0..len {
                        src.push(src[40 - period + i % period]);
                    }
                    src.extend((0..tail).map(|i| (i * 11 + 5) as u8));
                    let n = c.compress(&src, &mut out).unwrap();
                    v.push((out[..n].to_vec(), src.len()));
                }
            }
        }
        v
    }

    #[test]
    fn fast_equals_reference_on_valid_streams_and_every_output_size() {
        for (stream, len) in streams() {
            let caps = [len, len.saturating_sub(1), len + 40, len + 1, len / 2, 0];
            for &cap in &caps[..if cfg!(miri) { 2 } else { caps.len() }] {
                same_as_reference(&stream, cap);
            }
        }
    }

    #[test]
    fn fast_equals_reference_on_damaged_streams() {
        let step = if cfg!(miri) { 61 } else { 1 };
        for (stream, len) in streams().into_iter().step_by(if cfg!(miri) { 9 } else { 2 }) {
            for cut in (0..stream.len()).step_by(step) {
                same_as_reference(&stream[..cut], len);
            }
            let mut damaged = stream.clone();
            for bit in (0..stream.len() * 8).step_by(step * 3) {
                damaged[bit / 8] ^= 1 << (bit % 8);
                same_as_reference(&damaged, len);
                damaged[bit / 8] ^= 1 << (bit % 8);
            }
        }
    }

    #[test]
    fn fast_equals_reference_on_garbage() {
        let mut rng = Rng::new(3);
        let cases = if cfg!(miri) { 20 } else { 3000 };
        for case in 0..cases {
            let len = rng.below(300) as usize;
            let mut stream = vec![0u8; len];
            rng.fill(&mut stream);
            if case % 3 == 0 {
                for b in stream.iter_mut().step_by(2) {
                    *b &= 0x1F;
                }
            }
            if case % 5 == 0 && len > 2 {
                stream[0] = 0x11;
                stream[1] = 1;
            }
            same_as_reference(&stream, rng.below(5000) as usize);
        }
    }

    /// M2s, M3s and M3s with a one-byte length extension at distances around their block
    /// copy's lower bound (16, 32, 64) and around the output written (in range, one past it),
    /// in the early phase (a first literal run shorter than `PRIMED_FROM`) and in the primed
    /// phase (after a literal run that crosses it).
    #[test]
    fn block_range_edges_in_both_phases() {
        /// Pushes a match; `min` names the kind (16: M2, 32: M3, 64: M3 with an extension).
        fn push_match(s: &mut Vec<u8>, min: usize, dist: usize, len: usize) {
            match min {
                16 => s.extend([(((len - 1) << 5) | (((dist - 1) & 7) << 2)) as u8, ((dist - 1) >> 3) as u8]),
                32 => s.push(0x20 | (len - 2) as u8),
                _ => s.extend([0x20, (len - 33) as u8]),
            }
            if min > 16 {
                s.extend_from_slice(&(((dist - 1) << 2) as u16).to_le_bytes());
            }
        }
        let firsts: &[usize] = if cfg!(miri) { &[4, 40] } else { &[4, 8, 15, 16, 17, 31, 32, 33, 63] };
        let gaps: &[usize] = if cfg!(miri) { &[4, 30] } else { &[4, 9, 17, 30] };
        for &first in firsts {
            for &gap in gaps {
                for (min, len) in [(16, 6), (32, 20), (64, 40)] {
                    // Before the first match `first` bytes are written; before the second,
                    // `first + len + gap` (at least PRIMED_FROM in some cases).
                    let mut dists = vec![1, 8, min - 1, min, min + 1];
                    for written in [first, first + len + gap] {
                        dists.extend([written - 1, written, written + 1]);
                    }
                    for &d1 in &dists {
                        for &d2 in &dists {
                            let mut s = vec![17 + first as u8];
                            s.extend((0..first).map(|i| (i * 7 + 3) as u8));
                            push_match(&mut s, min, d1.min(first + 1), len);
                            s.push(gap as u8 - 3);
                            s.extend((0..gap).map(|i| (i * 5 + 1) as u8));
                            push_match(&mut s, min, d2, len);
                            // Literals that keep the input margin, then the end marker.
                            s.push(15);
                            s.extend((0..18).map(|i| (i * 3 + 2) as u8));
                            s.extend_from_slice(&[0x11, 0, 0]);
                            same_as_reference(&s, 4096);
                        }
                    }
                }
            }
        }
    }

    /// `Pext` takes the same distance as `Shifts` out of every M2 and M3 field, whatever the
    /// bytes around it hold.
    #[test]
    #[cfg(target_arch = "x86_64")]
    fn pext_and_shifts_agree_on_every_distance_field() {
        if !bmi2_available() {
            return;
        }
        let mut rng = Rng::new(27);
        for field in 0..=0xFFFF_u64 {
            let around = rng.next_u64();
            let m2 = field | (around << 16);
            // SAFETY: the CPU has BMI2 (checked above).
            let pext = unsafe { Pext::new() };
            assert_eq!(pext.m2(m2), Shifts.m2(m2), "M2 word {m2:#x}");
            let m3 = (around & 0xFF) | (field << 8) | (around << 24);
            assert_eq!(pext.m3(m3), Shifts.m3(m3), "M3 word {m3:#x}");
        }
    }

    /// Which cores take the BMI2 build: Intel's (no `sse4a`) and AMD's from Zen 3 (`sse4a`
    /// and `vaes`), not AMD's before Zen 3 or Hygon's (`sse4a` without `vaes`).
    #[test]
    #[cfg(target_arch = "x86_64")]
    fn pext_in_hardware_by_core() {
        assert!(pext_in_hardware(false, false), "Intel before Ice Lake");
        assert!(pext_in_hardware(false, true), "Intel from Ice Lake");
        assert!(pext_in_hardware(true, true), "AMD from Zen 3");
        assert!(!pext_in_hardware(true, false), "AMD Zen 1 and 2, Hygon");
    }

    /// A longer soak of the same check (run with `--ignored`, preferably `--release`).
    #[test]
    #[ignore = "soak: a few million streams"]
    fn soak_fast_equals_reference() {
        let mut rng = Rng::new(0x50a4);
        let mut c = Compressor::new();
        let mut out = vec![0u8; worst_case_len(4096)];
        for case in 0..200_000u64 {
            let page = generate(PageClass::ALL[(case % 12) as usize], case);
            let n = if case % 2 == 0 {
                c.compress(page.as_bytes(), &mut out).unwrap()
            } else {
                c.compress_rle(page.as_bytes(), &mut out).unwrap()
            };
            let mut damaged = out[..n].to_vec();
            for _ in 0..1 + rng.below(4) {
                let at = rng.below(n as u64) as usize;
                damaged[at] ^= 1 << rng.below(8);
            }
            same_as_reference(&damaged, 4096);
            let cut = rng.below(n as u64 + 1) as usize;
            same_as_reference(&out[..cut], 4096 + rng.below(64) as usize);
            let len = rng.below(64) as usize;
            let mut garbage = vec![0u8; len];
            rng.fill(&mut garbage);
            for b in garbage.iter_mut() {
                if rng.below(3) == 0 {
                    *b &= 0x1F;
                }
            }
            same_as_reference(&garbage, rng.below(300) as usize);
        }
    }
}
