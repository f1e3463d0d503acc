//! Statistics: zram's `mm_stat` and the per-codec statistics table of the 2001 Linux compressed-cache paper.

use crate::TimeUnit;
use crate::histogram::Histogram;

/// Count, min, median, mean and max of a series of samples.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct Summary {
    /// Samples.
    pub count: u64,
    /// Smallest sample (0 when there are none).
    pub min: u64,
    /// Median, to within ~3% (a bounded histogram keeps the distribution).
    pub median: u64,
    /// Arithmetic mean.
    pub mean: f64,
    /// Largest sample.
    pub max: u64,
}

/// zram's `mm_stat` fields for the pages currently stored.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct MmStat {
    /// Bytes of the stored pages before compression (pages x 4096, same-filled included).
    pub orig_data_size: u64,
    /// Bytes of the stored streams (huge pages count 4096, same-filled pages 0).
    pub compr_data_size: u64,
    /// Bytes held from the page source (the allocator's chunks).
    pub mem_used_total: u64,
    /// The memory limit (0 = none).
    pub mem_limit: u64,
    /// Peak of `mem_used_total` (for a `ShardedStore`, the sum of the shards' peaks: an
    /// upper bound).
    pub mem_used_max: u64,
    /// Same-filled pages (kept as their value alone).
    pub same_pages: u64,
    /// 4 KiB pages given back to the source by compaction.
    pub pages_compacted: u64,
    /// Pages stored raw because they compressed to more than the huge threshold.
    pub huge_pages: u64,
}

/// The statistics table of the 2001 Linux compressed-cache paper (Linux 2.4), cumulative over every store
/// and load since the store was made (not only the pages currently stored).
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub struct CodecStats {
    /// The codec's name.
    pub codec: &'static str,
    /// Pages handed to `store` (same-filled ones included).
    pub pages: u64,
    /// Pages detected same-filled (not compressed).
    pub same_filled: u64,
    /// Sizes of the streams that were kept compressed (bytes).
    pub compressed_size: Summary,
    /// Compression time per page (every compression attempt, huge ones included).
    pub compress_time: Summary,
    /// Decompression time per page (compressed pages only).
    pub decompress_time: Summary,
    /// The unit of the timings ([`TimeUnit::None`] when timing is off).
    pub time_unit: TimeUnit,
    /// Pages that did not compress under the huge threshold ("discarded" in the paper's
    /// table, stored raw here).
    pub incompressible: u64,
    /// Pages kept compressed by each variant of the codec (`[first, fallback]` for a
    /// hybrid; index 0 only for a plain codec).
    pub by_variant: [u64; 2],
    /// Input bytes of the compressed-or-huge pages (4096 each).
    pub input_bytes: u64,
    /// Bytes those pages occupy as stored (stream length, or 4096 for huge pages).
    pub output_bytes: u64,
}

impl CodecStats {
    /// Compression ratio `input / output` over the pages that went through the codec
    /// (e.g. 3.8 for 3.8x); 1.0 when there were none.
    pub fn ratio(&self) -> f64 {
        if self.output_bytes == 0 { 1.0 } else { self.input_bytes as f64 / self.output_bytes as f64 }
    }

    /// The paper's "compression ratio": `output / input` (19-36% in 2001).
    pub fn compressed_fraction(&self) -> f64 {
        if self.input_bytes == 0 { 1.0 } else { self.output_bytes as f64 / self.input_bytes as f64 }
    }

    /// Share of the compressed-or-huge pages that were incompressible.
    pub fn incompressible_share(&self) -> f64 {
        let attempts = self.pages - self.same_filled;
        if attempts == 0 { 0.0 } else { self.incompressible as f64 / attempts as f64 }
    }
}

/// Everything a store reports, see [`PageStore::stats`](crate::PageStore::stats).
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub struct StoreStats {
    /// Pages currently stored.
    pub pages: u64,
    /// zram's memory statistics.
    pub mm: MmStat,
    /// The paper's per-codec table.
    pub codec: CodecStats,
    /// The allocator's own statistics (payload, allocated, held bytes, ...).
    pub pool: xvmalloc::PoolStats,
    /// Per-codec-slot recompression figures and the backing store's `bd_stat`.
    pub tiers: TierStats,
}

/// One codec slot's figures (slot 0 = the primary codec, 1-3 = secondary codecs).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct SlotStats {
    /// The codec's name (empty when the slot has no codec).
    pub codec: &'static str,
    /// Pages now in memory whose stream this codec wrote (huge pages not included).
    pub pages: u64,
    /// Bytes of those streams.
    pub compr_bytes: u64,
    /// Pages [`recompress`](crate::PageStore::recompress) handed to this codec.
    pub recompress_attempts: u64,
    /// Of those, pages whose new stream was smaller and replaced the old one.
    pub recompressed: u64,
    /// Of those, pages that were huge (stored raw) before.
    pub left_huge: u64,
    /// Bytes of stream saved by those replacements (old minus new size).
    pub bytes_saved: u64,
    /// Total time of the attempts (decode of the old stream + compression), in the
    /// store's [`TimeUnit`]; 0 when timing is off.
    pub recompress_time: u64,
}

/// zram's `bd_stat` and more: the backing store's counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct BdStat {
    /// Pages now on the backing store (zram's `bd_count`, in pages).
    pub pages: u64,
    /// Slots read back for loads (and verification) that succeeded.
    pub reads: u64,
    /// Slots written.
    pub writes: u64,
    /// Reads the backing store failed (an I/O error or a short read).
    pub read_failures: u64,
    /// Writes or flushes the backing store failed (the pages stayed in memory).
    pub write_failures: u64,
    /// Slots read back whose bytes did not match their checksum.
    pub checksum_failures: u64,
    /// Slots holding a page.
    pub slots_used: u64,
    /// Most slots ever used at once plus the free ones below them: the file's extent.
    pub slots_high: u64,
    /// The backing store's capacity in slots (0 = no backing store).
    pub capacity: u64,
}

/// Recompression per codec slot and the backing store.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct TierStats {
    /// Index = codec slot (0 = the primary codec).
    pub codecs: [SlotStats; 4],
    /// The backing store's counters.
    pub backing: BdStat,
}

impl TierStats {
    #[cfg_attr(not(feature = "std"), allow(dead_code))]
    pub(crate) fn merge(&mut self, other: &TierStats) {
        for (a, b) in self.codecs.iter_mut().zip(other.codecs.iter()) {
            if a.codec.is_empty() {
                a.codec = b.codec;
            }
            a.pages += b.pages;
            a.compr_bytes += b.compr_bytes;
            a.recompress_attempts += b.recompress_attempts;
            a.recompressed += b.recompressed;
            a.left_huge += b.left_huge;
            a.bytes_saved += b.bytes_saved;
            a.recompress_time += b.recompress_time;
        }
        self.backing.pages += other.backing.pages;
    }
}

/// Cumulative operation records (histograms are allocated once, bounded).
#[derive(Clone, Debug)]
pub(crate) struct OpRecorder {
    pub(crate) pages: u64,
    pub(crate) same_filled: u64,
    pub(crate) incompressible: u64,
    pub(crate) by_variant: [u64; 2],
    pub(crate) input_bytes: u64,
    pub(crate) output_bytes: u64,
    pub(crate) sizes: Histogram,
    pub(crate) compress: Histogram,
    pub(crate) decompress: Histogram,
}

/// What compressing one page gave, recorded once the store holds its lock.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Outcome {
    Same,
    Compressed { len: usize, variant: u8, time: Option<u64> },
    Huge { time: Option<u64> },
}

impl OpRecorder {
    pub(crate) fn new() -> Self {
        OpRecorder {
            pages: 0,
            same_filled: 0,
            incompressible: 0,
            by_variant: [0; 2],
            input_bytes: 0,
            output_bytes: 0,
            sizes: Histogram::new(),
            compress: Histogram::new(),
            decompress: Histogram::new(),
        }
    }

    pub(crate) fn record_store(&mut self, outcome: Outcome) {
        self.pages += 1;
        match outcome {
            Outcome::Same => self.same_filled += 1,
            Outcome::Compressed { len, variant, time } => {
                self.sizes.record(len as u64);
                self.by_variant[usize::from(variant.min(1))] += 1;
                self.input_bytes += pagecodec::PAGE_SIZE as u64;
                self.output_bytes += len as u64;
                if let Some(t) = time {
                    self.compress.record(t);
                }
            }
            Outcome::Huge { time } => {
                self.incompressible += 1;
                self.input_bytes += pagecodec::PAGE_SIZE as u64;
                self.output_bytes += pagecodec::PAGE_SIZE as u64;
                if let Some(t) = time {
                    self.compress.record(t);
                }
            }
        }
    }

    pub(crate) fn record_decompress(&mut self, time: u64) {
        self.decompress.record(time);
    }

    #[cfg_attr(not(feature = "std"), allow(dead_code))]
    pub(crate) fn merge(&mut self, other: &OpRecorder) {
        self.pages += other.pages;
        self.same_filled += other.same_filled;
        self.incompressible += other.incompressible;
        self.by_variant[0] += other.by_variant[0];
        self.by_variant[1] += other.by_variant[1];
        self.input_bytes += other.input_bytes;
        self.output_bytes += other.output_bytes;
        self.sizes.merge(&other.sizes);
        self.compress.merge(&other.compress);
        self.decompress.merge(&other.decompress);
    }

    pub(crate) fn table(&self, codec: &'static str, timing: bool) -> CodecStats {
        CodecStats {
            codec,
            pages: self.pages,
            same_filled: self.same_filled,
            compressed_size: self.sizes.summary(),
            compress_time: self.compress.summary(),
            decompress_time: self.decompress.summary(),
            time_unit: if timing { crate::timing::CLOCK_UNIT } else { TimeUnit::None },
            incompressible: self.incompressible,
            by_variant: self.by_variant,
            input_bytes: self.input_bytes,
            output_bytes: self.output_bytes,
        }
    }
}
