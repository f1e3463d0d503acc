//! Arbitrary operation sequences on an xvmalloc `Pool` against a shadow model (the live
//! objects' handles and bytes, and the handles already freed): every object keeps its
//! bytes through allocs, frees, writes and compactions; stale, double-freed and forged
//! handles are refused and change nothing; failed allocations change nothing; the
//! statistics match the model and `validate()` finds the structures consistent.

use arbitrary::Arbitrary;
use xvmalloc::{AllocError, Handle, HandleError, HeapSource, Pool};

#[derive(Arbitrary, Debug)]
enum Op {
    /// `alloc(len)`, then the model's fill through `get_mut`.
    Alloc { len: u16, fill: u8 },
    /// `alloc_copy` of `len` bytes counting up from `start`.
    AllocCopy { len: u16, start: u8 },
    /// Free the live object at this index (modulo the count).
    Free { index: u16 },
    /// Free / get / len an already freed handle again.
    UseStale { index: u16 },
    /// Use a handle made of arbitrary bits.
    Forged { bits: u64 },
    /// Overwrite part of a live object.
    Write { index: u16, at: u16, byte: u8 },
    /// Check one live object's bytes.
    Read { index: u16 },
    /// Compact the pool.
    Compact,
}

#[derive(Arbitrary, Debug)]
struct Input {
    /// Chunk size 4096 << (chunk % 5).
    chunk: u8,
    /// Source limit in chunks (0 = no limit).
    limit_chunks: u8,
    ops: Vec<Op>,
}

struct Model {
    live: Vec<(Handle, Vec<u8>)>,
    freed: Vec<Handle>,
}

fn check_all(pool: &Pool<HeapSource>, model: &Model) {
    pool.validate().expect("pool structures inconsistent");
    for (h, bytes) in &model.live {
        assert_eq!(pool.get(*h).expect("live handle refused"), &bytes[..], "object bytes changed");
    }
    let stats = pool.stats();
    assert_eq!(stats.objects, model.live.len() as u64);
    assert_eq!(stats.payload_bytes, model.live.iter().map(|(_, b)| b.len() as u64).sum::<u64>());
    assert_eq!(stats.held_bytes, pool.source().held_bytes() as u64);
    assert!(stats.allocated_bytes <= stats.held_bytes);
}

/// One input, as the fuzz target runs it (bytes that do not decode are skipped).
pub fn run(data: &[u8]) {
    let Some(input) = crate::decode::<Input>(data) else { return };
    let chunk_size = 4096usize << (input.chunk % 5);
    let source = match input.limit_chunks {
        0 => HeapSource::new(),
        n => HeapSource::with_limit(usize::from(n) * chunk_size),
    };
    let limited = input.limit_chunks != 0;
    let mut pool = Pool::with_chunk_size(source, chunk_size).unwrap();
    let max = pool.max_alloc();
    let mut model = Model { live: Vec::new(), freed: Vec::new() };

    for (step, op) in input.ops.iter().enumerate() {
        match *op {
            Op::Alloc { len, fill } | Op::AllocCopy { len, start: fill } => {
                let len = usize::from(len) % (max + 2);
                let before = pool.stats();
                let bytes: Vec<u8> = match op {
                    Op::Alloc { .. } => vec![fill; len],
                    _ => (0..len).map(|i| fill.wrapping_add(i as u8)).collect(),
                };
                let result = match op {
                    Op::Alloc { .. } => pool.alloc(len).inspect(|h| {
                        pool.get_mut(*h).unwrap().copy_from_slice(&bytes);
                    }),
                    _ => pool.alloc_copy(&bytes),
                };
                match result {
                    Ok(h) => {
                        assert!(len >= 1 && len <= max, "accepted invalid size {len}");
                        assert!(model.live.iter().all(|(l, _)| *l != h), "handle handed out twice");
                        assert_eq!(pool.len(h), Ok(len));
                        model.freed.retain(|f| *f != h);
                        model.live.push((h, bytes));
                    }
                    Err(AllocError::InvalidSize { len: l, max: m }) => {
                        assert!(len == 0 || len > max, "refused valid size {len}");
                        assert_eq!((l, m), (len, max));
                        assert_eq!(pool.stats(), before, "a refused alloc changed the pool");
                    }
                    Err(AllocError::OutOfMemory) => {
                        assert!(limited, "out of memory without a source limit");
                        assert_eq!(pool.stats(), before, "a failed alloc changed the pool");
                    }
                    Err(e) => panic!("unexpected alloc error {e:?}"),
                }
            }
            Op::Free { index } => {
                if model.live.is_empty() {
                    continue;
                }
                let (h, _) = model.live.swap_remove(usize::from(index) % model.live.len());
                assert_eq!(pool.free(h), Ok(()));
                assert!(!pool.contains(h));
                model.freed.push(h);
            }
            Op::UseStale { index } => {
                if model.freed.is_empty() {
                    continue;
                }
                let h = model.freed[usize::from(index) % model.freed.len()];
                let before = pool.stats();
                assert_eq!(pool.get(h), Err(HandleError::Stale));
                assert_eq!(pool.len(h), Err(HandleError::Stale));
                assert_eq!(pool.free(h), Err(HandleError::Stale), "double free accepted");
                assert_eq!(pool.stats(), before);
            }
            Op::Forged { bits } => {
                let h = Handle::from_bits(bits);
                match model.live.iter().find(|(l, _)| *l == h) {
                    Some((_, bytes)) => assert_eq!(pool.get(h).unwrap(), &bytes[..]),
                    None => {
                        let before = pool.stats();
                        assert!(pool.get(h).is_err(), "forged handle accepted");
                        assert!(pool.get_mut(h).is_err(), "forged handle accepted");
                        assert!(pool.free(h).is_err(), "forged handle freed something");
                        assert_eq!(pool.stats(), before);
                    }
                }
            }
            Op::Write { index, at, byte } => {
                if model.live.is_empty() {
                    continue;
                }
                let i = usize::from(index) % model.live.len();
                let (h, bytes) = &mut model.live[i];
                let at = usize::from(at) % bytes.len();
                bytes[at] = byte;
                pool.get_mut(*h).unwrap()[at] = byte;
            }
            Op::Read { index } => {
                if model.live.is_empty() {
                    continue;
                }
                let (h, bytes) = &model.live[usize::from(index) % model.live.len()];
                assert_eq!(pool.get(*h).unwrap(), &bytes[..], "object bytes changed");
            }
            Op::Compact => {
                let before = pool.stats();
                let report = pool.compact();
                let after = pool.stats();
                assert_eq!(after.held_bytes + report.pages_released * 4096, before.held_bytes);
                check_all(&pool, &model);
            }
        }
        if step % 16 == 15 {
            check_all(&pool, &model);
        }
    }
    check_all(&pool, &model);
    for (h, _) in model.live.drain(..) {
        pool.free(h).unwrap();
    }
    pool.validate().unwrap();
    assert_eq!(pool.stats().held_bytes, 0, "an empty pool still holds chunks");
}
