//! A full consistency check of the pool's structures, for tests and fuzzing.

use crate::PageSource;
use crate::block::{NIL, footer_at, read_u32, units_for};
use crate::classes::{CLASSES, class_of};
use crate::pool::{GENERATION_MASK, LIVE, Pool};

impl<S: PageSource> Pool<S> {
    /// Walks every chunk, free list and slot and checks that they agree; O(size of the pool).
    ///
    /// Checked: blocks tile each chunk exactly with correct PREV_FREE flags and zero reserved
    /// header bits; free blocks end with their size (the footer); no two free blocks are
    /// adjacent; every free block is listed exactly once, in its class, with consistent links
    /// and bitmap bits; every live slot points at the start of an allocated block of the right
    /// size and each allocated block but the direct ones has exactly one slot; per-chunk and pool counters match.
    /// Meant for tests: it never changes the pool.
    ///
    /// # Errors
    ///
    /// A description of the first inconsistency found.
    pub fn validate(&self) -> Result<(), &'static str> {
        // Per chunk: number of free blocks seen by walking; compared with the lists below.
        let mut free_blocks = 0u64;
        let mut held = 0u64;
        // owner[addr] would be large; instead count allocated blocks and match them to slots.
        let mut allocated_blocks = 0u64;
        let mut allocated_units = 0u64;
        let (mut direct_blocks, mut direct_payload) = (0u64, 0u64);
        for (id, chunk) in self.chunks.iter().enumerate() {
            if chunk.is_none() {
                continue;
            }
            held += 1;
            let base = (id as u32) << self.shift;
            let (mut off, mut prev_free) = (0u32, false);
            let (mut used, mut objects) = (0u32, 0u32);
            while off < self.chunk_units {
                let h = self.header(base + off);
                if h.size() < crate::block::MIN_UNITS || off + h.size() > self.chunk_units {
                    return Err("block size out of range");
                }
                if h.prev_free() != prev_free {
                    return Err("PREV_FREE flag wrong");
                }
                if h.reserved_bits() != 0 {
                    return Err("header bit 29 not zero");
                }
                if h.is_free() && (h.len() != 0 || h.is_direct()) {
                    return Err("free block with a length or the DIRECT flag");
                }
                if !h.is_free() && h.is_direct() {
                    let want = units_for(h.len() as usize);
                    if h.len() == 0 || h.size() < want || h.size() > want + 1 {
                        return Err("direct object's length does not fit its block");
                    }
                    direct_blocks += 1;
                    direct_payload += u64::from(h.len());
                }
                if h.is_free() {
                    if prev_free {
                        return Err("two adjacent free blocks");
                    }
                    let at = self.byte_offset(base + off);
                    if read_u32(self.buf(base), footer_at(at, h.size())) != h.size() {
                        return Err("free block's footer wrong");
                    }
                    free_blocks += 1;
                } else {
                    used += h.size();
                    objects += 1;
                }
                prev_free = h.is_free();
                off += h.size();
            }
            if objects == 0 {
                return Err("empty chunk was not released");
            }
            allocated_blocks += u64::from(objects);
            allocated_units += u64::from(used);
        }
        if held != self.counters.chunks_held {
            return Err("held chunk count wrong");
        }
        // Free lists.
        let mut listed = 0u64;
        for class in 0..CLASSES {
            let mut addr = self.classes.heads[class];
            if (addr != NIL) != self.classes.is_set(class) {
                return Err("bitmap disagrees with list head");
            }
            let mut prev = NIL;
            while addr != NIL {
                let chunk = (addr >> self.shift) as usize;
                if self.chunks.get(chunk).is_none_or(|c| c.is_none()) {
                    return Err("listed block in a released chunk");
                }
                let h = self.header(addr);
                if !h.is_free() || class_of(h.size()) != class {
                    return Err("listed block not free or in the wrong class");
                }
                let at = self.byte_offset(addr);
                let buf = self.buf(addr);
                if prev != NIL && crate::block::read_u32(buf, at + 8) != prev {
                    return Err("free-list back link wrong");
                }
                listed += 1;
                if listed > free_blocks {
                    return Err("free lists hold more blocks than the chunks (cycle?)");
                }
                prev = addr;
                addr = crate::block::read_u32(buf, at + 4);
            }
        }
        if listed != free_blocks {
            return Err("a free block is not listed");
        }
        // Slots.
        let mut live = 0u64;
        let mut payload = 0u64;
        for slot in &self.slots {
            if !slot.is_live() {
                continue;
            }
            if slot.generation & !LIVE != self.tag | slot.generation & GENERATION_MASK {
                return Err("slot with another pool's tag");
            }
            live += 1;
            let chunk = (slot.addr >> self.shift) as usize;
            if self.chunks.get(chunk).is_none_or(|c| c.is_none()) {
                return Err("slot points into a released chunk");
            }
            let h = self.header(slot.addr);
            payload += u64::from(h.len());
            let want = units_for(h.len() as usize);
            if h.len() == 0 || h.is_free() || h.is_direct() || h.size() < want || h.size() > want + 1 {
                return Err("slot does not point at a fitting allocated block");
            }
        }
        // Each allocated block has a slot: counts match and slots are at distinct block
        // starts (distinct because each header was checked to start a block of the right
        // size and blocks tile the chunks, so equal counts mean a bijection unless two
        // slots share an address, checked by sorting).
        let mut addrs: alloc::vec::Vec<u32> =
            self.slots.iter().filter(|s| s.is_live()).map(|s| s.addr).collect();
        addrs.sort_unstable();
        if addrs.windows(2).any(|w| w[0] == w[1]) {
            return Err("two slots share a block");
        }
        if live + direct_blocks != allocated_blocks || allocated_blocks != self.counters.objects {
            return Err("object count wrong");
        }
        if payload + direct_payload != self.counters.payload
            || allocated_units != self.counters.allocated_units
        {
            return Err("byte counters wrong");
        }
        // Free-slot chain.
        let mut free_slots = 0usize;
        let mut index = self.free_slot;
        while index != NIL {
            let slot = self.slots.get(index as usize).ok_or("free-slot chain leaves the table")?;
            if slot.is_live() {
                return Err("live slot on the free chain");
            }
            free_slots += 1;
            if free_slots > self.slots.len() {
                return Err("free-slot chain has a cycle");
            }
            index = slot.addr;
        }
        let retired =
            self.slots.iter().filter(|s| !s.is_live() && s.generation & GENERATION_MASK == 0).count();
        if (free_slots + retired) as u64 + live != self.slots.len() as u64 {
            return Err("free-slot chain misses slots");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::block::{Header, units_for};
    use crate::{HeapSource, Pool};

    /// One chunk: a direct object of 100 bytes, one of 50, then the free remainder up to the
    /// chunk's end. Returns the pool and the three blocks' addresses.
    fn pool() -> (Pool<HeapSource>, [u32; 3]) {
        let mut pool = Pool::new(HeapSource::new());
        let a = pool.alloc_direct(&[1; 100]).unwrap().to_bits();
        let b = pool.alloc_direct(&[2; 50]).unwrap().to_bits();
        let rest = b + pool.header(b).size();
        assert!(pool.header(rest).is_free());
        assert_eq!(rest + pool.header(rest).size(), pool.chunk_units, "the remainder ends the chunk");
        pool.validate().unwrap();
        (pool, [a, b, rest])
    }

    /// A damage: the message it must give, what it does to a header, and (for the first
    /// pool) which block's header.
    type Damage = (&'static str, fn(Header) -> Header, usize);

    /// Each damage to a valid pool is reported with its own message.
    #[test]
    fn every_kind_of_damage_is_named() {
        let damage: [Damage; 9] = [
            ("block size out of range", |h| Header::from_bits(h.bits() & !0x7FFF | 1), 0),
            ("block size out of range", |h| Header::from_bits(h.bits() & !0x7FFF | 0x7FFF), 0),
            ("header bit 29 not zero", |h| Header::from_bits(h.bits() | 1 << 29), 1),
            ("free block with a length or the DIRECT flag", |h| Header::from_bits(h.bits() | 8 << 15), 2),
            ("free block with a length or the DIRECT flag", |h| Header::from_bits(h.bits() | 1 << 28), 2),
            ("direct object's length does not fit its block", |h| Header::allocated(h.size(), 0).direct(), 0),
            (
                "direct object's length does not fit its block",
                |h| Header::allocated(h.size(), 4000).direct(),
                0,
            ),
            ("direct object's length does not fit its block", |h| Header::allocated(h.size(), 1).direct(), 0),
            ("listed block not free or in the wrong class", |h| Header::allocated(h.size(), 8), 2),
        ];
        for (want, change, block) in damage {
            let (mut pool, addrs) = pool();
            let at = addrs[block];
            let h = pool.header(at);
            pool.set_header(at, change(h));
            assert_eq!(pool.validate(), Err(want), "{h:?} -> {:?}", change(h));
        }
        // A slot's object: its header must fit the slot's use; the counters must match.
        let slot_damage: [fn(Header) -> Header; 5] = [
            |h| Header::allocated(h.size(), 0),
            |h| Header::allocated(h.size(), 0),
            |h| h.direct(),
            |h| Header::allocated(h.size(), 4000),
            |h| Header::allocated(h.size(), 1),
        ];
        // Objects of 4 bytes (a block of 2 units, which a length of 0 fits), then of 100.
        let handle_pool = |len: usize| {
            let mut pool = Pool::new(HeapSource::new());
            let h = pool.alloc_copy(&[3; 100][..len]).unwrap();
            let addr = pool.slots[h.index() as usize].addr;
            pool.validate().unwrap();
            (pool, addr)
        };
        for (i, change) in slot_damage.into_iter().enumerate() {
            let (mut pool, at) = handle_pool(if i == 0 { 4 } else { 100 });
            let h = pool.header(at);
            pool.set_header(at, change(h));
            let want = "slot does not point at a fitting allocated block";
            assert_eq!(pool.validate(), Err(want), "{h:?} -> {:?}", change(h));
        }
        type Change = fn(&mut Pool<HeapSource>);
        let counter_damage: [(&str, Change); 3] = [
            ("object count wrong", |p| p.counters.objects += 1),
            ("byte counters wrong", |p| p.counters.payload += 1),
            ("byte counters wrong", |p| p.counters.allocated_units += 1),
        ];
        for (want, change) in counter_damage {
            let (mut pool, _) = handle_pool(100);
            change(&mut pool);
            assert_eq!(pool.validate(), Err(want));
        }
        // The sizes chosen above really are outside the block's fit.
        let (pool, [a, ..]) = pool();
        let size = pool.header(a).size();
        assert!(units_for(4000) > size && units_for(1) + 1 < size);
    }
}
