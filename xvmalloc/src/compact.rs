//! Compaction: move objects out of sparse chunks and give those chunks back.
//!
//! First every fragmented chunk is packed: its objects slide to its start (handles stay
//! valid, slots are updated) and its free space becomes one block at its end, so the
//! scattered holes left by frees become blocks any object fits in. Then, one round:
//! 1. sort the held chunks by allocated units, ascending;
//! 2. choose as victims the longest prefix whose allocated units fit in 15/16 of the free
//!    units of the remaining chunks (the targets);
//! 3. take the victims' free blocks off the free lists, so allocation can only land in
//!    targets;
//! 4. move every object of every victim (victims in order, larger objects first) into a
//!    best-fit free block of a target, updating its slot: handles stay valid;
//! 5. if no target block fits an object, leave that victim's remaining objects in place
//!    and go on with the next victim; finally release the emptied victims and rebuild the
//!    free blocks of those that still hold objects.
//!
//! Rounds repeat while they release chunks (at most [`MAX_ROUNDS`]). Compaction never
//! acquires memory from the source, so it cannot fail.

use alloc::vec::Vec;

use crate::block::{HEADER, Header, NIL, UNIT};
use crate::pool::Pool;
use crate::{Addr, CompactReport, MAX_ALLOC, PageSource};

const MAX_ROUNDS: usize = 16;

impl<S: PageSource> Pool<S> {
    /// Moves objects out of sparsely used chunks into the free space of denser ones and
    /// gives the emptied chunks back to the source. Handles stay valid; object contents are
    /// unchanged. Cost: O(live objects + chunks log chunks) per round; it allocates
    /// temporary tables on the heap and never takes memory from the source.
    ///
    /// ```
    /// use xvmalloc::{HeapSource, Pool};
    ///
    /// let mut pool = Pool::new(HeapSource::new());
    /// let handles: Vec<_> = (0..64u8).map(|i| pool.alloc_copy(&[i; 1000]).unwrap()).collect();
    /// for h in handles.iter().skip(1).step_by(2) {
    ///     pool.free(*h).unwrap();
    /// }
    /// let before = pool.stats().held_bytes;
    /// let report = pool.compact();
    /// assert!(report.chunks_released > 0);
    /// assert!(pool.stats().held_bytes < before);
    /// for (i, h) in handles.iter().enumerate().step_by(2) {
    ///     assert_eq!(pool.get(*h).unwrap(), &[i as u8; 1000][..]);
    /// }
    /// ```
    pub fn compact(&mut self) -> CompactReport {
        self.compact_inner(None)
    }

    /// [`compact`](Self::compact) that also moves direct objects
    /// ([`alloc_direct`](Self::alloc_direct)), calling `moved(from, to)` for each move, in
    /// order, meaning "the object now at `from` is at `to`", so that their owner can update
    /// its addresses (an object may move twice, and an address may be reused by a later
    /// move). [`compact`](Self::compact) leaves chunks holding direct objects as they are.
    ///
    /// ```
    /// use xvmalloc::{Addr, HeapSource, Pool};
    ///
    /// let mut pool = Pool::new(HeapSource::new());
    /// let addrs: Vec<Addr> = (0..64u8).map(|i| pool.alloc_direct(&[i; 1000]).unwrap()).collect();
    /// for a in addrs.iter().skip(1).step_by(2) {
    ///     pool.free_direct(*a).unwrap();
    /// }
    /// // The owner's table: (address, contents).
    /// let mut kept: Vec<(Addr, u8)> = (0..32).map(|i| (addrs[2 * i], 2 * i as u8)).collect();
    /// let report = pool.compact_with(&mut |from, to| {
    ///     // Moves come in order: the object now at `from` is at `to`.
    ///     let entry = kept.iter_mut().find(|(a, _)| *a == from).unwrap();
    ///     entry.0 = to;
    /// });
    /// assert!(report.chunks_released > 0);
    /// for (a, byte) in &kept {
    ///     assert_eq!(pool.get_direct(*a).unwrap(), &[*byte; 1000][..]);
    /// }
    /// ```
    pub fn compact_with(&mut self, moved: &mut dyn FnMut(Addr, Addr)) -> CompactReport {
        self.compact_inner(Some(moved))
    }

    fn compact_inner(&mut self, mut moved: Option<&mut dyn FnMut(Addr, Addr)>) -> CompactReport {
        let mut report = CompactReport::default();
        self.slide_all(&mut report, &mut moved);
        for _ in 0..MAX_ROUNDS {
            let released = self.compact_round(&mut report, &mut moved);
            if released == 0 {
                break;
            }
        }
        report
    }

    /// Slides the objects of every fragmented chunk to its start, leaving one free block
    /// at its end: scattered holes become one block any object can use. Without `moved`,
    /// chunks holding direct objects stay as they are.
    fn slide_all(&mut self, report: &mut CompactReport, moved: &mut Option<&mut dyn FnMut(Addr, Addr)>) {
        // Live slots in address order: each chunk's slot-named objects come together, in
        // the order a walk of the chunk meets them.
        let mut live: Vec<(u32, u32)> = Vec::with_capacity(self.slots.len());
        for (index, slot) in self.slots.iter().enumerate() {
            if slot.is_live() {
                live.push((slot.addr, index as u32));
            }
        }
        live.sort_unstable();
        // The chunk's allocated blocks: (address, units, length, direct).
        let mut blocks: Vec<(u32, u32, u32, bool)> = Vec::new();
        for id in 0..self.chunks.len() as u32 {
            if self.chunks[id as usize].is_none() || self.is_packed(id) {
                continue;
            }
            let base = id << self.shift;
            blocks.clear();
            let mut off = 0;
            while off < self.chunk_units {
                let h = self.header(base + off);
                if !h.is_free() {
                    blocks.push((
                        base + off,
                        h.size().max(1),
                        self.object_len(base + off) as u32,
                        h.is_direct(),
                    ));
                }
                off += h.size().max(1);
            }
            if moved.is_none() && blocks.iter().any(|b| b.3) {
                continue;
            }
            let mut slots = live[live.partition_point(|&(a, _)| a < base)..].iter();
            self.unlink_chunk_free_blocks(id);
            let mut to = 0u32;
            for &(addr, size, len, direct) in &blocks {
                let new = base + to;
                if new + size > base + self.chunk_units {
                    // Only a chunk rewritten behind the pool's back has blocks that overrun it.
                    break;
                }
                if addr != new {
                    let from = self.byte_offset(addr);
                    let at = to as usize * UNIT;
                    let len = len as usize;
                    self.buf_mut(addr).copy_within(from + HEADER..from + HEADER + len, at + HEADER);
                    if direct {
                        if let Some(f) = moved.as_mut() {
                            f(Addr(addr), Addr(new));
                        }
                    } else if let Some(&(_, index)) = slots.find(|&&(a, _)| a == addr) {
                        self.slots[index as usize].addr = new;
                    }
                    report.objects_moved += 1;
                    report.bytes_moved += len as u64;
                    self.counters.objects_moved += 1;
                }
                let header = Header::allocated(size, len);
                self.set_header(new, if direct { header.direct() } else { header });
                to += size;
            }
            if to < self.chunk_units {
                self.add_free_block(base + to, self.chunk_units - to);
            }
        }
    }

    /// Whether chunk `id` has no free block except possibly one at its end.
    fn is_packed(&self, id: u32) -> bool {
        let base = id << self.shift;
        let mut off = 0;
        while off < self.chunk_units {
            let h = self.header(base + off);
            if h.is_free() && off + h.size() < self.chunk_units {
                return false;
            }
            off += h.size().max(1);
        }
        true
    }

    /// One round; returns the chunks it released.
    fn compact_round(
        &mut self,
        report: &mut CompactReport,
        moved: &mut Option<&mut dyn FnMut(Addr, Addr)>,
    ) -> u64 {
        let mut held: Vec<(u32, u32)> = Vec::new();
        for id in 0..self.chunks.len() as u32 {
            if self.chunks[id as usize].is_some() {
                let (used, _, direct) = self.chunk_usage(id);
                // Without `moved`, a chunk holding direct objects can be neither emptied nor
                // a target worth filling: leave it out.
                if direct == 0 || moved.is_some() {
                    held.push((used, id));
                }
            }
        }
        if held.len() < 2 {
            return 0;
        }
        held.sort_unstable();
        let victims = self.choose_victims(&held);
        if victims == 0 {
            return 0;
        }
        // rank[chunk] = position among the victims, NIL for targets and unused ids.
        let mut rank = alloc::vec![NIL; self.chunks.len()];
        // Live objects left in each victim, by rank.
        let mut left = Vec::with_capacity(victims);
        // Objects to move: (victim rank, larger first, slot index or direct address, direct).
        let mut moves: Vec<(u32, core::cmp::Reverse<u32>, u32, bool)> = Vec::new();
        for (r, &(_, id)) in held[..victims].iter().enumerate() {
            rank[id as usize] = r as u32;
            left.push(self.chunk_usage(id).1);
            self.unlink_chunk_free_blocks(id);
            let base = id << self.shift;
            let mut off = 0;
            while off < self.chunk_units {
                let h = self.header(base + off);
                if !h.is_free() && h.is_direct() {
                    let len = self.object_len(base + off) as u32;
                    moves.push((r as u32, core::cmp::Reverse(len), base + off, true));
                }
                off += h.size().max(1);
            }
        }
        for (index, slot) in self.slots.iter().enumerate() {
            if slot.is_live() {
                let r = rank[(slot.addr >> self.shift) as usize];
                if r != NIL {
                    let len = self.object_len(slot.addr) as u32;
                    moves.push((r, core::cmp::Reverse(len), index as u32, false));
                }
            }
        }
        moves.sort_unstable();
        let mut released = 0;
        let mut scratch = [0u8; MAX_ALLOC];
        // A victim whose object finds no room keeps the rest of its objects (larger ones
        // come first, so little is moved in vain); the next victims still get their turn.
        let mut stuck = NIL;
        for &(r, _, name, direct) in &moves {
            if r == stuck {
                continue;
            }
            let from = if direct { name } else { self.slots[name as usize].addr };
            match self.move_block(from, direct, &mut scratch, report) {
                Some(to) => {
                    if direct {
                        if let Some(f) = moved.as_mut() {
                            f(Addr(from), Addr(to));
                        }
                    } else {
                        self.slots[name as usize].addr = to;
                    }
                    left[r as usize] -= 1;
                }
                None => stuck = r,
            }
        }
        // Release emptied victims, rebuild the rest.
        for (r, &(_, id)) in held[..victims].iter().enumerate() {
            if left[r] == 0 {
                self.release_chunk(id, true);
                released += 1;
            } else {
                self.relink_chunk(id);
            }
        }
        report.chunks_released += released;
        report.pages_released += released * (self.chunk_size as u64 / 4096);
        released
    }

    /// How many of the least used chunks (sorted ascending in `held`) to evacuate.
    fn choose_victims(&self, held: &[(u32, u32)]) -> usize {
        let total_free: u64 = held.iter().map(|&(used, _)| u64::from(self.chunk_units - used)).sum();
        let mut moved = 0u64;
        let mut victim_free = 0u64;
        let mut victims = 0;
        for (k, &(used, _)) in held.iter().enumerate() {
            let target_free = total_free - victim_free - u64::from(self.chunk_units - used);
            if (moved + u64::from(used)) * 16 > target_free * 15 || k + 1 == held.len() {
                break;
            }
            moved += u64::from(used);
            victim_free += u64::from(self.chunk_units - used);
            victims = k + 1;
        }
        victims
    }

    /// Moves the object at `from` into a block from the free lists, returning its new
    /// address, or `None` (changing nothing) when no listed block fits.
    fn move_block(
        &mut self,
        from: u32,
        direct: bool,
        scratch: &mut [u8; MAX_ALLOC],
        report: &mut CompactReport,
    ) -> Option<u32> {
        let len = self.object_len(from).min(MAX_ALLOC);
        let old_units = self.header(from).size();
        let (addr, units) = self.take_block(crate::block::units_for(len), len as u32)?;
        if direct {
            let h = self.header(addr);
            self.set_header(addr, h.direct());
        }
        let at = self.byte_offset(from) + HEADER;
        scratch[..len].copy_from_slice(&self.buf(from)[at..at + len]);
        let to = self.byte_offset(addr) + HEADER;
        self.buf_mut(addr)[to..to + len].copy_from_slice(&scratch[..len]);
        // The old block becomes free but stays unlisted: its chunk is being evacuated.
        let h = self.header(from);
        self.set_header(from, h.marked_free());
        self.counters.allocated_units =
            self.counters.allocated_units + u64::from(units) - u64::from(old_units);
        self.counters.objects_moved += 1;
        report.objects_moved += 1;
        report.bytes_moved += len as u64;
        Some(addr)
    }

    /// Allocated units, live objects and direct objects of chunk `id`, by walking its blocks.
    pub(crate) fn chunk_usage(&self, id: u32) -> (u32, u32, u32) {
        let base = id << self.shift;
        let (mut off, mut used, mut objects, mut direct) = (0, 0, 0, 0);
        while off < self.chunk_units {
            let h = self.header(base + off);
            if !h.is_free() {
                used += h.size();
                objects += 1;
                direct += u32::from(h.is_direct());
            }
            off += h.size().max(1);
        }
        (used, objects, direct)
    }

    /// Takes every free block of chunk `id` off the free lists.
    fn unlink_chunk_free_blocks(&mut self, id: u32) {
        let base = id << self.shift;
        let mut off = 0;
        while off < self.chunk_units {
            let h = self.header(base + off);
            if h.is_free() {
                self.unlink(base + off, h.size());
            }
            off += h.size().max(1);
        }
    }

    /// Rebuilds chunk `id`'s block chain after evacuation: merges runs of free blocks,
    /// writes their footers and the PREV_FREE flags, and lists the free blocks again.
    fn relink_chunk(&mut self, id: u32) {
        let base = id << self.shift;
        let mut off = 0;
        let mut prev_free = false;
        while off < self.chunk_units {
            let h = self.header(base + off);
            if !h.is_free() {
                self.set_header(base + off, h.with_prev_free(prev_free));
                prev_free = false;
                off += h.size().max(1);
                continue;
            }
            let start = off;
            let mut size = 0;
            while off < self.chunk_units {
                let h = self.header(base + off);
                if !h.is_free() {
                    break;
                }
                size += h.size();
                off += h.size().max(1);
            }
            self.add_free_block(base + start, size);
            prev_free = true;
        }
    }
}
