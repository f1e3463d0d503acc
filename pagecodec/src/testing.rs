//! Page generators and the conformance suite every codec runs (feature `testing`).
//!
//! ```
//! use pagecodec::testing::{check_codec, generate, PageClass};
//! use pagecodec::{same_filled, Raw};
//!
//! check_codec(&mut Raw);
//! assert!(same_filled(&generate(PageClass::SameU32, 1)).is_some());
//! ```
//!
//! The suite panics with a message naming the codec, the page and the check that failed;
//! it is meant to be called from a `#[test]`. Case counts shrink under Miri.

use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;

use crate::{CompressError, PAGE_WORDS, Page, PageCodec};

/// A small deterministic generator (SplitMix64): tests and benchmarks stay reproducible
/// without an RNG dependency.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator seeded with `seed`.
    pub fn new(seed: u64) -> Self {
        Rng(seed ^ 0x6a09_e667_f3bc_c909)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A value in `0..bound` (`bound > 0`).
    pub fn below(&mut self, bound: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(bound)) >> 64) as u64
    }

    /// Fills `bytes` with random bytes.
    pub fn fill(&mut self, bytes: &mut [u8]) {
        for chunk in bytes.chunks_mut(8) {
            let r = self.next_u64().to_le_bytes();
            chunk.copy_from_slice(&r[..chunk.len()]);
        }
    }
}

/// The kinds of page found in memory, as the 2001 compressed-cache paper's benchmarks and zram users see them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum PageClass {
    /// All zero bytes.
    Zero,
    /// One random 64-bit value repeated.
    SameU64,
    /// One random 32-bit value repeated.
    SameU32,
    /// One random byte repeated.
    SameByte,
    /// The mmap001 workload's page: bytes 0..=255 repeated sixteen times.
    Ramp,
    /// The fillmem workload's page: one byte value below 200, as `rand() % 200` writes it.
    Fillmem,
    /// Zero except for 1..=16 random words at random positions.
    Sparse,
    /// 64-bit heap pointers sharing their high bits, with some zeros and small integers:
    /// what a heap of linked objects looks like.
    Pointers,
    /// 32-bit integers below 1000.
    SmallInts,
    /// ASCII text built from common words.
    Text,
    /// Uniformly random bytes: incompressible.
    Random,
    /// 2..=8 runs of the other classes within one page.
    Mixed,
}

impl PageClass {
    /// Every class, in a fixed order.
    pub const ALL: [PageClass; 12] = [
        PageClass::Zero,
        PageClass::SameU64,
        PageClass::SameU32,
        PageClass::SameByte,
        PageClass::Ramp,
        PageClass::Fillmem,
        PageClass::Sparse,
        PageClass::Pointers,
        PageClass::SmallInts,
        PageClass::Text,
        PageClass::Random,
        PageClass::Mixed,
    ];

    /// A short lowercase name for tables.
    pub fn name(self) -> &'static str {
        match self {
            PageClass::Zero => "zero",
            PageClass::SameU64 => "same-u64",
            PageClass::SameU32 => "same-u32",
            PageClass::SameByte => "same-byte",
            PageClass::Ramp => "ramp",
            PageClass::Fillmem => "fillmem",
            PageClass::Sparse => "sparse",
            PageClass::Pointers => "pointers",
            PageClass::SmallInts => "small-ints",
            PageClass::Text => "text",
            PageClass::Random => "random",
            PageClass::Mixed => "mixed",
        }
    }

    /// Whether every sensible page codec shrinks this class well below a page; the suite
    /// requires such pages to compress (never be refused) with a budget of
    /// `max_compressed_len()`.
    pub fn is_highly_compressible(self) -> bool {
        matches!(
            self,
            PageClass::Zero
                | PageClass::SameU64
                | PageClass::SameU32
                | PageClass::SameByte
                | PageClass::Fillmem
                | PageClass::Sparse
                | PageClass::SmallInts
        )
    }
}

const WORDS: [&str; 24] = [
    "the",
    "page",
    "memory",
    "of",
    "and",
    "compressed",
    "swap",
    "kernel",
    "to",
    "a",
    "in",
    "cache",
    "is",
    "for",
    "zram",
    "that",
    "with",
    "dictionary",
    "on",
    "as",
    "word",
    "by",
    "allocator",
    "store",
];

/// A page of `class`; the same `(class, seed)` always gives the same page.
pub fn generate(class: PageClass, seed: u64) -> Page {
    let mut page = Page::zeroed();
    fill_class(class, &mut Rng::new(seed ^ ((class as u64) << 56)), page.as_bytes_mut());
    page
}

/// Fills `bytes` (any length, a whole page or a run within one) with data of `class`.
fn fill_class(class: PageClass, rng: &mut Rng, bytes: &mut [u8]) {
    match class {
        PageClass::Zero => bytes.fill(0),
        PageClass::SameU64 => repeat(bytes, &rng.next_u64().to_le_bytes()),
        PageClass::SameU32 => repeat(bytes, &(rng.next_u64() as u32).to_le_bytes()),
        PageClass::SameByte => bytes.fill(rng.next_u64() as u8),
        PageClass::Fillmem => bytes.fill(rng.below(200) as u8),
        PageClass::Ramp => {
            for (i, b) in bytes.iter_mut().enumerate() {
                *b = i as u8;
            }
        }
        PageClass::Sparse => {
            bytes.fill(0);
            let words = bytes.len() / 4;
            if words > 0 {
                for _ in 0..=rng.below(16) {
                    let at = rng.below(words as u64) as usize * 4;
                    let value = (rng.next_u64() as u32) | 1;
                    bytes[at..at + 4].copy_from_slice(&value.to_le_bytes());
                }
            }
        }
        PageClass::Pointers => {
            let base = 0x0000_5580_0000_0000u64 | (rng.below(1 << 20) << 20);
            for chunk in bytes.chunks_mut(8) {
                let value = match rng.below(8) {
                    0 => 0,
                    1 => rng.below(1000),
                    _ => base + (rng.below(1 << 16) << 4),
                };
                chunk.copy_from_slice(&value.to_le_bytes()[..chunk.len()]);
            }
        }
        PageClass::SmallInts => {
            for chunk in bytes.chunks_mut(4) {
                let value = rng.below(1000) as u32;
                chunk.copy_from_slice(&value.to_le_bytes()[..chunk.len()]);
            }
        }
        PageClass::Text => {
            let mut i = 0;
            while i < bytes.len() {
                let word = WORDS[rng.below(WORDS.len() as u64) as usize].as_bytes();
                let separator: &[u8] = if rng.below(12) == 0 { b".\n" } else { b" " };
                for &b in word.iter().chain(separator) {
                    if i < bytes.len() {
                        bytes[i] = b;
                        i += 1;
                    }
                }
            }
        }
        PageClass::Random => rng.fill(bytes),
        PageClass::Mixed => {
            let runs = 2 + rng.below(7) as usize;
            let mut start = 0;
            for run in 0..runs {
                let end = if run + 1 == runs {
                    bytes.len()
                } else {
                    let room = bytes.len() - start;
                    start + (rng.below(room as u64 / 2 + 1) as usize & !7)
                };
                let class = loop {
                    let c = PageClass::ALL[rng.below(PageClass::ALL.len() as u64) as usize];
                    if c != PageClass::Mixed {
                        break c;
                    }
                };
                fill_class(class, rng, &mut bytes[start..end]);
                start = end;
            }
        }
    }
}

fn repeat(bytes: &mut [u8], pattern: &[u8]) {
    for (i, b) in bytes.iter_mut().enumerate() {
        *b = pattern[i % pattern.len()];
    }
}

/// A labelled page for the suite's reports.
#[derive(Clone, Debug)]
pub struct Sample {
    /// Class and seed, e.g. `"text#2"`.
    pub label: String,
    /// The page's class.
    pub class: PageClass,
    /// The page.
    pub page: Page,
}

/// Every class with a few seeds each, plus seeded random mixes.
pub fn sample_pages() -> Vec<Sample> {
    let seeds = if cfg!(miri) { 1 } else { 3 };
    let mixes = if cfg!(miri) { 2 } else { 32 };
    let mut samples = Vec::new();
    for class in PageClass::ALL {
        let count = if class == PageClass::Mixed { mixes } else { seeds };
        for seed in 0..count {
            samples.push(Sample {
                label: format!("{}#{seed}", class.name()),
                class,
                page: generate(class, seed),
            });
        }
    }
    // Word-level edge cases the random classes rarely hit.
    let mut one_word = Page::zeroed();
    one_word.words_mut()[PAGE_WORDS - 1] = 1u32.to_le();
    samples.push(Sample { label: String::from("last-word-one"), class: PageClass::Sparse, page: one_word });
    let mut first_word = Page::zeroed();
    first_word.words_mut()[0] = 0xffff_ffffu32.to_le();
    samples.push(Sample { label: String::from("first-word-ff"), class: PageClass::Sparse, page: first_word });
    samples
}

/// Runs the whole conformance suite on `codec`:
/// [`check_round_trips`], [`check_budgets`], [`check_damaged_streams`],
/// [`check_garbage_input`] and [`check_determinism`].
pub fn check_codec(codec: &mut dyn PageCodec) {
    let samples = sample_pages();
    check_round_trips(codec, &samples);
    check_determinism(codec, &samples);
    let few: Vec<Sample> = samples
        .iter()
        .filter(|s| s.label.ends_with("#0") || s.label == "mixed#1" || s.label == "last-word-one")
        .filter(|s| !cfg!(miri) || matches!(s.class, PageClass::Sparse | PageClass::Text))
        .cloned()
        .collect();
    check_budgets(codec, &few);
    check_damaged_streams(codec, &few);
    check_garbage_input(codec);
}

/// Compresses `page` with a budget of `max_compressed_len()`.
fn compress_full(codec: &mut dyn PageCodec, page: &Page) -> Result<Vec<u8>, CompressError> {
    let mut out = vec![0u8; codec.max_compressed_len()];
    let n = codec.compress(page, &mut out)?;
    assert!(n <= out.len(), "{}: compress returned {n} > budget {}", codec.name(), out.len());
    out.truncate(n);
    Ok(out)
}

/// Decodes `stream` into pages pre-filled with 0x00 and with 0xFF and requires the same
/// verdict and, on success, the same page: decoding never shows stale data.
pub fn decode_independently(codec: &mut dyn PageCodec, stream: &[u8], what: &str) -> Option<Page> {
    let mut zeros = Page::filled(0x00);
    let mut ones = Page::filled(0xFF);
    let a = codec.decompress(stream, &mut zeros);
    let b = codec.decompress(stream, &mut ones);
    assert_eq!(a, b, "{}: {what}: verdict depends on the page's previous contents", codec.name());
    match a {
        Ok(()) => {
            assert!(zeros == ones, "{}: {what}: decoded page depends on its previous contents", codec.name());
            Some(zeros)
        }
        Err(_) => None,
    }
}

/// Every sample round-trips with a budget of `max_compressed_len()`; highly compressible
/// classes must compress, others may be refused as incompressible.
pub fn check_round_trips(codec: &mut dyn PageCodec, samples: &[Sample]) {
    let name = codec.name();
    for s in samples {
        match compress_full(codec, &s.page) {
            Ok(stream) => {
                let back = decode_independently(codec, &stream, &s.label);
                assert!(back.as_ref() == Some(&s.page), "{name}: {}: round trip failed or differs", s.label);
                let mut longer = stream.clone();
                longer.push(0);
                let mut page = Page::zeroed();
                assert!(
                    codec.decompress(&longer, &mut page).is_err(),
                    "{name}: {}: a byte appended to a valid stream was accepted",
                    s.label
                );
            }
            Err(CompressError::Incompressible) => assert!(
                !s.class.is_highly_compressible(),
                "{name}: {}: refused a highly compressible page",
                s.label
            ),
        }
    }
}

/// For every budget from 0 to `max_compressed_len()`: either `Ok(n)` with `n <= budget`
/// that round-trips, or `Incompressible`; nothing is written past the budget.
pub fn check_budgets(codec: &mut dyn PageCodec, samples: &[Sample]) {
    const CANARY: u8 = 0xA5;
    const GUARD: usize = 64;
    let name = codec.name();
    let max = codec.max_compressed_len();
    let step = if cfg!(miri) { 97 } else { 1 };
    let mut buf = vec![0u8; max + GUARD];
    for s in samples {
        let full = compress_full(codec, &s.page).ok();
        for budget in (0..=max).step_by(step).chain([max]) {
            buf.fill(CANARY);
            match codec.compress(&s.page, &mut buf[..budget]) {
                Ok(n) => {
                    assert!(n <= budget, "{name}: {}: {n} bytes for budget {budget}", s.label);
                    let back = decode_independently(codec, &buf[..n], &s.label);
                    assert!(
                        back.as_ref() == Some(&s.page),
                        "{name}: {}: budget {budget}: bad round trip",
                        s.label
                    );
                }
                Err(CompressError::Incompressible) => {}
            }
            assert!(
                buf[budget..].iter().all(|&b| b == CANARY),
                "{name}: {}: wrote past a budget of {budget}",
                s.label
            );
        }
        if let Some(full) = full {
            let n = codec.compress(&s.page, &mut buf[..max]).expect("full budget compressed before");
            assert_eq!(&buf[..n], &full[..], "{name}: {}: full-budget stream changed", s.label);
        }
    }
}

/// Every prefix of a valid stream and every single-bit flip of it decodes to an error or
/// some page, never a panic, and never depending on the page's previous contents.
pub fn check_damaged_streams(codec: &mut dyn PageCodec, samples: &[Sample]) {
    for s in samples {
        let Ok(stream) = compress_full(codec, &s.page) else { continue };
        let step = if cfg!(miri) { 1 + stream.len() / 8 } else { 1 };
        for len in (0..stream.len()).step_by(step) {
            decode_independently(codec, &stream[..len], &format!("{}: prefix of {len} bytes", s.label));
        }
        let mut damaged = stream.clone();
        for bit in (0..stream.len() * 8).step_by(step) {
            damaged[bit / 8] ^= 1 << (bit % 8);
            decode_independently(codec, &damaged, &format!("{}: bit {bit} flipped", s.label));
            damaged[bit / 8] ^= 1 << (bit % 8);
        }
        assert_eq!(damaged, stream);
    }
}

/// Random byte strings of many lengths decode to an error or some page, never a panic.
pub fn check_garbage_input(codec: &mut dyn PageCodec) {
    let mut rng = Rng::new(0x9a2b);
    let cases = if cfg!(miri) { 8 } else { 400 };
    let max = codec.max_compressed_len() + 8;
    let mut input = vec![0u8; max];
    for case in 0..cases {
        let len = rng.below(max as u64 + 1) as usize;
        rng.fill(&mut input[..len]);
        // Plausible first bytes too: small values make headers and opcodes look valid.
        if case % 2 == 1 {
            for b in input[..len].iter_mut().step_by(3) {
                *b &= 0x0f;
            }
        }
        decode_independently(codec, &input[..len], &format!("garbage case {case} ({len} bytes)"));
    }
}

/// The same page compresses to the same bytes whatever the codec value compressed before.
pub fn check_determinism(codec: &mut dyn PageCodec, samples: &[Sample]) {
    let first: Vec<_> = samples.iter().map(|s| compress_full(codec, &s.page)).collect();
    for (s, expected) in samples.iter().zip(first).rev() {
        let again = compress_full(codec, &s.page);
        assert!(again == expected, "{}: {}: output depends on earlier pages", codec.name(), s.label);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::same_filled;

    /// The generators are part of the suite's contract: a class and a seed give the same
    /// page in every version, so that results on generated corpora stay comparable. Pinned
    /// by the first outputs of the RNG and an FNV-1a checksum of every class's page for two
    /// seeds.
    #[test]
    fn generated_pages_are_the_same_in_every_version() {
        let mut rng = Rng::new(1);
        assert_eq!(
            [rng.next_u64(), rng.next_u64(), rng.next_u64()],
            [0x1ac0_46dd_a8e8_6e2a, 0xbe2c_3b00_b1d3_48c8, 0x9b1a_66a9_5412_ff75]
        );
        let fnv = |page: &Page| {
            page.as_bytes()
                .iter()
                .fold(0xcbf2_9ce4_8422_2325u64, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3))
        };
        let expected: [(&str, u64, u64); 12] = [
            ("zero", 0xb93a_0c83_ce3b_6325, 0xb93a_0c83_ce3b_6325),
            ("same-u64", 0xf9bc_aa64_9fc3_0325, 0x2faa_a0fd_c4dc_4b25),
            ("same-u32", 0xd27c_7067_4bd5_0325, 0x9ea4_1d3c_fab8_7325),
            ("same-byte", 0x80cc_03a2_2666_2325, 0xbfdb_e5e8_82e1_7325),
            ("ramp", 0x88d6_ce57_89d3_5325, 0x88d6_ce57_89d3_5325),
            ("fillmem", 0x7bbf_8957_e7e2_2325, 0x0a76_6559_3049_f325),
            ("sparse", 0xdca8_764f_fc51_da0b, 0xd3c3_86da_070b_e3ca),
            ("pointers", 0x3159_727f_eabd_a861, 0x76d8_b843_41e1_270f),
            ("small-ints", 0xe2e1_eec3_dabb_93f3, 0xf414_6c98_5d36_2edd),
            ("text", 0x961b_4dc2_bed2_9143, 0x6333_ff90_0ccc_e7c7),
            ("random", 0x4184_d46e_a18f_4841, 0x156b_20ab_bf1e_950f),
            ("mixed", 0x89cf_b02d_453c_403b, 0x980b_0a43_0bb1_03b4),
        ];
        for (class, (name, one, seven)) in PageClass::ALL.into_iter().zip(expected) {
            assert_eq!(class.name(), name);
            assert_eq!((fnv(&generate(class, 1)), fnv(&generate(class, 7))), (one, seven), "{name}");
        }
        assert!(!PageClass::Random.is_highly_compressible());
        assert!(PageClass::Zero.is_highly_compressible());
    }

    /// Mixed pages over many seeds, pinned together: some of their runs are empty (seed 647
    /// has an empty sparse run), and run boundaries land where the generator puts them.
    #[test]
    #[cfg_attr(miri, ignore = "a thousand pages are too slow under Miri")]
    fn mixed_pages_are_the_same_in_every_version() {
        let checksum = (0..1000).fold(0xcbf2_9ce4_8422_2325u64, |h, seed| {
            generate(PageClass::Mixed, seed)
                .as_bytes()
                .iter()
                .fold(h, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3))
        });
        assert_eq!(checksum, 0x5dfc_6c95_d433_809e);
    }

    /// The class is mixed into the seed's top byte without losing any seed bit: seeds that
    /// differ only there still give different pages.
    #[test]
    fn every_bit_of_the_seed_counts() {
        for class in [PageClass::SameU64, PageClass::Random, PageClass::Mixed] {
            let top = (class as u64) << 56;
            assert_ne!(generate(class, 0), generate(class, top), "{class:?}");
            assert_ne!(generate(class, u64::MAX), generate(class, u64::MAX ^ top), "{class:?}");
        }
    }

    #[test]
    fn generators_make_what_they_say() {
        assert_eq!(generate(PageClass::Zero, 5), Page::zeroed());
        for class in [PageClass::SameU64, PageClass::SameU32, PageClass::SameByte, PageClass::Fillmem] {
            for seed in 0..20 {
                assert!(same_filled(&generate(class, seed)).is_some(), "{class:?}");
            }
        }
        assert!(generate(PageClass::Fillmem, 3).as_bytes()[0] < 200);
        let ramp = generate(PageClass::Ramp, 0);
        assert!(ramp.as_bytes().iter().enumerate().all(|(i, &b)| b == i as u8));
        for seed in 0..20 {
            let sparse = generate(PageClass::Sparse, seed);
            let nonzero = sparse.words().iter().filter(|&&w| w != 0).count();
            assert!((1..=16).contains(&nonzero), "sparse page with {nonzero} words");
            assert!(generate(PageClass::SmallInts, seed).words().iter().all(|&w| u32::from_le(w) < 1000));
            assert!(generate(PageClass::Text, seed).as_bytes().iter().all(|b| b.is_ascii()));
            let pointers = generate(PageClass::Pointers, seed);
            let high = pointers.words64().iter().map(|&w| u64::from_le(w) >> 40).filter(|&h| h != 0);
            assert!(high.clone().count() > 300 && high.clone().all(|h| h == 0x55));
        }
        let random = generate(PageClass::Random, 1);
        assert!(same_filled(&random).is_none());
        let distinct = random.as_bytes().iter().collect::<alloc::collections::BTreeSet<_>>().len();
        assert!(distinct > 240);
    }

    #[test]
    fn generators_are_deterministic_and_seeded() {
        for class in PageClass::ALL {
            assert_eq!(generate(class, 7), generate(class, 7), "{class:?}");
        }
        for class in
            [PageClass::SameU64, PageClass::Sparse, PageClass::Pointers, PageClass::Text, PageClass::Random]
        {
            assert_ne!(generate(class, 1), generate(class, 2), "{class:?}");
        }
        let mixes: alloc::collections::BTreeSet<_> =
            (0..16).map(|s| generate(PageClass::Mixed, s).as_bytes().to_vec()).collect();
        assert_eq!(mixes.len(), 16);
    }

    #[test]
    fn samples_cover_every_class() {
        let samples = sample_pages();
        let (seeds, mixes) = if cfg!(miri) { (1, 2) } else { (3, 32) };
        for class in PageClass::ALL {
            let seeds = if class == PageClass::Mixed { mixes } else { seeds };
            let of_class: Vec<_> =
                samples.iter().filter(|s| s.class == class && s.label.starts_with(class.name())).collect();
            assert_eq!(of_class.len(), seeds, "{class:?}");
            for (seed, s) in (0..).zip(of_class) {
                assert_eq!(s.label, format!("{}#{seed}", class.name()));
                assert!(s.page == generate(class, seed), "{}", s.label);
            }
        }
        assert_eq!(samples.len(), 11 * seeds + mixes + 2);
        assert_eq!(
            PageClass::ALL.len(),
            PageClass::ALL.iter().map(|c| c.name()).collect::<alloc::collections::BTreeSet<_>>().len()
        );
    }

    #[test]
    fn rng_below_stays_in_range() {
        let mut rng = Rng::new(1);
        assert!((0..10_000).all(|_| rng.below(7) < 7));
        let mut buf = [0u8; 13];
        rng.fill(&mut buf);
        assert!(buf.iter().any(|&b| b != 0));
    }
}
