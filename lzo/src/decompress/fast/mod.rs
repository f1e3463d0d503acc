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
//! faster in the first case and slower in the second. Removing every M2 and M3 copy saves
//! little: the time goes on walking the instructions, a few ticks each once the core has
//! learnt a page's branches (docs/perf/lzokit.md). On Intel's cores, ports 0 and 6 run both
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
//! docs/perf/lzokit.md gives the per-instruction costs and what was tried.

mod copy;
mod decode_loop;
mod distances;
mod raw;

use super::reference::{MAX_255_COUNT, Position, decode_from, first_literals, read_header};
use crate::StreamError;
use crate::format::{MIN_ZERO_RUN, short_match};
use copy::*;
use decode_loop::*;
use distances::*;
#[cfg(target_arch = "x86_64")]
use pagecodec::cpu::{X86Feature, x86_has};
use raw::*;

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
pub(crate) fn decompress_fast(src: &[u8], dst: &mut [u8]) -> Result<usize, StreamError> {
    decompress_with(src, dst, best_fast_loop)
}

/// [`decompress_fast`] with `run` as the fast loop (one of the builds of [`fast_loop`]).
#[inline(always)]
fn decompress_with(
    src: &[u8],
    dst: &mut [u8],
    run: impl FnOnce(&[u8], &mut [u8], Position) -> Position,
) -> Result<usize, StreamError> {
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
/// decoded faster on every corpus (docs/perf/lzokit.md).
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
/// two operations, with it one `shrx` (fewer ticks on every corpus on an Intel core). `pext`
/// gathers an M2's or M3's distance bits in one operation instead of shifts, masks and an
/// addition: fewer ticks once the core has learnt a page, level where it has not
/// (docs/perf/lzokit.md).
///
/// # Safety
///
/// The CPU supports BMI2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "bmi2")]
unsafe fn fast_loop_bmi2(src: &[u8], dst: &mut [u8], at: Position) -> Position {
    // SAFETY: the CPU has BMI2 (the caller's contract).
    let pext = unsafe { Pext::new() };
    fast_phases(
        src,
        dst,
        at,
        // SAFETY: the CPU has BMI2 (the caller's contract).
        |s, d, a| unsafe { fast_loop_bmi2_phase::<false>(s, d, a, pext) },
        // SAFETY: as for the early phase.
        |s, d, a| unsafe { fast_loop_bmi2_phase::<true>(s, d, a, pext) },
    )
}

/// One phase of [`fast_loop_bmi2`], a function of its own with the target feature: with the
/// compilers of the minimum supported Rust version a closure does not inherit its enclosing
/// function's target features, and `pext` in a closure became a call. Newer compilers inline
/// this into the closure: the same code as a closure calling [`fast_loop`] directly.
///
/// # Safety
///
/// The CPU supports BMI2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "bmi2")]
#[inline]
unsafe fn fast_loop_bmi2_phase<const PRIMED: bool>(
    src: &[u8],
    dst: &mut [u8],
    at: Position,
    pext: Pext,
) -> Position {
    fast_loop::<PRIMED>(src, dst, at, pext)
}

/// [`decompress_fast`] on the fast loop `which` (`Reference` is not one); `None` where the
/// CPU lacks it.
pub(crate) fn decompress_on(
    which: super::DecodeLoop,
    src: &[u8],
    dst: &mut [u8],
) -> Option<Result<usize, StreamError>> {
    match which {
        super::DecodeLoop::Baseline => {
            Some(decompress_with(src, dst, |s, d, a| fast_phases_with!(s, d, a, Shifts)))
        }
        #[cfg(target_arch = "x86_64")]
        super::DecodeLoop::Bmi2 if bmi2_available() => {
            // SAFETY: the CPU has BMI2 (the guard of this arm).
            Some(decompress_with(src, dst, |s, d, a| unsafe { fast_loop_bmi2(s, d, a) }))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests;
