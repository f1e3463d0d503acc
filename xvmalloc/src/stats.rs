//! Pool statistics and compaction reports.

/// A snapshot of a pool's memory use, see [`Pool::stats`](crate::Pool::stats).
///
/// Three byte counts are kept apart on purpose (zram users are confused when they are mixed
/// up): what callers asked for (`payload_bytes`), what the allocator carved for it
/// (`allocated_bytes`: payload + 4-byte headers + rounding to 8 bytes) and what it holds
/// from its [`PageSource`](crate::PageSource) (`held_bytes`: whole chunks).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct PoolStats {
    /// Sum of the live objects' lengths.
    pub payload_bytes: u64,
    /// Bytes of the blocks holding live objects (payload + headers + rounding).
    pub allocated_bytes: u64,
    /// Bytes of the chunks held from the source.
    pub held_bytes: u64,
    /// Live objects.
    pub objects: u64,
    /// Chunks held from the source.
    pub chunks_held: u64,
    /// The chunk size in bytes.
    pub chunk_size: u64,
    /// Chunks acquired from the source since the pool was made.
    pub chunks_acquired: u64,
    /// 4 KiB pages given back to the source since the pool was made (by `free` and by
    /// `compact`).
    pub pages_released: u64,
    /// 4 KiB pages given back by [`compact`](crate::Pool::compact) (zram's
    /// `pages_compacted`).
    pub pages_compacted: u64,
    /// Objects moved by compaction since the pool was made.
    pub objects_moved: u64,
    /// Heap bytes of the pool's own tables (slot table and chunk table), which live outside
    /// the chunks: about 8 bytes per slot.
    pub metadata_bytes: u64,
}

impl PoolStats {
    /// `payload_bytes / held_bytes`, 1.0 for an empty pool.
    pub fn efficiency(&self) -> f64 {
        if self.held_bytes == 0 { 1.0 } else { self.payload_bytes as f64 / self.held_bytes as f64 }
    }
}

/// What one [`compact`](crate::Pool::compact) call did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct CompactReport {
    /// Objects moved to another chunk (their handles stay valid).
    pub objects_moved: u64,
    /// Payload bytes copied.
    pub bytes_moved: u64,
    /// Chunks given back to the source.
    pub chunks_released: u64,
    /// 4 KiB pages given back to the source.
    pub pages_released: u64,
}

#[cfg(test)]
mod tests {
    use super::PoolStats;

    #[test]
    fn efficiency_is_payload_over_held_bytes() {
        assert_eq!(PoolStats::default().efficiency(), 1.0);
        let stats = PoolStats { payload_bytes: 3000, held_bytes: 16384, ..PoolStats::default() };
        assert_eq!(stats.efficiency(), 3000.0 / 16384.0);
    }
}
