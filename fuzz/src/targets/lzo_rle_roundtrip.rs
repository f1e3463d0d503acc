//! Arbitrary input and budget through the LZO-RLE compressor: a correct round trip or
//! `Incompressible` exactly when the stream does not fit; see
//! `crate::check_lzo_round_trip`. Also whole pages through the `LzoRle` page codec.

use crate::{LzoInput, PageRecipe, check_lzo_round_trip, check_page_codec};
use lzokit::LzoRle;

/// One input, as the fuzz target runs it (bytes that do not decode are skipped).
pub fn run(data: &[u8]) {
    let Some(input) = crate::decode::<(LzoInput, PageRecipe, u16)>(data) else { return };
    let (lzo, recipe, budget) = input;
    check_lzo_round_trip(&lzo, true);
    check_page_codec(&mut LzoRle::default(), &recipe.page(), budget, true);
}
