//! `pagebench swap`: the workloads of the 2001 compressed-cache paper run for real over a
//! `uswap` region (Linux, userfaultfd), every page checked on every read, next to what
//! `simulate` predicts for the same workload and RAM.

use std::collections::HashMap;
use std::time::Instant;

use pagecodec::{PAGE_SIZE, Page};
use pagestore::{CodecFactory, SendCodec};
use serde::Serialize;
use uswap::{Region, RegionConfig};

use crate::simulate::{Memory, Workload, fingerprint, key_to_page, region_pages, replay};

/// The store codec behind `name` for a region: wkdm, lzo-rle, lzo, lz4-page or hybrid.
///
/// # Errors
///
/// An unknown name, with the known ones.
pub fn factory(name: &str) -> Result<CodecFactory, String> {
    let make: fn() -> SendCodec = match name {
        "wkdm" => || Box::new(wkdm::Wkdm::default()),
        "lzo-rle" => || Box::new(lzokit::LzoRle::default()),
        "lzo" => || Box::new(lzokit::Lzo1x::default()),
        "lz4-page" => || Box::new(pagecodec_adapters::Lz4::new()),
        "hybrid" => || Box::new(crate::codecs::hybrid()),
        _ => {
            return Err(format!(
                "unknown codec {name:?} for swap; known: wkdm, lzo-rle, lzo, lz4-page, hybrid"
            ));
        }
    };
    Ok(Box::new(make))
}

/// Memory a workload's pages live in: a uswap region, or plain anonymous memory (the
/// kernel's own swapping, `--kernel-zram`).
pub trait Bytes {
    /// Copies `buf.len()` bytes from `offset`.
    ///
    /// # Errors
    ///
    /// Out of range, or the memory failed.
    fn read_at(&self, offset: usize, buf: &mut [u8]) -> Result<(), String>;
    /// Copies `data` to `offset`.
    ///
    /// # Errors
    ///
    /// Out of range, or the memory failed.
    fn write_at(&mut self, offset: usize, data: &[u8]) -> Result<(), String>;
}

impl Bytes for Region {
    fn read_at(&self, offset: usize, buf: &mut [u8]) -> Result<(), String> {
        self.read(offset, buf).map_err(|e| e.to_string())
    }
    fn write_at(&mut self, offset: usize, data: &[u8]) -> Result<(), String> {
        self.write(offset, data).map_err(|e| e.to_string())
    }
}

/// Zeroed heap memory that the kernel maps page by page as it is touched.
pub struct Anonymous(Vec<u8>);

impl Anonymous {
    /// `len` bytes, all zero, none touched yet.
    pub fn new(len: usize) -> Anonymous {
        // `vec![0; n]` asks the allocator for zeroed memory: a fresh mapping, untouched.
        Anonymous(vec![0u8; len])
    }
}

impl Bytes for Anonymous {
    fn read_at(&self, offset: usize, buf: &mut [u8]) -> Result<(), String> {
        let src = self.0.get(offset..offset + buf.len()).ok_or("read out of range")?;
        buf.copy_from_slice(src);
        Ok(())
    }
    fn write_at(&mut self, offset: usize, data: &[u8]) -> Result<(), String> {
        self.0.get_mut(offset..offset + data.len()).ok_or("write out of range")?.copy_from_slice(data);
        Ok(())
    }
}

/// A workload's memory: each key a page, each read checked against the fingerprint of what
/// was last written there (zeros if never written).
pub struct Checked<B: Bytes> {
    /// Where the pages are.
    pub bytes: B,
    region_pages: usize,
    page: Page,
    truth: HashMap<u64, u64>,
    zero: u64,
}

impl<B: Bytes> Checked<B> {
    /// Pages of `bytes` laid out as four regions of `region_pages` pages.
    pub fn new(bytes: B, region_pages: usize) -> Self {
        let zero = fingerprint(&Page::zeroed());
        Checked { bytes, region_pages, page: Page::zeroed(), truth: HashMap::new(), zero }
    }
}

impl<B: Bytes> Memory for Checked<B> {
    fn read(&mut self, key: u64) -> Result<&Page, String> {
        let at = key_to_page(key, self.region_pages) * PAGE_SIZE;
        self.bytes.read_at(at, self.page.as_bytes_mut())?;
        let want = self.truth.get(&key).copied().unwrap_or(self.zero);
        if fingerprint(&self.page) != want {
            return Err(format!("page {key:#x} came back with other bytes than last written"));
        }
        Ok(&self.page)
    }

    fn write(&mut self, key: u64, write: &mut dyn FnMut(&mut Page)) -> Result<(), String> {
        self.read(key)?;
        write(&mut self.page);
        let at = key_to_page(key, self.region_pages) * PAGE_SIZE;
        self.bytes.write_at(at, self.page.as_bytes())?;
        self.truth.insert(key, fingerprint(&self.page));
        Ok(())
    }
}

/// What one `swap` run measured.
#[derive(Clone, Debug, Serialize)]
pub struct SwapReport {
    /// The workload.
    pub workload: Workload,
    /// Resident limit, MiB.
    pub ram_mb: usize,
    /// The store's codec.
    pub codec: String,
    /// Most pages brought in per fault.
    pub readahead: usize,
    /// Wall time of the workload, seconds.
    pub seconds: f64,
    /// Pages brought back from the store (readahead included).
    pub swap_ins: u64,
    /// Missing-page faults on pages in the store.
    pub store_faults: u64,
    /// Pages stored and dropped.
    pub swap_outs: u64,
    /// Missing-page faults on pages never written, resolved with zeros.
    pub zero_fills: u64,
    /// Pages brought in ahead of an access (from the store or zeros).
    pub readahead_pages: u64,
    /// Writes that met a page being stored.
    pub wp_faults: u64,
    /// Fault handling, ns: median, p99, max.
    pub fault_ns: [u64; 3],
    /// Bytes the store holds from its page source at the end.
    pub mem_used_total: u64,
    /// Stream bytes at the end.
    pub compr_data_size: u64,
    /// `simulate`'s pswpin and pswpout for the same workload, RAM and codec.
    pub predicted: [u64; 2],
}

/// Runs `workload` with `ram_mb` MiB resident over a region compressing with `codec`,
/// bringing in up to `readahead` pages per fault.
///
/// # Errors
///
/// No userfaultfd, an unknown codec, or a page that came back wrong.
pub fn swap(workload: Workload, ram_mb: usize, codec: &str, readahead: usize) -> Result<SwapReport, String> {
    let ram_pages = ram_mb * 256;
    let per_region = region_pages(workload, ram_pages);
    let mut config = RegionConfig::new(ram_pages, factory(codec)?);
    config.shards = 4;
    config.readahead = readahead;
    let region = Region::new(4 * per_region, config).map_err(|e| e.to_string())?;
    let mut memory = Checked::new(region, per_region);
    let start = Instant::now();
    replay(&mut memory, workload, ram_pages)?;
    let seconds = start.elapsed().as_secs_f64();
    let stats = memory.bytes.stats();
    let timer = crate::timing::Timer::new();
    let prediction = match codec {
        "hybrid" => crate::simulate::simulate(crate::codecs::hybrid(), workload, ram_mb, &timer),
        name => {
            let codec = crate::codecs::by_name(name).ok_or_else(|| format!("unknown codec {name:?}"))?;
            crate::simulate::simulate(codec, workload, ram_mb, &timer)
        }
    }?;
    Ok(SwapReport {
        workload,
        ram_mb,
        codec: codec.into(),
        readahead,
        seconds,
        swap_ins: stats.swap_ins,
        store_faults: stats.faults_from_store,
        swap_outs: stats.swap_outs,
        zero_fills: stats.zero_fills,
        readahead_pages: stats.readahead,
        wp_faults: stats.wp_faults,
        fault_ns: [stats.fault_latency.median, stats.fault_latency.p99, stats.fault_latency.max],
        mem_used_total: stats.store.mm.mem_used_total,
        compr_data_size: stats.store.mm.compr_data_size,
        predicted: [prediction.counters.pswpin, prediction.counters.pswpout],
    })
}

impl SwapReport {
    /// One line per figure, the prediction beside the measured swaps.
    pub fn render(&self) -> String {
        format!(
            "{:?} with {} MiB resident, {}, readahead {}: {:.3} s, every page read checked\n\
             swap-ins {} (simulate predicts {}), swap-outs {} (predicts {}); faults: {} on stored \
             pages, {} zero fills, {} write-protect; {} pages read ahead\n\
             fault handling ns: median {} p99 {} max {} (reading the fault to resolving it, \
             eviction included)\n\
             store at the end: compr_data_size {} mem_used_total {}\n",
            self.workload,
            self.ram_mb,
            self.codec,
            self.readahead,
            self.seconds,
            self.swap_ins,
            self.predicted[0],
            self.swap_outs,
            self.predicted[1],
            self.store_faults,
            self.zero_fills,
            self.wp_faults,
            self.readahead_pages,
            self.fault_ns[0],
            self.fault_ns[1],
            self.fault_ns[2],
            self.compr_data_size,
            self.mem_used_total
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_pages_from_three_threads_stay_intact() {
        let report = random(3, 1, "wkdm", 16).unwrap_or_else(|e| panic!("{e}"));
        assert!(report.swap_outs > 0 && report.swap_ins > 0, "{report:?}");
    }

    #[test]
    fn fillmem_runs_for_real_with_every_page_checked() {
        let report =
            swap(Workload::Fillmem, 1, "lzo-rle", 16).unwrap_or_else(|e| panic!("needs userfaultfd: {e}"));
        assert!(report.swap_outs > 0 && report.swap_ins > 0, "{report:?}");
        assert!(factory("nope").is_err());
    }
}

/// What the multi-threaded random workload measured.
#[derive(Clone, Debug, Serialize)]
pub struct RandomReport {
    /// Threads.
    pub threads: usize,
    /// Resident limit, MiB.
    pub ram_mb: usize,
    /// The store's codec.
    pub codec: String,
    /// Reads and writes done (each a whole page, each read checked).
    pub accesses: u64,
    /// Wall time, seconds.
    pub seconds: f64,
    /// Pages brought back from the store.
    pub swap_ins: u64,
    /// Pages stored and dropped.
    pub swap_outs: u64,
    /// Writes that met a page being stored.
    pub wp_faults: u64,
    /// Fault handling, ns: median, p99, max.
    pub fault_ns: [u64; 3],
}

/// `threads` threads reading and writing random pages of a region twice the resident limit
/// (each thread owns the pages `p % threads == t`, so no two write the same bytes), each
/// page's content derived from its number and version and checked on every read.
///
/// # Errors
///
/// No userfaultfd, an unknown codec, or a page that came back wrong.
pub fn random(threads: usize, ram_mb: usize, codec: &str, readahead: usize) -> Result<RandomReport, String> {
    let threads = threads.max(1);
    let resident = ram_mb * 256;
    let pages = 2 * resident;
    let mut config = RegionConfig::new(resident, factory(codec)?);
    config.readahead = readahead;
    let region = Region::new(pages, config).map_err(|e| e.to_string())?;
    let base = region.as_ptr() as usize;
    let per_thread = 4 * pages as u64 / threads as u64;
    let start = Instant::now();
    let failures: Vec<String> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|t| {
                s.spawn(move || -> Result<(), String> {
                    let mine: Vec<usize> = (0..pages).filter(|p| p % threads == t).collect();
                    let mut versions = vec![0u32; mine.len()];
                    let mut state = 0x9E37_79B9_7F4A_7C15u64 ^ t as u64;
                    let mut page = Page::zeroed();
                    for _ in 0..per_thread {
                        state ^= state << 13;
                        state ^= state >> 7;
                        state ^= state << 17;
                        let i = (state % mine.len() as u64) as usize;
                        let at = (base + mine[i] * PAGE_SIZE) as *mut u8;
                        if state >> 63 == 0 {
                            versions[i] += 1;
                            stamp(&mut page, mine[i], versions[i]);
                            // SAFETY: page `mine[i]` lies in the region (which outlives the
                            // scope) and only this thread writes or reads it.
                            unsafe { std::ptr::copy_nonoverlapping(page.as_bytes().as_ptr(), at, PAGE_SIZE) };
                        } else {
                            // SAFETY: as above.
                            unsafe {
                                std::ptr::copy_nonoverlapping(at, page.as_bytes_mut().as_mut_ptr(), PAGE_SIZE)
                            };
                            let mut want = Page::zeroed();
                            if versions[i] > 0 {
                                stamp(&mut want, mine[i], versions[i]);
                            }
                            if page != want {
                                return Err(format!(
                                    "thread {t}: page {} is not version {}",
                                    mine[i], versions[i]
                                ));
                            }
                        }
                    }
                    Ok(())
                })
            })
            .collect();
        workers
            .into_iter()
            .filter_map(|w| w.join().unwrap_or_else(|_| Err("a thread panicked".into())).err())
            .collect()
    });
    if let Some(first) = failures.into_iter().next() {
        return Err(first);
    }
    let seconds = start.elapsed().as_secs_f64();
    let stats = region.stats();
    Ok(RandomReport {
        threads,
        ram_mb,
        codec: codec.into(),
        accesses: per_thread * threads as u64,
        seconds,
        swap_ins: stats.swap_ins,
        swap_outs: stats.swap_outs,
        wp_faults: stats.wp_faults,
        fault_ns: [stats.fault_latency.median, stats.fault_latency.p99, stats.fault_latency.max],
    })
}

/// Page `page` at `version`: compressible, different for every page and version.
fn stamp(out: &mut Page, page: usize, version: u32) {
    for (i, chunk) in out.as_bytes_mut().chunks_exact_mut(8).enumerate() {
        let word = if i % 8 == 0 { (page as u64) << 32 | u64::from(version) } else { (i % 5) as u64 };
        chunk.copy_from_slice(&word.to_le_bytes());
    }
}

impl RandomReport {
    /// One line per figure.
    pub fn render(&self) -> String {
        format!(
            "random pages, {} threads, {} MiB resident of {} MiB, {}: {} accesses in {:.3} s, every read checked\n\
             swap-ins {}, swap-outs {}, write-protect faults {}; fault handling ns: median {} p99 {} max {}\n",
            self.threads,
            self.ram_mb,
            2 * self.ram_mb,
            self.codec,
            self.accesses,
            self.seconds,
            self.swap_ins,
            self.swap_outs,
            self.wp_faults,
            self.fault_ns[0],
            self.fault_ns[1],
            self.fault_ns[2]
        )
    }
}
