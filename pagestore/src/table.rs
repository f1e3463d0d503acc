//! Entries (16 bytes, bit-packed) and the key table.

use alloc::collections::BTreeMap;
use alloc::vec::Vec;

use xvmalloc::Handle;

/// Where and how a page is kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Same-filled: the repeated u64 alone, no allocation.
    Same,
    /// A compressed stream in the pool.
    Stream,
    /// The raw page in the pool (compressed size over the huge threshold).
    Huge,
    /// A compressed stream in a backing-store slot.
    BackedStream,
    /// The raw page in a backing-store slot.
    BackedPage,
}

/// One stored page in two words.
///
/// `word`: the same-fill value, the pool handle's bits, or for backed entries the backing
/// slot (low 32 bits) and the slot's checksum (high 32 bits).
///
/// `meta`: bits 0-2 kind (0 = vacant), 3-4 codec slot, 5 idle, 6 incompressible (a
/// secondary codec could not shrink it), 8-15 codec variant, 16-28 backed length, 29-63
/// last access time (the clock's low 35 bits).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Entry {
    word: u64,
    meta: u64,
}

// The flat table's promise: 16 bytes per key, as zram's table entry.
const _: () = assert!(core::mem::size_of::<Entry>() == 16);

const KIND_MASK: u64 = 0b111;
const SAME: u64 = 1;
const STREAM: u64 = 2;
const HUGE: u64 = 3;
const BACKED_STREAM: u64 = 4;
const BACKED_PAGE: u64 = 5;
const SLOT_SHIFT: u32 = 3;
const IDLE: u64 = 1 << 5;
const INCOMPRESSIBLE: u64 = 1 << 6;
const VARIANT_SHIFT: u32 = 8;
const LEN_SHIFT: u32 = 16;
const LEN_MASK: u64 = 0x1FFF;
const TIME_SHIFT: u32 = 29;
/// Bits of the access time kept per entry.
pub(crate) const TIME_BITS: u32 = 35;
/// Mask of the access time kept per entry.
pub(crate) const TIME_MASK: u64 = (1 << TIME_BITS) - 1;
/// The bits that survive a change of place (recompression, writeback).
const CARRIED: u64 = IDLE | INCOMPRESSIBLE | (TIME_MASK << TIME_SHIFT);

impl Entry {
    pub(crate) const VACANT: Entry = Entry { word: 0, meta: 0 };

    pub(crate) fn same(value: u64) -> Entry {
        Entry { word: value, meta: SAME }
    }

    pub(crate) fn stream(handle: Handle, codec: u8, variant: u8) -> Entry {
        let meta = STREAM | u64::from(codec & 3) << SLOT_SHIFT | u64::from(variant) << VARIANT_SHIFT;
        Entry { word: handle.to_bits(), meta }
    }

    pub(crate) fn huge(handle: Handle) -> Entry {
        Entry { word: handle.to_bits(), meta: HUGE }
    }

    /// A backed entry; `len` is at most 4096 (13 bits).
    pub(crate) fn backed(slot: u32, sum: u32, len: usize, raw: bool, codec: u8, variant: u8) -> Entry {
        let kind = if raw { BACKED_PAGE } else { BACKED_STREAM };
        let meta = kind
            | u64::from(codec & 3) << SLOT_SHIFT
            | u64::from(variant) << VARIANT_SHIFT
            | (len as u64 & LEN_MASK) << LEN_SHIFT;
        Entry { word: u64::from(sum) << 32 | u64::from(slot), meta }
    }

    /// `self` with `from`'s idle mark, incompressible mark and access time.
    pub(crate) fn carrying(self, from: Entry) -> Entry {
        Entry { word: self.word, meta: self.meta & !CARRIED | from.meta & CARRIED }
    }

    pub(crate) fn kind(self) -> Option<Kind> {
        match self.meta & KIND_MASK {
            SAME => Some(Kind::Same),
            STREAM => Some(Kind::Stream),
            HUGE => Some(Kind::Huge),
            BACKED_STREAM => Some(Kind::BackedStream),
            BACKED_PAGE => Some(Kind::BackedPage),
            _ => None,
        }
    }

    pub(crate) fn is_vacant(self) -> bool {
        self.meta & KIND_MASK == 0
    }

    pub(crate) fn value(self) -> u64 {
        self.word
    }

    pub(crate) fn handle(self) -> Handle {
        Handle::from_bits(self.word)
    }

    pub(crate) fn codec(self) -> u8 {
        (self.meta >> SLOT_SHIFT & 3) as u8
    }

    pub(crate) fn variant(self) -> u8 {
        (self.meta >> VARIANT_SHIFT) as u8
    }

    pub(crate) fn backing_slot(self) -> u32 {
        self.word as u32
    }

    pub(crate) fn sum(self) -> u32 {
        (self.word >> 32) as u32
    }

    pub(crate) fn len(self) -> usize {
        (self.meta >> LEN_SHIFT & LEN_MASK) as usize
    }

    pub(crate) fn idle(self) -> bool {
        self.meta & IDLE != 0
    }

    pub(crate) fn set_idle(&mut self, on: bool) {
        if on {
            self.meta |= IDLE;
        } else {
            self.meta &= !IDLE;
        }
    }

    pub(crate) fn incompressible(self) -> bool {
        self.meta & INCOMPRESSIBLE != 0
    }

    pub(crate) fn set_incompressible(&mut self) {
        self.meta |= INCOMPRESSIBLE;
    }

    pub(crate) fn time(self) -> u64 {
        self.meta >> TIME_SHIFT & TIME_MASK
    }

    pub(crate) fn set_time(&mut self, time: u64) {
        self.meta = self.meta & !(TIME_MASK << TIME_SHIFT) | (time & TIME_MASK) << TIME_SHIFT;
    }
}

/// The key table: keys below the dense capacity in a flat array allocated up front, as
/// zram's table (16 bytes per key, one index, no node overhead); any other key in a B-tree.
#[derive(Debug, Default)]
pub(crate) struct Table {
    dense: Vec<Entry>,
    sparse: BTreeMap<u64, Entry>,
    dense_len: usize,
}

impl Table {
    pub(crate) fn with_dense(keys: usize) -> Self {
        Table { dense: alloc::vec![Entry::VACANT; keys], sparse: BTreeMap::new(), dense_len: 0 }
    }

    fn dense_index(&self, key: u64) -> Option<usize> {
        usize::try_from(key).ok().filter(|&k| k < self.dense.len())
    }

    /// Puts `entry` (not vacant) under `key`, returning the entry it replaces.
    pub(crate) fn insert(&mut self, key: u64, entry: Entry) -> Option<Entry> {
        match self.dense_index(key) {
            Some(k) => {
                let old = core::mem::replace(&mut self.dense[k], entry);
                if old.is_vacant() {
                    self.dense_len += 1;
                    None
                } else {
                    Some(old)
                }
            }
            None => self.sparse.insert(key, entry),
        }
    }

    pub(crate) fn get(&self, key: u64) -> Option<Entry> {
        match self.dense_index(key) {
            Some(k) => Some(self.dense[k]).filter(|e| !e.is_vacant()),
            None => self.sparse.get(&key).copied(),
        }
    }

    pub(crate) fn get_mut(&mut self, key: u64) -> Option<&mut Entry> {
        match self.dense_index(key) {
            Some(k) => Some(&mut self.dense[k]).filter(|e| !e.is_vacant()),
            None => self.sparse.get_mut(&key),
        }
    }

    pub(crate) fn remove(&mut self, key: u64) -> Option<Entry> {
        match self.dense_index(key) {
            Some(k) => {
                let old = core::mem::replace(&mut self.dense[k], Entry::VACANT);
                if old.is_vacant() {
                    None
                } else {
                    self.dense_len -= 1;
                    Some(old)
                }
            }
            None => self.sparse.remove(&key),
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.dense_len + self.sparse.len()
    }

    /// The smallest stored key `>= from`.
    pub(crate) fn next_key(&self, from: u64) -> Option<u64> {
        if let Some(start) = self.dense_index(from) {
            if let Some(i) = self.dense[start..].iter().position(|e| !e.is_vacant()) {
                return Some((start + i) as u64);
            }
        }
        // Sparse keys are all at or past the dense capacity.
        self.sparse.range(from..).next().map(|(&k, _)| k)
    }

    /// Calls `f` on every stored entry.
    pub(crate) fn for_each_mut(&mut self, mut f: impl FnMut(&mut Entry)) {
        self.dense.iter_mut().filter(|e| !e.is_vacant()).for_each(&mut f);
        self.sparse.values_mut().for_each(f);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_round_trip() {
        let mut e = Entry::backed(u32::MAX, 0xDEAD_BEEF, 4096, false, 3, 0xFF);
        e.set_time(u64::MAX);
        e.set_idle(true);
        e.set_incompressible();
        assert_eq!(
            (e.kind(), e.backing_slot(), e.sum(), e.len()),
            (Some(Kind::BackedStream), u32::MAX, 0xDEAD_BEEF, 4096)
        );
        assert_eq!(
            (e.codec(), e.variant(), e.time(), e.idle(), e.incompressible()),
            (3, 0xFF, TIME_MASK, true, true)
        );
        let s = Entry::same(7).carrying(e);
        assert_eq!(
            (s.kind(), s.value(), s.time(), s.idle(), s.incompressible()),
            (Some(Kind::Same), 7, TIME_MASK, true, true)
        );
        e.set_idle(false);
        assert!(!e.idle() && e.incompressible());
    }

    #[test]
    fn next_key_walks_dense_then_sparse() {
        let mut t = Table::with_dense(4);
        for k in [1u64, 3, 4, 9] {
            t.insert(k, Entry::same(k));
        }
        let mut keys = alloc::vec::Vec::new();
        let mut from = 0;
        while let Some(k) = t.next_key(from) {
            keys.push(k);
            from = k + 1;
        }
        assert_eq!(keys, [1, 3, 4, 9]);
        assert_eq!(t.len(), 4);
        assert_eq!(t.remove(3), Some(Entry::same(3)));
        assert_eq!(t.remove(3), None);
        assert_eq!(t.len(), 3);
    }
}
