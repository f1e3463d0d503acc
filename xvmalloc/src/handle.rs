//! Object handles.

/// Names one object in a [`Pool`](crate::Pool): 8 bytes, `Copy`.
///
/// A handle indexes the pool's slot table, which maps it to the object's current place, so
/// it stays valid when [`compact`](crate::Pool::compact) moves the object. It also carries
/// the slot's generation, which changes when its object is freed, and the pool's tag: a
/// handle kept after `free`, forged, or given to another pool is refused with
/// [`HandleError::Stale`](crate::HandleError::Stale) rather than reaching another object.
/// A slot whose generations run out (after about half a million reuses) is retired, never
/// reused, so a stale handle can never match again. Tags repeat only after 4095 pools
/// have been created in one process.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Handle {
    pub(crate) index: u32,
    pub(crate) generation: u32,
}

impl Handle {
    /// The index of the handle's slot in the pool's table; with
    /// [`Pool::handle_at`](crate::Pool::handle_at) it gives the handle back while the
    /// object lives.
    pub const fn index(self) -> u32 {
        self.index
    }

    /// The handle as 64 bits (slot index in the low half, generation in the high half), for
    /// callers that pack handles into their own tables.
    pub const fn to_bits(self) -> u64 {
        (self.generation as u64) << 32 | self.index as u64
    }

    /// The handle with bits from [`to_bits`](Self::to_bits). Any value is accepted: the
    /// pool checks every handle it is given.
    pub const fn from_bits(bits: u64) -> Self {
        Handle { index: bits as u32, generation: (bits >> 32) as u32 }
    }
}

const _: () = assert!(core::mem::size_of::<Handle>() == 8);

/// The address of a *direct* object: one allocated without a slot
/// ([`Pool::alloc_direct`](crate::Pool::alloc_direct)), for owners that keep track of their
/// objects themselves and want no per-object table in the pool. 4 bytes, `Copy`.
///
/// An address is checked only loosely (its chunk is held and it starts an allocated direct
/// block of a plausible size): the pool cannot tell an address into another object's bytes
/// from a real one, so the owner must keep exact addresses, and update them when
/// [`compact_with`](crate::Pool::compact_with) moves objects. A wrong address can corrupt
/// the pool's bookkeeping (wrong bytes, failed allocations), never memory outside its chunks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Addr(pub(crate) u32);

impl Addr {
    /// The address as 32 bits, for owners that pack it into their own tables.
    pub const fn to_bits(self) -> u32 {
        self.0
    }

    /// The address with bits from [`to_bits`](Self::to_bits).
    pub const fn from_bits(bits: u32) -> Self {
        Addr(bits)
    }
}
