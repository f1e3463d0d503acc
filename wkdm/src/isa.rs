//! Choosing an implementation path: the scalar reference or a SIMD path.
//!
//! Under `std` the best available path is detected at run time once and cached in an
//! atomic; without `std` only paths enabled at compile time (`target_feature`) count as
//! available. Every path produces the same bytes; the choice only changes speed.

use core::fmt;

/// An instruction set with its own implementation of the compressor and decompressor hot
/// loops (named `Isa`, not `Path`, so that it never shadows `std::path::Path`).
///
/// ```
/// use wkdm::{Isa, Wkdm};
///
/// assert!(Isa::available().any(|p| p == Isa::Scalar));
/// let codec = Wkdm::new().with_isa(Isa::Scalar)?;
/// assert_eq!(codec.isa(), Isa::Scalar);
/// # Ok::<(), wkdm::UnavailableIsa>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Isa {
    /// Portable scalar code: the reference every other path must match byte for byte.
    Scalar,
    /// x86_64 with SSE4.1 and SSSE3: a SIMD compressor; decompression runs the scalar loop,
    /// which a 4-lane SIMD decoder did not beat.
    Sse41,
    /// x86_64 with AVX2, BMI1 and BMI2: SIMD compressor and decompressor.
    Avx2,
    /// x86_64 with AVX2, BMI1 and BMI2 plus AVX-512 (F, BW, CD, VL, VBMI, VBMI2) and GFNI: the
    /// compressor's dictionary replay and the decompressor resolve the dictionary 16 words
    /// at a time in registers, and the compressor classifies 16 words per step.
    Avx512,
    /// aarch64 with NEON: a SIMD compressor (4 words per step) and a SIMD decoder (16 words
    /// per step in its vector stage).
    Neon,
}

impl Isa {
    /// Every path this crate knows, available or not, from slowest to fastest.
    pub const ALL: [Isa; 5] = [Isa::Scalar, Isa::Sse41, Isa::Avx2, Isa::Avx512, Isa::Neon];

    /// A short name for tables (`"scalar"`, `"sse4.1"`, `"avx2"`, `"avx512"`, `"neon"`).
    pub const fn name(self) -> &'static str {
        match self {
            Isa::Scalar => "scalar",
            Isa::Sse41 => "sse4.1",
            Isa::Avx2 => "avx2",
            Isa::Avx512 => "avx512",
            Isa::Neon => "neon",
        }
    }

    /// Whether this path is compiled in and the CPU supports it.
    pub fn is_available(self) -> bool {
        match self {
            Isa::Scalar => true,
            Isa::Sse41 => crate::arch::sse41_available(),
            Isa::Avx2 => crate::arch::avx2_available(),
            Isa::Avx512 => crate::arch::avx512_available(),
            Isa::Neon => crate::arch::neon_available(),
        }
    }

    /// The available paths, scalar first.
    pub fn available() -> impl Iterator<Item = Isa> {
        Isa::ALL.into_iter().filter(|p| p.is_available())
    }

    /// The fastest available path (detected once, then cached).
    pub fn best() -> Isa {
        #[cfg(feature = "std")]
        {
            use core::sync::atomic::{AtomicU8, Ordering};
            const UNKNOWN: u8 = u8::MAX;
            static BEST: AtomicU8 = AtomicU8::new(UNKNOWN);
            let cached = BEST.load(Ordering::Relaxed);
            if let Some(&path) = Isa::ALL.get(usize::from(cached)) {
                return path;
            }
            let path = Isa::detect();
            let index = Isa::ALL.iter().position(|&p| p == path).unwrap_or(0);
            BEST.store(index as u8, Ordering::Relaxed);
            path
        }
        #[cfg(not(feature = "std"))]
        {
            Isa::detect()
        }
    }

    fn detect() -> Isa {
        Isa::ALL.into_iter().rev().find(|p| p.is_available()).unwrap_or(Isa::Scalar)
    }
}

impl fmt::Display for Isa {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The requested [`Isa`] is not compiled in or not supported by this CPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct UnavailableIsa(pub Isa);

impl fmt::Display for UnavailableIsa {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "implementation path {} is not available on this CPU or build", self.0)
    }
}

impl core::error::Error for UnavailableIsa {}
