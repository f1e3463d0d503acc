//! How the fast loop takes match distances out of an instruction: shifts everywhere, `pext`
//! where BMI2 runs it in hardware.

/// How the fast loop takes a match distance out of an instruction's first bytes `w`
/// (little-endian, the opcode in the low byte).
pub(super) trait Distances: Copy {
    /// An M2's distance minus one: the opcode's bits 2..=4 below the next byte's 8 bits.
    fn m2(self, w: u64) -> usize;
    /// An M3's distance minus one: the high 14 bits of the 16-bit field after the opcode.
    fn m3(self, w: u64) -> usize;
}

/// Distances by shifts and masks, on every CPU.
#[derive(Clone, Copy)]
pub(super) struct Shifts;

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
pub(super) struct Pext {
    /// The M3 mask, hidden from the optimiser ([`Pext::new`]).
    m3_mask: u64,
}

#[cfg(target_arch = "x86_64")]
impl Pext {
    /// The extraction, with the M3 mask passed through [`core::hint::black_box`] once: LLVM
    /// otherwise turns a `pext` by that contiguous mask into a shift and an `and`, and on
    /// Intel's cores a shift runs on ports 0 and 6, the two that also run every branch, of
    /// which an M3 took seven. With the mask hidden, pages decoded faster
    /// (docs/perf/lzokit.md).
    ///
    /// # Safety
    ///
    /// The CPU supports BMI2.
    pub(super) unsafe fn new() -> Pext {
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
