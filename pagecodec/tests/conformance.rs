//! The conformance suite on `Raw`, and proof that the suite catches broken codecs.

use std::panic::{AssertUnwindSafe, catch_unwind};

use pagecodec::testing::{
    Sample, check_codec, check_damaged_streams, check_garbage_input, check_round_trips, sample_pages,
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
    /// Claims more bytes than the budget, but only for this one page.
    OverBudgetOn(Box<Page>),
    /// Panics on a whole stream whose last byte is 0x80: the zero page's stream with its
    /// very last bit flipped.
    PanicsOnLastBitFlipped,
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
            Flaw::OverBudgetOn(ref bad) if **bad == *page && out.len() < PAGE_SIZE && !out.is_empty() => {
                Ok(out.len() + 1)
            }
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
            Flaw::PanicsOnLastBitFlipped if input.len() == PAGE_SIZE && input[PAGE_SIZE - 1] == 0x80 => {
                panic!("broken: the last bit")
            }
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

/// The budget checks run on the first seed of every class, on a second mixed page and on
/// the page whose only non-zero word is the last: a codec that overruns the budget on any
/// one of them alone fails the suite, naming that page.
#[test]
#[cfg_attr(miri, ignore = "under Miri the suite checks budgets on sparse and text pages only")]
fn suite_checks_budgets_on_every_class_and_the_edge_pages() {
    let samples = sample_pages();
    let labels = ["zero#0", "ramp#0", "pointers#0", "random#0", "mixed#0", "mixed#1", "last-word-one"];
    for label in labels {
        let page = samples.iter().find(|s| s.label == label).expect(label).page.clone();
        let failure =
            catch_unwind(AssertUnwindSafe(|| check_codec(&mut Broken(Flaw::OverBudgetOn(Box::new(page))))))
                .expect_err(label);
        let message = failure.downcast_ref::<String>().expect("a formatted message");
        assert!(
            message.contains(&format!("broken: {label}: ")) && message.contains("for budget"),
            "{message}"
        );
    }
}

#[test]
#[cfg_attr(miri, ignore = "under Miri the suite flips every (1 + len / 8)th bit only")]
#[should_panic(expected = "broken: the last bit")]
fn suite_flips_every_bit_up_to_the_last() {
    let zero = Sample {
        label: String::from("zero"),
        class: pagecodec::testing::PageClass::Zero,
        page: Page::zeroed(),
    };
    check_damaged_streams(&mut Broken(Flaw::PanicsOnLastBitFlipped), &[zero]);
}

/// Stores a page followed by the first byte of the page compressed before it: every
/// stream decodes, but the output depends on what the codec value saw earlier.
struct Forgetful(u8);

impl PageCodec for Forgetful {
    fn name(&self) -> &'static str {
        "forgetful"
    }
    fn max_compressed_len(&self) -> usize {
        PAGE_SIZE + 1
    }
    fn compress(&mut self, page: &Page, out: &mut [u8]) -> Result<usize, CompressError> {
        let out = out.get_mut(..=PAGE_SIZE).ok_or(CompressError::Incompressible)?;
        out[..PAGE_SIZE].copy_from_slice(page.as_bytes());
        out[PAGE_SIZE] = core::mem::replace(&mut self.0, page.as_bytes()[0]);
        Ok(PAGE_SIZE + 1)
    }
    fn decompress(&mut self, input: &[u8], page: &mut Page) -> Result<(), DecompressError> {
        match input.len() {
            n if n == PAGE_SIZE + 1 => Raw.decompress(&input[..PAGE_SIZE], page),
            n if n < PAGE_SIZE + 1 => Err(DecompressError::Truncated),
            _ => Err(DecompressError::TrailingInput),
        }
    }
}

#[test]
#[should_panic(expected = "output depends on earlier pages")]
fn suite_catches_output_that_depends_on_earlier_pages() {
    check_codec(&mut Forgetful(0));
}

/// Records every stream it is asked to decode; its largest stream is small, so the garbage
/// check's 400 cases cover every length it may try.
struct Recorder(Vec<Vec<u8>>);

impl PageCodec for Recorder {
    fn name(&self) -> &'static str {
        "recorder"
    }
    fn max_compressed_len(&self) -> usize {
        24
    }
    fn compress(&mut self, _: &Page, _: &mut [u8]) -> Result<usize, CompressError> {
        Err(CompressError::Incompressible)
    }
    fn decompress(&mut self, input: &[u8], _: &mut Page) -> Result<(), DecompressError> {
        self.0.push(input.to_vec());
        Err(DecompressError::Truncated)
    }
}

/// Garbage streams take every length from 0 to 8 bytes past the largest valid stream, each
/// decoded twice (into a zeroed and a 0xFF-filled page); every other stream has small values
/// in every third byte, where headers and opcodes look valid, and the rest are unmasked.
#[test]
fn suite_feeds_garbage_of_every_length_and_plausible_headers() {
    let mut codec = Recorder(Vec::new());
    check_garbage_input(&mut codec);
    let cases: Vec<&Vec<u8>> = codec
        .0
        .chunks(2)
        .map(|pair| {
            assert_eq!(pair[0], pair[1], "each case is decoded twice");
            &pair[0]
        })
        .collect();
    let cases = &cases[..];
    assert_eq!(cases.len(), if cfg!(miri) { 8 } else { 400 });
    let mut lengths: Vec<usize> = cases.iter().map(|c| c.len()).collect();
    lengths.sort_unstable();
    lengths.dedup();
    if !cfg!(miri) {
        assert_eq!(lengths, (0..=24 + 8).collect::<Vec<_>>());
    }
    let small = |c: &Vec<u8>| c.iter().step_by(3).all(|&b| b <= 0x0f);
    for (i, c) in cases.iter().enumerate().skip(1).step_by(2) {
        assert!(small(c), "case {i} is not masked: {c:02x?}");
    }
    let unmasked = cases.iter().step_by(2).filter(|c| !small(c)).count();
    let masked_with_high_bytes =
        cases.iter().skip(1).step_by(2).filter(|c| c.iter().skip(1).step_by(3).any(|&b| b > 0x0f)).count();
    // Too few cases under Miri for the proportions to be sure.
    assert!(
        cfg!(miri) || (unmasked > cases.len() / 4 && masked_with_high_bytes > cases.len() / 4),
        "{unmasked} {masked_with_high_bytes}"
    );
}
