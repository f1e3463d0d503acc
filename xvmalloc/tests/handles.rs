//! Handles are refused by every pool but their own, and a handle kept while its slot is
//! reused any number of times never reaches a later object.

use xvmalloc::{FreeError, Handle, HandleError, HeapSource, Pool};

#[test]
fn another_pool_refuses_a_handle() {
    let mut a = Pool::new(HeapSource::new());
    let mut b = Pool::new(HeapSource::new());
    let ha = a.alloc_copy(&[1; 100]).unwrap();
    let hb = b.alloc_copy(&[2; 100]).unwrap();
    // Same slot index in both pools, yet neither accepts the other's handle.
    assert_eq!(ha.to_bits() as u32, hb.to_bits() as u32);
    assert_eq!(b.get(ha), Err(HandleError::Stale));
    assert_eq!(b.free(ha), Err(FreeError::Stale));
    assert_eq!(a.get(hb), Err(HandleError::Stale));
    assert_eq!(b.get(hb).unwrap(), &[2; 100][..], "b's object untouched");
    a.validate().unwrap();
    b.validate().unwrap();
}

#[test]
fn a_stale_handle_never_matches_again() {
    let mut pool = Pool::new(HeapSource::new());
    let first = pool.alloc_copy(&[7; 40]).unwrap();
    pool.free(first).unwrap();
    // Reuse the same slot through every generation it has, and then some: the first
    // handle must stay refused throughout, and the slot is retired when they run out.
    let mut indices = std::collections::BTreeSet::new();
    for i in 0..(1u32 << 19) + 10 {
        let h = pool.alloc_copy(&i.to_le_bytes()).unwrap();
        indices.insert(h.to_bits() as u32);
        assert_eq!(pool.get(first), Err(HandleError::Stale), "after {i} reuses");
        pool.free(h).unwrap();
    }
    assert_eq!(indices.len(), 2, "one slot, then a new one once it retired");
    pool.validate().unwrap();
}

#[test]
fn handle_at_names_live_objects_only() {
    let mut pool = Pool::with_chunk_size(HeapSource::new(), 4096).unwrap();
    let handles: Vec<_> = (0..64u8).map(|i| pool.alloc_copy(&[i; 200]).unwrap()).collect();
    for h in &handles {
        assert_eq!(pool.handle_at(h.index()), Some(*h));
    }
    assert_eq!(pool.handle_at(64), None, "never issued");
    for h in handles.iter().skip(1).step_by(2) {
        pool.free(*h).unwrap();
        assert_eq!(pool.handle_at(h.index()), None, "freed");
    }
    // Compaction moves objects; the index still gives the same handle and bytes.
    assert!(pool.compact().objects_moved > 0);
    for (i, h) in handles.iter().enumerate().step_by(2) {
        let back = pool.handle_at(h.index()).unwrap();
        assert_eq!(back, *h);
        assert_eq!(pool.get(back).unwrap(), &[i as u8; 200][..]);
    }
    // A reused slot's handle is the new object's, never the old one.
    let new = pool.alloc_copy(b"new").unwrap();
    assert_eq!(pool.handle_at(new.index()), Some(new));
    assert!(handles.iter().all(|h| h.index() != new.index() || *h != new));
    pool.validate().unwrap();
}

/// A freed slot holds its next generation without the LIVE bit: a handle forged from that
/// word is refused like any stale one, by every call.
#[test]
fn a_handle_without_the_live_bit_is_refused() {
    let mut pool = Pool::new(HeapSource::new());
    let h = pool.alloc_copy(&[1; 10]).unwrap();
    let kept = pool.alloc_copy(&[2; 10]).unwrap();
    assert!(pool.contains(h));
    pool.free(h).unwrap();
    assert!(!pool.contains(h));
    let live_bit = 1u64 << (32 + 19);
    assert_ne!(h.to_bits() & live_bit, 0, "handles carry LIVE");
    let forged = Handle::from_bits((h.to_bits() & !live_bit) + (1 << 32));
    assert_eq!(pool.get(forged), Err(HandleError::Stale));
    assert!(!pool.contains(forged));
    assert_eq!(pool.free(forged), Err(FreeError::Stale));
    pool.validate().unwrap();
    assert_eq!(pool.get(kept).unwrap(), &[2; 10][..]);
}
