//! SIMD paths, one module per instruction set, and their availability checks.

#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
pub(crate) mod classify;
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
pub(crate) mod expand;
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
pub(crate) mod lanes;

#[cfg(target_arch = "x86_64")]
pub(crate) mod x86_64;

#[cfg(target_arch = "aarch64")]
pub(crate) mod aarch64;

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

/// The x86_64 features each SIMD path's code is compiled with (its `target_feature`
/// attributes): a path may run only where all of them are present.
#[cfg(target_arch = "x86_64")]
pub(crate) mod needs {
    use pagecodec::cpu::X86Feature::{self, *};

    /// SSE4.1 path: `classify` (SSE4.1, SSSE3 `pshufb`, POPCNT).
    pub(crate) const SSE41: &[&[X86Feature]] = &[&[Sse41, Ssse3, Popcnt]];
    /// AVX2 path: `classify` and `decompress` (AVX2, BMI1 `bextr`, BMI2, POPCNT; SSSE3
    /// `pshufb`).
    pub(crate) const AVX2: &[&[X86Feature]] = &[AVX2_FEATURES];
    /// AVX-512 path: the AVX2 path's features (it runs some of that path's code) and its own.
    pub(crate) const AVX512: &[&[X86Feature]] =
        &[AVX2_FEATURES, &[Avx512f, Avx512bw, Avx512cd, Avx512vl, Avx512vbmi, Avx512vbmi2, Gfni]];
    const AVX2_FEATURES: &[X86Feature] = &[Avx2, Bmi1, Bmi2, Popcnt, Ssse3];

    /// Whether every feature of every list in `needs` is present by `has`.
    pub(crate) fn all_of(needs: &[&[X86Feature]], has: impl Fn(X86Feature) -> bool) -> bool {
        needs.iter().flat_map(|list| list.iter()).all(|&f| has(f))
    }
}

/// Whether every feature a path `needs` is present, by the family's rule
/// ([`pagecodec::cpu::x86_has`]); `false` on other architectures and under Miri, which does
/// not run SIMD.
macro_rules! x86_available {
    ($needs:ident) => {{
        #[cfg(all(target_arch = "x86_64", not(miri)))]
        let present = needs::all_of(needs::$needs, pagecodec::cpu::x86_has);
        #[cfg(any(not(target_arch = "x86_64"), miri))]
        let present = false;
        present
    }};
}

/// Whether the SSE4.1 path can run here.
pub(crate) fn sse41_available() -> bool {
    x86_available!(SSE41)
}

/// Whether the AVX2 path can run here.
pub(crate) fn avx2_available() -> bool {
    x86_available!(AVX2)
}

/// Whether the AVX-512 path can run here: its features, and a compiler that built the path
/// (see build.rs).
pub(crate) fn avx512_available() -> bool {
    cfg!(wkdm_avx512) && x86_available!(AVX512)
}

#[cfg(all(test, target_arch = "x86_64"))]
mod tests {
    use super::needs;
    use pagecodec::cpu::X86Feature;

    /// Hiding any one needed feature (a VM's CPUID mask, or a `no_std` build's target
    /// features) makes the path unavailable.
    #[test]
    fn each_needed_feature_is_checked() {
        for (name, lists) in [("sse4.1", needs::SSE41), ("avx2", needs::AVX2), ("avx512", needs::AVX512)] {
            assert!(needs::all_of(lists, |_| true), "{name}");
            for &hidden in lists.iter().flat_map(|list| list.iter()) {
                assert!(!needs::all_of(lists, |f: X86Feature| f != hidden), "{name} without {hidden:?}");
            }
        }
    }

    /// Every feature a path's source enables with `#[target_feature]` is in its list, so
    /// the availability check can never let it run an instruction the CPU lacks.
    #[test]
    fn lists_cover_every_enabled_feature() {
        let sources = [
            ("sse4.1", needs::SSE41, include_str!("x86_64/sse41.rs")),
            ("avx2", needs::AVX2, include_str!("x86_64/avx2.rs")),
            ("avx512", needs::AVX512, include_str!("x86_64/avx512.rs")),
        ];
        for (name, lists, source) in sources {
            let mut seen = 0;
            for attr in source.split("target_feature(enable = \"").skip(1) {
                let features = attr.split('"').next().unwrap();
                for feature in features.split(',') {
                    let known = match feature {
                        "sse4.1" => X86Feature::Sse41,
                        "ssse3" => X86Feature::Ssse3,
                        "popcnt" => X86Feature::Popcnt,
                        "avx2" => X86Feature::Avx2,
                        "bmi1" => X86Feature::Bmi1,
                        "bmi2" => X86Feature::Bmi2,
                        "avx512f" => X86Feature::Avx512f,
                        "avx512bw" => X86Feature::Avx512bw,
                        "avx512cd" => X86Feature::Avx512cd,
                        "avx512vl" => X86Feature::Avx512vl,
                        "avx512vbmi" => X86Feature::Avx512vbmi,
                        "avx512vbmi2" => X86Feature::Avx512vbmi2,
                        "gfni" => X86Feature::Gfni,
                        other => panic!("{name}: unknown feature {other}"),
                    };
                    let checked = lists.iter().any(|list| list.contains(&known));
                    assert!(checked, "{name} enables {feature} but does not check it");
                    seen += 1;
                }
            }
            assert!(seen > 0, "{name}: no target_feature attribute found");
        }
    }
}

/// Whether the NEON path can run here (NEON is part of the aarch64 baseline; never under
/// Miri).
pub(crate) fn neon_available() -> bool {
    cfg!(all(target_arch = "aarch64", target_feature = "neon", target_endian = "little", not(miri)))
}
