//! Size classes and their two-level bitmap.
//!
//! Blocks are segregated by exact size in 8-byte units: class `u` holds free blocks of
//! `u` units for `u` in `MIN_UNITS..=MAX_OBJECT_UNITS`, and the last class [`LARGE`] holds
//! every larger free block (chunk remainders). A request of `u` units takes the head of the
//! first non-empty class `>= u` — exact classes make this a best fit — found with two
//! find-first-set operations: one on the second-level word holding class `u`, one on the
//! first-level word whose bit `w` says "second-level word `w` is non-zero".

use crate::block::NIL;

/// Units of the largest object block (4096-byte payload + header, rounded up).
pub(crate) const MAX_OBJECT_UNITS: u32 = crate::block::units_for(crate::MAX_ALLOC);
/// The class of every free block larger than any object.
pub(crate) const LARGE: usize = MAX_OBJECT_UNITS as usize + 1;
/// Number of classes (indices 0 and 1 are never used: the smallest block is 2 units).
pub(crate) const CLASSES: usize = LARGE + 1;
const WORDS: usize = CLASSES.div_ceil(64);
const _: () = assert!(WORDS <= 64, "the first level is one u64");

/// The class a free block of `units` belongs to.
#[inline]
pub(crate) const fn class_of(units: u32) -> usize {
    let units = units as usize;
    if units >= LARGE { LARGE } else { units }
}

/// List heads plus the two bitmap levels.
#[derive(Clone, Debug)]
pub(crate) struct Classes {
    pub(crate) heads: [u32; CLASSES],
    second: [u64; WORDS],
    first: u64,
}

impl Classes {
    pub(crate) const fn new() -> Self {
        Classes { heads: [NIL; CLASSES], second: [0; WORDS], first: 0 }
    }

    /// Marks `class` non-empty.
    #[inline]
    pub(crate) fn set(&mut self, class: usize) {
        self.second[class / 64] |= 1 << (class % 64);
        self.first |= 1 << (class / 64);
    }

    /// Marks `class` empty.
    #[inline]
    pub(crate) fn clear(&mut self, class: usize) {
        let word = &mut self.second[class / 64];
        *word &= !(1 << (class % 64));
        if *word == 0 {
            self.first &= !(1 << (class / 64));
        }
    }

    /// The first non-empty class whose blocks all hold at least `units`, in O(1).
    #[inline]
    pub(crate) fn find(&self, units: u32) -> Option<usize> {
        let class = class_of(units);
        let word = class / 64;
        let here = self.second[word] & (!0u64 << (class % 64));
        if here != 0 {
            return Some(word * 64 + here.trailing_zeros() as usize);
        }
        let above = self.first & (!1u64).checked_shl(word as u32).unwrap_or(0);
        if above == 0 {
            return None;
        }
        let word = above.trailing_zeros() as usize;
        Some(word * 64 + self.second[word].trailing_zeros() as usize)
    }

    /// Whether `class` is marked non-empty (for invariant checks).
    pub(crate) fn is_set(&self, class: usize) -> bool {
        self.second[class / 64] & (1 << (class % 64)) != 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn find_returns_the_smallest_fitting_class() {
        let mut c = Classes::new();
        assert_eq!(c.find(2), None);
        c.set(70);
        c.set(300);
        c.set(LARGE);
        assert_eq!(c.find(2), Some(70));
        assert_eq!(c.find(70), Some(70));
        assert_eq!(c.find(71), Some(300));
        assert_eq!(c.find(301), Some(LARGE));
        assert_eq!(c.find(MAX_OBJECT_UNITS), Some(LARGE));
        c.clear(LARGE);
        assert_eq!(c.find(301), None);
        c.clear(70);
        assert_eq!(c.find(2), Some(300));
        assert!(!c.is_set(70) && c.is_set(300));
    }

    #[test]
    fn classes_cover_the_object_range() {
        assert_eq!(class_of(2), 2);
        assert_eq!(class_of(MAX_OBJECT_UNITS), MAX_OBJECT_UNITS as usize);
        assert_eq!(class_of(MAX_OBJECT_UNITS + 1), LARGE);
        assert_eq!(class_of(8192), LARGE);
    }
}
