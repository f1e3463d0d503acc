//! x86_64 CPU features, for the codec crates' SIMD and instruction-set dispatch.
//!
//! One rule for the whole family: with this crate's `std` feature the CPU is asked at run
//! time (`std` caches the answer); without it, and under Miri, the compile-time target
//! features decide, so a `no_std` build dispatches on what it was compiled for.

/// An x86_64 feature that a codec of this family dispatches on.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum X86Feature {
    /// SSE4.1.
    Sse41,
    /// SSSE3.
    Ssse3,
    /// POPCNT.
    Popcnt,
    /// AVX2.
    Avx2,
    /// BMI1 (`bextr`, `andn`, `tzcnt`).
    Bmi1,
    /// BMI2 (`pext`, `pdep`, `shrx`).
    Bmi2,
    /// AVX-512 Foundation.
    Avx512f,
    /// AVX-512 Byte and Word.
    Avx512bw,
    /// AVX-512 Conflict Detection.
    Avx512cd,
    /// AVX-512 Vector Length.
    Avx512vl,
    /// AVX-512 Vector Byte Manipulation.
    Avx512vbmi,
    /// AVX-512 Vector Byte Manipulation 2.
    Avx512vbmi2,
    /// Galois-field instructions.
    Gfni,
    /// SSE4a: only AMD's and Hygon's cores have it.
    Sse4a,
    /// Vector AES: among AMD's cores, Zen 3 and later.
    Vaes,
}

/// Whether this CPU has `feature`: asked at run time with feature `std`, taken from the
/// compile-time target features without it and under Miri.
///
/// ```
/// use pagecodec::cpu::{X86Feature, x86_has};
///
/// // SSE2 is part of every x86_64 CPU; POPCNT may or may not be there.
/// let (avx2, popcnt) = (x86_has(X86Feature::Avx2), x86_has(X86Feature::Popcnt));
/// assert!(!avx2 || popcnt, "every CPU with AVX2 has POPCNT");
/// ```
#[inline]
pub fn x86_has(feature: X86Feature) -> bool {
    macro_rules! has {
        ($name:tt) => {{
            #[cfg(all(feature = "std", not(miri)))]
            let present = std::is_x86_feature_detected!($name);
            #[cfg(any(not(feature = "std"), miri))]
            let present = cfg!(target_feature = $name);
            present
        }};
    }
    match feature {
        X86Feature::Sse41 => has!("sse4.1"),
        X86Feature::Ssse3 => has!("ssse3"),
        X86Feature::Popcnt => has!("popcnt"),
        X86Feature::Avx2 => has!("avx2"),
        X86Feature::Bmi1 => has!("bmi1"),
        X86Feature::Bmi2 => has!("bmi2"),
        X86Feature::Avx512f => has!("avx512f"),
        X86Feature::Avx512bw => has!("avx512bw"),
        X86Feature::Avx512cd => has!("avx512cd"),
        X86Feature::Avx512vl => has!("avx512vl"),
        X86Feature::Avx512vbmi => has!("avx512vbmi"),
        X86Feature::Avx512vbmi2 => has!("avx512vbmi2"),
        X86Feature::Gfni => has!("gfni"),
        X86Feature::Sse4a => has!("sse4a"),
        X86Feature::Vaes => has!("vaes"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each feature is asked under its own name: the answers are `std`'s for that name.
    #[test]
    #[cfg(all(feature = "std", not(miri)))]
    fn each_feature_asks_for_its_own_name() {
        use std::is_x86_feature_detected as detected;
        let all = [
            (X86Feature::Sse41, detected!("sse4.1")),
            (X86Feature::Ssse3, detected!("ssse3")),
            (X86Feature::Popcnt, detected!("popcnt")),
            (X86Feature::Avx2, detected!("avx2")),
            (X86Feature::Bmi1, detected!("bmi1")),
            (X86Feature::Bmi2, detected!("bmi2")),
            (X86Feature::Avx512f, detected!("avx512f")),
            (X86Feature::Avx512bw, detected!("avx512bw")),
            (X86Feature::Avx512cd, detected!("avx512cd")),
            (X86Feature::Avx512vl, detected!("avx512vl")),
            (X86Feature::Avx512vbmi, detected!("avx512vbmi")),
            (X86Feature::Avx512vbmi2, detected!("avx512vbmi2")),
            (X86Feature::Gfni, detected!("gfni")),
            (X86Feature::Sse4a, detected!("sse4a")),
            (X86Feature::Vaes, detected!("vaes")),
        ];
        for (feature, expected) in all {
            assert_eq!(x86_has(feature), expected, "{feature:?}");
        }
    }

    /// The implications every real x86_64 CPU obeys, whatever it has.
    #[test]
    fn answers_respect_feature_implications() {
        let has = x86_has;
        assert!(!has(X86Feature::Avx2) || has(X86Feature::Sse41), "AVX2 without SSE4.1");
        assert!(!has(X86Feature::Sse41) || has(X86Feature::Ssse3), "SSE4.1 without SSSE3");
        assert!(!has(X86Feature::Avx512bw) || has(X86Feature::Avx512f), "AVX-512BW without F");
        assert!(!has(X86Feature::Avx512vbmi2) || has(X86Feature::Avx512f), "VBMI2 without F");
    }
}
