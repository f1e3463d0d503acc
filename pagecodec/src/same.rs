//! Same-filled page detection, as zram does before compressing.

use crate::{PAGE_SIZE, Page};

/// Returns the repeated value if every 64-bit word of the page is equal (zero included).
///
/// The value is the first word read as little-endian, so `Page::filled(0xAB)` gives
/// `0xABAB_ABAB_ABAB_ABAB` on every host. zram stores such pages as the value alone.
///
/// The scan compares 64 bytes at a time (vectorised by the compiler) and stops at the
/// first cache line that differs, so typical non-uniform pages cost a few nanoseconds.
///
/// ```
/// use pagecodec::{same_filled, Page};
///
/// assert_eq!(same_filled(&Page::zeroed()), Some(0));
/// let mut page = Page::filled(0xAB);
/// assert_eq!(same_filled(&page), Some(0xABAB_ABAB_ABAB_ABAB));
/// page.as_bytes_mut()[4095] = 0;
/// assert_eq!(same_filled(&page), None);
/// ```
#[inline]
pub fn same_filled(page: &Page) -> Option<u64> {
    let words = page.words64();
    let first = words[0];
    // One cache line (8 words) per step: OR of XORs has no early exit inside the line,
    // which lets the compiler use wide vector compares.
    for line in words.chunks_exact(8) {
        let differs = line.iter().fold(0u64, |acc, &w| acc | (w ^ first));
        if differs != 0 {
            return None;
        }
    }
    Some(u64::from_le(first))
}

const _: () = assert!(PAGE_SIZE % 64 == 0);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn differences_that_cancel_out_are_still_found() {
        // Two words that differ from the first by the same bits: an XOR of the differences
        // would cancel them; the scan ORs them.
        let mut page = Page::filled(0x5A);
        page.as_bytes_mut()[8] ^= 1;
        page.as_bytes_mut()[16] ^= 1;
        assert_eq!(same_filled(&page), None);
    }

    #[test]
    fn detects_each_position_of_a_difference() {
        assert_eq!(same_filled(&Page::filled(0)), Some(0));
        for pos in [0, 1, 7, 8, 63, 64, 2048, 4095] {
            let mut page = Page::filled(0x5A);
            page.as_bytes_mut()[pos] ^= 1;
            assert_eq!(same_filled(&page), None, "difference at byte {pos}");
        }
    }

    #[test]
    fn u64_patterns_and_u32_alternations_are_same_filled() {
        let mut page = Page::zeroed();
        for chunk in page.as_bytes_mut().chunks_exact_mut(8) {
            chunk.copy_from_slice(&0x0102_0304_0506_0708u64.to_le_bytes());
        }
        assert_eq!(same_filled(&page), Some(0x0102_0304_0506_0708));
        let mut page = Page::zeroed();
        for (i, w) in page.words_mut().iter_mut().enumerate() {
            *w = if i % 2 == 0 { 1 } else { 2 };
        }
        // Two different u32 halves still form one repeated u64.
        assert!(same_filled(&page).is_some());
        page.words_mut()[3] = 3;
        assert_eq!(same_filled(&page), None);
    }
}
