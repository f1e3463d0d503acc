//! Cycle-accurate timing: fenced TSC reads on x86_64, `Instant` elsewhere.
//!
//! On x86_64 a measurement starts with `lfence; rdtsc; lfence` (earlier instructions finish
//! before the read, later ones wait for it) and ends with `rdtscp; lfence` (the measured
//! code finishes before the read, nothing after it starts early). `cpuid` is never used as
//! a barrier: under a hypervisor it traps and costs thousands of ticks. The TSC runs at a
//! fixed rate that is *not* the core clock, so figures are labelled "TSC ticks"; the rate
//! is calibrated against the monotonic clock to convert ticks to nanoseconds. The cost of
//! an empty fenced pair is measured once and subtracted from every reading.

use std::hint::black_box;
use std::sync::atomic::{Ordering, compiler_fence};
use std::time::{Duration, Instant};

/// What the ticks of a [`Timer`] count.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Clock {
    /// The x86_64 time-stamp counter, read with fences.
    Tsc,
    /// `std::time::Instant`, in nanoseconds (targets without a TSC).
    Instant,
}

/// A calibrated tick source.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Timer {
    /// The clock behind the ticks.
    pub clock: Clock,
    /// Ticks per second, measured against the monotonic clock (1e9 for `Instant`).
    pub ticks_per_sec: f64,
    /// The smallest reading of an empty start/end pair, subtracted from every measurement.
    pub overhead_ticks: u64,
    /// The median reading of an empty start/end pair (before subtraction), for the record.
    pub overhead_median_ticks: u64,
}

/// Reads the clock at the start of a measured region.
#[inline(always)]
pub fn start_ticks(clock: Clock) -> u64 {
    match clock {
        #[cfg(target_arch = "x86_64")]
        Clock::Tsc => tsc::start(),
        _ => instant_ns(),
    }
}

/// Reads the clock at the end of a measured region.
#[inline(always)]
pub fn end_ticks(clock: Clock) -> u64 {
    match clock {
        #[cfg(target_arch = "x86_64")]
        Clock::Tsc => tsc::end(),
        _ => instant_ns(),
    }
}

/// Nanoseconds since the first call, from the monotonic clock.
fn instant_ns() -> u64 {
    static EPOCH: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    let epoch = *EPOCH.get_or_init(Instant::now);
    compiler_fence(Ordering::SeqCst);
    let ns = epoch.elapsed().as_nanos() as u64;
    compiler_fence(Ordering::SeqCst);
    ns
}

#[cfg(target_arch = "x86_64")]
mod tsc {
    use core::arch::x86_64::{__rdtscp, _mm_lfence, _rdtsc};
    use std::sync::atomic::{Ordering, compiler_fence};

    /// `lfence; rdtsc; lfence`.
    #[inline(always)]
    pub(super) fn start() -> u64 {
        compiler_fence(Ordering::SeqCst);
        // SAFETY: `lfence` and `rdtsc` are part of SSE2 and the x86_64 baseline, so they
        // exist on every x86_64 CPU; they read no memory and only order instructions.
        let t = unsafe {
            _mm_lfence();
            let t = _rdtsc();
            _mm_lfence();
            t
        };
        compiler_fence(Ordering::SeqCst);
        t
    }

    /// `rdtscp; lfence`.
    #[inline(always)]
    pub(super) fn end() -> u64 {
        compiler_fence(Ordering::SeqCst);
        let mut aux = 0u32;
        // SAFETY: `rdtscp` is available on every x86_64 CPU this tool targets (checked
        // by `Timer::best_clock` through `has_rdtscp` before the TSC clock is chosen); it writes only `aux`, a valid local.
        let t = unsafe {
            let t = __rdtscp(&mut aux);
            _mm_lfence();
            t
        };
        compiler_fence(Ordering::SeqCst);
        t
    }
}

impl Timer {
    /// The best clock of this machine, calibrated (takes about 60 ms).
    pub fn new() -> Timer {
        Timer::with_clock(Timer::best_clock())
    }

    /// The fenced TSC when the CPU has `rdtscp` (and an invariant TSC on Linux), else `Instant`.
    pub fn best_clock() -> Clock {
        #[cfg(target_arch = "x86_64")]
        {
            if has_rdtscp() {
                return Clock::Tsc;
            }
        }
        Clock::Instant
    }

    /// A timer on `clock` (`Clock::Tsc` falls back to `Instant` off x86_64), calibrated.
    pub fn with_clock(clock: Clock) -> Timer {
        let clock =
            if clock == Clock::Tsc && Timer::best_clock() != Clock::Tsc { Clock::Instant } else { clock };
        let ticks_per_sec = match clock {
            Clock::Tsc => calibrate(clock, Duration::from_millis(25)),
            Clock::Instant => 1e9,
        };
        let mut empty = (0..2000)
            .map(|_| {
                let t0 = start_ticks(clock);
                let t1 = end_ticks(clock);
                t1.saturating_sub(t0)
            })
            .collect::<Vec<_>>();
        empty.sort_unstable();
        Timer {
            clock,
            ticks_per_sec,
            overhead_ticks: empty[0],
            overhead_median_ticks: empty[empty.len() / 2],
        }
    }

    /// Runs `f` once and returns its ticks (overhead subtracted) and its result.
    #[inline(always)]
    pub fn time<R>(&self, f: impl FnOnce() -> R) -> (u64, R) {
        let t0 = start_ticks(self.clock);
        let r = black_box(f());
        let t1 = end_ticks(self.clock);
        (t1.saturating_sub(t0).saturating_sub(self.overhead_ticks), r)
    }

    /// Converts ticks to nanoseconds.
    pub fn ns(&self, ticks: f64) -> f64 {
        ticks * 1e9 / self.ticks_per_sec
    }

    /// Megabytes (10^6 bytes) per second for `bytes` processed in `ticks`.
    pub fn mb_per_sec(&self, bytes: f64, ticks: f64) -> f64 {
        if ticks <= 0.0 { f64::INFINITY } else { bytes / (self.ns(ticks) / 1e9) / 1e6 }
    }

    /// A short description for headers: clock, rate and overhead.
    pub fn describe(&self) -> String {
        match self.clock {
            Clock::Tsc => format!(
                "fenced TSC (lfence;rdtsc;lfence .. rdtscp;lfence) at {:.1} MHz, calibrated against \
                 the monotonic clock; timer overhead (a start and a stop with nothing between) {} ticks (min, subtracted from every reading), {} median",
                self.ticks_per_sec / 1e6,
                self.overhead_ticks,
                self.overhead_median_ticks
            ),
            Clock::Instant => format!(
                "Instant (no TSC on this target): ticks are ns; overhead {} ns (min, subtracted)",
                self.overhead_ticks
            ),
        }
    }
}

impl Default for Timer {
    fn default() -> Self {
        Timer::new()
    }
}

/// Whether the CPU has `rdtscp` (`std` has no runtime check for it): the Linux flag list
/// when readable; every x86_64 CPU of the last fifteen years has it otherwise.
#[cfg(target_arch = "x86_64")]
fn has_rdtscp() -> bool {
    match std::fs::read_to_string("/proc/cpuinfo") {
        Ok(info) => info
            .lines()
            .filter(|l| l.starts_with("flags"))
            .any(|l| l.split_whitespace().any(|f| f == "rdtscp")),
        Err(_) => true,
    }
}

/// Ticks per second of `clock`: the median of three spans of `span` measured against
/// `Instant` (the median throws out a span hit by a preemption).
fn calibrate(clock: Clock, span: Duration) -> f64 {
    let mut rates = (0..3)
        .map(|_| {
            let i0 = Instant::now();
            let t0 = start_ticks(clock);
            while i0.elapsed() < span {
                std::hint::spin_loop();
            }
            let t1 = end_ticks(clock);
            let elapsed = i0.elapsed();
            (t1 - t0) as f64 / elapsed.as_secs_f64()
        })
        .collect::<Vec<_>>();
    rates.sort_by(f64::total_cmp);
    rates[1]
}

/// The 1, 5 and 15 minute load averages from `/proc/loadavg`, when readable.
pub fn load_average() -> Option<[f64; 3]> {
    let text = std::fs::read_to_string("/proc/loadavg").ok()?;
    let mut fields = text.split_whitespace().map(|f| f.parse::<f64>().ok());
    Some([fields.next()??, fields.next()??, fields.next()??])
}

/// How much of the core this process gets right now: independent register additions per
/// clock tick, the median of three spans of 2048 (an unrolled loop of 8 additions to 4
/// registers; about 1500 ticks in all on a 2-4 GHz core), or `None` off x86_64 or on the
/// `Instant` clock.
///
/// The loop is bound by how many additions the core issues per cycle, not by any latency,
/// so the figure falls when another hardware thread shares the core (on the Zen 3 cloud
/// core of 2026-12-01: up to 4.4 alone, 2.5-3.5 shared) and stays when the machine is
/// merely busy elsewhere. Codecs that retire many instructions per cycle lose more on a
/// shared core than those that wait on latencies, so ratios between codecs move with it:
/// [`measure::run_corpus`](crate::measure::run_corpus) takes one reading per page.
pub fn core_rate(timer: &Timer) -> Option<f64> {
    if timer.clock != Clock::Tsc {
        return None;
    }
    #[cfg(target_arch = "x86_64")]
    {
        const ITERATIONS: u64 = 256;
        const ADDITIONS: u64 = 8 * ITERATIONS;
        let mut rates = [0.0; 3].map(|_| {
            let (ticks, ()) = timer.time(|| additions(ITERATIONS));
            ADDITIONS as f64 / ticks.max(1) as f64
        });
        rates.sort_by(f64::total_cmp);
        Some(rates[1])
    }
    #[cfg(not(target_arch = "x86_64"))]
    None
}

/// `8 * iterations` register additions in four independent chains (`iterations` >= 1).
#[cfg(target_arch = "x86_64")]
#[inline(never)]
fn additions(iterations: u64) {
    // SAFETY: the block only adds to four scratch registers and counts a fifth down to
    // zero (at least one pass, then exactly `iterations`, as `iterations >= 1`); it touches
    // no memory and no stack, and declares every register it changes. The padding before
    // the loop is executed once (no-ops) and puts the loop at a 64-byte line start, so that
    // its rate does not depend on where the linker puts this function (unaligned, the same
    // loop read 2.1-2.3 in one build and 2.6-3.0 in another, side by side).
    unsafe {
        core::arch::asm!(
            ".p2align 6",
            "2:",
            "add {a}, 1",
            "add {b}, 1",
            "add {c}, 1",
            "add {d}, 1",
            "add {a}, 1",
            "add {b}, 1",
            "add {c}, 1",
            "add {d}, 1",
            "dec {n}",
            "jnz 2b",
            a = inout(reg) 0u64 => _,
            b = inout(reg) 0u64 => _,
            c = inout(reg) 0u64 => _,
            d = inout(reg) 0u64 => _,
            n = inout(reg) iterations.max(1) => _,
            options(nomem, nostack),
        );
    }
}

/// The `q`-quantile (0 < `q` <= 1) of `sorted` by nearest rank: the smallest value with at
/// least a fraction `q` of the values at or below it (`q` = 0.5 gives the lower median).
/// `None` when `sorted` is empty.
pub fn nearest_rank<T: Copy>(sorted: &[T], q: f64) -> Option<T> {
    let n = sorted.len();
    (n > 0).then(|| sorted[((q * n as f64).ceil() as usize).clamp(1, n) - 1])
}

/// Summary statistics of a set of tick readings.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct TickStats {
    /// Number of readings.
    pub count: usize,
    /// Smallest reading.
    pub min: u64,
    /// Median (lower median for even counts).
    pub median: u64,
    /// Arithmetic mean.
    pub mean: f64,
    /// 99th percentile (nearest rank).
    pub p99: u64,
    /// Largest reading.
    pub max: u64,
}

impl TickStats {
    /// Statistics of `ticks` (sorted in place). All zero for an empty slice.
    pub fn from_ticks(ticks: &mut [u64]) -> TickStats {
        if ticks.is_empty() {
            return TickStats::default();
        }
        ticks.sort_unstable();
        let n = ticks.len();
        // Not empty (returned above), so every rank exists.
        let rank = |q: f64| nearest_rank(ticks, q).unwrap_or_default();
        TickStats {
            count: n,
            min: ticks[0],
            median: rank(0.5),
            mean: ticks.iter().map(|&t| t as f64).sum::<f64>() / n as f64,
            p99: rank(0.99),
            max: ticks[n - 1],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stats_of_known_values() {
        let mut v: Vec<u64> = (1..=100).rev().collect();
        let s = TickStats::from_ticks(&mut v);
        assert_eq!((s.count, s.min, s.median, s.p99, s.max), (100, 1, 50, 99, 100));
        assert!((s.mean - 50.5).abs() < 1e-9);
        assert_eq!(TickStats::from_ticks(&mut []), TickStats::default());
        let s = TickStats::from_ticks(&mut [7]);
        assert_eq!((s.min, s.median, s.p99, s.max), (7, 7, 7, 7));
    }

    #[test]
    fn timer_is_calibrated_and_overhead_is_measured() {
        let timer = Timer::new();
        assert!(timer.ticks_per_sec > 1e8 && timer.ticks_per_sec < 1e11, "{}", timer.describe());
        assert!(timer.overhead_median_ticks >= timer.overhead_ticks);
        if timer.clock == Clock::Tsc {
            // A fenced pair is never free: some tens of ticks at least.
            assert!(timer.overhead_ticks > 0, "{}", timer.describe());
        }
        // Work that takes ~1 ms measures within a factor of a few of 1 ms.
        let (ticks, ()) = timer.time(|| {
            let t = Instant::now();
            while t.elapsed() < Duration::from_millis(1) {}
        });
        let ns = timer.ns(ticks as f64);
        assert!((0.9e6..50e6).contains(&ns), "1 ms measured as {ns} ns");
    }

    #[test]
    fn instant_fallback_counts_nanoseconds() {
        let timer = Timer::with_clock(Clock::Instant);
        assert_eq!(timer.ticks_per_sec, 1e9);
        assert_eq!(timer.ns(1000.0), 1000.0);
        assert!((timer.mb_per_sec(4096.0, 1000.0) - 4096.0).abs() < 1e-6);
    }

    #[test]
    fn nearest_rank_takes_the_smallest_value_covering_the_fraction() {
        let sorted = [10, 20, 30, 40];
        assert_eq!(nearest_rank(&sorted, 0.5), Some(20), "the lower median");
        assert_eq!(nearest_rank(&sorted, 0.51), Some(30));
        assert_eq!(nearest_rank(&sorted, 0.25), Some(10));
        assert_eq!(nearest_rank(&sorted, 0.99), Some(40));
        assert_eq!(nearest_rank(&sorted, 1.0), Some(40));
        assert_eq!(nearest_rank::<u64>(&[], 0.5), None);
    }

    #[test]
    fn core_rate_counts_additions_per_tick() {
        let timer = Timer::new();
        match core_rate(&timer) {
            // Between a tenth of an addition (a core starved by other work) and the issue
            // width of any core to date at any TSC rate: a wrong count of additions or
            // ticks lands outside.
            Some(rate) => assert!((0.1..16.0).contains(&rate), "{rate} additions per tick"),
            None => assert!(timer.clock != Clock::Tsc || !cfg!(target_arch = "x86_64")),
        }
        assert_eq!(core_rate(&Timer::with_clock(Clock::Instant)), None);
    }

    #[test]
    fn load_average_reads_on_linux() {
        if cfg!(target_os = "linux") {
            let la = load_average().expect("/proc/loadavg");
            assert!(la.iter().all(|&x| x >= 0.0));
        }
    }
}
