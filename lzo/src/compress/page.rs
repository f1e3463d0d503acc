//! The page-specialised LZO1X-1 match finder that [`Lzo1x`](crate::Lzo1x) compresses with.
//!
//! It writes the same LZO1X bitstream as [`KernelCompressor`](crate::KernelCompressor) (liblzo2 and
//! Linux decode it) and scans the page as the kernel does, but it is **not** byte-identical
//! to the kernel's `lzo1x_1_compress`. Exactly how it differs:
//!
//! 1. **What a table entry holds.** The kernel hashes 4 bytes into 2^13 `u16` positions and
//!    then loads the 4 bytes at the candidate position to test the hit. Here the same
//!    multiplicative hash is 12 bits wide (4096 entries) and every entry is one `u64`
//!    holding the position and the first 6 input bytes found there (32 KiB in all). The hit
//!    test and, for matches of 4 or 5 bytes, the match length come from the entry, with no
//!    load from the candidate position; only a match of 6 bytes or more loads there. That
//!    load sits on the chain that limits the compressor on real pages: next position → its
//!    bytes → hash → table entry → candidate bytes → match length → next position.
//!    Lengthening that chain by 6 cycles made a kernel-like variant 18-20% slower
//!    (measured), and avoiding the load makes this path 9-12% faster than
//!    [`KernelCompressor`](crate::KernelCompressor)'s on captured pages. One entry per probe (one load,
//!    one store) rather than separate words and positions (two of each, 40 KiB) takes
//!    4-6% off this compressor's ticks on a Zen 3 core (docs/perf/lzokit.md).
//! 2. **No table clear per page.** Entries carry a 4-bit generation (1..=15), so an entry
//!    written by an earlier call is recognised and treated as empty; the table is cleared
//!    once every 15 pages. An entry counts only when its generation is the current one, and
//!    then it was written, with its bytes, during this call, so they are the page's own.
//!    The output therefore depends on the page alone, never on earlier calls.
//! 3. **An empty entry is no candidate.** The kernel's cleared table makes every empty entry
//!    a candidate at position 0; here an empty entry is a miss.
//!
//! 4. **The last two match distances come first.** At every probed position the bytes at
//!    the distances of the last two matches (two distinct distances; 1 and 2 before the
//!    first match) are compared before the table's candidate, and a 4-byte agreement there
//!    is the match. Real pages are arrays of records: a page's matches mostly repeat a few
//!    strides (its 4 most frequent distances give 69-74% of its matches on the captured
//!    corpora), and the position one stride back often lies inside an earlier match, where
//!    the kernel never probes, so the table holds only an older record's position or none.
//!    The check also takes the hash and table load off the path from one match to the
//!    next. Streams of captured pages come out 2% (node) to 11% (python) smaller than
//!    liblzo2's, with fewer and longer matches, so they also decode faster.
//! 5. **A position a recent distance matches is not entered in the table.** The table is
//!    looked at, and written, only after both recent distances disagree. Such a match
//!    covers its position, and leaving out its hash, load and store takes 5-8% off this
//!    compressor's ticks on a Zen 3 core, for streams 0.3% larger (node) or smaller
//!    (python) (docs/perf/lzokit.md).
//! 6. **A match of up to [`LAZY_MAX`] bytes gives way to a longer one a byte later.** Before
//!    it is written, the two recent distances are tried at the next position, and a match
//!    there at least [`LAZY_GAIN`] bytes longer is taken instead, with one more literal.
//!    The decoder's time goes on walking instructions rather than on copying bytes, and on
//!    the captured corpora this step cuts the instructions per page and the decoder's ticks,
//!    and the streams shrink. The compressor takes more ticks (fewer on python pages, where
//!    each lazy match skips more bytes), most where the core has not learnt the page
//!    (sweeps, as a page store sees pages), as the choice and the emission after it branch
//!    on data (docs/perf/lzokit.md).
//!
//! Everything else is the kernel's: scanning starts 5 bytes in, a miss steps
//! `1 + literals / 32` bytes, a hit is written once the lazy step has looked one byte
//! further (pending literals, then the match as M2 or M3), the match extension stops once
//! it reaches 20 bytes before the page end, the scan continues at the match end, and the
//! tail is written as the kernel writes it.
//!
//! The output budget contract is [`KernelCompressor`](crate::KernelCompressor)'s (the same `Output`
//! writer): nothing is written past `dst`, and [`CompressError::Incompressible`] is
//! returned as soon as the next piece of the stream cannot fit. While the budget has room
//! for the longest step (16 literals and the longest match), a step's literals and match
//! are written after one check instead of one per piece: on a Zen 3 core that takes 8-11%
//! off this compressor's ticks (docs/perf/lzokit.md).

use pagecodec::{CompressError, PAGE_SIZE};

use super::kernel::{hash_bits, le64, miss_step};
use super::output::Output;

/// log2 of the table's entry count.
const TABLE_BITS: u32 = 12;
/// Table entries.
const TABLE_SIZE: usize = 1 << TABLE_BITS;
/// Bits of an entry that hold the position (pages have 4096 bytes).
const POSITION_MASK: u64 = 0x0FFF;
/// Where an entry's generation starts: bits 12..16 (just above the position).
const GENERATION_SHIFT: u32 = 12;
/// Generations run 1..=15 in bits 12..16 of an entry; 0 marks a cleared entry.
const LAST_GENERATION: u16 = 15;
/// Bits of an entry that must equal the probe's key for a hit: the generation (bits
/// 12..16) and the first 4 bytes at the position (bits 16..48). Bits 48..64 hold bytes 4
/// and 5, which give the length of a 4- or 5-byte match.
const HIT_MASK: u64 = 0x0000_FFFF_FFFF_F000;
/// The two recent distances before the first match: runs of equal bytes and 16-bit fields.
const REP_START: [usize; 2] = [1, 2];
/// The first probed position; every start distance must reach back no further than it.
const FIRST_PROBE: usize = 5;
const _: () = assert!(
    1 <= REP_START[0] && REP_START[0] <= FIRST_PROBE && 1 <= REP_START[1] && REP_START[1] <= FIRST_PROBE
);
/// No match starts at or after this position (the kernel's `ip_end`: 20 bytes before the
/// end), which leaves room for every 8- and 16-byte read of the hot loop.
const IP_END: usize = PAGE_SIZE - 20;

/// The page compressor's working memory: a 32 KiB table and the generation counter.
#[derive(Clone)]
pub(crate) struct PageCompressor {
    /// `bytes 0..6 at the position << 16 | generation << 12 | position`.
    entries: [u64; TABLE_SIZE],
    /// The generation of the last call (0 before the first).
    generation: u16,
}

working_memory_impls!(PageCompressor);

impl PageCompressor {
    /// Tables with no valid entry.
    pub(crate) const fn new() -> Self {
        PageCompressor { entries: [0; TABLE_SIZE], generation: 0 }
    }

    /// Compresses one page as a plain LZO1X stream into `dst` (its length is the budget);
    /// returns the stream's length.
    pub(crate) fn compress(
        &mut self,
        page: &[u8; PAGE_SIZE],
        dst: &mut [u8],
    ) -> Result<usize, CompressError> {
        if self.generation >= LAST_GENERATION {
            self.entries.fill(0);
            self.generation = 0;
        }
        self.generation += 1;
        let tag = u64::from(self.generation) << GENERATION_SHIFT;

        let src: &[u8] = page;
        let mut out = Output::new(dst);
        // `lits`: the pending literals, `src[ip - lits..ip]` (the first byte not yet
        // written is `ip - lits`). The miss step is computed from `lits`, so that only it
        // (shift, add, add) lies on the chain from one probe to the next, and `ip` takes the
        // same step, one addition off that chain (deriving `ip` from the literals' start
        // took one instruction more per miss: 0-1% more ticks in a same-process comparison;
        // docs/perf/lzokit.md).
        let mut lits = FIRST_PROBE - 1;
        // The first step below makes both FIRST_PROBE, as the kernel's scan starts.
        let mut ip = lits;
        // The last two matches' distances (distinct), tried before the table.
        let (mut rep0, mut rep1) = (Recent::new(src, REP_START[0]), Recent::new(src, REP_START[1]));
        'literal: loop {
            let step = miss_step(lits);
            lits += step;
            ip += step;
            loop {
                if ip >= IP_END {
                    break 'literal;
                }
                // SAFETY: ip + 8 < IP_END + 8 <= PAGE_SIZE == src.len().
                let word = unsafe { le64(src, ip) };
                // SAFETY: 1 <= distance <= ip for both: each is a start value, at most
                // FIRST_PROBE (checked at compile time), the smallest ip, or the distance of
                // an earlier match, which is at most that match's position, itself below ip.
                // And ip + 8 <= src.len(), as for `word`.
                let (rep0_word, rep1_word) = unsafe { (rep0.word_behind(ip), rep1.word_behind(ip)) };
                let (diff, m_pos) = if (word ^ rep0_word) as u32 == 0 {
                    (word ^ rep0_word, ip - rep0.distance)
                } else if (word ^ rep1_word) as u32 == 0 {
                    (word ^ rep1_word, ip - rep1.distance)
                } else {
                    // Only now the table: a position where a recent distance agrees is not
                    // entered (the match covers it), which keeps the hash, the entry's load
                    // and its store off the path of those matches.
                    let h = hash_bits(word as u32, TABLE_BITS);
                    // The word's bytes 6 and 7 shift out: an entry keeps 6 bytes.
                    let key = (word << 16) | tag;
                    let entry = self.entries[h];
                    self.entries[h] = key | ip as u64;
                    // Same generation: the entry was written during this call, at an
                    // earlier position whose first 6 bytes it holds.
                    let agree = entry ^ key;
                    if agree & HIT_MASK != 0 {
                        continue 'literal;
                    }
                    let m_pos = (entry & POSITION_MASK) as usize;
                    // `agree >> 16` compares the word's first 6 bytes with the entry's
                    // (bytes 0..4 agree, so its low 4 bytes are zero). All 6 agreeing, the
                    // candidate's 8 bytes give the length.
                    let diff = match agree >> 16 {
                        // SAFETY: the entry was written at an earlier position of this
                        // call, so m_pos < ip and m_pos + 8 < ip + 8 <= src.len().
                        0 => word ^ unsafe { le64(src, m_pos) },
                        bytes_4_and_5 => bytes_4_and_5,
                    };
                    (diff, m_pos)
                };
                debug_assert!(m_pos < ip);

                // SAFETY: m_pos < ip < IP_END, and the low 4 bytes of `diff` are zero (a
                // recent distance's or the entry's 4 bytes agree).
                let mut m_len = unsafe { match_len(page, ip, m_pos, diff) };
                let mut dist = ip - m_pos;
                // The lazy step (item 6 above): one literal more for a match at least
                // LAZY_GAIN bytes longer at the next position and a recent distance.
                if m_len <= LAZY_MAX && ip + 1 < IP_END {
                    let next = ip + 1;
                    // SAFETY: next + 8 <= IP_END + 8 <= src.len(); both distances are at most
                    // ip (as above), below next.
                    let (word, behind) =
                        unsafe { (le64(src, next), [rep0.word_behind(next), rep1.word_behind(next)]) };
                    // The candidate at the match's own distance (when the match came from a
                    // recent distance) is that match less its first byte and never wins. It
                    // is ruled out by a set bit, not by a branch: whether it is there depends
                    // on where the match came from, which a core that has not seen the page
                    // mispredicts; a branch made compression slower (docs/perf/lzokit.md).
                    for (recent, behind) in [rep0, rep1].into_iter().zip(behind) {
                        let diff = (word ^ behind) | u64::from(recent.distance == dist);
                        if diff & LAZY_MUST_AGREE != 0 {
                            continue;
                        }
                        // SAFETY: next - distance < next < IP_END; diff's low 4 bytes are 0.
                        let len = unsafe { match_len(page, next, next - recent.distance, diff) };
                        if len >= m_len + LAZY_GAIN {
                            (m_len, dist) = (len, recent.distance);
                            ip = next;
                            lits += 1;
                            break;
                        }
                    }
                }
                // SAFETY: a short match has 4..=7 bytes. The extension loop starts a round
                // only while ip + m_len < IP_END + 8 and adds at most 8, so m_len < IP_END +
                // 16 - ip <= PAGE_SIZE - 4. (Said so that the step's check of it compiles
                // away.)
                unsafe { core::hint::assert_unchecked(m_len <= PAGE_SIZE) };
                // SAFETY: the literals end at ip < IP_END, so ip + 16 <= src.len().
                unsafe { out.literals_and_match(src, ip - lits, lits, m_len, dist)? };
                // `rep0` is rebuilt even when the distance is the same (to the same value),
                // so that only `rep1`'s copy depends on the comparison: measured faster in
                // both orders (docs/perf/lzokit.md).
                if dist != rep0.distance {
                    rep1 = rep0;
                }
                rep0 = Recent::new(src, dist);
                ip += m_len;
                lits = 0;
            }
        }
        out.finish(&src[ip - lits..], 0)
    }
}

/// The longest match the lazy step may give up (module doc, item 6): the longest M3 without
/// a length extension has 33 bytes. Alternated pagebench runs put node pages' decoding at
/// 0.516x, 0.493x, 0.491x and 0.485x of C liblzo2's median ticks with 8, 16, 24 and 32
/// here, and their compression at 0.667x-0.705x; trying every match (0.483x) cost 0.738x.
const LAZY_MAX: usize = 32;
/// How many bytes longer the later match must be than the one it replaces, which it pushes
/// back by one literal. With 1, decoding was 1-2% slower on every corpus.
const LAZY_GAIN: usize = 2;
/// The bytes a lazy candidate must agree in before its length is measured: a match has at
/// least 4 bytes, so only a candidate of `4 + LAZY_GAIN` or more can win. Testing 4 sent
/// more candidates into the length's branches, which a core that has not seen the page
/// mispredicts (docs/perf/lzokit.md).
const LAZY_MUST_AGREE: u64 = (1 << (8 * (4 + LAZY_GAIN))) - 1;

/// The length of the match at `ip` from `m_pos`, whose first 8 bytes XOR to `diff`, up to
/// the first byte that differs or, like the kernel's, once it reaches [`IP_END`]. The match
/// ends before `IP_END + 16` (`ip + len < IP_END + 16`), which callers may rely on.
///
/// # Safety
///
/// `m_pos < ip < IP_END`, and the low 4 bytes of `diff` are zero.
#[inline(always)]
pub(super) unsafe fn match_len(page: &[u8; PAGE_SIZE], ip: usize, m_pos: usize, diff: u64) -> usize {
    let src: &[u8] = page;
    let len = if diff != 0 {
        // 4..=7 bytes: the first byte that differs, from the 8 compared.
        (diff.trailing_zeros() / 8) as usize
    } else {
        let mut m_len = 8;
        loop {
            // SAFETY: ip + m_len < IP_END + 8 (the first round has m_len == 8
            // and ip < IP_END; later rounds run only while ip + m_len <
            // IP_END), so both 8-byte reads end before IP_END + 16 <=
            // src.len(); m_pos < ip.
            let v = unsafe { le64(src, ip + m_len) ^ le64(src, m_pos + m_len) };
            if v != 0 {
                break m_len + (v.trailing_zeros() / 8) as usize;
            }
            m_len += 8;
            if ip + m_len >= IP_END {
                break m_len;
            }
        }
    };
    // The bound: 4..=7 when `diff` is not zero; otherwise the last 8-byte read started below
    // IP_END + 8 and the match ends inside it, or the scan stopped within 8 bytes past IP_END.
    debug_assert!(ip + len < IP_END + 16);
    len
}

/// A recent match distance, with the page's start moved back by it, so that loading the 8
/// bytes at `ip - distance` needs no subtraction first: `base + ip` is an addressing mode.
/// Every probe loads two of them, so this takes four instructions (a copy and a subtraction
/// each) off the compressor's most frequent path. With the `lits` step beside it, the page
/// compressor takes about 4% fewer ticks on node pages and 3% on python pages (SPEC.md
/// section 5).
#[derive(Clone, Copy)]
struct Recent {
    distance: usize,
    /// `src - distance`, which may point before the page: it is only ever moved forward by
    /// at least `distance` again before a read.
    base: *const u8,
}

impl Recent {
    #[inline(always)]
    fn new(src: &[u8], distance: usize) -> Self {
        Recent { distance, base: src.as_ptr().wrapping_sub(distance) }
    }

    /// The 8 bytes at `ip - distance`, little-endian.
    ///
    /// # Safety
    ///
    /// `distance <= ip` and `ip + 8 <= src.len()` for the `src` this was made from.
    #[inline(always)]
    unsafe fn word_behind(self, ip: usize) -> u64 {
        debug_assert!(1 <= self.distance && self.distance <= ip);
        // SAFETY: base + ip is src + (ip - distance), inside `src` with its 8 bytes (the
        // caller's contract); `wrapping_add` keeps `src`'s provenance.
        u64::from_le(unsafe { self.base.wrapping_add(ip).cast::<u64>().read_unaligned() })
    }
}

#[cfg(test)]
pub(super) mod tests {
    extern crate alloc;
    use alloc::vec;

    use pagecodec::testing::{PageClass, Rng, generate};

    use super::*;
    use crate::decompress::{Instruction, first_literals, read_instruction};
    use crate::{decompress, max_compressed_len};

    /// Every class, 3 seeds each (under Miri 4 classes, 1 seed: it is slow).
    pub(in crate::compress) fn pages() -> alloc::vec::Vec<[u8; PAGE_SIZE]> {
        let (classes, seeds) = if cfg!(miri) {
            (&[PageClass::Zero, PageClass::Pointers, PageClass::Text, PageClass::Random][..], 1)
        } else {
            (&PageClass::ALL[..], 3)
        };
        let mut pages = vec![];
        for &class in classes {
            for seed in 0..seeds {
                pages.push(*generate(class, seed).as_bytes());
            }
        }
        pages
    }

    /// A page compressor as the shared checks drive it: compress a page into a budget.
    pub(in crate::compress) type Compress<'a> =
        &'a mut dyn FnMut(&[u8; PAGE_SIZE], &mut [u8]) -> Result<usize, CompressError>;

    /// [`pages`] and a page of noise.
    fn pages_and_noise() -> alloc::vec::Vec<[u8; PAGE_SIZE]> {
        let mut all = pages();
        let mut noise = [0u8; PAGE_SIZE];
        Rng::new(3).fill(&mut noise);
        all.push(noise);
        all
    }

    /// Every page of [`pages_and_noise`], `rounds` times through `warm` (kept across calls):
    /// each stream decodes to its page and equals `fresh`'s (a new compressor per call), so
    /// the output depends on the page alone.
    pub(in crate::compress) fn check_round_trips_and_history(
        warm: Compress<'_>,
        fresh: Compress<'_>,
        rounds: usize,
    ) {
        let mut out = vec![0u8; max_compressed_len(PAGE_SIZE)];
        let mut fresh_out = vec![0u8; max_compressed_len(PAGE_SIZE)];
        let all = pages_and_noise();
        for round in 0..rounds {
            for (i, page) in all.iter().enumerate() {
                let n = warm(page, &mut out).unwrap();
                let mut back = [0u8; PAGE_SIZE];
                assert_eq!(decompress(&out[..n], &mut back), Ok(PAGE_SIZE), "page {i}");
                assert!(back == *page, "page {i}");
                let m = fresh(page, &mut fresh_out).unwrap();
                assert!(out[..n] == fresh_out[..m], "round {round} page {i}: output depends on history");
            }
        }
    }

    /// For every page of [`pages_and_noise`]: a budget of exactly the stream's length gives
    /// the same stream, every smaller one `Incompressible`.
    pub(in crate::compress) fn check_exact_budgets(c: Compress<'_>) {
        let mut out = vec![0u8; max_compressed_len(PAGE_SIZE)];
        for (i, page) in pages_and_noise().iter().enumerate() {
            let full = c(page, &mut out).unwrap();
            let reference = out[..full].to_vec();
            assert_eq!(c(page, &mut out[..full]), Ok(full), "page {i}");
            assert!(out[..full] == reference[..], "page {i}");
            let step = if cfg!(miri) { full / 4 + 1 } else { 1 };
            for budget in (0..full).step_by(step) {
                assert_eq!(c(page, &mut out[..budget]), Err(CompressError::Incompressible), "{i} {budget}");
            }
        }
    }

    #[test]
    fn round_trips_every_class_and_ignores_history() {
        let mut warm = PageCompressor::new();
        // More calls than generations, so the periodic clear is crossed several times.
        check_round_trips_and_history(
            &mut |page, out| warm.compress(page, out),
            &mut |page, out| PageCompressor::new().compress(page, out),
            if cfg!(miri) { 1 } else { 3 },
        );
    }

    #[test]
    fn a_budget_of_exactly_the_stream_length_suffices() {
        let mut c = PageCompressor::new();
        check_exact_budgets(&mut |page, out| c.compress(page, out));
    }

    /// The `(position, length, distance)` of every match of a plain LZO1X stream, read with
    /// the reference decoder's instruction reader; the position is where the match's
    /// output starts.
    pub(in crate::compress) fn matches(stream: &[u8]) -> alloc::vec::Vec<(usize, usize, usize)> {
        let (mut ip, mut op, mut scratch) = (0, 0, [0u8; PAGE_SIZE]);
        let mut state = first_literals(stream, &mut ip, &mut scratch, &mut op).unwrap();
        let mut found = vec![];
        loop {
            match read_instruction(stream, &mut ip, state, false).unwrap() {
                Instruction::Literals(n) => (ip, op, state) = (ip + n, op + n, 4),
                Instruction::Match { len, dist, next } => {
                    found.push((op, len, dist));
                    (ip, op, state) = (ip + next, op + len + next, next);
                }
                Instruction::ZeroRun { .. } => unreachable!("a plain stream has no zero runs"),
                Instruction::End => return found,
            }
        }
    }

    /// Compresses `page` with a fresh compressor, checks that the stream decodes to it, and
    /// returns the stream's matches ([`matches`]).
    fn round_trip_matches(page: &[u8; PAGE_SIZE]) -> alloc::vec::Vec<(usize, usize, usize)> {
        round_trip_matches_with(&mut |page, out| PageCompressor::new().compress(page, out), page)
    }

    /// [`round_trip_matches`] with any compressor.
    pub(in crate::compress) fn round_trip_matches_with(
        c: Compress<'_>,
        page: &[u8; PAGE_SIZE],
    ) -> alloc::vec::Vec<(usize, usize, usize)> {
        let mut out = vec![0u8; max_compressed_len(PAGE_SIZE)];
        let n = c(page, &mut out).unwrap();
        let mut back = [0u8; PAGE_SIZE];
        assert_eq!(decompress(&out[..n], &mut back), Ok(PAGE_SIZE));
        assert!(back == *page);
        matches(&out[..n])
    }

    #[test]
    fn every_match_is_as_long_as_the_page_allows() {
        // Whether the length comes from a recent distance's bytes, the table entry's 6
        // bytes or the candidate's 8, the match stops at the first byte that differs
        // (or, like the kernel's, once it reaches IP_END).
        let mut c = PageCompressor::new();
        let mut out = vec![0u8; max_compressed_len(PAGE_SIZE)];
        let mut lengths = [0usize; 9];
        for (i, page) in pages().iter().enumerate() {
            let n = c.compress(page, &mut out).unwrap();
            for (pos, len, dist) in matches(&out[..n]) {
                assert!(page[pos..pos + len] == page[pos - dist..pos - dist + len], "page {i} at {pos}");
                if pos + len < IP_END {
                    assert_ne!(
                        page[pos + len],
                        page[pos + len - dist],
                        "page {i}: match at {pos} stops early"
                    );
                }
                lengths[len.min(8)] += 1;
            }
        }
        // Matches of every length from 4 up occur, so the check reaches each length rule
        // (4..=7 from the first differing byte, 8 and more from the extension loop).
        assert!(lengths[4..].iter().all(|&k| k > 0), "{lengths:?}");
    }

    #[test]
    fn the_last_two_match_distances_are_tried_first() {
        // P (64 random bytes), P, 8 random bytes, then P[8..]: the scan, by then stepping 3
        // bytes at a time, enters the second P at 70 and matches it at distance 64. In the
        // third copy, at 136, the table holds position 8 (probed while scanning the first
        // P: distance 128), but the last match's distance, 64, matches as well (position 72,
        // inside the second P's match, was never probed). The recent distance is tried
        // first.
        let mut rng = Rng::new(7);
        let mut pattern = [0u8; 64];
        rng.fill(&mut pattern);
        let mut page = [0u8; PAGE_SIZE];
        page[..64].copy_from_slice(&pattern);
        page[64..128].copy_from_slice(&pattern);
        rng.fill(&mut page[128..136]);
        page[136..192].copy_from_slice(&pattern[8..]);
        let found = round_trip_matches(&page);
        assert_eq!(found[0], (70, 58, 64), "{found:?}");
        assert_eq!(found[1], (136, 56, 64), "the third copy at the recent distance: {found:?}");
    }

    #[test]
    fn a_short_match_gives_way_to_a_longer_one_a_byte_later() {
        // R (64 random bytes, with R[11..14] = R[1..4]), R, then at 128: R[10], R[1..].
        // The first match (distance 64) ends at 128, where the table holds position 10
        // (probed one by one at the start): a 4-byte match at distance 118 (R[10..14]). At
        // 129 the recent distance 64 matches 63 bytes (R[1..64]). The lazy step writes
        // byte 128 as a literal and takes that match: one instruction where the greedy
        // parse had two (the 4-byte match, then the same 64 at 132).
        let mut rng = Rng::new(11);
        let mut r = [0u8; 64];
        rng.fill(&mut r);
        r.copy_within(1..4, 11);
        r[14] = !r[4];
        let mut page = [0u8; PAGE_SIZE];
        rng.fill(&mut page[192..]);
        page[..64].copy_from_slice(&r);
        page[64..128].copy_from_slice(&r);
        page[128] = r[10];
        page[129..192].copy_from_slice(&r[1..]);
        assert_ne!(page[128], page[64], "the recent distance must fail at 128");
        let found = round_trip_matches(&page);
        assert_eq!(found[0].0 + found[0].1, 128, "the first match ends at 128: {found:?}");
        assert_eq!(found[1], (129, 63, 64), "{found:?}");
    }

    #[test]
    fn no_lazy_step_from_the_last_probed_position() {
        // B (64 random bytes) repeated up to IP_END - 1, where the period breaks: one match at
        // distance 64 ends there. At IP_END - 1 four copies of the byte before (B[42]) match
        // at distance 1 (the other recent distance), and at IP_END, as B[44..=46] = B[42]
        // and the page goes on with B[47..], distance 64 would match longer. A lazy step may
        // take a match only at a position the scan itself could probe (below IP_END), so the
        // 4-byte match stays.
        let mut rng = Rng::new(13);
        let mut b = [0u8; 64];
        rng.fill(&mut b);
        let repeated = b[42];
        b[44..47].fill(repeated);
        b[43] = !repeated;
        b[47] = !repeated;
        let mut page = [0u8; PAGE_SIZE];
        for (i, byte) in page.iter_mut().enumerate().take(IP_END - 1) {
            *byte = b[i % 64];
        }
        page[IP_END - 1..IP_END + 3].fill(repeated);
        page[IP_END + 3..IP_END + 20].copy_from_slice(&b[47..]);
        let found = round_trip_matches(&page);
        let last = found[found.len() - 2..].to_vec();
        assert_eq!(last[0].0 + last[0].1, IP_END - 1, "the period's match ends at IP_END - 1: {found:?}");
        assert_eq!(last[1], (IP_END - 1, 4, 1), "{found:?}");
    }

    #[test]
    fn positions_matched_at_a_recent_distance_stay_out_of_the_table() {
        // A match at one of the two recent distances was found before the table was looked
        // at (a recent distance that agrees is always taken first), so its position is not
        // entered. Entries may be overwritten by later probes, but none may hold such a
        // position.
        let mut c = PageCompressor::new();
        let mut out = vec![0u8; max_compressed_len(PAGE_SIZE)];
        let mut checked = 0;
        for (i, page) in pages().iter().enumerate() {
            let n = c.compress(page, &mut out).unwrap();
            let mut held = [false; PAGE_SIZE];
            for &entry in &c.entries {
                if (entry >> GENERATION_SHIFT) & u64::from(LAST_GENERATION) == u64::from(c.generation) {
                    held[(entry & POSITION_MASK) as usize] = true;
                }
            }
            let (mut rep0, mut rep1) = (REP_START[0], REP_START[1]);
            for (pos, _, dist) in matches(&out[..n]) {
                if dist == rep0 || dist == rep1 {
                    assert!(!held[pos], "page {i}: the match at {pos} (distance {dist}) was entered");
                    checked += 1;
                }
                if dist != rep0 {
                    (rep0, rep1) = (dist, rep0);
                }
            }
        }
        assert!(checked > if cfg!(miri) { 10 } else { 100 }, "{checked}");
    }

    #[test]
    fn stale_words_of_earlier_pages_are_never_used() {
        // Page A fills the tables; page B has the same 8-byte words at other positions
        // but different data at A's positions: a stale word must not produce a match.
        let mut c = PageCompressor::new();
        let mut out = vec![0u8; max_compressed_len(PAGE_SIZE)];
        let a = *generate(PageClass::Mixed, 1).as_bytes();
        let mut b = a;
        b.rotate_left(1000);
        for page in [a, b, a] {
            let n = c.compress(&page, &mut out).unwrap();
            let mut back = [0u8; PAGE_SIZE];
            assert_eq!(decompress(&out[..n], &mut back), Ok(PAGE_SIZE));
            assert!(back == page);
        }
    }
}
