//! Unchecked word access to the input and output, and the optimiser barrier the copies use.

use super::*;

/// Returns `p` unchanged, hidden from the optimiser: [`fill_wide`] passes each block's
/// address through it so that LLVM keeps its store loop a loop instead of calling `memset`.
/// Elsewhere it is the identity.
#[cfg(all(target_arch = "x86_64", not(miri)))]
#[inline(always)]
// The block never dereferences `p`: it only hides its value.
#[allow(clippy::pointers_in_nomem_asm_block)]
pub(super) fn opaque(mut p: *const u8) -> *const u8 {
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
pub(super) fn opaque(p: *const u8) -> *const u8 {
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
pub(super) unsafe fn trailing_literals(
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
pub(super) unsafe fn load64(p: *const u8) -> u64 {
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
pub(super) unsafe fn store4(to: *mut u8, word: u64) {
    // SAFETY: the caller guarantees the 4 bytes are in bounds; unaligned writes are fine.
    unsafe { to.cast::<[u8; 4]>().write_unaligned((word as u32).to_le_bytes()) };
}

/// Reads the little-endian 16-bit field at `p`.
///
/// # Safety
///
/// `p` and `p + 1` are inside the input slice.
#[inline(always)]
pub(super) unsafe fn le16(p: *const u8) -> usize {
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
pub(super) unsafe fn extension(s_end: *const u8, p: &mut *const u8) -> Option<usize> {
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
