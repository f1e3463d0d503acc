//! The conformance suite on `Raw`, and proof that the suite catches broken codecs.

use pagecodec::testing::{
    check_codec, check_damaged_streams, check_garbage_input, check_round_trips, sample_pages,
};
use pagecodec::{CompressError, DecompressError, PAGE_SIZE, Page, PageCodec, Raw};

#[test]
fn raw_passes_the_suite() {
    check_codec(&mut Raw);
}

#[test]
fn boxed_dyn_codec_passes_the_suite() {
    let mut codec: Box<dyn PageCodec> = Box::new(Raw);
    assert_eq!(codec.name(), "raw");
    assert_eq!(codec.max_compressed_len(), PAGE_SIZE);
    check_codec(&mut codec);
}

/// Wraps `Raw` and breaks one rule of the contract.
struct Broken(Flaw);

enum Flaw {
    /// Leaves the last byte of the page as it was (stale output).
    Stale,
    /// Claims more bytes than the budget.
    OverBudget,
    /// Refuses every page.
    RefusesAll,
    /// Returns a different page.
    Corrupts,
    /// Accepts trailing input.
    IgnoresTrailing,
    /// Panics on any stream shorter than a page (damaged or garbage input).
    PanicsOnShortInput,
}

impl PageCodec for Broken {
    fn name(&self) -> &'static str {
        "broken"
    }
    fn max_compressed_len(&self) -> usize {
        PAGE_SIZE
    }
    fn compress(&mut self, page: &Page, out: &mut [u8]) -> Result<usize, CompressError> {
        match self.0 {
            Flaw::RefusesAll => Err(CompressError::Incompressible),
            Flaw::OverBudget if out.len() < PAGE_SIZE && !out.is_empty() => Ok(out.len() + 1),
            _ => Raw.compress(page, out),
        }
    }
    fn decompress(&mut self, input: &[u8], page: &mut Page) -> Result<(), DecompressError> {
        match self.0 {
            Flaw::Stale if input.len() == PAGE_SIZE => {
                page.as_bytes_mut()[..PAGE_SIZE - 1].copy_from_slice(&input[..PAGE_SIZE - 1]);
                Ok(())
            }
            Flaw::Corrupts => {
                Raw.decompress(input, page)?;
                page.as_bytes_mut()[100] ^= 1;
                Ok(())
            }
            Flaw::IgnoresTrailing if input.len() > PAGE_SIZE => Raw.decompress(&input[..PAGE_SIZE], page),
            Flaw::PanicsOnShortInput if input.len() < PAGE_SIZE => panic!("broken: a short stream"),
            _ => Raw.decompress(input, page),
        }
    }
}

#[test]
#[should_panic(expected = "previous contents")]
fn suite_catches_stale_output() {
    check_codec(&mut Broken(Flaw::Stale));
}

#[test]
#[should_panic(expected = "for budget")]
fn suite_catches_budget_overrun() {
    check_codec(&mut Broken(Flaw::OverBudget));
}

#[test]
#[should_panic(expected = "refused a highly compressible page")]
fn suite_catches_a_codec_that_refuses_everything() {
    check_codec(&mut Broken(Flaw::RefusesAll));
}

#[test]
#[should_panic(expected = "round trip failed")]
fn suite_catches_wrong_pages() {
    check_round_trips(&mut Broken(Flaw::Corrupts), &sample_pages());
}

#[test]
#[should_panic(expected = "appended")]
fn suite_catches_accepted_trailing_input() {
    check_codec(&mut Broken(Flaw::IgnoresTrailing));
}

#[test]
#[should_panic(expected = "broken: a short stream")]
fn suite_feeds_damaged_streams() {
    check_damaged_streams(&mut Broken(Flaw::PanicsOnShortInput), &sample_pages());
}

#[test]
#[should_panic(expected = "broken: a short stream")]
fn suite_feeds_garbage() {
    check_garbage_input(&mut Broken(Flaw::PanicsOnShortInput));
}
