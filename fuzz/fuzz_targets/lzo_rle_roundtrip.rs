//! Arbitrary input and budget through the LZO-RLE compressor: a correct round trip or
//! `Incompressible` exactly when the stream does not fit; see
//! `pagecodec_fuzz::check_lzo_round_trip`. Also whole pages through the `LzoRle` page codec.
#![no_main]

use libfuzzer_sys::fuzz_target;
use lzokit::LzoRle;
use pagecodec_fuzz::{LzoInput, PageRecipe, check_lzo_round_trip, check_page_codec};

fuzz_target!(|input: (LzoInput, PageRecipe, u16)| {
    let (lzo, recipe, budget) = input;
    check_lzo_round_trip(&lzo, true);
    check_page_codec(&mut LzoRle::default(), &recipe.page(), budget, true);
});
