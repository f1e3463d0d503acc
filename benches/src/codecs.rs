//! Every codec the tool knows: ours first, then the peers.

use pagecodec::{PageCodec, Raw};

use crate::peers;

/// Our codecs, in table order.
pub fn ours() -> Vec<Box<dyn PageCodec>> {
    vec![
        Box::new(Raw),
        Box::new(wkdm::Wkdm::default()),
        Box::new(lzokit::Lzo1x::default()),
        Box::new(lzokit::LzoRle::default()),
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
