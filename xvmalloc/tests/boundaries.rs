//! Boundary sizes, handle misuse, chunk release and compaction behaviour.

mod common;

use xvmalloc::{
    AllocError, ConfigError, DEFAULT_CHUNK_SIZE, FreeError, Handle, HandleError, HeapSource, MAX_ALLOC, Pool,
};

#[test]
fn size_limits() {
    let mut pool = Pool::new(HeapSource::new());
    assert_eq!(pool.max_alloc(), MAX_ALLOC);
    assert_eq!(pool.alloc(0), Err(AllocError::InvalidSize { len: 0, max: MAX_ALLOC }));
    assert_eq!(
        pool.alloc(MAX_ALLOC + 1),
        Err(AllocError::InvalidSize { len: MAX_ALLOC + 1, max: MAX_ALLOC })
    );
    assert!(pool.alloc(usize::MAX).is_err());
    for len in [1, 2, 11, 12, 13, 4091, 4092, 4095, MAX_ALLOC] {
        let data = common::content(len as u64, len);
        let h = pool.alloc_copy(&data).unwrap();
        assert_eq!(pool.get(h).unwrap(), &data[..]);
        assert_eq!(pool.len(h).unwrap(), len);
    }
    let mut small = Pool::with_chunk_size(HeapSource::new(), 4096).unwrap();
    assert_eq!(small.max_alloc(), 4092);
    assert!(small.alloc(4093).is_err());
    let h = small.alloc_copy(&[3; 4092]).unwrap();
    assert_eq!(small.stats().held_bytes, 4096, "a 4092-byte object fills a 4 KiB chunk exactly");
    assert_eq!(small.stats().allocated_bytes, 4096);
    small.free(h).unwrap();
    assert_eq!(small.stats().held_bytes, 0);
}

#[test]
fn chunk_sizes_are_checked() {
    for bad in [0, 2048, 4095, 12288, 131072] {
        assert_eq!(
            Pool::with_chunk_size(HeapSource::new(), bad).err(),
            Some(ConfigError::InvalidChunkSize(bad))
        );
    }
    for good in [4096, 8192, 16384, 32768, 65536] {
        assert_eq!(Pool::with_chunk_size(HeapSource::new(), good).unwrap().chunk_size(), good);
    }
    assert_eq!(Pool::new(HeapSource::new()).chunk_size(), DEFAULT_CHUNK_SIZE);
}

#[test]
fn stale_double_and_forged_handles_are_refused() {
    let mut pool = Pool::new(HeapSource::new());
    let a = pool.alloc_copy(b"first").unwrap();
    let keep = pool.alloc_copy(b"keep").unwrap();
    pool.free(a).unwrap();
    assert_eq!(pool.free(a), Err(FreeError::Stale), "double free");
    assert_eq!(pool.get(a), Err(HandleError::Stale));
    assert_eq!(pool.len(a), Err(HandleError::Stale));
    assert!(pool.get_mut(a).is_err());
    assert!(!pool.contains(a));
    // The slot is reused with a new generation: the old handle stays stale.
    let b = pool.alloc_copy(b"second").unwrap();
    assert_ne!(a, b);
    assert_eq!(pool.get(a), Err(HandleError::Stale));
    assert_eq!(pool.get(b).unwrap(), b"second");
    // Forged handles.
    let unknown = Handle::from_bits(u64::from(u32::MAX));
    assert_eq!(pool.get(unknown), Err(HandleError::Unknown));
    assert_eq!(pool.free(unknown), Err(HandleError::Unknown));
    let wrong_gen = Handle::from_bits(keep.to_bits() ^ (1 << 40));
    assert_eq!(pool.free(wrong_gen), Err(HandleError::Stale));
    assert_eq!(Handle::from_bits(keep.to_bits()), keep);
    assert_eq!(pool.get(keep).unwrap(), b"keep");
    assert_eq!(core::mem::size_of::<Handle>(), 8);
    pool.validate().unwrap();
}

#[test]
fn errors_display() {
    let e = AllocError::InvalidSize { len: 0, max: 4096 };
    assert!(e.to_string().contains("size 0"));
    assert!(AllocError::OutOfMemory.to_string().contains("memory"));
    assert!(HandleError::Stale.to_string().contains("stale"));
    assert!(HandleError::Unknown.to_string().contains("unknown"));
    assert!(ConfigError::InvalidChunkSize(3).to_string().contains('3'));
    let _: &dyn core::error::Error = &AllocError::AddressSpaceExhausted;
}

#[test]
fn empty_chunks_go_back_at_once_and_merging_restores_whole_chunks() {
    let mut pool = Pool::new(HeapSource::new());
    let hs: Vec<_> = (0..16u8).map(|i| pool.alloc_copy(&[i; 1000]).unwrap()).collect();
    assert_eq!(pool.stats().chunks_held, 1);
    // Free in an order that needs merges with the previous, the next and both neighbours.
    for i in [1, 3, 2, 0, 5, 15, 14, 4, 6, 8, 7, 10, 9, 12, 13] {
        pool.free(hs[i]).unwrap();
        pool.validate().unwrap();
        assert_eq!(pool.stats().chunks_held, 1);
    }
    pool.free(hs[11]).unwrap();
    let s = pool.stats();
    assert_eq!((s.chunks_held, s.held_bytes, s.pages_released, s.pages_compacted), (0, 0, 4, 0));
    assert_eq!(pool.source().held_bytes(), 0);
}

#[test]
fn compaction_keeps_handles_and_meets_the_density_target() {
    // Sizes spread like compressed pages (100..3500 bytes).
    let n = if cfg!(miri) { 60 } else { 20_000 };
    let mut pool = Pool::new(HeapSource::new());
    let mut rng = 0x1234_5678_9ABC_DEF1u64;
    let mut next = || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let mut live: Vec<(Handle, u64, usize)> = (0..n as u64)
        .map(|id| {
            let len = 100 + (next() % 3400) as usize;
            (pool.alloc_copy(&common::content(id, len)).unwrap(), id, len)
        })
        .collect();
    let full = pool.stats();
    // The density targets need a realistic pool; Miri runs a tiny one for memory safety.
    let (full_target, compact_target) = if cfg!(miri) { (0.85, 0.75) } else { (0.96, 0.92) };
    assert!(full.efficiency() >= full_target, "full: {full:?}");
    for i in (1..live.len()).rev() {
        live.swap(i, (next() % (i as u64 + 1)) as usize);
    }
    for (h, _, _) in live.drain(..n * 6 / 10) {
        pool.free(h).unwrap();
    }
    let report = pool.compact();
    let after = pool.stats();
    assert!(report.objects_moved > 0 && report.chunks_released > 0);
    assert_eq!(after.pages_compacted, report.pages_released);
    assert!(after.efficiency() >= compact_target, "after compact: {after:?}");
    pool.validate().unwrap();
    for (h, id, len) in &live {
        assert_eq!(pool.get(*h).unwrap(), &common::content(*id, *len)[..]);
    }
    // A second compaction of a dense pool moves little and breaks nothing.
    pool.compact();
    pool.validate().unwrap();
}

#[test]
fn compaction_of_tiny_pools_is_harmless() {
    let mut pool = Pool::new(HeapSource::new());
    assert_eq!(pool.compact(), Default::default());
    let h = pool.alloc_copy(&[5; 10]).unwrap();
    pool.compact();
    assert_eq!(pool.get(h).unwrap(), &[5; 10]);
}
