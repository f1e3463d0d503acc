//! Model-based property test: random alloc / write / free / compact / stale-free
//! sequences mirrored in a HashMap of expected contents, checked after every step.

mod common;

use std::collections::HashMap;

use common::{assert_matches, content};
use proptest::prelude::*;
use xvmalloc::{FreeError, Handle, HeapSource, Pool};

#[derive(Clone, Debug)]
enum Op {
    Alloc(usize),
    Free(usize),
    Write(usize, u64),
    Compact,
    StaleFree(usize),
    Forged(u64),
}

fn size() -> impl Strategy<Value = usize> {
    prop_oneof![
        4 => 1usize..=4096,
        2 => 1usize..=64,
        1 => prop::sample::select(vec![1, 12, 13, 20, 21, 2048, 4092, 4093, 4095, 4096, 4097, 0]),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        8 => size().prop_map(Op::Alloc),
        6 => any::<usize>().prop_map(Op::Free),
        2 => (any::<usize>(), any::<u64>()).prop_map(|(i, s)| Op::Write(i, s)),
        1 => Just(Op::Compact),
        1 => any::<usize>().prop_map(Op::StaleFree),
        1 => any::<u64>().prop_map(Op::Forged),
    ]
}

fn run(chunk: usize, ops: Vec<Op>) {
    let mut pool = Pool::with_chunk_size(HeapSource::new(), chunk).unwrap();
    let mut model: HashMap<Handle, Vec<u8>> = HashMap::new();
    let mut order: Vec<Handle> = Vec::new();
    let mut dead: Vec<Handle> = Vec::new();
    let mut next_id = 0u64;
    for op in ops {
        match op {
            Op::Alloc(len) => {
                let result = pool.alloc(len);
                if len == 0 || len > pool.max_alloc() {
                    assert!(matches!(result, Err(xvmalloc::AllocError::InvalidSize { .. })), "{len}");
                } else {
                    let h = result.unwrap();
                    let data = content(next_id, len);
                    next_id += 1;
                    pool.get_mut(h).unwrap().copy_from_slice(&data);
                    assert!(model.insert(h, data).is_none(), "handle reused while live");
                    order.push(h);
                }
            }
            Op::Free(i) if !order.is_empty() => {
                let h = order.swap_remove(i % order.len());
                pool.free(h).unwrap();
                model.remove(&h);
                dead.push(h);
            }
            Op::Write(i, seed) if !order.is_empty() => {
                let h = order[i % order.len()];
                let data = content(seed, model[&h].len());
                pool.get_mut(h).unwrap().copy_from_slice(&data);
                model.insert(h, data);
            }
            Op::Compact => {
                let before = pool.stats();
                let report = pool.compact();
                let after = pool.stats();
                assert_eq!(before.held_bytes - after.held_bytes, report.pages_released * 4096);
                assert_eq!(after.pages_compacted - before.pages_compacted, report.pages_released);
            }
            Op::StaleFree(i) if !dead.is_empty() => {
                let h = dead[i % dead.len()];
                assert_eq!(pool.free(h), Err(FreeError::Stale));
                assert!(pool.get(h).is_err() && pool.get_mut(h).is_err() && pool.len(h).is_err());
            }
            Op::Forged(bits) => {
                let h = Handle::from_bits(bits);
                if !model.contains_key(&h) {
                    assert!(pool.get(h).is_err());
                    assert!(pool.free(h).is_err());
                }
            }
            _ => {}
        }
        assert_matches(&pool, &model);
    }
    for h in order {
        pool.free(h).unwrap();
        model.remove(&h);
    }
    assert_matches(&pool, &model);
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: if cfg!(miri) { 2 } else { 128 },
        // Miri isolates the file system: no failure persistence there.
        failure_persistence: if cfg!(miri) { None } else { ProptestConfig::default().failure_persistence },
        ..ProptestConfig::default()
    })]

    #[test]
    fn pool_matches_model_16k(ops in prop::collection::vec(op(), 1..if cfg!(miri) { 20 } else { 300 })) {
        run(16384, ops);
    }

    #[test]
    fn pool_matches_model_4k(ops in prop::collection::vec(op(), 1..if cfg!(miri) { 20 } else { 300 })) {
        run(4096, ops);
    }
}
