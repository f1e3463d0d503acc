//! The compressed page store: `pc_store_*`.

use core::ffi::{CStr, c_char};
use core::slice;

use pagecodec::PAGE_SIZE;
use pagestore::{LoadError, ShardedStore, StoreConfig, StoreError, Summary, TimeUnit};

use crate::codec::{check_page_len, lookup, with_page, with_page_mut};
use crate::error::{Error, PcStatus, decompress_error, guard, guard_value};

/// The store's policies, as `pc_store_create` takes them. Fill it with
/// `pc_store_config_default` and change what you need.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PcStoreConfig {
    /// Shards, each with its own lock and allocator pool: 1..=65536, rounded up to a power
    /// of two. Default 1 (one pool, as zram); more shards let threads work in parallel.
    pub shards: u32,
    /// Non-zero: keep same-filled pages (every u64 word equal) as the value alone.
    /// Default 1.
    pub same_filled: u32,
    /// Streams longer than this many bytes are stored raw ("huge"); the codec gets exactly
    /// this budget. 1..=4096, default 3072.
    pub huge_threshold: u32,
    /// Non-zero: time compression and decompression (TSC ticks on x86_64). Default 1.
    pub timing: u32,
    /// Most bytes the store may hold from its memory source; 0 = no limit (the default).
    pub mem_limit: u64,
}

impl Default for PcStoreConfig {
    fn default() -> Self {
        let d = StoreConfig::default();
        PcStoreConfig {
            shards: 1,
            same_filled: u32::from(d.same_filled),
            huge_threshold: d.huge_threshold as u32,
            timing: u32::from(d.timing),
            mem_limit: d.mem_limit.unwrap_or(0),
        }
    }
}

impl PcStoreConfig {
    fn to_rust(self) -> Result<(usize, StoreConfig), Error> {
        if !(1..=65536).contains(&self.shards) {
            return Err(Error::new(
                PcStatus::PC_ERR_INVALID_ARGUMENT,
                format!("shards is {}; it must be 1..=65536", self.shards),
            ));
        }
        if !(1..=PAGE_SIZE as u32).contains(&self.huge_threshold) {
            return Err(Error::new(
                PcStatus::PC_ERR_INVALID_ARGUMENT,
                format!("huge_threshold is {}; it must be 1..=4096", self.huge_threshold),
            ));
        }
        let mut config = StoreConfig::default()
            .with_same_filled(self.same_filled != 0)
            .with_huge_threshold(self.huge_threshold as usize)
            .with_timing(self.timing != 0);
        if self.mem_limit != 0 {
            config = config.with_mem_limit(self.mem_limit);
        }
        Ok((self.shards as usize, config))
    }
}

/// Count, min, median, mean and max of a series (`pc_summary`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PcSummary {
    /// Samples.
    pub count: u64,
    /// Smallest sample (0 when there is none).
    pub min: u64,
    /// Median, from a log-linear histogram (within 3%).
    pub median: u64,
    /// Mean.
    pub mean: f64,
    /// Largest sample.
    pub max: u64,
}

impl From<Summary> for PcSummary {
    fn from(s: Summary) -> Self {
        PcSummary { count: s.count, min: s.min, median: s.median, mean: s.mean, max: s.max }
    }
}

/// `pc_store_stats.time_unit`: no timings (timing off).
pub const PC_TIME_NONE: u32 = 0;
/// `pc_store_stats.time_unit`: x86_64 time-stamp counter ticks.
pub const PC_TIME_TSC_TICKS: u32 = 1;
/// `pc_store_stats.time_unit`: nanoseconds (off x86_64).
pub const PC_TIME_NANOSECONDS: u32 = 2;

/// Everything a store reports (`pc_store_stats`): zram's `mm_stat` fields, the per-codec
/// statistics table, and the allocator's figures.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PcStoreStats {
    /// Pages currently stored.
    pub pages: u64,
    /// `mm_stat`: bytes of the stored pages before compression (pages x 4096).
    pub orig_data_size: u64,
    /// `mm_stat`: stream bytes (huge pages 4096, same-filled 0).
    pub compr_data_size: u64,
    /// `mm_stat`: bytes held from the memory source.
    pub mem_used_total: u64,
    /// `mm_stat`: the memory limit (0 = none).
    pub mem_limit: u64,
    /// `mm_stat`: peak of `mem_used_total` (sum of the shards' peaks).
    pub mem_used_max: u64,
    /// `mm_stat`: same-filled pages stored.
    pub same_pages: u64,
    /// `mm_stat`: pages given back by compaction.
    pub pages_compacted: u64,
    /// `mm_stat`: pages stored raw.
    pub huge_pages: u64,
    /// The codec's name: a static NUL-terminated string.
    pub codec: *const c_char,
    /// Codec table: stores since the store was made.
    pub stores: u64,
    /// Codec table: same-filled pages among them.
    pub same_filled: u64,
    /// Codec table: pages stored raw among them.
    pub incompressible: u64,
    /// Codec table: streams kept compressed.
    pub compressed_size: PcSummary,
    /// Codec table: every compression attempt's time.
    pub compress_time: PcSummary,
    /// Codec table: decompression times (compressed pages only).
    pub decompress_time: PcSummary,
    /// Unit of the times: `PC_TIME_NONE`, `PC_TIME_TSC_TICKS` or `PC_TIME_NANOSECONDS`.
    pub time_unit: u32,
    /// Shards of the store.
    pub shards: u32,
    /// Codec table: input bytes of the pages compressed.
    pub input_bytes: u64,
    /// Codec table: bytes kept for them (streams, or 4096 for a raw page).
    pub output_bytes: u64,
    /// Codec table: `input_bytes / output_bytes` ("3.8x").
    pub ratio: f64,
    /// Codec table: `output_bytes / input_bytes` (the 2001 paper's 19-36%).
    pub compressed_fraction: f64,
    /// Codec table: share of the non-same-filled stores kept raw.
    pub incompressible_share: f64,
    /// Allocator: payload bytes of the live objects.
    pub pool_payload_bytes: u64,
    /// Allocator: live objects.
    pub pool_objects: u64,
    /// Allocator: chunks held from the memory source.
    pub pool_chunks_held: u64,
    /// Allocator: bytes of its own tables, outside the chunks.
    pub pool_metadata_bytes: u64,
}

/// What `pc_store_compact` did (`pc_compact_report`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PcCompactReport {
    /// Objects moved to another chunk.
    pub objects_moved: u64,
    /// Payload bytes copied.
    pub bytes_moved: u64,
    /// Chunks given back to the memory source.
    pub chunks_released: u64,
    /// 4 KiB pages given back to the memory source.
    pub pages_released: u64,
}

/// A compressed page store: `pc_store` in C, opaque. Made by `pc_store_create`, freed by
/// `pc_store_destroy`.
pub struct PcStore {
    store: ShardedStore,
    codec: &'static CStr,
}

/// Fills `*config` with the defaults: 1 shard, same-filled pages on, huge threshold 3072,
/// timing off, no memory limit. NULL is ignored.
///
/// Thread-safe.
///
/// # Safety
///
/// `config` is NULL or valid for writing a `pc_store_config`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pc_store_config_default(config: *mut PcStoreConfig) {
    if !config.is_null() {
        // SAFETY: non-NULL and writable by the caller's guarantee.
        unsafe { config.write(PcStoreConfig::default()) };
    }
}

/// Makes a store whose pages are compressed with the codec named `codec_name` (any
/// 4 KiB codec: not `wkdm16k`) under `config` (NULL: the defaults), and stores it in
/// `*store`; free it with `pc_store_destroy`.
///
/// Errors: `PC_ERR_NULL_POINTER`, `PC_ERR_UNKNOWN_CODEC`, `PC_ERR_INVALID_ARGUMENT` (a
/// codec the store cannot use, a configuration value out of range). Thread-safe.
///
/// # Safety
///
/// `codec_name` is NULL or NUL-terminated; `config` is NULL or points to a
/// `pc_store_config`; `store` is NULL or valid for writing a pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pc_store_create(
    codec_name: *const c_char,
    config: *const PcStoreConfig,
    store: *mut *mut PcStore,
) -> PcStatus {
    guard(|| {
        if store.is_null() {
            return Err(Error::null("store"));
        }
        // SAFETY: the caller guarantees a NULL or NUL-terminated name.
        let info = unsafe { lookup(codec_name) }?;
        let make = info.store.ok_or_else(|| {
            Error::new(
                PcStatus::PC_ERR_INVALID_ARGUMENT,
                format!("codec {:?} does not work on the store's 4 KiB pages", info.name.to_string_lossy()),
            )
        })?;
        // SAFETY: the caller guarantees NULL or a readable configuration.
        let config = unsafe { config.as_ref() }.copied().unwrap_or_default();
        let (shards, config) = config.to_rust()?;
        let value =
            Box::new(PcStore { store: ShardedStore::new(shards, Box::new(make), config), codec: info.name });
        // SAFETY: non-NULL and writable by the caller's guarantee.
        unsafe { store.write(Box::into_raw(value)) };
        Ok(())
    })
}

/// Frees a store and every page in it. NULL is ignored.
///
/// Not thread-safe for the same store: no other call may use it at the same time or after.
///
/// # Safety
///
/// `store` is NULL or a pointer from `pc_store_create` not yet destroyed.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pc_store_destroy(store: *mut PcStore) {
    guard_value((), || {
        if !store.is_null() {
            // SAFETY: the caller guarantees the pointer came from `Box::into_raw` in
            // `pc_store_create` and is freed once.
            drop(unsafe { Box::from_raw(store) });
        }
    });
}

/// The live store behind `store`.
///
/// # Safety
///
/// `store` is NULL or a live store from `pc_store_create`.
unsafe fn live<'a>(store: *const PcStore) -> Result<&'a PcStore, Error> {
    // SAFETY: the caller guarantees NULL or a live store; `ShardedStore` is `Sync`, so a
    // shared reference may exist on many threads at once.
    unsafe { store.as_ref() }.ok_or_else(|| Error::null("store"))
}

/// Checks a page pointer and length.
fn page_args(page: *const u8, page_len: usize) -> Result<(), Error> {
    if page.is_null() {
        return Err(Error::null("page"));
    }
    check_page_len(page_len, PAGE_SIZE)
}

/// Stores the 4 KiB page `page` under `key`, replacing any older page.
///
/// Errors: `PC_ERR_NULL_POINTER`, `PC_ERR_PAGE_SIZE` (`page_len` is not 4096),
/// `PC_ERR_FULL` (memory limit), `PC_ERR_OUT_OF_MEMORY`; after an error every page stored
/// before, an older page under `key` included, is intact.
///
/// Thread-safe: any number of threads may store, load, remove, compact and read
/// statistics on one store at once.
///
/// # Safety
///
/// `store` is NULL or a live store; `page` is NULL or valid for reads of `page_len` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pc_store_store(
    store: *const PcStore,
    key: u64,
    page: *const u8,
    page_len: usize,
) -> PcStatus {
    guard(|| {
        // SAFETY: the caller guarantees a NULL or live store.
        let store = unsafe { live(store) }?;
        page_args(page, page_len)?;
        // SAFETY: non-NULL, and the caller guarantees 4096 (= `page_len`) readable bytes.
        let bytes = unsafe { slice::from_raw_parts(page, PAGE_SIZE) };
        with_page(bytes, |p| store.store.store(key, p)).map_err(|e| match e {
            StoreError::Full => Error::plain(PcStatus::PC_ERR_FULL),
            StoreError::OutOfMemory => Error::plain(PcStatus::PC_ERR_OUT_OF_MEMORY),
            _ => Error::new(PcStatus::PC_ERR_OUT_OF_MEMORY, e.to_string()),
        })
    })
}

/// Loads the page stored under `key` into the 4 KiB buffer `page` (which is filled whole).
///
/// Errors: `PC_ERR_NULL_POINTER`, `PC_ERR_PAGE_SIZE`, `PC_ERR_NOT_FOUND` (nothing
/// written), and a stream error code if the stored stream no longer decodes (memory
/// corruption; the page is then all zero bytes).
///
/// Thread-safe.
///
/// # Safety
///
/// `store` is NULL or a live store; `page` is NULL or valid for writes of `page_len` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pc_store_load(
    store: *const PcStore,
    key: u64,
    page: *mut u8,
    page_len: usize,
) -> PcStatus {
    guard(|| {
        // SAFETY: the caller guarantees a NULL or live store.
        let store = unsafe { live(store) }?;
        page_args(page, page_len)?;
        // SAFETY: non-NULL, and the caller guarantees 4096 (= `page_len`) writable bytes
        // that nothing else accesses during the call.
        let bytes = unsafe { slice::from_raw_parts_mut(page, PAGE_SIZE) };
        let result = with_page_mut(bytes, |p| store.store.load(key, p));
        result.map_err(|e| match e {
            LoadError::NotFound => {
                Error::new(PcStatus::PC_ERR_NOT_FOUND, format!("no page is stored under key {key}"))
            }
            LoadError::Corrupt(d) => {
                bytes.fill(0);
                decompress_error(d, format!("stored page {key} does not decompress: {d}"))
            }
            _ => Error::new(PcStatus::PC_ERR_CORRUPT, e.to_string()),
        })
    })
}

/// Removes the page stored under `key`.
///
/// Errors: `PC_ERR_NULL_POINTER`, `PC_ERR_NOT_FOUND`. Thread-safe.
///
/// # Safety
///
/// `store` is NULL or a live store.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pc_store_remove(store: *const PcStore, key: u64) -> PcStatus {
    guard(|| {
        // SAFETY: the caller guarantees a NULL or live store.
        let store = unsafe { live(store) }?;
        if store.store.remove(key) {
            Ok(())
        } else {
            Err(Error::new(PcStatus::PC_ERR_NOT_FOUND, format!("no page is stored under key {key}")))
        }
    })
}

/// Compacts the store's allocator (moves streams out of sparse chunks and gives memory
/// back) and, if `report` is not NULL, says what moved.
///
/// Errors: `PC_ERR_NULL_POINTER` (store). Thread-safe (shards are compacted one at a time,
/// each under its lock).
///
/// # Safety
///
/// `store` is NULL or a live store; `report` is NULL or valid for writing a
/// `pc_compact_report`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pc_store_compact(store: *const PcStore, report: *mut PcCompactReport) -> PcStatus {
    guard(|| {
        // SAFETY: the caller guarantees a NULL or live store.
        let store = unsafe { live(store) }?;
        let r = store.store.compact();
        if !report.is_null() {
            let value = PcCompactReport {
                objects_moved: r.objects_moved,
                bytes_moved: r.bytes_moved,
                chunks_released: r.chunks_released,
                pages_released: r.pages_released,
            };
            // SAFETY: non-NULL and writable by the caller's guarantee.
            unsafe { report.write(value) };
        }
        Ok(())
    })
}

/// Writes the store's statistics into `*stats`.
///
/// Errors: `PC_ERR_NULL_POINTER`. Thread-safe (each shard is read under its lock, one
/// after the other: under concurrent changes the sums are of moments close together, not
/// one instant).
///
/// # Safety
///
/// `store` is NULL or a live store; `stats` is NULL or valid for writing a
/// `pc_store_stats`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pc_store_get_stats(store: *const PcStore, stats: *mut PcStoreStats) -> PcStatus {
    guard(|| {
        // SAFETY: the caller guarantees a NULL or live store.
        let store = unsafe { live(store) }?;
        if stats.is_null() {
            return Err(Error::null("stats"));
        }
        let s = store.store.stats();
        let c = &s.codec;
        let value = PcStoreStats {
            pages: s.pages,
            orig_data_size: s.mm.orig_data_size,
            compr_data_size: s.mm.compr_data_size,
            mem_used_total: s.mm.mem_used_total,
            mem_limit: s.mm.mem_limit,
            mem_used_max: s.mm.mem_used_max,
            same_pages: s.mm.same_pages,
            pages_compacted: s.mm.pages_compacted,
            huge_pages: s.mm.huge_pages,
            codec: store.codec.as_ptr(),
            stores: c.pages,
            same_filled: c.same_filled,
            incompressible: c.incompressible,
            compressed_size: c.compressed_size.into(),
            compress_time: c.compress_time.into(),
            decompress_time: c.decompress_time.into(),
            time_unit: match c.time_unit {
                TimeUnit::TscTicks => PC_TIME_TSC_TICKS,
                TimeUnit::Nanoseconds => PC_TIME_NANOSECONDS,
                _ => PC_TIME_NONE,
            },
            shards: store.store.shards() as u32,
            input_bytes: c.input_bytes,
            output_bytes: c.output_bytes,
            ratio: c.ratio(),
            compressed_fraction: c.compressed_fraction(),
            incompressible_share: c.incompressible_share(),
            pool_payload_bytes: s.pool.payload_bytes,
            pool_objects: s.pool.objects,
            pool_chunks_held: s.pool.chunks_held,
            pool_metadata_bytes: s.pool.metadata_bytes,
        };
        // SAFETY: non-NULL and writable by the caller's guarantee.
        unsafe { stats.write(value) };
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_defaults_follow_the_rust_store() {
        let (shards, config) = PcStoreConfig::default().to_rust().unwrap();
        assert_eq!(shards, 1);
        assert_eq!(config, StoreConfig::default());
        let bad = PcStoreConfig { shards: 0, ..PcStoreConfig::default() };
        assert_eq!(bad.to_rust().unwrap_err().status, PcStatus::PC_ERR_INVALID_ARGUMENT);
        let bad = PcStoreConfig { huge_threshold: 4097, ..PcStoreConfig::default() };
        assert_eq!(bad.to_rust().unwrap_err().status, PcStatus::PC_ERR_INVALID_ARGUMENT);
        let limited = PcStoreConfig { mem_limit: 1 << 20, ..PcStoreConfig::default() };
        assert_eq!(limited.to_rust().unwrap().1.mem_limit, Some(1 << 20));
    }
}
