//! Every codec the tool knows: ours first, then the peers.

use pagecodec::{CompressError, DecompressError, Page, PageCodec, Raw};
use pagestore::Hybrid;

use crate::peers;

/// XNU's fallback rule: WKdm streams of this many bytes or more go to the fallback codec.
pub const HYBRID_THRESHOLD: usize = 2048;

/// The hybrid of issue 7 and XNU: WKdm first, LZO when WKdm refuses the page or its stream
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

/// Our codecs, in table order.
pub fn ours() -> Vec<Box<dyn PageCodec>> {
    vec![
        Box::new(Raw),
        Box::new(wkdm::Wkdm::default()),
        Box::new(lzokit::Lzo1x::default()),
        Box::new(lzokit::LzoRle::default()),
        Box::new(HybridCodec::default()),
    ]
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

/// The codecs named in `filter` (all when empty), in table order.
///
/// # Errors
///
/// Names the unknown codec and lists the known ones.
pub fn select(filter: &[String]) -> Result<Vec<Box<dyn PageCodec>>, String> {
    let known = names();
    if let Some(bad) = filter.iter().find(|f| !known.contains(&f.as_str())) {
        return Err(format!("unknown codec {bad:?}; known: {}", known.join(", ")));
    }
    Ok(all().into_iter().filter(|c| filter.is_empty() || filter.iter().any(|f| f == c.name())).collect())
}

/// One codec by name.
pub fn by_name(name: &str) -> Option<Box<dyn PageCodec>> {
    all().into_iter().find(|c| c.name() == name)
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
    }
}
