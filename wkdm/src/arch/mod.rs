//! SIMD paths, one module per instruction set, and their availability checks.

#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
pub(crate) mod classify;
#[cfg(target_arch = "x86_64")]
pub(crate) mod expand;
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
pub(crate) mod lanes;

#[cfg(target_arch = "x86_64")]
pub(crate) mod x86_64;

#[cfg(target_arch = "aarch64")]
pub(crate) mod aarch64;

/// Per 8-bit mask: 0xFF in byte `k` for each set bit `k`.
#[cfg(target_arch = "x86_64")]
static BYTE_MASKS: [u64; 256] = {
    let mut table = [0u64; 256];
    let mut mask = 0;
    while mask < 256 {
        let mut k = 0;
        while k < 8 {
            if mask & (1 << k) != 0 {
                table[mask] |= 0xFF << (8 * k);
            }
            k += 1;
        }
        mask += 1;
    }
    table
};

/// 0xFF in byte `k` for each bit `k` of an 8-bit mask.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(crate) fn byte_mask(mask: u32) -> u64 {
    BYTE_MASKS[(mask & 0xFF) as usize]
}

/// Byte-shuffle controls (`pshufb`, `tbl`) that move the 32-bit lanes selected by a 4-bit mask to the front
/// (unused bytes zeroed).
#[cfg_attr(not(any(target_arch = "x86_64", target_arch = "aarch64")), allow(dead_code))]
pub(crate) static LEFT_PACK_4: [[u8; 16]; 16] = left_pack_table(4);

/// Byte-shuffle controls that move the bytes selected by a 4-bit mask to the front.
#[cfg_attr(not(any(target_arch = "x86_64", target_arch = "aarch64")), allow(dead_code))]
pub(crate) static LEFT_PACK_BYTES: [[u8; 16]; 16] = left_pack_table(1);

/// For each 4-bit mask, the shuffle control that packs the selected `lane_bytes`-wide lanes
/// (of lanes 0..4) to the front, in order; unused control bytes are 0x80 (zero the output).
const fn left_pack_table(lane_bytes: usize) -> [[u8; 16]; 16] {
    let mut table = [[0x80u8; 16]; 16];
    let mut mask = 0;
    while mask < 16 {
        let mut out = 0;
        let mut lane = 0;
        while lane < 4 {
            if mask & (1 << lane) != 0 {
                let mut b = 0;
                while b < lane_bytes {
                    table[mask][lane_bytes * out + b] = (lane_bytes * lane + b) as u8;
                    b += 1;
                }
                out += 1;
            }
            lane += 1;
        }
        mask += 1;
    }
    table
}

/// Whether every named x86_64 feature ([`pagecodec::cpu::X86Feature`]) is present, by the
/// family's rule ([`pagecodec::cpu::x86_has`]); `false` on other architectures and under
/// Miri, which does not run SIMD.
macro_rules! x86_features {
    ($($feature:ident),+) => {{
        #[cfg(all(target_arch = "x86_64", not(miri)))]
        let present = true $(&& pagecodec::cpu::x86_has(pagecodec::cpu::X86Feature::$feature))+;
        #[cfg(any(not(target_arch = "x86_64"), miri))]
        let present = false;
        present
    }};
}

/// Whether the SSE4.1 path can run here.
pub(crate) fn sse41_available() -> bool {
    x86_features!(Sse41, Ssse3, Popcnt)
}

/// Whether the AVX2 path can run here.
pub(crate) fn avx2_available() -> bool {
    x86_features!(Avx2, Bmi2)
}

/// Whether the AVX-512 path can run here: the AVX2 path's features plus POPCNT, AVX-512F,
/// BW, CD, VL, VBMI, VBMI2 and GFNI, and a compiler that built the path (see build.rs).
pub(crate) fn avx512_available() -> bool {
    cfg!(wkdm_avx512)
        && avx2_available()
        && x86_features!(Popcnt, Avx512f, Avx512bw, Avx512cd, Avx512vl, Avx512vbmi, Avx512vbmi2, Gfni)
}

/// Whether the NEON path can run here (NEON is part of the aarch64 baseline; never under
/// Miri).
pub(crate) fn neon_available() -> bool {
    cfg!(all(target_arch = "aarch64", target_feature = "neon", target_endian = "little", not(miri)))
}
