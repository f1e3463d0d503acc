//! Every codec the tool knows: ours first, then the peers.

use pagecodec::{CompressError, DecompressError, Page, PageCodec, Raw};
use pagestore::Hybrid;

use crate::peers;

/// XNU's fallback rule: WKdm streams of this many bytes or more go to the fallback codec.
pub const HYBRID_THRESHOLD: usize = 2048;

/// The hybrid XNU uses: WKdm first, LZO when WKdm refuses the page or its stream
/// would be [`HYBRID_THRESHOLD`] bytes or more (pagestore's generic `Hybrid`).
pub fn hybrid() -> Hybrid<wkdm::Wkdm, lzokit::Lzo1x> {
    Hybrid::new(wkdm::Wkdm::default(), lzokit::Lzo1x::default(), HYBRID_THRESHOLD)
}

/// The hybrid behind [`PageCodec`], for the codec table.
///
/// A store records which codec wrote each stream in the entry, beside the stream; this
/// adapter keeps that variant in the value instead, so `decompress` decodes the stream of
/// the most recent `compress` — exactly how the measuring loop uses a codec (each page is
/// compressed, then its stream decompressed). It is a benchmark adapter, not a general
/// codec: use [`pagestore::PageStore`] with [`hybrid`] to store pages.
pub struct HybridCodec {
    inner: Hybrid<wkdm::Wkdm, lzokit::Lzo1x>,
    variant: u8,
}

impl Default for HybridCodec {
    fn default() -> Self {
        HybridCodec { inner: hybrid(), variant: 0 }
    }
}

impl PageCodec for HybridCodec {
    fn name(&self) -> &'static str {
        "hybrid"
    }
    fn max_compressed_len(&self) -> usize {
        self.inner.first.max_compressed_len().max(self.inner.fallback.max_compressed_len())
    }
    fn compress(&mut self, page: &Page, out: &mut [u8]) -> Result<usize, CompressError> {
        let (n, variant) = pagestore::EntryCodec::compress(&mut self.inner, page, out)?;
        self.variant = variant;
        Ok(n)
    }
    fn decompress(&mut self, input: &[u8], page: &mut Page) -> Result<(), DecompressError> {
        pagestore::EntryCodec::decompress(&mut self.inner, self.variant, input, page)
    }
}

/// WKdm pinned to one implementation path (scalar, SSE4.1, AVX2, NEON), so every path
/// can be measured beside the dispatched one.
pub struct WkdmPath {
    codec: wkdm::Wkdm,
    name: &'static str,
}

impl WkdmPath {
    /// WKdm on `path`, or `None` when this CPU or build lacks it.
    pub fn new(path: wkdm::Isa) -> Option<WkdmPath> {
        let name = match path {
            wkdm::Isa::Scalar => "wkdm-scalar",
            wkdm::Isa::Sse41 => "wkdm-sse4.1",
            wkdm::Isa::Avx2 => "wkdm-avx2",
            wkdm::Isa::Avx512 => "wkdm-avx512",
            wkdm::Isa::Neon => "wkdm-neon",
            #[allow(unreachable_patterns)]
            _ => "wkdm-other",
        };
        Some(WkdmPath { codec: wkdm::Wkdm::new().with_isa(path).ok()?, name })
    }
}

impl PageCodec for WkdmPath {
    fn name(&self) -> &'static str {
        self.name
    }
    fn max_compressed_len(&self) -> usize {
        self.codec.max_compressed_len()
    }
    fn compress(&mut self, page: &Page, out: &mut [u8]) -> Result<usize, CompressError> {
        self.codec.compress(page, out)
    }
    fn decompress(&mut self, input: &[u8], page: &mut Page) -> Result<(), DecompressError> {
        self.codec.decompress(input, page)
    }
}

/// WKdm on every available path other than the one `wkdm` dispatches to (the best).
pub fn wkdm_other_paths() -> Vec<Box<dyn PageCodec>> {
    wkdm::Isa::available()
        .filter(|&p| p != wkdm::Isa::best())
        .filter_map(WkdmPath::new)
        .map(|c| Box::new(c) as Box<dyn PageCodec>)
        .collect()
}

/// Our codecs, in table order: `wkdm` is the dispatched (fastest) path, `wkdm-<path>` the
/// others this CPU has.
pub fn ours() -> Vec<Box<dyn PageCodec>> {
    let mut codecs: Vec<Box<dyn PageCodec>> = vec![Box::new(Raw), Box::new(wkdm::Wkdm::default())];
    codecs.extend(wkdm_other_paths());
    codecs.extend::<Vec<Box<dyn PageCodec>>>(vec![
        Box::new(lzokit::Lzo1x::default()),
        Box::new(lzokit::LzoRle::default()),
        Box::new(lzokit::Lzo1xFast::default()),
        // The kernel's exact plain LZO1X-1 bytes (zram's `lzo`).
        Box::new(lzokit::Lzo1xKernel::default()),
        Box::new(HybridCodec::default()),
        // The store codecs of `pagecodec-adapters`: `lz4-page` (lz4_flex block format) and
        // `zstd` (C zstd, level 3, as zram's zstd); the peers below are the same libraries
        // as a user would call them directly.
        Box::new(pagecodec_adapters::Lz4::new()),
    ]);
    codecs.extend(pagecodec_adapters::Zstd::new().ok().map(|c| Box::new(c) as Box<dyn PageCodec>));
    codecs
}

/// Ours, then every peer.
pub fn all() -> Vec<Box<dyn PageCodec>> {
    let mut codecs = ours();
    codecs.extend(peers::all());
    codecs
}

/// The names of every codec, in table order.
pub fn names() -> Vec<&'static str> {
    all().iter().map(|c| c.name()).collect()
}

/// Every codec a name selects: [`all`], and right after `wkdm` the path it dispatches to
/// under that path's own name (`wkdm-avx2` on a CPU whose best path is AVX2), which `all`
/// leaves out because `wkdm` already measures it; so a command naming a path runs on every
/// CPU that has it.
fn selectable() -> Vec<Box<dyn PageCodec>> {
    let mut codecs = all();
    let at = codecs.iter().position(|c| c.name() == "wkdm").map_or(codecs.len(), |k| k + 1);
    if let Some(best) = WkdmPath::new(wkdm::Isa::best()) {
        codecs.insert(at, Box::new(best));
    }
    codecs
}

/// The codecs named in `filter`, in table order, where the path `wkdm` dispatches to is also
/// known by its own name (`wkdm-avx2` on a CPU whose best path is AVX2), right after `wkdm`;
/// all of [`all`] when `filter` is empty.
///
/// # Errors
///
/// Names the unknown codec and lists the known ones.
pub fn select(filter: &[String]) -> Result<Vec<Box<dyn PageCodec>>, String> {
    if filter.is_empty() {
        return Ok(all());
    }
    let codecs = selectable();
    if let Some(bad) = filter.iter().find(|f| !codecs.iter().any(|c| c.name() == f.as_str())) {
        let known: Vec<_> = codecs.iter().map(|c| c.name()).collect();
        return Err(format!("unknown codec {bad:?}; known: {}", known.join(", ")));
    }
    Ok(codecs.into_iter().filter(|c| filter.iter().any(|f| f == c.name())).collect())
}

/// One codec by name, the dispatched WKdm path's own name included (see [`select`]).
pub fn by_name(name: &str) -> Option<Box<dyn PageCodec>> {
    selectable().into_iter().find(|c| c.name() == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_selectable() {
        let names = names();
        let mut sorted = names.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), names.len(), "{names:?}");
        assert_eq!(select(&["lz4".into(), "raw".into()]).unwrap().len(), 2);
        assert_eq!(select(&[]).unwrap().len(), names.len());
        assert!(select(&["nope".into()]).err().is_some_and(|e| e.contains("known: raw")));
        assert!(by_name("zstd-1").is_some());
        assert!(by_name("lz4-page").is_some() && by_name("zstd").is_some());
    }

    #[test]
    fn the_dispatched_path_is_selectable_by_its_own_name() {
        let best = WkdmPath::new(wkdm::Isa::best()).expect("the best path is available").name();
        let picked = select(&["lz4".into(), best.into(), "wkdm".into()]).unwrap();
        let picked: Vec<_> = picked.iter().map(|c| c.name()).collect();
        assert_eq!(picked, ["wkdm", best, "lz4"]);
        assert_eq!(by_name(best).map(|c| c.name()), Some(best));
        assert_eq!(select(&[best.into()]).unwrap().len(), 1);
        assert!(select(&["nope".into()]).err().is_some_and(|e| e.contains(best)));
    }

    #[test]
    fn every_wkdm_path_matches_the_dispatched_stream() {
        let scalar = WkdmPath::new(wkdm::Isa::Scalar).expect("scalar is always there");
        let mut paths: Vec<Box<dyn PageCodec>> = vec![Box::new(scalar), Box::new(wkdm::Wkdm::default())];
        paths.extend(wkdm_other_paths());
        for class in pagecodec::testing::PageClass::ALL {
            let page = pagecodec::testing::generate(class, 5);
            let streams: Vec<_> = paths
                .iter_mut()
                .map(|c| {
                    let mut out = vec![0u8; c.max_compressed_len()];
                    c.compress(&page, &mut out).map(|n| out[..n].to_vec())
                })
                .collect();
            assert!(streams.windows(2).all(|w| w[0] == w[1]), "{}", class.name());
        }
    }

    #[test]
    fn hybrid_adapter_round_trips_both_variants() {
        let mut h = HybridCodec::default();
        let mut out = vec![0u8; h.max_compressed_len()];
        for class in [pagecodec::testing::PageClass::SmallInts, pagecodec::testing::PageClass::Ramp] {
            let page = pagecodec::testing::generate(class, 2);
            let n = h.compress(&page, &mut out).unwrap();
            let mut back = Page::zeroed();
            h.decompress(&out[..n], &mut back).unwrap();
            assert_eq!(back, page, "{}", class.name());
        }
    }
}
