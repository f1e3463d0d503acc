//! The clock behind the compression and decompression timings.

/// The unit of the timings in [`CodecStats`](crate::CodecStats).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TimeUnit {
    /// x86_64 time-stamp counter ticks (fenced `lfence; rdtsc; lfence`); not core cycles.
    TscTicks,
    /// Wall-clock nanoseconds (`std::time::Instant`), off x86_64 (and under Miri).
    Nanoseconds,
    /// No clock (timing switched off, or `no_std` off x86_64).
    None,
}

/// The unit this build measures in when timing is on.
pub(crate) const CLOCK_UNIT: TimeUnit = if cfg!(all(target_arch = "x86_64", not(miri))) {
    TimeUnit::TscTicks
} else if cfg!(feature = "std") {
    TimeUnit::Nanoseconds
} else {
    TimeUnit::None
};

/// A timestamp in [`CLOCK_UNIT`].
#[inline]
pub(crate) fn now() -> u64 {
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    {
        use core::arch::x86_64::{_mm_lfence, _rdtsc};
        // SAFETY: `lfence` needs SSE2 and `rdtsc` nothing: both are part of the x86_64
        // baseline every x86_64 CPU implements; neither touches memory. The fences keep
        // the measured work from being reordered around the counter read.
        unsafe {
            _mm_lfence();
            let t = _rdtsc();
            _mm_lfence();
            t
        }
    }
    #[cfg(all(any(not(target_arch = "x86_64"), miri), feature = "std"))]
    {
        extern crate std;
        static EPOCH: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
        EPOCH.get_or_init(std::time::Instant::now).elapsed().as_nanos() as u64
    }
    #[cfg(all(any(not(target_arch = "x86_64"), miri), not(feature = "std")))]
    {
        0
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn clock_moves_forward() {
        let a = super::now();
        let mut x = 0u64;
        for i in 0..10_000 {
            x = core::hint::black_box(x.wrapping_add(i));
        }
        let b = super::now();
        if super::CLOCK_UNIT != super::TimeUnit::None {
            assert!(b > a, "{a} {b} {x}");
        }
    }
}
