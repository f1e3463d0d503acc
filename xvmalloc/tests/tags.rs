//! Pool tags, in a test binary of their own: no other test creates pools in between.

use xvmalloc::{HeapSource, Pool};

/// Tag bits of a pool's handles (the top 12 bits of the generation half).
fn tag_of_a_new_pool() -> u64 {
    let mut pool = Pool::new(HeapSource::new());
    pool.alloc(1).unwrap().to_bits() >> 52
}

/// Tags are never 0, the 4095 tags of consecutive pools all differ, and then they repeat.
#[test]
#[cfg_attr(miri, ignore = "creates 4096 pools")]
fn consecutive_pools_have_distinct_tags() {
    let tags: Vec<u64> = (0..4096).map(|_| tag_of_a_new_pool()).collect();
    assert!(tags.iter().all(|&t| t != 0 && t < 1 << 12), "{tags:?}");
    let mut distinct = tags[..4095].to_vec();
    distinct.sort_unstable();
    distinct.dedup();
    assert_eq!(distinct.len(), 4095);
    assert_eq!(tags[4095], tags[0], "the tags repeat after 4095 pools");
}
