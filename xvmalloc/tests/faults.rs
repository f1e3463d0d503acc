//! A page source that fails at random points never loses or corrupts stored objects.

mod common;

use std::collections::HashMap;

use common::{assert_matches, content};
use proptest::prelude::*;
use xvmalloc::{AllocError, Handle, HeapSource, PageSource, Pool};

/// Fails `acquire` whenever the next bit of `pattern` is set.
struct Flaky {
    inner: HeapSource,
    pattern: u64,
    calls: u32,
    failures: u32,
}

impl PageSource for Flaky {
    type Chunk = Box<[u8]>;
    fn acquire(&mut self, size: usize) -> Option<Box<[u8]>> {
        let fail = self.pattern >> (self.calls % 64) & 1 == 1;
        self.calls += 1;
        if fail {
            self.failures += 1;
            return None;
        }
        let mut chunk = self.inner.acquire(size)?;
        // Garbage contents: the pool must not rely on zeroed chunks.
        chunk.fill(0xA5);
        Some(chunk)
    }
    fn release(&mut self, chunk: Box<[u8]>) {
        self.inner.release(chunk)
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: if cfg!(miri) { 2 } else { 64 },
        // Miri isolates the file system: no failure persistence there.
        failure_persistence: if cfg!(miri) { None } else { ProptestConfig::default().failure_persistence },
        ..ProptestConfig::default()
    })]

    #[test]
    fn failed_acquires_change_nothing(
        pattern in any::<u64>(),
        ops in prop::collection::vec((1usize..=4096, any::<bool>(), any::<usize>()), 1..if cfg!(miri) { 20 } else { 400 }),
    ) {
        let mut pool = Pool::new(Flaky { inner: HeapSource::new(), pattern, calls: 0, failures: 0 });
        let mut model: HashMap<Handle, Vec<u8>> = HashMap::new();
        let mut order = Vec::new();
        for (id, (len, free, pick)) in ops.into_iter().enumerate() {
            if free && !order.is_empty() {
                let h: Handle = order.swap_remove(pick % order.len());
                pool.free(h).unwrap();
                model.remove(&h);
            } else {
                let before = pool.stats();
                match pool.alloc_copy(&content(id as u64, len)) {
                    Ok(h) => {
                        model.insert(h, content(id as u64, len));
                        order.push(h);
                    }
                    Err(e) => {
                        prop_assert_eq!(e, AllocError::OutOfMemory);
                        prop_assert_eq!(pool.stats(), before, "a failed alloc changed the pool");
                    }
                }
            }
            if id % 50 == 0 {
                pool.compact();
            }
            assert_matches(&pool, &model);
        }
        prop_assert_eq!(pool.source().inner.held_bytes() as u64, pool.stats().held_bytes);
        drop(order);
    }
}

#[test]
fn source_handing_out_wrong_sizes_is_a_failure() {
    struct Short(HeapSource);
    impl PageSource for Short {
        type Chunk = Box<[u8]>;
        fn acquire(&mut self, size: usize) -> Option<Box<[u8]>> {
            self.0.acquire(size - 8)
        }
        fn release(&mut self, chunk: Box<[u8]>) {
            self.0.release(chunk)
        }
    }
    let mut pool = Pool::new(Short(HeapSource::new()));
    assert_eq!(pool.alloc(100), Err(AllocError::OutOfMemory));
    assert_eq!(pool.source().0.held_bytes(), 0, "the wrong-sized chunk was given back");
}

#[test]
fn limited_heap_source_fills_up_then_recovers() {
    let mut pool = Pool::new(HeapSource::with_limit(2 * 16384));
    let mut handles = Vec::new();
    loop {
        match pool.alloc_copy(&[7; 3000]) {
            Ok(h) => handles.push(h),
            Err(e) => {
                assert_eq!(e, AllocError::OutOfMemory);
                break;
            }
        }
    }
    assert_eq!(handles.len(), 10, "5 blocks of 3008 bytes per 16 KiB chunk");
    // Small objects still fit in the chunks' tails.
    let small = pool.alloc_copy(&[1; 100]).unwrap();
    for h in handles.drain(..5) {
        pool.free(h).unwrap();
    }
    assert!(pool.alloc_copy(&[9; 3000]).is_ok());
    assert_eq!(pool.get(small).unwrap(), &[1; 100][..]);
    for h in &handles {
        assert_eq!(pool.get(*h).unwrap(), &[7; 3000][..]);
    }
}
