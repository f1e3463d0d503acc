//! Boundary sizes, handle misuse, chunk release and compaction behaviour.

mod common;

use xvmalloc::{
    Addr, AllocError, CompactReport, ConfigError, DEFAULT_CHUNK_SIZE, FreeError, Handle, HandleError,
    HeapSource, MAX_ALLOC, Pool,
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

#[test]
fn a_pool_can_borrow_its_source() {
    let mut source = HeapSource::new();
    let mut pool = Pool::new(&mut source);
    let h = pool.alloc(100).unwrap();
    assert_eq!(pool.source().held_bytes(), pool.chunk_size());
    pool.free(h).unwrap();
    assert_eq!(pool.source().held_bytes(), 0, "the empty chunk went back through the borrow");
    pool.alloc(100).unwrap();
    assert_eq!(pool.source().held_bytes(), pool.chunk_size());
    drop(pool);
    assert_eq!(source.held_bytes(), 0, "dropping the pool gives its chunks back");
}

#[test]
fn addresses_round_trip_through_bits() {
    let mut pool = Pool::new(HeapSource::new());
    let a = pool.alloc_direct(&[7; 10]).unwrap();
    let b = pool.alloc_direct(&[8; 10]).unwrap();
    assert_ne!(a.to_bits(), b.to_bits());
    assert_eq!(Addr::from_bits(b.to_bits()), b);
    assert_eq!(pool.get_direct(Addr::from_bits(b.to_bits())).unwrap(), &[8; 10]);
}

/// `n` objects of 4092 bytes (object `i` filled with byte `i`), as handles or as direct
/// objects: a block of 512 units each, so four fill a default chunk exactly.
fn objects_of_4092_bytes(pool: &mut Pool<HeapSource>, n: usize, direct: bool) -> (Vec<Handle>, Vec<Addr>) {
    let (mut handles, mut addrs) = (Vec::new(), Vec::new());
    for i in 0..n {
        let bytes = [i as u8; 4092];
        if direct {
            addrs.push(pool.alloc_direct(&bytes).unwrap());
        } else {
            handles.push(pool.alloc_copy(&bytes).unwrap());
        }
    }
    (handles, addrs)
}

/// Holes too small for an object, in a pool of one chunk (no other chunk to move into):
/// compaction slides the objects to the chunk's start, so the object fits without a new
/// chunk. With handles through `compact`, with direct objects through `compact_with`
/// (reporting each move), and `compact` leaves a chunk of direct objects alone. Objects of
/// 4092 bytes fill the chunk exactly: holes at the start (no free block at the end), or
/// holes after the first object (the last one a free block at the end).
#[test]
fn compaction_turns_holes_into_one_block() {
    let fill = DEFAULT_CHUNK_SIZE / 4096;
    for direct in [false, true] {
        for first_freed in [0, 1] {
            let mut pool = Pool::new(HeapSource::new());
            let (handles, mut addrs) = objects_of_4092_bytes(&mut pool, fill, direct);
            assert_eq!(pool.stats().chunks_acquired, 1);
            let keep: Vec<usize> = (1 - first_freed..fill).step_by(2).collect();
            for i in (first_freed..fill).step_by(2) {
                if direct { pool.free_direct(addrs[i]).unwrap() } else { pool.free(handles[i]).unwrap() }
            }
            // Kept objects that are not already where sliding puts them.
            let moving: Vec<usize> =
                keep.iter().enumerate().filter(|&(k, &i)| k != i).map(|(_, &i)| i).collect();
            let report = if direct {
                assert_eq!(pool.compact(), CompactReport::default(), "compact leaves direct objects alone");
                let mut moves = Vec::new();
                let report = pool.compact_with(&mut |from, to| moves.push((from, to)));
                assert_eq!(moves.len(), moving.len());
                for ((from, to), &i) in moves.iter().zip(&moving) {
                    assert_eq!(*from, addrs[i]);
                    assert!(to.to_bits() < from.to_bits(), "slid towards the chunk's start");
                    addrs[i] = *to;
                }
                report
            } else {
                pool.compact()
            };
            assert_eq!(pool.stats().objects_moved, report.objects_moved);
            let n = moving.len() as u64;
            assert_eq!((report.objects_moved, report.bytes_moved, report.chunks_released), (n, 4092 * n, 0));
            pool.validate().unwrap();
            for &i in &keep {
                let got = if direct { pool.get_direct(addrs[i]) } else { pool.get(handles[i]) };
                assert_eq!(got.unwrap(), &[i as u8; 4092][..]);
            }
            // Larger than any hole was; fits the one free block now.
            pool.alloc(MAX_ALLOC).unwrap();
            assert_eq!(pool.stats().chunks_acquired, 1, "direct: {direct}, first freed: {first_freed}");
        }
    }
}

/// Two chunks holding one object each: compaction moves one object and gives a chunk back.
#[test]
fn compaction_empties_one_of_two_sparse_chunks() {
    let fill = DEFAULT_CHUNK_SIZE / 4096;
    for direct in [false, true] {
        let mut pool = Pool::new(HeapSource::new());
        let (handles, mut addrs) = objects_of_4092_bytes(&mut pool, 2 * fill, direct);
        assert_eq!(pool.stats().chunks_held, 2);
        let keep = [0, fill];
        for i in (0..2 * fill).filter(|i| !keep.contains(i)) {
            if direct { pool.free_direct(addrs[i]).unwrap() } else { pool.free(handles[i]).unwrap() }
        }
        let report = if direct {
            let mut moves = Vec::new();
            let report = pool.compact_with(&mut |from, to| moves.push((from, to)));
            assert_eq!(moves.len(), 1);
            let i = keep.into_iter().find(|&i| addrs[i] == moves[0].0).unwrap();
            addrs[i] = moves[0].1;
            report
        } else {
            pool.compact()
        };
        assert_eq!((report.objects_moved, report.chunks_released), (1, 1), "direct: {direct}");
        assert_eq!(pool.stats().chunks_held, 1);
        pool.validate().unwrap();
        for i in keep {
            let got = if direct { pool.get_direct(addrs[i]) } else { pool.get(handles[i]) };
            assert_eq!(got.unwrap(), &[i as u8; 4092][..]);
        }
    }
}

/// A second round releases what the first could not choose: chunks A and B hold one
/// 4000-byte object each, C three (545 units free), D three of 4092 bytes (512 free). The
/// first round may evacuate A only (moving B as well would not leave the targets a sixteenth
/// of their free space); A's object fits D's 512 best. The second round evacuates B into C.
#[test]
fn compaction_repeats_rounds_while_they_release_chunks() {
    let mut pool = Pool::new(HeapSource::new());
    let sizes = [4000, 4000, 4000, 4092];
    let mut handles = Vec::new();
    for (c, &len) in sizes.iter().enumerate() {
        for i in 0..4 {
            handles.push((pool.alloc_copy(&vec![(4 * c + i) as u8; len]).unwrap(), len));
        }
        assert_eq!(pool.stats().chunks_held, c as u64 + 1, "one chunk per four objects");
    }
    // Keep A: 0, B: 4, C: 8-10, D: 12-14.
    let keep = [0, 4, 8, 9, 10, 12, 13, 14];
    for i in (0..16).filter(|i| !keep.contains(i)) {
        pool.free(handles[i].0).unwrap();
    }
    let report = pool.compact();
    assert_eq!(pool.stats().objects_moved, report.objects_moved);
    assert_eq!((report.objects_moved, report.chunks_released), (2, 2));
    assert_eq!(pool.stats().chunks_held, 2);
    pool.validate().unwrap();
    for i in keep {
        let (h, len) = handles[i];
        assert_eq!(pool.get(h).unwrap(), &vec![i as u8; len][..]);
    }
}

/// Victims are the least used chunks whose objects fit in fifteen sixteenths of the other
/// chunks' free space, counted without the victims' own: here chunk A (one 480-unit object)
/// but not B (two), as C has only 1024 units free (two holes, which sliding joins: one
/// move). So A's object moves and A goes back; choosing B too would move one of its
/// objects in vain.
#[test]
fn compaction_evacuates_only_chunks_the_others_can_take() {
    let mut pool = Pool::new(HeapSource::new());
    // C: four 4092-byte objects (512 units each, the chunk exactly); A, B: four of 3836 (480).
    let c: Vec<_> = (0..4).map(|i| pool.alloc_copy(&[i; 4092]).unwrap()).collect();
    let a: Vec<_> = (0..4).map(|i| pool.alloc_copy(&[10 + i; 3836]).unwrap()).collect();
    let b: Vec<_> = (0..4).map(|i| pool.alloc_copy(&[20 + i; 3836]).unwrap()).collect();
    assert_eq!(pool.stats().chunks_held, 3);
    for h in [c[1], c[3], a[1], a[2], a[3], b[2], b[3]] {
        pool.free(h).unwrap();
    }
    let report = pool.compact();
    assert_eq!(pool.stats().objects_moved, report.objects_moved);
    assert_eq!((report.objects_moved, report.chunks_released), (2, 1));
    pool.validate().unwrap();
    for (h, byte, len) in
        [(c[0], 0, 4092), (c[2], 2, 4092), (a[0], 10, 3836), (b[0], 20, 3836), (b[1], 21, 3836)]
    {
        assert_eq!(pool.get(h).unwrap(), &vec![byte; len][..]);
    }
}

/// At exactly fifteen sixteenths the victim is still chosen: A holds 480 units, B has 512
/// free (480 * 16 = 512 * 15).
#[test]
fn compaction_takes_a_victim_at_the_exact_limit() {
    let mut pool = Pool::new(HeapSource::new());
    let b: Vec<_> = (0..4).map(|i| pool.alloc_copy(&[i; 4092]).unwrap()).collect();
    let a = pool.alloc_copy(&[9; 3836]).unwrap();
    pool.free(b[3]).unwrap();
    let report = pool.compact();
    assert_eq!(pool.stats().objects_moved, report.objects_moved);
    assert_eq!((report.objects_moved, report.chunks_released), (1, 1));
    assert_eq!(pool.get(a).unwrap(), &[9; 3836][..]);
    pool.validate().unwrap();
}

#[test]
fn a_pool_shows_its_statistics_when_debug_printed() {
    let pool = Pool::new(HeapSource::new());
    let text = format!("{pool:?}");
    assert!(text.starts_with("Pool") && text.contains("stats") && text.contains("held_bytes"), "{text}");
}

/// Addresses into a direct object's bytes, where those bytes look like a block header: the
/// pool refuses every header that is not an allocated direct block of a fitting size, and
/// (as documented for `Addr`) cannot tell a plausible one from a real object.
#[test]
fn forged_direct_addresses_are_checked_loosely() {
    const DIRECT: u32 = 1 << 28;
    const FREE: u32 = 1 << 31;
    let header = |size: u32, len: u32, flags: u32| size | len << 15 | flags;
    let cases = [
        (header(2, 8, FREE | DIRECT), Err(HandleError::Stale)),
        (header(2, 8, 0), Err(HandleError::Stale)),
        (header(2, 0, DIRECT), Err(HandleError::Stale)),
        (header(2, 100, DIRECT), Err(HandleError::Stale)),
        (header(2, 8, DIRECT), Ok(&[0xAB; 8][..])),
    ];
    for (bits, want) in cases {
        let mut pool = Pool::new(HeapSource::new());
        // The payload starts 4 bytes into the block; the next 8-byte unit 4 bytes later.
        let mut bytes = [0xAB; 100];
        bytes[4..8].copy_from_slice(&bits.to_le_bytes());
        let real = pool.alloc_direct(&bytes).unwrap();
        let forged = Addr::from_bits(real.to_bits() + 1);
        assert_eq!(pool.get_direct(forged), want, "header {bits:#010x}");
        assert_eq!(pool.get_direct(real).unwrap(), &bytes[..]);
    }
}

/// A victim whose object fits no single free block stays as it was: B and C have 300 units
/// free each (600 in all, enough by count for A's 512-unit object, but in two blocks), so A
/// is chosen, its object finds no room, and A's free space is rebuilt around it.
#[test]
fn compaction_leaves_a_victim_whose_object_fits_nowhere() {
    let mut pool = Pool::new(HeapSource::new());
    let mut kept = Vec::new();
    let mut alloc = |pool: &mut Pool<HeapSource>, len: usize, byte: u8| {
        let h = pool.alloc_copy(&vec![byte; len]).unwrap();
        kept.push((h, len, byte));
        h
    };
    // B: three objects of 512 units and one of 212; C: two of 512 and two of 362 (which B's
    // remaining 300 cannot take); A: four of 512, three of them freed.
    for (i, len) in [4092, 4092, 4092, 1692, 4092, 4092, 2892, 2892].into_iter().enumerate() {
        alloc(&mut pool, len, i as u8);
    }
    assert_eq!(pool.stats().chunks_held, 2);
    let a: Vec<_> = (0..4).map(|i| alloc(&mut pool, 4092, 10 + i)).collect();
    assert_eq!(pool.stats().chunks_held, 3);
    for h in &a[1..] {
        pool.free(*h).unwrap();
    }
    kept.retain(|(h, ..)| !a[1..].contains(h));
    let report = pool.compact();
    assert_eq!(pool.stats().objects_moved, report.objects_moved);
    assert_eq!((report.objects_moved, report.chunks_released), (0, 0));
    assert_eq!(pool.stats().chunks_held, 3);
    pool.validate().unwrap();
    for (h, len, byte) in kept {
        assert_eq!(pool.get(h).unwrap(), &vec![byte; len][..]);
    }
    // A's free space is whole again: two 4096-byte objects fit without a new chunk.
    pool.alloc(MAX_ALLOC).unwrap();
    pool.alloc(MAX_ALLOC).unwrap();
    assert_eq!(pool.stats().chunks_held, 3);
}

/// Exact size classes reach up to the largest object: a 4096-byte object takes a hole of
/// exactly its size rather than a larger free block listed after it.
#[test]
fn the_largest_object_takes_an_exact_hole_first() {
    let mut pool = Pool::new(HeapSource::new());
    // Two chunks, each three blocks of the largest size (513 units) and one of 509.
    let chunk = || [MAX_ALLOC, MAX_ALLOC, MAX_ALLOC, 509 * 8 - 4];
    let addrs: Vec<Addr> =
        chunk().into_iter().chain(chunk()).map(|len| pool.alloc_direct(&vec![1; len]).unwrap()).collect();
    assert_eq!(pool.stats().chunks_held, 2);
    // A hole of exactly 513 units, then a free block of 1026 in the other chunk.
    for i in [1, 5, 6] {
        pool.free_direct(addrs[i]).unwrap();
    }
    assert_eq!(pool.alloc_direct(&[2; MAX_ALLOC]).unwrap(), addrs[1]);
    assert_eq!(pool.alloc_direct(&[3; MAX_ALLOC]).unwrap(), addrs[5]);
    pool.validate().unwrap();
}
