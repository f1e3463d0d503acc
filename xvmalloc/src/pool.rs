//! The pool: chunk table, slot table, free lists, alloc and free.

use alloc::vec::Vec;

use crate::block::{HEADER, Header, MIN_UNITS, NIL, UNIT, read_u32, units_for, write_free_block, write_u32};
use crate::classes::{Classes, class_of};
use crate::{Addr, AllocError, ConfigError, Handle, HandleError, MAX_ALLOC, PageSource, PoolStats};

/// Default chunk size: 4 pages (16 KiB). See the crate docs for the measurements behind it.
pub const DEFAULT_CHUNK_SIZE: usize = 16384;

const MIN_CHUNK: usize = 4096;
const MAX_CHUNK: usize = 65536;
const PAGE: u64 = 4096;

/// A handle's second half: the pool's tag in the top [`TAG_BITS`] bits, then [`LIVE`], then
/// the slot's generation in the low [`GENERATION_BITS`]. Generation 0 is never issued: a
/// slot whose generation would wrap to it is retired for good, so a stale handle can never
/// match again, and the tag makes another pool refuse the handle.
pub(crate) const GENERATION_BITS: u32 = 19;
pub(crate) const GENERATION_MASK: u32 = (1 << GENERATION_BITS) - 1;
/// Set in every handle and in the slot of a live object, clear in free and retired slots:
/// one compare of the whole word checks tag, generation and liveness.
pub(crate) const LIVE: u32 = 1 << GENERATION_BITS;
pub(crate) const TAG_BITS: u32 = 32 - GENERATION_BITS - 1;

/// A tag for a new pool: consecutive pools get different tags (4095 of them before one
/// repeats), never 0.
fn new_tag() -> u32 {
    #[cfg(target_has_atomic = "32")]
    let n = {
        use core::sync::atomic::{AtomicU32, Ordering};
        static NEXT: AtomicU32 = AtomicU32::new(0);
        NEXT.fetch_add(1, Ordering::Relaxed)
    };
    #[cfg(not(target_has_atomic = "32"))]
    let n = 0;
    (n % ((1 << TAG_BITS) - 1) + 1) << (GENERATION_BITS + 1)
}

/// One entry of the slot table (8 bytes; the object's length is in its block header). A
/// slot without [`LIVE`] is free, its `addr` linking the next free slot, or retired
/// (generation bits 0, off the free chain).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Slot {
    /// The pool's tag, [`LIVE`] and the slot's generation, as handles carry them.
    pub(crate) generation: u32,
    pub(crate) addr: u32,
}

impl Slot {
    #[inline(always)]
    pub(crate) const fn is_live(self) -> bool {
        self.generation & LIVE != 0
    }
}

const _: () = assert!(core::mem::size_of::<Slot>() == 8);

/// Running totals behind [`PoolStats`].
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Counters {
    pub(crate) payload: u64,
    pub(crate) allocated_units: u64,
    pub(crate) objects: u64,
    pub(crate) chunks_held: u64,
    pub(crate) chunks_acquired: u64,
    pub(crate) pages_released: u64,
    pub(crate) pages_compacted: u64,
    pub(crate) objects_moved: u64,
}

/// An O(1) sub-page allocator for objects of 1..=4096 bytes.
///
/// Objects live in fixed-size chunks taken from a [`PageSource`]; each object is one block
/// (4-byte header + payload, rounded to 8 bytes) that never spans chunks. Free blocks sit in
/// exact 8-byte size classes found through a two-level bitmap, so `alloc` and `free` take
/// constant time; `free` merges both neighbours and a chunk that becomes wholly free goes
/// back to the source at once. Handles go through a slot table, so [`compact`](Pool::compact)
/// can move objects out of sparse chunks and release them.
///
/// ```
/// use xvmalloc::{HeapSource, Pool};
///
/// let mut pool = Pool::new(HeapSource::new());
/// let h = pool.alloc_copy(b"compressed page bytes")?;
/// assert_eq!(pool.get(h)?, b"compressed page bytes");
/// pool.get_mut(h)?[0] = b'C';
/// assert_eq!(pool.len(h)?, 21);
/// pool.free(h)?;
/// assert!(pool.get(h).is_err(), "stale handles are refused");
/// assert_eq!(pool.stats().held_bytes, 0, "the empty chunk went back to the source");
/// # Ok::<(), Box<dyn core::error::Error>>(())
/// ```
pub struct Pool<S: PageSource> {
    pub(crate) source: S,
    /// The chunk table, indexed by chunk id; `None` while an id is unused.
    pub(crate) chunks: Vec<Option<S::Chunk>>,
    pub(crate) spare_chunks: Vec<u32>,
    pub(crate) slots: Vec<Slot>,
    pub(crate) free_slot: u32,
    pub(crate) classes: Classes,
    pub(crate) chunk_size: usize,
    /// Units per chunk (a power of two).
    pub(crate) chunk_units: u32,
    /// log2(chunk_units): an address is `chunk << shift | offset_in_units`.
    pub(crate) shift: u32,
    pub(crate) max_alloc: usize,
    pub(crate) counters: Counters,
    /// This pool's tag, in place (see [`GENERATION_BITS`]).
    pub(crate) tag: u32,
}

impl<S: PageSource> core::fmt::Debug for Pool<S> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Pool").field("stats", &self.stats()).finish_non_exhaustive()
    }
}

impl<S: PageSource> Pool<S> {
    /// A pool carving chunks of [`DEFAULT_CHUNK_SIZE`] bytes from `source`.
    pub fn new(source: S) -> Self {
        match Self::with_chunk_size(source, DEFAULT_CHUNK_SIZE) {
            Ok(pool) => pool,
            Err(_) => unreachable!("the default chunk size is valid"),
        }
    }

    /// A pool carving chunks of `chunk_size` bytes: a power of two from 4096 to 65536.
    ///
    /// # Errors
    ///
    /// [`ConfigError::InvalidChunkSize`] for any other size.
    pub fn with_chunk_size(source: S, chunk_size: usize) -> Result<Self, ConfigError> {
        if !chunk_size.is_power_of_two() || !(MIN_CHUNK..=MAX_CHUNK).contains(&chunk_size) {
            return Err(ConfigError::InvalidChunkSize(chunk_size));
        }
        let chunk_units = (chunk_size / UNIT) as u32;
        Ok(Pool {
            source,
            chunks: Vec::new(),
            spare_chunks: Vec::new(),
            slots: Vec::new(),
            free_slot: NIL,
            classes: Classes::new(),
            chunk_size,
            chunk_units,
            shift: chunk_units.trailing_zeros(),
            max_alloc: MAX_ALLOC.min(chunk_size - HEADER),
            counters: Counters::default(),
            tag: new_tag(),
        })
    }

    /// The largest object this pool accepts.
    pub fn max_alloc(&self) -> usize {
        self.max_alloc
    }

    /// The chunk size in bytes.
    pub fn chunk_size(&self) -> usize {
        self.chunk_size
    }

    /// The page source.
    pub fn source(&self) -> &S {
        &self.source
    }

    /// The page source, mutably (e.g. to change a limit).
    pub fn source_mut(&mut self) -> &mut S {
        &mut self.source
    }

    /// Allocates an object of `len` bytes. Its contents are unspecified (possibly bytes of
    /// an earlier object) until written through [`get_mut`](Self::get_mut); see
    /// [`alloc_copy`](Self::alloc_copy).
    ///
    /// # Errors
    ///
    /// [`AllocError::InvalidSize`] for 0 or more than [`max_alloc`](Self::max_alloc);
    /// [`AllocError::OutOfMemory`] when no free block fits and the source gives no chunk.
    /// On error nothing stored changes.
    #[inline]
    pub fn alloc(&mut self, len: usize) -> Result<Handle, AllocError> {
        self.alloc_at(len).map(|(handle, _)| handle)
    }

    /// [`alloc`](Self::alloc), also returning the block's address.
    #[inline(always)]
    fn alloc_at(&mut self, len: usize) -> Result<(Handle, u32), AllocError> {
        // Reserve the slot first so that a failure cannot leave a block without an owner.
        if self.free_slot == NIL && self.slots.len() >= NIL as usize {
            return Err(AllocError::AddressSpaceExhausted);
        }
        let addr = self.place(len)?;
        Ok((self.new_slot(addr), addr))
    }

    /// Takes a block for an object of `len` bytes (its header records the length) and
    /// counts the object; returns the block's address.
    #[inline(always)]
    fn place(&mut self, len: usize) -> Result<u32, AllocError> {
        if len == 0 || len > self.max_alloc {
            return Err(AllocError::InvalidSize { len, max: self.max_alloc });
        }
        let want = units_for(len);
        let (addr, units) = match self.take_block(want, len as u32) {
            Some(found) => found,
            None => {
                self.grow()?;
                self.take_block(want, len as u32).ok_or(AllocError::OutOfMemory)?
            }
        };
        self.counters.payload += len as u64;
        self.counters.allocated_units += u64::from(units);
        self.counters.objects += 1;
        Ok(addr)
    }

    /// Allocates an object holding a copy of `data`.
    ///
    /// # Errors
    ///
    /// As [`alloc`](Self::alloc) with `data.len()`.
    pub fn alloc_copy(&mut self, data: &[u8]) -> Result<Handle, AllocError> {
        let (handle, addr) = self.alloc_at(data.len())?;
        let at = self.byte_offset(addr) + HEADER;
        self.buf_mut(addr)[at..at + data.len()].copy_from_slice(data);
        Ok(handle)
    }

    /// Allocates a *direct* object holding a copy of `data`: one without a slot, named by
    /// its [`Addr`]. It costs the pool no table entry (a handle's slot is 8 bytes of heap),
    /// for owners that track their objects themselves; see [`Addr`] for what the pool then
    /// cannot check, and [`compact_with`](Self::compact_with) for moving such objects.
    ///
    /// ```
    /// use xvmalloc::{HeapSource, Pool};
    ///
    /// let mut pool = Pool::new(HeapSource::new());
    /// let a = pool.alloc_direct(b"compressed page bytes")?;
    /// assert_eq!(pool.get_direct(a)?, b"compressed page bytes");
    /// pool.free_direct(a)?;
    /// assert!(pool.get_direct(a).is_err());
    /// # Ok::<(), Box<dyn core::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// As [`alloc`](Self::alloc) with `data.len()`.
    pub fn alloc_direct(&mut self, data: &[u8]) -> Result<Addr, AllocError> {
        let addr = self.place(data.len())?;
        let h = self.header(addr);
        self.set_header(addr, h.direct());
        let at = self.byte_offset(addr) + HEADER;
        self.buf_mut(addr)[at..at + data.len()].copy_from_slice(data);
        Ok(Addr(addr))
    }

    /// Whether `addr` starts an allocated direct block of a plausible size in a held chunk.
    fn check_direct(&self, addr: Addr) -> Result<(), HandleError> {
        let chunk = (addr.0 >> self.shift) as usize;
        if !self.chunks.get(chunk).is_some_and(Option::is_some) {
            return Err(HandleError::Unknown);
        }
        let h = self.header(addr.0);
        let offset = addr.0 & (self.chunk_units - 1);
        let fits = h.size() >= units_for(h.len() as usize) && offset + h.size() <= self.chunk_units;
        if h.is_free() || !h.is_direct() || h.len() == 0 || !fits {
            return Err(HandleError::Stale);
        }
        Ok(())
    }

    /// A direct object's bytes (exactly its length).
    ///
    /// # Errors
    ///
    /// [`HandleError::Unknown`] for an address outside the held chunks,
    /// [`HandleError::Stale`] for one that does not start a live direct object.
    #[inline]
    pub fn get_direct(&self, addr: Addr) -> Result<&[u8], HandleError> {
        self.check_direct(addr)?;
        let at = self.byte_offset(addr.0) + HEADER;
        Ok(&self.buf(addr.0)[at..at + self.object_len(addr.0)])
    }

    /// Frees a direct object.
    ///
    /// # Errors
    ///
    /// As [`get_direct`](Self::get_direct); nothing changes then.
    #[inline]
    pub fn free_direct(&mut self, addr: Addr) -> Result<(), HandleError> {
        self.check_direct(addr)?;
        let len = self.header(addr.0).len();
        let units = self.free_block(addr.0);
        // Merged into the block before it, the object's old header is left inside a free
        // block: mark it free, so the stale address is refused until its place is reused.
        if self.chunks[(addr.0 >> self.shift) as usize].is_some() {
            let h = self.header(addr.0);
            if !h.is_free() {
                self.set_header(addr.0, h.marked_free());
            }
        }
        self.counters.payload -= u64::from(len);
        self.counters.allocated_units -= u64::from(units);
        self.counters.objects -= 1;
        Ok(())
    }

    /// Frees the object; its handle (and every copy of it) becomes stale.
    ///
    /// # Errors
    ///
    /// [`HandleError::Stale`] for an already freed object (double free) or a forged
    /// generation, [`HandleError::Unknown`] for an index never issued. Nothing changes then.
    #[inline]
    pub fn free(&mut self, handle: Handle) -> Result<(), HandleError> {
        let slot = self.slots.get_mut(handle.index as usize).ok_or(HandleError::Unknown)?;
        // Handles always carry LIVE, so a free or retired slot never matches.
        if slot.generation != handle.generation || handle.generation & LIVE == 0 {
            return Err(HandleError::Stale);
        }
        let addr = slot.addr;
        // Release the slot while it is at hand: a new generation makes every copy of the
        // handle stale; a slot out of generations is retired instead of reused.
        let generation = slot.generation.wrapping_add(1) & GENERATION_MASK;
        slot.generation = self.tag | generation;
        if generation != 0 {
            slot.addr = self.free_slot;
            self.free_slot = handle.index;
        } else {
            slot.addr = NIL;
        }
        let len = self.header(addr).len();
        let units = self.free_block(addr);
        self.counters.payload -= u64::from(len);
        self.counters.allocated_units -= u64::from(units);
        self.counters.objects -= 1;
        Ok(())
    }

    /// The object's bytes (exactly its length).
    ///
    /// # Errors
    ///
    /// [`HandleError`] for a stale or unknown handle.
    #[inline]
    pub fn get(&self, handle: Handle) -> Result<&[u8], HandleError> {
        let (addr, len) = self.locate(handle)?;
        let at = self.byte_offset(addr) + HEADER;
        Ok(&self.buf(addr)[at..at + len])
    }

    /// The object's bytes, writable.
    ///
    /// # Errors
    ///
    /// [`HandleError`] for a stale or unknown handle.
    #[inline]
    pub fn get_mut(&mut self, handle: Handle) -> Result<&mut [u8], HandleError> {
        let (addr, len) = self.locate(handle)?;
        let at = self.byte_offset(addr) + HEADER;
        Ok(&mut self.buf_mut(addr)[at..at + len])
    }

    /// The object's length in bytes.
    ///
    /// # Errors
    ///
    /// [`HandleError`] for a stale or unknown handle.
    #[inline]
    #[allow(clippy::len_without_is_empty)]
    pub fn len(&self, handle: Handle) -> Result<usize, HandleError> {
        self.locate(handle).map(|(_, len)| len)
    }

    /// Whether `handle` names a live object of this pool.
    pub fn contains(&self, handle: Handle) -> bool {
        self.locate(handle).is_ok()
    }

    /// A snapshot of the pool's memory use.
    pub fn stats(&self) -> PoolStats {
        let c = &self.counters;
        let metadata = self.slots.capacity() * core::mem::size_of::<Slot>()
            + self.chunks.capacity() * core::mem::size_of::<Option<S::Chunk>>()
            + self.spare_chunks.capacity() * 4;
        PoolStats {
            payload_bytes: c.payload,
            allocated_bytes: c.allocated_units * UNIT as u64,
            held_bytes: c.chunks_held * self.chunk_size as u64,
            objects: c.objects,
            chunks_held: c.chunks_held,
            chunk_size: self.chunk_size as u64,
            chunks_acquired: c.chunks_acquired,
            pages_released: c.pages_released,
            pages_compacted: c.pages_compacted,
            objects_moved: c.objects_moved,
            metadata_bytes: metadata as u64,
        }
    }

    // ---- handles -------------------------------------------------------------------------

    /// The live object's address and length.
    #[inline]
    pub(crate) fn locate(&self, handle: Handle) -> Result<(u32, usize), HandleError> {
        let slot = self.slots.get(handle.index as usize).ok_or(HandleError::Unknown)?;
        if slot.generation != handle.generation || handle.generation & LIVE == 0 {
            return Err(HandleError::Stale);
        }
        Ok((slot.addr, self.object_len(slot.addr)))
    }

    /// The length of the object at `addr`, from its header. Bounded by the chunk's end, so
    /// a header rewritten behind the pool's back (a source's chunk may be any safe
    /// `DerefMut`) cannot make a slice leave the chunk.
    #[inline(always)]
    pub(crate) fn object_len(&self, addr: u32) -> usize {
        let room = self.chunk_size - self.byte_offset(addr) - HEADER;
        (self.header(addr).len() as usize).min(room)
    }

    /// The handle of the live object in slot `index` (see [`Handle::index`]), or `None` if
    /// the slot is free, retired or was never issued.
    ///
    /// For owners that keep only a handle's index in their own tables (4 bytes instead of
    /// 8) and know which objects are theirs: the pool cannot tell a stale index from a
    /// live one, so the owner's bookkeeping must guarantee it, as a page store's key table
    /// does.
    ///
    /// ```
    /// use xvmalloc::{HeapSource, Pool};
    ///
    /// let mut pool = Pool::new(HeapSource::new());
    /// let h = pool.alloc_copy(b"stream")?;
    /// assert_eq!(pool.handle_at(h.index()), Some(h));
    /// pool.free(h)?;
    /// assert_eq!(pool.handle_at(h.index()), None);
    /// # Ok::<(), Box<dyn core::error::Error>>(())
    /// ```
    #[inline]
    pub fn handle_at(&self, index: u32) -> Option<Handle> {
        let slot = self.slots.get(index as usize)?;
        slot.is_live().then_some(Handle { index, generation: slot.generation })
    }

    #[inline(always)]
    fn new_slot(&mut self, addr: u32) -> Handle {
        let index = self.free_slot;
        if index == NIL {
            let index = self.slots.len() as u32;
            let generation = self.tag | LIVE | 1;
            self.slots.push(Slot { generation, addr });
            return Handle { index, generation };
        }
        let slot = &mut self.slots[index as usize];
        self.free_slot = slot.addr;
        *slot = Slot { generation: slot.generation | LIVE, addr };
        Handle { index, generation: slot.generation }
    }

    // ---- chunk memory --------------------------------------------------------------------

    #[inline]
    pub(crate) fn byte_offset(&self, addr: u32) -> usize {
        ((addr & (self.chunk_units - 1)) as usize) * UNIT
    }

    #[inline]
    pub(crate) fn buf(&self, addr: u32) -> &[u8] {
        match &self.chunks[(addr >> self.shift) as usize] {
            Some(buf) => buf,
            None => unreachable!("address in a released chunk"),
        }
    }

    #[inline]
    pub(crate) fn buf_mut(&mut self, addr: u32) -> &mut [u8] {
        match &mut self.chunks[(addr >> self.shift) as usize] {
            Some(buf) => buf,
            None => unreachable!("address in a released chunk"),
        }
    }

    #[inline]
    pub(crate) fn header(&self, addr: u32) -> Header {
        Header::from_bits(read_u32(self.buf(addr), self.byte_offset(addr)))
    }

    #[inline]
    pub(crate) fn set_header(&mut self, addr: u32, header: Header) {
        let at = self.byte_offset(addr);
        write_u32(self.buf_mut(addr), at, header.bits());
    }

    #[inline]
    fn set_link_field(&mut self, addr: u32, field: usize, value: u32) {
        let at = self.byte_offset(addr) + field;
        write_u32(self.buf_mut(addr), at, value);
    }

    // ---- free lists ----------------------------------------------------------------------

    const NEXT: usize = 4;
    const PREV: usize = 8;

    /// Makes the `units` at `addr` a free block (header and footer) and puts it at the head
    /// of its class.
    ///
    /// Lists are doubly linked except that the head's `prev` field is never read (a block
    /// is the head iff the class head names it), which saves a write to another block on
    /// every pop.
    #[inline(always)]
    pub(crate) fn add_free_block(&mut self, addr: u32, units: u32) {
        let class = class_of(units);
        let head = self.classes.heads[class];
        let at = self.byte_offset(addr);
        let buf = self.buf_mut(addr);
        write_free_block(buf, at, units);
        write_u32(buf, at + Self::NEXT, head);
        self.finish_link(addr, class, head);
    }

    /// The rest of [`add_free_block`](Self::add_free_block) once the block's header, footer
    /// and `next` field are written (`next` holds `head`).
    #[inline(always)]
    fn finish_link(&mut self, addr: u32, class: usize, head: u32) {
        if head != NIL {
            self.set_link_field(head, Self::PREV, addr);
        } else {
            self.classes.set(class);
        }
        self.classes.heads[class] = addr;
    }

    /// Takes the free block at `addr` of `units` out of its class.
    #[inline(always)]
    pub(crate) fn unlink(&mut self, addr: u32, units: u32) {
        let at = self.byte_offset(addr);
        let links = Self::links(self.buf(addr), at);
        self.unlink_read(addr, class_of(units), links);
    }

    /// The `(next, prev)` links of the free block at byte `at` of `buf`.
    #[inline(always)]
    fn links(buf: &[u8], at: usize) -> (u32, u32) {
        (read_u32(buf, at + Self::NEXT), read_u32(buf, at + Self::PREV))
    }

    /// [`unlink`](Self::unlink) of the block at `addr` in `class` whose `(next, prev)` links
    /// were just read (`prev` is meaningless for a class head and is not used then).
    #[inline(always)]
    fn unlink_read(&mut self, addr: u32, class: usize, (next, prev): (u32, u32)) {
        if self.classes.heads[class] == addr {
            self.classes.heads[class] = next;
            if next == NIL {
                self.classes.clear(class);
            }
            return;
        }
        self.set_link_field(prev, Self::NEXT, next);
        if next != NIL {
            self.set_link_field(next, Self::PREV, prev);
        }
    }

    /// Takes a free block of at least `want` units from the lists, splits off the rest and
    /// marks it allocated, holding `len` bytes. Returns its address and actual size (a remainder too small to be
    /// a block stays inside the allocation).
    #[inline(always)]
    pub(crate) fn take_block(&mut self, want: u32, len: u32) -> Option<(u32, u32)> {
        let class = self.classes.find(want)?;
        let addr = self.classes.heads[class];
        let at = self.byte_offset(addr);
        let chunk_bytes = self.chunk_size;
        let Some(buf) = self.chunks[(addr >> self.shift) as usize].as_deref_mut() else {
            unreachable!("listed block in a released chunk")
        };
        // Pop the head: only the class head changes (see `add_free_block`).
        // At least `want`: only a chunk whose bytes changed behind the pool's back (a
        // source's chunk may be any safe `DerefMut`) has a smaller header here.
        let size = Header::from_bits(read_u32(buf, at)).size().max(want);
        let next = read_u32(buf, at + Self::NEXT);
        self.classes.heads[class] = next;
        if next == NIL {
            self.classes.clear(class);
        }
        // A free block's previous block is allocated, so neither header below has PREV_FREE.
        let end = at + size as usize * UNIT;
        let rest = size - want;
        if rest < MIN_UNITS {
            write_u32(buf, at, Header::allocated(size, len).bits());
            if end < chunk_bytes {
                let h = Header::from_bits(read_u32(buf, end));
                write_u32(buf, end, h.with_prev_free(false).bits());
            }
            return Some((addr, size));
        }
        // Split: [want, allocated][rest, free] and the following block, whose PREV_FREE
        // stays set, untouched: the remainder's footer is the old block's.
        write_u32(buf, at, Header::allocated(want, len).bits());
        let rest_at = at + want as usize * UNIT;
        write_free_block(buf, rest_at, rest);
        let rest_class = class_of(rest);
        let rest_head = self.classes.heads[rest_class];
        write_u32(buf, rest_at + Self::NEXT, rest_head);
        self.finish_link(addr + want, rest_class, rest_head);
        Some((addr, want))
    }

    /// Turns the allocated block at `addr` into a free one, merging both neighbours, and
    /// gives the chunk back if it became wholly free. Returns the units the object held.
    ///
    /// The block and both neighbours share a chunk: their headers and the neighbours' links
    /// are read in one visit to the chunk table, and the merged block is written in another.
    /// The previous block is read only when the header's PREV_FREE flag says it is free; its
    /// size is then in its footer, the 4 bytes in front of the header.
    #[inline(always)]
    pub(crate) fn free_block(&mut self, addr: u32) -> u32 {
        let at = self.byte_offset(addr);
        let chunk_bytes = self.chunk_size;
        let buf = self.buf(addr);
        let header = Header::from_bits(read_u32(buf, at));
        let units = header.size();
        let end = at + units as usize * UNIT;
        // A free neighbour's header and list links (next, prev): a free block is at least
        // two units long, so its links lie inside the chunk.
        let after = if end < chunk_bytes { Header::from_bits(read_u32(buf, end)) } else { Header::EDGE };
        let after_links = if after.is_free() { Self::links(buf, end) } else { (NIL, NIL) };
        // Wrapping: only a chunk rewritten behind the pool's back could make these offsets
        // go below 0, and `read_u32` keeps any offset inside the chunk.
        let prev_units = if header.prev_free() { read_u32(buf, at.wrapping_sub(HEADER)) } else { 0 };
        let before_at = at.wrapping_sub(prev_units as usize * UNIT);
        let before = if prev_units != 0 { Header::from_bits(read_u32(buf, before_at)) } else { Header::EDGE };
        let before_links = if before.is_free() { Self::links(buf, before_at) } else { (NIL, NIL) };

        let (mut start, mut size) = (addr, units);
        if after.is_free() {
            self.unlink_read(addr + units, class_of(after.size()), after_links);
            size += after.size();
        }
        if before.is_free() {
            start = addr.wrapping_sub(prev_units);
            // Unlinking `after` may have rewritten the links of `before` (neighbours on one list).
            let before_links =
                if after.is_free() { Self::links(self.buf(start), before_at) } else { before_links };
            self.unlink_read(start, class_of(before.size()), before_links);
            size += before.size();
        }
        if size == self.chunk_units {
            self.release_chunk(start >> self.shift, false);
            return units;
        }
        let start_at = self.byte_offset(start);
        let class = class_of(size);
        let head = self.classes.heads[class];
        let buf = self.buf_mut(start);
        write_free_block(buf, start_at, size);
        write_u32(buf, start_at + Self::NEXT, head);
        // The block after the merged one: if it followed a free `after`, PREV_FREE is
        // already set; otherwise it is `after` itself, whose header was just read.
        if end < chunk_bytes && !after.is_free() {
            write_u32(buf, end, after.with_prev_free(true).bits());
        }
        self.finish_link(start, class, head);
        units
    }

    /// Acquires a chunk and lists it as one free block.
    #[cold]
    fn grow(&mut self) -> Result<(), AllocError> {
        let id = match self.spare_chunks.last() {
            Some(&id) => id,
            None => {
                let id = self.chunks.len();
                // Every address of the new chunk must fit in u32 below NIL.
                if ((id as u64 + 1) << self.shift) > u64::from(NIL) {
                    return Err(AllocError::AddressSpaceExhausted);
                }
                id as u32
            }
        };
        let chunk = self.source.acquire(self.chunk_size).ok_or(AllocError::OutOfMemory)?;
        if chunk.len() != self.chunk_size {
            self.source.release(chunk);
            return Err(AllocError::OutOfMemory);
        }
        let entry = Some(chunk);
        if id as usize == self.chunks.len() {
            self.chunks.push(entry);
        } else {
            self.spare_chunks.pop();
            self.chunks[id as usize] = entry;
        }
        self.counters.chunks_held += 1;
        self.counters.chunks_acquired += 1;
        let addr = id << self.shift;
        self.add_free_block(addr, self.chunk_units);
        Ok(())
    }

    /// Gives chunk `id` (holding no object and no listed block) back to the source.
    pub(crate) fn release_chunk(&mut self, id: u32, compacted: bool) {
        if let Some(buf) = self.chunks[id as usize].take() {
            self.source.release(buf);
        }
        self.spare_chunks.push(id);
        self.counters.chunks_held -= 1;
        let pages = self.chunk_size as u64 / PAGE;
        self.counters.pages_released += pages;
        if compacted {
            self.counters.pages_compacted += pages;
        }
    }
}

impl<S: PageSource> Drop for Pool<S> {
    fn drop(&mut self) {
        for entry in &mut self.chunks {
            if let Some(buf) = entry.take() {
                self.source.release(buf);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::HeapSource;

    /// The pool's own heap: 8 bytes per slot, 16 per chunk-table entry (a boxed slice), 4 per
    /// spare chunk id, all by capacity.
    #[test]
    fn metadata_counts_every_table() {
        let mut pool = Pool::new(HeapSource::new());
        let handles: Vec<Handle> = (0..1000).map(|_| pool.alloc(100).unwrap()).collect();
        // Empty the second chunk, so that its id waits in the spare list.
        let second = pool.slots.iter().position(|s| s.addr >> pool.shift == 1).unwrap();
        let in_second: Vec<Handle> =
            handles.into_iter().filter(|h| pool.slots[h.index as usize].addr >> pool.shift == 1).collect();
        for h in in_second {
            pool.free(h).unwrap();
        }
        assert!(!pool.slots[second].is_live());
        let (slots, chunks, spare) =
            (pool.slots.capacity(), pool.chunks.capacity(), pool.spare_chunks.capacity());
        assert!(slots >= 1000 && chunks >= 7 && spare >= 1, "{slots} {chunks} {spare}");
        assert_eq!(pool.stats().metadata_bytes, (8 * slots + 16 * chunks + 4 * spare) as u64);
    }
}
