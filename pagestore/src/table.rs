//! Entries and the key table: 8 bytes per dense key, as zram's handle alone.

use alloc::collections::BTreeMap;
use alloc::vec::Vec;

use xvmalloc::Addr;

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

/// One stored page, unpacked (the flat table keeps it in 8 bytes, see [`Table`]).
///
/// `word`: the same-fill value; for pool entries the object's address in the pool (a direct
/// object: the pool keeps no slot for it); for backed entries the backing slot.
///
/// `meta`: bits 0-2 kind (0 = vacant), 3-4 codec slot, 5 idle, 6 incompressible (a
/// secondary codec could not shrink it), 8-15 codec variant, 16-28 backed length, 32-63
/// last access time (the clock's low 32 bits).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Entry {
    word: u64,
    meta: u64,
}

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
const TIME_SHIFT: u32 = 32;
/// Bits of the access time kept per entry.
pub(crate) const TIME_BITS: u32 = 32;
/// Mask of the access time kept per entry.
pub(crate) const TIME_MASK: u64 = (1 << TIME_BITS) - 1;
/// The bits that survive a change of place (recompression, writeback).
const CARRIED: u64 = IDLE | INCOMPRESSIBLE | (TIME_MASK << TIME_SHIFT);

impl Entry {
    pub(crate) const VACANT: Entry = Entry { word: 0, meta: 0 };

    pub(crate) fn same(value: u64) -> Entry {
        Entry { word: value, meta: SAME }
    }

    pub(crate) fn stream(addr: Addr, codec: u8, variant: u8) -> Entry {
        let meta = STREAM | u64::from(codec & 3) << SLOT_SHIFT | u64::from(variant) << VARIANT_SHIFT;
        Entry { word: u64::from(addr.to_bits()), meta }
    }

    pub(crate) fn huge(addr: Addr) -> Entry {
        Entry { word: u64::from(addr.to_bits()), meta: HUGE }
    }

    /// A backed entry; `len` is at most 4096 (13 bits).
    pub(crate) fn backed(slot: u32, len: usize, raw: bool, codec: u8, variant: u8) -> Entry {
        let kind = if raw { BACKED_PAGE } else { BACKED_STREAM };
        let meta = kind
            | u64::from(codec & 3) << SLOT_SHIFT
            | u64::from(variant) << VARIANT_SHIFT
            | (len as u64 & LEN_MASK) << LEN_SHIFT;
        Entry { word: u64::from(slot), meta }
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

    /// The pool address of a stream or huge entry.
    pub(crate) fn addr(self) -> Addr {
        Addr::from_bits(self.word as u32)
    }

    /// The same stream or huge entry at another pool address (compaction moved it).
    pub(crate) fn moved_to(self, addr: Addr) -> Entry {
        Entry { word: u64::from(addr.to_bits()), meta: self.meta }
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

/// An entry packed in 8 bytes for the flat table; access times live beside it, in a column
/// that exists only when the store has a clock.
///
/// Bits 0-15 are the entry's `meta` bits 0-15 (kind, codec slot, marks, variant). Above them:
/// pool entries, the object's address (16-47); backed entries, the
/// backing slot (16-47) and the length (48-60); same-filled entries reuse bits 3-4 as the
/// value's form and keep 56 bits of it in 8-63:
/// - form 0, values whose top byte repeats the byte below it (0, all ones, a repeated byte,
///   any small signed number): the low 56 bits;
/// - form 1, values whose halves are equal (a repeated u32 or u16): the low 32 bits;
/// - form 2, any other value: kept in the table's side map, by key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Packed(u64);

const FORM_SHIFT: u32 = 3;
const FORM_MASK: u64 = 0b11 << FORM_SHIFT;
const FORM_BYTE: u64 = 0;
const FORM_HALVES: u64 = 1;
const FORM_FAR: u64 = 2;
const LOW16: u64 = 0xFFFF;
const PACKED_LEN_SHIFT: u32 = 48;

impl Packed {
    const VACANT: Packed = Packed(0);

    /// The packed entry and, for a same-filled value of form 2, the value to keep aside.
    fn pack(e: Entry) -> (Packed, Option<u64>) {
        let low = e.meta & LOW16;
        match e.meta & KIND_MASK {
            SAME => {
                let v = e.word;
                let low = low & !FORM_MASK;
                if v >> 56 == v >> 48 & 0xFF {
                    (Packed(low | FORM_BYTE << FORM_SHIFT | v << 8), None)
                } else if v >> 32 == v & 0xFFFF_FFFF {
                    (Packed(low | FORM_HALVES << FORM_SHIFT | (v & 0xFFFF_FFFF) << 8), None)
                } else {
                    (Packed(low | FORM_FAR << FORM_SHIFT), Some(v))
                }
            }
            BACKED_STREAM | BACKED_PAGE => {
                (Packed(low | (e.word & 0xFFFF_FFFF) << 16 | (e.len() as u64) << PACKED_LEN_SHIFT), None)
            }
            _ => (Packed(low | e.word << 16), None),
        }
    }

    fn is_far(self) -> bool {
        self.0 & KIND_MASK == SAME && self.0 & FORM_MASK == FORM_FAR << FORM_SHIFT
    }

    /// The entry, given the side value of a form-2 same-filled entry and the access time.
    fn unpack(self, far: impl FnOnce() -> u64, time: u32) -> Entry {
        let p = self.0;
        let time = u64::from(time) << TIME_SHIFT;
        match p & KIND_MASK {
            SAME => {
                let word = match p >> FORM_SHIFT & 0b11 {
                    FORM_BYTE => p >> 8 | (p >> 56) << 56,
                    FORM_HALVES => (p >> 8 & 0xFFFF_FFFF) * 0x1_0000_0001,
                    _ => far(),
                };
                Entry { word, meta: p & 0xFF & !FORM_MASK | time }
            }
            BACKED_STREAM | BACKED_PAGE => Entry {
                word: p >> 16 & 0xFFFF_FFFF,
                meta: p & LOW16 | (p >> PACKED_LEN_SHIFT & LEN_MASK) << LEN_SHIFT | time,
            },
            _ => Entry { word: p >> 16, meta: p & LOW16 | time },
        }
    }
}

const _: () = assert!(core::mem::size_of::<Packed>() == 8);

/// The key table: keys below the dense capacity in a flat array of 8-byte packed entries
/// allocated up front, as zram's table (one index, no node overhead); any other key in a
/// B-tree of whole entries.
#[derive(Debug, Default)]
pub(crate) struct Table {
    dense: Vec<Packed>,
    /// Access times of dense keys (the clock's low 32 bits); empty without a clock.
    times: Vec<u32>,
    /// Same-fill values of dense keys that do not fit a packed entry (form 2).
    far: BTreeMap<u64, u64>,
    sparse: BTreeMap<u64, Entry>,
    dense_len: usize,
}

impl Table {
    /// A table with `keys` dense keys, keeping access times if `timed`.
    pub(crate) fn with_dense(keys: usize, timed: bool) -> Self {
        Table {
            dense: alloc::vec![Packed::VACANT; keys],
            times: if timed { alloc::vec![0; keys] } else { Vec::new() },
            far: BTreeMap::new(),
            sparse: BTreeMap::new(),
            dense_len: 0,
        }
    }

    fn dense_index(&self, key: u64) -> Option<usize> {
        usize::try_from(key).ok().filter(|&k| k < self.dense.len())
    }

    fn read(&self, k: usize) -> Option<Entry> {
        let p = self.dense[k];
        if p == Packed::VACANT {
            return None;
        }
        let time = self.times.get(k).copied().unwrap_or(0);
        Some(p.unpack(|| self.far.get(&(k as u64)).copied().unwrap_or(0), time))
    }

    /// Writes `entry` (vacant or not) at dense index `k`, returning what was there.
    fn write(&mut self, k: usize, entry: Entry) -> Option<Entry> {
        let old = self.read(k);
        if self.dense[k].is_far() {
            self.far.remove(&(k as u64));
        }
        let (packed, far) = if entry.is_vacant() { (Packed::VACANT, None) } else { Packed::pack(entry) };
        self.dense[k] = packed;
        if let Some(v) = far {
            self.far.insert(k as u64, v);
        }
        if let Some(t) = self.times.get_mut(k) {
            *t = entry.time() as u32;
        }
        match (old.is_some(), entry.is_vacant()) {
            (false, false) => self.dense_len += 1,
            (true, true) => self.dense_len -= 1,
            _ => {}
        }
        old
    }

    /// Puts `entry` (not vacant) under `key`, returning the entry it replaces.
    pub(crate) fn insert(&mut self, key: u64, entry: Entry) -> Option<Entry> {
        match self.dense_index(key) {
            Some(k) => self.write(k, entry),
            None => self.sparse.insert(key, entry),
        }
    }

    pub(crate) fn get(&self, key: u64) -> Option<Entry> {
        match self.dense_index(key) {
            Some(k) => self.read(k),
            None => self.sparse.get(&key).copied(),
        }
    }

    /// Changes the entry under `key` with `f`, returning it as changed.
    pub(crate) fn update(&mut self, key: u64, f: impl FnOnce(&mut Entry)) -> Option<Entry> {
        match self.dense_index(key) {
            Some(k) => {
                let mut e = self.read(k)?;
                f(&mut e);
                self.write(k, e);
                Some(e)
            }
            None => {
                let e = self.sparse.get_mut(&key)?;
                f(e);
                Some(*e)
            }
        }
    }

    pub(crate) fn remove(&mut self, key: u64) -> Option<Entry> {
        match self.dense_index(key) {
            Some(k) => self.write(k, Entry::VACANT),
            None => self.sparse.remove(&key),
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.dense_len + self.sparse.len()
    }

    /// The smallest stored key `>= from`.
    pub(crate) fn next_key(&self, from: u64) -> Option<u64> {
        if let Some(start) = self.dense_index(from) {
            if let Some(i) = self.dense[start..].iter().position(|&p| p != Packed::VACANT) {
                return Some((start + i) as u64);
            }
        }
        // Sparse keys are all at or past the dense capacity.
        self.sparse.range(from..).next().map(|(&k, _)| k)
    }

    /// Calls `f` on every stored entry.
    pub(crate) fn for_each_mut(&mut self, mut f: impl FnMut(&mut Entry)) {
        for k in 0..self.dense.len() {
            if self.dense[k] != Packed::VACANT {
                self.update(k as u64, &mut f);
            }
        }
        self.sparse.values_mut().for_each(f);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_round_trip() {
        let mut e = Entry::backed(u32::MAX, 4096, false, 3, 0xFF);
        e.set_time(u64::MAX);
        e.set_idle(true);
        e.set_incompressible();
        assert_eq!((e.kind(), e.backing_slot(), e.len()), (Some(Kind::BackedStream), u32::MAX, 4096));
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

    /// Entries of every kind, with every mark, and same-fill values of every form.
    fn entries() -> Vec<Entry> {
        let mut out = Vec::new();
        for v in [
            0,
            u64::MAX,
            7,
            0xFFFF_FFFF_FFFF_FF80,
            0x0101_0101_0101_0101,
            0xABCD_ABCD_ABCD_ABCD,
            0x3F80_0000_3F80_0000,
            0x8000_0000_0000_0000,
            0x0123_4567_89AB_CDEF,
            0x00FF_0000_0000_0000,
        ] {
            out.push(Entry::same(v));
        }
        for a in [0, u32::MAX, 12345] {
            out.push(Entry::stream(Addr::from_bits(a), 3, 0xFF));
            out.push(Entry::stream(Addr::from_bits(a), 1, 0));
            out.push(Entry::huge(Addr::from_bits(a)));
        }
        for (slot, len, raw) in [(0, 1, false), (u32::MAX, 4096, true), (77, 3000, false)] {
            out.push(Entry::backed(slot, len, raw, 2, 9));
        }
        let mut marked = Vec::new();
        for e in &out {
            for (idle, incompressible, time) in [(false, false, 0), (true, false, 5), (true, true, TIME_MASK)]
            {
                let mut m = *e;
                m.set_idle(idle);
                if incompressible {
                    m.set_incompressible();
                }
                m.set_time(time);
                marked.push(m);
            }
        }
        marked
    }

    #[test]
    fn dense_entries_come_back_whole() {
        let all = entries();
        for timed in [false, true] {
            let mut t = Table::with_dense(all.len(), timed);
            for (k, e) in all.iter().enumerate() {
                assert_eq!(t.insert(k as u64, *e), None);
            }
            assert_eq!(t.len(), all.len());
            for (k, e) in all.iter().enumerate() {
                let mut want = *e;
                if !timed {
                    want.set_time(0);
                }
                assert_eq!(t.get(k as u64), Some(want), "key {k}, timed {timed}");
            }
            // Only the value that fits no packed form goes aside; replacing or removing
            // entries clears it.
            assert_eq!(t.far.len(), 3 * 3, "0x8000.., 0x0123.. and 0x00FF.., three marks each");
            for (k, e) in all.iter().enumerate() {
                let old = t.insert(k as u64, Entry::same(0)).unwrap();
                assert_eq!(old.value(), e.value());
            }
            assert!(t.far.is_empty());
            for k in 0..all.len() {
                assert_eq!(t.remove(k as u64), Some(Entry::same(0)));
            }
            assert_eq!((t.len(), t.get(0)), (0, None));
        }
    }

    #[test]
    fn moved_entries_keep_their_marks() {
        let mut e = Entry::stream(Addr::from_bits(9), 2, 7);
        e.set_idle(true);
        e.set_time(99);
        let m = e.moved_to(Addr::from_bits(1 << 31));
        assert_eq!(
            (m.addr(), m.codec(), m.variant(), m.idle(), m.time()),
            (Addr::from_bits(1 << 31), 2, 7, true, 99)
        );
    }

    #[test]
    fn update_and_for_each_change_entries_in_place() {
        let mut t = Table::with_dense(4, true);
        for k in [1u64, 3, 9] {
            t.insert(k, Entry::same(0x0123_4567_89AB_CDEF));
        }
        let e = t.update(3, |e| e.set_time(42)).unwrap();
        assert_eq!((e.time(), e.value()), (42, 0x0123_4567_89AB_CDEF));
        assert_eq!(t.update(2, |e| e.set_idle(true)), None);
        t.for_each_mut(|e| e.set_idle(true));
        for k in [1u64, 3, 9] {
            let e = t.get(k).unwrap();
            assert!(e.idle(), "key {k}");
            assert_eq!(e.value(), 0x0123_4567_89AB_CDEF);
        }
        assert_eq!(t.get(3).unwrap().time(), 42);
    }

    #[test]
    fn next_key_walks_dense_then_sparse() {
        let mut t = Table::with_dense(4, false);
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
