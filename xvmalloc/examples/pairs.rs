//! The allocator's hot path: free one of 1,000 live objects and allocate another, over and
//! over, with object sizes of compressed pages (40..3000 bytes). Prints ns per pair; run it
//! under `valgrind --tool=callgrind` with `PAIRS=200000` and `PAIRS=0` and subtract to count
//! instructions per pair (docs/perf/xvmalloc.md).
//!
//! ```sh
//! cargo run --release -p xvmalloc --example pairs
//! ```

use std::hint::black_box;
use std::time::Instant;

use xvmalloc::{HeapSource, Pool};

/// A small, fixed pseudo-random sequence (xorshift), so every run does the same work.
fn next(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

fn main() {
    let pairs: usize = std::env::var("PAIRS").ok().and_then(|v| v.parse().ok()).unwrap_or(2_000_000);
    let mut pool = Pool::new(HeapSource::new());
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let size = |state: &mut u64| 40 + (next(state) % 2960) as usize;
    let mut live: Vec<_> = (0..1000).map(|_| pool.alloc(size(&mut state)).expect("memory")).collect();
    let start = Instant::now();
    for _ in 0..pairs {
        let at = (next(&mut state) % live.len() as u64) as usize;
        pool.free(black_box(live[at])).expect("live handle");
        live[at] = pool.alloc(size(&mut state)).expect("memory");
    }
    let elapsed = start.elapsed();
    if pairs > 0 {
        println!(
            "{:.1} ns per free+alloc pair ({pairs} pairs, 1000 live objects)",
            elapsed.as_nanos() as f64 / pairs as f64
        );
    }
    pool.validate().expect("consistent pool");
}
