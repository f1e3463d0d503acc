//! Arbitrary input and budget through the plain LZO1X-1 compressor: a correct round trip
//! (also through C liblzo2) or `Incompressible` exactly when the stream does not fit; see
//! `pagecodec_fuzz::check_lzo_round_trip`. Also whole pages through the `Lzo1x` page codec.
#![no_main]

use libfuzzer_sys::fuzz_target;
use lzokit::Lzo1x;
use pagecodec_fuzz::{LzoInput, PageRecipe, check_lzo_round_trip, check_page_codec};

fuzz_target!(|input: (LzoInput, PageRecipe, u16)| {
    let (lzo, recipe, budget) = input;
    check_lzo_round_trip(&lzo, false);
    check_page_codec(&mut Lzo1x::default(), &recipe.page(), budget, true);
});
