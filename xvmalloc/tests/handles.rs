//! Handles are refused by every pool but their own, and a handle kept while its slot is
//! reused any number of times never reaches a later object.

use xvmalloc::{FreeError, HandleError, HeapSource, Pool};

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
    for i in 0..(1u32 << 20) + 10 {
        let h = pool.alloc_copy(&i.to_le_bytes()).unwrap();
        indices.insert(h.to_bits() as u32);
        assert_eq!(pool.get(first), Err(HandleError::Stale), "after {i} reuses");
        pool.free(h).unwrap();
    }
    assert_eq!(indices.len(), 2, "one slot, then a new one once it retired");
    pool.validate().unwrap();
}
