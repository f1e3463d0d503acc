//! Arbitrary input and budget through the plain LZO1X-1 compressor: a correct round trip
//! (also through C liblzo2) or `Incompressible` exactly when the stream does not fit; see
//! `crate::check_lzo_round_trip`. Also whole pages through the `Lzo1x` page codec,
//! both a fresh one and one kept across inputs: its match table survives calls (generation
//! tags instead of a clear per page), so a kept codec must write exactly a fresh one's
//! stream. And whole pages through the fast level, `Lzo1xFast`, whose streams C liblzo2
//! must decode too.

use std::sync::Mutex;

use crate::{LzoInput, PageRecipe, c_decompress_safe, check_lzo_round_trip, check_page_codec};
use lzokit::{Lzo1x, Lzo1xFast};
use pagecodec::PageCodec;

/// The page codec that has seen every earlier input of this run.
static KEPT: Mutex<Option<Lzo1x>> = Mutex::new(None);

/// One input, as the fuzz target runs it (bytes that do not decode are skipped).
pub fn run(data: &[u8]) {
    let Some(input) = crate::decode::<(LzoInput, PageRecipe, u16)>(data) else { return };
    let (lzo, recipe, budget) = input;
    check_lzo_round_trip(&lzo, false);
    let page = recipe.page();
    let from_fresh = check_page_codec(&mut Lzo1x::default(), &page, budget, true);

    let mut kept = KEPT.lock().unwrap_or_else(|e| e.into_inner());
    let kept = kept.get_or_insert_with(Lzo1x::default);
    let mut b = vec![0u8; kept.max_compressed_len()];
    let from_kept = kept.compress(&page, &mut b).ok().map(|n| b[..n].to_vec());
    assert_eq!(from_fresh, from_kept, "a kept Lzo1x wrote a different stream from a fresh one");

    let stream = check_page_codec(&mut Lzo1xFast::default(), &page, budget, true)
        .expect("the worst-case budget suffices");
    let (code, c_out) = c_decompress_safe(&stream, 4096);
    assert_eq!(code, 0, "C liblzo2 rejects a fast-level stream");
    assert!(c_out == page.as_bytes()[..], "C liblzo2 decodes a fast-level stream differently");
}
