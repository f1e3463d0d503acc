//! Choosing an implementation path: the scalar reference or a SIMD path.
//!
//! Under `std` the best available path is detected at run time once and cached in an
//! atomic; without `std` only paths enabled at compile time (`target_feature`) count as
//! available. Every path produces the same bytes; the choice only changes speed.

use core::fmt;

/// An implementation of the compressor and decompressor hot loops.
///
/// ```
/// use wkdm::{Path, Wkdm};
///
/// assert!(Path::available().any(|p| p == Path::Scalar));
/// let codec = Wkdm::new().with_path(Path::Scalar)?;
/// assert_eq!(codec.path(), Path::Scalar);
/// # Ok::<(), wkdm::UnavailablePath>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Path {
    /// Portable scalar code: the reference every other path must match byte for byte.
    Scalar,
    /// x86_64 with SSE4.1 and SSSE3: a SIMD compressor; decompression runs the scalar loop,
    /// which a 4-lane SIMD decoder did not beat.
    Sse41,
    /// x86_64 with AVX2 and BMI2: SIMD compressor and decompressor.
    Avx2,
    /// x86_64 with AVX2 and BMI2 plus AVX-512 (F, BW, CD, VL, VBMI, VBMI2) and GFNI: the
    /// compressor's dictionary replay and the decompressor resolve the dictionary 16 words
    /// at a time in registers, and the compressor classifies 16 words per step.
    Avx512,
    /// aarch64 with NEON: a SIMD compressor; decompression runs the scalar loop.
    Neon,
}

impl Path {
    /// Every path this crate knows, available or not, from slowest to fastest.
    pub const ALL: [Path; 5] = [Path::Scalar, Path::Sse41, Path::Avx2, Path::Avx512, Path::Neon];

    /// A short name for tables (`"scalar"`, `"sse4.1"`, `"avx2"`, `"avx512"`, `"neon"`).
    pub const fn name(self) -> &'static str {
        match self {
            Path::Scalar => "scalar",
            Path::Sse41 => "sse4.1",
            Path::Avx2 => "avx2",
            Path::Avx512 => "avx512",
            Path::Neon => "neon",
        }
    }

    /// Whether this path is compiled in and the CPU supports it.
    pub fn is_available(self) -> bool {
        match self {
            Path::Scalar => true,
            Path::Sse41 => crate::arch::sse41_available(),
            Path::Avx2 => crate::arch::avx2_available(),
            Path::Avx512 => crate::arch::avx512_available(),
            Path::Neon => crate::arch::neon_available(),
        }
    }

    /// The available paths, scalar first.
    pub fn available() -> impl Iterator<Item = Path> {
        Path::ALL.into_iter().filter(|p| p.is_available())
    }

    /// The fastest available path (detected once, then cached).
    pub fn best() -> Path {
        #[cfg(feature = "std")]
        {
            use core::sync::atomic::{AtomicU8, Ordering};
            const UNKNOWN: u8 = u8::MAX;
            static BEST: AtomicU8 = AtomicU8::new(UNKNOWN);
            let cached = BEST.load(Ordering::Relaxed);
            if let Some(&path) = Path::ALL.get(usize::from(cached)) {
                return path;
            }
            let path = Path::detect();
            let index = Path::ALL.iter().position(|&p| p == path).unwrap_or(0);
            BEST.store(index as u8, Ordering::Relaxed);
            path
        }
        #[cfg(not(feature = "std"))]
        {
            Path::detect()
        }
    }

    fn detect() -> Path {
        Path::ALL.into_iter().rev().find(|p| p.is_available()).unwrap_or(Path::Scalar)
    }
}

impl fmt::Display for Path {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The requested [`Path`] is not compiled in or not supported by this CPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct UnavailablePath(pub Path);

impl fmt::Display for UnavailablePath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "implementation path {} is not available on this CPU or build", self.0)
    }
}

impl core::error::Error for UnavailablePath {}
