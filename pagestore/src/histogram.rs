//! A bounded log-linear histogram: constant memory, ~3% resolution, for medians.

use alloc::vec;
use alloc::vec::Vec;

/// Values below this are counted exactly.
const EXACT: u64 = 32;
/// Sub-buckets per power of two (5 bits of mantissa: 1/32 = ~3% resolution).
const SUB_BITS: u32 = 5;
/// Largest exponent kept apart; larger values share the top buckets' range.
const MAX_EXP: u32 = 40;
const BUCKETS: usize = EXACT as usize + ((MAX_EXP - SUB_BITS + 1) as usize) * (1 << SUB_BITS);

/// Count, min, max, sum and a bucketed distribution of u64 samples.
#[derive(Clone, Debug)]
pub(crate) struct Histogram {
    buckets: Vec<u64>,
    pub(crate) count: u64,
    pub(crate) min: u64,
    pub(crate) max: u64,
    pub(crate) sum: u128,
}

fn bucket_of(value: u64) -> usize {
    if value < EXACT {
        return value as usize;
    }
    let exp = (63 - value.leading_zeros()).min(MAX_EXP);
    let value = value.min((1u64 << (MAX_EXP + 1)) - 1);
    let sub = (value >> (exp - SUB_BITS)) & ((1 << SUB_BITS) - 1);
    EXACT as usize + ((exp - SUB_BITS) as usize) * (1 << SUB_BITS) + sub as usize
}

fn lower_bound(bucket: usize) -> u64 {
    if bucket < EXACT as usize {
        return bucket as u64;
    }
    let b = bucket - EXACT as usize;
    let exp = (b >> SUB_BITS) as u32 + SUB_BITS;
    let sub = (b & ((1 << SUB_BITS) - 1)) as u64;
    ((1 << SUB_BITS) + sub) << (exp - SUB_BITS)
}

impl Histogram {
    pub(crate) fn new() -> Self {
        Histogram { buckets: vec![0; BUCKETS], count: 0, min: u64::MAX, max: 0, sum: 0 }
    }

    pub(crate) fn record(&mut self, value: u64) {
        self.buckets[bucket_of(value)] += 1;
        self.count += 1;
        self.min = self.min.min(value);
        self.max = self.max.max(value);
        self.sum += u128::from(value);
    }

    #[cfg_attr(not(feature = "std"), allow(dead_code))]
    pub(crate) fn merge(&mut self, other: &Histogram) {
        for (a, b) in self.buckets.iter_mut().zip(&other.buckets) {
            *a += b;
        }
        self.count += other.count;
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
        self.sum += other.sum;
    }

    /// The median to within one bucket (the bucket's lower bound, clamped to min..=max).
    pub(crate) fn median(&self) -> u64 {
        if self.count == 0 {
            return 0;
        }
        let rank = self.count.div_ceil(2);
        let mut seen = 0;
        for (bucket, &n) in self.buckets.iter().enumerate() {
            seen += n;
            if seen >= rank {
                return lower_bound(bucket).clamp(self.min, self.max);
            }
        }
        self.max
    }

    pub(crate) fn summary(&self) -> crate::Summary {
        if self.count == 0 {
            return crate::Summary::default();
        }
        crate::Summary {
            count: self.count,
            min: self.min,
            median: self.median(),
            mean: self.sum as f64 / self.count as f64,
            max: self.max,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_monotonic_and_tight() {
        let mut last = 0;
        for v in (0..if cfg!(miri) { 2_000u64 } else { 100_000 }).chain([
            1 << 39,
            1 << 40,
            (1 << 41) - 1,
            u64::MAX,
        ]) {
            let b = bucket_of(v);
            assert!(b >= last && b < BUCKETS, "{v}");
            last = b;
            let lo = lower_bound(b);
            if v < 1 << 41 {
                assert!(lo <= v && v - lo <= v / 32, "{v} -> {lo}");
            }
        }
    }

    #[test]
    fn median_min_max_mean() {
        let mut h = Histogram::new();
        assert_eq!(h.summary(), crate::Summary::default());
        for v in [5, 1000, 7, 3000, 10_000] {
            h.record(v);
        }
        let s = h.summary();
        assert_eq!((s.count, s.min, s.max), (5, 5, 10_000));
        assert!((s.median as i64 - 1000).abs() <= 1000 / 32, "{s:?}");
        assert!((s.mean - 2802.4).abs() < 1e-9);
        let mut g = Histogram::new();
        g.record(1);
        g.merge(&h);
        assert_eq!((g.count, g.min, g.max, g.sum), (6, 1, 10_000, 14_013));
        assert_eq!(g.median(), 7, "lower median of 1, 5, 7, 1000, 3000, 10000");
    }
}
