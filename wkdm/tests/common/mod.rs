//! Helpers shared by the integration tests (included with `mod common;`).
#![allow(dead_code, unreachable_pub)]

pub mod vectors;

use proptest::prelude::*;

/// Words drawn from a small pool (so EXACT and PARTIAL hits happen), with zeros and
/// near-duplicates, laid out as `len` words.
pub fn words(len: usize) -> impl Strategy<Value = Vec<u32>> {
    (prop::collection::vec(any::<u32>(), 1..24), prop::collection::vec((0u8..5, any::<u16>()), len)).prop_map(
        |(pool, picks)| {
            picks
                .into_iter()
                .map(|(kind, r)| {
                    let base = pool[usize::from(r) % pool.len()];
                    match kind {
                        0 => 0,
                        1 => base,
                        2 => (base & !0x3FF) | u32::from(r & 0x3FF),
                        3 => u32::from(r) & 0x3FF,
                        _ => base.rotate_left(u32::from(r % 32)) ^ u32::from(r),
                    }
                })
                .collect()
        },
    )
}
