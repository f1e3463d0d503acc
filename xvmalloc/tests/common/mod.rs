//! Shared helpers for the integration tests (included with `mod common;`).
#![allow(dead_code, unreachable_pub)]

use std::collections::HashMap;

use xvmalloc::{Handle, PageSource, Pool};

/// Deterministic content for object `id` of `len` bytes.
pub fn content(id: u64, len: usize) -> Vec<u8> {
    let mut x = id.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

/// Asserts that the pool holds exactly the model: contents, no overlap, statistics.
pub fn assert_matches<S: PageSource>(pool: &Pool<S>, model: &HashMap<Handle, Vec<u8>>) {
    pool.validate().unwrap();
    let mut ranges = Vec::with_capacity(model.len());
    let mut payload = 0u64;
    let mut min_alloc = 0u64;
    for (h, want) in model {
        let got = pool.get(*h).expect("live handle refused");
        assert_eq!(got, &want[..], "object {h:?} corrupted");
        assert_eq!(pool.len(*h).unwrap(), want.len());
        let start = got.as_ptr() as usize;
        ranges.push((start, start + got.len()));
        payload += want.len() as u64;
        min_alloc += (want.len() as u64 + 4).div_ceil(8).max(2) * 8;
    }
    ranges.sort_unstable();
    for pair in ranges.windows(2) {
        assert!(pair[0].1 <= pair[1].0, "objects overlap: {pair:?}");
    }
    let s = pool.stats();
    assert_eq!(s.objects, model.len() as u64);
    assert_eq!(s.payload_bytes, payload);
    // Allocated = headers + rounding; a split remainder of one unit may stay inside a block.
    assert!(s.allocated_bytes >= min_alloc && s.allocated_bytes <= min_alloc + 8 * s.objects, "{s:?}");
    assert_eq!(s.held_bytes, s.chunks_held * s.chunk_size);
    assert!(s.allocated_bytes <= s.held_bytes);
    if model.is_empty() {
        assert_eq!(s.held_bytes, 0, "empty pool holds memory");
    }
}
